"""Device placement: device names, GPU arrays, `__cuda_array_interface__`, DLPack, mixed devices,
and running planned programs on the GPU (`run_program`, `explain_cuda`).

The CUDA bindings themselves load only when a GPU is first used (`lazyk.backend.cuda.driver`).

Tests without a GPU drive it through an emulated driver that runs the generated kernels on
the CPU (tests/test_nvvm.py); `tests/gpu` runs it on a real one.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from functools import partial

import numpy as np

from lazyk.arrays.array import Array
from lazyk.arrays.arrmeta import is_plain
from lazyk.arrays.operators import Operators
from lazyk.backend import cuda
from lazyk.errors import DeviceError, NotSupportedError
from lazyk.frontend import ops
from lazyk.frontend.leaves import leaf_data
from lazyk.frontend.operands import as_expr
from lazyk.frontend.spec import Instr, KernelSpec
from lazyk.kernel import gpu
from lazyk.lru import Memo
from lazyk.passes.dims import simplify_dims
from lazyk.runtime import launch as runtime


def parse_device(device) -> str:
    """Canonical device name: 'cpu' or 'cuda:N' ('cuda' means 'cuda:0')."""
    if device is None:
        return "cpu"
    text = str(device).strip().lower()
    if text == "cpu":
        return "cpu"
    if text == "cuda":
        return "cuda:0"
    if text.startswith("cuda:") and text[5:].isdigit():
        return f"cuda:{int(text[5:])}"
    raise DeviceError(f"unknown device {device!r}; expected 'cpu', 'cuda' or 'cuda:N'")


def device_of(obj) -> str:
    """Where an operand's data lives: GPU arrays of any library report 'cuda:N', all else 'cpu'."""
    if isinstance(obj, DeviceArray):
        return obj.device
    dev = getattr(obj, "device", None)
    if isinstance(dev, str) and dev.startswith(("cpu", "cuda")):
        return parse_device(dev)
    if hasattr(obj, "__cuda_array_interface__"):
        ordinal = cuda.pointer_ordinal(obj.__cuda_array_interface__["data"][0])
        return f"cuda:{ordinal or 0}"
    return "cpu"


def common_device(named: dict[str, object]) -> str:
    """The one device all named operands live on; DeviceError naming them when they differ."""
    devices = {name: device_of(obj) for name, obj in named.items()}
    if len(set(devices.values())) <= 1:
        return next(iter(devices.values()), "cpu")
    where: dict[str, list[str]] = {}
    for name, obj in named.items():
        shape, dtype = getattr(obj, "shape", None), getattr(obj, "dtype", None)
        label = name if shape is None else f"{name} {tuple(shape)} {dtype}"
        where.setdefault(devices[name], []).append(label)
    if len(where) > 1:
        parts = "; ".join(f"{', '.join(names)} on {dev}" for dev, names in sorted(where.items()))
        raise DeviceError(f"operands live on different devices ({parts}); "
                          "move them with .to('cuda') or .to('cpu') first")
    return next(iter(where), "cpu")


class DeviceArray(Operators):
    """A strided array in GPU memory: shape, dtype, byte strides, a device pointer and its owner.

    Operators build lazy expressions (as for NumPy operands); evaluating one whose leaves are
    all on the GPU runs there (`run_program`).
    """

    def __init__(self, shape, dtype, ptr: int, strides=None, device: str = "cuda:0", owner=None,
                 readonly: bool = False):
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        if any(n < 0 for n in self.shape) or self.dtype.kind not in "biufc" or \
                int(ptr) < 0 or int(ptr) == 0 < math.prod(self.shape):
            raise ValueError(f"DeviceArray: shape {self.shape} (sizes >= 0), dtype {self.dtype} "
                             f"(numbers only) and address {ptr} (a device pointer) do not make "
                             "a device array")
        self.strides = tuple(strides) if strides is not None else _c_strides(self.shape, self.dtype)
        self.ptr, self.device, self.owner, self.readonly = int(ptr), parse_device(device), owner, readonly

    # ---- construction -----------------------------------------------------------------------
    @classmethod
    def empty(cls, shape, dtype, device: str = "cuda") -> DeviceArray:
        """Uninitialised C-contiguous device memory."""
        device = parse_device(device)
        dt = np.dtype(dtype)
        buf = cuda.Buffer(math.prod(shape) * dt.itemsize, cuda.get_device(_ordinal(device)))
        return cls(shape, dt, buf.ptr, device=device, owner=buf)

    @classmethod
    def from_numpy(cls, arr, device: str = "cuda") -> DeviceArray:
        """Copy a host array to the GPU (C order)."""
        arr = np.ascontiguousarray(arr)
        out = cls.empty(arr.shape, arr.dtype.newbyteorder("=") if not arr.dtype.isnative
                        else arr.dtype, device)
        cuda.copy_to_device(out.ptr, arr.astype(out.dtype, copy=False))
        return out

    @classmethod
    def from_cuda_array_interface(cls, obj) -> DeviceArray:
        """Zero-copy view of CuPy / PyTorch / Numba / pycuda memory (keeps obj alive)."""
        cai = obj.__cuda_array_interface__
        shape, dtype = tuple(cai["shape"]), np.dtype(cai["typestr"])
        if cai.get("mask") is not None:
            raise DeviceError("masked __cuda_array_interface__ arrays are not supported")
        ptr, readonly = cai["data"]
        return cls(shape, dtype, ptr or 0, cai.get("strides"), device=device_of(obj), owner=obj,
                   readonly=bool(readonly))

    # ---- exchange ---------------------------------------------------------------------------
    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "version": 3,
                "data": (self.ptr, self.readonly), "strides": self.strides, "descr": [("", self.dtype.str)],
                "stream": None}

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def is_c_contiguous(self) -> bool:
        return self.strides == _c_strides(self.shape, self.dtype) or self.size <= 1

    def to(self, device) -> DeviceArray | np.ndarray:
        """Copy to 'cpu' (a NumPy array) or another device; same device returns self."""
        device = parse_device(device)
        if device == self.device:
            return self
        if device == "cpu":
            return self.to_numpy()
        return DeviceArray.from_numpy(self.to_numpy(), device)

    def to_numpy(self) -> np.ndarray:
        """Copy to a new host array (strided device views go through a contiguous copy)."""
        if not self.is_c_contiguous():
            # TODO(#6): a device-side gather kernel; until then, copy the whole span.
            raise DeviceError("copying a non-contiguous device view to the host is not "
                              "supported on the GPU yet; evaluate it into a new array first")
        host = np.empty(self.shape, self.dtype)
        cuda.copy_to_host(host, self.ptr)
        return host

    def close(self) -> None:
        """Free owned device memory now (views only drop their reference)."""
        if hasattr(self.owner, "close"):
            self.owner.close()
        self.owner, self.ptr = None, 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, device={self.device!r})"


def _c_strides(shape, dtype) -> tuple[int, ...]:
    strides, step = [], np.dtype(dtype).itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _ordinal(device: str) -> int:
    return int(device.split(":")[1])


def array(data, dtype=None, device: str = "cuda") -> DeviceArray | np.ndarray:
    """`lazyk.array(..., device=...)` for numeric data: NumPy on 'cpu', DeviceArray on 'cuda'."""
    host = np.asarray(data, dtype=dtype)
    device = parse_device(device)
    return host if device == "cpu" else DeviceArray.from_numpy(host, device)


def to_device(obj, device) -> DeviceArray | np.ndarray:
    """`x.to(device)` for NumPy and lazyk arrays, DeviceArrays and `__cuda_array_interface__`
    objects (the device name is checked first)."""
    device = parse_device(device)
    if isinstance(obj, Array):
        if device == "cpu":
            return obj
        if not is_plain(obj.type):
            raise NotSupportedError(f"{obj.type}: var dimensions, missing values and strings "
                                    "are not supported on the GPU yet")
        obj = obj.to_numpy()
    if isinstance(obj, DeviceArray):
        return obj.to(device)
    if hasattr(obj, "__cuda_array_interface__"):
        return DeviceArray.from_cuda_array_interface(obj).to(device)
    return array(obj, device=device)


# ---- running planned programs on the GPU ------------------------------------------------

def as_device_array(obj) -> DeviceArray:
    """A DeviceArray view of any `__cuda_array_interface__` object (itself if already one)."""
    return obj if isinstance(obj, DeviceArray) else DeviceArray.from_cuda_array_interface(obj)


def on_gpu(data: dict) -> bool:
    """Whether evaluation of these leaves belongs on the GPU (DeviceError when mixed)."""
    return bool(data) and common_device(data) != "cpu"


def _broadcast_strides(arr: DeviceArray, shape: tuple) -> tuple[int, ...]:
    lead = len(shape) - arr.ndim
    return tuple(0 if d < lead or arr.shape[d - lead] == 1 else arr.strides[d - lead]
                 for d in range(len(shape)))


# Per (step, operand geometry): everything a call needs besides the pointers, so a repeated
# call skips the dims pass, spec specialisation and the kernel-cache lookup. Values hold the
# step, so the id() in the key stays unique while the entry lives.
_GEOMETRY = Memo(256, "GPU launch geometry")


def _plan_step(step, arrays: list[DeviceArray], device: str) -> tuple:
    shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
    dts = tuple(a.dtype for a in arrays)
    aligned = tuple(a.ptr % a.dtype.itemsize == 0 and all(st % a.dtype.itemsize == 0
                                                         for st in a.strides) for a in arrays)
    spec = step.spec
    if dts != spec.inputs or aligned != spec.aligned:
        spec = replace(spec, inputs=dts, aligned=aligned)
    axes = step.axes or ()
    reduced = tuple(d in axes for d in range(len(shape)))
    alloc = tuple(1 if r else n for n, r in zip(shape, reduced))
    ostr = _c_strides(alloc, step.dtype)
    if step.axes is None:
        result = shape
    else:
        ostr = tuple(0 if r else st for r, st in zip(reduced, ostr))
        result = alloc if step.keepdims else tuple(n for n, r in zip(shape, reduced) if not r)
    launch, dev = None, cuda.get_device(_ordinal(device))
    if 0 not in shape:
        layout = simplify_dims(shape, (ostr, *(_broadcast_strides(a, shape) for a in arrays)),
                               reduced)
        launch = gpu.kernel(spec, layout, dev).prepare(layout, step.consts)
    count = math.prod(shape[d] for d in axes)
    return step, alloc, result, launch, count, math.prod(alloc) * step.dtype.itemsize, dev


def run_step(step, arrays: list[DeviceArray]) -> DeviceArray:
    """Bind and launch one fused step on the GPU into a new DeviceArray."""
    device = arrays[0].device if arrays else "cuda:0"
    key = (id(step), device, *((a.shape, a.strides, a.dtype, a.ptr % 16) for a in arrays))
    plan = _GEOMETRY.get(key)
    if plan is None or (plan[3] is not None and plan[3].kernel.module.handle is None):
        # new geometry, or its kernel was evicted (and unloaded) from the kernel cache
        plan = _GEOMETRY.put(key, _plan_step(step, arrays, device))
    _, alloc, result, launch, count, nbytes, dev = plan
    buf = cuda.Buffer(nbytes, dev)
    out = DeviceArray(result, step.dtype, buf.ptr, device=device, owner=buf)
    if launch is None:  # an empty dim
        if step.axes is not None and out.size:
            _fill_identity(out, step)
        return out
    launch(out.ptr, tuple(a.ptr for a in arrays))
    if step.mean:
        _divide_in_place(out, count, launch.kernel.device)
    return out


def _fill_identity(out: DeviceArray, step) -> None:
    """A reduction over an empty axis: the op's identity (NaN for mean), as NumPy gives."""
    op = step.spec.reduce
    if ops.get(op).no_empty_fold:
        raise ValueError(f"zero-size array to reduction operation {op} which has no identity")
    value = np.nan if step.mean else ops.get(op).identity(out.dtype)
    cuda.copy_to_device(out.ptr, np.full(out.shape, value, out.dtype))


def _divide_in_place(out: DeviceArray, count: int, dev) -> None:
    """out /= count on the GPU (the `mean` step's division), through the true_divide row."""
    dt = out.dtype
    body = (Instr("load", dt, (), 0), Instr("const", np.dtype("i8"), (), count),
            Instr("true_divide", dt, (0, 1)))
    spec = KernelSpec((dt,), (True,), body, ((2, dt),))
    layout = simplify_dims(out.shape, (out.strides, out.strides))
    gpu.execute(spec, layout, out.ptr, (out.ptr,), dev)


def run_program(prog, data: dict, out=None):
    """Run a planned program (lazyk.runtime.launch.plan) whose leaves are DeviceArrays.

    Returns a new DeviceArray, or `out` (a GPU array of the result's shape and dtype).
    """
    if out is not None:
        common_device({"out": out, **data})
    if not prog.steps:
        raise NotSupportedError("constant expressions not supported on the GPU yet")
    temps: list[DeviceArray] = []
    for step in prog.steps:
        temps.append(run_step(step, [as_device_array(data[r]) if isinstance(r, str) else temps[r]
                                     for r in step.inputs]))
    result = temps[-1]
    if out is not None:
        target = as_device_array(out)
        if target.readonly:
            raise ValueError("out= is read-only: pass a writeable array")
        if (target.shape, target.dtype) != (result.shape, result.dtype) or \
                not target.is_c_contiguous():
            # TODO(#6): write the last step straight into strided or converting outputs.
            raise NotSupportedError(
                f"out= on the GPU needs a C-contiguous {result.dtype} array of shape "
                f"{result.shape}, got {target.dtype} {target.shape}; not supported on the GPU yet")
        cuda.copy_device(target.ptr, result.ptr, result.size * result.dtype.itemsize)
        result = out
    cuda.synchronize()
    return result


# ---- explaining GPU kernels (NVVM IR and PTX, no GPU needed) ------------------------------
def _sample_shape(shape) -> tuple[int, ...]:
    # Symbolic sizes (placeholders) become 2: the layout class never depends on sizes,
    # only on which dims survive (size-1 dims are dropped, so 1 would change it).
    return tuple(n if isinstance(n, int) else 2 for n in shape)


def _contiguous_strides(shape, itemsize: int, ndim: int) -> tuple[int, ...]:
    """C-order byte strides of `shape` broadcast to `ndim` dims (size-1 and new dims: 0)."""
    st, acc = [], itemsize
    for n in reversed(shape):
        st.append(0 if n == 1 else acc)
        acc *= n
    return (0,) * (ndim - len(shape)) + tuple(reversed(st))


def explain_cuda(expr) -> str:
    """`expr.explain(target='cuda')`: NVVM IR and PTX of every fused kernel of an expression.

    Layouts are those of C-contiguous operands of the leaves' shapes (placeholders: size 2).
    """
    e = as_expr(expr)
    prog = runtime.plan(e.node)
    shapes: list[tuple] = []
    out = []
    for k, step in enumerate(prog.steps):
        ins = [_sample_shape(leaf_data(e.env[r]).shape) if isinstance(r, str) else shapes[r]
               for r in step.inputs]
        shape = np.broadcast_shapes(*ins) if ins else ()
        axes = step.axes or ()
        reduced = tuple(d in axes for d in range(len(shape)))
        ost = _contiguous_strides(tuple(1 if r else n for n, r in zip(shape, reduced)),
                                  np.dtype(step.spec.outputs[0][1]).itemsize, len(shape))
        layout = simplify_dims(shape, (ost, *(_contiguous_strides(s, np.dtype(d).itemsize,
                                                                  len(shape))
                                              for s, d in zip(ins, step.spec.inputs))), reduced)
        shapes.append(tuple(n for n, r in zip(shape, reduced) if not r or step.keepdims))
        out.append(f"=== CUDA kernel {k} (reduce={step.spec.reduce}) ===")
        out.append(gpu.explain(step.spec, layout))
    return "\n".join(out) if out else "(constant expression: no kernel)"


# ---- DLPack (zero-copy exchange with PyTorch, CuPy, JAX) ---------------------------------
# Legacy unversioned DLManagedTensor in a "dltensor" capsule: what every consumer accepts.
import ctypes  # noqa: E402

_KDL_CUDA = 2
_DL_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
_DL_KINDS = {v: k for k, v in _DL_CODES.items()}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                             ("deleter", _DELETER)]
# NOTE: the destructor gets the dying capsule as a raw pointer; wrapping it in a py_object
# would resurrect it mid-deallocation (a segfault), so it is read through raw-pointer calls.
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_NAME, _USED = b"dltensor", b"used_dltensor"
_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_raw_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
# Exported tensors by address: keeps struct, shape/strides and the array alive until the
# consumer (or the capsule, if never consumed) calls the deleter.
_exported: dict[int, tuple] = {}


@_DELETER
def _dl_deleter(managed):
    _exported.pop(ctypes.addressof(managed.contents), None)


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule):
    # NOTE: a consumed capsule was renamed "used_dltensor" and its consumer owns the deleter.
    if _raw_is_valid(capsule, _NAME):
        _exported.pop(_raw_get_pointer(capsule, _NAME), None)


def to_dlpack(arr: DeviceArray):
    """A DLPack capsule viewing arr's device memory (strides in elements, as DLPack wants)."""
    dt = arr.dtype
    if not dt.isnative or dt.kind not in _DL_CODES:
        raise DeviceError(f"{dt} has no DLPack type")
    if any(st % dt.itemsize for st in arr.strides):
        raise DeviceError("strides that are not a multiple of the itemsize have no DLPack form")
    shape = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
    strides = (ctypes.c_int64 * max(arr.ndim, 1))(*(st // dt.itemsize for st in arr.strides))
    managed = _DLManagedTensor()
    t = managed.dl_tensor
    t.data, t.ndim, t.byte_offset = arr.ptr, arr.ndim, 0
    t.device = _DLDevice(_KDL_CUDA, _ordinal(arr.device))
    t.dtype = _DLDataType(_DL_CODES[dt.kind], 8 * dt.itemsize, 1)
    t.shape, t.strides = shape, strides
    managed.deleter = _dl_deleter
    addr = ctypes.addressof(managed)
    _exported[addr] = (managed, shape, strides, arr)
    return _api.PyCapsule_New(addr, _NAME, _capsule_destructor)


class _DLOwner:
    """Keeps an imported DLPack tensor alive; calls its producer's deleter on close()."""

    def __init__(self, managed, capsule):
        self.managed, self.capsule = managed, capsule

    def close(self) -> None:
        if self.managed is not None:
            if self.managed.contents.deleter:
                self.managed.contents.deleter(self.managed)
            self.managed = self.capsule = None

    def __del__(self):
        self.close()


def from_dlpack(obj) -> DeviceArray:
    """Zero-copy DeviceArray of a CUDA DLPack producer (object with __dlpack__, or a capsule)."""
    capsule = obj.__dlpack__() if hasattr(obj, "__dlpack__") else obj
    if not _api.PyCapsule_IsValid(capsule, _NAME):
        raise DeviceError("not an unconsumed 'dltensor' DLPack capsule")
    managed = ctypes.cast(_api.PyCapsule_GetPointer(capsule, _NAME),
                          ctypes.POINTER(_DLManagedTensor))
    t = managed.contents.dl_tensor
    if t.device.device_type != _KDL_CUDA:
        raise DeviceError(f"DLPack tensor on device type {t.device.device_type}, not CUDA (2)")
    if t.dtype.lanes != 1 or t.dtype.code not in _DL_KINDS:
        raise DeviceError(f"DLPack dtype code {t.dtype.code} x{t.dtype.lanes} not supported")
    kind = _DL_KINDS[t.dtype.code]
    dt = np.dtype("?" if kind == "b" else f"{kind}{t.dtype.bits // 8}")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = (tuple(t.strides[i] * dt.itemsize for i in range(t.ndim)) if t.strides
               else None)
    _api.PyCapsule_SetName(capsule, _USED)
    return DeviceArray(shape, dt, (t.data or 0) + t.byte_offset, strides,
                       device=f"cuda:{t.device.device_id}", owner=_DLOwner(managed, capsule))


def _dlpack(self, stream=None, max_version=None, dl_device=None, copy=None):
    """DLPack export; the data is ready once lazyk's launches returned (they synchronize)."""
    return to_dlpack(self)


DeviceArray.__dlpack__ = _dlpack
DeviceArray.__dlpack_device__ = lambda self: (_KDL_CUDA, _ordinal(self.device))
DeviceArray.from_dlpack = staticmethod(from_dlpack)


# structure key -> (program, inputs by position) of an expression over GPU arrays, or False
_EXPRESSIONS = Memo(256, "GPU expressions")


def gpu_launch(key, values: list, planned) -> Callable | None:
    """A call that evaluates an expression of structure `key` over GPU arrays `values` on
    one device (what `.eval()` keeps for the next evaluation), or None where the general path
    must: host arrays beside them (its error names the operands), or a structure `planned()`
    does not plan (it gives (program, inputs, recipe, integer exponents) or None; integer
    exponents are checked on the device by the general path)."""
    try:
        if not on_gpu(dict(enumerate(values))):
            return None
    except DeviceError:
        return None
    entry = _EXPRESSIONS.get(key)
    if entry is None:
        got = planned()
        entry = _EXPRESSIONS.put(key, got is not None and not got[3] and got[:2])
    return partial(_run_expression, entry, values) if entry else None


def _run_expression(entry: tuple, values: list) -> DeviceArray:
    prog, inputs = entry
    return run_program(prog, {name: values[k] for name, k in inputs.items()})


def runner_for(data: dict):
    """`run_program` when these leaves live on a GPU, else None (DeviceError when mixed): the
    "device" evaluation path of `lazyk.runtime.launch.evaluate`."""
    return run_program if on_gpu(data) else None


runtime.install_path("device", runner_for)

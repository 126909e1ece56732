"""KernelSpec (Contract 3) and the three steps: compile (cached) -> bind(arrmeta) -> execute.

`compile(spec, layout_class)` JIT-compiles an unbound kernel, cached in an LRU of CACHE_SIZE
(256) kernels, ~64 KB each, under `(spec, layout_class, target)` (never sizes or strides); a
kernel's code is freed once no cache entry, bound kernel or running call holds it.
`bind(spec, out, *inputs)` (or `CompiledKernel.bind`) builds the kernel data from shapes and
byte strides with no LLVM and checks that every access stays inside the operands; `ck()` runs
it through the prefix.
"""
from __future__ import annotations

import ctypes
import os
import struct
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from lazyk import abi
from lazyk.codegen.llvm import LayoutClass, generate, kernel_data_size
from lazyk.errors import BindError, ShapeError

try:  # the native thread pool
    from lazyk.backend import threads as _threads
except ImportError:  # pragma: no cover
    _threads = None


@dataclass(frozen=True)
class Instr:
    """One SSA instruction: `load` (attr = input index), `param` (attr = parameter slot: a
    scalar read from kernel data), `const` (attr = value, baked into the code) or an op name."""

    op: str
    dtype: np.dtype
    args: tuple[int, ...] = ()
    attr: Any = None


@dataclass(frozen=True)
class KernelSpec:
    """One fused flat kernel: leaf dtypes, SSA body, outputs and an optional final reduction.

    For a reduction the single output's stored dtype is the accumulator dtype (e.g. `sum`
    of int32 values stores int64); the body value is cast to it before folding.
    """

    inputs: tuple[np.dtype, ...]
    aligned: tuple[bool, ...]
    body: tuple[Instr, ...]
    outputs: tuple[tuple[int, np.dtype], ...]
    reduce: str | None = None

    def __hash__(self) -> int:
        # Cached: the spec is a cache key on every call, and hashing the body is not free.
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.inputs, self.aligned, self.body, self.outputs, self.reduce))
            object.__setattr__(self, "_hash", h)
        return h

    @property
    def params(self) -> tuple[np.dtype, ...]:
        """The dtype of each parameter slot (`param` instructions), in slot order."""
        p = self.__dict__.get("_params")
        if p is None:
            slots = {ins.attr: np.dtype(ins.dtype) for ins in self.body if ins.op == "param"}
            p = tuple(slots.get(k) for k in range(len(slots)))
            object.__setattr__(self, "_params", p)
        return p

    def check(self) -> None:
        """Raise ValueError if the body is not well formed: the code generator trusts it
        (a load of input -1 or an argument defined later would read arbitrary memory)."""
        n = len(self.inputs)
        slots: dict = {}
        for ins in self.body:
            if ins.op == "param":
                slots.setdefault(ins.attr, ins.dtype)
        if len(self.aligned) != n:
            raise ValueError(f"malformed KernelSpec: {len(self.aligned)} aligned flags for "
                             f"{n} inputs")
        for i, ins in enumerate(self.body):
            if ins.op == "load" and not (type(ins.attr) is int and 0 <= ins.attr < n):
                raise ValueError(f"malformed KernelSpec: instruction {i} loads input "
                                 f"{ins.attr!r} of {n}")
            if ins.op == "param" and not (type(ins.attr) is int and 0 <= ins.attr < len(slots)
                                          and slots[ins.attr] == ins.dtype):
                raise ValueError(f"malformed KernelSpec: instruction {i} reads parameter "
                                 f"{ins.attr!r}; slots must be 0..n-1, one dtype each")
            if any(not (type(a) is int and 0 <= a < i) for a in ins.args):
                raise ValueError(f"malformed KernelSpec: instruction {i} ({ins.op}) uses "
                                 f"{ins.args}; arguments must be earlier instructions")
        if not self.outputs or any(not (type(k) is int and 0 <= k < len(self.body))
                                   for k, _ in self.outputs):
            raise ValueError(f"malformed KernelSpec: outputs {self.outputs} must name "
                             f"instructions 0..{len(self.body) - 1}")

    def __getstate__(self) -> dict:
        # string hashes differ between processes: never ship the cached hash
        return {k: v for k, v in self.__dict__.items() if k not in ("_hash", "_params")}

    def __setstate__(self, state: dict) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, v)


PARAM_SLOT = 16  # bytes per parameter slot in kernel data (a complex128 fits)


def pack_params(dtypes: tuple, values: tuple) -> bytes:
    """Kernel-data bytes of parameter values: slot k holds `values[k]` as `dtypes[k]`."""
    if len(values) != len(dtypes):
        raise BindError(f"kernel takes {len(dtypes)} parameters, got {len(values)}")
    out = bytearray(PARAM_SLOT * len(dtypes))
    for k, (dt, v) in enumerate(zip(dtypes, values)):
        raw = np.asarray(v, dtype=dt).tobytes()
        out[PARAM_SLOT * k:PARAM_SLOT * k + len(raw)] = raw
    return bytes(out)


def param_values(dtypes: tuple, blob: bytes) -> list:
    """The values packed by `pack_params` (0-d arrays of each slot's dtype)."""
    return [np.frombuffer(blob, dt, 1, PARAM_SLOT * k).reshape(()) for k, dt in enumerate(dtypes)]


def _check_params(spec: KernelSpec, params: bytes) -> bytes:
    if len(params) != PARAM_SLOT * len(spec.params):
        raise BindError(f"kernel takes {len(spec.params)} parameters ({PARAM_SLOT} bytes "
                        f"each, see pack_params), got {len(params)} bytes")
    return params


# ---------------------------------------------------------------- fast data pointers
def _probe_data_offset() -> int | None:
    # PyArrayObject is {PyObject_HEAD; char *data; ...}: reading the field directly costs
    # ~0.2 us against ~1.7 us for `a.ctypes.data`. Verified here, else we use the slow way.
    a = np.arange(3.0)[1:]
    try:
        if ctypes.c_void_p.from_address(id(a) + 16).value == a.ctypes.data:
            return 16
    except Exception:  # pragma: no cover
        pass
    return None  # pragma: no cover


_DATA_OFFSET = _probe_data_offset()
_from_address = ctypes.c_void_p.from_address


def data_pointer(a: np.ndarray) -> int:
    """Address of element 0 of a NumPy array."""
    if _DATA_OFFSET is not None and type(a) is np.ndarray:
        return _from_address(id(a) + _DATA_OFFSET).value or 0
    return a.ctypes.data


# ---------------------------------------------------------------- compile + cache
CACHE_SIZE = 256
_cache: OrderedDict = OrderedDict()
_cache_lock = threading.Lock()
os.register_at_fork(after_in_child=_cache_lock._at_fork_reinit)  # never held by a parent's thread
# "compiles" counts every kernel built in this process; "disk_loads" those of them whose
# machine code came from the on-disk cache instead of LLVM.
stats = {"compiles": 0, "hits": 0, "evictions": 0, "disk_loads": 0}
_NAME = "lazyk_k"


class CompiledKernel:
    """An unbound kernel: JIT code for one (spec, layout class); `bind` makes a ckernel."""

    def __init__(self, spec: KernelSpec, layout: LayoutClass, target: str = "cpu",
                 ir_text: str | None = None):
        from lazyk.backend.cpu import JITModule

        # NOTE: the code is freed only when nothing can run it any more: no Python reference
        # is left (every caller that runs it holds one) and no bound kernel's data points
        # into it (`_live`; their destructors run the code even from a garbage cycle).
        self._live = 0
        self._unused = False
        self._lock = threading.Lock()
        self.spec, self.layout, self.target = spec, layout, target
        names = (f"{_NAME}_single", f"{_NAME}_strided", f"{_NAME}_destroy")
        if ir_text is not None:
            self.jit = JITModule(ir_text, names)
        else:  # disk-cache key from the spec: a hit skips IR generation
            self.jit = JITModule(lambda: str(generate(spec, layout, _NAME)), names,
                                 key_text=_structural_key(spec, layout))
        a = self.jit.addresses
        self.single_address = a[f"{_NAME}_single"]
        self.strided_address = a[f"{_NAME}_strided"]
        self.destroy_address = a[f"{_NAME}_destroy"]
        self.single = abi.SingleFn(self.single_address)
        self.strided = abi.StridedFn(self.strided_address)
        self.nin, self.nout = len(spec.inputs), len(spec.outputs)
        self.kd_size = kernel_data_size(layout, self.nout, self.nin, len(spec.params))
        self.params_offset = kernel_data_size(layout, self.nout, self.nin)

    @property
    def ir(self) -> str:
        """The unoptimized LLVM IR (generated on demand after a disk-cache hit)."""
        jit = self.jit
        return jit.source_ir if jit is not None else str(generate(self.spec, self.layout, _NAME))

    @property
    def llvm_ir(self) -> str:
        """Optimized LLVM IR (the unoptimized source when loaded from the disk cache)."""
        return self.jit.llvm_ir or self.ir

    @property
    def asm(self) -> str:
        """Host assembly."""
        return self.jit.asm

    def bind(self, out: Any, *inputs: Any, params: bytes = b"") -> BoundKernel:
        """Bind to arrays whose simplified layout has this kernel's layout class; `params`
        are the parameter values (`pack_params(spec.params, values)`)."""
        layout = plan(self.spec, out, inputs)
        if layout_class(self.spec, layout) != self.layout:
            raise BindError(f"arrays have layout class {layout_class(self.spec, layout)}, "
                            f"this kernel was compiled for {self.layout}")
        return BoundKernel(self, layout, out, inputs, params)

    def _acquire(self) -> None:
        """Count one more bound kernel whose data points into the code."""
        with self._lock:
            if self.jit is None or self._unused:
                raise BindError("compiled kernel was closed")
            self._live += 1

    def _release(self) -> None:
        with self._lock:
            self._live -= 1
            jit = self._detach() if self._unused and self._live == 0 else None
        if jit is not None:
            jit.close()

    def _detach(self) -> Any:
        # Called under self._lock: once jit is None nobody can bind it again.
        jit, self.jit = getattr(self, "jit", None), None
        return jit

    def close(self) -> None:
        """Free the machine code as soon as no bound kernel uses it (also done automatically
        when the last reference goes). The caller must not run it again: `bind` raises."""
        with self._lock:
            self._unused = True
            jit = self._detach() if self._live == 0 else None
        if jit is not None:
            jit.close()

    def __del__(self) -> None:
        if sys.is_finalizing():  # the process frees the code; the JIT may be torn down
            return
        try:
            self.close()
        except Exception:  # pragma: no cover
            pass

    def __reduce__(self):
        # Cheap pickling for Dask: IR text + signature; the receiver compiles once per process.
        return (_unpickle, (self.ir, self.spec, self.layout, self.target))


def _structural_key(spec: KernelSpec, layout: LayoutClass) -> str:
    """Disk-cache key text from the spec, the layout class and the code generator's sources."""
    from lazyk.backend.objcache import source_digest

    code = source_digest("lazyk.codegen.llvm", "lazyk.codegen.emit", "lazyk.ops", "lazyk.lowering",
                         "lazyk.kernel", "lazyk.abi")
    return f"spec:{_NAME}|{spec!r}|{layout!r}|{code}"


def _unpickle(ir_text: str, spec: KernelSpec, layout: LayoutClass, target: str) -> CompiledKernel:
    return compile(spec, layout, target, _ir_text=ir_text)


def compile(spec: KernelSpec, layout: LayoutClass, target: str = "cpu", *,
            _ir_text: str | None = None) -> CompiledKernel:
    """The compiled kernel for (spec, layout class, target), from the in-memory LRU if present.

    Args:
        spec: the fused kernel (Contract 3).
        layout: `LayoutClass(ndim, inner)`, e.g. `LayoutClass(1, "ccc")` for a flat
            `N * float64` expression with contiguous output and two inputs.
        target: "cpu" (the only CPU target; the GPU path lives in codegen/nvvm.py).
    Raises:
        CompileError: LLVM rejected the generated IR (a lazyk bug; the IR is attached).
        NotSupportedError: an op/dtype pair the op table does not lower (e.g. complex sin).
    """
    key = (spec, layout, target)
    with _cache_lock:
        k = _cache.get(key)
        if k is not None and not k._unused:  # (a closed kernel is compiled again)
            _cache.move_to_end(key)
            stats["hits"] += 1
            return k
    spec.check()
    k = CompiledKernel(spec, layout, target, _ir_text)  # outside the lock: compiles take ms
    evicted = []
    with _cache_lock:
        other = _cache.get(key)
        if other is not None and not other._unused:  # another thread won the race
            evicted.append(k)
            k = other
        else:
            _cache[key] = k
            stats["compiles"] += 1
            stats["disk_loads"] += bool(getattr(k.jit, "from_disk", False))
            while len(_cache) > CACHE_SIZE:
                evicted.append(_cache.popitem(last=False)[1])
                stats["evictions"] += 1
    del evicted  # outside the lock: the last reference to an evicted kernel frees its code
    return k


def clear_cache() -> None:
    """Drop every compiled kernel and prepared bind from memory. Code is freed when nothing
    uses it any more: a kernel running in another thread, or held by a bound kernel or a
    compiled expression, stays valid until that lets go of it."""
    with _cache_lock:
        items = list(_cache.values()), list(_prepared.values())
        _cache.clear()
        _prepared.clear()
    del items  # outside the lock: destructors may free code


def cache_info() -> dict:
    """Entries, capacity and hit/compile/eviction counters of the in-memory kernel LRU."""
    return {"entries": len(_cache), "capacity": CACHE_SIZE, **stats}


# ---------------------------------------------------------------- layout (bind, no LLVM)
def _as_array(x: Any, what: str) -> np.ndarray:
    if type(x) is np.ndarray:
        return x
    if hasattr(x, "to_numpy") and not isinstance(x, np.generic):
        x = x.to_numpy()
    if not isinstance(x, np.ndarray):
        raise BindError(f"{what} must be an array, got {type(x).__name__}")
    return x


def _strides_over(a: np.ndarray, shape: tuple, name: str) -> tuple[int, ...]:
    """Byte strides of `a` broadcast (right-aligned) to `shape`; 0 along broadcast dims."""
    lead = len(shape) - a.ndim
    if lead < 0:
        raise ShapeError(f"{name} has {a.ndim} dims, more than the iteration space {shape}")
    st = [0] * lead
    for d, (n, s) in enumerate(zip(a.shape, a.strides)):
        full = shape[lead + d]
        if n == full:
            st.append(s if n != 1 else 0)
        elif n == 1:
            st.append(0)
        else:
            raise ShapeError(f"{name} with shape {a.shape} does not broadcast to {shape}: "
                             f"axis {lead + d} has size {n}, needs {full} or 1")
    return tuple(st)


def broadcast_shape(named: list) -> tuple:
    """NumPy broadcasting of `[(name, shape), ...]`; errors name operands, axis and sizes."""
    nd = max((len(sh) for _, sh in named), default=0)
    out, who = [1] * nd, [None] * nd
    for name, sh in named:
        for k, n in enumerate(sh):
            d = nd - len(sh) + k
            if n == out[d] or n == 1:
                continue
            if out[d] == 1:
                out[d], who[d] = n, name
                continue
            raise ShapeError(f"{name} with shape {tuple(sh)} does not broadcast with {who[d]}: "
                             f"axis {d} has size {n}, {who[d]} has {out[d]}")
    return tuple(out)


def plan(spec: KernelSpec, out: Any, inputs: tuple) -> Any:
    """Check dtypes, sizes, strides and alignment; return the simplified dims Layout."""
    from lazyk.passes.dims import simplify_dims

    if len(inputs) != len(spec.inputs):
        raise BindError(f"kernel takes {len(spec.inputs)} inputs, got {len(inputs)}")
    outs = out if isinstance(out, (tuple, list)) else (out,)
    if len(outs) != len(spec.outputs):
        raise BindError(f"kernel writes {len(spec.outputs)} outputs, got {len(outs)}")
    outs = [_as_array(o, f"output {j}") for j, o in enumerate(outs)]
    ins = [_as_array(a, f"input {j}") for j, a in enumerate(inputs)]
    for j, (o, (_, dt)) in enumerate(zip(outs, spec.outputs)):
        if o.dtype != np.dtype(dt) or not o.dtype.isnative:
            raise BindError(f"output {j} has dtype {o.dtype}, the kernel stores native {dt}")
        if not o.flags.writeable:
            raise BindError(f"output {j} is read-only")
        for k, a in enumerate(ins):
            # The kernel streams through memory once: an input it has already overwritten
            # would be read back. Only the exact alias (same elements in the same order) of
            # an elementwise kernel is safe; callers go through a temporary otherwise.
            exact = (spec.reduce is None and data_pointer(a) == data_pointer(o)
                     and a.shape == o.shape and a.strides == o.strides
                     and a.dtype.itemsize == o.dtype.itemsize)
            if not exact and np.may_share_memory(o, a) and np.shares_memory(o, a):
                raise BindError(f"output {j} overlaps input {k} other than as an exact alias; "
                                "write into a temporary (lazyk.evaluate does this) and copy")
    for j, (a, dt, al) in enumerate(zip(ins, spec.inputs, spec.aligned)):
        if a.dtype != np.dtype(dt):
            raise BindError(f"input {j} has dtype {a.dtype.str}, "
                            f"the kernel loads {np.dtype(dt).str}")
        if al:
            need = a.dtype.alignment
            if data_pointer(a) % need or any(s % need for s in a.strides):
                raise BindError(f"input {j} is not {need}-byte aligned; "
                                "compile with aligned=False")
    named = [(f"input {j}", a.shape) for j, a in enumerate(ins)]
    named += [(f"output {j}", o.shape) for j, o in enumerate(outs)]
    shape = broadcast_shape(named)
    if spec.reduce is None:
        for j, o in enumerate(outs):
            if o.shape != shape:
                raise ShapeError(f"output {j} has shape {o.shape}; "
                                 f"the inputs broadcast to {shape}")
    out_st = [_strides_over(o, shape, f"output {j}") for j, o in enumerate(outs)]
    in_st = [_strides_over(a, shape, f"input {j}") for j, a in enumerate(ins)]
    reduced = tuple(spec.reduce is not None and out_st[0][d] == 0 and n > 1
                    for d, n in enumerate(shape))
    if spec.reduce is None and 0 not in shape:  # NOTE: NumPy gives empty arrays 0 strides
        for j, st in enumerate(out_st):
            if any(s == 0 and n > 1 for s, n in zip(st, shape)):
                raise BindError(f"output {j} has a zero stride: writes would collide")
    return simplify_dims(shape, tuple(out_st) + tuple(in_st), reduced)


def layout_class(spec: KernelSpec, layout: Any) -> LayoutClass:
    """The compile-time key of a simplified layout: ndim and per-operand inner-stride kinds."""
    if layout.ndim == 0:
        return LayoutClass(0, "")
    sizes = [np.dtype(d).itemsize for _, d in spec.outputs] + [np.dtype(d).itemsize
                                                               for d in spec.inputs]
    kinds = "".join("0" if st[-1] == 0 else "c" if st[-1] == sz else "s"
                    for st, sz in zip(layout.strides, sizes))
    return LayoutClass(layout.ndim, kinds)


# ---------------------------------------------------------------- bound kernels
class BoundKernel:
    """A ckernel: kernel data (prefix, shape, strides) plus the operands' data pointers.

    `ck()` executes; `ck.address` is the `ckernel_prefix *`; `ck.dst` / `ck.src_address`
    are the pointers the single request takes. Thread-safe: the kernel data is only read.
    """

    # NOTE: `dst` lives in a one-element list that the thread plans' closures share, so they
    # need not capture `self`: a closure over self made every threaded bound kernel a reference
    # cycle, freed by the cyclic GC together with its (evicted) compiled kernel in any order;
    # the JIT could go first and the kernel-data destructor then jumped into freed code.
    @property
    def dst(self) -> int:
        return self._dstc[0]

    @dst.setter
    def dst(self, value: int) -> None:
        self._dstc[0] = value

    def __init__(self, compiled: CompiledKernel, layout: Any, out: Any, inputs: tuple,
                 params: bytes = b""):
        _check_params(compiled.spec, params)
        self._dstc = [0]
        compiled._acquire()
        self.compiled = compiled
        self.layout = layout
        self.builder = abi.CKernelBuilder(compiled.kd_size)
        self._fill(compiled, layout, params)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        self._keep = (tuple(outs), tuple(inputs))
        offs = layout.offsets
        nout = compiled.nout
        ptrs = [data_pointer(_as_array(o, "out")) + offs[j] for j, o in enumerate(outs)]
        self._src = (ctypes.c_void_p * max(compiled.nin, 1))(
            *[data_pointer(_as_array(a, "in")) + offs[nout + j] for j, a in enumerate(inputs)])
        if nout == 1:
            self.dst = ptrs[0]
        else:
            self._dst_arr = (ctypes.c_void_p * nout)(*ptrs)
            self.dst = ctypes.addressof(self._dst_arr)
        self.src_address = ctypes.addressof(self._src)
        self.address = self.builder.address
        self.size = layout.size
        self._empty = any(n == 0 for n in layout.shape)
        self._run_lock = threading.Lock()
        self._task = self._thread_plan(compiled, layout)

    def _fill(self, compiled: CompiledKernel, layout: Any, params: bytes) -> None:
        nd = layout.ndim
        vals = [compiled.single_address, compiled.destroy_address, nd, *layout.shape]
        for st in layout.strides:
            vals.extend(st)
        buf = self.builder.buffer()
        struct.pack_into(f"={len(vals)}q", buf, 0,
                         *[v - (1 << 64) if v >= 1 << 63 else v for v in vals])
        if params:
            buf[compiled.params_offset:compiled.params_offset + len(params)] = params

    def _thread_plan(self, compiled: CompiledKernel, layout: Any):
        """Split the outer dim over the pool when large enough; None = run single."""
        if _threads is None or compiled.nout != 1 or layout.ndim == 0 or self._empty:
            return None
        inner = max(1, layout.size // layout.shape[0])
        min_chunk = max(1, _threads.MIN_CHUNK // inner)
        if layout.shape[0] < 2 * min_chunk:
            return None
        if compiled.spec.reduce is not None and layout.strides[0][0] == 0:
            return self._reduce_plan(compiled, layout, min_chunk)
        self._ss = (ctypes.c_int64 * max(compiled.nin, 1))(
            *[st[0] for st in layout.strides[compiled.nout:]])
        task = _threads.StridedTask(compiled.nin)
        fn, dstride = compiled.strided_address, layout.strides[0][0]
        ss = ctypes.addressof(self._ss)
        count, address, src = layout.shape[0], self.address, self.src_address
        # dst is read at call time: run_layout re-points a cached bound kernel
        dstc = self._dstc
        return lambda: task(fn, dstc[0], dstride, src, ss, count, address, min_chunk)

    def _reduce_plan(self, compiled: CompiledKernel, layout: Any, min_chunk: int):
        """A full reduction over threads: chunk i folds into partial i; combine them here."""
        from lazyk import ops

        if any(layout.strides[0]):
            return None  # several results (partial reduction): one thread keeps it simple
        dt = np.dtype(compiled.spec.outputs[0][1])
        combine = getattr(np, ops.get(compiled.spec.reduce).combine)
        task = _threads.StridedTask(compiled.nin)
        partials = np.empty(_threads.max_chunks(task.max_parts), dt)
        self._ss = (ctypes.c_int64 * max(compiled.nin, 1))(
            *[st[0] for st in layout.strides[compiled.nout:]])
        args = (compiled.strided_address, data_pointer(partials), 0, self.src_address,
                ctypes.addressof(self._ss), layout.shape[0], self.address, min_chunk)
        dstc = self._dstc

        def run() -> None:
            chunks = task(*args, dst_chunk_stride=dt.itemsize)
            value = np.asarray(combine.reduce(partials[:chunks]), dt)
            ctypes.memmove(dstc[0], value.ctypes.data, dt.itemsize)  # dst read at call time
        return run

    def __call__(self) -> None:
        """Execute through the function pointer in the prefix (GIL released by ctypes)."""
        if self.builder.closed:
            # its kernel data is destroyed and its code may be freed: running it would crash
            raise BindError("bound kernel is closed; bind again")
        if self._task is not None:
            self._task()
        elif not self._empty:
            self.compiled.single(self.dst, self.src_address, self.address)
        elif self.compiled.spec.reduce is not None and self._keep is not None:
            self._fold_nothing()

    def _fold_nothing(self) -> None:
        """A reduction over an empty iteration space: outputs hold the identity (NumPy's rule;
        min/max have none and raise). The kernel itself never runs on empty layouts."""
        op = self.compiled.spec.reduce
        if op in ("min", "max"):
            raise ValueError(f"zero-size array to reduction operation {op} which has no "
                             "identity")
        from lazyk import ops

        for o in self._keep[0]:
            o = _as_array(o, "out")
            o[...] = ops.get(op).identity(o.dtype)

    def close(self) -> None:
        """Destroy the kernel data (once) and release the compiled code."""
        b = getattr(self, "builder", None)
        if b is not None and not b.closed:
            b.close()
            self.compiled._release()

    def __enter__(self) -> BoundKernel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover
            pass


def bind(spec: KernelSpec, out: Any, *inputs: Any, target: str = "cpu",
         params: bytes = b"") -> BoundKernel:
    """Plan the layout, compile (cached) for its layout class, bind: `bind(spec, out, a, b)()`.

    Args:
        spec: the fused kernel; `out` and `inputs` are NumPy arrays (or objects with
            `to_numpy()`), inputs broadcasting to the iteration space, e.g. `N * float64`.
        params: the values of the spec's parameter slots, `pack_params(spec.params, values)`
            (a fused step carries them as `Step.consts`).
    Raises:
        ShapeError: shapes do not broadcast (names operands, axis and sizes).
        BindError: wrong dtype or count, read-only or overlapping-write output, misaligned
            input for an aligned spec, parameter bytes that do not match the spec.
    """
    _check_params(spec, params)
    layout = plan(spec, out, inputs)
    return BoundKernel(compile(spec, layout_class(spec, layout), target), layout, out, inputs,
                       params)


def execute(spec: KernelSpec, out: Any, *inputs: Any, params: bytes = b"") -> Any:
    """Bind and run once; returns `out`."""
    with bind(spec, out, *inputs, params=params) as ck:
        ck()
    return out


# ---------------------------------------------------------------- the pipeline's runner
# Bound kernels for threaded sizes per (spec, layout): an LRU; each entry holds its kernel.
_prepared: OrderedDict = OrderedDict()
_PREPARED_SIZE = 256


def run_layout(spec: KernelSpec, layout: Any, out: np.ndarray, arrays: list,
               params: bytes = b"") -> None:
    """Run `spec` on views already broadcast to the iteration space, with `layout` from dims.

    The kernel data depends only on (spec, layout, params), so it is built once and reused.
    """
    key = (spec, layout, params)
    ck = _prepared.get(key)
    if ck is None:
        ck = BoundKernel(compile(spec, layout_class(spec, layout)), layout, out, tuple(arrays),
                         params)
        ck()
        ck._keep = None  # cached kernel data must not keep this call's arrays alive
        dropped = []
        with _cache_lock:
            _prepared[key] = ck
            while len(_prepared) > _PREPARED_SIZE:
                dropped.append(_prepared.popitem(last=False))
        del dropped  # outside the lock: destructors run kernel code and may free it
        return
    if len(_prepared) > _PREPARED_SIZE // 2:
        try:  # least recently used goes first (only worth it once the cache is filling)
            _prepared.move_to_end(key)
        except KeyError:  # dropped by another thread meanwhile; we hold the bound kernel
            pass
    # same kernel data, new data pointers: a private pointer array keeps this thread-safe
    offs = layout.offsets
    nout = ck.compiled.nout
    src = (ctypes.c_void_p * max(len(arrays), 1))(
        *[data_pointer(a) + offs[nout + j] for j, a in enumerate(arrays)])
    if ck._empty:
        return
    dst = data_pointer(out) + offs[0]
    if ck._task is not None:
        # Threaded sizes: re-point the cached bound kernel (a fresh BoundKernel cost ~30 us,
        # as much as the whole 2-thread kernel at n = 1e5); concurrent callers build their own.
        lock = ck._run_lock
        if not lock.acquire(blocking=False):
            BoundKernel(ck.compiled, layout, out, tuple(arrays), params)()
            return
        try:
            ck._src[:len(arrays)] = src[:len(arrays)]
            ck.dst = dst
            ck._task()
        finally:
            lock.release()
        return
    ck.compiled.single(dst, ctypes.addressof(src), ck.address)


# ---------------------------------------------------------------- repeated calls: native guard
def _layout_ok() -> bool:
    # The guard reads PyArrayObject fields directly; check the offsets on a probe array.
    a = np.ones((3, 4))[:, 1:]
    rd = lambda off, t=ctypes.c_int64: t.from_address(id(a) + off).value  # noqa: E731
    try:
        return (_DATA_OFFSET == 16 and rd(8) == id(np.ndarray) and rd(24, ctypes.c_int32) == 2
                and ctypes.c_int64.from_address(rd(32) + 8).value == 3
                and ctypes.c_int64.from_address(rd(40)).value == 32 and rd(56) == id(a.dtype)
                and rd(64, ctypes.c_int32) & abi.NPY_ALIGNED)
    except Exception:  # pragma: no cover
        return False


_GUARD_OK = _layout_ok()
_guards: dict = {}


def _guard_fn(nops: int, nogil: bool = False) -> Any:
    """The native guard entry for `nops` arrays; None above `abi.GUARD_MAXOPS`.

    NOTE: the PYFUNCTYPE entry keeps the GIL: 1.0 us against 2.2 us per call for the CFUNCTYPE
    one (`nogil`), which mid-size kernels use so other Python threads run meanwhile. The
    caller's references keep the arrays (and their buffers) alive while the GIL is released.
    """
    f = _guards.get(nops)
    if f is None:
        if not 1 <= nops <= abi.GUARD_MAXOPS:
            return None
        jit = _guards.get("jit")
        if jit is None:
            from lazyk.backend.cpu import JITModule
            from lazyk.backend.objcache import source_digest

            names = tuple(abi.guard_name(n) for n in range(1, abi.GUARD_MAXOPS + 1))
            # keyed by abi.py's source: a disk-cache hit skips IR generation (~14 ms)
            key = f"guards:{abi.GUARD_MAXOPS}|{source_digest('lazyk.abi')}"
            jit = _guards.setdefault("jit", JITModule(abi.guard_ir, names, key_text=key))
        address = jit.addresses[abi.guard_name(nops)]
        args = (ctypes.c_int64, ctypes.c_void_p, *[ctypes.py_object] * nops)
        f = _guards[nops] = (ctypes.PYFUNCTYPE(*args)(address), ctypes.CFUNCTYPE(*args)(address))
    return f[1] if nogil else f[0]


class Dispatcher:
    """`d(out, *inputs)` runs `spec`: one native call when the arrays' geometry matches the last
    bind (checked natively: type, dtype, flags, shape, strides, overlap), else a full bind.

    This is the repeated-call path for compiled expressions; large inputs (threaded) always
    take the bind path, whose cost is negligible next to the work.
    """

    def __init__(self, spec: KernelSpec, params: bytes = b""):
        self.spec = spec
        self.params = _check_params(spec, params)
        self._g = None
        self._nin = len(spec.inputs)  # the guard entry takes exactly this many
        self._fn = _guard_fn(1 + len(spec.inputs)) if (
            _GUARD_OK and len(spec.outputs) == 1) else None

    def __call__(self, out: Any, *inputs: Any) -> Any:
        """Execute into `out`; returns `out`."""
        g = self._g
        if g is not None and len(inputs) == self._nin and self._fn(g[0], out, *inputs) == 0:
            return out
        return self._miss(out, inputs)

    def call_with(self, params: bytes, out: Any, *inputs: Any) -> Any:
        """Execute with other parameter values (`pack_params` bytes); returns `out`.

        The guard and kernel data of the last bind are copied with `params` written in:
        the shared ones are never written, so concurrent calls stay safe.
        """
        g = self._g
        if g is not None and len(inputs) == self._nin:
            buf, ck = g[0], g[1]
            off = ck.compiled.params_offset
            kd = ctypes.create_string_buffer(
                ctypes.string_at(ck.address, off) + _check_params(self.spec, params))
            gb = type(buf).from_buffer_copy(buf)
            gb[1] = ctypes.addressof(kd)
            if self._fn(gb, out, *inputs) == 0:
                return out
        return self._miss(out, inputs, params)

    def _miss(self, out: Any, inputs: tuple, params: bytes | None = None) -> Any:
        ck = bind(self.spec, out, *inputs, params=self.params if params is None else params)
        ck()
        arrays = (out,) + inputs
        if (self._fn is None or ck._task is not None or ck._empty
                or any(type(a) is not np.ndarray or a.ndim > abi.GUARD_MAXND for a in arrays)):
            return out
        buf = abi.make_guard(ck.compiled.single_address, ck.address, ck.layout.offsets, arrays,
                             self.spec.aligned, tuple(range(len(inputs))),
                             may_alias=self.spec.reduce is None)
        ck._keep = None  # the guard must not keep this call's arrays alive
        # NOTE: dtype objects are compared by identity; keep them alive with the guard
        self._g = (buf, ck, tuple(a.dtype for a in arrays))
        return out


# ---------------------------------------------------------------- repeated threaded calls
class ThreadedRun:
    """A threaded elementwise run of one (spec, layout), fixed except for the data pointers.

    Built once per geometry from the cached bound kernel: the strided-task record (function,
    kernel data, strides, count, chunk table, parts, pool and its epoch) and the
    source-pointer array are filled here. `record_go_address` runs it on new data pointers
    in one native call (re-point, run on the pool with the GIL released); a native guard
    that checked the arrays' geometry calls it directly.
    """

    def __init__(self, ck: BoundKernel, pool: Any):
        layout, compiled = ck.layout, ck.compiled
        self._ck = ck  # keeps the kernel data and the code alive
        self.offs = layout.offsets
        nin = compiled.nin
        count = layout.shape[0]
        inner = max(1, layout.size // count)
        min_chunk = max(1, _threads.MIN_CHUNK // inner)
        self.pool = pool
        # One part (one thread set) keeps a record too: the caller's native guard runs it in
        # one foreign call instead of run_layout's Python path (~10 us at n = 1e5).
        self.parts = parts = min(_threads.nparts_for(count, min_chunk), pool.nthreads)
        task = _threads.StridedTask(nin, parts)
        chunk = _threads.chunk_size(count, parts)
        nchunks = -(-count // chunk)
        per = -(-nchunks // parts)
        self.src = (ctypes.c_void_p * max(nin, 1))()
        self._ss = (ctypes.c_int64 * max(nin, 1))(*[st[0] for st in layout.strides[1:]])
        b = self.buf = task.buf
        self._task = task
        b[0], b[1], b[2], b[3], b[4], b[6], b[7], b[8] = (
            compiled.strided_address, 0, layout.strides[0][0], ctypes.addressof(self.src),
            ctypes.addressof(self._ss), count, ck.address, parts)
        b[9], b[10], b[11], b[12] = 0, chunk, nchunks, per
        b[13], b[14], b[15] = pool.state, 0, pool.epoch
        self.address = task.address
        self._native = pool.native
        self._src_type = ctypes.c_void_p * max(nin, 1)

    def stale(self) -> bool:
        """True when the thread count or the pool changed since this record was planned."""
        return self.buf[15] != self.pool.epoch

    def __call__(self, out: np.ndarray, arrays: list) -> bool:
        """Run into `out` from `arrays`; False (nothing done) when the record is busy or stale."""
        offs = self.offs
        src = self._src_type(*[data_pointer(a) + offs[k + 1] for k, a in enumerate(arrays)])
        return self._native.record_go(data_pointer(out) + offs[0], ctypes.addressof(src),
                                      self.address) == 0


def threaded_run(spec: KernelSpec, layout: Any, params: bytes = b"") -> ThreadedRun | None:
    """The reusable threaded record for a (spec, layout, params) run_layout has run, or None."""
    ck = _prepared.get((spec, layout, params))
    if (ck is None or ck._task is None or _threads is None or ck.compiled.nout != 1
            or spec.reduce is not None or ck._empty or layout.ndim == 0):
        return None
    return ThreadedRun(ck, _threads.pool())


def public_stats() -> dict:
    """`lazyk.stats()`: counters of this process's fused-kernel cache.

    `compiles`: kernels LLVM compiled; `disk_loads`: kernels whose machine code came from the
    on-disk cache instead; `cache_hits`: lookups answered by the in-memory cache (no LLVM, no
    disk). A Dask worker that ran an expression over many blocks shows `compiles +
    disk_loads == 1` per kernel.
    """
    with _cache_lock:
        s = dict(stats)
    return {"compiles": s["compiles"] - s["disk_loads"], "cache_hits": s["hits"],
            "disk_loads": s["disk_loads"]}

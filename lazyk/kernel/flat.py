"""The three steps for a KernelSpec (`lazyk.frontend.spec`, Contract 3): compile (cached) ->
bind(arrmeta) -> execute.

`compile(spec, layout_class)` JIT-compiles an unbound kernel, cached in an LRU (`kernels`) of 256
kernels, ~64 KB each, under `(spec, layout_class, target)` (never sizes or strides); a
kernel's code is freed once no cache entry, bound kernel or running call holds it.
`bind(spec, out, *inputs)` (or `CompiledKernel.bind`) builds the kernel data from shapes and
byte strides with no LLVM and checks that every access stays inside the operands; `ck()` runs
it through the prefix.
"""
from __future__ import annotations

import ctypes
import struct
import sys
import threading
from typing import Any

import numpy as np

from lazyk.arrays.memory import data_pointer  # noqa: F401  (also lazyk.kernel.flat's)
from lazyk.backend import threads as _threads  # the native thread pool
from lazyk.backend.cpu import JITModule
from lazyk.backend.objcache import GENERATOR, source_digest
from lazyk.codegen.llvm import LayoutClass, generate, kernel_data_size
from lazyk.errors import BindError, ShapeError
from lazyk.frontend import ops
from lazyk.frontend.spec import (  # noqa: F401  (also lazyk.kernel.flat.Instr, .pack_params, ...)
    PARAM_SLOT,
    Instr,
    KernelSpec,
    check_params,
    pack_params,
    param_values,
)
from lazyk.kernel import abi
from lazyk.lru import LRU, lock
from lazyk.passes.dims import simplify_dims

# ---------------------------------------------------------------- compile + cache
# compiled kernels by (spec, layout class, target): ~64 KB of code each
kernels = LRU(256, "kernels")
_stats_lock = lock()  # (counters only: `lazyk.stats()`)
# "compiles" counts every kernel built in this process; "disk_loads" those of them whose
# machine code came from the on-disk cache instead of LLVM.
stats = {"compiles": 0, "hits": 0, "evictions": 0, "disk_loads": 0}
_NAME = "lazyk_k"


class CompiledKernel:
    """An unbound kernel: JIT code for one (spec, layout class); `bind` makes a ckernel."""

    def __init__(self, spec: KernelSpec, layout: LayoutClass, target: str = "cpu",
                 ir_text: str | None = None):
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
        if sys is None or sys.is_finalizing():  # the process frees the code (also when
            return  # this module is torn down before its kernel cache)
        try:
            self.close()
        except Exception:  # pragma: no cover
            pass

    def __reduce__(self):
        # Cheap pickling for Dask: IR text + signature; the receiver compiles once per process.
        return (_unpickle, (self.ir, self.spec, self.layout, self.target))


def _structural_key(spec: KernelSpec, layout: LayoutClass) -> str:
    """Disk-cache key text from the spec, the layout class and the code generator's sources."""
    code = source_digest(*GENERATOR)
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
    k = kernels.get(key)
    if k is not None and not k._unused:  # (a closed kernel is compiled again)
        with _stats_lock:
            stats["hits"] += 1
        return k
    spec.check()
    k = CompiledKernel(spec, layout, target, _ir_text)  # outside any lock: compiles take ms
    kept = kernels.put(key, k)
    if kept is not k and kept._unused:
        kernels.pop(key)
        kept = kernels.put(key, k)
    if kept is k:
        with _stats_lock:
            stats["compiles"] += 1
            stats["disk_loads"] += bool(getattr(k.jit, "from_disk", False))
    return kept


def clear_cache() -> None:
    """Drop every compiled kernel and prepared bind from memory. Code is freed when nothing
    uses it any more: a kernel running in another thread, or held by a bound kernel or a
    compiled expression, stays valid until that lets go of it."""
    kernels.clear()
    prepared_binds.clear()


def cache_info() -> dict:
    """Entries, capacity and hit/compile/eviction counters of the in-memory kernel LRU."""
    return {"entries": len(kernels), "capacity": kernels.size, **stats,
            "evictions": kernels.evictions}


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


def broadcast_shapes(*shapes: tuple) -> tuple:
    """`np.broadcast_shapes`, past its 32 dims too (`ShapeError`, a ValueError, where the
    shapes do not broadcast)."""
    try:
        return np.broadcast_shapes(*shapes)
    except RuntimeError:  # (NumPy's takes 32 dims at most)
        return broadcast_shape([(f"operand {k}", sh) for k, sh in enumerate(shapes)])


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
def refuse_pickle(bound: Any) -> None:
    """`__reduce__` of a bound call: it points into arrays of this process."""
    raise TypeError(f"a bound call ({type(bound).__name__}) points into the arrays it was "
                    "bound to in this process and cannot be pickled: pickle the compiled "
                    "expression (lazyk.compile) and bind it where it runs")


class BoundKernel:
    """A ckernel: kernel data (prefix, shape, strides) plus the operands' data pointers.

    `ck()` executes and returns `out`; `ck.address` is the `ckernel_prefix *`; `ck.dst` /
    `ck.src_address` are the pointers the single request takes. Thread-safe: the kernel
    data is only read.
    """

    out: Any = None  # what a call returns: the `out` given to bind() (kept by bind only)
    # run before each call (lazyk.compile's bind: the checks a kernel cannot make, e.g. an
    # integer power's negative exponents); a C caller of `address` runs the kernel alone
    before: Any = None
    __reduce__ = refuse_pickle

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
        check_params(compiled.spec, params)
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

    def __repr__(self) -> str:
        return f"<lazyk bound kernel, shape {tuple(self.layout.shape)}, ckernel at " \
            f"{self.address:#x}>"

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
        if compiled.nout != 1 or layout.ndim == 0 or self._empty:
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

    def __call__(self) -> Any:
        """Execute through the function pointer in the prefix (GIL released by ctypes);
        returns the `out` given to bind()."""
        if self.builder.closed:
            # its kernel data is destroyed and its code may be freed: running it would crash
            raise BindError("bound kernel is closed; bind again")
        if self.before is not None:
            self.before()
        if self._task is not None:
            self._task()
        elif not self._empty:
            self.compiled.single(self.dst, self.src_address, self.address)
        elif self.compiled.spec.reduce is not None and self._keep is not None:
            self._fold_nothing()
        return self.out

    def _fold_nothing(self) -> None:
        """A reduction over an empty iteration space: outputs hold the identity (NumPy's rule;
        min/max have none and raise). The kernel itself never runs on empty layouts."""
        op = self.compiled.spec.reduce
        if ops.get(op).no_empty_fold:
            raise ValueError(f"zero-size array to reduction operation {op} which has no "
                             "identity")
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
    check_params(spec, params)
    layout = plan(spec, out, inputs)
    ck = BoundKernel(compile(spec, layout_class(spec, layout), target), layout, out, inputs,
                     params)
    ck.out = out
    return ck


def execute(spec: KernelSpec, out: Any, *inputs: Any, params: bytes = b"") -> Any:
    """Bind and run once; returns `out`."""
    with bind(spec, out, *inputs, params=params) as ck:
        ck()
    return out


# ---------------------------------------------------------------- the runtime's runner
# Bound kernels for threaded sizes per (spec, layout, params); each entry holds its kernel.
prepared_binds = LRU(256, "prepared binds")


def run_layout(spec: KernelSpec, layout: Any, out: np.ndarray, arrays: list,
               params: bytes = b"") -> None:
    """Run `spec` on views already broadcast to the iteration space, with `layout` from dims.

    The kernel data depends only on (spec, layout, params), so it is built once and reused.
    """
    key = (spec, layout, params)
    ck = prepared_binds.get(key)
    if ck is None:
        ck = BoundKernel(compile(spec, layout_class(spec, layout)), layout, out, tuple(arrays),
                         params)
        ck()
        ck._keep = None  # cached kernel data must not keep this call's arrays alive
        prepared_binds.put(key, ck)
        return
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


def prepared(spec: KernelSpec, layout: Any, params: bytes = b"") -> BoundKernel | None:
    """The bound kernel `run_layout` keeps for (spec, layout, params), or None."""
    return prepared_binds.get((spec, layout, params))


def count_kernel(hit: bool, jit: Any = None) -> None:
    """Count a kernel another cache holds (the loop-nest kernels of ragged expressions) in
    `lazyk.stats()`: a cache hit, or a compile (a disk load where its code came from disk)."""
    with _stats_lock:
        if hit:
            stats["hits"] += 1
        else:
            stats["compiles"] += 1
            stats["disk_loads"] += bool(getattr(jit, "from_disk", False))


def public_stats() -> dict:
    """`lazyk.stats()`: counters of this process's kernel caches (fused kernels and the
    loop-nest kernels of ragged / missing-value expressions).

    `compiles`: kernels LLVM compiled; `disk_loads`: kernels whose machine code came from the
    on-disk cache instead; `cache_hits`: lookups answered by the in-memory cache (no LLVM, no
    disk). A Dask worker that ran an expression over many blocks shows `compiles +
    disk_loads == 1` per kernel.
    """
    with _stats_lock:
        s = dict(stats)
    return {"compiles": s["compiles"] - s["disk_loads"], "cache_hits": s["hits"],
            "disk_loads": s["disk_loads"]}

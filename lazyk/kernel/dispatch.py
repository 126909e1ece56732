"""Repeated calls of one kernel: a native guard per geometry (`Dispatcher`) and reusable
threaded records (`ThreadedRun`).

A call whose arrays have the geometry of the last bind (type, dtype, flags, shape, strides,
no partial overlap) is one foreign call into a guard that checks all that and runs the
kernel; threaded sizes re-point a record of the pool task instead of binding again.
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from lazyk.arrays.outputs import empty as empty_out
from lazyk.backend import threads as _threads  # the native thread pool
from lazyk.backend.cpu import JITModule
from lazyk.backend.objcache import source_digest
from lazyk.frontend.spec import KernelSpec
from lazyk.kernel import abi
from lazyk.kernel.flat import (
    BoundKernel,
    bind,
    check_params,
    data_pointer,
    plan,
    prepared,
    run_layout,
)


def _layout_ok() -> bool:
    # The guard reads PyArrayObject fields directly; check the offsets on a probe array.
    a = np.ones((3, 4))[:, 1:]
    rd = lambda off, t=ctypes.c_int64: t.from_address(id(a) + off).value  # noqa: E731
    try:
        return (rd(16) == a.ctypes.data and rd(8) == id(np.ndarray) and rd(24, ctypes.c_int32) == 2
                and ctypes.c_int64.from_address(rd(32) + 8).value == 3
                and ctypes.c_int64.from_address(rd(40)).value == 32 and rd(56) == id(a.dtype)
                and rd(64, ctypes.c_int32) & abi.NPY_ALIGNED)
    except Exception:  # pragma: no cover
        return False


GUARD_OK = _layout_ok()
_guards: dict = {}


def guard_fn(nops: int, nogil: bool = False) -> Any:
    """The native guard entry for `nops` arrays; None above `abi.GUARD_MAXOPS`.

    NOTE: the PYFUNCTYPE entry keeps the GIL: 1.0 us against 2.2 us per call for the CFUNCTYPE
    one (`nogil`), which mid-size kernels use so other Python threads run meanwhile. The
    caller's references keep the arrays (and their buffers) alive while the GIL is released.
    """
    f = _guards.get(nops)
    if f is None:
        if nops < 1:
            return None
        jit = _guards.get("jit")
        if jit is None:
            names = tuple(abi.guard_name(n) for n in range(1, abi.GUARD_MAXOPS + 1))
            # keyed by abi.py's source: a disk-cache hit skips IR generation (~14 ms)
            key = f"guards:{abi.GUARD_MAXOPS}|{source_digest('lazyk.kernel.abi')}"
            jit = _guards.setdefault("jit", JITModule(abi.guard_ir, names + (abi.GUARD_ANY,),
                                                      key_text=key))
        if nops > abi.GUARD_MAXOPS:  # (the entry over an array of them, built per call)
            args = (ctypes.c_int64, ctypes.c_void_p, ctypes.POINTER(ctypes.py_object),
                    ctypes.c_int64)
            address = jit.addresses[abi.GUARD_ANY]
            f = _guards[nops] = (_over_array(ctypes.PYFUNCTYPE(*args)(address), nops),
                                 _over_array(ctypes.CFUNCTYPE(*args)(address), nops))
        else:
            address = jit.addresses[abi.guard_name(nops)]
            args = (ctypes.c_int64, ctypes.c_void_p, *[ctypes.py_object] * nops)
            f = _guards[nops] = (ctypes.PYFUNCTYPE(*args)(address),
                                 ctypes.CFUNCTYPE(*args)(address))
    return f[1] if nogil else f[0]


def _over_array(entry: Any, nops: int) -> Any:
    """`guard(g, out, *inputs)` for more operands than an entry point of their own takes:
    the arrays passed as one array of object pointers (it holds them while the call runs)."""
    objects = ctypes.py_object * nops

    def guard(g: int, *arrays: Any) -> int:
        return entry(g, objects(*arrays), nops)
    return guard


class Dispatcher:
    """`d(out, *inputs)` runs `spec`: one native call when the arrays' geometry matches the last
    bind (checked natively: type, dtype, flags, shape, strides, overlap), else a full bind.

    Threaded sizes get a guard too: it runs a `ThreadedRun` record on the pool, as a
    compiled call's guard does.
    """

    def __init__(self, spec: KernelSpec, params: bytes = b""):
        self.spec = spec
        self.params = check_params(spec, params)
        self._g = None
        self._gp = None  # the guard of the last `call_with` bind (kernel data of other values)
        self._nin = len(spec.inputs)  # the guard entry takes exactly this many
        # NOTE: the guard entries are compiled at the second bind, not the first: a kernel
        # run once (a step of a larger evaluation) never pays their ~50 ms cold compile
        self._fn = None
        self._binds = 0 if GUARD_OK and len(spec.outputs) == 1 else -1
        self._folds: dict = {}  # (out shape, the inputs' geometry) -> layout (`fold`)

    def __call__(self, out: Any, *inputs: Any) -> Any:
        """Execute into `out`; returns `out`."""
        g = self._g
        if g is not None and len(inputs) == self._nin and self._fn(g[0], out, *inputs) == 0:
            return out
        return self._miss(out, inputs)

    def fold(self, out: np.ndarray, *inputs: np.ndarray) -> np.ndarray:
        """A reduction over every axis at threaded sizes into a new `out`: the layout
        planned (checked) once per geometry of aligned arrays, then the kernel stage's
        per-thread partials (`run_layout`: no record folds them, so no guard runs it)."""
        key = (out.shape, *[(a.shape, a.strides, a.dtype) for a in inputs])
        layout = self._folds.get(key)
        if layout is None:
            if len(self._folds) > 64:
                self._folds.clear()
            layout = self._folds[key] = plan(self.spec, out, inputs)
        run_layout(self.spec, layout, out, list(inputs), self.params)
        return out

    def fresh(self, inputs: Any) -> Any:
        """A new output written from `inputs` by one native call when they have the last
        bind's geometry (its output's shape and dtype), else None (nothing run; also before
        the second bind, which makes the guard)."""
        g = self._g
        if g is None or len(inputs) != self._nin:
            return None
        run = g[4]
        if run is None:
            out = np.empty(g[3], g[2][0])  # (a fresh array: C order, aligned, no overlap)
        elif run.stale():
            # NOTE: checked before allocating: a second large allocation per call, one of
            # them dropped, made glibc fault in fresh pages on every call.
            return None
        else:  # threaded sizes: the compiled call's allocator (large blocks are reused)
            out = empty_out(g[3], g[2][0])
        return out if self._fn(g[0], out, *inputs) == 0 else None

    @property
    def threaded(self) -> ThreadedRun | None:
        """The pool record the guard runs for the last bind's geometry (threaded sizes), or
        None (no guard, or a single-threaded one)."""
        g = self._g
        return None if g is None else g[4]

    def call_with(self, params: bytes, out: Any, *inputs: Any) -> Any:
        """Execute with other parameter values (`pack_params` bytes); returns `out`.

        The guard and kernel data of the last bind are copied with `params` written in:
        the shared ones are never written, so concurrent calls stay safe.
        """
        g = self._gp or self._g
        # (a record guard's kernel data is its record's: the bind path writes other values)
        if g is not None and g[4] is None and len(inputs) == self._nin:
            buf, ck = g[0], g[1]
            off = ck.compiled.params_offset
            kd = ctypes.create_string_buffer(
                ctypes.string_at(ck.address, off) + check_params(self.spec, params))
            gb = type(buf).from_buffer_copy(buf)
            gb[1] = ctypes.addressof(kd)
            if self._fn(gb, out, *inputs) == 0:
                return out
        return self._miss(out, inputs, params)

    def _miss(self, out: Any, inputs: tuple, params: bytes | None = None) -> Any:
        ck = bind(self.spec, out, *inputs, params=self.params if params is None else params)
        ck()
        arrays = (out,) + inputs
        if self._fn is None and self._binds >= 0:
            self._binds += 1
            if self._binds >= 2:
                self._fn = guard_fn(1 + self._nin)
                self._binds = 0 if self._fn is not None else -1
        if (self._fn is None or ck._empty
                or any(type(a) is not np.ndarray or a.ndim > abi.GUARD_MAXND for a in arrays)):
            return out
        own = params is None or params == self.params
        run = None
        if ck._task is not None:
            # NOTE: threaded sizes need the guard most: a bind there cost ~25 us of Python,
            # and ~120 us after a kernel that streamed more than the last-level cache (every
            # object the bind path touches then misses), against ~1 us for the guard.
            run = record(ck) if own else None
            if run is None:
                return out
            buf = abi.make_guard(run._native.record_go_address, run.address, run.offs, arrays,
                                 self.spec.aligned, tuple(range(len(inputs))),
                                 mode=abi.GUARD_RECORD)
        else:
            buf = abi.make_guard(ck.compiled.single_address, ck.address, ck.layout.offsets,
                                 arrays, self.spec.aligned, tuple(range(len(inputs))),
                                 may_alias=self.spec.reduce is None)
        ck._keep = ck.out = None  # the guard must not keep this call's arrays alive
        # NOTE: dtype objects are compared by identity; keep them alive with the guard
        g = (buf, ck, tuple(a.dtype for a in arrays), out.shape, run)
        # NOTE: a guard over kernel data of other parameter values serves `call_with` only
        # (it copies the kernel data): `d(out, ...)` then ran with the last call's values.
        if own:
            self._g = g
        else:
            self._gp = g
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
        self.parts = parts = min(_threads.parts_for(count, min_chunk), pool.nthreads)
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
    ck = prepared(spec, layout, params)
    return None if ck is None else record(ck)


def record(ck: BoundKernel) -> ThreadedRun | None:
    """A reusable threaded record of bound kernel `ck` (it keeps `ck` alive), or None where
    none fits: not threaded, a reduction, several outputs, an empty or 0-d layout, or a
    `threads(n)` block open."""
    if (ck._task is None or ck.compiled.nout != 1
            or ck.compiled.spec.reduce is not None or ck._empty or ck.layout.ndim == 0
            or _threads.local_blocks()):  # a record's parts ignore per-thread counts
        return None
    run = ThreadedRun(ck, _threads.pool())
    # a block opened while planning: its epoch bump may precede the one the record read
    return None if _threads.local_blocks() else run

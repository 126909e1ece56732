"""The one-kernel path of a compiled expression (the common `k(a, b, out=c)`).

Each geometry (shapes, strides) is prepared once; a repeated call with a recent call's geometry
gets a native guard that checks its arrays and runs the kernel in one foreign call.
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from lazyk.arrays.outputs import fortran_result
from lazyk.kernel import abi
from lazyk.kernel.dispatch import GUARD_OK, guard_fn, threaded_run
from lazyk.kernel.flat import data_pointer, run_layout
from lazyk.runtime.call_inputs import TEXT_ELEMENTS
from lazyk.runtime.launch import (
    THREAD_MIN,
    broadcast_strides,
    empty_out,
    needs_temporary,
    out_strides,
    prepare,
)


def fresh_out(shape: tuple, dtype: np.dtype, fortran: bool, reuse: bool = False) -> np.ndarray:
    """A new result array, in Fortran order where `fortran`; `reuse`: a large one takes an
    idle block of earlier outputs (pre-faulted pages, `empty_out`)."""
    if reuse:
        return empty_out(shape[::-1], dtype).T if fortran else empty_out(shape, dtype)
    return np.empty(shape, dtype, order="F" if fortran else "C")


def fortran(a: np.ndarray) -> bool:
    """Whether `a` is a Fortran-ordered array of 2 or more dims (not also C-ordered)."""
    return a.ndim > 1 and a.flags.f_contiguous and not a.flags.c_contiguous


# Up to this size the guard runs the kernel with the GIL held (the cheapest foreign call);
# larger single-threaded kernels take the guard entry that releases it.
_GUARD_MAX = 1 << 13


class FastCalls:
    """CompiledExpr's one-kernel path: geometry cached per input shapes and strides, native
    guards for repeated calls."""

    def _setup_fast(self) -> None:
        """Precompute the one-kernel elementwise fast path (the common `k(a, b, out=c)`)."""
        self._fast = self._red = None
        # Native guards: (guard address, guard fn, keep-alive, geometry key), one
        # for calls with `out=` and one for fresh outputs (+ shape, dtype to allocate).
        self._g_out = self._g_new = None
        self._t_out = self._t_new = None  # the same for threaded sizes (+ the pool record)
        self._gfn = None
        self._nin = len(self._slots)
        steps = self.program.steps
        if len(steps) != 1 or steps[0].mean:
            return
        if any(t[1] in TEXT_ELEMENTS for t in self._types):
            return  # string inputs: the general path makes their element views (_as_input)
        step = steps[0]
        # A reduction (e.g. `sum(a*b)`) takes this path too: its output has stride 0 along the
        # reduced axes and the kernel folds into it (a mean's division stays on the general path).
        self._red = None if step.axes is None else (step.axes, step.keepdims)
        if not all(isinstance(r, str) for r in step.inputs):
            return
        where = {name: k for k, name in enumerate(self._slots)}
        self._consts = step.consts  # the constants' values, written into kernel data
        self._fast = (tuple(where[r] for r in step.inputs), step.spec, step.dtype,
                      tuple(t[1] for t in self._types), tuple(len(t[0]) for t in self._types))
        self._geom: dict = {}
        self._threaded: dict = {}  # geometry key -> dispatch.ThreadedRun
        self._valid_shapes: dict = {}  # input shapes checked against types -> broadcast shape
        self._src_type = ctypes.c_void_p * max(len(step.inputs), 1)
        if (GUARD_OK and sorted(self._fast[0]) == list(range(len(self._slots)))
                and len(step.spec.outputs) == 1):
            self._gfn = guard_fn(1 + len(self._slots))

    def _install_guard(self, key: tuple, entry: tuple, out: np.ndarray, inputs: tuple,
                       fresh: bool) -> None:
        """Remember this geometry in a native guard, so the next call is one foreign call."""
        old = self._g_new if fresh else self._g_out
        if old is not None and old[3] == key:
            return  # the guard refused these arrays (e.g. overlapping extents): keep it
        ops = (out, *inputs)
        if any(a.ndim > abi.GUARD_MAXND for a in ops):
            return
        _, _, compiled, _, kd_address, size, offs = entry
        buf = abi.make_guard(compiled.single_address, kd_address, offs, ops,
                             self._fast[1].aligned, self._fast[0], may_alias=self._red is None)
        # Mid-size kernels release the GIL while they run (a slower foreign call, ~2 us).
        fn = self._gfn if size <= _GUARD_MAX else guard_fn(len(ops), nogil=True)
        # NOTE: dtype objects are compared by identity; the guard keeps them alive.
        g = (ctypes.addressof(buf), fn, (buf, entry, tuple(a.dtype for a in ops)), key)
        if fresh:
            self._g_new = g + (out.shape, out.dtype, fortran(out))
        else:
            self._g_out = g

    def _install_tguard(self, key: tuple, tr: Any, out: np.ndarray, inputs: tuple,
                        fresh: bool) -> None:
        """A native guard for threaded sizes: it checks the geometry (as for small sizes) and
        runs the cached pool record `tr` on the new data, all in one foreign call."""
        old = self._t_new if fresh else self._t_out
        if old is not None and old[3] == key and old[4] is tr:
            return
        ops = (out, *inputs)
        if any(a.ndim > abi.GUARD_MAXND for a in ops):
            return
        buf = abi.make_guard(tr._native.record_go_address, tr.address, tr.offs, ops,
                             self._fast[1].aligned, self._fast[0], mode=abi.GUARD_RECORD)
        # NOTE: dtype objects are compared by identity; the guard keeps them alive.
        g = (ctypes.addressof(buf), self._gfn, (buf, tuple(a.dtype for a in ops)), key, tr)
        if fresh:
            self._t_new = g + (out.shape, out.dtype, fortran(out))
        else:
            self._t_out = g

    def _call_fast(self, inputs: tuple, out: Any):
        """One kernel, native aligned inputs (broadcasting allowed): dict lookups and one C call."""
        order, spec, dtype, dtypes, ndims = self._fast
        for a, dt, nd in zip(inputs, dtypes, ndims):
            if type(a) is not np.ndarray or a.dtype != dt or a.ndim != nd \
                    or not a.flags.aligned:
                return None
        shapes = tuple(a.shape for a in inputs)
        shape = self._valid_shapes.get(shapes)
        if shape is None:
            # New input shapes: checked against the signature and broadcast once, then a
            # dict lookup (broadcasting operands such as `a2*r + k` stay on this path).
            self._check_shapes(list(shapes))
            try:
                shape = np.broadcast_shapes(*shapes)
            except (ValueError, RuntimeError):  # (RuntimeError: NumPy's 32 dims at most)
                return None  # the general path raises the ShapeError naming the operands
            if len(self._valid_shapes) > 64:
                self._valid_shapes.clear()
            self._valid_shapes[shapes] = shape
        fresh = out is None
        red = self._red
        oshape = shape
        if red is not None:
            axes, keepdims = red
            if any(shape[d] == 0 for d in axes):
                return None  # the general path writes the identity or raises as NumPy does
            oshape = tuple((1 if d in axes else n) for d, n in enumerate(shape)
                           if keepdims or d not in axes)
        if not fresh and (type(out) is not np.ndarray or out.dtype != dtype
                          or out.shape != oshape or not out.flags.writeable
                          or not out.flags.aligned
                          or needs_temporary(out, list(inputs), red is not None)):
            return None
        arrays = [inputs[k] for k in order]
        # A fresh output is C-contiguous, so its strides need not be part of the key.
        key = (shapes, None if fresh else out.strides, tuple(a.strides for a in arrays))
        entry = self._geom.get(key)
        if entry is None:
            if fresh:
                out = fresh_out(oshape, dtype, red is None and fortran_result("K", dict(
                    enumerate(arrays))))
            if len(self._geom) > 64:
                self._g_out = self._g_new = None  # guards point into these entries
                self._t_out = self._t_new = None
                self._geom.clear()
                self._threaded.clear()
            if red is None:
                ost, reduced = broadcast_strides(shape, out.shape, out.strides), (False,) * len(shape)
            else:
                ost = out_strides(out, shape, *red)
                reduced = tuple(d in red[0] for d in range(len(shape)))
            st = (ost,) + tuple(broadcast_strides(shape, a.shape, a.strides) for a in arrays)
            entry = prepare(spec, shape, st, reduced, self._consts)
            entry = self._geom.setdefault(key, entry)
        _, layout, compiled, kd, kd_address, size, offs = entry
        if out is None:  # (Fortran order over Fortran inputs, as evaluate's order 'K')
            out = fresh_out(oshape, dtype, red is None and fortran_result("K", dict(
                enumerate(arrays))), size >= THREAD_MIN and red is None)
        if size == 0:
            return out
        if size >= THREAD_MIN and red is not None:
            # a reduction's threaded sizes: the kernel stage (per-thread partials, combined)
            run_layout(spec, layout, out, arrays, self._consts)
            return out
        if size >= THREAD_MIN:
            # Repeated threaded call: a record per geometry with everything but the
            # data pointers filled in; one foreign call into the pool.
            tr = self._threaded.get(key)
            if tr is not None and tr(out, arrays):
                if self._gfn is not None:
                    self._install_tguard(key, tr, out, inputs, fresh)
                return out
            run_layout(spec, layout, out, arrays, self._consts)
            if tr is None or tr.stale():
                tr = threaded_run(spec, layout, self._consts)
                if tr is not None:
                    if len(self._threaded) > 64:
                        self._threaded.clear()
                    self._threaded[key] = tr
            return out
        src = self._src_type(
            *[data_pointer(a) + offs[k + 1] for k, a in enumerate(arrays)])
        compiled.single(data_pointer(out) + offs[0], ctypes.addressof(src), kd_address)
        if self._gfn is not None:  # (a reduction's guard refuses any overlap with out)
            self._install_guard(key, entry, out, inputs, fresh)
        return out

"""Segmented kernels: one fused elementwise body + per-row reduction (codegen.segmented),
compiled once per structure (never per size), run over rows in place, split over threads by
the number of elements (`lazyk.set_num_threads`)."""
from __future__ import annotations

import ctypes
import os
import sys
import threading

import numpy as np

from lazyk.backend.cpu import JITModule
from lazyk.backend.threads import get_num_threads, run_in_threads
from lazyk.codegen.segmented import generate_segmented, seg_params_offset
from lazyk.spec import check_params

# Compiled segmented kernels, oldest dropped first; code is freed with its last user.
_seg_cache: dict = {}
_SEG_CACHE_SIZE = 128
_seg_lock = threading.Lock()
os.register_at_fork(after_in_child=_seg_lock._at_fork_reinit)  # see graph.py
seg_stats = {"compiles": 0, "hits": 0, "runs": 0}
_SEG_NAME = "lazyk_seg"


class SegmentedKernel:
    """JIT code of one fused elementwise + per-row reduction (codegen.segmented)."""

    def __init__(self, spec, masked: tuple, skipna: bool, mean: bool, rows: bool = False,
                 order: str = "row"):

        self.spec, self.masked, self.skipna, self.mean = spec, masked, skipna, mean
        self.rows, self.order = rows, order
        names = (f"{_SEG_NAME}_single", f"{_SEG_NAME}_destroy")
        self.jit = JITModule(lambda: str(generate_segmented(
            spec, masked, skipna, mean, _SEG_NAME, rows=rows, order=order)), names)
        self.single_address = self.jit.addresses[names[0]]
        self.destroy_address = self.jit.addresses[names[1]]
        self.fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.c_void_p)(self.single_address)

    @property
    def ir(self) -> str:
        return self.jit.source_ir

    def _kd(self, head: list, params: bytes) -> ctypes.Array:
        """This call's kernel data: `head` words, then the parameter slots (codegen.segmented
        `seg_params_offset`)."""

        check_params(self.spec, params)
        nwords = seg_params_offset(len(self.spec.inputs)) // 8
        kd = (ctypes.c_int64 * (nwords + len(params) // 8))(*head)
        ctypes.memmove(ctypes.addressof(kd) + 8 * nwords, params, len(params))
        return kd

    def __del__(self) -> None:
        # Nothing runs this code without a reference to this object: free it with the last one.
        jit = getattr(self, "jit", None)
        try:
            if jit is not None and not sys.is_finalizing():  # (the process frees it anyway)
                jit.close()
        except Exception:  # pragma: no cover  (interpreter shutdown)
            pass

    def run_rows(self, lengths: np.ndarray, rowptrs: list, rowstrides: list,
                 mask_offsets: list, out: np.ndarray, valid: np.ndarray, ncols: int = 0,
                 params: bytes = b"") -> None:
        """Run the in-place row layout (`rows=True`): per input, each result row's element-0
        address and byte stride (from the arrays' arrmeta via the shape step). Order "col"
        reads `ncols` elements of every row (the caller checked every row has them)."""
        nrows = len(lengths)
        nres = {"row": nrows, "col": ncols, "all": 1}[self.order]
        if self.order == "col" and np.any((lengths != ncols) & (lengths != 1)):
            raise ValueError(f"every row must have {ncols} elements or 1")
        if not self.rows:
            raise ValueError("this segmented kernel reads lined-up flat operands")
        arrays = [lengths]
        for a, st in zip(rowptrs, rowstrides):
            arrays += [a, st]
        if any(a.dtype != np.int64 or a.shape != (nrows,) or not a.flags.c_contiguous
               for a in arrays) or len(rowptrs) != len(self.spec.inputs) or \
                len(rowstrides) != len(rowptrs) or len(mask_offsets) != len(rowptrs):
            raise ValueError("row layout: one contiguous int64 entry per row and input")
        if out.shape != (nres,) or valid.shape != (nres,) or valid.dtype != np.uint8 \
                or out.dtype != np.dtype(self.spec.outputs[0][1]) or \
                not (out.flags.c_contiguous and valid.flags.c_contiguous):
            raise ValueError("segmented outputs must be contiguous, one per result")
        if nres == 0:
            return
        bounds = _row_parts(lengths) if self.order == "row" else [0, nrows]
        calls = []
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            # Each part has its own kernel data and pointer tables (no shared scratch);
            # "row" results are per row, so rows lo..hi write out[lo:hi] only.
            kd = self._kd([self.single_address, self.destroy_address, 0, hi - lo, ncols,
                           *[m or 0 for m in mask_offsets]], params)
            src = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data + 8 * lo for a in arrays])
            at = lo if self.order == "row" else 0
            dst = (ctypes.c_void_p * 2)(out.ctypes.data + out.itemsize * at,
                                        valid.ctypes.data + at)
            calls.append((dst, src, kd, (arrays, out, valid)))
        run_in_threads(self._call, calls)  # ctypes releases the GIL: parts on own cores
        seg_stats["runs"] += 1

    def _call(self, dst, src, kd, keep) -> None:
        # `keep`: the arrays a part reads and writes stay alive while it runs (even if the
        # caller is interrupted while waiting)
        self.fn(ctypes.addressof(dst), ctypes.addressof(src), ctypes.addressof(kd))

    def __call__(self, offsets: np.ndarray, inputs: list, masks: list, out: np.ndarray,
                 valid: np.ndarray, params: bytes = b"") -> None:
        """Bind (checks every size, so no access leaves the arrays) and run once."""
        if self.rows:
            raise ValueError("this segmented kernel reads rows in place: use run_rows")
        nrows = len(offsets) - 1
        total = int(offsets[-1]) if nrows >= 0 else 0
        if (offsets.dtype != np.int64 or not offsets.flags.c_contiguous or nrows < 0
                or offsets[0] != 0 or (nrows and np.any(np.diff(offsets) < 0))):
            raise ValueError("offsets must be non-decreasing int64 starting at 0")
        if out.shape != (nrows,) or valid.shape != (nrows,) or valid.dtype != np.uint8 \
                or out.dtype != np.dtype(self.spec.outputs[0][1]) or \
                not (out.flags.c_contiguous and valid.flags.c_contiguous):
            raise ValueError("segmented outputs must be contiguous, one per row")
        for a, dt in zip(inputs, self.spec.inputs):
            if a.dtype != dt or a.shape != (total,) or not a.flags.c_contiguous:
                raise ValueError(f"segmented input {a.dtype}{a.shape} does not match "
                                 f"{np.dtype(dt)} ({total},)")
        for m in masks:
            if m.dtype != np.uint8 or m.shape != (total,) or not m.flags.c_contiguous:
                raise ValueError("segmented masks must be contiguous uint8, one per element")
        if len(masks) != sum(self.masked) or len(inputs) != len(self.spec.inputs):
            raise ValueError("wrong number of segmented operands")
        if nrows == 0:
            return
        kd = self._kd([self.single_address, self.destroy_address, 0, nrows], params)
        arrays = [offsets, *inputs, *masks]
        src = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
        dst = (ctypes.c_void_p * 2)(out.ctypes.data, valid.ctypes.data)
        # kd/src/dst are this call's own: concurrent calls share only the code
        self.fn(ctypes.addressof(dst), ctypes.addressof(src), ctypes.addressof(kd))
        seg_stats["runs"] += 1


# Below this many row elements per extra thread, starting a thread costs more than it saves.
_MIN_PART_VALUES = 1 << 18


def _row_parts(lengths: np.ndarray) -> list:
    """Row bounds splitting the rows into parts of about the same number of elements, one
    per thread (`lazyk.set_num_threads`). The element counts come from every 16th row's
    length (cheap; a poor guess only costs balance, never a wrong result)."""
    nrows = len(lengths)
    sample = np.cumsum(lengths[::16])
    total = int(sample[-1]) * 16 if nrows else 0
    nparts = min(get_num_threads(), total // _MIN_PART_VALUES)
    if nparts <= 1:
        return [0, nrows]
    cuts = np.searchsorted(sample, sample[-1] * np.arange(1, nparts) / nparts) * 16
    return [0, *sorted({int(c) for c in cuts if 0 < c < nrows}), nrows]


def segmented_kernel(spec, masked: tuple, skipna: bool, mean: bool,
                     rows: bool = False, order: str = "row") -> SegmentedKernel:
    """The compiled segmented kernel for these keys (cached; never keyed on sizes)."""
    key = (spec, tuple(masked), bool(skipna), bool(mean), bool(rows), order)
    with _seg_lock:
        k = _seg_cache.get(key)
        if k is not None:
            seg_stats["hits"] += 1
            return k
    k = SegmentedKernel(spec, tuple(masked), bool(skipna), bool(mean), bool(rows), order)
    dropped = []
    with _seg_lock:
        other = _seg_cache.get(key)
        if other is not None:  # another thread compiled it first
            return other
        _seg_cache[key] = k
        seg_stats["compiles"] += 1
        while len(_seg_cache) > _SEG_CACHE_SIZE:  # a running call holds its own reference
            dropped.append(_seg_cache.pop(next(iter(_seg_cache))))
    del dropped  # outside the lock: the last reference to a kernel frees its code
    return k

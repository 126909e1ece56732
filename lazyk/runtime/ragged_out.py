"""`out=` for var / option results: a computed lazyk array stored into a preallocated
one of the same structure, values and validity in place (one strided copy when both
sides' rows lie back to back). With missing rows (`?var`, and `?n`: missing rows of a
fixed size) the levels are walked one at a time: each row's validity is written into
out's row mask, and the present rows' lengths must match."""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from lazyk import types as T
from lazyk.arrays import arrmeta as M
from lazyk.arrays.array import Array
from lazyk.errors import CastingError, NotSupportedError, ShapeError
from lazyk.frontend.ops import cast_values
from lazyk.runtime.rows import gather, row_view


def is_ragged_type(t) -> bool:
    """Whether a lazyk type has var dims or options (a ragged `out`)."""
    while isinstance(t, (T.FixedDim, T.VarDim)):
        if isinstance(t, T.VarDim):
            return True
        t = t.elem
    return isinstance(t, T.Option)


def store(result: Array, out: Array, casting: str) -> Array:
    """`result` written into `out`, a lazyk array of its structure: the same dims and row
    lengths (ShapeError naming the row otherwise), a dtype `casting` allows (CastingError),
    `?T` when the result has missing values; values and validity in place."""
    rt, ot = result.type, out.type
    rdims, relem, ropt = qdims_of(rt)
    odims, oelem, oopt = qdims_of(ot)
    if any(d.missing for d in rdims + odims):  # rows that may be missing: ?var, ?n
        return _store_rows(result, out, casting)
    if len(rdims) != len(odims) or any(a != b for a, b in zip(rdims, odims)):
        raise ShapeError(f"out has type {ot}, the result {rt}: out needs the result's "
                         "dimensions and row lengths")
    rdt, odt = _check_elements(rt, ot, relem, oelem, ropt, oopt, casting)
    if any(d.size is None for d in rdims[:-1]):  # var dims above the last: per level
        pair_rows(result.meta, out.meta, rdims, odims, *_start(result), *_start(out))
        out[...] = result
        return out
    rv, ov = row_view(result), row_view(out)  # fixed dims, then at most one var dim
    bad = rv.lengths != ov.lengths
    if bad.any():
        i = int(np.argmax(bad))
        row = f"row {[int(r) for r in np.unravel_index(i, rv.outer)]}" if rv.outer else \
            "the row"
        raise ShapeError(f"{row}: the result has length {int(rv.lengths[i])}, out has "
                         f"length {int(ov.lengths[i])}")
    total = int(rv.lengths.sum())
    src, dst = _dense(rv, total), _dense(ov, total)
    if src is not None and dst is not None:  # both back to back: one strided copy each
        with np.errstate(invalid="ignore"):  # missing slots hold no value: any bytes do
            np.copyto(dst[0], cast_values(src[0], dst[0].dtype.newbyteorder("=")),
                      casting="unsafe")
        if dst[1] is not None:
            np.copyto(dst[1], 1 if src[1] is None else src[1] != 0)
        return out
    flat = gather(result, ov.dtype)  # values row after row (missing ones 0), and the mask
    mask = flat.mask
    _put_elements(ov.rowptr, ov.lengths, ov.stride, ov.dtype, flat.values)
    if ov.mask_offset is not None:
        valid = np.ones(total, np.uint8) if mask is None else mask.astype(np.uint8)
        _put_elements(ov.rowptr + ov.mask_offset, ov.lengths, ov.stride, np.dtype(np.uint8),
                      valid)
    return out


@dataclass(frozen=True)
class Dim:
    """One dim of an array type as out= pairs it: `size` (None for var rows) and whether
    its rows may be missing (`?var`, `?n`)."""

    size: int | None
    missing: bool = False

    @property
    def fixed(self) -> bool:
        """A fixed dim whose rows are never missing (`n`)."""
        return self.size is not None and not self.missing

    def takes(self, result: Dim) -> bool:
        """Whether out's dim takes the result's dim (a missing-rows dim takes plain rows)."""
        return self.size == result.size and (self.missing or not result.missing)


def qdims_of(t) -> tuple[list, T.Type, bool]:
    """(its `Dim`s; element type; whether `?T`) of an array type."""
    dims = []
    while isinstance(t, (T.FixedDim, T.VarDim)) or (
            isinstance(t, T.Option) and isinstance(t.elem, (T.VarDim, T.FixedDim))):
        missing = isinstance(t, T.Option)
        t = t.elem if missing else t
        dims.append(Dim(t.size if isinstance(t, T.FixedDim) else None, missing))
        t = t.elem
    option = isinstance(t, T.Option)
    return dims, t.elem if option else t, option


def _store_rows(result: Array, out: Array, casting: str) -> Array:
    """`store` with missing rows (`?var`, `?n`): out has the result's dims, `?var` / `?n`
    wherever the result has one (a plain var / fixed result row is present); every
    present result row has out's row length there. Checked in full before the first byte
    is written."""
    rt, ot = result.type, out.type
    rdims, relem, ropt = qdims_of(rt)
    odims, oelem, oopt = qdims_of(ot)
    if len(rdims) != len(odims) or any(not b.takes(a) for a, b in zip(rdims, odims)):
        raise ShapeError(f"out has type {ot}, the result {rt}: out needs the result's "
                         "dimensions (?var where the result has missing rows, ?n where "
                         "it has missing rows of a fixed size n) and row lengths")
    rdt, odt = _check_elements(rt, ot, relem, oelem, ropt, oopt, casting)
    rm, om = result.meta, out.meta
    (rbuf, roffs), (obuf, ooffs) = _start(result), _start(out)
    writes = []  # (buffer, byte offsets, bytes): nothing is written until all is checked
    rbuf, roffs, obuf, ooffs, ra, oa, rows = pair_rows(rm, om, rdims, odims, rbuf, roffs,
                                                       obuf, ooffs)
    writes += [(buf, offs, ok[:, None]) for buf, offs, ok in rows]
    n = len(roffs)
    values = M.gather(rbuf, roffs, rdt.itemsize).view(rdt).reshape(n)
    present = M.gather(rbuf, roffs + rm[ra], 1).reshape(n) != 0 if ropt else None
    with np.errstate(invalid="ignore"):  # missing slots hold no value: any bytes do
        raw = cast_values(values, odt.newbyteorder("=")).astype(odt)
    writes.append((obuf, ooffs, raw.view(np.uint8).reshape(n, odt.itemsize)))
    if oopt:
        mask = np.ones(n, np.uint8) if present is None else present.astype(np.uint8)
        writes.append((obuf, ooffs + om[oa], mask[:, None]))
    for buf, offs, data in writes:
        _put(buf, offs, data)
    return out


def _start(a: Array) -> tuple:
    """(bytes of its memory block, byte offset of its element 0 there) of an array with var
    dims (such arrays live in MemoryBlocks)."""
    return a.owner.buffer, np.array([a.ptr - a.owner.address])


def pair_rows(rm, om, rdims, odims, rbuf, roffs, obuf, ooffs) -> tuple:
    """Walk a result's and out's dims together, from the byte offsets of their first
    elements (`roffs`, `ooffs`) in their memory (`rbuf`, `obuf`) to those of their values,
    checking each var row's length against the result's (ShapeError naming the row). A
    missing row of the result leaves out nothing to write under it. Returns (rbuf, roffs,
    obuf, ooffs, next arrmeta index of each, [(out buffer, offsets, present bytes) of
    out's `?var` row masks])."""
    ra = oa = 0
    rows = []
    for level, (rd, od) in enumerate(zip(rdims, odims)):
        ok = np.ones(len(roffs), bool)
        if rd.missing:  # its rows' present bytes, before the dim's own words
            ok = M.gather(rbuf, roffs + rm[ra], 1).reshape(-1) != 0
            ra += 1
        if od.missing:
            rows.append((obuf, ooffs + om[oa], ok.astype(np.uint8)))
            oa += 1
        if rd.size is not None:
            if rd.missing:  # a missing `?n` row: nothing under it is written
                roffs, ooffs = roffs[ok], ooffs[ok]
            roffs = (roffs[:, None] + np.arange(rm[ra]) * rm[ra + 1]).reshape(-1)
            ooffs = (ooffs[:, None] + np.arange(om[oa]) * om[oa + 1]).reshape(-1)
            ra, oa = ra + 2, oa + 2
            continue
        roffs, ooffs = roffs[ok], ooffs[ok]  # a missing row: nothing under it is written
        rb, rfirst, rsz, rstride = M.var_rows(rm, ra, rbuf, roffs)
        ob, ofirst, osz, ostride = M.var_rows(om, oa, obuf, ooffs)
        bad = rsz != osz
        if bad.any():
            i = int(np.argmax(bad))
            raise ShapeError(f"out: dimension {level} (var), row {int(np.flatnonzero(ok)[i])}"
                             f" (counted over the present rows above): the result has length "
                             f"{int(rsz[i])}, out has length {int(osz[i])}")
        roffs, rbuf = M.row_offsets(rfirst, rsz, rstride), rb.buffer
        ooffs, obuf = M.row_offsets(ofirst, osz, ostride), ob.buffer
        ra, oa = ra + M.VAR_META, oa + M.VAR_META
    return rbuf, roffs, obuf, ooffs, ra, oa, rows


def _put(buf: np.ndarray, offs: np.ndarray, data: np.ndarray) -> None:
    """Bytes data[i] into buf at offs[i] (bounds-checked; evenly spaced offsets, the
    common case, as one strided copy)."""
    n, k = data.shape
    if n == 0:
        return
    lo, hi = int(offs.min()), int(offs.max()) + k
    if lo < 0 or hi > len(buf):
        raise ValueError("out's arrmeta points outside its memory block")
    step = int(offs[1] - offs[0]) if n > 1 else k
    if step >= k and int(offs[0]) + step * (n - 1) == int(offs[-1]) and \
            (n < 3 or bool(np.all(np.diff(offs) == step))):
        view = np.lib.stride_tricks.as_strided(buf[int(offs[0]):], (n, k), (step, 1),
                                               writeable=True)
        view[...] = data
        return
    rel = offs - lo
    if not bool(np.any(rel % k)):  # every element k-aligned from the first: one index each
        buf[lo:hi].reshape(-1, k)[rel // k] = data
        return
    buf[offs[:, None] + np.arange(k)] = data


def _dense(v, total: int):
    """(values view, mask-byte view or None) over rows that follow each other in memory
    with elements `itemsize` apart (offsets over dense content); None otherwise."""
    isz = v.dtype.itemsize
    keep = v.lengths > 0
    ptr, ln = v.rowptr[keep], v.lengths[keep]
    if total == 0 or v.stride != isz or not bool(np.all(ptr[1:] == ptr[:-1] +
                                                       ln[:-1] * isz)):
        return None
    start = int(ptr[0])
    raw = np.ctypeslib.as_array((ctypes.c_uint8 * (total * isz)).from_address(start))
    mask = None
    if v.mask_offset is not None:
        shadow = np.ctypeslib.as_array((ctypes.c_uint8 * (total * isz)).from_address(
            start + v.mask_offset))
        mask = shadow[::isz]  # the first byte of each shadow slot
    return raw.view(v.dtype), mask


def _put_elements(rowptr: np.ndarray, lengths: np.ndarray, stride: int, dtype: np.dtype,
                  values: np.ndarray) -> None:
    """Write `values` (row after row) into the rows' elements in place (the inverse of
    `rows._elements`; the rows were checked inside their content by `row_view`)."""
    total = len(values)
    if total == 0:
        return
    isz = dtype.itemsize
    keep = lengths > 0
    ptr, ln = rowptr[keep], lengths[keep]
    raw = np.ascontiguousarray(values, dtype=dtype).view(np.uint8).reshape(total, isz)
    if stride == isz and bool(np.all(ptr[1:] == ptr[:-1] + ln[:-1] * stride)):
        # rows back to back (offsets over dense content): one contiguous copy
        dst = np.ctypeslib.as_array((ctypes.c_uint8 * (total * isz)).from_address(int(ptr[0])))
        dst[:] = raw.reshape(-1)
        return
    starts = np.cumsum(ln) - ln
    addr = np.repeat(ptr - starts * stride, ln) + np.arange(total, dtype=np.int64) * stride
    lo = int(addr.min())
    span = int(addr.max()) - lo + isz
    dst = np.ctypeslib.as_array((ctypes.c_uint8 * span).from_address(lo))
    dst[(addr - lo)[:, None] + np.arange(isz)] = raw


def _check_elements(rt, ot, relem, oelem, ropt: bool, oopt: bool, casting: str) -> tuple:
    """The result's and out's NumPy element dtypes, once out can take the result's
    elements: numeric, castable under `casting`, ?T where the result has missing values."""
    for e in (relem, oelem):
        if not isinstance(e, T.Scalar) or e.kind not in "biufc":
            raise NotSupportedError(f"out= of type {ot} for a {rt} result (numeric "
                                    "elements T or ?T)")
    rdt, odt = relem.to_numpy(), oelem.to_numpy()
    if not np.can_cast(rdt, odt, casting):
        raise CastingError(f"cannot store the {rt} result into out of type {ot} under "
                           f"casting={casting!r}")
    if ropt and not oopt:
        raise CastingError(f"cannot store the {rt} result into out of type {ot}: missing "
                           "values need an out of ?T elements")
    return rdt, odt

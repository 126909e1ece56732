"""Assignment through arrmeta with broadcasting (`a[...] = value`): var dims, options,
records and strings; a row of length 1 broadcasts."""
from __future__ import annotations

import numpy as np

from lazyk import types as T
from lazyk.arrays.arrmeta import (
    POINTER_SIZE_DTYPE,
    VAR_META,
    field_meta_positions,
    fields_of,
    gather,
    is_varlen,
    np_dtype,
    read,
    row_offsets,
    scatter,
    var_rows,
)
from lazyk.arrays.indexpath import Subset, Where
from lazyk.arrays.memory import MemoryBlock, lookup
from lazyk.arrays.views import index_type, normalize_index
from lazyk.errors import ArrayConstructionError, NotSupportedError, ShapeError


def _assign_strings(t: T.Type, meta: tuple, at: int, buf: np.ndarray, offs: np.ndarray,
                    values: list) -> None:
    """Point the string elements at `offs` to a new block holding `values`."""
    data = [v.encode("utf-8") for v in values] if t.name == "string" else list(values)
    lens = np.array(list(map(len, data)), np.int64)
    chars = MemoryBlock(int(lens.sum()))
    if len(data):
        chars.buffer[:] = np.frombuffer(b"".join(data), np.uint8)
    home = lookup(meta[at])  # readers look here, then in its keep list
    home.keep = (home.keep or []) + [chars]
    pairs = np.empty(len(offs), POINTER_SIZE_DTYPE)
    pairs["begin"] = chars.address + (np.cumsum(lens) - lens)
    pairs["size"] = lens
    scatter(buf, offs, pairs.view(np.uint8).reshape(len(offs), 16))


def _sizes(t: T.Type, meta: tuple, at: int, buf: np.ndarray, offs: np.ndarray):
    """(sizes per item, child offsets function) of the dim `t` at `offs`."""
    if isinstance(t, T.FixedDim):
        size, stride = meta[at], meta[at + 1]
        return np.full(len(offs), size, np.int64), offs, stride, buf, at + 2
    block, first, sizes, stride = var_rows(meta, at, buf, offs)
    return sizes, first, stride, block.buffer, at + VAR_META


def _dims(t: T.Type) -> int:
    n = 0
    while True:
        if isinstance(t, T.Option):
            t = t.elem
        elif isinstance(t, (T.FixedDim, T.VarDim)):
            n, t = n + 1, t.elem
        else:
            return n


def assign(dt: T.Type, dmeta: tuple, dat: int, dbuf: np.ndarray, doffs: np.ndarray,
           st: T.Type, smeta: tuple, sat: int, sbuf: np.ndarray, soffs: np.ndarray,
           where=None) -> None:
    """Copy the elements at `soffs` (type st) into those at `doffs` (type dt), broadcasting.

    Raises:
        ShapeError: a source row that is neither the destination's length nor 1 (named).
    """
    where = where if where is not None else Where()
    if isinstance(st, T.Option) and _dims(st) >= _dims(dt):  # (else it broadcasts first)
        mask = gather(sbuf, soffs + smeta[sat], 1).reshape(-1).astype(bool)
        if not isinstance(dt, T.Option) and not mask.all():
            k = int(np.flatnonzero(~mask)[0])
            raise ValueError(f"missing value at {where.name(k)} cannot be stored in '{dt}'")
        if isinstance(dt, T.Option):
            if isinstance(dt.elem, (T.FixedDim, T.VarDim)):
                _present_rows(dbuf, doffs + dmeta[dat], mask, where)
            scatter(dbuf, doffs + dmeta[dat], mask.astype(np.uint8).reshape(-1, 1))
            dt, dat = dt.elem, dat + 1
        return assign(dt, dmeta, dat, dbuf, doffs[mask], st.elem, smeta, sat + 1, sbuf,
                      soffs[mask], _subset(where, mask))
    if isinstance(dt, T.Option) and isinstance(dt.elem, (T.FixedDim, T.VarDim)):
        if _dims(dt) > _dims(st):  # a value for every element: a missing row has none
            keep = gather(dbuf, doffs + dmeta[dat], 1).reshape(-1) != 0
            return assign(dt.elem, dmeta, dat + 1, dbuf, doffs[keep], st, smeta, sat, sbuf,
                          soffs[keep], _subset(where, keep))
        _present_rows(dbuf, doffs + dmeta[dat], np.ones(len(doffs), bool), where)
        return assign(dt.elem, dmeta, dat + 1, dbuf, doffs, st, smeta, sat, sbuf, soffs, where)
    if isinstance(dt, T.Option):
        scatter(dbuf, doffs + dmeta[dat], np.ones((len(doffs), 1), np.uint8))
        return assign(dt.elem, dmeta, dat + 1, dbuf, doffs, st, smeta, sat, sbuf, soffs, where)
    dn, sn = _dims(dt), _dims(st)
    if dn > sn:  # the source broadcasts over this destination dim
        sizes, starts, stride, buf, at = _sizes(dt, dmeta, dat, dbuf, doffs)
        child = row_offsets(starts, sizes, stride)
        return assign(dt.elem, dmeta, at, buf, child, st, smeta, sat, sbuf,
                      np.repeat(soffs, sizes), where.rows(np.cumsum(sizes) - sizes))
    if sn > dn:
        raise ShapeError(f"cannot assign a value of type '{st}' to '{dt}': more dimensions")
    if dn:
        dsz, dstart, dstride, dbuf2, dat2 = _sizes(dt, dmeta, dat, dbuf, doffs)
        ssz, sstart, sstride, sbuf2, sat2 = _sizes(st, smeta, sat, sbuf, soffs)
        bad = np.flatnonzero((ssz != dsz) & (ssz != 1))
        if len(bad):
            k = int(bad[0])
            row = where.name(k).strip("[]") or "0"
            raise ShapeError(f"row {row} has {int(ssz[k])} elements, the destination has "
                             f"{int(dsz[k])} (only equal lengths or 1 broadcast)")
        dchild = row_offsets(dstart, dsz, dstride)
        first = np.cumsum(dsz) - dsz
        local = np.arange(len(dchild), dtype=np.int64) - np.repeat(first, dsz)
        sstep = np.where(ssz == dsz, sstride, 0)
        schild = np.repeat(sstart, dsz) + local * np.repeat(sstep, dsz)
        return assign(dt.elem, dmeta, dat2, dbuf2, dchild, st.elem, smeta, sat2, sbuf2, schild,
                      where.rows(first))
    if isinstance(dt, (T.Record, T.Tuple)):
        if not isinstance(st, (T.Record, T.Tuple)) or len(fields_of(st)) != len(fields_of(dt)):
            raise ValueError(f"cannot assign '{st}' to record '{dt}'")
        spos = field_meta_positions(st, sat)
        for i, ((k, f), p) in enumerate(zip(fields_of(dt), field_meta_positions(dt, dat))):
            j = st.names.index(k) if isinstance(st, T.Record) and isinstance(k, str) and \
                k in st.names else i
            assign(f, dmeta, p, dbuf, doffs + dmeta[dat + i], fields_of(st)[j][1], smeta,
                   spos[j], sbuf, soffs + smeta[sat + j], where.field(k))
        return None
    if is_varlen(dt) or is_varlen(st):
        if not (is_varlen(dt) and is_varlen(st) and dt.name == st.name):
            raise ValueError(f"cannot assign '{st}' to '{dt}'")
        # NOTE: the old characters stay allocated until the array goes away.
        _assign_strings(dt, dmeta, dat, dbuf, doffs, read(st, smeta, sat, sbuf, soffs))
        return None
    sd, dd = np_dtype(st), np_dtype(dt)
    vals = gather(sbuf, soffs, sd.itemsize).view(sd).reshape(-1)
    out = vals.astype(dd, casting="unsafe")
    scatter(dbuf, doffs, np.ascontiguousarray(out).view(np.uint8).reshape(len(doffs),
                                                                          dd.itemsize))
    return None


def _present_rows(dbuf: np.ndarray, mask_at: np.ndarray, given: np.ndarray, where) -> None:
    """ValueError where a row is given for a missing destination row: assignment writes
    values into the rows an array has, it never makes a missing row present."""
    missing = gather(dbuf, mask_at, 1).reshape(-1) == 0
    bad = np.flatnonzero(missing & given)
    if len(bad):
        raise ValueError(f"row {where.name(int(bad[0]))} of the destination is missing: "
                         "assignment writes into the rows an array has and cannot make a "
                         "missing row present (build a new array, e.g. with lazyk.where or "
                         "lazyk.fill_none)")


def _subset(where, mask: np.ndarray) -> Subset:
    return Subset(where, np.flatnonzero(mask))


def assign_rows(a, items: tuple, src) -> None:
    """`a[items] = src` (an array of the destination's element type) where no view exists:
    one assignment per row of the first slice. Every row is tried on a copy first, so
    nothing is written unless all take their values (as NumPy); errors name the row."""
    dims, names = normalize_index(a.type, items)
    p = next(k for k, i in enumerate(dims) if isinstance(i, slice))
    if any(i is None for i in dims):
        raise NotSupportedError(f"assignment through {items!r}: None with an int on a var dim")
    head = a[tuple(dims[:p])]
    rows = range(*dims[p].indices(len(head)))
    want = index_type(a.type, dims)
    if src.ndim == want.ndim and isinstance(want, T.Dim):
        if len(src) not in (len(rows), 1):
            raise ShapeError(f"cannot assign {len(src)} rows to {len(rows)} rows")
        parts = [src[j if len(src) > 1 else 0] for j in range(len(rows))]
    else:
        parts = [src] * len(rows)
    rest, probe = tuple(dims[p + 1:]) + tuple(names), head.copy()
    for r, part in zip(rows, parts):
        try:
            probe[(r,) + rest] = part
        except (IndexError, ShapeError, ArrayConstructionError) as e:
            raise type(e)(f"row {r}: {e}") from None
        except ValueError as e:  # (a missing value into a type without options, ...)
            raise ValueError(f"row {r}: {e}") from None
    for r, part in zip(rows, parts):
        head[(r,) + rest] = part

"""Records and tuples as C structs written from columns: each element's fields in one
block (numbers and masks copied; a var field's rows as `{start, stop}` indices over the
column's content, a string's `{begin, size}` over its characters: neither copied).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from lazyk import types as T
from lazyk.arrays import arrmeta as M
from lazyk.arrays import memory
from lazyk.arrays.array import Array, array
from lazyk.errors import ArrayConstructionError, NotSupportedError


def records_array(names: list, columns: list, valid: np.ndarray | None = None) -> Array:
    """`N * {name: T, ...}` (`?{...}` where `valid` says) from columns of N elements each
    (lazyk arrays with a leading fixed dim N); names 0, 1, ... (ints) give a tuple
    `N * (T, ...)`. lazyk records and tuples are C structs, so each
    element's fields are written into one block (vectorized, one strided copy per field):
    numbers and masks are copied, a var field gets its rows' `{start, stop}` indices over
    the column's content (not copied), a string its `{begin, size}` element over the
    column's characters."""
    n = len(valid) if valid is not None else columns[0].type.size if columns else 0
    for name, c in zip(names, columns):
        if not isinstance(c.type, T.FixedDim) or c.type.size != n:
            raise ArrayConstructionError(f"field {name!r}: {c.type}, the records need {n} "
                                         "elements")
    rec = T.Tuple(tuple(c.type.elem for c in columns)) if is_tuple_names(names) else \
        T.Record(tuple((name, c.type.elem) for name, c in zip(names, columns)))
    t = T.Option(rec) if valid is not None else rec
    region = n * rec.itemsize
    block = memory.MemoryBlock(max(region * (1 + _options_in(t)), 16), keep=[])

    writes: list = []  # (a field of every element, its values): written below

    def slot(at: int, dtype, shape=()) -> Any:  # one field of every element
        if not n:  # no elements: nothing to write (the offset may pass the block)
            return np.empty((0,) + shape, dtype)
        return _Later(np.ndarray((n,) + shape, dtype, block.buffer, at, (rec.itemsize,) +
                                 _c_strides(shape, np.dtype(dtype).itemsize)), writes)
    counter = [0]
    meta: tuple = ()
    if valid is not None:
        counter[0] += 1
        slot(region, np.bool_)[:] = valid
        meta = (region,)
    meta += rec.offsets
    try:
        for ft, off, c in zip(rec.types, rec.offsets, columns):
            meta += _write_field(ft, c, block, slot, off, region, counter)
    except NotSupportedError:  # a field not copied column by column (fixed dims of
        return _from_values(names, columns, valid, T.FixedDim(n, t))  # strings, of ?T)
    # every field of a run of elements, then the next run: each part of the block is
    # written while in the cache (a pass per field over all of it grew as fields squared)
    step = max(1, (1 << 18) // max(rec.itemsize, 1))
    for lo in range(0, n, step):
        for field, values in writes:
            field[lo:lo + step] = values[lo:lo + step]
    return Array.from_parts(T.FixedDim(n, t), (n, rec.itemsize) + meta, block.address, block,
                            check_strings=False)


class _Later:
    """A field of every record: `field[:] = values` is written later, run by run."""

    __slots__ = ("field", "writes")

    def __init__(self, field: np.ndarray, writes: list):
        self.field, self.writes = field, writes

    def __setitem__(self, key: slice, values: Any) -> None:
        self.writes.append((self.field, np.broadcast_to(values, self.field.shape)))


def _from_values(names: list, columns: list, valid: np.ndarray | None, t: T.Type) -> Array:
    """The records built from their fields' Python values (None where `valid` is False)."""
    cols = [c.to_list() for c in columns]
    rows = [tuple(v) for v in zip(*cols)] if is_tuple_names(names) else \
        [dict(zip(names, v)) for v in zip(*cols)]
    if valid is not None:
        rows = [r if ok else None for r, ok in zip(rows, valid)]
    return array(rows, type=t)


def _c_strides(shape: tuple, itemsize: int) -> tuple:
    """The strides of C-ordered `shape` (NumPy gives 0 for those of an empty array)."""
    out, step = [], itemsize
    for n in reversed(shape):
        out.append(step)
        step *= n
    return tuple(reversed(out))


def is_tuple_names(names) -> bool:
    """Whether column-tree field names are the positions of a tuple (0, 1, ...)."""
    return len(names) > 0 and all(type(k) is int for k in names)


def field_view(c: Array, k: int) -> Array:
    """Field k of `N * {...}` or `N * (...)` as a view `N * T_k` (tuples have no field
    names to index with)."""
    t = c.type.elem
    ft = t.types[k]
    at = M.field_meta_positions(t, 2)[k]
    meta = tuple(c.meta[:2]) + tuple(c.meta[at:at + M.meta_len(ft)])
    return Array.from_parts(T.FixedDim(c.type.size, ft), meta, c.ptr + c.meta[2 + k], c.owner,
                            c.readonly, check_strings=False)


def _options_in(t: T.Type) -> int:
    """How many option positions one element of `t` has (var contents not counted)."""
    if isinstance(t, T.Option):
        return 1 + _options_in(t.elem)
    if isinstance(t, (T.Record, T.Tuple)):
        return sum(map(_options_in, t.types))
    if isinstance(t, T.FixedDim):
        return _options_in(t.elem)
    return 0


def _column(c: Array, at: int, dtype, shape=()) -> np.ndarray:
    """A strided view of bytes `at` on from each element of column `c` (inside its block:
    NumPy checks the extent)."""
    if not c.type.size:  # no elements: an empty column's pointer may sit past its block
        return np.empty((0,) + shape, dtype)
    return np.ndarray((c.type.size,) + shape, dtype, c.owner.buffer,
                      c.ptr - c.owner.address + at,
                      (c.meta[1],) + tuple(np.dtype(dtype).itemsize for _ in shape))


def _write_field(t: T.Type, c: Array, block, slot, off: int, region: int,
                 counter: list) -> tuple:
    """Write column `c`'s elements (type `t`) at byte `off` of every record (`slot`); the
    field's arrmeta."""
    n = c.type.size
    owned = isinstance(c.owner, memory.MemoryBlock)
    if isinstance(t, T.Option) and owned:
        counter[0] += 1
        slot(counter[0] * region + off, np.bool_)[:] = _column(c, c.meta[2], np.uint8) != 0
        inner = Array.from_parts(T.FixedDim(n, t.elem), (n, c.meta[1]) + c.meta[3:], c.ptr,
                                 c.owner, True, check_strings=False)
        return (counter[0] * region,) + _write_field(t.elem, inner, block, slot, off, region,
                                                     counter)
    if isinstance(t, (T.Record, T.Tuple)):
        meta = t.offsets
        for k, (ft, at) in enumerate(zip(t.types, t.offsets)):
            meta += _write_field(ft, field_view(c, k), block, slot, off + at, region, counter)
        return meta
    if M.is_plain(T.FixedDim(n, t)):  # numbers, bools, fixed dims of them
        values = c.to_numpy()
        # (in the element type's own layout: a column's records may be packed otherwise)
        inner = t
        while isinstance(inner, T.FixedDim):
            inner = inner.elem
        shape, dt = values.shape[1:], M.np_dtype(inner)
        slot(off, dt, shape)[:] = values
        # fixed dims: (size, stride) each, C order inside the record; then the offsets
        # of the records they hold
        return M.meta_from_numpy(dt, shape, _c_strides(shape, dt.itemsize))
    if isinstance(t, T.VarDim) and owned:
        var = M.rows_at(c.meta, 2)
        w, dt = var.width, M.INDEX_DTYPES[var.width]  # the column's index width (list, large_list)
        starts, stops = _column(c, 0, dt), _column(c, var.stop_delta, dt)
        M.check_rows(starts, stops, var)
        slot(off, dt)[:] = starts
        slot(off + w, dt)[:] = stops
        block.keep += [c.owner, memory.lookup(var.ref)]  # the rows' content stays there
        return replace(var, width=w, stop_delta=w).words + tuple(c.meta[2 + M.VAR_META:])
    if M.is_varlen(t) and owned:
        slot(off, np.uint8, (16,))[:] = _column(c, 0, np.uint8, (16,))
        block.keep += [c.owner, memory.lookup(c.meta[2])]
        return (c.meta[2],)
    return unsupported(t)


def unsupported(t: T.Type):
    raise NotSupportedError(f"records or tuples with an element of type '{t}' are not laid "
                            "out in one array yet (their elements may be numbers, bools, "
                            "strings, bytes, records, var dims, options, and fixed dims of "
                            "numbers): evaluate their fields one by one")

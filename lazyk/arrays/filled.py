"""Arrays of a type filled with one value: `full`, `zeros` and `empty` (var rows take their
lengths from `lengths=`)."""
from __future__ import annotations

from typing import Any

import numpy as np

from lazyk import types as T
from lazyk.arrays import arrmeta as M
from lazyk.arrays.array import Array, array, as_type
from lazyk.arrays.infer import EMPTY, ZERO, check_lengths, template
from lazyk.errors import ArrayConstructionError


def full(type: Any, value: Any, lengths: list | None = None) -> Array:
    """An array of `type` filled with `value`; var dims take row sizes from `lengths`.

    `lengths` is a list of row sizes for a type with one var dim, or one flat list per var
    dim (outermost first) for several, e.g. `full('2 * var * int32', 7, [3, 1])`. For a
    `?var` dim a length None makes that row missing (`full('3 * ?var * int32', 7,
    [2, None, 0])` is `[[7, 7], None, []]`); a plain `var` dim refuses None.
    """
    t = as_type(type)
    if t.is_symbolic:
        raise ArrayConstructionError(f"type '{t}' is symbolic: zeros / empty / full need a "
                                     "concrete type (fixed sizes; var dims with lengths=)")
    levels, nested = check_lengths(lengths)
    if M.is_plain(t):
        if levels:
            raise ArrayConstructionError(f"type '{t}' has no var dims; leave out lengths "
                                         f"(got {lengths!r})")
        dt = M.np_dtype(t.dtype) if t.ndim else M.np_dtype(t)
        nbytes = int(np.prod(t.shape, dtype=object)) * dt.itemsize
        if nbytes > np.iinfo(np.intp).max:
            raise ArrayConstructionError(f"type '{t}' needs {nbytes} bytes, more than any "
                                         f"array can hold ({np.iinfo(np.intp).max} bytes)")
        try:  # (zeros: zeroed memory, "" for strings where np.full would write "0")
            data = np.zeros(t.shape, dt) if value is ZERO else np.full(t.shape, value, dt)
        except MemoryError:
            raise MemoryError(f"cannot allocate {nbytes} bytes for type '{t}'") from None
        except (OverflowError, ValueError, TypeError) as e:
            raise ArrayConstructionError(f"fill value {value!r} does not fit '{t}': {e}") from None
        return Array._wrap(data)
    _check_row_count(t, levels, nested)
    iters = [iter(x) for x in levels]
    try:
        result = template(t, value, iters, 0)
    except MemoryError:
        raise MemoryError(f"cannot allocate type '{t}' with these lengths: its values need "
                          f"{_values_bytes(t, levels):,} bytes") from None
    for k, (it, given) in enumerate(zip(iters, levels)):
        left = sum(1 for _ in it)
        if left:
            i = len(given) - left
            where = f"lengths[{k}][{i}]" if nested else f"lengths[{i}]"
            rows = f"has {i} rows" if i else "has no rows (or no such var dim)"
            raise ArrayConstructionError(
                f"{where}: too many row lengths for type '{t}' (var dim number {k} {rows}, "
                f"{len(given)} lengths given)")
    try:
        return array(result, t)
    except MemoryError:
        raise MemoryError(f"cannot allocate type '{t}' with these lengths: its values need "
                          f"{_values_bytes(t, levels):,} bytes") from None


def _values_bytes(t: T.Type, levels: list) -> int:
    """The bytes of the values of an array of `t` with var rows of the lengths `levels`
    (offsets and masks not counted)."""
    count, k = 1, 0
    while isinstance(t, (T.FixedDim, T.VarDim, T.Option)):
        if isinstance(t, T.FixedDim):
            count *= t.size
        elif isinstance(t, T.VarDim):
            given = levels[k] if k < len(levels) else []
            count, k = sum(n for n in given[:count] if n is not None), k + 1
        t = t.elem
    return count * t.itemsize


def _check_row_count(t: T.Type, levels: list, nested: bool) -> None:
    """ArrayConstructionError when `lengths` has fewer row sizes than the dims ahead of a
    var dim make rows (dims down to the first option or record; the rest checks as it
    fills)."""
    whole, rows, k = t, 1, 0
    while isinstance(t, (T.FixedDim, T.VarDim)):
        if isinstance(t, T.FixedDim):
            rows *= t.size
        else:
            given = levels[k] if k < len(levels) else []
            if len(given) < rows:
                where = f"lengths[{k}]" if nested or k else "lengths"
                raise ArrayConstructionError(
                    f"type '{whole}' needs {rows} row length{'s' * (rows != 1)} for its "
                    f"var dim number {k}; {where} has {len(given)}")
            rows, k = sum(n for n in given[:rows] if n is not None), k + 1
        t = t.elem


def zeros(type: Any, lengths: list | None = None) -> Array:
    """An array of `type` filled with zeros ("" for strings); options are present."""
    t = as_type(type)
    return full(t, ZERO, lengths)


def empty(type: Any, lengths: list | None = None) -> Array:
    """An array of `type` with zeroed memory: optional values missing, numbers 0, strings
    empty; var rows take their sizes from `lengths` as in `full` (optional rows `?var` too:
    present with the sizes given, missing where the length is None or `lengths` has none
    for their dim), e.g. `empty('4 * ?var * ?float64', lengths=[3, None, 0, 1])`."""
    t = as_type(type)
    if M.is_plain(t):
        return zeros(t, lengths)
    return full(t, EMPTY, lengths)

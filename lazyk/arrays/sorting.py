"""Sorting the lists of ragged data over column trees (`lazyk.arrays.trees`): `ak.sort` /
`ak.argsort` of the lists of the last dim, every list at once. Short lists of numbers sort
natively as they are (`hooks.sort_values`); otherwise values become int64 keys in the
sort's order (`sort_keys`): short lists argsort natively (`hooks.sort_rows`), longer ones
sort as the rows of padded NumPy matrices of keys, lists of one length class a few at a
time (no Python loop per list).
"""
from __future__ import annotations

import numpy as np

from lazyk import hooks
from lazyk.arrays.trees import (
    I64,
    Column,
    Leaf,
    Lists,
    Masked,
    Regular,
    offsets_of,
    ranges,
)
from lazyk.errors import NotSupportedError

_TOP = np.iinfo(np.int64).max  # sort keys: padding, then missing values, then NaN below it
CHUNK = 1 << 18  # items per padded matrix of lists: it stays in the CPU's cache
SHORT = 48  # lists of at most this many items sort natively (`hooks.sort_rows`)
# dtypes whose short lists' values sort natively as they are (`hooks.sort_values`)
_NATIVE = ("float64", "float32", "int64", "int32", "int16", "int8", "uint64", "uint32",
           "uint16", "uint8", "bool")


def short(lens: np.ndarray) -> bool:
    """Whether every list is short enough for the native sort (an insertion sort: its moves
    grow as the square of a list's length)."""
    return not len(lens) or int(lens.max()) <= SHORT


def _keyable(values: np.ndarray, ascending: bool) -> bool:
    """Whether every value has a `sort_keys` key below the keys kept for missing values
    and padding (int64 / uint64 values at the top of their range have none; descending,
    at the bottom: their keys are reversed)."""
    if values.dtype.kind not in "iu" or values.dtype.itemsize < 8 or not len(values):
        return values.dtype.kind in "biuf"
    if not ascending:  # (~key: the smallest values take the largest keys)
        low = int(values.min())
        return low > -_TOP + 1 if values.dtype.kind == "i" else low > 2
    top = int(values.max())
    return top < _TOP - 2 if values.dtype.kind == "i" else top < (1 << 63) + _TOP - 2


def sort_keys(values: np.ndarray, missing, ascending: bool) -> np.ndarray:
    """int64 keys whose order is the sort's (NaN above every number, one key; -0.0 and
    0.0 one key; descending: reversed), missing values at _TOP - 1 (`_keyable` values)."""
    kind = values.dtype.kind
    if kind == "f":
        v = values.astype(np.float64, copy=False)
        bits = v.view(I64)
        key = bits ^ ((bits >> 63) & _TOP)  # IEEE order as signed integers
        key[v == 0] = 0
        key[np.isnan(v)] = _TOP - 2
    elif kind == "u" and values.dtype.itemsize == 8:
        key = (values ^ np.uint64(1 << 63)).view(I64)
    else:
        key = values.astype(I64)
    if not ascending:
        key = ~key
    if missing is not None:
        key[missing] = _TOP - 1
    return key


def _from_keys(key: np.ndarray, dtype: np.dtype, ascending: bool) -> np.ndarray:
    """The values of `sort_keys` keys (NaN canonical, -0.0 as 0.0)."""
    key = key if ascending else ~key
    if dtype.kind == "f":
        bits = key ^ ((key >> 63) & _TOP)
        out = bits.view(np.float64)
        out[key == _TOP - 2] = np.nan
        return out.astype(dtype, copy=False)
    if dtype.kind == "u" and dtype.itemsize == 8:
        return key.view(np.uint64) ^ np.uint64(1 << 63)
    return key.astype(dtype)


def _row_items(lists: Column):
    """(the lists' offsets in their values, from 0 (int64), their lengths, each list's
    values one after the other, their missing flags or None, where the first list starts
    in the values node). `Lists` and `Regular` hold their lists back to back."""
    starts, lens = lists.spans()
    vmask, values = lists.child.unwrap()
    if not isinstance(values, Leaf):
        raise NotSupportedError(f"sort of {values.kind} items")
    first = int(starts[0]) if len(starts) else 0
    off = np.asarray(lists.offsets, I64) - first if isinstance(lists, Lists) else \
        offsets_of(lens)  # (a new array: the result's offsets never share the input's)
    total = int(off[-1])
    missing = None if vmask is None else ~vmask[first:first + total]
    return off, lens, values.values[first:first + total], missing, first


def _classes(lens: np.ndarray):
    """The lists by length class: (the items of the class's lists one after the other, as
    positions in all lists' items, or None for all of them; their lengths; the width of
    the padded matrix they sort in). Lists padded at most 8x to the longest are one class;
    else each class holds lengths up to a power of two, its width: a matrix row then pads
    at most as many items as its list holds (one long list among a million short ones
    costs a matrix of its own, not a million rows of its width)."""
    if not len(lens):
        return
    off = offsets_of(lens)
    width = int(lens.max())
    if len(lens) * width <= 8 * int(off[-1]) + 4096:  # padded at most 8x: one matrix width
        yield None, lens, width
        return
    # class c: lengths up to 2**c (0 and 1: class 0); frexp(n - 1)'s exponent
    cls = np.frexp(np.maximum(lens - 1, 0).astype(np.float64))[1]
    present = np.bincount(cls, minlength=64)
    for c in np.flatnonzero(present):
        rows = np.flatnonzero(cls == c)
        yield ranges(off[:-1][rows], lens[rows]), lens[rows], 1 << int(c)


def _chunks(lens: np.ndarray, width: int):
    """(first item, end item, each item's place in a padded matrix of the lists) of runs
    of lists holding about CHUNK padded items."""
    off = offsets_of(lens)
    step = max(1, CHUNK // max(width, 1))
    for r0 in range(0, len(lens), step):
        r1 = min(r0 + step, len(lens))
        o0, o1 = int(off[r0]), int(off[r1])
        place = ranges(np.arange(r1 - r0, dtype=I64) * width, lens[r0:r1])
        yield o0, o1, r1 - r0, place


def _padded(key: np.ndarray, rows: int, width: int, place: np.ndarray) -> np.ndarray:
    padded = np.full(rows * width, _TOP, I64)
    padded[place] = key
    return padded


def sorted_values(lists: Column, ascending: bool):
    """(The items of `Lists` / `Regular` of numbers, each list sorted (missing values
    last), as a node; the lists' offsets), or None where `sort_lists` takes it (values with
    no key, -0.0 among keys). Short lists of values sort natively as they are
    (`hooks.sort_values`), short lists of keys natively too (`hooks.sort_rows`), longer ones
    as the rows of padded matrices of keys, lists of one length class (`_classes`) a few at
    a time (cache-sized); equal keys are equal values, so no stable sort is needed."""
    vmask, values = lists.child.unwrap()
    if not isinstance(values, Leaf) or values.values.dtype.kind not in "biuf":
        return None
    off, lens, v, missing, _ = _row_items(lists)
    if short(lens) and len(v) <= 16 * len(lens) and missing is None and \
            v.dtype.name in _NATIVE and v.dtype.isnative:  # natively, values (longer
        # lists: NumPy's row sorts; another byte order: by keys)
        out = np.empty(len(v), v.dtype)
        hooks.sort_values(off, np.ascontiguousarray(v), out, ascending)
        return Leaf(out), off
    if not _keyable(v, ascending) or v.dtype.kind == "f" and _negative_zero(v):
        return None  # (-0.0 keeps its sign: by positions)
    if short(lens):  # the keys sorted in place natively are the values, in order
        key = sort_keys(v, missing, ascending)
        hooks.sort_rows(off, key, np.empty(len(v), I64))
        out = _from_keys(key, v.dtype, ascending)
        return Leaf(out) if missing is None else Masked(key != _TOP - 1, Leaf(out)), off
    out = np.empty(len(v), v.dtype)
    present = None if missing is None else np.empty(len(v), bool)
    for at, lens_c, width in _classes(lens):
        for o0, o1, rows, place in _chunks(lens_c, width):
            sel = slice(o0, o1) if at is None else at[o0:o1]
            padded = _padded(sort_keys(v[sel], None if missing is None else missing[sel],
                                       ascending), rows, width, place)
            padded.reshape(rows, width).sort(axis=1)
            got = padded[place]
            out[sel] = _from_keys(got, v.dtype, ascending)
            if present is not None:
                present[sel] = got != _TOP - 1
    return Leaf(out) if present is None else Masked(present, Leaf(out)), off


def _negative_zero(v: np.ndarray) -> bool:
    """Whether -0.0 is among the values (its keys would lose the sign)."""
    zero = v == 0
    return bool(zero.any()) and bool(np.signbit(v[zero]).any())


def sort_lists(lists: Column, ascending: bool,
               within: bool = False) -> tuple[np.ndarray, np.ndarray, Column]:
    """For `Lists` / `Regular` over values: (the position in the values of every item
    in sorted order (`within`: in its list), the lists' lengths, the values' node), each
    list sorted stably with
    missing values last and NaN above every number (descending: first). Lists sort as the
    rows of padded matrices (NumPy's stable argsort of each row), lists of one length class
    (`_classes`) a few at a time; values with no key (int64 at the top of their range) in
    one stable sort of all items by (list, value)."""
    off, lens, v, missing, first = _row_items(lists)
    n = len(lens)
    keyable = _keyable(v, ascending)
    if keyable and short(lens):  # short lists: natively (NumPy's stable argsort of a
        # padded matrix's rows took about half as long again)
        pos = np.empty(len(v), I64)
        hooks.sort_rows(off, sort_keys(v, missing, ascending), pos)
    elif keyable:
        pos = np.empty(len(v), I64)
        for at, lens_c, width in _classes(lens):
            for o0, o1, rows, place in _chunks(lens_c, width):
                sel = slice(o0, o1) if at is None else at[o0:o1]
                padded = _padded(sort_keys(v[sel], None if missing is None else
                                           missing[sel], ascending), rows, width, place)
                pos[sel] = np.argsort(padded.reshape(rows, width), axis=1,
                                      kind="stable").reshape(-1)[place]
    else:
        key = v if ascending else ~v  # integers at the top of their range: their own order
        if missing is not None:  # (one key: missing values keep their order, whatever
            key = np.where(missing, 0, key)  # bytes their slots hold)
        rid = np.repeat(np.arange(n, dtype=I64), lens)
        keys = (key, rid) if missing is None else (key, missing, rid)
        order = np.lexsort(keys) if len(v) else np.zeros(0, I64)
        pos = order - np.repeat(off[:-1], lens)
    if within:
        return pos, lens, lists.child
    place = pos + np.repeat(off[:-1], lens)  # in the lists' items, one after the other
    return first + place, lens, lists.child


def sort(tree: Column, ndim: int, ascending: bool, positions: bool) -> Column:
    """`ak.sort` (`positions`: `ak.argsort`) of the lists of the last dim (for one dim:
    the items themselves, one list)."""
    def one(node):
        mask, lists = node.unwrap()
        got = None if positions else sorted_values(lists, ascending)
        if got is not None:
            items, off = got
        elif positions:
            pos, lens, _ = sort_lists(lists, ascending, within=True)
            items, off = Leaf(pos), None
        else:
            pos, lens, values = sort_lists(lists, ascending)
            items, off = values.take(pos), None
        got = Regular(lists.size, items, lists.length()) if isinstance(lists, Regular) else \
            Lists(offsets_of(lens) if off is None else off, items)
        return got if mask is None else Masked(mask, got)
    if ndim == 1:
        return one(Lists(np.array([0, tree.length()], I64), tree)).child
    return tree.at(ndim - 2, one)

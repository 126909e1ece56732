"""Awkward arrays to and from lazyk arrays, over the same buffers where the layouts agree.

awkward is optional (`pip install 'lazyk[ragged]'`): imported inside the functions that need it.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from lazyk.arrays.array import Array, array, masked
from lazyk.arrays.buffers import (
    as_offsets,
    column_lists,
    column_records,
    pairs_array,
    regular,
    text_array,
)
from lazyk.arrays.columns import as_array, columns, fixed_text
from lazyk.arrays.formats import need
from lazyk.arrays.formats.arrow import no_fields
from lazyk.arrays.structs import is_tuple_names
from lazyk.arrays.trees import Column, Leaf, Lists, Masked, Record, Text
from lazyk.errors import NotSupportedError


def from_awkward(x: Any) -> Array:
    """A lazyk array over an Awkward Array's buffers.

    ListOffsetArray and NumpyArray are used in place (offsets other than int32 / int64,
    such as uint32, become an int64 copy of the offsets); RegularArray becomes a fixed dim (a
    view); strings and bytestrings become `string` / `bytes` (characters in place, 16-byte
    `{begin, size}` elements built over them); records become lazyk records (C structs: the
    fields are copied into one block, except list contents and characters; a field read
    from records that cannot be missing, `x.pt` or `x["pt"]`, is the Awkward column itself,
    its lists over the same offsets); ListArray's starts and stops are copied into index pairs (the
    content is not; over records, Awkward compacts the lists first, so each field reads a
    column of its own); option types (ByteMasked, BitMasked, IndexedOption, Unmasked)
    become `?T` / `?var` through a byte mask (copied, with the values of option numbers).
    Tuples become lazyk tuples `(A, B)` (copied as records are). Unions raise
    NotSupportedError (select one type first). Data of no element type yet
    (`ak.Array([[]])`, `ak.Array([[None]])`) reads as float64, as `ak.to_numpy` does.
    The result is read-only, as Awkward's arrays are (writes would change the Awkward
    arrays that share its buffers): `.copy()` gives a writable copy.

    Example:
        >>> import awkward as ak
        >>> lazyk.from_awkward(ak.Array([[1, 2], [], [3]])).to_list()
        [[1, 2], [], [3]]
    """
    ak = need("awkward")
    if not isinstance(x, (ak.Array, ak.contents.Content, np.ndarray)):
        raise TypeError(f"from_awkward takes an awkward.Array (or an Awkward layout or a "
                        f"NumPy array), not {type(x).__name__}")
    got = _from_layout(ak, ak.to_layout(x))
    # read-only, as Awkward's arrays are: writes would change Awkward arrays that share them
    return got if got.readonly else Array.from_parts(got.type, got.meta, got.ptr, got.owner,
                                                     readonly=True, check_strings=False)


def _text_layout(ak, layout, valid=None) -> Array | None:
    """Awkward strings (lists of uint8 marked by a parameter) as `string` / `bytes`: the
    characters in place; None for other layouts. Bare characters are refused rather than
    read as numbers."""
    kind = layout.parameter("__array__")
    if kind in ("char", "byte"):
        raise NotSupportedError(f"Awkward {kind} arrays (characters outside strings)")
    if kind not in ("string", "bytestring"):
        return None
    if not isinstance(layout, ak.contents.ListOffsetArray):
        layout = layout.to_ListOffsetArray64(True)
    return text_array(np.asarray(layout.offsets.data), np.asarray(layout.content.data), valid,
                      "string" if kind == "string" else "bytes")


def _records_layout(ak, layout, valid=None) -> Array:
    n = len(layout)
    if not layout.contents:
        return no_fields(n, valid)
    # a tuple's fields are its positions: lazyk's tuple type `(A, B)`
    names = list(range(len(layout.contents))) if layout.is_tuple else list(layout.fields)
    return column_records(names, [_from_layout(ak, x[:n]) for x in layout.contents], valid)


def _from_layout(ak, layout) -> Array:
    c = ak.contents
    if layout.parameter("__array__") == "categorical":  # (Arrow dictionaries): the values
        layout = layout.copy(parameters={k: v for k, v in layout.parameters.items()
                                         if k != "__array__"})
    text = _text_layout(ak, layout)
    if text is not None:
        return text
    if isinstance(layout, c.NumpyArray):
        return array(np.asarray(layout.data))
    if isinstance(layout, c.EmptyArray):  # no element type yet: float64, as ak.to_numpy
        return array(np.zeros(0))
    if isinstance(layout, c.ListOffsetArray):
        return column_lists(_awkward_offsets(layout.offsets), _from_layout(ak, layout.content))
    if isinstance(layout, c.ListArray):
        if isinstance(layout.content, c.RecordArray):  # (as offsets: each field's lists
            # over its own compacted column, read in place, not strided through the structs)
            return _from_layout(ak, layout.to_ListOffsetArray64(True))
        n = len(layout)
        return pairs_array(np.asarray(layout.starts.data)[:n], np.asarray(layout.stops.data)[:n],
                           _from_layout(ak, layout.content))
    if isinstance(layout, c.RegularArray):
        inner = _from_layout(ak, layout.content[:len(layout) * layout.size])
        return regular(inner, layout.size, len(layout))
    if isinstance(layout, (c.ByteMaskedArray, c.BitMaskedArray, c.IndexedOptionArray,
                           c.UnmaskedArray)):
        n = len(layout)
        valid = np.asarray(layout.mask_as_bool(valid_when=True))[:n]
        if isinstance(layout, c.IndexedOptionArray) and isinstance(layout.content,
                                                                   c.EmptyArray):
            return masked(np.zeros(n), valid)  # every value missing (`ak.Array([None])`)
        if isinstance(layout, c.IndexedOptionArray):  # gathers the values (a copy)
            inner = layout.to_ByteMaskedArray(True).content[:n]
        else:
            inner = layout.content[:n]
        text = _text_layout(ak, inner, valid)
        if text is not None:
            return text
        if isinstance(inner, c.NumpyArray):
            return masked(np.asarray(inner.data), valid)
        if isinstance(inner, c.RecordArray):
            return _records_layout(ak, inner, valid)
        if isinstance(inner, (c.ListArray, c.RegularArray)):
            inner = inner.to_ListOffsetArray64(True)
        if isinstance(inner, c.ListOffsetArray):
            return column_lists(_awkward_offsets(inner.offsets),
                                _from_layout(ak, inner.content), valid)
        if isinstance(inner, c.UnionArray):
            _union(inner)
        raise NotSupportedError(f"missing values over Awkward {type(inner).__name__}")
    if isinstance(layout, c.RecordArray):
        return _records_layout(ak, layout)
    if isinstance(layout, c.IndexedArray):
        return _from_layout(ak, layout.project())
    if isinstance(layout, c.UnionArray):
        _union(layout)
    raise NotSupportedError(f"Awkward layout {type(layout).__name__} (lists, regular arrays, "
                            "records, numbers, strings and options of them)")


def _awkward_offsets(index: Any) -> np.ndarray:
    """An Awkward offsets index as lazyk offsets: int32 / int64 in place, other widths
    (uint32) as an int64 copy of the offsets (the content stays in place)."""
    o = np.asarray(index.data)
    if o.dtype.kind in "iu" and o.dtype not in (np.int32, np.int64):
        o = o.astype(np.int64)
    return as_offsets(o)


def _union(layout):
    raise NotSupportedError(
        f"Awkward union arrays ({layout.form.type}): a lazyk array holds one type; convert "
        f"one of its types at a time (ak.Array(array.layout.project(i)) holds the elements "
        f"of type i)")


def to_awkward(x: Array) -> Any:
    """An Awkward Array over the lazyk array's buffers (`N * var * T` -> ListOffsetArray,
    `?T` -> ByteMaskedArray (mask copied), fixed inner dims -> RegularArray, records and
    tuples -> RecordArray). Offsets-form var dims and values are not copied (the fields of
records stored as structs are: each becomes a contiguous buffer). Dates and
    times stay NumPy datetime64 / timedelta64 (`time` is timedelta64[us]: Awkward has no
    time of day), `fixed_string[n]` becomes strings (a copy), `fixed_bytes[n]`
    bytestrings, non-native byte order native.

    Example:
        >>> lazyk.to_awkward(lazyk.array([[1, None], [3]])).tolist()
        [[1, None], [3]]
    """
    ak = need("awkward")
    x = as_array(x, "to_awkward")
    return ak.Array(_awkward(ak, columns(x), len(x)))


def _awkward(ak, col: Column, n: int):
    """Awkward content for column `col` of `n` elements (a fixed dim of size 0 keeps its
    rows: `4 * 0 * T` is four empty lists)."""
    c = ak.contents
    if isinstance(col, Leaf):
        arr = col.values
        if arr.dtype.names == ():  # records of no fields (`{}`)
            return c.RecordArray([], [], length=len(arr))
        if arr.dtype.kind in "US":
            return _awkward(ak, fixed_text(arr, "Awkward"), n)
        if arr.dtype.kind == "V":  # fixed_bytes[n]: Awkward bytestrings of n bytes
            k = arr.dtype.itemsize
            raw = np.ascontiguousarray(arr).view(np.uint8)
            return c.RegularArray(c.NumpyArray(raw, parameters={"__array__": "byte"}), k,
                                  zeros_length=len(arr), parameters={"__array__": "bytestring"})
        if not arr.dtype.isnative:
            arr = arr.astype(arr.dtype.newbyteorder("="))
        # (a field of records stored as structs is strided: Arrow and Parquet writers
        # take contiguous buffers only)
        return c.NumpyArray(np.ascontiguousarray(arr))
    if isinstance(col, Masked):
        mask = ak.index.Index8(col.present.astype(np.int8))
        return c.ByteMaskedArray(mask, _awkward(ak, col.child, len(mask)), valid_when=True)
    if isinstance(col, Record):
        fields = [_awkward(ak, f, n) for f in col.children]
        names = None if is_tuple_names(col.names) else list(col.names)  # None: an Awkward tuple
        return c.RecordArray(fields, names, length=len(fields[0]) if fields else n)
    if isinstance(col, Text):
        string = col.type_name == "string"
        chars = c.NumpyArray(col.chars, parameters={"__array__": "char" if string else "byte"})
        return c.ListOffsetArray(ak.index.Index64(col.offsets), chars, parameters={
            "__array__": "string" if string else "bytestring"})
    if isinstance(col, Lists):
        offsets = col.offsets
        index = ak.index.Index32 if offsets.dtype.itemsize == 4 else ak.index.Index64
        inner = int(offsets[-1]) if len(offsets) else 0
        return c.ListOffsetArray(index(offsets), _awkward(ak, col.child, inner))
    inner = _awkward(ak, col.child, n * col.size)
    return c.RegularArray(inner, col.size, zeros_length=n)

"""Arrow arrays to and from lazyk arrays, over the same buffers where the layouts agree.

pyarrow is optional (`pip install 'lazyk[ragged]'`): imported inside the functions that need it.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from lazyk import types as T
from lazyk.arrays.array import Array, array, masked
from lazyk.arrays.buffers import (
    as_offsets,
    column_lists,
    column_records,
    regular,
    text_array,
)
from lazyk.arrays.columns import as_array, columns, fixed_text
from lazyk.arrays.formats import need
from lazyk.arrays.trees import Column, Leaf, Lists, Masked, Record, Text
from lazyk.errors import NotSupportedError


def from_arrow(x: Any) -> Array:
    """A lazyk array over a pyarrow array: lists become var dims, nulls become `?T`.

    Handles ListArray and LargeListArray (offsets and values used in place), FixedSizeList
    (a fixed dim), numeric and bool arrays (Arrow bools are bits: copied), string and binary
    arrays (`string` / `bytes`: the characters used in place, 16-byte `{begin, size}`
    elements built over them), fixed-size binary (`fixed_bytes[n]`, in place), struct
    arrays (records: lazyk's are C structs, so the fields are copied into one block,
    except list contents and characters), any nesting of these,
    and ChunkedArray (one chunk in place; several are combined, a copy). A Table or
    RecordBatch becomes records, one per row, a field per column. Map arrays are lists of
    `{key, value}` structs in Arrow's own layout: `var * {key: K, value: V}` (offsets in
    place, keys and values copied into the records). Dictionary arrays (Parquet string
    columns often read as these) are decoded by Arrow (`dictionary_decode`): a copy of the
    values, which then convert as above. An extension type (Awkward's, from `ak.to_arrow`
    or a Parquet file Awkward wrote; Arrow's json, uuid) reads as its storage type (Arrow's
    bool8 as bools). A Table of no columns raises NotSupportedError. Union arrays raise
    NotSupportedError (select one type first). Dates, times, timestamps and durations
    become `date`, `time` (microseconds since midnight), `datetime[unit]` and
    `timedelta[unit]`, all int64 as NumPy's:
    timestamps and durations in place, date32 / date64 / time32 widened (a copy). A
    timestamp with a time zone gives its UTC values (Arrow stores UTC instants; the zone is
    dropped). time64[ns] values are divided into microseconds (a copy) when every one is
    a whole microsecond; otherwise, and for intervals, NotSupportedError names the column
    or field (and the first value that would lose its nanoseconds). Nulls in a list array
    give `?var` rows (the offsets are copied next to a byte mask); nulls in values give
    `?T` (values and mask copied into lazyk's mask form: Arrow's validity bits cannot be
    addressed per value).

    Example:
        >>> import pyarrow as pa
        >>> lazyk.from_arrow(pa.array([[1.5, None], [], [3.0]])).to_list()
        [[1.5, None], [], [3.0]]
    """
    pa = need("pyarrow")
    if isinstance(x, (pa.Table, pa.RecordBatch)):  # one record per row
        if not x.num_columns:
            return no_fields(x.num_rows)
        return column_records(list(x.column_names), [_at(f"column {k!r}", from_arrow, c)
                                                     for k, c in zip(x.column_names, x.columns)])
    if isinstance(x, pa.ChunkedArray):
        x = x.chunk(0) if x.num_chunks == 1 else x.combine_chunks()
    if not isinstance(x, pa.Array):
        raise TypeError(f"from_arrow takes a pyarrow Array, ChunkedArray, Table or "
                        f"RecordBatch, not {type(x).__name__}")
    t = x.type
    if isinstance(t, pa.BaseExtensionType):  # (Awkward's `ak.to_arrow`, Arrow's own, ...)
        if t.extension_name == "arrow.bool8":  # (bools stored as int8: 0 is False)
            import pyarrow.compute as pc
            return from_arrow(pc.not_equal(x.storage, 0))
        return from_arrow(x.storage)
    if pa.types.is_dictionary(t):  # Arrow's own decode: the values gathered (a copy)
        import pyarrow.compute as pc  # (under a struct's null, an index may point nowhere)
        inside = pc.less(x.indices, len(x.dictionary)).fill_null(True)
        return from_arrow(pa.DictionaryArray.from_arrays(pc.if_else(
            inside, x.indices, None), x.dictionary).dictionary_decode())
    if pa.types.is_null(t):  # no values (pyarrow's type of `[[], []]`): float64, as lists
        n = len(x)  # and Awkward give; every value missing
        return masked(np.zeros(n), np.zeros(n, bool)) if n else array(np.zeros(0))
    if pa.types.is_union(t):
        raise NotSupportedError(
            f"Arrow union arrays ({t}): a lazyk array holds one type; select the values of "
            f"one type first (x.type_codes gives each value's type, x.field(i) child i)")
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        # a map is a list of {key, value} structs in Arrow's own layout
        # NOTE: a valid zero-length list array may have no offsets buffer, and pyarrow's
        # offsets.to_numpy crashes on it (pyarrow 26): one offset of 0 instead
        wide = pa.types.is_large_list(t)
        offsets = x.offsets.to_numpy(zero_copy_only=True) if len(x) else \
            np.zeros(1, np.int64 if wide else np.int32)
        content = _at("list values", from_arrow, x.values)
        valid = x.is_valid().to_numpy(zero_copy_only=False) if x.null_count else None
        return column_lists(as_offsets(offsets), content, valid)
    if pa.types.is_fixed_size_list(t):
        k = t.list_size
        inner = _at("list values", from_arrow, x.values.slice(x.offset * k, len(x) * k))
        if x.null_count:  # rows that may be missing: `?var` rows of k items
            valid = x.is_valid().to_numpy(zero_copy_only=False)
            return column_lists(np.arange(len(x) + 1, dtype=np.int64) * k, inner, valid)
        return regular(inner, k, len(x))
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or \
            pa.types.is_large_binary(t):
        _, off_buf, char_buf = x.buffers()
        wide = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        offsets = np.frombuffer(off_buf, np.int64 if wide else np.int32)[x.offset:][:len(x) + 1] \
            if len(x) else np.zeros(1, np.int64)  # zero rows: the buffer may be absent
        chars = np.frombuffer(char_buf, np.uint8) if char_buf is not None else \
            np.zeros(0, np.uint8)
        valid = x.is_valid().to_numpy(zero_copy_only=False) if x.null_count else None
        kind = "string" if pa.types.is_string(t) or pa.types.is_large_string(t) else "bytes"
        return text_array(offsets, chars, valid, kind)
    if pa.types.is_fixed_size_binary(t):  # fixed_bytes[n]: the bytes in place
        w = t.byte_width
        values = np.frombuffer(x.buffers()[1], f"V{w}", len(x), x.offset * w) if len(x) \
            else np.zeros(0, f"V{w}")
        return masked(values, x.is_valid().to_numpy(zero_copy_only=False)) if x.null_count \
            else array(values)
    if pa.types.is_struct(t):
        valid = x.is_valid().to_numpy(zero_copy_only=False) if x.null_count else None
        return column_records([t.field(i).name for i in range(t.num_fields)],
                              [_at(f"field {t.field(i).name!r}", from_arrow, x.field(i))
                               for i in range(t.num_fields)], valid) \
            if t.num_fields else no_fields(len(x), valid)
    if pa.types.is_temporal(t) and not pa.types.is_interval(t):
        return _arrow_dates(pa, x)
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
        raise NotSupportedError(f"Arrow type {t} is not supported{_arrow_hint(pa, t)} "
                                "(lazyk reads lists, maps, fixed-size lists, structs, "
                                "numbers, bools, strings, binary, fixed-size binary, dates, "
                                "times, timestamps, durations and dictionaries of these)")
    if x.null_count:
        values = x.fill_null(False if pa.types.is_boolean(t) else 0).to_numpy(
            zero_copy_only=False)
        return masked(values, x.is_valid().to_numpy(zero_copy_only=False))
    values = x.to_numpy(zero_copy_only=not pa.types.is_boolean(t))
    return array(values)


def no_fields(n: int, valid: Any = None) -> Array:
    """`n * {}` (`?{}` where `valid` says): records with no fields, as `lazyk.array` reads
    a list of empty dicts."""
    return array([{} if valid is None or valid[i] else None for i in range(n)],
                 f"{n} * {'{}' if valid is None else '?{}'}")


def _arrow_hint(pa, t) -> str:
    """How to turn an Arrow type lazyk does not read into one it does, or ''."""
    cast = "; convert it first: pyarrow.compute.cast(col, pyarrow.{})"
    if pa.types.is_decimal(t):
        return cast.format("float64()") + " (rounds to the nearest float64)"
    if str(t) == "string_view":  # (types of newer pyarrow releases: by name)
        return cast.format("string()")
    if str(t) == "binary_view":
        return cast.format("binary()")
    if str(t).startswith("run_end_encoded"):
        return "; decode it first: pyarrow.compute.run_end_decode(col)"
    return ""


def _at(where: str, convert, x: Any) -> Array:
    """`convert(x)`, its NotSupportedError prefixed with where `x` sits (a column, field)."""
    try:
        return convert(x)
    except NotSupportedError as e:
        raise NotSupportedError(f"{where}: {e}") from None


_DAY_MS = 86_400_000


def _arrow_dates(pa, x) -> Array:
    """Arrow dates, times, timestamps and durations as lazyk `date`, `time`,
    `datetime[unit]` and `timedelta[unit]` (int64, as NumPy's datetime64 / timedelta64):
    64-bit values used in place, date32 / date64 / time32 values widened (a copy), nulls
    as `?T` (values and mask copied)."""
    t, n = x.type, len(x)
    width = t.bit_width // 8
    buf = x.buffers()[1]
    raw = np.frombuffer(buf, f"i{width}", n, x.offset * width) if n else np.zeros(0, f"i{width}")
    elem = None
    if pa.types.is_date32(t):
        values = raw.astype(np.int64).view("M8[D]")
    elif pa.types.is_date64(t):  # milliseconds of whole days
        values = (raw // _DAY_MS).view("M8[D]")
    elif pa.types.is_timestamp(t):  # with a zone too: Arrow stores UTC instants
        values = raw.view(f"M8[{t.unit}]")
    elif pa.types.is_duration(t):
        values = raw.view(f"m8[{t.unit}]")
    elif t.unit == "ns":  # whole microseconds only: lazyk's time holds microseconds
        lost = raw % 1000 != 0
        if x.null_count:
            lost &= x.is_valid().to_numpy(zero_copy_only=False)
        if lost.any():
            i = int(np.argmax(lost))
            raise NotSupportedError(
                f"Arrow type {t}: value {i} ({int(raw[i])} ns since midnight) is not a whole "
                "microsecond, and lazyk's time holds microseconds; cast it first (this "
                "truncates), e.g. pyarrow.compute.cast(x, pyarrow.time64('us'), safe=False)")
        values, elem = (raw // 1000).view("m8[us]"), T.Scalar("time")
    else:  # time32[s / ms], time64[us]: microseconds since midnight
        values = (raw.astype(np.int64) * {"s": 10 ** 6, "ms": 10 ** 3, "us": 1}[t.unit]
                  ).view("m8[us]")
        elem = T.Scalar("time")
    out = masked(values, x.is_valid().to_numpy(zero_copy_only=False)) if x.null_count \
        else array(values)
    if elem is None:
        return out
    elem = T.Option(elem) if x.null_count else elem
    return Array._from_parts(T.FixedDim(n, elem), out.meta, out.ptr, out.owner, out.readonly)


def to_arrow(x: Array) -> Any:
    """A pyarrow array over the lazyk array's buffers (`N * var * T` -> ListArray or
    LargeListArray by index width, `?T` -> validity bits (packed: a copy), fixed inner dims
    -> FixedSizeListArray (of size 0 too: `?0 * T` rows), records -> StructArray, tuples
    -> StructArray with fields "0", "1", ... as Awkward names them). Arrays that came from Arrow maps or dictionaries come
    back as lists of `{key, value}` structs and as plain values. Offsets-form var dims and
    contiguous values are not copied; lazyk-built rows copy their indices into offsets;
    stepping views are repacked.
    `date` -> date32, `time` -> time64[us], `datetime[unit]` -> timestamp, `timedelta[unit]`
    -> duration, NaT -> null (units Arrow lacks: Y, M, W dates -> date32, h and m -> s;
    ps, fs, as and Y, M durations are refused); `fixed_string[n]` (NumPy `U` / `S`) ->
    string (a copy; `S` bytes must be UTF-8), `fixed_bytes[n]` -> fixed-size binary.
    complex numbers have no Arrow type (NotSupportedError).

    Example:
        >>> lazyk.to_arrow(lazyk.array([[1.0, 2.0], [3.0]])).to_pylist()
        [[1.0, 2.0], [3.0]]
    """
    pa = need("pyarrow")
    a = as_array(x, "to_arrow")
    out = _arrow(pa, columns(a), count=a.type.size)
    timed = _time_of_day(pa, out.type, a.type.elem)  # `time` is stored as NumPy's m8[us]
    return out if timed == out.type else out.view(timed)


def _time_of_day(pa, at, t: T.Type):
    """The Arrow type `at` (converted from lazyk type `t`) with time64[us] where `t` has
    `time` (microseconds since midnight, the same buffers as the duration[us] there)."""
    t = t.elem if isinstance(t, T.Option) else t
    if t == T.Scalar("time"):
        return pa.time64("us")
    if isinstance(t, T.Record) and pa.types.is_struct(at):
        return pa.struct([pa.field(at.field(i).name, _time_of_day(pa, at.field(i).type, ft))
                          for i, ft in enumerate(t.types)])
    if isinstance(t, (T.FixedDim, T.VarDim)):
        inner = _time_of_day(pa, at.value_type, t.elem)
        return pa.list_(inner, at.list_size) if pa.types.is_fixed_size_list(at) else \
            pa.large_list(inner) if pa.types.is_large_list(at) else pa.list_(inner)
    return at


def _arrow(pa, col: Column, valid: np.ndarray | None = None, count: int | None = None):
    """The Arrow array of a columns node (`count`: how many elements it describes, where
    known; fixed dims of size 0 need it)."""
    bits = None
    if valid is not None:
        bits = pa.py_buffer(np.packbits(valid, bitorder="little"))
    nulls = -1 if valid is None else int(len(valid) - valid.sum())
    if isinstance(col, Masked):
        return _arrow(pa, col.child, col.present, len(col.present))
    if isinstance(col, Leaf):
        arr = col.values
        if arr.dtype.names == ():  # records of no fields (`{}`): a struct of none
            return pa.array([{} if v else None for v in (np.ones(len(arr), bool) if valid
                             is None else valid)], type=pa.struct([]))
        if arr.dtype.kind in "USVcmM":
            return _arrow_leaf(pa, arr, valid)
        if arr.dtype == np.bool_ or valid is None and not arr.flags.c_contiguous:
            return pa.array(arr, mask=None if valid is None else ~valid)
        arr = np.ascontiguousarray(arr)
        if not arr.dtype.isnative:
            arr = arr.astype(arr.dtype.newbyteorder("="))
        return pa.Array.from_buffers(pa.from_numpy_dtype(arr.dtype), len(arr),
                                     [bits, pa.py_buffer(arr)], null_count=nulls)
    if isinstance(col, Record):
        return pa.StructArray.from_arrays([_arrow(pa, f, count=count) for f in col.children],
                                          names=[str(k) for k in col.names],  # tuples: "0", ...
                                          mask=None if valid is None else pa.array(~valid))
    if isinstance(col, Text):
        offsets, chars = col.offsets, col.chars
        wide = len(chars) >= 2 ** 31
        at = pa.large_string() if wide else pa.string()
        if col.type_name == "bytes":
            at = pa.large_binary() if wide else pa.binary()
        offsets = offsets.astype(np.int64 if wide else np.int32)
        return pa.Array.from_buffers(at, len(offsets) - 1, [bits, pa.py_buffer(offsets),
                                                             pa.py_buffer(chars)],
                                     null_count=nulls)
    if isinstance(col, Lists):
        offsets = col.offsets
        child = _arrow(pa, col.child, count=int(offsets[-1]) if len(offsets) else 0)
        lt = pa.list_(child.type) if offsets.dtype.itemsize == 4 else pa.large_list(child.type)
        return pa.Array.from_buffers(lt, len(offsets) - 1, [bits, pa.py_buffer(offsets)],
                                     null_count=nulls, children=[child])
    if col.size == 0 and count is not None:  # (from_arrays cannot tell how many rows)
        child = _arrow(pa, col.child, count=0)
        return pa.Array.from_buffers(pa.list_(child.type, 0), count, [bits],
                                     null_count=nulls, children=[child])
    child = _arrow(pa, col.child, count=None if count is None else count * col.size)
    try:
        return pa.FixedSizeListArray.from_arrays(child, col.size, mask=None if valid is None
                                                 else pa.array(~valid))
    except pa.ArrowInvalid as e:  # (fixed dims of size 0: `0 * T`, `?0 * T` rows)
        raise NotSupportedError(f"to_arrow of a fixed dim of size {col.size}: {e}") from None


def _arrow_leaf(pa, arr: np.ndarray, valid: np.ndarray | None):
    """Fixed strings, fixed bytes, complex numbers and NumPy dates and times to Arrow."""
    kind = arr.dtype.kind
    if kind in "US":
        return _arrow(pa, fixed_text(arr, "Arrow"), valid)
    if kind == "c":
        raise NotSupportedError(f"{arr.dtype.name} has no Arrow type: convert the real and "
                                "imaginary parts as two arrays (lazyk.real(x), lazyk.imag(x)), "
                                "or use to_awkward")
    arr = np.ascontiguousarray(arr)
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    if kind == "V":  # fixed_bytes[n]: Arrow's fixed-size binary, in place
        at = pa.binary(arr.dtype.itemsize)
    else:
        at, arr, valid = _arrow_time(pa, arr, valid)
    nulls = 0 if valid is None else int(len(valid) - valid.sum())
    bits = None if not nulls else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(at, len(arr), [bits, pa.py_buffer(arr)], null_count=nulls)


_TICKS = ("s", "ms", "us", "ns")  # Arrow's timestamp and duration units


def _arrow_time(pa, arr: np.ndarray, valid: np.ndarray | None) -> tuple:
    """(Arrow type, values, valid) of NumPy datetime64 / timedelta64 values: `date`
    (days) and the calendar units Y, M, W -> date32; h and m -> seconds; NaT -> null.
    NotSupportedError for units Arrow cannot hold exactly (Y and M durations, ps, fs, as)
    and values outside the Arrow type's range."""
    unit = np.datetime_data(arr.dtype)[0]
    dated = arr.dtype.kind == "M"
    what = f"{'datetime' if dated else 'timedelta'}[unit='{unit}']"
    nat = np.isnat(arr)
    if nat.any():
        valid = ~nat if valid is None else valid & ~nat
    present = np.ones(len(arr), bool) if valid is None else valid
    if dated and unit in ("Y", "M", "W", "D"):
        to = "D"
    elif unit in ("W", "D", "h", "m"):
        to = "s"
    elif unit in _TICKS:
        to = unit
    else:
        hint = "m8[D]" if unit in "YM" else arr.dtype.str[:3] + "[ns]"
        raise NotSupportedError(
            f"{what} has no Arrow type (Arrow has dates, s, ms, us and ns; no "
            f"{'durations of months or years' if unit in 'YM' else 'finer units'}): convert "
            f"it to a unit Arrow has first, e.g. x.to_numpy().astype('{hint}')")
    out = arr.astype(arr.dtype.str[:3] + f"[{to}]") if to != unit else arr
    ints = out.view(np.int64)
    if to != unit and (out[present].astype(arr.dtype) != arr[present]).any():
        raise NotSupportedError(f"{what} values that overflow int64 {to} ticks for Arrow")
    if to == "D":  # Arrow's date32: int32 days
        if (np.abs(ints[present]) >= 2 ** 31).any():
            raise NotSupportedError(f"{what} values outside Arrow's date32 (int32 days)")
        return pa.date32(), np.where(present, ints, 0).astype(np.int32), valid
    at = pa.timestamp(to) if dated else pa.duration(to)
    return at, (ints if valid is None else np.where(present, ints, 0)), valid

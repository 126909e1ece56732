"""Arrmeta: the flat int64 records that describe where each element of a typed array lives.

See docs/layout.md for the byte layout with diagrams. In Python an arrmeta is a tuple of
ints; `encode` gives the raw bytes a C caller reads, `meta_dtype` names every field.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from lazyk import types as T
from lazyk.arrays.memory import lookup
from lazyk.errors import ArrayConstructionError, NotSupportedError

# One string element in the data: {char *begin; int64 size}.
POINTER_SIZE_DTYPE = np.dtype([("begin", np.uint64), ("size", np.int64)])

# A var dim's arrmeta (docs/layout.md):
#   {blockref, width, stop_delta, content, index_stride, stride, length}
# Its element in the data is the row's start index (`width` bytes); the stop index sits
# `stop_delta` bytes after it; row element i is at content + start * index_stride + i * stride
# (stride == index_stride except in views that step through rows).
VAR_META = 7
INDEX_DTYPES = {4: np.dtype(np.int32), 8: np.dtype(np.int64)}

VARLEN_SCALARS = frozenset({"string", "bytes"})

@dataclass(frozen=True)
class FixedWords:
    """A fixed dim's arrmeta words at index `at`: its size and byte stride."""

    at: int
    size: int
    stride: int


@dataclass(frozen=True)
class VarWords:
    """What a var dim's arrmeta words say of its rows (docs/layout.md), and for a `?var` dim
    its row mask_offset (None for `var`)."""

    width: int
    stop_delta: int
    content: int
    index_stride: int
    stride: int
    length: int
    row_mask: int | None = None


@dataclass(frozen=True, kw_only=True)
class RowsWords(VarWords):
    """A var dim's arrmeta words (`VAR_META` of them, from index `at`; `ref`: its content
    block) and for a `?var` dim its row mask_offset (the word before them)."""

    at: int
    ref: int

    @property
    def content_at(self) -> int:
        """The index of its content word (the address its rows' start indices count from)."""
        return self.at + 3

    @property
    def words(self) -> tuple:
        """The `VAR_META` words, as the arrmeta holds them."""
        return (self.ref, self.width, self.stop_delta, self.content, self.index_stride,
                self.stride, self.length)


def rows_at(meta: tuple, at: int, row_mask: int | None = None) -> RowsWords:
    """The var dim whose words start at index `at` of `meta`."""
    return RowsWords(*meta[at + 1:at + VAR_META], row_mask, at=at, ref=meta[at])


def dims_words(t: T.Type, meta: tuple) -> tuple[list, T.Type, int]:
    """The fixed, var and `?var` dims of `t` (outermost first) as their arrmeta words
    (`FixedWords`, `RowsWords`), the element type under them, and the index of its first
    word: the one walk of an arrmeta's dims."""
    dims, k = [], 0
    while True:
        if isinstance(t, T.FixedDim):
            dims.append(FixedWords(k, meta[k], meta[k + 1]))
            k += 2
        elif isinstance(t, T.VarDim) or isinstance(t, T.Option) and isinstance(t.elem,
                                                                              T.VarDim):
            row_mask = None
            if isinstance(t, T.Option):  # ?var: the row mask_offset word first
                row_mask, t, k = meta[k], t.elem, k + 1
            dims.append(rows_at(meta, k, row_mask))
            k += VAR_META
        else:
            return dims, t, k
        t = t.elem


def is_varlen(t: T.Type) -> bool:
    """True for `string`/`bytes`: 16-byte {begin, size} elements into another block."""
    return isinstance(t, T.Scalar) and t.name in VARLEN_SCALARS


def fields_of(t: T.Type) -> tuple[tuple[str | int, T.Type], ...]:
    """(key, type) for each field of a record (names) or tuple (positions)."""
    if isinstance(t, T.Record):
        return t.fields
    return tuple(enumerate(t.types))


@lru_cache(maxsize=None)
def meta_len(t: T.Type) -> int:
    """Number of int64 fields in the arrmeta of `t`."""
    if isinstance(t, T.FixedDim):
        return 2 + meta_len(t.elem)
    if isinstance(t, T.VarDim):
        return VAR_META + meta_len(t.elem)
    if isinstance(t, T.Option):
        return 1 + meta_len(t.elem)
    if isinstance(t, (T.Record, T.Tuple)):
        return sum(1 + meta_len(f) for _, f in fields_of(t))
    if is_varlen(t):
        return 1
    if isinstance(t, (T.SymbolicDim, T.EllipsisDim, T.TypeVar)):
        raise NotSupportedError(f"symbolic type {t} has no concrete layout")
    return 0


def field_meta_positions(t: T.Type, at: int) -> list[int]:
    """Arrmeta index of each field's own arrmeta, for a record/tuple whose arrmeta starts at `at`."""
    k = len(fields_of(t))
    pos, out = at + k, []
    for _, f in fields_of(t):
        out.append(pos)
        pos += meta_len(f)
    return out


@lru_cache(maxsize=None)
def is_plain(t: T.Type) -> bool:
    """True when NumPy can hold `t` as is: no var dims, options or variable-size strings."""
    if isinstance(t, T.FixedDim):
        return is_plain(t.elem)
    if isinstance(t, (T.VarDim, T.Option)):
        return False
    if isinstance(t, (T.Record, T.Tuple)):
        return all(is_plain(f) for _, f in fields_of(t))
    return not is_varlen(t)


@lru_cache(maxsize=None)
def n_shadows(t: T.Type) -> int:
    """Option positions stored inline in one element of `t` (each needs its own mask shadow)."""
    if isinstance(t, T.FixedDim):
        return n_shadows(t.elem)
    if isinstance(t, T.Option):
        return 1 + n_shadows(t.elem)
    if isinstance(t, (T.Record, T.Tuple)):
        return sum(n_shadows(f) for _, f in fields_of(t))
    return 0  # a var dim's rows, and a string's bytes, live in blocks of their own


def encode(meta: tuple[int, ...]) -> bytes:
    """Raw arrmeta bytes (native int64, outermost first) as a C caller reads them."""
    return np.asarray(meta, dtype=np.int64).tobytes()


def meta_names(t: T.Type) -> list[str]:
    """One descriptive name per arrmeta field, e.g. `dim0.size`, `x.offset`, `dim1.blockref`."""
    names: list[str] = []
    _names(t, "", 0, names)
    return names


def _names(t: T.Type, prefix: str, dim: int, out: list[str]) -> None:
    if isinstance(t, T.FixedDim):
        out += [f"{prefix}dim{dim}.size", f"{prefix}dim{dim}.stride"]
        _names(t.elem, prefix, dim + 1, out)
    elif isinstance(t, T.VarDim):
        out += [f"{prefix}dim{dim}.{f}" for f in
                ("blockref", "width", "stop_delta", "content", "index_stride", "stride",
                 "length")]
        _names(t.elem, prefix, dim + 1, out)
    elif isinstance(t, T.Option):
        out.append(f"{prefix}option{dim}.mask_offset")
        _names(t.elem, prefix, dim, out)
    elif isinstance(t, (T.Record, T.Tuple)):
        keys = [str(k) for k, _ in fields_of(t)]
        out += [f"{prefix}{k}.offset" for k in keys]
        for k, (_, f) in zip(keys, fields_of(t)):
            _names(f, f"{prefix}{k}.", 0, out)
    elif is_varlen(t):
        out.append(f"{prefix}{t}.blockref")


def meta_dtype(t: T.Type) -> np.dtype:
    """Structured dtype that names each int64 arrmeta field (for `Array.arrmeta`)."""
    names = meta_names(t)
    return np.dtype({"names": names, "formats": [np.int64] * len(names)})


@lru_cache(maxsize=None)
def np_dtype(t: T.Type) -> np.dtype:
    """NumPy dtype of a plain element type (records C-aligned, as lazyk allocates them)."""
    if isinstance(t, T.FixedDim):
        return np.dtype((np_dtype(t.elem), (t.size,)))
    if isinstance(t, T.Record):
        return np.dtype({"names": list(t.names), "formats": [np_dtype(f) for f in t.types],
                         "offsets": list(t.offsets), "itemsize": t.itemsize})
    if isinstance(t, T.Tuple):
        return np.dtype({"names": [f"f{i}" for i in range(len(t.types))],
                         "formats": [np_dtype(f) for f in t.types],
                         "offsets": list(t.offsets), "itemsize": t.itemsize})
    if isinstance(t, T.FixedString) and t.encoding == "utf8":
        return np.dtype(f"S{t.size}")  # UTF-8 bytes, NUL-padded
    if isinstance(t, T.FixedString) and t.encoding == "utf16":
        raise NotSupportedError(f"lazyk arrays do not hold {t} (the type describes memory "
                                "only): use fixed_string[N] (utf8), fixed_string[N, 'utf32'] "
                                "or string")
    return t.to_numpy()


def meta_from_numpy(dt: np.dtype, shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple:
    """Arrmeta of a NumPy array: {size, stride} per dim, then record offsets (any packing)."""
    out: list[int] = []
    for n, s in zip(shape, strides):
        out += (n, s)
    _dtype_meta(dt, out)
    return tuple(out)


def _dtype_meta(dt: np.dtype, out: list[int]) -> None:
    if dt.subdtype is not None:
        base, sub = dt.subdtype
        strides = []
        step = base.itemsize
        for n in reversed(sub):
            strides.append(step)
            step *= n
        for n, s in zip(sub, reversed(strides)):
            out += (n, s)
        _dtype_meta(base, out)
    elif dt.fields is not None:
        out += [dt.fields[n][1] for n in dt.names]
        for n in dt.names:
            _dtype_meta(dt.fields[n][0], out)


def fixed_shape(t: T.Type, meta: tuple) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Sizes and strides of the leading fixed dims of `t`."""
    shape, strides, i = [], [], 0
    while isinstance(t, T.FixedDim):
        shape.append(meta[i])
        strides.append(meta[i + 1])
        t, i = t.elem, i + 2
    return tuple(shape), tuple(strides)


def meta_np_dtype(t: T.Type, meta: tuple) -> np.dtype:
    """NumPy dtype of a plain element type whose record offsets come from arrmeta."""
    if isinstance(t, (T.Record, T.Tuple)):
        fields = fields_of(t)
        pos = field_meta_positions(t, 0)
        names = [str(k) if isinstance(t, T.Record) else f"f{k}" for k, _ in fields]
        formats = [meta_np_dtype(f, meta[p:]) for (_, f), p in zip(fields, pos)]
        offsets = list(meta[:len(fields)])
        size = max([o + f.itemsize for o, f in zip(offsets, formats)] + [0])
        return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                         "itemsize": size})
    if isinstance(t, T.FixedDim):
        # A fixed dim inside a record: NumPy subarrays are C-contiguous.
        if meta[1] != np_dtype(t.elem).itemsize:
            raise NotSupportedError(f"strided fixed dim inside a record field ({t})")
        elem = meta_np_dtype(t.elem, meta[2:])
        if elem.fields is not None and elem.itemsize < meta[1]:  # records' tail padding:
            elem = np.dtype({"names": elem.names,  # (NumPy's subarray steps by itemsize)
                             "formats": [elem.fields[n][0] for n in elem.names],
                             "offsets": [elem.fields[n][1] for n in elem.names],
                             "itemsize": meta[1]})
        if not elem.itemsize:  # (`1 * 0 * T`: NumPy has no subarray of empty subarrays)
            raise NotSupportedError(f"a record field of fixed dims holding no values ({t}): "
                                    "NumPy lays out no such field")
        return np.dtype((elem, (t.size,)))
    return np_dtype(t)


@lru_cache(maxsize=1024)
def orderless_native(dt: np.dtype) -> np.dtype:
    """`dt` with its elements of types that carry no byte order (fixed_string, date, time,
    timedelta: kinds U, m, M) in the machine's order, inside records and sub-arrays too."""
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        return np.dtype((orderless_native(base), shape))
    if dt.fields is not None:
        return np.dtype({"names": list(dt.names), "offsets": [dt.fields[n][1] for n in dt.names],
                         "formats": [orderless_native(dt.fields[n][0]) for n in dt.names],
                         "itemsize": dt.itemsize})
    return dt.newbyteorder("=") if dt.kind in "UmM" else dt


def type_from_numpy(dt: np.dtype) -> T.Type:
    """lazyk element type of a NumPy dtype; records of any packing (offsets go in arrmeta)."""
    if dt.subdtype is not None:
        base, sub = dt.subdtype
        t = type_from_numpy(base)
        for n in reversed(sub):
            t = T.FixedDim(n, t)
        return t
    if dt.fields is not None:
        return T.Record(tuple((n, type_from_numpy(dt.fields[n][0])) for n in dt.names))
    if dt.kind == "O":
        raise NotSupportedError("NumPy object arrays have no lazyk type; pass a list instead")
    return T.from_numpy(dt)


# ---------------------------------------------------------------- reading data through arrmeta
def gather(buf: np.ndarray, offs: np.ndarray, k: int) -> np.ndarray:
    """Bytes [offs[i], offs[i] + k) of `buf` as a (len(offs), k) uint8 array (bounds-checked)."""
    n = len(offs)
    if n == 0 or k == 0:
        return np.zeros((n, k), np.uint8)
    lo, hi = int(offs.min()), int(offs.max()) + k
    if lo < 0 or hi > len(buf):
        raise ValueError(f"arrmeta points outside its memory block ({lo}..{hi} of {len(buf)})")
    step = int(offs[1] - offs[0]) if n > 1 else k
    if step >= k and int(offs[0]) + step * (n - 1) == int(offs[-1]) and \
            (n < 3 or bool(np.all(np.diff(offs) == step))):
        # Evenly spaced (the common case): one strided copy instead of a fancy index.
        start = int(offs[0])
        return np.lib.stride_tricks.as_strided(buf[start:], (n, k), (step, 1)).copy()
    return buf[offs[:, None] + np.arange(k)]


def scatter(buf: np.ndarray, offs: np.ndarray, raw: np.ndarray) -> None:
    """Write row i of the uint8 array `raw` at byte offset offs[i] of `buf` (bounds-checked)."""
    n, k = raw.shape
    if n == 0 or k == 0:
        return
    lo, hi = int(offs.min()), int(offs.max()) + k
    if lo < 0 or hi > len(buf):
        raise ValueError(f"arrmeta points outside its memory block ({lo}..{hi} of {len(buf)})")
    step = int(offs[1] - offs[0]) if n > 1 else k
    if step >= k and int(offs[0]) + step * (n - 1) == int(offs[-1]) and \
            (n < 3 or bool(np.all(np.diff(offs) == step))):
        start = int(offs[0])
        np.lib.stride_tricks.as_strided(buf[start:], (n, k), (step, 1))[...] = raw
        return
    buf[offs[:, None] + np.arange(k)] = raw


def read_pairs(buf: np.ndarray, offs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The {begin, size} string elements at `offs`, as two int64 arrays."""
    raw = gather(buf, offs, 16).view(POINTER_SIZE_DTYPE).reshape(len(offs))
    return raw["begin"].astype(np.int64), raw["size"].astype(np.int64)


def read_rows(buf: np.ndarray, offs: np.ndarray, width: int,
              stop_delta: int) -> tuple[np.ndarray, np.ndarray]:
    """(start, stop) int64 indices of the var rows whose elements sit at `offs` of `buf`."""
    dt = INDEX_DTYPES.get(width)
    if dt is None:
        raise ValueError(f"var arrmeta: index width {width} (4 or 8 bytes)")
    n = len(offs)
    starts = gather(buf, offs, width).view(dt).reshape(n).astype(np.int64, copy=False)
    stops = gather(buf, offs + stop_delta, width).view(dt).reshape(n).astype(np.int64,
                                                                             copy=False)
    return starts, stops


def check_rows(starts: np.ndarray, stops: np.ndarray, rows: VarWords) -> None:
    """ArrayConstructionError (a ValueError) naming the first row that reaches outside the
    content of the var dim `rows` (vectorized).

    Every reader of var rows calls this (or `lazyk.runtime.rows`' equivalent) on the indices it
    read, before any address is computed: offsets wrapped in O(1) (`from_offsets`), changed
    in place later, or hand-made arrmeta (`Array.from_parts`) never give an out-of-bounds read.
    """
    if not len(starts):
        return
    istride, stride, length = rows.index_stride, rows.stride, rows.length
    n = stops - starts
    if stride == istride:
        # Three reductions (no temporaries) in the common case; the mask only on failure.
        if starts.min() >= 0 and n.min() >= 0 and stops.max() <= length:
            return
        bad = (starts < 0) | (n < 0) | (stops > length)
    else:
        # A stepping view: its first and last elements lie inside the content.
        bad = (starts < 0) | (n < 0)
        lo, hi = sorted((0, (length - 1) * istride))
        first = starts * istride
        last = first + (n - 1) * stride
        bad |= (n > 0) & ((first < lo) | (first > hi) | (last < lo) | (last > hi))
    if bad.any():
        i = int(np.argmax(bad))
        raise ArrayConstructionError(
            f"var row {i}: start {int(starts[i])}, stop {int(stops[i])} are outside the "
            f"content (0 <= start <= stop <= {length}): the row's offsets (indices) "
            "decrease or reach past the content")


def var_rows(meta: tuple, at: int, buf: np.ndarray, offs: np.ndarray):
    """(content block, byte offset of each row's element 0 in it, row sizes, stride)."""
    rows = rows_at(meta, at)
    starts, stops = read_rows(buf, offs, rows.width, rows.stop_delta)
    check_rows(starts, stops, rows)
    block = lookup(rows.ref)
    return block, rows.content - block.address + starts * rows.index_stride, stops - starts, \
        rows.stride


def row_offsets(starts: np.ndarray, sizes: np.ndarray, stride: int) -> np.ndarray:
    """Flat byte offsets of every element of rows that start at `starts` with `sizes` elements."""
    total = int(sizes.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    first = np.cumsum(sizes) - sizes
    local = np.arange(total, dtype=np.int64) - np.repeat(first, sizes)
    return np.repeat(starts, sizes) + local * stride


def split(values: list, sizes) -> list[list]:
    """Cut a flat list into consecutive rows of the given sizes."""
    out, pos = [], 0
    for n in sizes:
        out.append(values[pos:pos + n])
        pos += n
    return out


def read(t: T.Type, meta: tuple, at: int, buf: np.ndarray, offs: np.ndarray) -> list:
    """Python values of the elements of type `t` at byte offsets `offs` of `buf`.

    `meta[at:]` is t's arrmeta; var rows and strings are found through their blockref.
    """
    n = len(offs)
    if isinstance(t, T.FixedDim):
        size, stride = meta[at], meta[at + 1]
        child = (offs[:, None] + np.arange(size, dtype=np.int64) * stride).reshape(-1)
        flat = read(t.elem, meta, at + 2, buf, child)
        return [flat[i * size:(i + 1) * size] for i in range(n)]
    if isinstance(t, T.VarDim):
        block, first, sizes, stride = var_rows(meta, at, buf, offs)
        child = row_offsets(first, sizes, stride)
        flat = read(t.elem, meta, at + VAR_META, block.buffer, child)
        return split(flat, sizes.tolist())
    if isinstance(t, T.Option):
        mask = gather(buf, offs + meta[at], 1).reshape(n).astype(bool)
        present = read(t.elem, meta, at + 1, buf, offs[mask])
        out: list = [None] * n
        for i, v in zip(np.flatnonzero(mask).tolist(), present):
            out[i] = v
        return out
    if isinstance(t, (T.Record, T.Tuple)):
        keys = [k for k, _ in fields_of(t)]
        cols = [read(f, meta, pos, buf, offs + meta[at + i])
                for i, ((_, f), pos) in enumerate(zip(fields_of(t), field_meta_positions(t, at)))]
        if isinstance(t, T.Tuple):
            return [tuple(row) for row in zip(*cols)] if cols else [()] * n
        return [dict(zip(keys, row)) for row in zip(*cols)] if cols else [{}] * n
    if is_varlen(t):
        begins, sizes = read_pairs(buf, offs)
        pieces: list = [b""] * n
        for block, where, starts in _string_spans(begins, sizes, meta[at]):
            data = block.buffer.tobytes()
            for i, s0, k in zip(where.tolist(), starts.tolist(), sizes[where].tolist()):
                pieces[i] = data[s0:s0 + k]
        if t.name == "string":
            return [_utf8(p, i) for i, p in enumerate(pieces)]
        return pieces
    dt = np_dtype(t)
    vals = gather(buf, offs, dt.itemsize).view(dt).reshape(n)
    if isinstance(t, T.FixedString) and dt.kind == "S":
        return [_text(b, t) for b in vals.tolist()]
    if t == T.Scalar("time"):  # microseconds since midnight, as Python times
        return [None if v is None else _time_of_day(v, t) for v in vals.tolist()]
    return vals.tolist()


def _string_spans(begins: np.ndarray, sizes: np.ndarray, ref: int) -> list:
    """(block, element indices, byte starts in it) of the {begin, size} strings that are not
    empty, found in the blockref'd block or the blocks later assignments appended to its
    `keep`; ValueError for a string outside all of them."""
    if (sizes < 0).any():
        i = int(np.flatnonzero(sizes < 0)[0])
        raise ValueError(f"string {i} has a negative size ({int(sizes[i])})")
    todo, spans = sizes != 0, []  # (an empty string reads nothing: any begin, a missing one's)
    for block in string_blocks(lookup(ref)):
        if not todo.any():
            break
        starts = begins - block.address
        inside = todo & (starts >= 0) & (starts + sizes <= block.size)
        if inside.any():
            spans.append((block, np.flatnonzero(inside), starts[inside]))
        todo &= ~inside
    if todo.any():
        i = int(np.flatnonzero(todo)[0])
        raise ValueError(f"string {i} ({int(sizes[i])} bytes at {int(begins[i]):#x}) points "
                         "outside its memory blocks")
    return spans


def check_strings(t: T.Type, meta: tuple, at: int, buf: np.ndarray, offs: np.ndarray) -> None:
    """ValueError unless every string of the elements of type `t` at byte offsets `offs` of
    `buf` lies inside its memory blocks (`read`'s walk, reading no text)."""
    if isinstance(t, T.FixedDim):
        size, stride = meta[at], meta[at + 1]
        check_strings(t.elem, meta, at + 2, buf,
                      (offs[:, None] + np.arange(size, dtype=np.int64) * stride).reshape(-1))
    elif isinstance(t, T.VarDim):
        block, first, sizes, stride = var_rows(meta, at, buf, offs)
        check_strings(t.elem, meta, at + VAR_META, block.buffer, row_offsets(first, sizes, stride))
    elif isinstance(t, T.Option):
        check_strings(t.elem, meta, at + 1, buf,
                      offs[gather(buf, offs + meta[at], 1).reshape(len(offs)).astype(bool)])
    elif isinstance(t, (T.Record, T.Tuple)):
        for i, ((_, f), pos) in enumerate(zip(fields_of(t), field_meta_positions(t, at))):
            check_strings(f, meta, pos, buf, offs + meta[at + i])
    elif is_varlen(t):
        _string_spans(*read_pairs(buf, offs), meta[at])


def has_strings(t: T.Type) -> bool:
    """True when `t` holds `string` or `bytes` elements at any depth."""
    if isinstance(t, (T.Record, T.Tuple)):
        return any(has_strings(f) for _, f in fields_of(t))
    return has_strings(t.elem) if isinstance(t, (T.FixedDim, T.VarDim, T.Option)) else \
        is_varlen(t)


def _time_of_day(v: datetime.timedelta, t: T.Type) -> datetime.time:
    if not datetime.timedelta(0) <= v < datetime.timedelta(days=1):
        raise ValueError(f"a {t} element ({v}) is not a time of day (0 to 24 h)")
    return (datetime.datetime.min + v).time()


def _utf8(b: bytes, i: int) -> str:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"string {i} ({b[:40]!r}) is not valid UTF-8 ({err.reason} at byte "
                         f"{err.start}): read such data as bytes") from None


def _text(b: bytes, t: T.Type) -> str:
    """A fixed_string element's text; its bytes read as UTF-8 (ASCII is a part of it), as
    the string operations read them."""
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"a {t} element ({b!r}) is not UTF-8 text: read bytes that are not "
                         f"text as fixed_bytes[{t.size}] (NumPy: a.view('V{t.size}'))") from None


def string_blocks(block) -> list:
    """A string block and the blocks holding strings assigned later (the blocks in its
    `keep`; a block over foreign memory also keeps that memory's owner there)."""
    return [block] + [b for b in block.keep or [] if hasattr(b, "buffer")]











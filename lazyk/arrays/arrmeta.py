"""Arrmeta: the flat int64 records that describe where each element of a typed array lives.

See docs/layout.md for the byte layout with diagrams. In Python an arrmeta is a tuple of
ints; `encode` gives the raw bytes a C caller reads, `meta_dtype` names every field.
"""
from __future__ import annotations

import datetime
from functools import lru_cache

import numpy as np

from lazyk import types as T
from lazyk.arrays.indexpath import Subset, Where
from lazyk.arrays.memory import MemoryBlock, lookup
from lazyk.errors import ArrayConstructionError, NotSupportedError, ShapeError

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


def meta_names(t: T.Type, prefix: str = "") -> list[str]:
    """One descriptive name per arrmeta field, e.g. `dim0.size`, `x.offset`, `dim1.blockref`."""
    names: list[str] = []
    _names(t, prefix, 0, names)
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


def contiguous_meta(t: T.Type, stride: int | None = None) -> tuple[int, ...]:
    """C-order arrmeta for a plain (NumPy-representable) type laid out by `np_dtype`."""
    out: list[int] = []
    while isinstance(t, T.FixedDim):
        out.append(t.size)
        out.append(_plain_size(t.elem))
        t = t.elem
    if isinstance(t, (T.Record, T.Tuple)):
        dt = np_dtype(t)
        out += [dt.fields[n][1] for n in dt.names]
        for _, f in fields_of(t):
            out += contiguous_meta(f)
    return tuple(out)


def _plain_size(t: T.Type) -> int:
    return np_dtype(t).itemsize if not isinstance(t, T.FixedDim) else t.size * _plain_size(t.elem)


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
        if meta[1] != _plain_size(t.elem):
            raise NotSupportedError(f"strided fixed dim inside a record field ({t})")
        return np.dtype((meta_np_dtype(t.elem, meta[2:]), (t.size,)))
    return np_dtype(t)


@lru_cache(maxsize=1024)
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
    starts = gather(buf, offs, width).view(dt).reshape(n).astype(np.int64)
    stops = gather(buf, offs + stop_delta, width).view(dt).reshape(n).astype(np.int64)
    return starts, stops


def check_rows(starts: np.ndarray, stops: np.ndarray, var_meta: tuple) -> None:
    """ArrayConstructionError (a ValueError) naming the first row that reaches outside the
    var dim's content (vectorized).

    Every reader of var rows calls this (or `lazyk.runtime.rows`' equivalent) on the indices it
    read, before any address is computed: offsets wrapped in O(1) (`from_offsets`), changed
    in place later, or hand-made arrmeta (`Array.from_parts`) never give an out-of-bounds read.
    """
    if not len(starts):
        return
    _, _, _, _, istride, stride, length = var_meta
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
    var_meta = tuple(meta[at:at + VAR_META])
    ref, width, stop_delta, content, istride, stride, _ = var_meta
    starts, stops = read_rows(buf, offs, width, stop_delta)
    check_rows(starts, stops, var_meta)
    block = lookup(ref)
    return block, content - block.address + starts * istride, stops - starts, stride


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
        pieces: list = [None] * n
        todo = np.ones(n, bool)
        # The blockref'd block, then the blocks later assignments appended to its `keep`.
        for block in string_blocks(lookup(meta[at])):
            if not todo.any():
                break
            starts = begins - block.address
            inside = todo & (starts >= 0) & (starts + sizes <= block.size)
            if inside.any():
                data = block.buffer.tobytes()
                for i, s0, k in zip(np.flatnonzero(inside).tolist(), starts[inside].tolist(),
                                    sizes[inside].tolist()):
                    pieces[i] = data[s0:s0 + k]
            todo &= ~inside
        if todo.any():
            raise ValueError("string data points outside its memory blocks")
        if t.name == "string":
            return [p.decode("utf-8") for p in pieces]
        return pieces
    dt = np_dtype(t)
    vals = gather(buf, offs, dt.itemsize).view(dt).reshape(n)
    if isinstance(t, T.FixedString) and dt.kind == "S":
        return [_text(b, t) for b in vals.tolist()]
    if t == T.Scalar("time"):  # microseconds since midnight, as Python times
        return [None if v is None else _time_of_day(v, t) for v in vals.tolist()]
    return vals.tolist()


def _time_of_day(v: datetime.timedelta, t: T.Type) -> datetime.time:
    if not datetime.timedelta(0) <= v < datetime.timedelta(days=1):
        raise ValueError(f"a {t} element ({v}) is not a time of day (0 to 24 h)")
    return (datetime.datetime.min + v).time()


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


# ---------------------------------------------------------------- re-slicing rows
def slice_rows(sizes: np.ndarray, item: slice) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised `slice.indices` over rows of `sizes`: (first index, count) per row."""
    step = 1 if item.step is None else int(item.step)
    if step == 0:
        raise ValueError("slice step cannot be zero")
    lo, hi = (0, sizes) if step > 0 else (-1, sizes - 1)

    def clamp(v: int | None, default: np.ndarray) -> np.ndarray:
        if v is None:
            return np.broadcast_to(default, sizes.shape).astype(np.int64)
        v = int(v)
        return np.clip(v + sizes, lo, hi) if v < 0 else np.minimum(v, hi)

    start = clamp(item.start, 0 if step > 0 else sizes - 1)
    stop = clamp(item.stop, sizes if step > 0 else -1)
    span = stop - start if step > 0 else start - stop
    count = np.maximum(0, (span + abs(step) - 1) // abs(step))
    return start, count


def reslice_rows(buf: np.ndarray, cur: int, kept: list, item: slice, var_meta: tuple,
                 owner: object):
    """(block of {start, stop} int64 pairs, C order over the kept fixed dims, new var arrmeta)
    for the rows `item` selects; the content is not touched (a step becomes the stride).

    `kept` is the kept dims' arrmeta ({size, stride} pairs); their strides are rewritten.
    """
    step = 1 if item.step is None else int(item.step)
    ref, width, stop_delta, content, istride, stride, length = var_meta
    offs = np.array([cur], np.int64)
    for k in range(0, len(kept), 2):
        offs = (offs[:, None] + np.arange(kept[k], dtype=np.int64) * kept[k + 1]).reshape(-1)
    starts, stops = read_rows(buf, offs, width, stop_delta)
    check_rows(starts, stops, var_meta)
    if stride != istride:  # already a stepping view: index units are not row positions
        return None
    first, count = slice_rows(stops - starts, item)
    new = np.where(count > 0, starts + first, 0)
    pairs = np.stack([new, new + count], axis=1).astype(np.int64)
    head = MemoryBlock(16 * max(len(offs), 1), keep=[owner])
    head.buffer[:16 * len(offs)] = pairs.reshape(-1).view(np.uint8)
    step_bytes = 16
    for k in range(len(kept) - 2, -1, -2):  # the kept dims become C-contiguous over the pairs
        kept[k + 1] = step_bytes
        step_bytes *= kept[k]
    return head, (ref, 8, 8, content, istride, stride * step, length)


def index_type(t: T.Type, dims: list) -> T.Type:
    """Type of `dims` applied to `t` by the copying path (a consumed `?var` gives options)."""
    if not dims:
        return t
    item, rest = dims[0], dims[1:]
    if item is None:
        return T.FixedDim(1, index_type(t, rest))
    opt = isinstance(t, T.Option)
    t = t.elem if opt else t
    elem = index_type(t.elem, rest)
    if isinstance(item, int):
        return T.Option(elem) if opt and not isinstance(elem, T.Option) else elem
    if isinstance(t, T.FixedDim):
        out: T.Type = T.FixedDim(len(range(*item.indices(t.size))), elem)
    else:
        out = T.VarDim(elem)
    return T.Option(out) if opt else out


def index_values(v: object, t: T.Type, dims: list, path: list) -> object:
    """Python-level `dims` applied to nested lists `v` (rows too short raise IndexError)."""
    if not dims:
        return v
    item, rest = dims[0], dims[1:]
    if item is None:
        return [index_values(v, t, rest, path)]
    if isinstance(t, T.Option):
        if v is None:
            return None
        t = t.elem
    if isinstance(item, int):
        i = item + len(v) if item < 0 else item
        if not 0 <= i < len(v):
            where = "row " + ", ".join(map(str, path)) if path else "the array"
            raise IndexError(f"index {item} is out of bounds: {where} has {len(v)} elements")
        return index_values(v[i], t.elem, rest, path + [i])
    return [index_values(v[i], t.elem, rest, path + [i]) for i in range(*item.indices(len(v)))]


# ---------------------------------------------------------------- assignment with broadcasting
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
    if isinstance(st, T.Option):
        mask = gather(sbuf, soffs + smeta[sat], 1).reshape(-1).astype(bool)
        if not isinstance(dt, T.Option) and not mask.all():
            k = int(np.flatnonzero(~mask)[0])
            raise ValueError(f"missing value at {where.name(k)} cannot be stored in '{dt}'")
        if isinstance(dt, T.Option):
            scatter(dbuf, doffs + dmeta[dat], mask.astype(np.uint8).reshape(-1, 1))
            dt, dat = dt.elem, dat + 1
        return assign(dt, dmeta, dat, dbuf, doffs[mask], st.elem, smeta, sat + 1, sbuf,
                      soffs[mask], _subset(where, mask))
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


def _subset(where, mask: np.ndarray) -> Subset:
    return Subset(where, np.flatnonzero(mask))

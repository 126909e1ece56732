"""Ragged arrays from and to offsets, Arrow and Awkward, over the same buffers.

A var dim's rows are read through index pairs (docs/layout.md), so an offsets array IS a
var dim: `from_offsets` checks the offsets once (vectorized) and wraps them and the content
without copying. pyarrow and awkward are optional (`pip install 'lazyk[ragged]'`) and are
imported only inside the functions that need them.
"""
from __future__ import annotations

import builtins
import re
from typing import Any

import numpy as np

from lazyk import types as T
from lazyk.arrays import arrmeta as M
from lazyk.arrays import memory
from lazyk.arrays import restructure as R
from lazyk.arrays.array import Array, array, bool_mask, masked, use_field_copy
from lazyk.errors import ArrayConstructionError, NotSupportedError

_EXTRA = "pip install 'lazyk[ragged]'"


def _need(name: str):
    try:
        return __import__(name)
    except ImportError:
        raise ImportError(f"{name} is needed for this conversion: {_EXTRA}") from None


# ---------------------------------------------------------------- building blocks
def _content(content: Any) -> Array:
    """The content as a lazyk array with a leading fixed dim (NumPy arrays are viewed)."""
    if not isinstance(content, Array):
        try:
            raw = np.asarray(content)
        except ValueError:  # ragged lists
            raw = np.empty(0, object)
        if raw.dtype == object:  # anything NumPy cannot give a dtype: named at once
            what = "an object-dtype NumPy array (Python objects have no lazyk element type: " \
                "give numbers or fixed-width strings)" if isinstance(content, np.ndarray) else \
                f"{type(content).__module__}.{type(content).__qualname__} (ragged lists: lazyk.array)"
            raise TypeError(f"from_offsets takes content as a NumPy array or a lazyk array, "
                            f"not {what}")
        content = array(raw)
    c = content
    if not isinstance(c.type, T.FixedDim):
        raise ArrayConstructionError(f"the content needs a leading fixed dimension (N * ...), "
                                     f"not '{c.type}'")
    if isinstance(c.type.dtype, T.FixedString) and isinstance(c.owner, np.ndarray):
        raw = c.to_numpy()  # fixed_string has no byte order: big-endian UTF-32 is swapped
        if raw.dtype.kind == "U" and not raw.dtype.isnative:
            c = array(raw.astype(raw.dtype.newbyteorder("=")))
    return c


def _content_block(c: Array) -> memory.MemoryBlock:
    """The block holding the content's elements (NumPy data gets a block over its bytes)."""
    if isinstance(c.owner, memory.MemoryBlock):
        return c.owner
    return memory.foreign(c.to_numpy())


def _var_meta(c: Array, block: memory.MemoryBlock, width: int, stop_delta: int) -> tuple:
    """Arrmeta of a var dim over the content `c` (its leading dim), then c's element arrmeta."""
    length, stride = c.meta[0], c.meta[1]
    return (block.ref, width, stop_delta, c.ptr, stride, stride, length) + tuple(c.meta[2:])


def check_offsets(offsets: np.ndarray, length: int, full: bool = True) -> None:
    """ArrayConstructionError naming the first bad entry: negative, decreasing or past the
    content. `full=False` checks the shape and the two ends only (O(1)): readers check
    every row they read (`0 <= start <= stop <= length`) before forming an address."""
    if offsets.ndim != 1 or len(offsets) < 1:
        raise ArrayConstructionError(f"offsets must be 1-d with n + 1 entries for n rows "
                                     f"(shape {offsets.shape})")
    if offsets[0] < 0:
        raise ArrayConstructionError(f"offsets[0] = {int(offsets[0])} is negative")
    if not full:
        if offsets[-1] > length:
            raise ArrayConstructionError(
                f"offsets[{len(offsets) - 1}] = {int(offsets[-1])} is past the end of the "
                f"content ({length} elements)")
        return
    down = offsets[1:] < offsets[:-1]
    if down.any():
        i = int(np.argmax(down)) + 1
        raise ArrayConstructionError(
            f"offsets[{i}] = {int(offsets[i])} is less than offsets[{i - 1}] = "
            f"{int(offsets[i - 1])}: offsets must be non-decreasing")
    if offsets[-1] > length:
        i = int(np.argmax(offsets > length))
        raise ArrayConstructionError(f"offsets[{i}] = {int(offsets[i])} is past the end of the "
                                     f"content ({length} elements)")


def _as_offsets(offsets: Any) -> np.ndarray:
    o = np.asarray(offsets)
    if o.dtype.kind not in "iu" or o.dtype.itemsize not in (4, 8) or o.dtype.kind == "u":
        raise ArrayConstructionError(f"offsets must be int32 or int64, not {o.dtype}")
    if not o.dtype.isnative:
        o = o.astype(o.dtype.newbyteorder("="))
    return np.ascontiguousarray(o)  # a copy only for strided offsets


def offsets_array(offsets: np.ndarray, content: Array, validity: Any = None,
                  outer: tuple | None = None, check: bool | None = False) -> Array:
    """`N * var * X` (or `N * ?var * X`) over int32/int64 `offsets` and the content `L * X`.

    `outer` splits the N rows into several fixed dims (C order); `()` gives one `var * X`
    row. The offsets are used in place unless `validity` needs a mask next to them.
    `check`: True checks every offset now; False the shape and both ends (O(1): every
    reader checks the rows it reads); None nothing (offsets lazyk computed itself).
    """
    c = _content(content)
    w = offsets.dtype.itemsize
    if check is not None:
        check_offsets(offsets, c.meta[0], full=check)
    n = len(offsets) - 1
    cblock = _content_block(c)
    readonly = c.readonly or not offsets.flags.writeable
    head = _var_meta(c, cblock, w, w)
    elem: T.Type = T.VarDim(c.type.elem)
    if validity is None:
        block = memory.foreign(offsets, keep=[cblock])
        mask_meta: tuple = ()
    else:  # the mask byte of row i sits mask_offset bytes after its start index
        valid = bool_mask(validity, "validity")
        if valid.shape != (n,):
            raise ArrayConstructionError(f"validity needs one entry per row ({n}), "
                                         f"not shape {valid.shape}")
        mask_offset = -(-(n + 1) * w // 8) * 8
        block = memory.MemoryBlock(mask_offset + n * w, keep=[cblock])
        block.buffer[:(n + 1) * w] = offsets.view(np.uint8)
        block.buffer[mask_offset:mask_offset + n * w].reshape(n, w)[:, 0] = valid
        mask_meta, elem = (mask_offset,), T.Option(elem)
    dims = (n,) if outer is None else tuple(outer)
    lead: list[int] = []
    step = w
    for size in reversed(dims):
        lead[:0] = [size, step]
        step *= size
    t = elem
    for size in reversed(dims):
        t = T.FixedDim(size, t)
    meta = tuple(lead) + mask_meta + head
    # The block is exactly the offsets (and mask): no extent check needed.
    return Array._from_parts(t, meta, block.address, block, readonly)


def pairs_array(starts: np.ndarray, stops: np.ndarray, content: Any) -> Array:
    """`N * var * X` from separate start and stop indices (Awkward's ListArray): the pairs are
    copied into one {start, stop} block (O(N)), the content is not."""
    c = _content(content)
    starts = np.asarray(starts, dtype=np.int64)
    stops = np.asarray(stops, dtype=np.int64)
    if starts.shape != stops.shape or starts.ndim != 1:
        raise ArrayConstructionError("starts and stops must be 1-d and of one length")
    bad = (starts < 0) | (stops < starts) | (stops > c.meta[0])
    if bad.any():
        i = int(np.argmax(bad))
        raise ArrayConstructionError(f"row {i}: starts/stops {int(starts[i])}..{int(stops[i])} "
                                     f"are outside the content ({c.meta[0]} elements)")
    cblock = _content_block(c)
    block = memory.MemoryBlock(16 * len(starts), keep=[cblock])
    block.buffer.view(np.int64).reshape(-1, 2)[:] = np.stack([starts, stops], axis=1)
    t = T.FixedDim(len(starts), T.VarDim(c.type.elem))
    meta = (len(starts), 16) + _var_meta(c, cblock, 8, 8)
    return Array.from_parts(t, meta, block.address, block, c.readonly)


def regular(c: Array, size: int, rows: int | None = None) -> Array:
    """`M * X` viewed as `M/size * size * X` (no copy; the leading dim must be one stride);
    `rows`: how many rows of size 0 (their count is not in `c`)."""
    n, stride = c.meta[0], c.meta[1]
    if size == 0 and rows is not None and n == 0:
        rows = int(rows)
    elif size <= 0 or n % size:
        raise ArrayConstructionError(f"{n} elements do not split into rows of {size}")
    else:
        rows = n // size
    t = T.FixedDim(rows, T.FixedDim(size, c.type.elem))
    meta = (rows, size * stride, size, stride) + tuple(c.meta[2:])
    owner = c.owner if isinstance(c.owner, memory.MemoryBlock) else c.to_numpy()
    return Array.from_parts(t, meta, c.ptr, owner, c.readonly)


def build_rows(values: np.ndarray, mask: np.ndarray | None, outer: tuple, last: Any,
               lengths: np.ndarray | None = None) -> Array:
    """A result array from flat values (and a present mask) without Python lists: `outer`
    fixed dims, then `last` ("var" with per-row `lengths`, a fixed size, or None)."""
    if last == "var":
        offsets = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        content = array(values) if mask is None else masked(values, mask)
        return offsets_array(offsets, content, outer=tuple(outer), check=None)
    shape = tuple(outer) + (() if last is None else (int(last),))
    if mask is None:
        return array(np.asarray(values, order="C").reshape(shape))
    return masked(np.asarray(values).reshape(shape), np.asarray(mask).reshape(shape))


# ---------------------------------------------------------------- public constructors
def text_array(offsets: np.ndarray, chars: np.ndarray, valid: np.ndarray | None = None,
               kind: str = "string") -> Array:
    """`N * string` (or `bytes`; `?` where `valid` says) whose strings are the byte ranges
    [offsets[i], offsets[i + 1]) of `chars` (uint8), which is not copied: the `{begin, size}`
    elements are built (16 bytes each, vectorized), the characters stay where they are.
    ArrayConstructionError for offsets that decrease or leave `chars`."""
    offsets = np.asarray(offsets)
    n = len(offsets) - 1
    if offsets.ndim != 1 or n < 0 or offsets.dtype.kind not in "iu":
        raise ArrayConstructionError("string offsets must be a 1-d integer array of n + 1 "
                                     "entries")
    offsets = offsets.astype(np.int64, copy=False)
    chars = np.ascontiguousarray(chars).view(np.uint8).reshape(-1)
    if n:
        steps = np.diff(offsets)
        if offsets[0] < 0 or offsets[-1] > len(chars) or (steps < 0).any():
            i = int(np.argmax(steps < 0)) if (steps < 0).any() else 0
            raise ArrayConstructionError(
                f"string {i}: offsets {int(offsets[i])}, {int(offsets[i + 1])} decrease or "
                f"leave the {len(chars)} bytes of characters")
    text = memory.foreign(chars if len(chars) else np.zeros(1, np.uint8))
    region = 16 * n
    block = memory.MemoryBlock(max(region * (1 if valid is None else 2), 16), keep=[text])
    pairs = block.buffer[:region].view(M.POINTER_SIZE_DTYPE)
    pairs["begin"] = text.address + offsets[:-1]
    pairs["size"] = offsets[1:] - offsets[:-1]
    leaf = kind
    meta: tuple = (n, 16)
    if valid is not None:  # the mask byte sits `region` bytes after each element
        block.buffer[region:2 * region:16] = np.asarray(valid, bool)[:n]
        leaf, meta = "?" + kind, meta + (region,)
    return Array.from_parts(T.dshape(f"{n} * {leaf}"), meta + (text.ref,), block.address, block)


def text_from_numpy(x: np.ndarray, kind: str | None = None) -> Array:
    """A NumPy `U` (-> `string`, UTF-8) or `S` (-> `bytes`) array as lazyk strings of its
    shape: packed with vectorized NumPy (a copy), no Python per string (ASCII text is
    narrowed in one step; other text goes through `np.char.encode`)."""
    offsets, chars = _text_buffers(x)
    kind = kind or ("string" if x.dtype.kind == "U" else "bytes")
    out = text_array(offsets, chars, None, kind)
    for size in reversed(x.shape[1:]):
        out = regular(out, size)
    return out


def _text_buffers(x: np.ndarray) -> tuple:
    """(offsets, UTF-8 characters) of the strings of a NumPy `U` or `S` array, flattened
    (`U` of either byte order is encoded; `S` bytes are taken as they are)."""
    if x.dtype.kind == "U" and not x.dtype.isnative:
        x = x.astype(x.dtype.newbyteorder("="))
    flat = np.ascontiguousarray(x).reshape(-1)
    n = len(flat)
    unit = np.uint32 if x.dtype.kind == "U" else np.uint8
    width = flat.dtype.itemsize // np.dtype(unit).itemsize
    codes = flat.view(unit).reshape(n, width)
    if x.dtype.kind == "U" and width and codes.max(initial=0) >= 128:  # UTF-8: encode
        return _text_buffers(np.char.encode(flat, "utf-8"))
    # NumPy drops trailing NULs: a string ends after its last non-zero unit
    nonzero = codes != 0
    lens = np.where(nonzero.any(axis=1), width - np.argmax(nonzero[:, ::-1], axis=1), 0) \
        if width else np.zeros(n, np.int64)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    return offsets, codes[np.arange(width) < lens[:, None]].astype(np.uint8)


def fixed_text_rows(a: Array) -> Array:
    """`a` (dims, `?var` rows and `?T` over `fixed_string[n]` or `fixed_bytes[n]`
    elements) with `string` (`bytes`) elements instead, for the string operations: the
    fixed strings are packed into UTF-8 characters and 16-byte `{begin, size}` elements (a
    copy of the elements only); fixed bytes keep their bytes in place (each value is all
    n of them); the rows' indices are used in place where they are offsets. An array with
    a fixed dim of size 0 holds no element: it is rebuilt from its (empty) rows."""
    def rebuild(col: tuple) -> Array:
        kind, child = col[0], col[-1]
        if kind == "numpy":
            if col[1].dtype.kind in "USV":
                return rebuild(_fixed_text(col[1]))
            return array(col[1])
        if kind == "text":
            return text_array(col[2], col[3], None, col[1])
        if kind == "list":
            return offsets_array(col[1], rebuild(child))
        if kind == "regular":
            return regular(rebuild(child), col[1])
        if kind == "option" and child[0] == "numpy" and child[1].dtype.kind in "USV":
            child = _fixed_text(child[1])
        if kind == "option" and child[0] == "text":
            return text_array(child[2], child[3], col[1], child[1])
        if kind == "option" and child[0] == "list":
            return offsets_array(child[1], rebuild(child[2]), col[1])
        raise NotSupportedError(f"string operations on {a.type}: fixed, var and ?var dims "
                                "over fixed_string[n], fixed_bytes[n] or an option of them")
    t = a.type
    if isinstance(t.elem if isinstance(t, T.Option) else t, T.VarDim):
        # an outermost (?)var dim: the one row of a fixed dim
        one = Array.from_parts(T.FixedDim(1, t), (1, 16) + tuple(a.meta), a.ptr, a.owner,
                               a.readonly)
        return fixed_text_rows(one)[0]
    while isinstance(t, (T.Dim, T.Option)):
        if isinstance(t, T.FixedDim) and t.size == 0:  # no element: empty rows only
            return array(a.to_list(), type=re.sub(r"fixed_(string|bytes)\[[^\]]*\]$",
                                                  r"\1", str(a.type)))
        t = t.elem
    return rebuild(_columns(a))


def _fixed_text(arr: np.ndarray, dest: str | None = None) -> tuple:
    """A column tree leaf of `fixed_string[n]` elements (NumPy `U` / `S`) as `string`
    elements (offsets, characters: a copy). lazyk reads `S` text as UTF-8 (`str_len` counts
    code points), so it becomes `string` too; NotSupportedError for bytes that are not
    UTF-8, which Arrow and Awkward strings cannot hold. `fixed_bytes[n]` (NumPy `V`)
    elements become `bytes` of all their n bytes, over the same memory when it is
    contiguous."""
    if arr.dtype.kind == "V":
        n, width = len(arr), arr.dtype.itemsize
        chars = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        return ("text", "bytes", np.arange(n + 1, dtype=np.int64) * width, chars)
    offsets, chars = _text_buffers(arr)
    if dest and arr.dtype.kind == "S" and len(chars) and chars.max() >= 128:
        inner = offsets[:-1][offsets[:-1] < len(chars)]
        try:  # valid as a whole, and no string starts inside a character: each is valid
            bytes(chars).decode("utf-8")
            ok = not ((chars[inner] & 0xC0) == 0x80).any()
        except UnicodeDecodeError:
            ok = False
        if not ok:
            raise NotSupportedError(
                f"fixed_string[{arr.dtype.itemsize}] (NumPy {arr.dtype.str}) elements that "
                f"are not UTF-8 text have no {dest} string type; convert the NumPy 'S' "
                f"data itself (pyarrow.array and awkward.Array read it as binary)")
    return ("text", "string", offsets, chars)


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
    rec = T.Tuple(tuple(c.type.elem for c in columns)) if _is_tuple(names) else \
        T.Record(tuple((name, c.type.elem) for name, c in zip(names, columns)))
    t = T.Option(rec) if valid is not None else rec
    region = n * rec.itemsize
    block = memory.MemoryBlock(max(region * (1 + _options_in(t)), 16), keep=[])

    def slot(at: int, dtype, shape=()) -> np.ndarray:  # one field of every element
        if not n:  # no elements: nothing to write (the offset may pass the block)
            return np.empty((0,) + shape, dtype)
        return np.ndarray((n,) + shape, dtype, block.buffer, at,
                          (rec.itemsize,) + _c_strides(shape, np.dtype(dtype).itemsize))
    counter = [0]
    meta: tuple = ()
    if valid is not None:
        counter[0] += 1
        slot(region, np.bool_)[:] = valid
        meta = (region,)
    meta += rec.offsets
    for ft, off, c in zip(rec.types, rec.offsets, columns):
        meta += _write_field(ft, c, block, slot, off, region, counter)
    return Array.from_parts(T.FixedDim(n, t), (n, rec.itemsize) + meta, block.address, block)


def _c_strides(shape: tuple, itemsize: int) -> tuple:
    """The strides of C-ordered `shape` (NumPy gives 0 for those of an empty array)."""
    out, step = [], itemsize
    for n in reversed(shape):
        out.append(step)
        step *= n
    return tuple(reversed(out))


def _is_tuple(names) -> bool:
    """Whether column-tree field names are the positions of a tuple (0, 1, ...)."""
    return len(names) > 0 and all(type(k) is int for k in names)


def _field_view(c: Array, k: int) -> Array:
    """Field k of `N * {...}` or `N * (...)` as a view `N * T_k` (tuples have no field
    names to index with)."""
    t = c.type.elem
    ft = t.types[k]
    at = M.field_meta_positions(t, 2)[k]
    meta = tuple(c.meta[:2]) + tuple(c.meta[at:at + M.meta_len(ft)])
    return Array.from_parts(T.FixedDim(c.type.size, ft), meta, c.ptr + c.meta[2 + k], c.owner,
                            c.readonly)


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
                                 c.owner, True)
        return (counter[0] * region,) + _write_field(t.elem, inner, block, slot, off, region,
                                                     counter)
    if isinstance(t, (T.Record, T.Tuple)):
        meta = t.offsets
        for k, (ft, at) in enumerate(zip(t.types, t.offsets)):
            meta += _write_field(ft, _field_view(c, k), block, slot, off + at, region, counter)
        return meta
    if M.is_plain(T.FixedDim(n, t)):  # numbers, bools, fixed dims of them
        values = c.to_numpy()
        slot(off, values.dtype, values.shape[1:])[:] = values
        # fixed dims: (size, stride) each, C order inside the record
        strides = _c_strides(values.shape[1:], values.dtype.itemsize)
        return tuple(x for size, step in builtins.zip(values.shape[1:], strides)
                     for x in (size, step))
    if isinstance(t, T.VarDim) and owned:
        var = c.meta[2:2 + M.VAR_META]
        w, dt = var[1], M.INDEX_DTYPES[var[1]]  # the column's index width (list, large_list)
        starts, stops = _column(c, 0, dt), _column(c, var[2], dt)
        M.check_rows(starts, stops, var)
        slot(off, dt)[:] = starts
        slot(off + w, dt)[:] = stops
        block.keep += [c.owner, memory.lookup(var[0])]  # the rows' content stays there
        return (var[0], w, w) + tuple(var[3:]) + tuple(c.meta[2 + M.VAR_META:])
    if M.is_varlen(t) and owned:
        slot(off, np.uint8, (16,))[:] = _column(c, 0, np.uint8, (16,))
        block.keep += [c.owner, memory.lookup(c.meta[2])]
        return (c.meta[2],)
    return _unsupported(t)


def from_offsets(offsets: Any, content: Any, *, validity: Any = None,
                 check: bool = False) -> Array:
    """A ragged array `N * var * T` over NumPy offsets and content, without copying either.

    Row i is `content[offsets[i]:offsets[i + 1]]`. Construction is O(1) in the number of
    rows: it checks the offsets' dtype and shape, `offsets[0] >= 0` and `offsets[-1] <=
    len(content)`. Every use that reads rows (an expression, `to_list`, a view, `to_arrow`)
    checks the rows it reads, vectorized, before touching the content: a decreasing offset
    raises ArrayConstructionError naming the row there, never an out-of-bounds read (so
    offsets changed in place after construction are caught too). `check=True` checks every
    offset now instead (non-decreasing, inside the content), for the error up front.
    `content` may itself be a ragged lazyk array (`var * var * T`).

    Args:
        offsets: int32 or int64 NumPy array of n + 1 entries for n rows.
        content: a NumPy array or a lazyk array with a leading fixed dimension
            (big-endian NumPy `U` strings are swapped to native, a copy: `fixed_string`
            has no byte order).
        validity: optional bool per row (True = present): gives `N * ?var * T` (the
            offsets are then copied next to a mask, and checked in full).
        check: check every offset at construction (O(n), vectorized).

    Raises:
        ArrayConstructionError (a ValueError): naming the first bad offset (at
            construction, or for a decreasing offset when the rows are first read).

    Example:
        >>> x = lazyk.from_offsets(np.array([0, 2, 2, 5]), np.arange(5.0))
        >>> str(x.type), x.to_list()
        ('3 * var * float64', [[0.0, 1.0], [], [2.0, 3.0, 4.0]])
        >>> y = lazyk.from_offsets(np.array([0, 1, 3], np.int32), x)
        >>> str(y.type), y.to_list()
        ('2 * var * var * float64', [[[0.0, 1.0]], [[], [2.0, 3.0, 4.0]]])
    """
    return offsets_array(_as_offsets(offsets), _content(content), validity,
                         check=bool(check or validity is not None))


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
    values, which then convert as above. Union arrays raise NotSupportedError (select one
    type first). Dates, times, timestamps and durations become `date`, `time` (microseconds
    since midnight), `datetime[unit]` and `timedelta[unit]`, all int64 as NumPy's:
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
    pa = _need("pyarrow")
    if isinstance(x, (pa.Table, pa.RecordBatch)):  # one record per row
        return records_array(list(x.column_names), [_at(f"column {k!r}", from_arrow, c)
                                                    for k, c in zip(x.column_names, x.columns)])
    if isinstance(x, pa.ChunkedArray):
        x = x.chunk(0) if x.num_chunks == 1 else x.combine_chunks()
    if not isinstance(x, pa.Array):
        raise TypeError(f"from_arrow takes a pyarrow Array, ChunkedArray, Table or "
                        f"RecordBatch, not {type(x).__name__}")
    t = x.type
    if pa.types.is_dictionary(t):  # Arrow's own decode: the values gathered (a copy)
        return from_arrow(x.dictionary_decode())
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
        return offsets_array(_as_offsets(offsets), content, valid)
    if pa.types.is_fixed_size_list(t):
        if x.null_count:
            raise NotSupportedError(f"missing rows in a fixed-size list ({t})")
        k = t.list_size
        inner = _at("list values", from_arrow, x.values.slice(x.offset * k, len(x) * k))
        return regular(inner, k) if k else array(np.zeros((len(x), 0)))
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
        return records_array([t.field(i).name for i in range(t.num_fields)],
                             [_at(f"field {t.field(i).name!r}", from_arrow, x.field(i))
                              for i in range(t.num_fields)], valid) \
            if t.num_fields else _unsupported(t)
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


def _arrow_hint(pa, t) -> str:
    """How to turn an Arrow type lazyk does not read into one it does, or ''."""
    cast = "; convert it first: pyarrow.compute.cast(col, pyarrow.{})"
    if pa.types.is_decimal(t):
        return cast.format("float64()") + " (rounds to the nearest float64)"
    if str(t) == "string_view":  # (types of newer pyarrow releases: by name)
        return cast.format("string()")
    if str(t) == "binary_view":
        return cast.format("binary()")
    if pa.types.is_null(t):
        return cast.format("float64()") + " (every value missing; any numeric type)"
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


def from_awkward(x: Any) -> Array:
    """A lazyk array over an Awkward Array's buffers.

    ListOffsetArray and NumpyArray are used in place (offsets other than int32 / int64,
    such as uint32, become an int64 copy of the offsets); RegularArray becomes a fixed dim (a
    view); strings and bytestrings become `string` / `bytes` (characters in place, 16-byte
    `{begin, size}` elements built over them); records become lazyk records (C structs: the
    fields are copied into one block, except list contents and characters); ListArray's starts and stops are copied into index pairs (the content is not);
    option types (ByteMasked, BitMasked, IndexedOption, Unmasked) become `?T` / `?var`
    through a byte mask (copied, with the values of option numbers). Tuples become lazyk
    tuples `(A, B)` (copied as records are). Unions raise NotSupportedError (select one
    type first). Data of no element type yet (`ak.Array([[]])`, `ak.Array([[None]])`) reads
    as float64, as `ak.to_numpy` does.

    Example:
        >>> import awkward as ak
        >>> lazyk.from_awkward(ak.Array([[1, 2], [], [3]])).to_list()
        [[1, 2], [], [3]]
    """
    ak = _need("awkward")
    if not isinstance(x, (ak.Array, ak.contents.Content, np.ndarray)):
        raise TypeError(f"from_awkward takes an awkward.Array (or an Awkward layout or a "
                        f"NumPy array), not {type(x).__name__}")
    layout = ak.to_layout(x)
    return _from_layout(ak, layout)


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
    if not layout.contents:
        raise NotSupportedError("Awkward records without fields")
    n = len(layout)
    # a tuple's fields are its positions: lazyk's tuple type `(A, B)`
    names = list(range(len(layout.contents))) if layout.is_tuple else list(layout.fields)
    return records_array(names, [_from_layout(ak, x[:n]) for x in layout.contents], valid)


def _from_layout(ak, layout) -> Array:
    c = ak.contents
    text = _text_layout(ak, layout)
    if text is not None:
        return text
    if isinstance(layout, c.NumpyArray):
        return array(np.asarray(layout.data))
    if isinstance(layout, c.EmptyArray):  # no element type yet: float64, as ak.to_numpy
        return array(np.zeros(0))
    if isinstance(layout, c.ListOffsetArray):
        return offsets_array(_awkward_offsets(layout.offsets),
                             _from_layout(ak, layout.content))
    if isinstance(layout, c.ListArray):
        n = len(layout)
        return pairs_array(np.asarray(layout.starts.data)[:n], np.asarray(layout.stops.data)[:n],
                           _from_layout(ak, layout.content))
    if isinstance(layout, c.RegularArray):
        inner = _from_layout(ak, layout.content[:len(layout) * layout.size])
        return regular(inner, layout.size) if layout.size else array(
            np.zeros((len(layout), 0)))
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
            return offsets_array(_awkward_offsets(inner.offsets),
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
    return _as_offsets(o)


def _union(layout):
    raise NotSupportedError(
        f"Awkward union arrays ({layout.form.type}): a lazyk array holds one type; convert "
        f"one of its types at a time (ak.Array(array.layout.project(i)) holds the elements "
        f"of type i)")


# ---------------------------------------------------------------- to Arrow / Awkward
def _as_array(x: Any, fn: str) -> Array:
    """`x` as a lazyk Array: NumPy arrays are wrapped, expressions evaluated."""
    if isinstance(x, Array):
        return x
    if isinstance(x, np.ndarray):
        return array(x)
    if hasattr(x, "eval") and hasattr(x, "node"):  # a lazyk expression
        return x.eval()
    raise TypeError(f"{fn} takes a lazyk Array, expression or NumPy array, not "
                    f"{type(x).__name__}")


def _columns(a: Array) -> tuple:
    """The array as a tree of buffers: ("numpy", ndarray) | ("option", mask, child) |
    ("list", offsets, child) | ("regular", size, child) | ("text", "string" / "bytes",
    offsets, characters) | ("record", names, [child per field]; a tuple's names are its
    positions 0, 1, ... as ints). Offsets-form var dims and lazyk
    mask blocks give their buffers in place; other layouts are repacked first."""
    t = a.type
    if not isinstance(t, T.FixedDim):
        raise NotSupportedError(f"conversion of '{t}': needs a leading fixed dimension")
    if M.is_plain(t) and not _has_tuple(t):
        arr = a.to_numpy()
        if arr.ndim == 1 and arr.dtype.names:  # records of numbers: a field view each
            return ("record", arr.dtype.names, [_columns(array(arr[k])) for k in arr.dtype.names])
        if arr.ndim == 1:
            return ("numpy", arr)
        flat = np.ascontiguousarray(arr).reshape((arr.shape[0] * arr.shape[1],) +
                                                 arr.shape[2:])  # (-1 fails on size 0)
        return ("regular", arr.shape[1], _columns(array(flat)))
    n, stride, x, meta, owner = t.size, a.meta[1], t.elem, a.meta, a.owner
    if not isinstance(owner, memory.MemoryBlock) and not M.is_plain(t):
        return _columns(_repack(a))
    if isinstance(x, T.FixedDim):
        if x.size == 1 and stride != meta[3]:  # (rows of one: the outer stride steps)
            one = Array.from_parts(T.FixedDim(n, x.elem), (n, stride) + meta[4:], a.ptr,
                                   owner, a.readonly)
            return ("regular", 1, _columns(one))
        if stride != x.size * meta[3]:
            return _columns(_repack(a))
        flat = Array.from_parts(T.FixedDim(n * x.size, x.elem), (n * x.size,) + meta[3:],
                                a.ptr, owner, a.readonly)
        return ("regular", x.size, _columns(flat))
    if isinstance(x, T.Option):
        offs = a.ptr - owner.address + np.arange(n, dtype=np.int64) * stride
        mask = M.gather(owner.buffer, offs + meta[2], 1).reshape(n) != 0
        inner = Array.from_parts(T.FixedDim(n, x.elem), (n, stride) + meta[3:], a.ptr, owner,
                                 a.readonly)
        return ("option", mask, _columns(inner))
    if isinstance(x, T.VarDim):
        var_meta = meta[2:2 + M.VAR_META]
        ref, w, delta, content, istride, vstride, length = var_meta
        if vstride != istride:
            return _columns(_repack(a))
        offsets = None
        if stride == w == delta:  # offsets form: the n + 1 indices in place
            offsets = memory.view(a.ptr, (n + 1,), (w,), M.INDEX_DTYPES[w], owner, True)
            starts, stops = offsets[:-1], offsets[1:]
        else:
            offs = a.ptr - owner.address + np.arange(n, dtype=np.int64) * stride
            starts, stops = M.read_rows(owner.buffer, offs, w, delta)
        M.check_rows(starts, stops, var_meta)
        child = Array.from_parts(T.FixedDim(length, x.elem), (length, istride) +
                                 meta[2 + M.VAR_META:], content, memory.lookup(ref),
                                 a.readonly)
        if offsets is None:
            if n and not bool(np.all(stops[:-1] == starts[1:])):
                # rows out of order (gathered rows): their items taken in row order
                return R.rows_at(_columns(child), starts, (stops - starts).astype(np.int64))
            # Rows back to back (lazyk's own pairs): their indices become offsets.
            offsets = (np.concatenate([starts[:1], stops]) if n else np.zeros(1, np.int64)
                       ).astype(M.INDEX_DTYPES[w])  # the same index width
        return ("list", offsets, _columns(child))
    if M.is_varlen(x):
        return ("text", x.name) + _text_columns(a)
    if isinstance(x, (T.Record, T.Tuple)):  # each field a view of its own
        keys = x.names if isinstance(x, T.Record) else tuple(range(len(x.types)))
        return ("record", keys, [_columns(_field_view(a, k)) for k in range(len(keys))])
    if M.is_plain(t):  # numbers inside a tuple
        return ("numpy", a.to_numpy())
    return _unsupported(t)


def _has_tuple(t: T.Type) -> bool:
    """Whether a tuple type sits anywhere in `t` (NumPy would name its fields f0, f1, ...)."""
    if isinstance(t, T.Tuple):
        return True
    if isinstance(t, T.Record):
        return any(map(_has_tuple, t.types))
    return isinstance(t, (T.Dim, T.Option)) and _has_tuple(t.elem)


def _text_columns(a: Array) -> tuple:
    """(offsets, characters) of `N * string` / `N * bytes`: the characters in place where
    the strings lie back to back in one block (as `text_array` and Arrow lay them out), else
    gathered into one buffer (vectorized, per block)."""
    n, stride, owner = a.type.size, a.meta[1], a.owner
    offs = a.ptr - owner.address + np.arange(n, dtype=np.int64) * stride
    begins, sizes = M.read_pairs(owner.buffer, offs)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    blocks = M.string_blocks(memory.lookup(a.meta[2]))
    head = blocks[0]
    if n and int(begins[0]) >= head.address and \
            int(begins[0]) + int(offsets[-1]) <= head.address + head.size and \
            bool(np.all(begins - begins[0] == offsets[:-1])):
        lo = int(begins[0]) - head.address
        return offsets, head.buffer[lo:lo + int(offsets[-1])]
    chars, todo = np.empty(int(offsets[-1]), np.uint8), np.ones(n, bool)
    for block in blocks:
        starts = begins - block.address
        # (an empty string reads nothing: a missing one's element is {0, 0})
        inside = todo & (((starts >= 0) & (starts + sizes <= block.size)) | (sizes == 0))
        k = sizes[inside]
        within = np.arange(int(k.sum())) - np.repeat(np.cumsum(k) - k, k)
        chars[np.repeat(offsets[:-1][inside], k) + within] = \
            block.buffer[np.repeat(starts[inside], k) + within]
        todo &= ~inside
    if todo.any():
        raise ValueError("string data points outside its memory blocks")
    return offsets, chars


columns = _columns  # the same tree for other modules (lazyk.dask.collection joins partitions)


def option_field(a: Array, name: str) -> Array:
    """Field `name` of records that may be missing whose field may be missing too
    (`... * ?{name: ?T}`), as a new `... * ?T` array (read-only): missing where the record
    or the field is, as Arrow and Awkward read it. One mask cannot say both, so this is a
    copy: the field's values and the AND of the two masks (vectorized)."""
    if a.type.ndim == 0:
        return option_field(a[None], name)[0]
    out = build_columns(_pick(_columns(a), name))
    return Array._from_parts(out.type, out.meta, out.ptr, out.owner, True)


def _pick(col: tuple, name: str) -> tuple:
    """The column tree of field `name` under the dims of `col` (an "option" over records
    ANDs its mask into the field's)."""
    kind = col[0]
    if kind == "record":
        keys = [str(k) for k in col[1]]  # a tuple's fields are its positions "0", "1", ...
        if name not in keys:
            raise KeyError(f"the records have no field {name!r}")
        return col[2][keys.index(name)]
    if kind == "option" and col[2][0] == "record":
        f = _pick(col[2], name)
        return ("option", col[1] & f[1], f[2]) if f[0] == "option" else ("option", col[1], f)
    if kind in ("option", "list", "regular"):
        return (kind, col[1], _pick(col[2], name))
    raise KeyError(f"no records with a field {name!r}")


def build_columns(col: tuple) -> Array:
    """A lazyk array from a column tree (`columns`): buffers used as they are."""
    kind = col[0]
    if kind == "numpy":
        return array(np.ascontiguousarray(col[1]))
    if kind == "regular":  # ("regular", 0, child, rows): rows of size 0 and their count
        return regular(build_columns(col[2]), col[1], *col[3:])
    if kind == "list":
        return offsets_array(col[1], build_columns(col[2]), check=None)
    if kind == "text":
        return text_array(col[2], col[3], None, col[1])
    if kind == "record":
        return records_array(list(col[1]), [build_columns(f) for f in col[2]])
    mask, child = col[1], col[2]
    if child[0] == "numpy":
        return masked(child[1], mask)
    if child[0] == "list":
        return offsets_array(child[1], build_columns(child[2]), validity=mask, check=None)
    if child[0] == "text":
        return text_array(child[2], child[3], mask, child[1])
    if child[0] == "record":
        return records_array(list(child[1]), [build_columns(f) for f in child[2]], mask)
    raise NotSupportedError("missing fixed-size rows (?N * T) under a var dim or in a "
                            "field of records (they are results, not rebuilt from columns)")


use_field_copy(option_field)  # `r.x` of `?{x: ?T}` records reads through it


def _unsupported(t: T.Type):
    raise NotSupportedError(f"conversion of '{t}' (numbers, bools, strings, bytes, records, "
                            "fixed and var dims, options)")


def _repack(a: Array) -> Array:
    """A copy in lazyk's packed form (contiguous rows), for views the tree cannot express."""
    return array(a.to_list(), a.type)


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
    pa = _need("pyarrow")
    a = _as_array(x, "to_arrow")
    out = _arrow(pa, _columns(a), count=a.type.size)
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


def _arrow(pa, col: tuple, valid: np.ndarray | None = None, count: int | None = None):
    """The Arrow array of a columns node (`count`: how many elements it describes, where
    known; fixed dims of size 0 need it)."""
    kind = col[0]
    bits = None
    if valid is not None:
        bits = pa.py_buffer(np.packbits(valid, bitorder="little"))
    nulls = -1 if valid is None else int(len(valid) - valid.sum())
    if kind == "option":
        return _arrow(pa, col[2], col[1], len(col[1]))
    if kind == "numpy":
        arr = col[1]
        if arr.dtype.kind in "USVcmM":
            return _arrow_leaf(pa, arr, valid)
        if arr.dtype == np.bool_ or valid is None and not arr.flags.c_contiguous:
            return pa.array(arr, mask=None if valid is None else ~valid)
        arr = np.ascontiguousarray(arr)
        if not arr.dtype.isnative:
            arr = arr.astype(arr.dtype.newbyteorder("="))
        return pa.Array.from_buffers(pa.from_numpy_dtype(arr.dtype), len(arr),
                                     [bits, pa.py_buffer(arr)], null_count=nulls)
    if kind == "record":
        return pa.StructArray.from_arrays([_arrow(pa, f) for f in col[2]],
                                          names=[str(k) for k in col[1]],  # tuples: "0", ...
                                          mask=None if valid is None else pa.array(~valid))
    if kind == "text":
        offsets, chars = col[2], col[3]
        wide = len(chars) >= 2 ** 31
        at = pa.large_string() if wide else pa.string()
        if col[1] == "bytes":
            at = pa.large_binary() if wide else pa.binary()
        offsets = offsets.astype(np.int64 if wide else np.int32)
        return pa.Array.from_buffers(at, len(offsets) - 1, [bits, pa.py_buffer(offsets),
                                                             pa.py_buffer(chars)],
                                     null_count=nulls)
    if kind == "list":
        offsets = col[1]
        child = _arrow(pa, col[2], count=int(offsets[-1]) if len(offsets) else 0)
        lt = pa.list_(child.type) if offsets.dtype.itemsize == 4 else pa.large_list(child.type)
        return pa.Array.from_buffers(lt, len(offsets) - 1, [bits, pa.py_buffer(offsets)],
                                     null_count=nulls, children=[child])
    if col[1] == 0 and count is not None:  # (from_arrays cannot tell how many rows)
        child = _arrow(pa, col[2], count=0)
        return pa.Array.from_buffers(pa.list_(child.type, 0), count, [bits],
                                     null_count=nulls, children=[child])
    child = _arrow(pa, col[2], count=None if count is None else count * col[1])
    try:
        return pa.FixedSizeListArray.from_arrays(child, col[1], mask=None if valid is None
                                                 else pa.array(~valid))
    except pa.ArrowInvalid as e:  # (fixed dims of size 0: `0 * T`, `?0 * T` rows)
        raise NotSupportedError(f"to_arrow of a fixed dim of size {col[1]}: {e}") from None


def _arrow_leaf(pa, arr: np.ndarray, valid: np.ndarray | None):
    """Fixed strings, fixed bytes, complex numbers and NumPy dates and times to Arrow."""
    kind = arr.dtype.kind
    if kind in "US":
        return _arrow(pa, _fixed_text(arr, "Arrow"), valid)
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


def to_awkward(x: Array) -> Any:
    """An Awkward Array over the lazyk array's buffers (`N * var * T` -> ListOffsetArray,
    `?T` -> ByteMaskedArray (mask copied), fixed inner dims -> RegularArray, records and
    tuples -> RecordArray). Offsets-form var dims and values are not copied. Dates and
    times stay NumPy datetime64 / timedelta64 (`time` is timedelta64[us]: Awkward has no
    time of day), `fixed_string[n]` becomes strings (a copy), `fixed_bytes[n]`
    bytestrings, non-native byte order native.

    Example:
        >>> lazyk.to_awkward(lazyk.array([[1, None], [3]])).tolist()
        [[1, None], [3]]
    """
    ak = _need("awkward")
    x = _as_array(x, "to_awkward")
    return ak.Array(_awkward(ak, _columns(x), len(x)))


def _awkward(ak, col: tuple, n: int):
    """Awkward content for column `col` of `n` elements (a fixed dim of size 0 keeps its
    rows: `4 * 0 * T` is four empty lists)."""
    c, kind = ak.contents, col[0]
    if kind == "numpy":
        arr = col[1]
        if arr.dtype.kind in "US":
            return _awkward(ak, _fixed_text(arr, "Awkward"), n)
        if arr.dtype.kind == "V":  # fixed_bytes[n]: Awkward bytestrings of n bytes
            k = arr.dtype.itemsize
            raw = np.ascontiguousarray(arr).view(np.uint8)
            return c.RegularArray(c.NumpyArray(raw, parameters={"__array__": "byte"}), k,
                                  zeros_length=len(arr), parameters={"__array__": "bytestring"})
        if not arr.dtype.isnative:
            arr = arr.astype(arr.dtype.newbyteorder("="))
        return c.NumpyArray(arr)
    if kind == "option":
        mask = ak.index.Index8(col[1].astype(np.int8))
        return c.ByteMaskedArray(mask, _awkward(ak, col[2], len(mask)), valid_when=True)
    if kind == "record":
        fields = [_awkward(ak, f, n) for f in col[2]]
        names = None if _is_tuple(col[1]) else list(col[1])  # None: an Awkward tuple
        return c.RecordArray(fields, names, length=len(fields[0]) if fields else n)
    if kind == "text":
        string = col[1] == "string"
        chars = c.NumpyArray(col[3], parameters={"__array__": "char" if string else "byte"})
        return c.ListOffsetArray(ak.index.Index64(col[2]), chars, parameters={
            "__array__": "string" if string else "bytestring"})
    if kind == "list":
        offsets = col[1]
        index = ak.index.Index32 if offsets.dtype.itemsize == 4 else ak.index.Index64
        inner = int(offsets[-1]) if len(offsets) else 0
        return c.ListOffsetArray(index(offsets), _awkward(ak, col[2], inner))
    inner = _awkward(ak, col[2], n * col[1])
    return c.RegularArray(inner, col[1], zeros_length=n)

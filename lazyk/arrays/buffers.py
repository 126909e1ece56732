"""Arrays over given buffers: offsets, index pairs, characters and record columns.

A var dim's rows are read through index pairs (docs/layout.md), so an offsets array IS a
var dim: `from_offsets` checks the offsets once (vectorized) and wraps them and the content
without copying. Strings are `{begin, size}` elements over characters left in place; records
read from columns (`ColumnArray`) build their C structs (`lazyk.arrays.structs`) on first need.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from lazyk import types as T
from lazyk.arrays import arrmeta as M
from lazyk.arrays import memory
from lazyk.arrays.array import Array, array, masked
from lazyk.arrays.foreign import is_foreign
from lazyk.arrays.structs import is_tuple_names, records_array
from lazyk.arrays.trees import offsets_of
from lazyk.errors import ArrayConstructionError
from lazyk.lru import lock


# ---------------------------------------------------------------- building blocks
def bool_mask(mask: Any, what: str = "the mask") -> np.ndarray:
    """`mask` as a bool array: bool values, or integers that are all 0 or 1; anything else
    (0.5, "no") is a mistake, not a truth value (ArrayConstructionError naming it)."""
    m = np.asarray(mask)
    if m.dtype == bool:
        return m
    if m.dtype.kind in "iu":
        bad = np.flatnonzero((m != 0) & (m != 1))
        if not len(bad):
            return m.astype(bool)
        raise ArrayConstructionError(f"{what} takes bool values (or integers 0 / 1), not "
                                     f"{m.reshape(-1)[bad[0]]!r} at position {int(bad[0])}")
    raise ArrayConstructionError(f"{what} takes bool values (or integers 0 / 1), not "
                                 f"{m.dtype} values")


def _content(content: Any) -> Array:
    """The content as a lazyk array with a leading fixed dim (NumPy arrays are viewed)."""
    if isinstance(content, (np.ma.MaskedArray, list, tuple)) or is_foreign(content):
        content = array(content)  # masked values, None, Arrow's nulls: missing (`?T`)
    if not isinstance(content, Array):
        raw = np.asarray(content)  # (lists and foreign arrays are read above)
        if raw.dtype == object:  # anything NumPy cannot give a dtype: named at once
            what = "an object-dtype NumPy array (Python objects have no lazyk element type: " \
                "give numbers or fixed-width strings)" if isinstance(content, np.ndarray) else \
                f"{type(content).__module__}.{type(content).__qualname__}"
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


def as_offsets(offsets: Any) -> np.ndarray:
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
    return Array.from_parts(t, meta, block.address, block, c.readonly, check_strings=False)


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
    return Array.from_parts(t, meta, c.ptr, owner, c.readonly, check_strings=False)


def option_fixed_rows(inner: Array, rows: int, n: int, valid: Any) -> Array | None:
    """`rows * ?n * Y` from `inner` (`rows * n` elements of Y, a leading fixed dim) and
    each row's present flag: the block `inner` addresses copied, then a shadow where row
    i's present byte sits at the row's address + mask_offset (a row of no bytes, `?0` or
    over zero-size dims, takes one alignment unit, so each row has an address of its
    own); None where `inner` addresses no memory block (or contiguous NumPy values)."""
    owner = inner.owner
    if isinstance(owner, np.ndarray) and owner.flags.c_contiguous:
        owner = memory.foreign(owner)  # NumPy values: the bytes `inner` addresses lie in it
    if not isinstance(owner, memory.MemoryBlock):
        return None
    elem = T.FixedDim(n, inner.type.elem)
    step = n * inner.meta[1] or T.Option(elem).itemsize  # (rows of no bytes: one unit)
    base = inner.ptr - owner.address
    at = -(-max(owner.size, base + rows * step) // 8) * 8
    block = memory.MemoryBlock(at + rows * step, keep=[owner])
    block.buffer[:owner.size] = owner.buffer[:owner.size]
    if rows * step:
        block.buffer[at:].reshape(rows, step)[:, 0] = valid
    meta = (rows, step, at - base, n, inner.meta[1]) + tuple(inner.meta[2:])
    return Array.from_parts(T.FixedDim(rows, T.Option(elem)), meta, block.address + base, block,
                            check_strings=False)


def build_rows(values: np.ndarray, mask: np.ndarray | None, outer: tuple, last: Any,
               lengths: np.ndarray | None = None) -> Array:
    """A result array from flat values (and a present mask) without Python lists: `outer`
    fixed dims, then `last` ("var" with per-row `lengths`, a fixed size, or None)."""
    if last == "var":
        content = array(values) if mask is None else masked(values, mask)
        return offsets_array(offsets_of(lengths), content, outer=tuple(outer), check=None)
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
    leaf, meta = T.Scalar(kind), (n, 16)
    if valid is not None:  # the mask byte sits `region` bytes after each element
        block.buffer[region:2 * region:16] = np.asarray(valid, bool)[:n]
        leaf, meta = T.Option(leaf), meta + (region,)
    return Array.from_parts(T.FixedDim(n, leaf), meta + (text.ref,), block.address, block,
                            check_strings=False)


def text_from_numpy(x: np.ndarray, kind: str | None = None) -> Array:
    """A NumPy `U` (-> `string`, UTF-8) or `S` (-> `bytes`) array as lazyk strings of its
    shape: packed with vectorized NumPy (a copy), no Python per string (ASCII text is
    narrowed in one step; other text goes through `np.char.encode`)."""
    offsets, chars = text_buffers(x)
    kind = kind or ("string" if x.dtype.kind == "U" else "bytes")
    out = text_array(offsets, chars, None, kind)
    for size in reversed(x.shape[1:]):
        out = regular(out, size)
    return out


def text_buffers(x: np.ndarray) -> tuple:
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
        return text_buffers(np.char.encode(flat, "utf-8"))
    # NumPy drops trailing NULs: a string ends after its last non-zero unit
    nonzero = codes != 0
    lens = np.where(nonzero.any(axis=1), width - np.argmax(nonzero[:, ::-1], axis=1), 0) \
        if width else np.zeros(n, np.int64)
    return offsets_of(lens), codes[np.arange(width) < lens[:, None]].astype(np.uint8)


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
            has no byte order); a list, Arrow or Awkward array is read as `lazyk.array`
            reads it (None and nulls: missing values).
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
    return offsets_array(as_offsets(offsets), _content(content), validity,
                         check=bool(check or validity is not None))


# ---------------------------------------------------------------- to Arrow / Awkward




class ColumnArray(Array):
    """Records read from columns (`column_records`), or lists of them (`column_lists`): each
    field is its column (`Array._columns`: `x.pt` reads the column in place, contiguous).
    Their C structs, and the lists' arrmeta over them, are built only when something needs
    the records whole (`to_list`, a slice's NumPy view, ...): reading from Awkward or Arrow
    copies nothing. Read-only, as Arrow's and Awkward's arrays are: no write may make the
    columns and the structs differ."""

    # `_pending`: the structs are not built yet; `_parts`: (offsets, content records, which
    # rows are present or None) of lists of records, None for records (whose fields are
    # `_columns`). (No public names beyond `built`: an attribute would hide a record field
    # of that name.)
    __slots__ = ("_pending", "_parts")

    def _build(self) -> None:
        if not self._pending:
            return
        if self._parts is None:  # (outside the lock: the content builds its own)
            whole = records_array(list(self._columns), list(self._columns.values()))
        else:
            offsets, content, valid = self._parts
            whole = offsets_array(offsets, content, valid, check=None)
        whole = _read_only(whole)
        with _building:
            if self._pending:  # (else another thread's are kept)
                for name in _BUILT:
                    getattr(Array, name).__set__(self, getattr(whole, name))
                self._pending = False

    @property
    def shape(self) -> tuple:
        return self._type.shape

    def __getitem__(self, index: Any) -> Array:
        if isinstance(index, slice) and self._pending:  # rows of the records, still
            # deferred: their columns' rows
            if self._parts is None:
                return column_records(list(self._columns),
                                      [f[index] for f in self._columns.values()])
            offsets, content, valid = self._parts
            lo, hi, step = index.indices(len(offsets) - 1)
            if step == 1:
                return column_lists(offsets[lo:max(lo, hi) + 1], content,
                                    None if valid is None else valid[lo:max(lo, hi)],
                                    check=None)
        return Array.__getitem__(self, index)

    def close(self) -> None:
        self._pending, self._columns = False, None  # (nothing is built after a close)
        Array.close(self)

    @property
    def built(self) -> bool:
        """Whether the C structs exist yet (something needed the records whole)."""
        return not self._pending



_BUILT = ("_np", "_meta", "_ptr", "_owner")
_building = lock()


def _built_slot(name: str) -> property:
    slot = getattr(Array, name)

    def get(self: ColumnArray) -> Any:
        if self._pending:
            self._build()
        return slot.__get__(self)
    return property(get, slot.__set__)


for _name in _BUILT:
    setattr(ColumnArray, _name, _built_slot(_name))


def _deferred(t: T.Type, columns: dict, parts: tuple | None = None) -> ColumnArray:
    out = object.__new__(ColumnArray)
    for name in _BUILT:
        getattr(Array, name).__set__(out, None)
    out._type, out._readonly, out._columns = t, True, columns
    out._pending, out._parts = True, parts
    return out


def column_records(names: list, fields: list, valid: np.ndarray | None = None) -> Array:
    """`records_array(names, fields, valid)`; for records that cannot be missing, a
    `ColumnArray`: each field reads as its column, the C structs built on first need.
    Tuples and records that may be missing are built at once, fields as struct views."""
    if valid is not None or is_tuple_names(names):
        return records_array(names, fields, valid)
    n = fields[0].type.size if fields else 0
    for name, c in zip(names, fields):
        if not isinstance(c.type, T.FixedDim) or c.type.size != n:
            raise ArrayConstructionError(f"field {name!r}: {c.type}, the records need {n} "
                                         "elements")
    t = T.FixedDim(n, T.Record(tuple((k, c.type.elem) for k, c in zip(names, fields))))
    return _deferred(t, {k: _read_only(f) for k, f in zip(names, fields)})


def column_lists(offsets: np.ndarray, content: Array, valid: np.ndarray | None = None,
                 check: bool | None = False) -> Array:
    """`offsets_array(offsets, content, valid, check=check)`; over `column_records`, a
    `ColumnArray` whose fields are lists over these offsets (missing where `valid` says;
    the lists' arrmeta built on first need)."""
    if content._columns is None:
        return offsets_array(offsets, content, valid, check=check)
    if not isinstance(content.type, T.FixedDim):
        raise ArrayConstructionError(f"the content needs a leading fixed dimension (N * ...), "
                                     f"not '{content.type}'")
    if check is not None:
        check_offsets(offsets, content.type.size, full=check)
    elem: T.Type = T.VarDim(content.type.elem)
    if valid is not None:
        valid = bool_mask(valid, "validity")
        if valid.shape != (len(offsets) - 1,):
            raise ArrayConstructionError(f"validity needs one entry per row "
                                         f"({len(offsets) - 1}), not shape {valid.shape}")
        elem = T.Option(elem)
    return _deferred(T.FixedDim(len(offsets) - 1, elem),
                     {k: column_lists(offsets, c, valid, check=None)
                      for k, c in content._columns.items()},
                     (offsets, content, valid))


def _read_only(x: Array) -> Array:
    if isinstance(x, ColumnArray):  # (read-only already; nothing built)
        return x
    x._readonly = True
    if x._np is not None:
        x._np = x._np.view()
        x._np.flags.writeable = False
    return x

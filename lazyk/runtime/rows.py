"""Ragged operands read as rows: each row's element-0 address, length and stride from the
arrmeta (docs/layout.md) (`row_view`, `gather`: `lazyk.runtime.ragged_out`), the memory-block check
of an arrmeta (`check_extent`: `lazyk.runtime.nest_run`), and the row line-up of flat operands that
`lazyk.runtime.text_steps` runs its string step on (`line_up`).

The shape step broadcasts rows: a length-1 row broadcasts, equal lengths pair up, anything
else is a ShapeError naming the row and both lengths. Every row read from an arrmeta is
checked (`0 <= start <= stop <= length`) before any address is formed, so kernels never read
out of bounds.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided

from lazyk.arrays import arrmeta as M
from lazyk.arrays import memory
from lazyk.errors import ShapeError
from lazyk.frontend.leaves import describe_ragged as describe
from lazyk.frontend.ops import cast_values
from lazyk.kernel.flat import broadcast_shapes
from lazyk.types import Option


@dataclass
class Operand:
    """One leaf flattened: fixed outer dims, per-row lengths (var) and values + mask."""

    outer: tuple            # fixed dims before the last dim (all dims but the last)
    lengths: np.ndarray     # length of the last dim per outer row (flat over `outer`)
    starts: np.ndarray      # flat index of each row's first value
    values: np.ndarray      # all values, row after row (missing ones are 0)
    mask: np.ndarray | None  # True = present; None when the operand has no options
    var: bool               # whether the last dim is var
    last: int | None        # the fixed size of the last dim (None for var or 0-d)
    rowmask: np.ndarray | None = None  # ?var: True = row present (a missing row is empty)


def _bytes_at(addr: np.ndarray, width: int) -> np.ndarray:
    """`width` bytes at each address (uint8 rows), read through one NumPy view of the span."""
    if not len(addr):
        return np.zeros((0, width), np.uint8)
    lo = int(addr.min())
    span = int(addr.max()) - lo + width
    # Only the indexed bytes are touched; the span view itself reads nothing.
    buf = np.ctypeslib.as_array((ctypes.c_uint8 * span).from_address(lo))
    return buf[(addr - lo)[:, None] + np.arange(width)]


def _elements(rowptr: np.ndarray, lengths: np.ndarray, stride: int, dtype: np.dtype,
              total: int) -> np.ndarray:
    """Every row's elements, row after row, as `dtype` values (a copy): one contiguous read
    when the rows follow each other in memory (offsets over dense content), else one
    element-wise gather through a view of the span."""
    if total == 0:
        return np.zeros(0, dtype)
    isz = dtype.itemsize
    keep = lengths > 0
    ptr, ln = rowptr[keep], lengths[keep]
    if stride == isz and bool(np.all(ptr[1:] == ptr[:-1] + ln[:-1] * stride)):
        raw = np.ctypeslib.as_array((ctypes.c_uint8 * (total * isz)).from_address(int(ptr[0])))
        return raw.view(dtype).copy()
    starts = np.cumsum(ln) - ln
    last = ptr + (ln - 1) * stride
    lo = int(np.minimum(ptr, last).min())
    if stride % isz == 0 and not ((ptr - lo) % isz).any():
        # element indices into one view of the span (rows checked on their ends only)
        k = stride // isz
        span = (int(np.maximum(ptr, last).max()) - lo) // isz + 1
        idx = np.repeat((ptr - lo) // isz - starts * k, ln)
        idx += np.arange(total, dtype=np.int64) if k == 1 else \
            np.arange(total, dtype=np.int64) * k
        buf = np.ctypeslib.as_array((ctypes.c_uint8 * (span * isz)).from_address(lo))
        return buf.view(dtype)[idx]
    addr = np.repeat(ptr - starts * stride, ln) + np.arange(total, dtype=np.int64) * stride
    lo = int(addr.min())
    if bool(np.all((addr - lo) % isz == 0)):
        span = (int(addr.max()) - lo) // isz + 1
        buf = np.ctypeslib.as_array((ctypes.c_uint8 * (span * isz)).from_address(lo))
        return buf.view(dtype)[(addr - lo) // isz]
    return _bytes_at(addr, isz).copy().view(dtype).reshape(-1)


def gather(array, dtype: np.dtype) -> Operand:
    """Flatten a lazyk Array by its arrmeta (docs/layout.md): its rows (`row_view`), then
    one vectorised read of every element (no Python lists)."""
    v = row_view(array)
    lengths = v.lengths
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    total = int(lengths.sum())
    values = _elements(v.rowptr, lengths, v.stride, v.dtype, total)
    values = cast_values(values, dtype) if values.dtype.kind in "fc" and \
        np.dtype(dtype).kind in "iu" else values.astype(dtype, copy=False)
    mask = None
    if v.mask_offset is not None:
        mask = _elements(v.rowptr + v.mask_offset, lengths, v.stride, np.dtype(np.uint8),
                         total) != 0
        values = np.where(mask, values, np.zeros((), dtype))
    if v.rowmask is not None:
        # one placeholder value after the last: what a missing row reads (`line_up`)
        values = np.append(values, np.zeros(1, values.dtype))
        mask = None if mask is None else np.append(mask, False)
    return Operand(v.outer, lengths, starts, values, mask, v.var, v.last, v.rowmask)


@dataclass
class RowView:
    """One leaf read in place: per row its element-0 address, its length and the byte
    stride inside rows (arrmeta only: no value is read or copied)."""

    outer: tuple
    lengths: np.ndarray
    rowptr: np.ndarray      # int64 address of each row's element 0
    stride: int             # byte stride inside a row (0 for a 0-d operand)
    dtype: np.dtype         # stored element dtype (byte order kept)
    mask_offset: int | None  # shadow-mask distance for ?T, else None
    var: bool
    last: int | None
    aligned: bool | None = None  # every element address aligned (None: not known)
    rowmask: np.ndarray | None = None  # ?var: True = row present; a missing row is empty


def _indices(ptr: int, outer: tuple, strides: tuple, rows, width: int,
             stop_delta: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows' (start, stop) indices as int64 arrays of our own (a snapshot: what is
    checked is what the kernel reads): one strided NumPy view over the outer dims (no
    per-row fancy indexing) when the indices are aligned; offsets (the stop of a row is
    the next row's start) are copied once and both arrays are views of that copy.
    `rows` gives the address of each var element, only for unaligned indices."""
    dt = M.INDEX_DTYPES.get(width)
    if dt is None:
        raise ValueError(f"var arrmeta: index width {width} (4 or 8 bytes)")
    n = int(np.prod(outer, dtype=np.int64)) if outer else 1
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if outer and ptr % width == 0 and stop_delta >= 0 and stop_delta % width == 0 and \
            all(s % width == 0 for s in strides):
        lo = min([0] + [(k - 1) * s for k, s in zip(outer, strides) if s < 0])
        hi = max([0] + [(k - 1) * s for k, s in zip(outer, strides) if s > 0])
        span = (hi - lo + stop_delta) // width + 1
        base = np.ctypeslib.as_array((ctypes.c_byte * (span * width)).from_address(ptr + lo))
        base = base.view(dt)
        if len(outer) == 1 and strides[0] == stop_delta == width:
            snap = base.astype(np.int64)  # offsets: n + 1 indices in one copy
            return snap[:-1], snap[1:]

        def at(delta: int) -> np.ndarray:
            return as_strided(base[(delta - lo) // width:], shape=tuple(outer),
                              strides=tuple(strides), writeable=False).reshape(n)
        return at(0).astype(np.int64), at(stop_delta).astype(np.int64)
    rows = rows()
    starts = _bytes_at(rows, width).copy().view(dt).reshape(n).astype(np.int64)
    stops = _bytes_at(rows + stop_delta, width).copy().view(dt).reshape(n).astype(np.int64)
    return starts, stops


def _checked_lengths(starts: np.ndarray, stops: np.ndarray, var: M.RowsWords) -> np.ndarray:
    """Each row's length; ValueError when a row reaches outside the content. Offsets
    (`stops` is `starts` shifted by one in the same buffer) need one min over the lengths
    and the two ends: non-decreasing indices that start >= 0 and end <= length stay inside."""
    lengths = stops - starts
    if len(starts) and var.stride == var.index_stride and stops.base is not None and \
            stops.base is starts.base and \
            stops.ctypes.data == starts.ctypes.data + 8 and \
            starts[0] >= 0 and stops[-1] <= var.length and lengths.min() >= 0:
        return lengths
    M.check_rows(starts, stops, var)
    return lengths


def _check_inside(block, a0: int, a1: int, spans) -> None:
    """ValueError unless bytes [a + lo, a + hi) lie inside `block` for every address `a`
    from a0 to a1 and every (lo, hi) of `spans` (a block that is not a MemoryBlock is not
    known)."""
    if not isinstance(block, memory.MemoryBlock):
        return
    for lo, hi in spans:
        if a0 + lo < block.address or a1 + hi > block.address + block.size:
            raise ValueError("var arrmeta points outside its memory block (index, mask or "
                             "content bytes past the block's ends)")


def _check_content(var: M.RowsWords, itemsize: int, mask_offset: int | None) -> None:
    """ValueError unless the `length` content elements (and their ?T mask bytes) lie inside
    the block the var dim names: rows checked against `length` then stay inside too."""
    block = memory.lookup(var.ref)  # ValueError for a stale or made-up block ref
    if var.length <= 0:
        return  # nothing is addressable (negative lengths fail the row check)
    span = (var.length - 1) * var.index_stride
    lo, hi = min(0, span), max(0, span) + itemsize
    spans = [(lo, hi)] if mask_offset is None else \
        [(lo, hi), (lo + mask_offset, hi - itemsize + mask_offset + 1)]
    _check_inside(block, var.content, var.content, spans)


def check_extent(array) -> None:
    """ValueError unless every byte the arrmeta of a lazyk Array of fixed, var and `?var`
    dims over a scalar `T` or `?T` lets a kernel address lies inside its memory block: the
    top dims' index words, row mask bytes (or elements) in the owner's block, each var dim's `length` content
    elements in the block it names. Rows checked against `length` then stay inside too."""
    meta = array.meta
    levels, t, k = M.dims_words(array.type, meta)
    option = isinstance(t, Option)
    itemsize = (t.elem if option else t).to_numpy().itemsize

    def spans(j: int) -> list:  # byte ranges read below level j, from its address
        if j == len(levels):
            return [(0, itemsize)] + ([(meta[k], meta[k] + 1)] if option else [])
        d = levels[j]
        if isinstance(d, M.FixedWords):  # n elements `stride` apart
            lo, hi = sorted((0, (d.size - 1) * d.stride))
            return [(a + lo, b + hi) for a, b in spans(j + 1)] if d.size > 0 else []
        inner = spans(j + 1)
        block = memory.lookup(d.ref)  # a stale or made-up ref: refused as the readers do
        if d.length > 0 and inner:
            lo, hi = sorted((0, (d.length - 1) * d.index_stride))
            _check_inside(block, d.content + lo, d.content + hi, inner)
        mask = [] if d.row_mask is None else [(d.row_mask, d.row_mask + 1)]  # its mask byte
        return [(0, d.width), (d.stop_delta, d.stop_delta + d.width)] + mask
    _check_inside(array.owner, array.ptr, array.ptr, spans(0))


def row_view(array) -> RowView:
    """The rows of a lazyk Array of a supported form, from its arrmeta (docs/layout.md).

    A var dim's per-row element-0 address and length come from its index pairs read as one
    vectorized view; rows outside the content raise ValueError (never an out-of-bounds read).
    A `?var` dim's missing rows (`rowmask` False) are empty rows: their indices are never
    used.
    """
    shape, _, _ = describe(array)
    dims, t, k = M.dims_words(array.type, array.meta)  # (rows of fixed dims, then the last)
    option = isinstance(t, Option)
    elem = (t.elem if option else t).to_numpy()
    mask_offset = int(array.meta[k]) if option else None
    present = None
    outer = shape[:-1] if shape else ()
    strides = tuple(d.stride for d in dims[:-1])

    def addresses():
        rows = np.array([array.ptr], np.int64)
        for n, step in zip(outer, strides):
            rows = (rows[:, None] + np.arange(n, dtype=np.int64) * step).reshape(-1)
        return rows
    aligned = None
    al = np.dtype(elem).alignment
    last = dims[-1] if dims else None
    if last is None:
        lengths, stride, rows = np.ones(1, np.int64), 0, addresses()
    elif isinstance(last, M.RowsWords):
        qvar, row_offset = last.row_mask is not None, last.row_mask
        width, stop_delta, content = last.width, last.stop_delta, last.content
        istride, stride = last.index_stride, last.stride
        _check_content(last, np.dtype(elem).itemsize, mask_offset)
        if all(outer):
            # the index words (and row masks) of every row inside the owner's block
            lo, hi = memory.extent(tuple(outer), strides, 1)
            spans = [(0, width), (stop_delta, stop_delta + width)] + \
                ([(row_offset, row_offset + 1)] if qvar else [])
            _check_inside(array.owner, array.ptr + lo, array.ptr + hi - 1, spans)
        if qvar:
            present = _bytes_at(addresses() + row_offset, 1).reshape(-1) != 0
        starts, stops = _indices(array.ptr, outer, strides, addresses, width, stop_delta)
        if qvar:
            starts, stops = np.where(present, starts, 0), np.where(present, stops, 0)
        lengths = _checked_lengths(starts, stops, last)
        rows = np.multiply(starts, istride)  # element-0 addresses
        rows += content
        aligned = True if content % al == 0 and istride % al == 0 and stride % al == 0 \
            else None
    else:
        rows = addresses()
        lengths, stride = np.full(len(rows), last.size, np.int64), last.stride
    var = isinstance(last, M.RowsWords)
    return RowView(tuple(outer), lengths, rows, int(stride), elem, mask_offset, var,
                   None if var or not shape else shape[-1], aligned, present)


def from_numpy(a: np.ndarray) -> Operand:
    """A fixed NumPy operand: its last dim lines up with the result's var dim."""
    a = np.asarray(a)
    if a.ndim == 0:
        return Operand((), np.ones(1, np.int64), np.zeros(1, np.int64), a.reshape(1), None,
                       False, None)
    outer = a.shape[:-1]
    rows = int(np.prod(outer, dtype=np.int64))
    lengths = np.full(rows, a.shape[-1], np.int64)
    starts = np.arange(rows, dtype=np.int64) * a.shape[-1]
    return Operand(outer, lengths, starts, np.ascontiguousarray(a).reshape(-1), None, False,
                   a.shape[-1])


@dataclass
class Structure:
    """The result's rows: outer dims, per-row lengths and whether the last dim is var."""

    outer: tuple
    lengths: np.ndarray
    var: bool
    last: int | None
    # ?var operands: rows present in every operand (a missing row is empty in `lengths`),
    # and `wild` the lengths with each missing row lined up as if it broadcast (where()
    # may still take a row that one branch misses)
    rowmask: np.ndarray | None = None
    wild: np.ndarray | None = None


def line_up(names: list[str], ops: list[Operand]) -> tuple[Structure, list]:
    """The shape step: result rows and, per operand, the flat index each result element reads
    (`slice(None)` for an operand whose rows are the result's rows)."""
    struct, row_of, lens = line_up_rows(names, ops)
    result = struct.lengths if struct.wild is None else struct.wild
    nrows = len(result)
    total = int(result.sum())
    starts = np.concatenate(([0], np.cumsum(result)[:-1])).astype(np.int64)
    row = pos = None  # flat (row, position) of every result element, made when needed
    index = []
    for op, r, ln in zip(ops, row_of, lens):
        if op.rowmask is not None and op.outer == struct.outer and \
                len(op.values) == total + 1 and np.array_equal(ln, result):
            index.append(slice(0, total))  # its present rows are the result's rows
        elif op.rowmask is not None:
            # a missing row reads the placeholder after the last value (never used: the
            # result row is missing, or where() takes the other branch)
            if row is None:
                row = np.repeat(np.arange(nrows), result)
                pos = np.arange(total) - np.repeat(starts, result)
            gone = ~op.rowmask[r][row]
            index.append(np.where(gone, len(op.values) - 1,
                                  op.starts[r[row]] + np.where(ln[row] == 1, 0, pos)))
        elif len(op.lengths) == nrows and op.outer == struct.outer and \
                np.array_equal(ln, result) and len(op.values) == total:
            index.append(slice(None))  # the same rows, in order: read as they are
        elif bool(np.all(ln == 1)):  # one value per row, repeated along the row
            index.append(np.repeat(op.starts[r], result))
        else:
            if row is None:
                row = np.repeat(np.arange(nrows), result)
                pos = np.arange(total) - np.repeat(starts, result)
            index.append(op.starts[r[row]] + np.where(ln[row] == 1, 0, pos))
    return struct, index


def line_up_rows(names: list[str], ops: list) -> tuple[Structure, list, list]:
    """The shape step per row (O(rows), no element is touched): result rows and, per
    operand, the source row of each result row and that row's length (1 = broadcasts)."""
    try:
        outer = broadcast_shapes(*(op.outer for op in ops))
    except ValueError:
        raise ShapeError("outer dims do not broadcast: " + ", ".join(
            f"{n} {op.outer}" for n, op in zip(names, ops))) from None
    nrows = int(np.prod(outer, dtype=np.int64))
    row_of = [np.broadcast_to(np.arange(len(op.lengths)).reshape(op.outer), outer).reshape(-1)
              if op.outer else np.zeros(nrows, np.int64) for op in ops]
    lens = [op.lengths[r] for op, r in zip(ops, row_of)]
    # ?var operands: a missing row lines up with anything (as a length-1 row would)
    present = [None if getattr(op, "rowmask", None) is None else op.rowmask[r]
               for op, r in zip(ops, row_of)]
    masked = any(p is not None for p in present)
    result = np.ones(nrows, np.int64)
    for n, ln, p in zip(names, lens, present):
        if p is not None:
            ln = np.where(p, ln, 1)
        bad = (ln != 1) & (result != 1) & (ln != result)
        if bad.any():
            i = int(np.argmax(bad))
            first = next((m for m, other in zip(names, lens) if other[i] == result[i]),
                         "another operand")
            raise ShapeError(f"row {i}: {first} has length {result[i]} and {n} has length "
                             f"{ln[i]}; they do not broadcast")
        result = np.where(ln != 1, ln, result)
    fixed = [op.last for op in ops if not op.var and op.last not in (None, 1)]
    var = any(op.var for op in ops) and not fixed
    # `last` None with `var` False: every operand is 0-d, so the result is too.
    has_last = any(op.var or op.last is not None for op in ops)
    last = None if var or not has_last else (fixed[0] if fixed else 1)
    if not masked:
        return Structure(tuple(outer), result, var, last), row_of, lens
    rowmask = np.logical_and.reduce([p for p in present if p is not None])
    if all(p is not None for p in present):
        result = np.where(np.logical_or.reduce(present), result, 0)  # no operand has a row
    return Structure(tuple(outer), np.where(rowmask, result, 0), var, last, rowmask,
                     result), row_of, lens

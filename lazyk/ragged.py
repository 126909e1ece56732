"""Expressions over ragged (`var`) and missing-value (`?T`) arrays.

A shape step first lines every operand up with the result: it broadcasts rows (a
length-1 row broadcasts, equal lengths pair up, anything else is a ShapeError naming
the row and both lengths).

Reductions (sum, prod, min, max, any, all, mean; `skipna=`) over the last axis, over all
outer axes, or over every axis run in ONE fused kernel (`codegen.segmented`): the
shape step works per row only (`line_up_rows`: each result row's length and, per operand,
its element-0 address and byte stride from the arrmeta, 0 for a broadcast row) and the
kernel walks rows and their elements in place, evaluating the elementwise body and
folding it, reading `?T` masks at `value + mask_offset`. Operands over one index buffer
share its rows (read and checked once); a large per-row reduction splits its rows over
threads (`lazyk.set_num_threads`). Semantics (the rules of
`tests/ragged_reference.py`): missing in, missing out unless `skipna`; an empty or
all-missing row gives sum 0, prod 1, any False, all True; mean = sum / count (count
excludes skipped missing values; a row with nothing to fold gives NaN without options and
missing with them); min/max of a row with nothing to fold gives `initial` when given, else
raises ValueError like NumPy for plain `T` and gives missing for `?T` operands.

Elementwise results (no reduction) still gather values (`gather`) and run the fused
elementwise kernel on flat 1-D values; the missing mask of the result (never a sentinel)
is the AND of the operands' masks, except that `where(c, x, y)` takes the mask of `c` and
of the branch it selects (`_result_mask`). A reduction over such a `where` reduces its
computed result.

Supported forms: fixed dims, then at most one `var` dim as the last dim, over `T` or
`?T` numeric; NumPy arrays and scalars broadcast against them.
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
from dataclasses import dataclass, replace

import numpy as np
from numpy.lib.stride_tricks import as_strided

from lazyk import arrmeta as M
from lazyk import runtime
from lazyk.array import array
from lazyk.backend.cpu import JITModule
from lazyk.backend.threads import get_num_threads
from lazyk.codegen.segmented import generate_segmented, seg_params_offset
from lazyk.device import common_device
from lazyk.errors import CastingError, NotSupportedError, ShapeError
from lazyk.expr import Expr, as_expr, leaf_data, wrap_array
from lazyk.graph import REDUCE_OP, rewrite, toposort
from lazyk.interchange import build_rows
from lazyk.leaves import describe_ragged as describe
from lazyk.leaves import is_ragged
from lazyk.runtime import as_out, canonical, plan, run_program
from lazyk.spec import check_params, format_spec


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


def _flatten(items, depth: int):
    if depth == 0:
        return [items]
    out = []
    for x in items:
        out.extend(_flatten(x, depth - 1))
    return out


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
    values = _elements(v.rowptr, lengths, v.stride, v.dtype, total).astype(dtype, copy=False)
    mask = None
    if v.mask_offset is not None:
        mask = _elements(v.rowptr + v.mask_offset, lengths, v.stride, np.dtype(np.uint8),
                         total) != 0
        values = np.where(mask, values, np.zeros((), dtype))
    return Operand(v.outer, lengths, starts, values, mask, v.var, v.last)


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


def _checked_lengths(starts: np.ndarray, stops: np.ndarray, var_meta: tuple) -> np.ndarray:
    """Each row's length; ValueError when a row reaches outside the content. Offsets
    (`stops` is `starts` shifted by one in the same buffer) need one min over the lengths
    and the two ends: non-decreasing indices that start >= 0 and end <= length stay inside."""
    lengths = stops - starts
    _, _, _, _, istride, stride, length = var_meta
    if len(starts) and stride == istride and stops.base is not None and \
            stops.base is starts.base and \
            stops.ctypes.data == starts.ctypes.data + 8 and \
            starts[0] >= 0 and stops[-1] <= length and lengths.min() >= 0:
        return lengths
    M.check_rows(starts, stops, var_meta)
    return lengths


def row_view(array, memo: dict | None = None) -> RowView:
    """The rows of a lazyk Array of a supported form, from its arrmeta (docs/layout.md).

    A var dim's per-row element-0 address and length come from its index pairs read as one
    vectorized view; rows outside the content raise ValueError (never an out-of-bounds read).
    Views made with the same `memo` share the indices (and length array) of operands over
    the same index buffer and arrmeta, read and checked once.
    """
    shape, _, option = describe(array)
    t = array.type
    while type(t).__name__ in ("FixedDim", "VarDim"):
        t = t.elem
    elem = (t.elem if option else t).to_numpy()
    meta, k = array.meta, 0
    outer = shape[:-1] if shape else ()

    def addresses():
        rows = np.array([array.ptr], np.int64)
        for j, n in enumerate(outer):
            rows = (rows[:, None] + np.arange(n, dtype=np.int64) * meta[2 * j + 1]).reshape(-1)
        return rows
    k = 2 * len(outer)
    aligned = None
    al = np.dtype(elem).alignment
    if not shape:
        lengths, stride, rows = np.ones(1, np.int64), 0, addresses()
    elif shape[-1] == "var":
        var_meta = tuple(meta[k:k + M.VAR_META])
        _, width, stop_delta, content, istride, stride, _ = var_meta
        strides = tuple(meta[1:2 * len(outer):2])
        key = (array.ptr, tuple(outer), strides) + var_meta[1:3] + var_meta[4:]
        got = None if memo is None else memo.get(key)
        if got is None:
            starts, stops = _indices(array.ptr, outer, strides, addresses, width, stop_delta)
            got = (starts, _checked_lengths(starts, stops, var_meta), {})
            if memo is not None:
                memo[key] = got
        starts, lengths, done = got
        k += M.VAR_META
        # element-0 addresses: content + start * index_stride; an operand with the same
        # index stride shifts another's addresses by the distance between the contents
        other = done.get(istride)
        if other is None:
            rows = np.multiply(starts, istride)
            rows += content
            done[istride] = (rows, content)
        else:
            rows = other[0] + (content - other[1])
        aligned = True if content % al == 0 and istride % al == 0 and stride % al == 0 \
            else None
    else:
        rows = addresses()
        lengths, stride = np.full(len(rows), meta[k], np.int64), meta[k + 1]
        k += 2
    var = bool(shape) and shape[-1] == "var"
    return RowView(tuple(outer), lengths, rows, int(stride), elem,
                   int(meta[k]) if option else None, var,
                   None if var or not shape else shape[-1], aligned)


def row_view_numpy(a: np.ndarray) -> RowView:
    """A NumPy operand's rows in place: its last dim lines up with the result's last dim."""
    a = np.asarray(a)
    ptr = a.__array_interface__["data"][0]
    if a.ndim == 0:
        return RowView((), np.ones(1, np.int64), np.array([ptr], np.int64), 0, a.dtype, None,
                       False, None)
    rows = np.array([ptr], np.int64)
    for n, st in zip(a.shape[:-1], a.strides[:-1]):
        rows = (rows[:, None] + np.arange(n, dtype=np.int64) * st).reshape(-1)
    return RowView(a.shape[:-1], np.full(len(rows), a.shape[-1], np.int64), rows,
                   a.strides[-1], a.dtype, None, False, a.shape[-1])


def from_array(array, dtype: np.dtype) -> Operand:
    """Flatten a lazyk Array through to_list (the reference `gather` is tested against)."""
    shape, _, option = describe(array)
    data = array.to_list()
    scalar = not shape
    if scalar:
        data, shape = [data], (1,)
    outer = shape[:-1]
    rows = _flatten(data, len(outer)) if outer else [data]
    lengths = np.array([len(r) for r in rows], dtype=np.int64)
    flat = [v for r in rows for v in r]
    mask = np.array([v is not None for v in flat], dtype=bool) if option else None
    values = np.array([0 if v is None else v for v in flat], dtype=dtype)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    var = shape[-1] == "var"
    return Operand(tuple(outer), lengths, starts, values, mask, var,
                   None if var or scalar else shape[-1])


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


def line_up(names: list[str], ops: list[Operand]) -> tuple[Structure, list]:
    """The shape step: result rows and, per operand, the flat index each result element reads
    (`slice(None)` for an operand whose rows are the result's rows)."""
    struct, row_of, lens = line_up_rows(names, ops)
    result, nrows = struct.lengths, len(struct.lengths)
    total = int(result.sum())
    starts = np.concatenate(([0], np.cumsum(result)[:-1])).astype(np.int64)
    row = pos = None  # flat (row, position) of every result element, made when needed
    index = []
    for op, r, ln in zip(ops, row_of, lens):
        if len(op.lengths) == nrows and op.outer == struct.outer and \
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


def line_up_rows(names: list[str], ops: list, identity: bool = False
                 ) -> tuple[Structure, list, list]:
    """The shape step per row (O(rows), no element is touched): result rows and, per
    operand, the source row of each result row and that row's length (1 = broadcasts).
    With `identity`, an operand whose rows are the result's rows gets None as its source
    rows and its own length array (no copy); operands sharing one length array are not
    compared again."""
    try:
        outer = np.broadcast_shapes(*(op.outer for op in ops))
    except ValueError:
        raise ShapeError("outer dims do not broadcast: " + ", ".join(
            f"{n} {op.outer}" for n, op in zip(names, ops))) from None
    nrows = int(np.prod(outer, dtype=np.int64))
    row_of = [None if identity and op.outer == outer else
              np.broadcast_to(np.arange(len(op.lengths)).reshape(op.outer), outer).reshape(-1)
              if op.outer else np.zeros(nrows, np.int64) for op in ops]
    lens = [op.lengths if r is None else op.lengths[r] for op, r in zip(ops, row_of)]
    # Against all-ones rows the first operand's lengths are the result as they are.
    result = lens[0] if identity and lens else np.ones(nrows, np.int64)
    for n, ln in zip(names, lens):
        if ln is result:
            continue  # the same rows as an operand already lined up
        bad = (ln != 1) & (result != 1) & (ln != result)
        if bad.any():
            i = int(np.argmax(bad))
            first = next(m for m, other in zip(names, lens) if other[i] == result[i])
            raise ShapeError(f"row {i}: {first} has length {result[i]} and {n} has length "
                             f"{ln[i]}; they do not broadcast")
        result = np.where(ln != 1, ln, result)
    fixed = [op.last for op in ops if not op.var and op.last not in (None, 1)]
    var = any(op.var for op in ops) and not fixed
    # `last` None with `var` False: every operand is 0-d, so the result is too.
    has_last = any(op.var or op.last is not None for op in ops)
    last = None if var or not has_last else (fixed[0] if fixed else 1)
    return Structure(tuple(outer), result, var, last), row_of, lens


def evaluate_if_ragged(expr, out=None):
    """`evaluate(expr, out)` when a leaf is a var / option array, else NotImplemented (the
    "ragged" evaluation path of `lazyk.runtime.evaluate`)."""
    if not any(is_ragged(leaf_data(v)) for v in expr.env.values()):
        return NotImplemented
    common_device({n: leaf_data(v) for n, v in expr.env.items()})  # never on the GPU
    return evaluate(expr, out)


def evaluate(expr, out=None, casting: str = "same_kind"):
    """Compute an expression with var / option leaves; returns a new lazyk Array, or `out`.

    `out` (NumPy or fixed lazyk array) takes results without var dims or missing values:
    the kernel's per-row results are stored into it as assignment does (broadcasting,
    `casting`); a var or option result with `out` raises NotSupportedError.
    """
    if out is None:
        return _evaluate(expr)

    try:
        target = as_out(out)
    except Exception:
        raise NotSupportedError(f"out= of type {getattr(out, 'type', type(out).__name__)} "
                                "for a var / option expression") from None
    if not target.flags.writeable:
        raise ValueError("output array is read-only")
    result = _evaluate(expr)
    try:
        value = result.to_numpy()
    except Exception:
        value = None
    if value is None and "?" not in str(result.type):
        try:  # var dims whose rows happen to fit (e.g. the one row of x.sum(axis=0))
            _, dt, _ = describe(result)
            value = np.array(result.to_list(), dtype=dt)
        except Exception:
            value = None
    if value is None:
        raise NotSupportedError(f"out= with a {result.type} result (ragged rows or "
                                "missing values)")
    if not np.can_cast(value.dtype, target.dtype, casting):

        raise CastingError(f"cannot store the {value.dtype} result into out of dtype "
                           f"{target.dtype} under casting={casting!r}")
    try:
        np.copyto(target, value, casting="unsafe")
    except ValueError as err:
        raise ShapeError(f"result {result.type} does not broadcast into out with shape "
                         f"{target.shape}: {err}") from None
    return out


def _evaluate(expr):
    """Compute an expression with var / option leaves; returns a new lazyk Array."""

    root = expr.node
    red_node = root
    reduce_arg = None
    if root.op == REDUCE_OP:
        reduce_arg, root = root.arg, root.srcs[0]
    if any(n.op == REDUCE_OP for n in toposort(root)):
        # A reduction feeding more work: compute it first, then it is just another leaf.
        root, expr = _inline_reductions(root, expr)
    names, leaves = [], []
    used = {n.arg for n in toposort(root) if n.op == "input"}
    for name, value in expr.env.items():
        if name not in used:
            continue  # only read under an inlined reduction
        names.append(name)
        leaves.append(leaf_data(value))
    if reduce_arg is None:
        empty = _empty_result(root, names, leaves)
        if empty is not None:
            return empty
    elif _branch_masks(root, names, leaves):
        # where() takes the missing state of the branch it selects, which the segmented
        # kernel (one AND of the input masks per element) cannot: compute the elementwise
        # part first, then reduce that array.
        inner = as_expr(_evaluate(Expr(root, expr.env)))
        return _evaluate(Expr(red_node.replace(srcs=(inner.node,)), inner.env))
    fused = None
    if reduce_arg is not None:

        # In place: rows from the arrmeta, one fused kernel, no value gathered or copied.
        got = _fused_rows(Expr(red_node.replace(srcs=(root,)), expr.env), names, leaves,
                          reduce_arg)
        if got is not None:
            struct, fused = got
    if fused is None:
        ops_ = [gather(v.array, _leaf_dtype(root, n)) if is_ragged(v) else from_numpy(v)
                for n, v in zip(names, leaves)]
        struct, index = line_up([f"operand {k}" for k in range(len(names))], ops_)
    lengths, outer = struct.lengths, struct.outer
    has_last = struct.var or struct.last is not None
    if fused is None and reduce_arg is not None and reduce_arg[1] == (len(outer),):

        fused = _fused_row_reduction(Expr(red_node.replace(srcs=(root,)), expr.env), names,
                                     ops_, struct, index, reduce_arg)
    if fused is not None:
        # One kernel did the elementwise work and the per-row reduction (no reduceat).
        values, valid, any_mask, skipna = fused[:4]
        order = fused[5] if len(fused) > 5 else "row"
        op, keep = reduce_arg[0], reduce_arg[2]
        extremum = op in ("min", "max")
        seeded = extremum and len(reduce_arg) > 4
        if seeded:
            empty = fused[6] if len(fused) > 6 else struct.lengths == 0
            values, valid = _seed(values, valid, reduce_arg, empty, any_mask and not skipna)
        if not any_mask:
            if extremum and not valid.all():
                where = f"row {int(np.argmin(valid))}" if order == "row" else \
                    f"column {int(np.argmin(valid))}" if order == "col" else \
                    f"result {int(np.argmin(valid))}" if order != "all" else "array"
                raise ValueError(f"zero-size {where} in reduction {op}, "
                                 "which has no identity")
            mask = None
        elif skipna:
            mask = valid if (extremum and not seeded) or op == "mean" else None
        else:
            mask = valid
        values = values.astype(red_node.dtype, copy=False)
        option = mask is not None
        if isinstance(order, tuple):
            return _group_result(array, values, mask, struct, order, reduce_arg[1], keep,
                                 red_node.dtype)
        if order != "row":
            return _outer_result(array, values, mask, struct, order, keep, red_node.dtype)
        has_last = keep
        if option or has_last:
            lengths = np.ones(len(lengths), np.int64)  # one value per row
    if fused is None and reduce_arg is None:
        data = {n: op.values[ix] for n, op, ix in zip(names, ops_, index)}
        masks = {n: op.mask[ix] for n, op, ix in zip(names, ops_, index) if op.mask is not None}
        with np.errstate(all="ignore"):
            values = run_program(plan(root), data) if data else None
        mask = _result_mask(root, data, masks) if masks else None
        values = np.broadcast_to(values, (int(struct.lengths.sum()),))
        option = mask is not None
    if reduce_arg is not None and fused is None:
        # Reductions run only inside a fused segmented kernel, never on a kernel's output.
        op, axes = reduce_arg[:2]
        types = ", ".join(str(v.array.type) if is_ragged(v) else f"{np.shape(v)} {v.dtype}"
                          for v in leaves)
        raise NotSupportedError(f"{op} over axes {list(axes)} of an expression over {types}: "
                                "it does not fuse into one segmented kernel (byte-swapped "
                                "leaves, or a mean accumulated in an integer dtype)")
    fixed_result = not option and not (has_last and reduce_arg is None and struct.var)
    if fixed_result:  # a plain fixed result: hand the values over without Python lists
        shape = tuple(outer) + ((1 if reduce_arg is not None else struct.last,)
                                if has_last else ())
        return array(np.ascontiguousarray(values, dtype=red_node.dtype).reshape(shape))
    # Flat values + row offsets -> the result's layout directly (no Python lists).
    last = None if not has_last else 1 if reduce_arg is not None else \
        "var" if struct.var else struct.last
    values = np.ascontiguousarray(values, dtype=red_node.dtype)
    return build_rows(values, mask if option else None, tuple(outer), last, lengths)


def _seed(values, valid, reduce_arg, empty, missing_seen: bool):
    """min/max with `initial`: fold it into every result; a result with nothing folded
    (`empty`: no element along the reduced axes) is `initial`, not missing nor an error.
    Without skipna over ?T data an invalid result that saw elements saw a missing one
    and stays missing."""
    init = np.asarray(reduce_arg[4]).astype(values.dtype)
    fill = ~valid & empty if missing_seen else ~valid
    with np.errstate(invalid="ignore"):
        folded = (np.minimum if reduce_arg[0] == "min" else np.maximum)(values, init)
    return np.where(fill, init, folded), valid | fill


def _branch_masks(root, names, leaves) -> bool:
    """Whether a `where` in `root` selects between branches that read `?T` leaves."""
    masked = {n for n, v in zip(names, leaves) if getattr(v, "option", False)}
    if not masked:
        return False

    def reads(node):
        return any(n.op == "input" and n.arg in masked for n in toposort(node))
    return any(_selects(n) and (reads(n.srcs[1]) or reads(n.srcs[2]))
               for n in toposort(root))


def _selects(node) -> bool:
    """A `where` with a computed condition. `where(True, k, x)` is how `imag` and
    comparisons with a str spell a value of x's shape: missing where x is (all masks)."""
    return node.op == "where" and node.srcs[0].op not in ("const", "scalar")


def _result_mask(root, data: dict, masks: dict) -> np.ndarray | None:
    """Present flags of every result value (None: all present): missing in, missing out,
    except that `where(c, x, y)` is missing where `c` is, else where the branch it selects
    is (as Awkward and numpy.ma; a constant `c` takes every mask, see `_selects`)."""
    memo: dict = {}

    def both(a, b):
        return b if a is None else a if b is None else a & b

    def mask(node):
        if id(node) in memo:
            return memo[id(node)]
        if node.op == "input":
            m = masks.get(node.arg)
        elif _selects(node):
            m, a, b = (mask(s) for s in node.srcs)
            if a is not None or b is not None:
                with np.errstate(all="ignore"):
                    cond = np.asarray(run_program(plan(node.srcs[0]), data), dtype=bool)
                yes = np.ones(1, bool)
                m = both(m, np.where(cond, yes if a is None else a, yes if b is None else b))
        else:
            m = None
            for s in node.srcs:
                m = both(m, mask(s))
        memo[id(node)] = m
        return m
    m = mask(root)
    if m is None:
        return None
    n = len(next(iter(data.values())))
    return np.broadcast_to(m, (n,))


def _empty_result(root, names, leaves):
    """The result of elementwise work when it has no rows (a zero outer dim): an empty
    array of the right type, without running anything. None when there are rows."""
    shapes = [describe(v.array)[0] if is_ragged(v) else np.shape(v) for v in leaves]
    try:
        outer = np.broadcast_shapes(*(tuple(s[:-1]) for s in shapes if len(s)))
    except ValueError:
        return None  # the shape step names the mismatch
    if not outer or all(outer):
        return None
    views = [row_view(v.array) if is_ragged(v) else row_view_numpy(v) for v in leaves]
    struct = line_up_rows(list(names), views)[0]
    last = ["var" if struct.var else str(struct.last)] if struct.var or struct.last else []
    option = any(getattr(v, "option", False) for v in leaves)
    text = " * ".join([str(d) for d in outer] + last +
                      [("?" if option else "") + np.dtype(root.dtype).name])
    return array(_no_rows(list(outer)), type=text)


def _no_rows(dims: list) -> list:
    """Nested empty lists for outer dims with a zero among them."""
    return [] if not dims or not dims[0] else [_no_rows(dims[1:]) for _ in range(dims[0])]


def _inline_reductions(root, expr):
    """Evaluate inner reductions (innermost first) and replace each by an input leaf."""

    env = dict(expr.env)

    def visit(node, srcs):
        node = node.replace(srcs=srcs) if srcs != node.srcs else node
        if node.op != REDUCE_OP:
            return node
        value = runtime.evaluate(Expr(node, env))
        leaf = wrap_array(value) if isinstance(value, np.ndarray) else as_expr(value)
        env.update(leaf.env)
        return leaf.node

    new_root = rewrite(root, visit)
    return new_root, Expr(new_root, env)


def _leaf_dtype(root, name: str) -> np.dtype:
    for n in toposort(root):
        if n.op == "input" and n.arg == name:
            return n.dtype
    return np.dtype(np.float64)


# ---------------------------------------------------------------- fused segmented reductions
# Compiled segmented kernels, oldest dropped first; code is freed with its last user.
_seg_cache: dict = {}
_SEG_CACHE_SIZE = 128
_seg_lock = threading.Lock()
os.register_at_fork(after_in_child=_seg_lock._at_fork_reinit)  # see graph.py
seg_stats = {"compiles": 0, "hits": 0, "runs": 0}
_SEG_NAME = "lazyk_seg"


class SegmentedKernel:
    """JIT code of one fused elementwise + per-row reduction (codegen.segmented)."""

    def __init__(self, spec, masked: tuple, skipna: bool, mean: bool, rows: bool = False,
                 order: str = "row"):

        self.spec, self.masked, self.skipna, self.mean = spec, masked, skipna, mean
        self.rows, self.order = rows, order
        names = (f"{_SEG_NAME}_single", f"{_SEG_NAME}_destroy")
        self.jit = JITModule(lambda: str(generate_segmented(
            spec, masked, skipna, mean, _SEG_NAME, rows=rows, order=order)), names)
        self.single_address = self.jit.addresses[names[0]]
        self.destroy_address = self.jit.addresses[names[1]]
        self.fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.c_void_p)(self.single_address)

    @property
    def ir(self) -> str:
        return self.jit.source_ir

    def _kd(self, head: list, params: bytes) -> ctypes.Array:
        """This call's kernel data: `head` words, then the parameter slots (codegen.segmented
        `seg_params_offset`)."""

        check_params(self.spec, params)
        nwords = seg_params_offset(len(self.spec.inputs)) // 8
        kd = (ctypes.c_int64 * (nwords + len(params) // 8))(*head)
        ctypes.memmove(ctypes.addressof(kd) + 8 * nwords, params, len(params))
        return kd

    def __del__(self) -> None:
        # Nothing runs this code without a reference to this object: free it with the last one.
        jit = getattr(self, "jit", None)
        try:
            if jit is not None and not sys.is_finalizing():  # (the process frees it anyway)
                jit.close()
        except Exception:  # pragma: no cover  (interpreter shutdown)
            pass

    def run_rows(self, lengths: np.ndarray, rowptrs: list, rowstrides: list,
                 mask_offsets: list, out: np.ndarray, valid: np.ndarray, ncols: int = 0,
                 params: bytes = b"") -> None:
        """Run the in-place row layout (`rows=True`): per input, each result row's element-0
        address and byte stride (from the arrays' arrmeta via the shape step). Order "col"
        reads `ncols` elements of every row (the caller checked every row has them)."""
        nrows = len(lengths)
        nres = {"row": nrows, "col": ncols, "all": 1}[self.order]
        if self.order == "col" and np.any((lengths != ncols) & (lengths != 1)):
            raise ValueError(f"every row must have {ncols} elements or 1")
        if not self.rows:
            raise ValueError("this segmented kernel reads lined-up flat operands")
        arrays = [lengths]
        for a, st in zip(rowptrs, rowstrides):
            arrays += [a, st]
        if any(a.dtype != np.int64 or a.shape != (nrows,) or not a.flags.c_contiguous
               for a in arrays) or len(rowptrs) != len(self.spec.inputs) or \
                len(rowstrides) != len(rowptrs) or len(mask_offsets) != len(rowptrs):
            raise ValueError("row layout: one contiguous int64 entry per row and input")
        if out.shape != (nres,) or valid.shape != (nres,) or valid.dtype != np.uint8 \
                or out.dtype != np.dtype(self.spec.outputs[0][1]) or \
                not (out.flags.c_contiguous and valid.flags.c_contiguous):
            raise ValueError("segmented outputs must be contiguous, one per result")
        if nres == 0:
            return
        bounds = _row_parts(lengths) if self.order == "row" else [0, nrows]
        calls = []
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            # Each part has its own kernel data and pointer tables (no shared scratch);
            # "row" results are per row, so rows lo..hi write out[lo:hi] only.
            kd = self._kd([self.single_address, self.destroy_address, 0, hi - lo, ncols,
                           *[m or 0 for m in mask_offsets]], params)
            src = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data + 8 * lo for a in arrays])
            at = lo if self.order == "row" else 0
            dst = (ctypes.c_void_p * 2)(out.ctypes.data + out.itemsize * at,
                                        valid.ctypes.data + at)
            calls.append((dst, src, kd, (arrays, out, valid)))
        # ctypes releases the GIL during each call: parts run on their own cores
        workers = []
        for c in calls[1:]:
            w = threading.Thread(target=self._call, args=c, daemon=True)
            try:
                w.start()
                workers.append(w)
            except RuntimeError:  # no thread to be had: run the part here
                self._call(*c)
        self._call(*calls[0])
        for w in workers:
            w.join()
        seg_stats["runs"] += 1

    def _call(self, dst, src, kd, keep) -> None:
        # `keep`: the arrays a part reads and writes stay alive while it runs (even if the
        # caller is interrupted while waiting)
        self.fn(ctypes.addressof(dst), ctypes.addressof(src), ctypes.addressof(kd))

    def __call__(self, offsets: np.ndarray, inputs: list, masks: list, out: np.ndarray,
                 valid: np.ndarray, params: bytes = b"") -> None:
        """Bind (checks every size, so no access leaves the arrays) and run once."""
        if self.rows:
            raise ValueError("this segmented kernel reads rows in place: use run_rows")
        nrows = len(offsets) - 1
        total = int(offsets[-1]) if nrows >= 0 else 0
        if (offsets.dtype != np.int64 or not offsets.flags.c_contiguous or nrows < 0
                or offsets[0] != 0 or (nrows and np.any(np.diff(offsets) < 0))):
            raise ValueError("offsets must be non-decreasing int64 starting at 0")
        if out.shape != (nrows,) or valid.shape != (nrows,) or valid.dtype != np.uint8 \
                or out.dtype != np.dtype(self.spec.outputs[0][1]) or \
                not (out.flags.c_contiguous and valid.flags.c_contiguous):
            raise ValueError("segmented outputs must be contiguous, one per row")
        for a, dt in zip(inputs, self.spec.inputs):
            if a.dtype != dt or a.shape != (total,) or not a.flags.c_contiguous:
                raise ValueError(f"segmented input {a.dtype}{a.shape} does not match "
                                 f"{np.dtype(dt)} ({total},)")
        for m in masks:
            if m.dtype != np.uint8 or m.shape != (total,) or not m.flags.c_contiguous:
                raise ValueError("segmented masks must be contiguous uint8, one per element")
        if len(masks) != sum(self.masked) or len(inputs) != len(self.spec.inputs):
            raise ValueError("wrong number of segmented operands")
        if nrows == 0:
            return
        kd = self._kd([self.single_address, self.destroy_address, 0, nrows], params)
        arrays = [offsets, *inputs, *masks]
        src = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
        dst = (ctypes.c_void_p * 2)(out.ctypes.data, valid.ctypes.data)
        # kd/src/dst are this call's own: concurrent calls share only the code
        self.fn(ctypes.addressof(dst), ctypes.addressof(src), ctypes.addressof(kd))
        seg_stats["runs"] += 1


# Below this many row elements per extra thread, starting a thread costs more than it saves.
_MIN_PART_VALUES = 1 << 18


def _row_parts(lengths: np.ndarray) -> list:
    """Row bounds splitting the rows into parts of about the same number of elements, one
    per thread (`lazyk.set_num_threads`). The element counts come from every 16th row's
    length (cheap; a poor guess only costs balance, never a wrong result)."""
    nrows = len(lengths)
    sample = np.cumsum(lengths[::16])
    total = int(sample[-1]) * 16 if nrows else 0
    nparts = min(get_num_threads(), total // _MIN_PART_VALUES)
    if nparts <= 1:
        return [0, nrows]
    cuts = np.searchsorted(sample, sample[-1] * np.arange(1, nparts) / nparts) * 16
    return [0, *sorted({int(c) for c in cuts if 0 < c < nrows}), nrows]


def segmented_kernel(spec, masked: tuple, skipna: bool, mean: bool,
                     rows: bool = False, order: str = "row") -> SegmentedKernel:
    """The compiled segmented kernel for these keys (cached; never keyed on sizes)."""
    key = (spec, tuple(masked), bool(skipna), bool(mean), bool(rows), order)
    with _seg_lock:
        k = _seg_cache.get(key)
        if k is not None:
            seg_stats["hits"] += 1
            return k
    k = SegmentedKernel(spec, tuple(masked), bool(skipna), bool(mean), bool(rows), order)
    dropped = []
    with _seg_lock:
        other = _seg_cache.get(key)
        if other is not None:  # another thread compiled it first
            return other
        _seg_cache[key] = k
        seg_stats["compiles"] += 1
        while len(_seg_cache) > _SEG_CACHE_SIZE:  # a running call holds its own reference
            dropped.append(_seg_cache.pop(next(iter(_seg_cache))))
    del dropped  # outside the lock: the last reference to a kernel frees its code
    return k


def _rows_graph(root):
    """The graph over the segmented iteration space `R * L` (symbols, never sizes): every
    operand is lined up element by element, so the spec (and the kernel cache key) does not
    depend on the row count or the outer dims."""

    def visit(node, srcs):
        if node.op == REDUCE_OP:
            arg = (node.arg[0], (1,), node.arg[2]) + tuple(node.arg[3:])
            return node.replace(srcs=srcs, shape=("R", 1) if node.arg[2] else ("R",), arg=arg)
        if node.shape == ():
            return node.replace(srcs=srcs) if srcs != node.srcs else node
        return node.replace(srcs=srcs, shape=("R", "L"))
    return rewrite(root, visit)


def _fused_row_reduction(expr, names, ops_, struct, index, reduce_arg):
    """Values and valid flags per row from ONE fused kernel, or None when not expressible."""
    # canonical leaf names: the same structure gives the same spec (one compile)
    node, by_name = canonical(expr.node, dict(zip(names, zip(ops_, index))))
    prog = plan(_rows_graph(node))
    if len(prog.steps) != 1 or prog.steps[0].spec.reduce is None:
        return None
    step = prog.steps[0]
    if any(n not in by_name for n in step.inputs):
        return None
    spec = step.spec
    native = tuple(np.dtype(d).newbyteorder("=") for d in spec.inputs)
    spec = replace(spec, inputs=native, aligned=(True,) * len(native))
    acc = np.dtype(spec.outputs[0][1])
    if step.mean and acc.kind not in "fc":
        return None
    inputs, masks, masked = [], [], []
    for n, dt in zip(step.inputs, native):
        op, ix = by_name[n]
        inputs.append(np.ascontiguousarray(op.values[ix], dtype=dt))
        masked.append(op.mask is not None)
        if op.mask is not None:
            masks.append(np.ascontiguousarray(op.mask[ix], dtype=np.uint8))
    skipna = bool(len(reduce_arg) > 3 and reduce_arg[3])
    kernel = segmented_kernel(spec, tuple(masked), skipna, step.mean)
    lengths = struct.lengths
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    out = np.empty(len(lengths), acc)
    valid = np.empty(len(lengths), np.uint8)
    kernel(offsets, inputs, masks, out, valid, step.consts)
    return out, valid.view(bool), any(masked), skipna, step.mean


def _fused_rows(expr, names, leaves, reduce_arg):
    """Per-row reduction read in place: the shape step works on rows only (addresses,
    lengths and strides from the arrmeta), then ONE fused kernel walks every row and its
    elements. Returns None when the form is not expressible (the caller falls back)."""
    memo: dict = {}  # operands over one index buffer: its rows read and checked once
    views = [row_view(v.array, memo) if is_ragged(v) else row_view_numpy(v) for v in leaves]
    struct, row_of, lens = line_up_rows([f"operand {k}" for k in range(len(names))], views,
                                        identity=True)
    nout = len(struct.outer)
    axes = tuple(reduce_arg[1])
    folded = tuple(a for a in axes if a < nout)  # outer axes folded row into row
    if not folded:
        if axes != (nout,):
            return None
        order = "row"
    else:
        # "col": element i of every folded row into result i; "all": everything folded
        order = "all" if nout in axes else "col"
    # groups[g]: the flat indices of the rows folded into result (row) g; one group
    # unless some outer axes are kept
    kept = [d for d in range(nout) if d not in folded]
    groups = widths = None
    if order != "row":
        idx = np.arange(len(struct.lengths)).reshape(struct.outer)
        groups = idx.transpose(kept + list(folded)).reshape(
            int(np.prod([struct.outer[d] for d in kept], dtype=np.int64)),
            int(np.prod([struct.outer[d] for d in folded], dtype=np.int64)))
        widths = [0] * len(groups)
    if order == "col":
        widths = [_fold_width(struct.lengths[g], struct.last, reduce_arg[0], folded)
                  for g in groups]
    node, by_name = canonical(expr.node, dict(zip(names, range(len(names)))))
    prog = plan(_rows_graph(node))
    if len(prog.steps) != 1 or prog.steps[0].spec.reduce is None:
        return None
    step = prog.steps[0]
    if any(n not in by_name for n in step.inputs):
        return None
    spec = step.spec
    acc = np.dtype(spec.outputs[0][1])
    if step.mean and acc.kind not in "fc":
        return None
    stored, aligned, rowptrs, rowstrides, moffs = [], [], [], [], []
    nrows = len(struct.lengths)
    same_stride: dict = {}  # one constant stride array per stride value
    for n, want in zip(step.inputs, spec.inputs):
        k = by_name[n]
        v = views[k]
        if np.dtype(v.dtype).newbyteorder("=") != np.dtype(want).newbyteorder("="):
            return None  # a leaf stored in another dtype: the gathered path casts it
        if order == "row" and lens[k] is struct.lengths:
            # No row of this operand broadcasts: a length-1 row reads element 0 only, so
            # its stride needs no zeroing.
            step_r = same_stride.get(v.stride)
            if step_r is None:
                step_r = same_stride[v.stride] = np.full(nrows, v.stride, np.int64)
        else:
            step_r = np.where(lens[k] == 1, 0, v.stride).astype(np.int64)
        r = row_of[k]
        ptr = np.ascontiguousarray(v.rowptr if r is None else v.rowptr[r], dtype=np.int64)
        al = v.dtype.alignment
        stored.append(v.dtype)
        aligned.append(v.aligned if v.aligned is not None else
                       bool(not (ptr % al).any() and v.stride % al == 0))
        rowptrs.append(ptr)
        rowstrides.append(step_r)
        moffs.append(v.mask_offset)
    spec = replace(spec, inputs=tuple(stored), aligned=tuple(aligned))
    masked = tuple(m is not None for m in moffs)
    skipna = bool(len(reduce_arg) > 3 and reduce_arg[3])
    kernel = segmented_kernel(spec, masked, skipna, step.mean, rows=True, order=order)
    lengths = np.ascontiguousarray(struct.lengths, dtype=np.int64)
    if order == "row":
        out, valid = np.empty(len(lengths), acc), np.empty(len(lengths), np.uint8)
        kernel.run_rows(lengths, rowptrs, rowstrides, moffs, out, valid, 0, step.consts)
        for rec in _recorders:
            rec.append((kernel, len(lengths), 0, moffs))
        return struct, (out, valid.view(bool), any(masked), skipna, step.mean, order)
    # one kernel call per group of folded rows (one call when every outer axis folds)
    nres = [1 if order == "all" else w for w in widths]
    out, valid = np.empty(sum(nres), acc), np.empty(sum(nres), np.uint8)
    at = 0
    for g, w, n in zip(groups, widths, nres):
        kernel.run_rows(np.ascontiguousarray(lengths[g]), [p[g] for p in rowptrs],
                        [st[g] for st in rowstrides], moffs, out[at:at + n],
                        valid[at:at + n], w, step.consts)
        at += n
        for rec in _recorders:
            rec.append((kernel, len(g), w, moffs))
    empty = np.repeat([len(g) == 0 if order == "col" else not lengths[g].any()
                       for g in groups], nres).astype(bool)
    if len(groups) > 1 or kept:
        order = ("groups", tuple(struct.outer[d] for d in kept), nres, order == "all")
    return struct, (out, valid.view(bool), any(masked), skipna, step.mean, order, empty)


def _fold_width(lengths: np.ndarray, last, op: str, axes) -> int:
    """The length of the row that rows of `lengths` fold into, element by element: rows of
    one length n, rows of length 1 stretching (to 0 as well); ShapeError otherwise."""
    if last is not None:
        n = last
    else:
        long = lengths[lengths != 1]
        n = int(long.max()) if len(long) else int(len(lengths) > 0)
    bad = (lengths != n) & (lengths != 1)
    if bad.any():
        i = int(np.argmax(bad))
        raise ShapeError(f"{op} over axes {list(axes)} needs rows of one length (or 1): "
                         f"row {i} has length {lengths[i]}, another has {n}")
    return n


def _group_result(array, values, mask, struct, order: tuple, axes, keep: bool, dtype):
    """The lazyk Array of a reduction over some outer axes: the kept outer dims, then a
    row per result (`var` when the operands' last dim is var) unless the last axis folded
    too; `keep` puts a 1 where each reduced axis was."""
    _, kept, nres, scalar = order
    flat = values.tolist()
    if mask is not None:
        flat = [v if m else None for v, m in zip(flat, mask)]
    items, at = [], 0
    for n in nres:
        items.append(flat[at] if scalar else flat[at:at + n])
        at += n

    def shape_up(items, dims):
        if not dims:
            return items[0]
        size = int(np.prod(dims[1:], dtype=np.int64))
        return [shape_up(items[i * size:(i + 1) * size], dims[1:]) for i in range(dims[0])]
    data = shape_up(items, list(kept))
    dims = [str(n) for n in kept] + ([] if scalar else
                                     ["var" if struct.var else str(struct.last)])
    if keep:
        def wrap(x, level):
            return [x] if level == 0 else [wrap(v, level - 1) for v in x]
        for a in sorted(axes):
            data = wrap(data, a)
            dims.insert(a, "1")
    if mask is None and not (not scalar and struct.var):
        shape = tuple(int(d) for d in dims)
        return array(np.asarray(data, dtype=dtype).reshape(shape))
    text = " * ".join(dims + [("?" if mask is not None else "") + np.dtype(dtype).name])
    return array(data, type=text)


def _outer_result(array, values, mask, struct, order: str, keep: bool, dtype):
    """The lazyk Array of a reduction over every outer axis ("col": one row left, `var`
    when the operands' last dim is var) or over all axes ("all": a scalar)."""
    lead = (1,) * len(struct.outer) if keep else ()
    if order == "all":
        lead += (1,) if keep else ()
        last = None
    else:
        last = "var" if struct.var else str(len(values))
    values = np.ascontiguousarray(values, dtype=dtype)
    lengths = np.array([len(values)], np.int64)
    if last is None:
        values = values.reshape(())
        mask = None if mask is None else np.asarray(mask).reshape(())
    elif last != "var":
        last = len(values)
    return build_rows(values, mask, lead, last, lengths)


_recorders: list = []


def explain(expr) -> str:
    """How a var / option expression runs: the shape step, then each fused segmented kernel
    (spec, order, kernel data, LLVM IR). Runs the expression once on its data."""

    e = as_expr(expr)
    record: list = []
    _recorders.append(record)
    try:
        result = evaluate(e)
    finally:
        _recorders.remove(record)
    out = [f"== ragged expression: {e.type} -> {result.type}",
           f"== segmented kernels: {len(record)} (elementwise body and reduction fused)"]
    for k, (kern, nrows, ncols, moffs) in enumerate(record):
        out.append(f"== kernel {k + 1}: order {kern.order!r} (row: one result per row; col: "
                   "per position over the outer axes; all: one), skipna "
                   f"{kern.skipna}, mean {kern.mean}, masked {list(kern.masked)}")
        out.append(format_spec(kern.spec))
        fields = [("function", "void *"), ("destructor", "void (*)(ckernel_prefix *)"),
                  ("ndim", "int64 = 0"), ("nrows", f"int64 = {nrows}"),
                  ("ncols", f"int64 = {ncols}")]
        fields += [(f"mask_offset[{j}]", f"int64 = {m or 0}") for j, m in enumerate(moffs)]
        out.append("== kernel data\n" + "\n".join(
            f"  {8 * i:4d}  {n:<16} {t}" for i, (n, t) in enumerate(fields)))
        out.append("== src: lengths[nrows], then per input rowptr[nrows], rowstride[nrows]")
        out.append(f"== LLVM IR\n{kern.ir}")
    return "\n".join(out)


runtime.install_path("ragged", evaluate_if_ragged)

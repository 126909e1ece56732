"""Expressions over ragged (`var`) and missing-value (`?T`) arrays.

Most expressions run in one generated loop nest that follows the result type
(`lazyk.nestrun`): fixed and var dims in any order and at any depth. What the nest does
not take (`?var` rows under a fold over several, not all, axes at or above them; `?0`
rows) runs on the row path of this module, which handles fixed dims with at most one
trailing var or `?var` dim. `out=` of a var / option type is
stored in place by `lazyk.storerows`.

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

Missing rows (`?var` last dims) line up with any row and stay missing; `where` takes the
rows of its condition and of the branch each element selects (`_result_rows`). A missing
row reduced along its own axis is a missing result (skipna too, as Awkward's); folded
into other rows it is skipped under skipna, else its group's result is missing.

Supported forms: fixed dims, then at most one `var` or `?var` dim as the last dim, over
`T` or `?T` numeric; NumPy arrays and scalars broadcast against them.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from lazyk import runtime
from lazyk.array import Array, array
from lazyk.device import common_device
from lazyk.errors import CastingError, NotSupportedError, ShapeError
from lazyk.expr import Expr, as_expr, leaf_data
from lazyk.graph import REDUCE_OP, toposort
from lazyk.interchange import build_rows, masked, offsets_array
from lazyk.leaves import describe_ragged as describe
from lazyk.leaves import is_ragged
from lazyk.nestrun import evaluate_nest, explain_nests
from lazyk.rowrules import RECORDERS, branch_masks, fused_step, inline_reductions, seed, selects
from lazyk.rows import (
    from_numpy,
    gather,
    line_up,
    line_up_rows,
    row_view,
    row_view_numpy,
)
from lazyk.runtime import as_out, plan, run_program
from lazyk.segkernel import segmented_kernel
from lazyk.spec import format_spec
from lazyk.storerows import is_ragged_type, store
from lazyk.textrows import computed
from lazyk.textrows import fused as fuse_strings
from lazyk.textrows import lower as lower_strings


def evaluate_if_ragged(expr, out=None, casting: str = "same_kind"):
    """`evaluate(expr, out, casting)` when a leaf is a var / option array, else
    NotImplemented (the "ragged" evaluation path of `lazyk.runtime.evaluate`)."""
    if not any(is_ragged(leaf_data(v)) for v in expr.env.values()):
        return NotImplemented
    common_device({n: leaf_data(v) for n, v in expr.env.items()})  # never on the GPU
    return evaluate(expr, out, casting)


def evaluate(expr, out=None, casting: str = "same_kind"):
    """Compute an expression with var / option leaves; returns a new lazyk Array, or `out`.

    `out` (NumPy or fixed lazyk array) takes results without var dims or missing values:
    the kernel's per-row results are stored into it as assignment does (broadcasting,
    `casting`). A lazyk array `out` with var dims or `?T` elements takes a result of the
    same structure: the same dims, the same row lengths (ShapeError naming the row and
    both lengths otherwise), a dtype `casting` allows (CastingError), `?T` when the
    result has missing values; its values and validity are written in place.
    """
    # String operations run in the loop nest with the numeric work where it takes them,
    # else they become numeric leaves first (lazyk.textrows).
    done = fuse_strings(expr) if out is None else None
    if done is not None:
        return done
    expr, before = lower_strings(expr), expr
    done = computed(before, expr) if out is None else None
    if done is not None:
        return done
    if out is None:
        return _evaluate(expr)
    if isinstance(out, Array) and is_ragged_type(out.type):
        if out.readonly:
            raise ValueError("output array is read-only")
        return store(_evaluate(expr), out, casting)

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
        raise NotSupportedError(f"out= of type {target.dtype} array{list(target.shape)} "
                                f"for a {result.type} result: pass a lazyk array of the "
                                "result's type and row lengths (e.g. lazyk.full(type, 0, "
                                "lengths=...) or lazyk.from_offsets(offsets, np.empty(n)))")
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
    got = evaluate_nest(expr)
    if got is not None:
        return got
    root = expr.node
    red_node = root
    reduce_arg = None
    if root.op == REDUCE_OP:
        reduce_arg, root = root.arg, root.srcs[0]
    if any(n.op == REDUCE_OP for n in toposort(root)):
        # A reduction feeding more work: compute it first, then it is just another leaf.
        root, expr = inline_reductions(root, expr)
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
    elif branch_masks(root, names, leaves):
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
    rowmask = struct.rowmask  # ?var operands: the rows present in all of them
    if fused is not None:
        # One kernel did the elementwise work and the per-row reduction (no reduceat).
        values, valid, any_mask, skipna = fused[:4]
        order = fused[5] if len(fused) > 5 else "row"
        gone = fused[7] if len(fused) > 7 else None
        # missing rows make the result optional, as missing values do
        any_mask = any_mask or rowmask is not None
        op, keep = reduce_arg[0], reduce_arg[2]
        extremum = op in ("min", "max")
        seeded = extremum and len(reduce_arg) > 4
        if seeded or rowmask is not None:
            empty = fused[6] if len(fused) > 6 else struct.lengths == 0
        if rowmask is not None and op == "mean" and not fused[2]:
            valid = valid & ~empty  # the mean of nothing is missing, as over ?T values
        if seeded:
            values, valid = seed(values, valid, reduce_arg, empty, any_mask and not skipna)
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
        rows_gone = None  # per result row (last dim kept): missing
        if rowmask is not None and order == "row":
            # a missing row's reduction is missing, with skipna too (as Awkward's)
            mask = rowmask if mask is None else mask & rowmask
        elif gone is not None and not skipna:
            scalar = order == "all" or isinstance(order, tuple) and order[3]
            if scalar:
                mask = ~gone[1] if mask is None else mask & ~gone[1]
            else:
                rows_gone = gone[0]
        option = mask is not None
        if isinstance(order, tuple):
            return _group_result(array, values, mask, struct, order, reduce_arg[1], keep,
                                 red_node.dtype, rows_gone)
        if order != "row":
            return _outer_result(array, values, mask, struct, order, keep, red_node.dtype,
                                 rows_gone)
        has_last = keep
        if option or has_last:
            lengths = np.ones(len(lengths), np.int64)  # one value per row
    if fused is None and reduce_arg is None:
        data = {n: op.values[ix] for n, op, ix in zip(names, ops_, index)}
        masks = {n: op.mask[ix] for n, op, ix in zip(names, ops_, index) if op.mask is not None}
        with np.errstate(all="ignore"):
            values = run_program(plan(root), data) if data else None
        mask = _result_mask(root, data, masks) if masks else None
        wild = struct.lengths if rowmask is None else struct.wild
        values = np.broadcast_to(values, (int(wild.sum()),))
        if rowmask is not None:
            rowmask = _result_rows(root, names, ops_, index, data, masks, struct)
            if not (rowmask | (wild == 0)).all():
                keep = np.repeat(rowmask, wild)  # the values of missing rows are dropped
                values = values[keep]
                mask = None if mask is None else np.broadcast_to(mask, keep.shape)[keep]
            lengths = np.where(rowmask, wild, 0)
        option = mask is not None
    if reduce_arg is not None and fused is None:
        # Reductions run only inside a fused segmented kernel, never on a kernel's output.
        op, axes = reduce_arg[:2]
        types = ", ".join(str(v.array.type) if is_ragged(v) else f"{np.shape(v)} {v.dtype}"
                          for v in leaves)
        raise NotSupportedError(f"{op} over axes {list(axes)} of an expression over {types}: "
                                "it does not fuse into one segmented kernel (byte-swapped "
                                "leaves, or a mean accumulated in an integer dtype)")
    if rowmask is not None and reduce_arg is None:
        return _rows_result(values.astype(red_node.dtype, copy=False), mask, rowmask,
                            tuple(outer), "var" if struct.var else struct.last, lengths)
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


def _result_mask(root, data: dict, masks: dict) -> np.ndarray | None:
    """Present flags of every result value (None: all present): missing in, missing out,
    except that `where(c, x, y)` is missing where `c` is, else where the branch it selects
    is (as Awkward and numpy.ma; a constant `c` takes every mask, see `selects`)."""
    memo: dict = {}

    def both(a, b):
        return b if a is None else a if b is None else a & b

    def mask(node):
        if id(node) in memo:
            return memo[id(node)]
        if node.op == "input":
            m = masks.get(node.arg)
        elif selects(node):
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


def _row_map(rowmask: np.ndarray, outer: tuple, result_outer: tuple) -> np.ndarray:
    """An operand's present rows, per result row (its outer dims broadcast)."""
    return np.broadcast_to(rowmask.reshape(outer), result_outer).reshape(-1)


def _result_rows(root, names, ops_, index, data, masks, struct) -> np.ndarray:
    """Present flags of the result's rows when ?var operands miss some: a row is missing
    where an operand feeding it misses its row, except that `where(c, x, y)` takes the
    rows of `c` and, element by element, of the branch it selects (as for values: a row
    whose elements all come from x is present even where y misses its row; a missing
    value of `c` selects nothing). A row with no element takes the condition's rows only."""
    flags, rows = {}, {}
    for n, op, ix in zip(names, ops_, index):
        if op.rowmask is not None:
            if not isinstance(ix, slice):  # a slice reads present rows only
                flags[n] = ix != len(op.values) - 1  # not the placeholder of a missing row
            rows[n] = _row_map(op.rowmask, op.outer, struct.outer)
    wild = struct.wild
    present = _row_rule(root, rows, len(wild))
    full = wild > 0
    if not flags:  # every operand's present rows are the result's rows
        present[full] = True
    elif full.any():
        elem = _element_rows(root, data, masks, flags, int(wild.sum()))
        starts = np.cumsum(wild) - wild
        present[full] = np.logical_and.reduceat(elem, starts[full])
    return present


def _element_rows(root, data: dict, masks: dict, flags: dict, n: int) -> np.ndarray:
    """Per result element: whether the rows it is computed from are present (`flags`: per
    operand element, its row present), `where` taking its condition's row and the row of
    the branch it selects."""
    memo: dict = {}

    def both(a, b):
        return b if a is None else a if b is None else a & b

    def rule(node):
        if id(node) in memo:
            return memo[id(node)]
        if node.op == "input":
            r = flags.get(node.arg)
        elif selects(node):
            r, a, b = (rule(s) for s in node.srcs)
            if a is not None or b is not None:
                with np.errstate(all="ignore"):
                    cond = np.asarray(run_program(plan(node.srcs[0]), data), dtype=bool)
                yes = np.ones(1, bool)
                taken = np.where(cond, yes if a is None else a, yes if b is None else b)
                unknown = _result_mask(node.srcs[0], data, masks)  # missing c: no branch
                r = both(r, taken if unknown is None else taken | ~unknown)
        else:
            r = None
            for s in node.srcs:
                r = both(r, rule(s))
        memo[id(node)] = r
        return r
    r = rule(root)
    return np.ones(n, bool) if r is None else np.broadcast_to(r, (n,))


def _row_rule(root, rows: dict, nrows: int) -> np.ndarray:
    """Present flags of result rows from the operands' rows, for rows with no element:
    missing in, missing out; `where` takes its condition's rows (it selects nothing)."""
    memo: dict = {}

    def both(a, b):
        return b if a is None else a if b is None else a & b

    def rule(node):
        if id(node) not in memo:
            if node.op == "input":
                r = rows.get(node.arg)
            elif selects(node):
                r = rule(node.srcs[0])
            else:
                r = None
                for s in node.srcs:
                    r = both(r, rule(s))
            memo[id(node)] = r
        return memo[id(node)]
    r = rule(root)
    return np.ones(nrows, bool) if r is None else np.array(np.broadcast_to(r, (nrows,)))


def _rows_result(values, mask, rowmask, outer: tuple, last, lengths) -> object:
    """The Array of rows with missing ones: `outer * ?var * T` over the flat values of the
    present rows (offsets next to a row mask, no Python lists); a fixed last dim (`?n`)
    goes through nested lists."""
    values = np.ascontiguousarray(values)
    if last == "var":
        offsets = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        content = array(values) if mask is None else masked(values, np.asarray(mask))
        return offsets_array(offsets, content, np.asarray(rowmask, bool), outer=tuple(outer),
                             check=False)
    if int(last) == 0 and len(rowmask):
        raise NotSupportedError(f"missing rows against a last dim of size 0 (a "
                                f"'?0 * {values.dtype}' result)")
    flat = values.tolist()
    if mask is not None:
        flat = [v if m else None for v, m in zip(flat, np.asarray(mask))]
    rows, at = [], 0
    for ok, n in zip(np.asarray(rowmask, bool), lengths):
        rows.append(flat[at:at + n] if ok else None)
        at += int(n) if ok else 0

    def shape_up(items, dims):
        if not dims:
            return items[0]
        size = int(np.prod(dims[1:], dtype=np.int64))
        return [shape_up(items[i * size:(i + 1) * size], dims[1:]) for i in range(dims[0])]
    text = " * ".join([str(d) for d in outer] + [f"?{int(last)}", ("?" if mask is not None
                                                                  else "") + values.dtype.name])
    return array(shape_up(rows, list(outer)), type=text)


def _option_kinds(leaves) -> tuple[bool, bool]:
    """(any leaf with missing rows `?var`, any leaf with missing values `?T`)."""
    rows = vals = False
    for v in leaves:
        if is_ragged(v):
            text = str(v.array.type)
            rows = rows or "?var" in text
            vals = vals or text.rsplit("* ", 1)[-1].startswith("?")
    return rows, vals


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
    rows, option = _option_kinds(leaves)
    last = [("?" if rows else "") + ("var" if struct.var else str(struct.last))] \
        if struct.var or struct.last is not None else []
    text = " * ".join([str(d) for d in outer] + last +
                      [("?" if option else "") + np.dtype(root.dtype).name])
    return array(_no_rows(list(outer)), type=text)


def _no_rows(dims: list) -> list:
    """Nested empty lists for outer dims with a zero among them."""
    return [] if not dims or not dims[0] else [_no_rows(dims[1:]) for _ in range(dims[0])]


def _leaf_dtype(root, name: str) -> np.dtype:
    for n in toposort(root):
        if n.op == "input" and n.arg == name:
            return n.dtype
    return np.dtype(np.float64)


def _fused_row_reduction(expr, names, ops_, struct, index, reduce_arg):
    """Values and valid flags per row from ONE fused kernel, or None when not expressible."""
    got = fused_step(expr.node, dict(zip(names, zip(ops_, index))), reduce=True)
    if got is None:
        return None
    step, by_name = got
    spec = step.spec
    native = tuple(np.dtype(d).newbyteorder("=") for d in spec.inputs)
    spec = replace(spec, inputs=native, aligned=(True,) * len(native))
    acc = np.dtype(spec.outputs[0][1])
    inputs, masks, masked = [], [], []
    # ?var: the index lines up missing rows too; the kernel folds the present rows only
    keep = None if struct.rowmask is None else np.repeat(struct.rowmask, struct.wild)
    for n, dt in zip(step.inputs, native):
        op, ix = by_name[n]
        ix = ix if keep is None else np.arange(len(keep))[keep] if isinstance(ix, slice) \
            else ix[keep]
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
    gone = None
    if order != "row" and struct.rowmask is not None:
        # missing rows fold nothing (skipped); without skipna they make their group's
        # result missing (`gone`), once the present rows have lined up
        gone = np.array([not struct.rowmask[g].all() for g in groups], bool)
        groups = [g[struct.rowmask[g]] for g in groups]
    if order == "col":
        widths = [_fold_width(struct.lengths[g], struct.last, reduce_arg[0], folded,
                              None if gone is None else g) for g in groups]
    got = fused_step(expr.node, dict(zip(names, range(len(names)))), reduce=True)
    if got is None:
        return None
    step, by_name = got
    spec = step.spec
    acc = np.dtype(spec.outputs[0][1])
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
        for rec in RECORDERS:
            rec.append((kernel, len(lengths), 0, moffs))  # (a nest records ("nest", ...))
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
        for rec in RECORDERS:
            rec.append((kernel, len(g), w, moffs))
    empty = np.repeat([len(g) == 0 if order == "col" else not lengths[g].any()
                       for g in groups], nres).astype(bool)
    if gone is not None:
        gone = (gone, np.repeat(gone, nres).astype(bool))  # per group, per result value
    if len(groups) > 1 or kept:
        order = ("groups", tuple(struct.outer[d] for d in kept), nres, order == "all")
    return struct, (out, valid.view(bool), any(masked), skipna, step.mean, order, empty, gone)


def _fold_width(lengths: np.ndarray, last, op: str, axes, rows=None) -> int:
    """The length of the row that rows of `lengths` fold into, element by element: rows of
    one length n, rows of length 1 stretching (to 0 as well); ShapeError otherwise (naming
    the row: `rows[i]` when given, the flat row index of lengths[i])."""
    if last is not None:
        n = last
    else:
        long = lengths[lengths != 1]
        n = int(long.max()) if len(long) else int(len(lengths) > 0)
    bad = (lengths != n) & (lengths != 1)
    if bad.any():
        i = int(np.argmax(bad))
        raise ShapeError(f"{op} over axes {list(axes)} needs rows of one length (or 1): "
                         f"row {i if rows is None else int(rows[i])} has length "
                         f"{lengths[i]}, another has {n}")
    return n


def _group_result(array, values, mask, struct, order: tuple, axes, keep: bool, dtype,
                  rows_gone=None):
    """The lazyk Array of a reduction over some outer axes: the kept outer dims, then a
    row per result (`var` when the operands' last dim is var) unless the last axis folded
    too; `keep` puts a 1 where each reduced axis was. `rows_gone` (missing rows folded
    without skipna): per result row, missing."""
    _, kept, nres, scalar = order
    flat = values.tolist()
    if mask is not None:
        flat = [v if m else None for v, m in zip(flat, mask)]
    items, at = [], 0
    for g, n in enumerate(nres):
        items.append(flat[at] if scalar else None if rows_gone is not None and rows_gone[g]
                     else flat[at:at + n])
        at += n

    def shape_up(items, dims):
        if not dims:
            return items[0]
        size = int(np.prod(dims[1:], dtype=np.int64))
        return [shape_up(items[i * size:(i + 1) * size], dims[1:]) for i in range(dims[0])]
    data = shape_up(items, list(kept))
    dims = [str(n) for n in kept] + ([] if scalar else
                                     [("" if rows_gone is None else "?") +
                                      ("var" if struct.var else str(struct.last))])
    if keep:
        def wrap(x, level):
            return [x] if level == 0 else [wrap(v, level - 1) for v in x]
        for a in sorted(axes):
            data = wrap(data, a)
            dims.insert(a, "1")
    if mask is None and not (not scalar and struct.var) and rows_gone is None:
        shape = tuple(int(d) for d in dims)
        return array(np.asarray(data, dtype=dtype).reshape(shape))
    text = " * ".join(dims + [("?" if mask is not None else "") + np.dtype(dtype).name])
    return array(data, type=text)


def _outer_result(array, values, mask, struct, order: str, keep: bool, dtype,
                  rows_gone=None):
    """The lazyk Array of a reduction over every outer axis ("col": one row left, `var`
    when the operands' last dim is var) or over all axes ("all": a scalar); `rows_gone`:
    the one row is missing (`?var`) where it is True."""
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
    if rows_gone is not None and last is not None:
        if rows_gone[0]:
            values, lengths = values[:0], np.zeros(1, np.int64)
            mask = None if mask is None else np.asarray(mask)[:0]
        return _rows_result(values, mask, ~np.asarray(rows_gone), lead, last, lengths)
    return build_rows(values, mask, lead, last, lengths)


def explain(expr) -> str:
    """How a var / option expression runs: the shape step, then each fused segmented kernel
    (spec, order, kernel data, LLVM IR). Runs the expression once on its data."""

    e = as_expr(expr)
    record: list = []
    RECORDERS.append(record)
    try:
        result = evaluate(e)
    finally:
        RECORDERS.remove(record)
    nests = [r[1:] for r in record if r[0] == "nest"]
    record = [r for r in record if r[0] != "nest"]
    out = [f"== ragged expression: {e.type} -> {result.type}"]
    if nests:
        out.append(explain_nests(nests))
    if record or not nests:
        out.append(f"== segmented kernels: {len(record)} (elementwise body and reduction "
                   "fused)")
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

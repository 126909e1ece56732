"""Expressions over ragged (`var`) and missing-value (`?T`) arrays.

Most expressions run in one generated loop nest that follows the result type
(`codegen.nest`, `lazyk.nestkernel`): fixed and var dims in any order and at any depth
(`var * var * T`, `N * var * 4 * T`, `var * var * var * T`) over `T` or `?T`, elementwise
work with the broadcasting rules below, and reductions over the last axis, over one
other axis (rows below it fold element by element, length-1 rows stretching) or over
every axis. Rows are read in place from the arrmeta and checked inside the kernel (a bad
row raises, naming it); ragged results are written by the kernel after a cheap pass that
counts their row lengths. What the nest does not take (several but not all axes, except
sum / prod / any / all over the last few; stepping views; `?var` rows) runs on the row
path described next, which handles fixed dims with at most one trailing var dim.

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

import ctypes
from dataclasses import replace

import numpy as np

from lazyk import arrmeta as M
from lazyk import runtime
from lazyk import types as T
from lazyk.array import Array, array
from lazyk.backend.outputs import empty as fresh
from lazyk.codegen.nest import nest_layout
from lazyk.device import common_device
from lazyk.errors import CastingError, NotSupportedError, ShapeError
from lazyk.expr import Expr, as_expr, leaf_data, wrap_array
from lazyk.expr import reduce as expr_reduce
from lazyk.graph import REDUCE_OP, rewrite, toposort
from lazyk.interchange import build_rows, masked, offsets_array, regular
from lazyk.leaves import describe_ragged as describe
from lazyk.leaves import is_ragged
from lazyk.nestkernel import nest_kernel
from lazyk.nestkernel import split as nest_split
from lazyk.rows import (
    check_extent,
    from_numpy,
    gather,
    line_up,
    line_up_rows,
    row_view,
    row_view_numpy,
)
from lazyk.runtime import as_out, canonical, plan, run_program
from lazyk.segkernel import segmented_kernel
from lazyk.spec import format_spec
from lazyk.textrows import computed
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
    # String operations become numeric leaves first (lazyk.textrows).
    expr, before = lower_strings(expr), expr
    done = computed(before, expr) if out is None else None
    if done is not None:
        return done
    if out is None:
        return _evaluate(expr)
    if isinstance(out, Array) and _ragged_type(out.type):
        return _into_ragged(expr, out, casting)

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
    got = _nest(expr)
    if got is not None:
        return got
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
        elif _selects(node):
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
            elif _selects(node):
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
        for rec in _recorders:
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
    nests = [r[1:] for r in record if r[0] == "nest"]
    record = [r for r in record if r[0] != "nest"]
    out = [f"== ragged expression: {e.type} -> {result.type}"]
    if nests:
        out.append(_explain_nests(nests))
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


# ---------------------------------------------------------------- out= of a ragged type
def _ragged_type(t) -> bool:
    """Whether a lazyk type has var dims or options (a ragged `out`)."""
    while isinstance(t, (T.FixedDim, T.VarDim)):
        if isinstance(t, T.VarDim):
            return True
        t = t.elem
    return isinstance(t, T.Option)


def _dims_of(t) -> tuple[list, T.Type, bool]:
    """(dims: sizes or "var", element type, option) of an array type."""
    dims = []
    while isinstance(t, (T.FixedDim, T.VarDim)):
        dims.append(t.size if isinstance(t, T.FixedDim) else "var")
        t = t.elem
    option = isinstance(t, T.Option)
    return dims, t.elem if option else t, option


def _into_ragged(expr, out: Array, casting: str) -> Array:
    """The result written into `out`, a lazyk array of its structure (see `evaluate`)."""
    if out.readonly:
        raise ValueError("output array is read-only")
    result = _evaluate(expr)
    rt, ot = result.type, out.type
    rdims, relem, ropt = _dims_of(rt)
    odims, oelem, oopt = _dims_of(ot)
    if len(rdims) != len(odims) or any(a != b for a, b in zip(rdims, odims)):
        raise ShapeError(f"out has type {ot}, the result {rt}: out needs the result's "
                         "dimensions and row lengths")
    for e in (relem, oelem):
        if not isinstance(e, T.Scalar) or e.kind not in "biufc":
            raise NotSupportedError(f"out= of type {ot} for a {rt} result (numeric "
                                    "elements T or ?T)")
    rdt, odt = relem.to_numpy(), oelem.to_numpy()
    if not np.can_cast(rdt, odt, casting):
        raise CastingError(f"cannot store the {rt} result into out of type {ot} under "
                           f"casting={casting!r}")
    if ropt and not oopt:
        raise CastingError(f"cannot store the {rt} result into out of type {ot}: missing "
                           "values need an out of ?T elements")
    if "var" in rdims[:-1]:  # var dims above the last: checked per level, then assigned
        _same_rows(result, out)
        out[...] = result
        return out
    rv, ov = row_view(result), row_view(out)  # fixed dims, then at most one var dim
    bad = rv.lengths != ov.lengths
    if bad.any():
        i = int(np.argmax(bad))
        row = f"row {[int(r) for r in np.unravel_index(i, rv.outer)]}" if rv.outer else \
            "the row"
        raise ShapeError(f"{row}: the result has length {int(rv.lengths[i])}, out has "
                         f"length {int(ov.lengths[i])}")
    total = int(rv.lengths.sum())
    src, dst = _dense(rv, total), _dense(ov, total)
    if src is not None and dst is not None:  # both back to back: one strided copy each
        with np.errstate(invalid="ignore"):  # missing slots hold no value: any bytes do
            np.copyto(dst[0], src[0], casting="unsafe")
        if dst[1] is not None:
            np.copyto(dst[1], 1 if src[1] is None else src[1] != 0)
        return out
    flat = gather(result, ov.dtype)  # values row after row (missing ones 0), and the mask
    mask = flat.mask
    _put_elements(ov.rowptr, ov.lengths, ov.stride, ov.dtype, flat.values)
    if ov.mask_offset is not None:
        valid = np.ones(total, np.uint8) if mask is None else mask.astype(np.uint8)
        _put_elements(ov.rowptr + ov.mask_offset, ov.lengths, ov.stride, np.dtype(np.uint8),
                      valid)
    return out


def _same_rows(result: Array, out: Array) -> None:
    """ShapeError naming the first var row whose length differs between the two arrays
    (same dims assumed; every var level compared, vectorized)."""
    rt, rm, ot, om = result.type, result.meta, out.type, out.meta
    # arrays with var dims live in MemoryBlocks: (block bytes, offset of element 0)
    rbuf, roffs = result.owner.buffer, np.array([result.ptr - result.owner.address])
    obuf, ooffs = out.owner.buffer, np.array([out.ptr - out.owner.address])
    ra = oa = 0
    level = 0
    while isinstance(rt, (T.FixedDim, T.VarDim)):
        if isinstance(rt, T.FixedDim):
            roffs = (roffs[:, None] + np.arange(rm[ra]) * rm[ra + 1]).reshape(-1)
            ooffs = (ooffs[:, None] + np.arange(om[oa]) * om[oa + 1]).reshape(-1)
            ra, oa = ra + 2, oa + 2
        else:
            rb, rfirst, rsz, rstride = M.var_rows(rm, ra, rbuf, roffs)
            ob, ofirst, osz, ostride = M.var_rows(om, oa, obuf, ooffs)
            bad = rsz != osz
            if bad.any():
                i = int(np.argmax(bad))
                raise ShapeError(f"dimension {level} (var), row {i} (counted over the dims "
                                 f"above): the result has length {int(rsz[i])}, out has "
                                 f"length {int(osz[i])}")
            roffs, rbuf = M.row_offsets(rfirst, rsz, rstride), rb.buffer
            ooffs, obuf = M.row_offsets(ofirst, osz, ostride), ob.buffer
            ra, oa = ra + M.VAR_META, oa + M.VAR_META
        level += 1
        rt, ot = rt.elem, ot.elem


def _dense(v, total: int):
    """(values view, mask-byte view or None) over rows that follow each other in memory
    with elements `itemsize` apart (offsets over dense content); None otherwise."""
    isz = v.dtype.itemsize
    keep = v.lengths > 0
    ptr, ln = v.rowptr[keep], v.lengths[keep]
    if total == 0 or v.stride != isz or not bool(np.all(ptr[1:] == ptr[:-1] +
                                                       ln[:-1] * isz)):
        return None
    start = int(ptr[0])
    raw = np.ctypeslib.as_array((ctypes.c_uint8 * (total * isz)).from_address(start))
    mask = None
    if v.mask_offset is not None:
        shadow = np.ctypeslib.as_array((ctypes.c_uint8 * (total * isz)).from_address(
            start + v.mask_offset))
        mask = shadow[::isz]  # the first byte of each shadow slot
    return raw.view(v.dtype), mask


def _put_elements(rowptr: np.ndarray, lengths: np.ndarray, stride: int, dtype: np.dtype,
                  values: np.ndarray) -> None:
    """Write `values` (row after row) into the rows' elements in place (the inverse of
    `rows._elements`; the rows were checked inside their content by `row_view`)."""
    total = len(values)
    if total == 0:
        return
    isz = dtype.itemsize
    keep = lengths > 0
    ptr, ln = rowptr[keep], lengths[keep]
    raw = np.ascontiguousarray(values, dtype=dtype).view(np.uint8).reshape(total, isz)
    if stride == isz and bool(np.all(ptr[1:] == ptr[:-1] + ln[:-1] * stride)):
        # rows back to back (offsets over dense content): one contiguous copy
        dst = np.ctypeslib.as_array((ctypes.c_uint8 * (total * isz)).from_address(int(ptr[0])))
        dst[:] = raw.reshape(-1)
        return
    starts = np.cumsum(ln) - ln
    addr = np.repeat(ptr - starts * stride, ln) + np.arange(total, dtype=np.int64) * stride
    lo = int(addr.min())
    span = int(addr.max()) - lo + isz
    dst = np.ctypeslib.as_array((ctypes.c_uint8 * span).from_address(lo))
    dst[(addr - lo)[:, None] + np.arange(isz)] = raw


runtime.install_path("ragged", evaluate_if_ragged)


# ---------------------------------------------------------------- loop-nest kernels
# Any nesting of fixed and var dims runs in one generated loop nest (`codegen.nest`): rows
# read in place from the arrmeta, checked and paired inside the kernel, results written by
# the kernel (a count pass first gives the lengths of result var rows).

class _NestOperand:
    """One leaf as the nest reads it: per own dim ('f', size, stride) or ('v', width,
    (stop_delta, content, index_stride, stride, length)); its address, dtype, mask."""

    def __init__(self, dims, ptr, dtype, mask_offset, aligned):
        self.dims, self.ptr, self.dtype = dims, ptr, dtype
        self.mask_offset, self.aligned = mask_offset, aligned


def _nest_operand(leaf):
    """A `_NestOperand`, or None for a leaf the nest does not read (records, ?var, ...)."""
    if isinstance(leaf, np.ndarray):
        al = leaf.dtype.alignment
        ptr = leaf.__array_interface__["data"][0]
        dims = [("f", n, s) for n, s in zip(leaf.shape, leaf.strides)]
        aligned = ptr % al == 0 and all(s % al == 0 for s in leaf.strides)
        return _NestOperand(dims, ptr, leaf.dtype, None, aligned)
    if not is_ragged(leaf):
        return None
    arr = leaf.array
    t, meta, k, dims = arr.type, arr.meta, 0, []
    addrs = [arr.ptr]
    while type(t).__name__ in ("FixedDim", "VarDim"):
        if type(t).__name__ == "FixedDim":
            dims.append(("f", meta[k], meta[k + 1]))
            addrs.append(meta[k + 1])
            k += 2
        else:
            _, width, delta, content, istride, stride, length = meta[k:k + 7]
            if width not in (4, 8) or stride != istride:
                return None  # stepping views: the row path checks their first and last
            dims.append(("v", width, (delta, content, istride, stride, length)))
            addrs += [content, istride, stride]
            k += 7
        t = t.elem
    moff = None
    if type(t).__name__ == "Option":
        moff, t = meta[k], t.elem
    if type(t).__name__ != "Scalar":
        return None
    dt = t.to_numpy()
    if dt.kind not in "biufc":
        return None
    check_extent(arr)  # the kernel trusts the arrmeta's addresses and lengths
    return _NestOperand(dims, arr.ptr, dt, moff, all(a % dt.alignment == 0 for a in addrs))


def _old_form(leaves) -> bool:
    """Whether the row path (fixed dims, at most one trailing var dim) can read the leaves."""
    for v in leaves:
        if is_ragged(v):
            t, dims = v.array.type, []
            while type(t).__name__ in ("FixedDim", "VarDim"):
                dims.append(type(t).__name__ == "VarDim")
                t = t.elem
            if any(dims[:-1]):
                return False
    return True


def _nest_plan(ops_):
    """Result levels ('f' / 'v'), fixed sizes, and per operand its kind at each level."""
    nlev = max(len(o.dims) for o in ops_)
    levels, sizes = [], []
    for k in range(nlev):
        ds = [o.dims[k - nlev + len(o.dims)] for o in ops_ if k - nlev + len(o.dims) >= 0]
        fixed = {d[1] for d in ds if d[0] == "f" and d[1] != 1}
        if len(fixed) > 1:
            raise ShapeError(f"dim {k}: fixed sizes {sorted(fixed)} do not broadcast")
        if fixed:
            levels.append("f")
            sizes.append(fixed.pop())
        elif any(d[0] == "v" for d in ds):
            levels.append("v")
            sizes.append(0)
        else:
            levels.append("f")
            sizes.append(1)
    kinds = []
    for o in ops_:
        lead = nlev - len(o.dims)
        # a fixed 1 broadcasts: stride 0 at a fixed level (no other structure for size 1),
        # the operand stays where the result level is var
        kinds.append(tuple("n" if k < lead or (o.dims[k - lead][0] == "f" and
                                               o.dims[k - lead][1] == 1 and levels[k] == "v")
                           else "f" if o.dims[k - lead][0] == "f" else str(o.dims[k - lead][1])
                           for k in range(nlev)))
    return tuple(levels), sizes, kinds


def _positions(r0: int, levels, sizes, offsets: dict, upto: int) -> list:
    """X[k]: how many level-k iterations come before level-0 row r0 (k < upto), from the
    fixed sizes and the result var levels' offsets known so far."""
    xs = []
    for k in range(upto):
        if k == 0:
            x = r0 if levels[0] == "f" else 0
        elif levels[k] == "f":
            x = xs[-1] * sizes[k]
        else:
            x = int(offsets[k][xs[-1]])
        if k == 0 and levels[0] == "v":
            x = int(offsets[0][1]) if r0 else 0
        xs.append(x)
    return xs


def _nest(expr):
    """Evaluate `expr` with one generated loop nest; None when the nest does not take it
    (the row path runs it), NotSupportedError when neither does."""
    root, red_node, reduce_arg = expr.node, expr.node, None
    if root.op == REDUCE_OP:
        reduce_arg, root = root.arg, root.srcs[0]
    if any(n.op == REDUCE_OP for n in toposort(root)):
        root, expr = _inline_reductions(root, expr)
    used = {n.arg for n in toposort(root) if n.op == "input"}
    names = [n for n in expr.env if n in used]
    leaves = [leaf_data(expr.env[n]) for n in names]
    got = None
    if reduce_arg is not None and len(reduce_arg[1]) > 1 and not _old_form(leaves) and \
            reduce_arg[0] in _COMPOSE and len(reduce_arg[1]) < len(root.shape) and \
            tuple(reduce_arg[1]) == tuple(range(len(root.shape) - len(reduce_arg[1]),
                                                len(root.shape))):
        return _nest_axes(Expr(root, expr.env), reduce_arg, red_node.dtype)
    if leaves and not _branch_masks(root, names, leaves):
        got = _nest_run(root, red_node, reduce_arg, names, leaves)
    elif leaves:
        # where() takes the missing state of the branch it selects: the elementwise part
        # runs first (its mask follows the body), then the reduction of its result
        got = _nest_run(root, root, None, names, leaves, where_masks=True)
        if got is not None and reduce_arg is not None:
            inner = as_expr(got)
            got = _nest(Expr(red_node.replace(srcs=(inner.node,)), inner.env))
    if got is None and not _old_form(leaves):
        types = ", ".join(str(v.array.type) if is_ragged(v) else f"{np.shape(v)} array"
                          for v in leaves)
        what = f"{reduce_arg[0]} over axes {list(reduce_arg[1])}" if reduce_arg else \
            "this expression"
        why = "missing rows (?var) do not mix with var dims above the last one" if any(
            is_ragged(v) and "?var" in str(v.array.type) for v in leaves) else \
            "with var dims above the last one, reductions run over one axis, all axes, " \
            "or (sum, prod, any, all) the last few axes"
        raise NotSupportedError(f"{what} of {types}: {why}")
    return got


def _nest_run(root, red_node, reduce_arg, names, leaves, where_masks=False):
    ops_ = [_nest_operand(v) for v in leaves]
    if any(o is None for o in ops_) or not any(o.dims for o in ops_):
        return None
    levels, sizes, kinds = _nest_plan(ops_)
    nlev = len(levels)
    if len(root.shape) != nlev:
        return None
    mode = "map" if reduce_arg is None else "reduce"
    axes = () if reduce_arg is None else tuple(reduce_arg[1])
    if mode == "reduce" and axes == tuple(range(nlev)) and nlev > 1:
        mode = "all"  # every axis: one partial fold per thread
    elif mode == "reduce" and len(axes) == 1 and axes[0] < nlev - 1:
        mode = f"fold{axes[0]}"  # a middle axis: rows below it fold element by element
    elif mode == "reduce" and axes != (nlev - 1,):
        return None  # several axes: the row path (fixed dims + one var dim) or refused
    node = root if reduce_arg is None else red_node.replace(srcs=(root,))
    node, by_name = canonical(node, dict(zip(names, range(len(names)))))
    prog = plan(_rows_graph(node))
    if len(prog.steps) != 1 or (prog.steps[0].spec.reduce is None) != (mode == "map"):
        return None
    step = prog.steps[0]
    if any(n not in by_name for n in step.inputs):
        return None
    spec = step.spec
    acc = np.dtype(spec.outputs[0][1])
    if step.mean and acc.kind not in "fc":
        return None
    sel = [ops_[by_name[n]] for n in step.inputs]
    sel_kinds = [kinds[by_name[n]] for n in step.inputs]
    labels = [by_name[n] for n in step.inputs]  # errors name the user's operand numbers
    for o, want in zip(sel, spec.inputs):
        if np.dtype(o.dtype).newbyteorder("=") != np.dtype(want).newbyteorder("="):
            return None  # a leaf stored in another dtype: the row path casts it
    spec = replace(spec, inputs=tuple(o.dtype for o in sel),
                   aligned=tuple(bool(o.aligned) for o in sel))
    maskd = tuple(o.mask_offset is not None for o in sel)
    skipna = bool(reduce_arg is not None and len(reduce_arg) > 3 and reduce_arg[3])
    if mode == "all":
        return _nest_all(spec, step, levels, sizes, sel, sel_kinds, maskd, skipna, labels,
                         leaves, reduce_arg, red_node)
    # the result's levels (their level numbers in the nest), their kinds and sizes
    res = list(range(nlev)) if mode == "map" else list(range(nlev - 1)) if \
        mode == "reduce" else [k for k in range(nlev) if k != axes[0]]
    nres = len(res)
    rl, rs = [levels[k] for k in res], [sizes[k] for k in res]
    rvar = [p for p in range(nres) if rl[p] == "v"]
    if any(rl[p] == "f" and rs[p] == 0 for p in range(nres) if rvar and rvar[0] < p < rvar[-1]):
        return None
    words, lay = _nest_words(levels, sizes, sel, sel_kinds)
    n0 = sizes[0] if levels[0] == "f" else 1
    r_end = (rs[0] if rl[0] == "f" else 1) if nres else 1
    offsets: dict = {}  # result level -> offsets of its rows
    keep = [leaves]
    # count passes: result var rows' lengths, one var level at a time (rows of a level are
    # the iterations of the level above, known once the levels above are counted)
    for p in rvar:
        nrows = _positions(r_end, rl, rs, offsets, p)[-1] if p else 1
        lens = np.empty(nrows, np.int64)
        w = words.copy()
        # earlier levels are written again with the same lengths: give them scratch copies
        scratch = {q: np.empty(len(offsets[q]) - 1, np.int64) for q in rvar if q < p}
        for q in rvar:
            if q <= p:
                w[lay["lens"] + 2 * res[q]] = (lens if q == p else scratch[q]).ctypes.data
        kern = nest_kernel(spec, levels, sel_kinds, maskd, mode, f"count{res[p]}", skipna,
                           step.mean)
        kern.run(w, step.consts, [(0, n0, 0, {res[q]: 0 for q in rvar if q <= p})],
                 (keep, lens, scratch), labels)
        for rec in _recorders:
            rec.append(("nest", kern, 1))
        off = np.zeros(nrows + 1, np.int64)
        np.cumsum(lens, out=off[1:])
        offsets[p] = off
    xs_end = _positions(r_end, rl, rs, offsets, nres) if nres else []
    nvals = xs_end[-1] if xs_end else 1
    out = fresh((nvals,), acc)  # large outputs reuse faulted-in blocks
    option = any(maskd)
    flags = np.empty(nvals, np.uint8) if option or mode != "map" else None
    words[3] = out.ctypes.data
    words[4] = 0 if flags is None else flags.ctypes.data
    for p in rvar:  # the fill pass checks every result row against these
        words[lay["lens"] + 2 * res[p]] = offsets[p].ctypes.data
    kern = nest_kernel(spec, levels, sel_kinds, maskd, mode, "fill", skipna, step.mean,
                       where_masks and any(maskd))
    parts = _nest_parts(levels, sizes, offsets, rvar, sel, sel_kinds, mode, res, n0)
    kern.run(words, step.consts, parts, (keep, out, flags, offsets), labels)
    for rec in _recorders:
        rec.append(("nest", kern, len(parts)))
    dims = [("v" if rl[p] == "v" else rs[p]) for p in range(nres)]
    if reduce_arg is None:
        mask = flags.view(bool) if option else None
        return _nest_result(out.astype(root.dtype, copy=False), mask, dims, offsets, xs_end)
    values, mask = _nest_reduced(out, flags, reduce_arg, option, skipna)
    if reduce_arg[2] and mode == "reduce":
        dims.append(1)
    got = _nest_result(values.astype(red_node.dtype, copy=False), mask, dims, offsets,
                       xs_end)
    if reduce_arg[2] and mode != "reduce":  # keepdims: a fixed 1 where the axis was
        got = got[(slice(None),) * axes[0] + (None,)]
    return got


def _nest_words(levels, sizes, sel, kinds):
    """The kernel data words that do not change between parts and passes."""
    lay = nest_layout(len(levels), len(sel))
    words = np.zeros(lay["params"] // 8, np.int64)
    for k, (lv, n) in enumerate(zip(levels, sizes)):
        words[lay["sizes"] + k] = n if lv == "f" else 0
    for j, (o, kind) in enumerate(zip(sel, kinds)):
        at = lay["ops"] + j * lay["per_op"]
        words[at] = o.ptr
        words[at + 1] = o.mask_offset or 0
        lead = len(levels) - len(o.dims)
        for k in range(len(levels)):
            if kind[k] == "n":
                continue
            d = o.dims[k - lead]
            base = at + 2 + 5 * k
            if d[0] == "f":
                words[base] = 0 if d[1] == 1 else d[2]
            else:
                words[base:base + 5] = d[2]
    return words, lay


def _nest_parts(levels, sizes, offsets, rvar, sel, kinds, mode, res, n0):
    """(lo, hi, first output, {var level: first row}) per thread, level-0 rows split by
    content (offsets are content prefix sums: a bisection, no pass over the rows).
    `offsets` and `rvar` count result levels; `res` gives their levels in the nest."""
    nres = len(res)
    if levels[0] != "f" or not nres or res[0] != 0 or (mode == "reduce" and len(levels) < 2):
        return [(0, n0, 0, {res[p]: 0 for p in rvar})]  # level 0 is not split
    rl, rs = [levels[k] for k in res], [sizes[k] for k in res]
    before = None
    if mode == "reduce" and not rvar and len(levels) == 2:
        before = _index_weight(sel, kinds, n0)  # one result per row: weigh by content
    if before is None:
        def before(r):
            return _positions(r, rl, rs, offsets, nres)[-1]
    bounds = nest_split(n0, before(n0), before)
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        xs = _positions(lo, rl, rs, offsets, nres)
        parts.append((lo, hi, xs[-1], {res[p]: (xs[p - 1] if p else 0) for p in rvar}))
    return parts


def _index_weight(sel, kinds, n0):
    """Content before level-0 row r of the first var operand at level 1 (its start index;
    a bad index only unbalances the split: the kernel checks every row)."""
    for o, kind in zip(sel, kinds):
        # (an operand of its own level-0 size: a broadcast one has fewer index entries)
        if kind[0] == "f" and kind[1] in ("4", "8") and o.dims[0][1] == n0:
            width, (delta, *_) = o.dims[1][1], o.dims[1][2]
            stride = o.dims[0][2]
            dt = np.dtype(np.int32 if width == 4 else np.int64)
            addr = o.ptr

            def start(r, a=addr, s=stride, d=delta, dt=dt, w=width):
                at = a + (r * s if r < n0 else (n0 - 1) * s + d)
                return int(np.frombuffer((ctypes.c_char * w).from_address(at), dt)[0])
            if n0 == 0:
                return None
            s0 = start(0)
            return lambda r: start(r) - s0
    return None


def _nest_reduced(out, flags, reduce_arg, any_mask: bool, skipna: bool, whole=False):
    """Values and present flags of a reduction (the rules of the row path)."""
    valid, nonempty = (flags & 1).astype(bool), (flags & 2).astype(bool)
    op = reduce_arg[0]
    extremum = op in ("min", "max")
    seeded = extremum and len(reduce_arg) > 4
    values = out
    if seeded:
        values, valid = _seed(values, valid, reduce_arg, ~nonempty, any_mask and not skipna)
    if not any_mask:
        if extremum and not valid.all():
            where = "array" if whole else f"row {int(np.argmin(valid))}"
            raise ValueError(f"zero-size {where} in reduction {op}, which has no identity")
        return values, None
    if skipna:
        return values, (valid if (extremum and not seeded) or op == "mean" else None)
    return values, valid


def _nest_result(values, mask, dims, offsets, xs):
    """The lazyk Array of a nest's result: fixed dims, var dims over their offsets."""
    var_at = [k for k, d in enumerate(dims) if d == "v"]
    if not var_at:
        shape = tuple(int(d) for d in dims)
        values = np.asarray(values, order="C").reshape(shape)
        return array(values) if mask is None else \
            masked(values, mask.reshape(shape))
    d = var_at[-1]
    tail = tuple(int(n) for n in dims[d + 1:])
    shape = (xs[d] if d < len(xs) else len(values),) + tail
    values = values.reshape(shape)
    cur = array(np.ascontiguousarray(values)) if mask is None else \
        masked(values, mask.reshape(shape))
    for k in range(d, -1, -1):
        if dims[k] == "v":
            outer = None if k != var_at[0] else tuple(int(n) for n in dims[:k])
            cur = offsets_array(offsets[k], cur, outer=outer, check=False)
        elif k > var_at[0]:
            cur = regular(cur, int(dims[k]))
    return cur


def _explain_nests(nests) -> str:
    """explain() text of the loop-nest kernels that ran: levels, operands, IR."""
    out = [f"== loop-nest kernels: {len(nests)} (the loop nest follows the result type; "
           "elementwise body and reduction fused)"]
    for k, (kern, nparts) in enumerate(nests):
        levels = " * ".join("var" if lv == "v" else "fixed" for lv in kern.levels)
        out.append(f"== nest {k + 1}: {kern.mode}, pass {kern.npass!r}, levels {levels}, "
                   f"{nparts} part(s) over threads")
        for j, kinds in enumerate(kern.kinds):
            what = {"n": "stays (broadcast)", "f": "strided", "4": "var rows, int32 indices",
                    "8": "var rows, int64 indices"}
            out.append(f"   input {j}{' (?T)' if kern.masked[j] else ''}: " +
                       ", ".join(what[c] for c in kinds))
        out.append(format_spec(kern.spec))
        out.append(f"== LLVM IR\n{kern.ir}")
    return "\n".join(out)


_FOLD = {"sum": np.add, "mean": np.add, "prod": np.multiply, "min": np.minimum,
         "max": np.maximum, "any": np.logical_or, "all": np.logical_and}


def _nest_all(spec, step, levels, sizes, sel, kinds, maskd, skipna, labels, leaves,
              reduce_arg, red_node):
    """A reduction over every axis: each part folds its level-0 rows into one partial
    result; the partials combine here (the rules of the row path for the total)."""
    words, _ = _nest_words(levels, sizes, sel, kinds)
    n0 = sizes[0] if levels[0] == "f" else 1
    bounds = [0, n0]
    if levels[0] == "f":
        before = _index_weight(sel, kinds, n0)
        if before is not None:
            bounds = nest_split(n0, before(n0), before)
    acc = np.dtype(spec.outputs[0][1])
    out, flags = np.empty(len(bounds) - 1, acc), np.zeros(len(bounds) - 1, np.uint8)
    words[3], words[4] = out.ctypes.data, flags.ctypes.data
    kern = nest_kernel(spec, levels, kinds, maskd, "all", "fill", skipna, step.mean)
    parts = [(lo, hi, t, {}) for t, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:]))]
    statuses = kern.run(words, step.consts, parts, (leaves, out, flags), labels)
    for rec in _recorders:
        rec.append(("nest", kern, len(parts)))
    op = reduce_arg[0]
    count = sum(int(st[6]) for st in statuses)
    bad, seen = bool((flags & 1).any()), bool((flags & 2).any())
    with np.errstate(all="ignore"):
        value = _FOLD[op].reduce(out).astype(acc)
        valid = not bad if any(maskd) and not skipna else True
        if op in ("min", "max") or (step.mean and (skipna or any(maskd))):
            valid = valid and count > 0
        if step.mean:
            value = (value / count).astype(acc)
    values, mask = _nest_reduced(np.array([value], acc),
                                 np.array([int(valid) | (int(seen) << 1)], np.uint8),
                                 reduce_arg, any(maskd), skipna, whole=True)
    dims = [1] * len(levels) if reduce_arg[2] else []
    return _nest_result(values.astype(red_node.dtype, copy=False), mask, dims, {}, [])


# Reductions whose fold over the last few axes is the fold over each last axis in turn,
# exactly (an identity for empty folds, no division). Over other axes a middle fold of
# nothing would become an empty row, which then folds as a row of length 0 instead of as
# nothing: those stay refused.
_COMPOSE = ("sum", "prod", "any", "all")


def _nest_axes(e, reduce_arg, dtype):
    """A reduction over the last few (not all) axes of a nest: one axis at a time, the
    highest first, each the last axis of what is left."""
    op, axes, keep = reduce_arg[:3]
    skipna = bool(len(reduce_arg) > 3 and reduce_arg[3])
    for a in sorted(axes, reverse=True):
        e = as_expr(expr_reduce(op, e, axis=a, keepdims=keep, skipna=skipna,
                                dtype=dtype).eval())
    return e.eval()

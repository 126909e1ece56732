"""Entry of expressions over var / option arrays (`evaluate_nest`): one loop nest
(`lazyk.runtime.nest_run`) where it takes the form, else the forms that run in two steps, the
elementwise part first. Folds over several axes at or above one `?var` dim, whatever dims
lie below it (`_rows_first`, `_middle_first`), folds over `?n` rows (a missing row against
a fixed dim, `?0` too) and a missing row folded along its own axis above fixed dims run the
elementwise part first (`_rows_first`); so do folds over missing rows at several levels
(`var * ?var * ?var * T`, `?var` with `?n`), each missing row filled at once
(`_filled_first`); their results are rebuilt with NumPy over offsets and present flags
(`rebuild`, `nest_results.fixed_rows`), never per row in Python. where()
operands that combine a missing row with other rows are computed first (`_parts_first`).
What the nest does not take raises NotSupportedError naming the types and the operation."""
from __future__ import annotations

import numpy as np

from lazyk.arrays.array import masked
from lazyk.arrays.trees import ranges
from lazyk.codegen.levels import VAR
from lazyk.errors import NotSupportedError
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import REDUCE_OP, graph_ops, input_names, rewrite, toposort
from lazyk.frontend.leaves import PickLeaf, is_ragged, leaf_data
from lazyk.frontend.operands import as_expr
from lazyk.frontend.ops import ARG_REDUCTIONS, ELEMENTWISE
from lazyk.frontend.reductions import reduce
from lazyk.runtime.nest_rebuild import (
    drop_rows,
    leaf_values,
    level_counts,
    missing_as_values,
    present_slots,
    rebuild,
)
from lazyk.runtime.nest_results import fixed_rows, nest_result
from lazyk.runtime.nest_run import nest_run
from lazyk.runtime.nest_select import evaluate_picks, has_picks
from lazyk.runtime.ragged_rules import branch_masks, inline_reductions, one_leaf_per_array, selects


def evaluate_nest(expr, dropped: set | None = None):
    """Evaluate `expr` with one generated loop nest (a few forms in two: the elementwise
    part, then the reduction of its result); NotSupportedError naming the types and the
    operation for what the nest does not take. `dropped`: see `_parts_first`."""
    dropped = set() if dropped is None else dropped
    first = parts_first(expr, dropped)
    return _evaluate_nest(expr) if first is None else evaluate_nest(first, dropped)


def parts_first(expr, dropped: set | None = None):
    """`expr` with the parts one nest must not pair computed first, decided from the
    operands' types, or None where it runs as one nest: where one nest would pair rows
    that the reference never pairs (a missing row hides the rows it is combined with).
    A ShapeError is then always rows that do not line up."""
    dropped = set() if dropped is None else dropped
    first = _parts_first(expr, True, dropped)
    first = _fixed_last(expr) if first is None else first
    return _parts_first(expr, False, dropped) if first is None else first


def scan_nest(expr, combine: str):
    """`expr`'s result with each value of an innermost row replaced by the running fold of
    the row so far (`combine`: "add" for cumsum, "multiply" for cumprod; `levels.Scan`),
    in one loop nest with the elementwise work that computes the values; None where that
    nest does not take the form (where() over missing values, a scalar): compute first."""
    root = expr.node
    if REDUCE_OP in graph_ops(root):
        root, expr = inline_reductions(root, expr)
    used = set(input_names(root))
    names = [n for n in expr.env if n in used]
    (root,), names = one_leaf_per_array([root], expr.env, names)
    leaves = [leaf_data(expr.env[n]) for n in names]
    if not leaves or branch_masks(root, names, leaves):
        return None
    return nest_run(root, root, None, names, leaves, scan=combine)


def _fixed_last(expr):
    """`expr` with each `x - 0` / `x * True` of x and a NumPy bool row of 0 / 1 (how a
    `?n` operand reads, `lazyk.frontend.expr`) moved above the elementwise work on it, up to a
    reduction or where() (x - 0 is x: only the pairing moves), or None when there is
    nothing to move: the reference pairs a `?n` operand's missing row with any row,
    while in one nest the fixed row would still pair with the rows under it."""
    if not any(getattr(leaf_data(v), "dtype", None) == np.bool_ for v in expr.env.values()):
        return None  # (no bool row: no `?n` operand; every evaluation asks, no graph walk)
    env, moved = dict(expr.env), []

    def fixed(node):
        row = _fixed_row(node, env)
        return None if row is None else (node.srcs[0], row.shape)

    def visit(node, srcs):
        node = node.replace(srcs=srcs) if srcs != node.srcs else node
        if node.op not in ELEMENTWISE or node.op == "where" or fixed(node):
            return node
        got = [fixed(s) for s in node.srcs]
        if not any(got):
            return node
        inner = node.replace(srcs=tuple(g[0] if g else s for g, s in zip(got, node.srcs)))
        shape = max((g[1] for g in got if g), key=len)
        e = Expr(inner, env)
        e = e * np.ones(shape, bool) if inner.dtype == np.bool_ else e - np.zeros(shape, bool)
        env.update(e.env)
        moved.append(node)
        return e.node.replace(shape=node.shape)  # (`?1` dims: a fixed 1 stays one)
    root = rewrite(expr.node, visit)
    return Expr(root, env) if moved else None


def _parts_first(expr, where_only: bool, dropped: set):
    """`expr` with the parts that combine a `?var` operand with others computed first, or
    None when there is none: the reference computes each operation's operands before it,
    so a row missing there is missing whatever the length of the other operands' rows,
    which one nest would still pair. `where_only`: the operands of where() (one nest
    would pair the rows of a branch it does not take, or give an empty row where the
    reference's row is missing); else every part that meets another operand with dims
    (`(xq + y) + z`: y's row would pair with z's where xq's row is missing; `(xq + y) * 2`
    pairs nothing more: one nest). `dropped`: parts that gave `?n` rows, not computed again."""
    qvar = {n for n, v in expr.env.items()
            if is_ragged(leaf_data(v)) and leaf_data(v).array.type.missing_var_rows}
    if not qvar or (not where_only and any(isinstance(v, PickLeaf) for v in expr.env.values())):
        return None  # (the tuples of combinations / cartesian: walked in one nest)
    env, done = dict(expr.env), []

    def combines(node):
        names = set(input_names(node))
        return node.op not in ("input", REDUCE_OP) and len(names) > 1 and bool(names & qvar)

    def visit(node, srcs):
        node = node.replace(srcs=srcs) if srcs != node.srcs else node
        if where_only and not selects(node):
            return node
        new = list(node.srcs)
        for i, src in enumerate(new):
            meets = where_only or any(s.ndim for j, s in enumerate(new) if j != i)
            if combines(src) and meets and src not in dropped:
                part = Expr(src, env)
                value = None if _fixed_rows_only(part) else evaluate_nest(part, dropped)
                if value is None or value.type.missing_fixed_rows:
                    dropped.add(src)  # `?n` rows: no leaf the nest reads (one nest pairs)
                    continue
                leaf = as_expr(value)
                env.update(leaf.env)
                if value.type.missing_var_rows:
                    qvar.add(leaf.node.arg)
                new[i] = leaf.node
                done.append(i)
        return node.replace(srcs=tuple(new)) if new != list(node.srcs) else node
    root = rewrite(expr.node, visit)
    return Expr(root, env) if done else None


def _fixed_rows_only(part) -> bool:
    """Whether `part`'s type has `?n` rows and it reads no var rows: every leaf read with
    var rows is a `?n` operand (read as `x - 0` / `x * True` of a bool row, `_fixed_last`).
    Its value then has `?n` rows too, known without computing it (a var operand's rows
    could make them var)."""
    if not part.type.missing_fixed_rows:
        return False
    for node in toposort(part.node):
        for i, src in enumerate(node.srcs):
            if src.op == "input" and None in src.shape and not (
                    i == 0 and _fixed_row(node, part.env) is not None):
                return False
    return part.node.op != "input"


def _fixed_row(node, env):
    """The bool row of zeros / ones where `node` is `x - 0` / `x * True` of x and that row
    (how a `?n` operand reads, `lazyk.frontend.expr`), else None."""
    if node.op not in ("subtract", "multiply") or len(node.srcs) != 2:
        return None
    z = node.srcs[1]
    z = z.srcs[0] if z.op == "astype" and z.srcs else z
    v = leaf_data(env[z.arg]) if z.op == "input" and z.arg in env else None
    return v if isinstance(v, np.ndarray) and v.dtype == np.bool_ and \
        bool(np.all(v == (node.op == "multiply"))) else None


def _evaluate_nest(expr):
    root, red_node, reduce_arg = expr.node, expr.node, None
    if root.op == REDUCE_OP:
        reduce_arg, root = root.arg, root.srcs[0]
    if REDUCE_OP in graph_ops(root):
        root, expr = inline_reductions(root, expr)
    if has_picks(root):  # x[mask], x[positions]: lowered into the nest (`nest_select`)
        return evaluate_picks(root, red_node, reduce_arg, expr.env)
    used = set(input_names(root))
    names = [n for n in expr.env if n in used]
    (root,), names = one_leaf_per_array([root], expr.env, names)
    leaves = [leaf_data(expr.env[n]) for n in names]
    got = None
    if leaves and not branch_masks(root, names, leaves):
        got = nest_run(root, red_node, reduce_arg, names, leaves)
    elif leaves:
        # where() takes the missing state of the branch it selects: the elementwise part
        # runs first (its mask follows the body), then the reduction of its result
        got = nest_run(root, root, None, names, leaves, where_masks=True)
        if got is not None and reduce_arg is not None and got.type.missing_fixed_rows:
            # `?n` rows: no leaf the nest reads
            got = _rows_first(root, red_node, reduce_arg, names, leaves)
        elif got is not None and reduce_arg is not None:
            inner = as_expr(got)
            got = evaluate_nest(Expr(red_node.replace(srcs=(inner.node,)), inner.env))
    if got is None and reduce_arg is not None and leaves:
        got = _rows_first(root, red_node, reduce_arg, names, leaves)
    if got is None:
        types = ", ".join(str(v.array.type) if is_ragged(v) else f"{np.shape(v)} array"
                          for v in leaves)
        what = f"{reduce_arg[0]} over axes {list(reduce_arg[1])}" if reduce_arg else \
            "this expression"
        why = "with missing rows (?var), elementwise work and reductions run over " \
            "numeric (or string) leaves and the operations the loop nest compiles" \
            if any(
            is_ragged(v) and v.array.type.missing_var_rows for v in leaves) else \
            "elementwise work and reductions run as one fused step over numeric (or " \
            "string) leaves and the operations the loop nest compiles"
        why += "; .eval() the take-back (or pad_none) that gave the ?n rows first" if any(
            is_ragged(v) and v.array.type.missing_fixed_rows for v in leaves) else ""
        raise NotSupportedError(f"{what} of {types}: {why}")
    return got


def _rows_first(root, red_node, reduce_arg, names, leaves):
    """A fold of fixed and var dims over one trailing dim of missing rows that the nest
    does not take in one pass (several axes at or above a `?var` dim; a middle or every
    axis over `?n` rows): the elementwise part runs first, each missing row of its result
    becomes a row of missing values (one for `?var`: it stretches; n for `?n`), which the
    fold skips under skipna, and then the nest folds that. Without skipna a missing row
    makes its group's result row missing; under skipna a `?var` group with no present row
    gives an empty row (the rules of `tests/ragged_reference.py`): which result rows fold
    a missing row comes from the same fold, in the nest, of one flag per row; else None."""
    got = nest_run(root, root, None, names, leaves,
                    where_masks=branch_masks(root, names, leaves), parts_only=True)
    if got is None:
        return None
    values, flags, dims, offsets, validity, present = got
    last = len(dims) - 1
    if reduce_arg[0] in ARG_REDUCTIONS and len(reduce_arg[1]) == len(dims):
        # positions in the flattened values, where a missing row holds none (not its n
        # slots of a `?n` row): the fold of the present rows' values, in order
        src = present_slots(dims, offsets, validity, present)
        shape = (1,) * last + (len(src),)
        ok = np.ones(len(src), bool) if flags is None else flags[src]
        e = as_expr(masked(values[src].reshape(shape), ok.reshape(shape)))
        return evaluate_nest(Expr(red_node.replace(srcs=(e.node,)), e.env))
    if len(reduce_arg[1]) == 1 and reduce_arg[1][0] < last and not present:
        done = _own_axis_first(got, red_node, reduce_arg)
        return done if done is not None else _filled_first(got, red_node, reduce_arg)
    q = min(validity) if len(validity) == 1 and not present else last
    if q < last and len(reduce_arg[1]) > 1 and dims[q] is VAR:
        done = _middle_first(got, red_node, reduce_arg, q)
        return done if done is not None else _filled_first(got, red_node, reduce_arg)
    if last < 1 or last not in (present if dims[-1] is not VAR else validity) or \
            set(validity) - {last} or set(present) - {last}:
        return _filled_first(got, red_node, reduce_arg)  # missing rows at several levels
    if dims[-1] is VAR:
        rows = validity[last]
        off, vals, ok = missing_as_values(values, flags, rows, offsets[last])
        new = {**offsets, last: off}
        inner = nest_result(vals, ok, dims, new, level_counts(dims, new))
    else:
        rows = present[last].astype(bool)
        ok = np.repeat(rows, int(dims[-1]))
        inner = nest_result(values, ok if flags is None else ok & flags, dims, offsets,
                            level_counts(dims, offsets))
    e = as_expr(inner)
    got = evaluate_nest(Expr(red_node.replace(srcs=(e.node,)), e.env))
    axes = tuple(reduce_arg[1])
    if axes == (last,):  # a missing row reduced along its own axis: missing
        return rebuild(got, leaf=lambda v, m: masked(v, rows if m is None else m & rows))
    skipna = len(reduce_arg) > 3 and reduce_arg[3]
    if last in axes and (skipna or dims[-1] != 0):
        return got  # one value per group: missing values do the work
    if last in axes:  # `?0` rows hold no missing value: the groups that fold one, missing
        flags_of = nest_result(~rows, None, dims[:-1], offsets, level_counts(dims[:-1], offsets))
        hit = leaf_values(evaluate_nest(reduce("any", flags_of, axis=axes[:-1])))
        if not got.type.dims:  # one value
            v = got.to_list()
            return masked(np.asarray(0 if v is None else v, red_node.dtype),
                          np.asarray(v is not None and not hit[0]))
        return rebuild(got, leaf=lambda v, m: masked(v, ~hit if m is None else m & ~hit))
    if skipna and dims[-1] is not VAR:
        return got  # rows of n skipped values
    # which result rows fold a missing row (or only missing rows): the same fold over the
    # dims above the rows, in the nest, of one flag per row
    flags_of = nest_result(rows if skipna else ~rows, None, dims[:-1], offsets,
                           level_counts(dims[:-1], offsets))
    hit = leaf_values(evaluate_nest(reduce("any", flags_of, axis=axes)))
    if dims[-1] is not VAR:
        return fixed_rows(got, {len(got.type.dims) - 1: ~hit})
    return rebuild(got, rows=lambda off: (~hit if skipna else hit, not skipna))


def _middle_first(parts, red_node, reduce_arg, q: int):
    """A fold over several axes at or above the one `?var` dim q of the elementwise result
    `parts`, with dims below it: each missing row becomes one element of missing values
    (var rows below of length 1, which stretch; fixed ones full), the nest folds that,
    and the result rows at the first kept dim from q on are marked missing where their
    group has a missing row (at q itself when q is the first folded axis, skipna too),
    or under skipna emptied where it has only missing rows: flags from the same fold,
    in the nest, of one flag per row."""
    values, flags, dims, offsets, validity, _ = parts
    axes, keep, skipna = tuple(reduce_arg[1]), bool(reduce_arg[2]), \
        len(reduce_arg) > 3 and bool(reduce_arg[3])
    if axes[0] > q:
        return None
    rows = validity[q]
    if (skipna or reduce_arg[0] == "count") and not rows.all() and any(
            dims[j] is VAR and any(q < a < j and dims[a] is VAR for a in axes)
            for j in range(len(dims)) if j not in axes):
        # a missing row's element has var rows of length 1 below a folded var axis; where
        # the present rows fold none there, they would give the result's row a length.
        # Rows under the folded fixed axis 0 fold without the missing ones instead; other
        # forms empty those rows afterwards (`_filled_first`).
        if q == 1 and 0 in axes and dims[0] is not VAR and rows.any():
            return _present_rows_only(parts, red_node, rows)
        return None
    # each new element's source (-1: the filler of a missing row), level by level
    starts = offsets[q]
    lens = np.where(rows, np.diff(starts), 1)
    new = {k: o for k, o in offsets.items() if k < q}
    new[q] = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    src = np.where(np.repeat(rows, lens), ranges(starts[:-1], lens), -1)
    for k in range(q + 1, len(dims)):
        if dims[k] is VAR:
            o = offsets[k]
            n = np.where(src >= 0, o[src + 1] - o[src], 1)
            first = np.where(src >= 0, o[np.maximum(src, 0)], 0)
            new[k] = np.concatenate([[0], np.cumsum(n)]).astype(np.int64)
            src = np.where(np.repeat(src >= 0, n), ranges(first, n), -1)
        else:
            n = int(dims[k])
            src = np.where(np.repeat(src >= 0, n),
                           (np.maximum(src, 0)[:, None] * n + np.arange(n)).reshape(-1), -1)
    ok = src >= 0
    vals = np.where(ok, values[np.maximum(src, 0)] if len(values) else 0, 0).astype(
        values.dtype)
    if flags is not None:
        ok &= flags[np.maximum(src, 0)] if len(flags) else ok
    inner = nest_result(vals, ok, dims, new, level_counts(dims, new))
    e = as_expr(inner)
    got = evaluate_nest(Expr(red_node.replace(srcs=(e.node,)), e.env))
    kept = [k for k in range(len(dims)) if k not in axes]
    k = next((k for k in kept if k >= q), None)  # the first kept dim from q on
    first = axes[0] == q  # a missing row at the first folded axis stays missing
    # under skipna, a group of only missing rows over a fixed dim k has no rows at the
    # first kept var dim v below k (var rows between k and v folded: not taken)
    v = next((j for j in kept if j > k and dims[j] is VAR), None) if k is not None and \
        dims[k] is not VAR and skipna and not first else None
    if v is not None and any(dims[j] is VAR for j in range(k + 1, v)):
        return None
    # a missing row's element holds no value under a fixed 0: the flags do the work
    held = all(d != 0 for d in dims[q + 1:])
    if not first and (skipna or held) and (k is None or dims[k] is not VAR and skipna and
                                           v is None):
        return got  # missing values do the work (skipped, or missing)
    if first:
        hit = ~rows
    else:
        mine = rows
        if skipna and k is not None and k > q:  # a present row with no rows at k
            lo, hi = offsets[q][:-1], offsets[q][1:]  # adds no row there either
            for j in range(q + 1, k):
                lo, hi = (offsets[j][lo], offsets[j][hi]) if dims[j] is VAR else \
                    (lo * int(dims[j]), hi * int(dims[j]))
            mine = rows & (hi > lo)
        flags_of = nest_result(mine if skipna else ~rows, None, dims[:q], offsets,
                               level_counts(dims[:q], offsets))
        above = tuple(a for a in axes if a < q)
        hit = leaf_values(evaluate_nest(reduce("any", flags_of, axis=above)))
        hit = ~hit if skipna else hit
    if k is None:  # one value per row: missing where the row is
        return rebuild(got, leaf=lambda v, m: masked(v, ~hit if m is None else m & ~hit))
    p = k if keep else len([j for j in kept if j < k])
    if v is not None:  # rows at v of the groups with only missing rows: emptied
        m = int(np.prod([int(dims[j]) for j in kept if k <= j < v], dtype=np.int64))
        return drop_rows(got, v if keep else len([j for j in kept if j < v]),
                          np.repeat(hit, m), mark=False)
    if dims[k] is not VAR:
        return fixed_rows(got, {p: (~hit).astype(np.uint8)})
    return drop_rows(got, p, hit, mark=first or not skipna)


def _filled_first(parts, red_node, reduce_arg):
    """Any fold of the elementwise result `parts` with missing rows at any number of
    levels (`?var` and `?n`): each missing row becomes a row of missing values (a `?var`
    one of length 1 with var rows of length 1 below, which stretch; a `?n` one its n
    slots), the nest folds that array (no missing rows left), and the result's rows are
    then marked missing, or emptied, by the rules of `tests/ragged_reference.py`:
    - a missing row at a kept level above every folded axis stays missing; one folded
      into others marks the result at its own level when kept, else at the next kept
      level (or the value), unless skipna skips it (not along the first folded axis);
    - under skipna, a result row at a kept var level that folds no present row is empty.
    Which result rows: the same fold, in the nest, of one flag per row (`any`)."""
    values, flags, dims, offsets, validity, present = parts
    op, axes, keep = reduce_arg[0], tuple(reduce_arg[1]), bool(reduce_arg[2])
    skipna = op == "count" or (len(reduce_arg) > 3 and bool(reduce_arg[3]))
    if not dims:
        return None
    # the filled structure, top down: `src` each row's (then element's) old index, -1
    # in a filler; `miss[k]` the rows missing at level k, `inside[k]` those in a filler
    src, infill = np.zeros(1, np.int64), np.zeros(1, bool)
    new, miss, inside = {}, {}, {}
    for k, d in enumerate(dims):
        ok, m = src >= 0, np.zeros(len(src), bool)
        s = np.maximum(src, 0)
        if k in validity:
            m[ok] = ~np.asarray(validity[k], bool)[s[ok]]
        if k in present:
            m[ok] = np.asarray(present[k])[s[ok]] == 0
        miss[k], real = m, ok & ~m
        infill = infill | m
        inside[k] = infill
        if d is VAR:
            o = offsets[k]
            n, first = np.ones(len(s), np.int64), np.zeros(len(s), np.int64)
            n[real], first[real] = o[s[real] + 1] - o[s[real]], o[s[real]]
            new[k] = np.concatenate([[0], np.cumsum(n)]).astype(np.int64)
            src = np.where(np.repeat(real, n), ranges(first, n), -1)
        else:
            n = int(d)
            src = np.where(np.repeat(real, n), (s[:, None] * n + np.arange(n)).reshape(-1),
                           -1)
        infill = np.repeat(infill, n)
    ok = src >= 0
    s = np.maximum(src, 0)
    vals = np.where(ok, values[s] if len(values) else 0, 0).astype(values.dtype)
    if flags is not None and len(flags):  # (`?T` values, none at all maybe: still `?T`)
        ok &= flags[s]
    elif flags is None and not validity and not present:  # plain values (an
        ok = None  # empty min / max is then NumPy's error, as over the rows themselves)
    inner = nest_result(vals, ok, dims, new, level_counts(dims, new))
    e = as_expr(inner)
    got = evaluate_nest(Expr(red_node.replace(srcs=(e.node,)), e.env))

    def folded(rows, j):
        """One flag per row at level j, folded with `any` over the axes above j."""
        if j == 0:
            return np.asarray(rows, bool)
        f = nest_result(np.asarray(rows, bool), None, dims[:j], new, level_counts(dims[:j], new))
        above = tuple(a for a in axes if a < j)
        return np.asarray(leaf_values(evaluate_nest(reduce("any", f, axis=above))
                                       if above else f), bool)
    kept = [k for k in range(len(dims)) if k not in axes]
    marks, empties = {}, {}  # by kept level (None: the values)
    for k in sorted(set(validity) | set(present)):
        if skipna and (k in axes and k != axes[0] or k not in axes and k > axes[0]):
            continue  # skipped
        m = k if k not in axes else next((j for j in kept if j > k), None)
        hit = folded(miss[k], k)
        marks[m] = hit if m not in marks else marks[m] | hit
    if skipna:
        for j in kept:
            if dims[j] is VAR and j > axes[0] and inside[j].any():
                empties[j] = ~folded(~inside[j], j)
    if None in marks:
        hit = marks.pop(None)
        if not got.type.dims:  # one value
            v = got.to_list()
            got = masked(np.asarray(0 if v is None else v, red_node.dtype),
                         np.asarray(v is not None and not hit[0]))
        else:
            got = rebuild(got, leaf=lambda v, m: masked(v, ~hit if m is None else m & ~hit))
    for j in sorted(set(marks) | set(empties), reverse=True):
        p = j if keep else len([i for i in kept if i < j])
        if j in empties:
            got = drop_rows(got, p, empties[j], mark=False)
        if j in marks and dims[j] is VAR:
            got = drop_rows(got, p, marks[j], mark=True)
        elif j in marks:
            got = fixed_rows(got, {p: (~marks[j]).astype(np.uint8)})
    return got


def _own_axis_first(parts, red_node, reduce_arg):
    """A fold along the axis of a `?var` dim with fixed dims under it, from the elementwise
    result `parts`: each missing row becomes one row of missing values, the nest folds
    that, and the result row under a missing row is missing (skipna too, as a missing row
    reduced along its own axis); with var dims under it too, `_middle_first`; else None."""
    values, flags, dims, offsets, validity, _ = parts
    a = reduce_arg[1][0]
    below = dims[a + 1:]
    if dims[a] is not VAR or set(validity) != {a}:
        return None
    if VAR in below:  # each missing row as one element (var rows of length 1 stretch)
        return _middle_first(parts, red_node, reduce_arg, a)
    blk = int(np.prod(below, dtype=np.int64))
    rows = validity[a]
    off, vals, ok = missing_as_values(values, flags, rows, offsets[a], blk)
    new = {**offsets, a: off}
    inner = nest_result(vals, ok, dims, new, level_counts(dims, new))
    e = as_expr(inner)
    got = evaluate_nest(Expr(red_node.replace(srcs=(e.node,)), e.env))
    return fixed_rows(got, {a + bool(reduce_arg[2]): rows.astype(np.uint8)})


def _present_rows_only(parts, red_node, rows):
    """The fold of the elementwise result `parts` over its present `?var` rows at level 1
    only, for a fold over the fixed axis 0 above them that skips missing rows (skipna,
    count): a missing row adds nothing there, not even a row length."""
    values, flags, dims, offsets, _, _ = parts
    starts = offsets[1]
    lens = np.diff(starts)[rows]
    new = {1: np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)}
    src = ranges(starts[:-1][rows], lens)
    for k in range(2, len(dims)):
        if dims[k] is VAR:
            o = offsets[k]
            n = o[src + 1] - o[src]
            new[k] = np.concatenate([[0], np.cumsum(n)]).astype(np.int64)
            src = ranges(o[src], n)
        else:
            n = int(dims[k])
            src = (src[:, None] * n + np.arange(n)).reshape(-1)
    dims = [int(rows.sum()), *dims[1:]]
    # values with a mask, as the other forms fold (the result type follows the missing rows)
    ok = np.ones(len(src), bool) if flags is None else flags[src]
    inner = nest_result(values[src], ok, dims, new, level_counts(dims, new))
    e = as_expr(inner)
    return evaluate_nest(Expr(red_node.replace(srcs=(e.node,)), e.env))

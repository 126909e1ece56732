"""The best selected element, picked without storing the selection.

Awkward's idiom for "the pair of mass closest to 91.2 among the same-flavour pairs" is
`pairs[m][ak.argmin(f(y[m]), axis=1, keepdims=True)]`: select, fold the positions of the
kept elements, gather those positions back from the selection. Computed as written, every
field of `pairs[m]` is stored (a count pass and a fill pass over every pair) only to read
one element per row of it. Here the arg-reduction counts positions among all the
elements of m's rows instead (`codegen.levels.Keep.every_position`: the same one nest,
folding only the kept elements), and the gather reads `pairs` itself at those positions:
the same values, `pairs[m]` never stored.

`row_steps.lower` and `lazyk.evaluate` of several results (`many`) ask `best_positions`
which arg-reductions take this form (every reader one such gather), compute them with
`whole_row_positions` and rewrite the gathers with `gathered_from_whole_rows`.
"""
from __future__ import annotations

from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import (
    REDUCE_OP,
    ROWS_OP,
    SELECT_OP,
    TAKE_OP,
    Node,
    graph_ops,
    picked_shape,
    rewrite,
    shared_reductions,
    toposort,
)
from lazyk.frontend.ops import ARG_REDUCTIONS
from lazyk.runtime.nest_select import positions_in_whole_rows, take_kept_rows
from lazyk.runtime.nest_steps import parts_first
from lazyk.runtime.picks import lower_picks
from lazyk.runtime.ragged_rules import inline_reductions


def best_positions(root: Node) -> set:
    """The ids of the arg-reductions in `root` that only `x[m][positions]` gathers read
    (`_best_of_selection`): their positions can count every element of m's rows."""
    order = toposort(root)
    if not any(n.op == TAKE_OP and n.srcs[0].op == SELECT_OP for n in order):
        return set()  # (every evaluation with row operations asks: most have none)
    readers: dict = {}
    for n in order:
        for s in n.srcs:
            readers.setdefault(id(s), []).append(n)
    found = set()
    for n in order:
        pos = n.srcs[1] if n.op == TAKE_OP else None
        if pos is not None and pos is not root and id(pos) not in found and all(
                r.op == TAKE_OP and r.srcs[1] is pos and _best_of_selection(r)
                for r in readers[id(pos)]):
            found.add(id(pos))
    return found


def _best_of_selection(take: Node) -> bool:
    """Whether `take` is `x[m][argmin(f(y[m]), axis=k, keepdims=True)]` (or argmax, skipna
    too): one mask m selecting at the gather's level k, every selection in f there by m
    (rows selected at level 0 too: taken first; folds and row operations are computed
    first, whatever they select). A picked position is always a kept
    element with a value (a missing mask element keeps a missing value, which the fold
    never picks: the result is missing, or skipna skips it)."""
    x, pos = take.srcs
    if x.op != SELECT_OP or pos.op != REDUCE_OP or pos.arg[0] not in ARG_REDUCTIONS or \
            len(pos.arg) > 4 or not pos.arg[2]:
        return False
    k, mask, src = x.arg, x.srcs[1], pos.srcs[0]
    if take.arg != k or not x.ndim == take.ndim == src.ndim or tuple(pos.arg[1]) != (k,):
        return False
    work = toposort(src, descend=lambda n: n.op not in (ROWS_OP, REDUCE_OP))  # (computed first)
    at_k = [s for s in work if s.op == SELECT_OP and s.arg + src.ndim - s.ndim != 0]
    return bool(at_k) and all(s.srcs[1] is mask and s.arg + src.ndim - s.ndim == k
                              for s in at_k)


def whole_row_positions(expr: Expr):
    """The value of `expr`, one of `best_positions`, as positions among all the elements
    of the mask's rows (a lazyk Array); None where one nest does not take it (then it is
    computed as written; so are graphs whose row operations are not lowered yet)."""
    if ROWS_OP in graph_ops(expr.node):
        return None
    expr = lower_picks(take_kept_rows(expr))
    red = expr.node
    if red.op != REDUCE_OP or parts_first(expr) is not None:
        return None
    root = red.srcs[0]
    if REDUCE_OP in graph_ops(root):  # (folds inside: computed first, as the nest does)
        root, expr = inline_reductions(root, expr)
    return positions_in_whole_rows(root, red.replace(srcs=(root,)), expr.env)


def gathered_from_whole_rows(node: Node, srcs: tuple, whole: set) -> Node | None:
    """`x[m][p]` (`node` over its rewritten `srcs`) as `x[p]` where p is one of the `whole`
    leaves (`whole_row_positions` values); None for other nodes."""
    if node.op != TAKE_OP or srcs[1] not in whole or srcs[0].op != SELECT_OP:
        return None
    x = srcs[0].srcs[0]
    return node.replace(srcs=(x, srcs[1]),
                        shape=picked_shape(TAKE_OP, x.shape, srcs[1].shape, node.arg))


def shared_beside_best(root: Node, best: set) -> frozenset:
    """`graph.shared_reductions` of `root` as the lowering reads it once the `best`
    arg-reductions are computed and their `x[m][p]` gathers read `x[p]` (`lower`): a mask m
    that only those gathers and the arg-reductions read is never stored on its own (the
    Z search's same-flavour pair mask: folded inside the arg-reduction's nest)."""
    if not best:
        return shared_reductions(root)
    back: dict = {}  # id(rewritten node) -> id(the node it stands for)

    def visit(node, srcs):
        if id(node) in best:
            got = Node("input", node.dtype, node.shape, (), f"~best{id(node)}")
        elif node.op == TAKE_OP and node.srcs[0].op == SELECT_OP and id(node.srcs[1]) in best:
            got = node.replace(srcs=(srcs[0].srcs[0], srcs[1]))
        else:
            got = node.replace(srcs=srcs) if srcs != node.srcs else node
        back[id(got)] = id(node)
        return got
    new = rewrite(root, visit)
    return frozenset(back.get(i, i) for i in shared_reductions(new))

"""Histograms of selected rows (`lazyk.histogram(f(a[rows]))`): where every step after a
row selection is row-local, the histogram counts `f(a)` where `rows` is true instead of
gathering the selected rows first (`Histogram._unselected`)."""
from __future__ import annotations

from lazyk.frontend import ops
from lazyk.frontend.graph import PICK_OP, REDUCE_OP, SELECT_OP, TAKE_OP, Node, toposort
from lazyk.frontend.missing import option_flags


def lift_row_selection(roots: tuple, env: dict) -> tuple | None:
    """(the roots over every row, then the row mask) where the roots read their arrays only
    through one row selection `a[rows]` (a bool mask of one dim, nothing missing) and every
    step after it is row-local (elementwise work, combinations, selections, gathers and
    reductions inside the rows): then `f(a[rows])` is `f(a)[rows]`, and a histogram counts
    `f(a)` where `rows` is true instead of gathering the selected rows first. Else None.

    The rows the mask drops are computed too, so no step that can raise on them (an integer
    power; a gather by positions that may lie outside a dropped row) or that reads arrays of
    its own (an array not selected) may follow the selection."""
    rows = None
    state: dict = {}  # node -> "const" (no arrays), "raw" (arrays as given), "lifted"
    new: dict = {}
    for node in [n for r in roots for n in toposort(r)]:
        if node in state:
            continue
        got = {state[s] for s in node.srcs}
        if node.op in ("scalar", "const") or (node.op == "input" and not node.ndim):
            kind = "const"
        elif node.op == "input" or "lifted" not in got:
            kind = "raw" if node.op == "input" or "raw" in got else "const"
        elif "raw" in got or not _row_local(node):
            return None  # (arrays not selected meet selected rows, or rows mix)
        else:
            kind = "lifted"
        if node.op == SELECT_OP and node.arg == 0 and node.srcs[1].ndim == 1 and \
                state[node.srcs[0]] == "raw" == state[node.srcs[1]]:
            if rows is None:
                flags, missing = option_flags(node.srcs[1], env)
                if missing or any(flags):
                    return None
                rows = node.srcs[1]
            if node.srcs[1] is not rows:
                return None
            state[node], new[node] = "lifted", new[node.srcs[0]]
            continue
        state[node] = kind
        new[node] = node if kind != "lifted" else node.replace(
            srcs=tuple([new[s] for s in node.srcs]), shape=(rows.shape[0],) + node.shape[1:])
    if rows is None or any(state[r] != "lifted" for r in roots):
        return None
    return tuple(new[r] for r in roots) + (rows,)


def _row_local(node: Node) -> bool:
    """Whether `node` computes each row from that row alone (and never raises on values)."""
    if node.shape[:1] != (None,):
        return False
    if node.op == "power" and node.dtype.kind in "iu":
        return False
    if node.op in ops.ELEMENTWISE:
        return True
    if node.op == REDUCE_OP:
        nd = node.srcs[0].ndim
        return 0 not in {a % nd for a in node.arg[1]}
    if node.op == PICK_OP:
        return node.arg[2] % node.srcs[0].ndim >= 1
    if node.op == TAKE_OP:  # (positions computed on a dropped row must lie in it too)
        return node.arg >= 1 and _inside_rows(node.srcs[1])
    return node.op == SELECT_OP and node.arg >= 1


def _inside_rows(positions: Node) -> bool:
    """Whether the positions are in their rows on every row: an argmin / argmax
    (`keepdims=True`) or the positions of combinations (`argcombinations`)."""
    while positions.op == "astype":
        positions = positions.srcs[0]
    if positions.op == REDUCE_OP:
        return positions.arg[0] in ops.ARG_REDUCTIONS
    return positions.op == PICK_OP and bool(positions.arg[3])


__all__ = ["lift_row_selection"]

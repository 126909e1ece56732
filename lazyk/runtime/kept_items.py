"""`x[mask]` of list rows by a mask of the same rows, taken natively (`KeptItems`): the
mask computed in one flat loop, each row's kept count read off it and the kept items of
every column it selects copied, instead of a loop nest's count and fill passes, which pay a
row's bookkeeping per row (rows of about one object per event). `lazyk.runtime.nest_select`
uses it where the selection's result is stored."""
from __future__ import annotations

import numpy as np

from lazyk.arrays.array import Array
from lazyk.arrays.columns import build_columns, columns
from lazyk.arrays.trees import Leaf, Lists, Masked, Regular, memory_key, rows_memo_dict
from lazyk.backend.rowcopy import KeptItems, copies
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import SELECT_OP, Node, toposort
from lazyk.frontend.leaves import PickLeaf, is_ragged, leaf_data
from lazyk.runtime import launch as runtime
from lazyk.types import FixedDim


def compressed(node: Node, env: dict) -> Array | None:
    """`x[mask]` of an array `N * var * T` (no missing rows or values) by a mask of its rows:
    the mask computed (a flat loop over the items), then the kept items taken and each
    row's count read off the mask natively (`KeptItems`, shared by the columns one mask
    selects), not a count and a fill pass paying a row's bookkeeping per row. None for
    other forms (the nest takes them, and names any row that does not line up)."""
    if node.op != SELECT_OP or node.arg != 1 or node.ndim < 2 or \
            any(n != 1 for n in node.shape[2:]):
        return None
    x, m = node.srcs
    if x.op != "input" or m.ndim != 2 or not is_ragged(env.get(x.arg)) or \
            isinstance(env[x.arg], PickLeaf):  # (a combination's field: not its array's rows)
        return None
    arr = leaf_data(env[x.arg]).array
    if not isinstance(arr.type, FixedDim):  # (`var * var * T`: one row of rows)
        return None
    tree = columns(arr)
    wraps = []  # (x[:, :, None] of the jets paired with the leptons: fixed 1s below)
    item = tree.child if isinstance(tree, Lists) else None
    while isinstance(item, Regular) and item.size == 1:
        wraps.append(item)
        item = item.child
    if not isinstance(tree, Lists) or not isinstance(item, Leaf) or item.values.ndim != 1 or \
            not copies(item.values.dtype) or len(wraps) != node.ndim - 2:
        return None
    got = mask_rows(m, env)
    if got is None:
        return None
    moff, kept, same, present = got
    if present is not None and wraps:  # (a missing mask element: a missing `1 * T` row)
        return None
    off = np.asarray(tree.offsets, np.int64)
    key = memory_key(off)
    if key not in same:
        if len(off) != len(moff) or not (
                moff is off or memory_key(moff) == key or np.array_equal(
                    off - off[0] if off[0] else off, moff - moff[0] if moff[0] else moff)):
            return None
        same[key] = off  # (held: its memory stays these offsets')
    child = Leaf(kept.fill(item.values[off[0]:off[-1]]).astype(node.dtype, copy=False))
    if present is not None:  # a missing mask element keeps a missing element (Awkward)
        child = Masked(present, child)
    for w in reversed(wraps):
        child = Regular(w.size, child, w.count)
    return build_columns(Lists(kept.offsets, child))


def mask_rows(m: Node, env: dict) -> tuple | None:
    """(the mask's offsets, its `KeptItems`, the offsets known to match, which kept items
    are present: None without missing mask elements) of a `N * var * bool` or `N * var *
    ?bool` mask (a missing element keeps a missing item), computed once per evaluation
    (`rows_memo`: the fields of one collection selected by one mask); None for other
    forms."""
    memo = rows_memo_dict()
    seen = None if memo is None else memo.setdefault("masks", {})
    leaves = tuple(env[n.arg] for n in toposort(m) if n.op == "input")
    key = (m, tuple(map(id, leaves)))
    if seen is not None and key in seen:
        return seen[key][0]
    mask = runtime.evaluate(Expr(m, env))
    mtree = columns(mask) if isinstance(mask, Array) and isinstance(mask.type, FixedDim) \
        else None
    got = None
    item = mtree.child if isinstance(mtree, Lists) else None
    if isinstance(item, Masked) and isinstance(item.child, Leaf):
        moff = np.asarray(mtree.offsets, np.int64)
        present = np.asarray(item.present[moff[0]:moff[-1]], bool)
        kept = KeptItems(moff, np.asarray(item.child.values[moff[0]:moff[-1]], bool) |
                         ~present)
        got = (moff, kept, {}, kept.fill(present))
    if isinstance(item, Leaf):
        moff = np.asarray(mtree.offsets, np.int64)
        got = (moff, KeptItems(moff, item.values[moff[0]:moff[-1]]), {}, None)
    if seen is not None:
        seen[key] = (got, leaves)  # (the leaves held: their ids stay theirs)
    return got

"""`x[mask]` of list rows by a mask of the same rows, taken natively (`KeptItems`): the
mask computed in one flat loop, each row's kept count read off it and the kept items of
every column it selects copied, instead of a loop nest's count and fill passes, which pay a
row's bookkeeping per row (rows of about one object per event). `lazyk.runtime.nest_select`
uses it where the selection's result is stored.

`concatenate` at axis 1 of lists of numbers (`joined_rows`) copies each row's lists one
after the other natively (`RowCopy`); of rows one mask keeps (`joined_kept_rows`: the kept
events' muons and electrons), it copies the kept rows straight from the unselected arrays,
never storing the selections first."""
from __future__ import annotations

import numpy as np

from lazyk import types as T
from lazyk.arrays.array import Array
from lazyk.arrays.columns import build_columns, columns
from lazyk.arrays.outputs import empty as fresh
from lazyk.arrays.trees import Leaf, Lists, Masked, Regular, memory_key, rows_memo_dict
from lazyk.backend.rowcopy import KeptItems, RowCopy, copies
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import ROWS_OP, SELECT_OP, Node, toposort
from lazyk.frontend.leaves import PickLeaf, RaggedLeaf, is_ragged, leaf_data
from lazyk.frontend.numpy_rules import broadcast_shapes
from lazyk.frontend.ops import ELEMENTWISE
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
    return _once_per_mask("masks", m, env, lambda: _mask_rows(m, env))


def _mask_rows(m: Node, env: dict) -> tuple | None:
    mask = runtime.evaluate(Expr(m, env))
    mtree = columns(mask) if isinstance(mask, Array) and isinstance(mask.type, FixedDim) \
        else None
    item = mtree.child if isinstance(mtree, Lists) else None
    if isinstance(item, Masked) and isinstance(item.child, Leaf):
        moff = np.asarray(mtree.offsets, np.int64)
        present = np.asarray(item.present[moff[0]:moff[-1]], bool)
        kept = KeptItems(moff, np.asarray(item.child.values[moff[0]:moff[-1]], bool) |
                         ~present)
        return moff, kept, {}, kept.fill(present)
    if isinstance(item, Leaf):
        moff = np.asarray(mtree.offsets, np.int64)
        return moff, KeptItems(moff, item.values[moff[0]:moff[-1]]), {}, None
    return None


def _once_per_mask(name: str, m: Node, env: dict, compute):
    """`compute()` once per evaluation (`rows_memo`) for mask `m` over these leaves."""
    memo = rows_memo_dict()
    seen = None if memo is None else memo.setdefault(name, {})
    leaves = tuple(env[n.arg] for n in toposort(m) if n.op == "input")
    key = (m, tuple(map(id, leaves)))
    if seen is not None and key in seen:
        return seen[key][0]
    got = compute()
    if seen is not None:
        seen[key] = (got, leaves)  # (the leaves held: their ids stay theirs)
    return got


def joined_rows(trees: list, dtype: np.dtype, kept: np.ndarray | None = None) -> Lists | None:
    """`concatenate` at axis 1 of lists of numbers (no missing lists or values): each row
    the operands' rows one after the other (of the rows at `kept` only, where given),
    copied natively (`RowCopy`), the rows planned once per evaluation (`rows_memo`) for
    every column over the same offsets (the fields of one collection). None for other
    columns (`restructure.concatenate` joins them)."""
    plan = _joining(trees, dtype, kept)
    if plan is None:
        return None
    values = [t.child.values.astype(dtype, copy=False) for t in trees]
    return Lists(plan.offsets, Leaf(plan.fill(values, dtype)))


def _joining(trees: list, dtype: np.dtype, kept) -> RowCopy | None:
    """The `RowCopy` that joins `trees` (planned once per evaluation), None for columns it
    does not join."""
    if dtype.kind not in "biufc" or not copies(dtype) or len(trees) < 2 or \
            any(not isinstance(t, Lists) or not isinstance(t.child, Leaf) or
                t.child.values.ndim != 1 for t in trees) or \
            len({len(t.offsets) for t in trees}) > 1:
        return None
    offs = [t.offsets for t in trees]
    memo = rows_memo_dict()
    plans = memo.setdefault("joined rows", []) if memo is not None else []
    for seen, at, plan in plans:
        if at is kept and all(a is b or memory_key(a) == memory_key(b) or np.array_equal(a, b)
                              for a, b in zip(seen, offs)):
            return plan
    plan = RowCopy(offs, kept)
    plans.append((offs, kept, plan))
    return plan


def join_ahead(root: Node, env: dict) -> None:
    """The `concatenate`s at axis 1 of rows one mask keeps in `root` that join the same
    rows (the fields of the kept events' muons and electrons) copied in one pass per item
    size (`RowCopy.fill_many`: each row read once for all of them); `joined_kept_rows`
    then finds them (`rows_memo`). (Each is materialised where it is read in any case.)"""
    memo = rows_memo_dict()
    if memo is None:
        return
    done, tried, groups = memo.setdefault("joined kept", {}), memo.setdefault("kept parts", {}), {}
    for node in toposort(root):
        if node.op != ROWS_OP or node.arg[0] != "concatenate" or node.arg[1][0] != 1 or \
                node in tried:
            continue
        parts = tried[node] = _kept_parts(node.srcs, env)
        plan = None if parts is None else _joining(parts[0], node.dtype, parts[1])
        if plan is not None:
            groups.setdefault((id(plan), node.dtype.itemsize), []).append((node, parts[0], plan))
    for group in groups.values():
        plan = group[0][2]
        outs = plan.fill_many([[t.child.values.astype(n.dtype, copy=False) for t in trees]
                               for n, trees, _ in group], group[0][0].dtype,
                              [fresh(int(plan.offsets[-1]), n.dtype) for n, _, _ in group])
        for (node, _, _), out in zip(group, outs):
            done[node] = build_columns(Lists(plan.offsets, Leaf(out)))


def joined_kept_rows(node: Node, srcs: tuple, env: dict) -> Array | None:
    """`concatenate` at axis 1 of `x[m]`, `y[m]`, ... (arrays of lists, one mask `m` of
    their rows, no missing mask element; elementwise work over such selections too, as
    `full_like(x[m], 1)`): the rows m keeps, joined straight from x, y, ... (the work done
    over all their rows first; `joined_rows` at m's kept positions): `node` over its
    sources `srcs`. None for other forms."""
    memo, dtype = rows_memo_dict() or {}, node.dtype
    got = memo.get("joined kept", {}).get(node)
    if got is not None:
        return got
    tried = memo.get("kept parts", {})  # (`join_ahead` looked at these sources already)
    parts = tried[node] if srcs == node.srcs and node in tried else \
        _kept_parts(srcs, env)
    got = None if parts is None else joined_rows(parts[0], dtype, parts[1])
    return None if got is None else build_columns(got)


def _kept_parts(srcs: tuple, env: dict) -> tuple | None:
    """(the column trees of the unselected arrays, m's kept positions) that
    `joined_kept_rows` joins; None for other forms."""
    if len(srcs) < 2 or not srcs[0].ndim:
        return None
    mask = next((n.srcs[1] for n in toposort(srcs[0]) if n.op == SELECT_OP), None)
    whole = [_unselected(s, mask) for s in srcs] if mask is not None else [None]
    if any(w is None or len({n.arg for n in toposort(w) if n.op == "input" and n.ndim}) != 1
           for w in whole):  # (work over one array's rows: no rows of two arrays meet where
        return None  # the mask drops them, which could not line up)
    values = []
    for w in whole:
        v = env[w.arg] if w.op == "input" else None
        if v is None:  # (elementwise work over the arrays: over all their rows)
            v = runtime.evaluate(Expr(w, env))
            v = RaggedLeaf(v, False) if isinstance(v, Array) else None
        if type(v) is not RaggedLeaf or not isinstance(v.array.type, FixedDim):
            return None
        values.append(v.array)
    kept = kept_rows(mask, env)
    trees = [columns(v) for v in values]
    if kept is None or any(not isinstance(t, Lists) or len(t.offsets) - 1 != kept[1]
                           for t in trees):
        return None  # (rows that do not line up: the selection names them)
    return trees, kept[0]


def _unselected(node: Node, mask: Node) -> Node | None:
    """`node` (`N * var` elementwise work over selections `x[mask]` of arrays' rows) with
    each selection read as its array, x: the work over all the rows; None for other forms
    (a leaf that is not selected, other masks, other work)."""
    if node.op == SELECT_OP:
        x = node.srcs[0]
        return x if node.arg == 0 and node.srcs[1] is mask and x.op == "input" else None
    if node.op in ("const", "scalar") or (node.op == "input" and not node.ndim):
        return node
    if node.op not in ELEMENTWISE or not node.srcs or node.ndim != 2:
        return None
    srcs = tuple(_unselected(s, mask) for s in node.srcs)
    if any(s is None or s.ndim == 1 for s in srcs):  # (one value per kept row: not lined up)
        return None
    return node.replace(srcs=srcs, shape=broadcast_shapes(node.op, [s.shape for s in srcs]))


def kept_rows(m: Node, env: dict) -> tuple | None:
    """(the positions a mask of rows keeps, its length) of a `N * bool` mask without
    missing elements, computed once per evaluation (`rows_memo`); None for other masks."""
    return _once_per_mask("kept rows", m, env, lambda: _kept_rows(m, env))


def _kept_rows(m: Node, env: dict) -> tuple | None:
    if m.ndim != 1 or m.dtype != np.bool_:
        return None
    mask = runtime.evaluate(Expr(m, env))
    if isinstance(mask, Array):
        mask = mask.to_numpy() if not isinstance(mask.type.dtype, T.Option) else None
    if isinstance(mask, np.ndarray) and mask.dtype == np.bool_ and mask.ndim == 1:
        return np.flatnonzero(mask), len(mask)
    return None

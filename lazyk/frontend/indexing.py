"""Indexing expressions: new axes (`e[:, None]`), selection by a mask and gather by
positions (`e[mask]`, `e[positions]`, as Awkward Array's).
"""
from __future__ import annotations

import builtins
import functools
import operator
from typing import Any

import numpy as np

from lazyk import types as T
from lazyk.arrays.array import Array
from lazyk.arrays.foreign import is_foreign
from lazyk.errors import NotSupportedError, ShapeError
from lazyk.frontend import ops
from lazyk.frontend.expression import Expr, summary
from lazyk.frontend.graph import (
    PICK_OP,
    REDUCE_OP,
    ROWS_OP,
    SELECT_OP,
    TAKE_OP,
    Node,
    graph_ops,
    input_names,
    picked_shape,
)
from lazyk.frontend.graph import toposort as _toposort
from lazyk.frontend.leaves import DaskLeaf, OwnedView, PickLeaf, Placeholder, RaggedLeaf, is_text
from lazyk.frontend.missing import indexed_flags, option_flags
from lazyk.frontend.numpy_rules import cast, describe_node
from lazyk.frontend.operands import as_expr, merge_env, operands, refuse_text
from lazyk.frontend.reductions import max as lazy_max
from lazyk.frontend.rowops import fill_none, firsts, flags, flatten, local_index, num, zeros_like
from lazyk.frontend.tuples import positions_in_lists, reads_in_nest
from lazyk.frontend.ufuncs import astype, maximum, minimum, where


def _key_text(key: Any) -> str:
    """An index as it was written: `3:7`, `1, ::2`, `...`."""
    def one(k):
        if isinstance(k, slice):
            parts = ["" if v is None else repr(v) for v in (k.start, k.stop, k.step)]
            return ":".join(parts[:2] if k.step is None else parts)
        return "..." if k is Ellipsis else repr(k)
    return ", ".join(map(one, key)) if isinstance(key, tuple) else one(key)


def _picked(items: tuple) -> list:
    """The dims an index picks in (those not whole: `:` or `::1`)."""
    return [d for d, k in enumerate(items) if not (isinstance(k, slice) and k.start is None
                                                    and k.stop is None and k.step in (None, 1))]


def index_like(e: Expr, key: Any, like: Expr, depth: int) -> Expr:
    """`e[key]`, where an item or a slice of lists above `depth` takes its positions from
    `like`'s lists (the fields of records: one mask, one set of positions, for all)."""
    items = key if isinstance(key, tuple) else (key,)
    picked = _picked(items) if not is_index_operand(key) else []
    if len(picked) == 1 and picked[0] < depth:
        got = _in_lists(e, key, like)
        if got is not None:
            return got
    return e[key]


def _in_lists(e: Expr, key: Any, like: Expr | None = None) -> Expr | None:
    """`e[:, i]` / `e[:, a:b]` (whole dims before and after; the dim after the first):
    Awkward's item i of every list there (negative: from its end; None for a missing list;
    a list too short for it raises IndexError naming it, when computed), or the items of a
    slice `a:b:c` (Python's rules in each list: clipped to it, a negative step reverses),
    lazily: a gather or a selection by the items' positions that fuses like any other. An
    item or any slice at a fixed dim too (a gather at positions known now: the dim stays
    fixed, as NumPy's); None for other keys. `like`: the expression whose lists give the
    positions (`e` by default)."""
    items = key if isinstance(key, tuple) else (key,)
    picked = _picked(items)
    if not picked and len(items) <= e.ndim:  # (whole dims written `::1`)
        return e
    if len(picked) != 1 or len(items) > e.ndim:
        return None
    d, k = picked[0], items[picked[0]]
    fixed = isinstance(e.shape[d], int)
    if d == 0 or not (isinstance(k, (int, np.integer)) and not isinstance(k, bool) or
                      isinstance(k, slice)):
        return None
    if fixed and not isinstance(k, slice) and not -e.shape[d] <= k < e.shape[d]:
        raise IndexError(f"index {k} is out of bounds for axis {d} with size {e.shape[d]}")
    like = e if like is None else like  # (a fixed dim checked now, as NumPy: rows or none)
    ends = num(like, axis=d)[..., None]  # each list's length, against its items
    if isinstance(k, slice) and fixed:  # (a fixed dim: its items' positions known now)
        return index_by(e, zeros_like(ends) + np.arange(e.shape[d])[k])
    if isinstance(k, slice):
        # (a missing list has no items: its length 0 keeps the mask's values present)
        lens = fill_none(ends, 0) if any(flags(like)[0][:d + 1]) else ends

        def bound(b):  # (None: no bound)
            return b if b is None or b >= 0 else maximum(lens + int(b), 0)
        # (positions the kernels walk where they read the data as it is: no list of
        # positions stored; strings move as row operations)
        # (lists that may be missing, or paired with other fields' lists as lined-up
        # records' are: their positions computed)
        walked = reads_in_nest(like) and not is_text(like.dtype) and \
            not any(flags(like)[0]) and "with_rows" not in graph_ops(like.node)
        at = positions_in_lists(like, d) if walked else local_index(like, axis=d)
        k = _checked_slice(k)
        step = 1 if k.step is None else k.step
        if step < 0:  # (kept from the start down to the stop, then reversed)
            return _reversed(e, like, d, _stepped(at, lens, k.start, k.stop, step))
        lo, hi = bound(k.start), bound(k.stop)
        keeps = ([] if lo is None else [at >= lo]) + ([] if hi is None else [at < hi]) + \
            ([] if step == 1 else [(at if lo is None else at - lo) % step == 0])
        return index_by(e, functools.reduce(operator.and_, keeps))
    one = index_by(e, zeros_like(ends) + int(k))  # a dim of 1 at d: the item
    if flags(e)[0][d]:  # lists that may be missing: the item, or None for a missing list
        return firsts(one, axis=d)
    if is_text(e.dtype):  # (strings: the dim of 1 joins the dim above it)
        return flatten(one, axis=d)
    return lazy_max(one, axis=d)  # (of one item: the item itself, in its own dtype)


def _checked_slice(k: slice) -> slice:
    """`k` checked as Python checks a slice (ints or None, a step not 0), its numbers
    within +-2**62: past every list as any larger one is (Python's and NumPy's clamping),
    and no int64 sum of them overflows."""
    for v in (k.start, k.stop, k.step):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))):
            raise TypeError(f"slice indices must be integers or None, not {type(v).__name__}")
    if k.step == 0:
        raise ValueError("slice step cannot be zero")
    return slice(*(None if v is None else max(-(2 ** 62), min(int(v), 2 ** 62))
                   for v in (k.start, k.stop, k.step)))


def _stepped(at: Expr, lens: Expr, start: Any, stop: Any, step: int) -> Expr:
    """Which positions `at` (of lists of lengths `lens`) a slice of negative `step` keeps:
    from `start` (the last item when left out) down to, not including, `stop`."""
    first = lens - 1 if start is None else lens + int(start) if start < 0 else \
        minimum(lens - 1, int(start))
    keep = (at <= first) & ((first - at) % -step == 0)
    if stop is not None:
        keep = keep & (at > (lens + int(stop) if stop < 0 else int(stop)))
    return keep


def _reversed(e: Expr, like: Expr, d: int, keep: Expr) -> Expr:
    """The items of `e` that `keep` keeps at dim `d`, in reverse order within each list."""
    kept = index_by(like, keep)
    # (a missing list's count filled: its positions stay a missing list, never missing
    # positions, so the items keep their own type)
    last = fill_none(num(kept, axis=d), 0)[..., None] - 1
    return index_by(index_by(e, keep), last - local_index(kept, axis=d))


def _spelled_out(items: tuple, ndim: int) -> tuple | None:
    """An index of ints and slices with its `...` written as whole dims, or None for other
    indices (new axes, index arrays, lazy scalars, more items than dims)."""
    if any(not (isinstance(k, (slice, int, np.integer)) and not isinstance(k, bool)
                or k is Ellipsis) for k in items) or builtins.sum(k is Ellipsis for k in items) > 1:
        return None
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items = items[:at] + (slice(None),) * (ndim - len(items) + 1) + items[at + 1:]
    return items if len(items) <= ndim else None


def _new_axis_key(key: Any, ndim: int) -> list | None:
    """The result dims of an index of only `None`, whole slices `:` and one `...`: None
    for a new axis, True for a dim kept; None for any other index."""
    items = key if isinstance(key, tuple) else (key,)
    whole = [k for k in items if isinstance(k, slice) and k == slice(None)]
    if builtins.any(k is not None and k is not Ellipsis and not
                    (isinstance(k, slice) and k == slice(None)) for k in items):
        return None
    if builtins.sum(k is Ellipsis for k in items) > 1 or len(whole) > ndim:
        return None
    rest = [True] * (ndim - len(whole))
    out: list = []
    for k in items:
        out.extend(rest if k is Ellipsis else [None] if k is None else [True])
    return out + ([] if Ellipsis in items else rest)


def _insert_axis(e: Expr, at: int) -> Expr:
    """`e` with a new dim of size 1 at `at`: the elementwise nodes take it at the matching
    place of their operands (those that broadcast from below it stay as they are), a
    reduction before its first kept dim there, and each array leaf as a view (no copy)."""
    need: dict = {id(e.node): {at}}
    order = _toposort(e.node)
    for node in reversed(order):  # users first: where each source needs the new axis
        for q in need.get(id(node), ()):
            for src, qs in _axis_in_sources(node, q, e.env):
                need.setdefault(id(src), set()).add(qs)
    env, built = dict(e.env), {}
    for node in order:  # sources first
        for q in need.get(id(node), ()):
            built[id(node), q] = _with_axis(node, q, built, env)
    root = built[id(e.node), at]
    used = set(input_names(root))  # (the names the node keeps: no walk)
    return Expr(root, {k: v for k, v in env.items() if k in used})


def _axis_in_sources(node: Node, q: int, env: dict | None = None) -> list:
    """(source, its position of the new axis) of each source that takes one."""
    if node.op == ROWS_OP or _on_result(node, q, env):  # the axis goes on its result
        return []
    if node.op in (SELECT_OP, TAKE_OP, "with_rows"):  # (key / rows: x's first dims)
        x, key = node.srcs
        return [(x, q), (key, q)] if q <= node.arg else [(x, q)]
    if node.op == REDUCE_OP:
        if _kept_in_place(node, q):  # (its keepdims form: nothing below takes the axis)
            return []
        # right after the kept dim before it: the axes folded between two kept dims stay
        # next to the dim that takes their missing rows (`option_flags`)
        src, axes, keep = node.srcs[0], node.arg[1], node.arg[2]
        kept = [d for d in range(src.ndim) if d not in axes]
        return [(src, q if keep else kept[q - 1] + 1 if q else 0)]
    if node.op == PICK_OP and node.arg[3]:  # tuple positions: the dims up to the axis
        return [(s, q) for s in node.srcs]
    # a 0-d source broadcasts as it is; the others take it (at 0 where it falls just
    # before their dims: the evaluation takes a result's dims from its arrays)
    lead = [node.ndim - s.ndim for s in node.srcs]
    return [(s, q - n) for s, n in zip(node.srcs, lead) if q >= n and s.ndim]


def _with_axis(node: Node, q: int, built: dict, env: dict) -> Node:
    shape = node.shape[:q] + (1,) + node.shape[q:]
    if node.op == "input":
        return _leaf_with_axis(node, q, env)
    if node.op == ROWS_OP or _on_result(node, q, env):  # a view of its result with the axis
        rows, option = (list(node.arg[2]), node.arg[3]) if node.op == ROWS_OP else \
            option_flags(node, env)
        rows.insert(q, False)
        return Node(ROWS_OP, node.dtype, shape, (node,),
                    ("newaxis", (q,), tuple(rows), option))
    if node.op == REDUCE_OP:
        src, axes, keep = node.srcs[0], node.arg[1], node.arg[2]
        if _kept_in_place(node, q):
            return node.replace(shape=shape, arg=(node.arg[0], axes, True) + node.arg[3:])
        (_, qs), = _axis_in_sources(node, q)
        rows = option_flags(src, env)[0] if keep else []
        if keep and builtins.any(rows[a] for a in axes if a < q):  # its mark would move
            raise NotSupportedError(f"a new axis at {q} after a keepdims {node.arg[0]} over "
                                    "rows that may be missing: add it to the operand first")
        arg = (node.arg[0], tuple(a + (a >= qs) for a in axes)) + tuple(node.arg[2:])
        return node.replace(shape=shape, srcs=(built[id(src), qs],), arg=arg)
    if node.op == PICK_OP:  # the tuples' axis moves with the new one
        tuples, slot, axis, position = node.arg
        srcs = tuple(built[id(s), p] for s, p in _axis_in_sources(node, q))
        return node.replace(shape=shape, srcs=srcs,
                            arg=(tuples, slot, axis + (q <= axis), position))
    if node.op in (SELECT_OP, TAKE_OP, "with_rows"):
        x, key = node.srcs
        above = q <= node.arg
        srcs = (built[id(x), q], built[id(key), q] if above else key)
        return node.replace(shape=shape, srcs=srcs, arg=node.arg + above)
    if not node.ndim:  # a 0-d value: selected by a one-element mask, which has the dim
        if ops.text_unit(node.dtype):
            raise NotSupportedError(f"a new axis on a 0-d {node.type_text()} expression")
        mask = as_expr(np.ones(1, bool))
        env.update(mask.env)
        return Node("where", node.dtype, (1,), (mask.node, node, node))
    srcs = tuple(built[id(s), q - n] if q >= n and s.ndim else s
                 for s, n in ((s, node.ndim - s.ndim) for s in node.srcs))
    return node.replace(shape=shape, srcs=srcs)


def _on_result(node: Node, q: int, env: dict | None) -> bool:
    """Whether a new axis at `q` below the level a selection or gather acts at goes on
    its result: where its mask elements or positions may be missing (a missing one under
    the new dim of 1 would be a missing row of fixed size, `?1`, that one loop nest does
    not write)."""
    return env is not None and node.op in (SELECT_OP, TAKE_OP) and q > node.arg and \
        option_flags(node.srcs[1], env)[1]


def _kept_in_place(node: Node, q: int) -> bool:
    """Whether a new axis at `q` of reduction `node` over one axis lies where its folded
    axis was (`mean(x, axis=1)[:, None]`): then it is the reduction with keepdims, its
    operand as it is (a placeholder takes no new axis)."""
    axes, keep = node.arg[1], node.arg[2]
    return not keep and tuple(axes) == (q,)


def _leaf_with_axis(node: Node, q: int, env: dict) -> Node:
    """An input with a new axis at `q`: a view of its array (a new input)."""
    value = env[node.arg]
    index = (slice(None),) * q + (None, Ellipsis)
    if isinstance(value, PickLeaf):  # (an array read at tuple levels: the loop nest's)
        raise NotSupportedError("a new axis on the items of combinations or products: "
                                "evaluate them first")
    if isinstance(value, OwnedView):
        leaf = as_expr(value.owner[index])
    elif isinstance(value, RaggedLeaf):
        if isinstance(value.array.type, T.Option):  # `?var * T`: one row, maybe missing
            raise NotSupportedError(f"a new axis on an array of type {value.array.type} (one "
                                    "row that may be missing): index the array's rows first")
        leaf = as_expr(value.array[index])
    elif isinstance(value, np.ndarray):
        leaf = as_expr(np.expand_dims(value, q))
    elif isinstance(value, DaskLeaf):  # (a Dask array takes the new axis as NumPy does)
        leaf = as_expr(value.array[index])
    elif isinstance(value, Placeholder):  # a parameter: a view of each call's array
        rows, option = option_flags(node, env)
        rows.insert(q, False)
        return Node(ROWS_OP, node.dtype, node.shape[:q] + (1,) + node.shape[q:], (node,),
                    ("newaxis", (q,), tuple(rows), option))
    else:
        raise NotSupportedError(f"a new axis on the input of type {node.type_text()} "
                                f"({type(value).__name__}): index "
                                "arrays (NumPy or lazyk) only; declare a placeholder with the "
                                "dim of size 1 instead, e.g. 'N * 1 * float64'")
    env.update(leaf.env)
    return leaf.node



def is_index_operand(key: Any) -> bool:
    """Whether `key` indexes by values (a mask or positions: `index_by`) rather than by
    place: a lazy expression, a lazyk array, an Arrow or Awkward array, a NumPy array of
    bool or integers, or a Python list of them."""
    if isinstance(key, (Expr, Array)) or is_foreign(key):
        return True
    if type(key) is tuple and len(key) > 1 and is_index_operand(key[0]) and \
            not any(map(is_index_operand, key[2:])):
        return True  # x[rows, 0]: the rows (a mask or positions), then the rest of the key
        # (x[rows, items]: positions paired with the rows' items, as NumPy's)
    if isinstance(key, list) and all(isinstance(k, (int, np.integer, np.bool_)) for k in key):
        return True  # (a list of ints or bools, as NumPy and Awkward read it; [] no position)
    return isinstance(key, np.ndarray) and key.dtype.kind in "biufc" and key.ndim > 0


def _listed(key: list) -> np.ndarray:
    """A list index as NumPy reads it: an empty list is no position (int64, not float64)."""
    return np.asarray(key) if key else np.empty(0, np.int64)


def index_by(x: Any, key: Any) -> Expr:
    """Lazy `x[mask]` (a bool key: selection) or `x[positions]` (an integer key: gather),
    with Awkward Array's rules: the key's k dims line up with x's first k dims (they pair
    as elementwise work pairs rows), and it acts at x's dim k - 1.

    - Selection keeps the elements (or rows, for k < x.ndim) where the mask is true:
      that dim becomes var (a fixed dim too; the outer dim counts the kept rows); a
      missing mask element (`?bool`) gives a missing element (a missing row above the
      array's last dim).
    - Gather takes, per row of dim k - 1, the items at the positions (negative ones count
      from the row's end): that dim becomes the positions' own. A missing position
      (`?int64`, e.g. from `argmax(..., keepdims=True)` of an empty row) gives a missing
      element (a missing row above the array's last dim); a position outside its row
      raises IndexError naming the row and the position (when computed).

    Example: `x = lazyk.array([[1.5, -2.0, 3.0], [], [-1.0]])`; `x[x > 0]` gives
    `[[1.5, 3.0], [], []]` (type `3 * var * float64`), `(x[x > 0] * 2).sum(axis=-1)` folds
    only the kept values in one loop nest, and `x[lazyk.array([[2, 0], [], [-1]])]` gives
    `[[3.0, 1.5], [], [-1.0]]`. A key `(rows, ...)` takes the rows (a mask or positions of
    one dim), then the rest: `jets[lazyk.num(jets, axis=1) > 0, 0]` is `jets[...][:, 0]`;
    `(rows, items)` pairs two index arrays, as NumPy's: `x[[0, 2], [1, 0]]` is
    `[x[0][1], x[2][0]]`.

    Raises:
        IndexError: a key of no dims or more dims than x, or of another dtype.
        ShapeError: fixed dims of x and the key that differ (var rows: when computed).
        NotSupportedError: (when computed) a missing mask element or position above a
            fixed dim of x, or rows of x that may be missing where the positions' dim is
            fixed, inside a larger expression (the result has `?n` rows, which are not
            operands; `x[positions]` of `N * ?var * T` itself computes, as Awkward's).
    """
    if type(key) is tuple:  # x[rows, 0], as NumPy's and Awkward's x[rows][:, 0]
        first = _listed(key[0]) if isinstance(key[0], list) else key[0]
        if getattr(first, "ndim", 1) != 1:
            kind = getattr(first, "type", None) or f"{np.shape(first)} {np.asarray(first).dtype}"
            raise IndexError(f"x[rows, ...]: the rows (of type {kind}) "
                             "are a mask or positions of one dim, the outer rows, followed by "
                             "ints, slices and None; x[mask] alone for a deeper mask")
        if not is_index_operand(key[1]):
            depth = 1 + builtins.sum(k is not None and k is not Ellipsis for k in key[1:])
            if depth > as_expr(x).ndim:  # (NumPy's error; the rest read a dim not there)
                raise IndexError(f"too many indices: {depth} for an array of "
                                 f"{as_expr(x).ndim} dims")
            return index_by(x, first)[(slice(None),) + key[1:]]
        items = _listed(key[1]) if isinstance(key[1], list) else key[1]
        kind = items.dtype if isinstance(items, np.ndarray) else as_expr(items).dtype
        if np.ndim(items) != 1 or kind.kind not in "iu":
            kind = getattr(items, "type", None) or f"{np.shape(items)} {items.dtype}"
            raise IndexError(f"x[rows, items]: the items (of type {kind}) are positions of "
                             "one dim, one per row, as NumPy's pairs of index arrays")
        depth = 2 + builtins.sum(k is not None for k in key[2:])
        if depth > as_expr(x).ndim:
            raise IndexError(f"too many indices: {depth} for an array of {as_expr(x).ndim} "
                             "dims")
        if isinstance(items, np.ndarray) and isinstance(first, np.ndarray) and \
                first.dtype.kind in "iu":  # (NumPy's pairs: one of length 1 stretches)
            try:
                first, items = np.broadcast_arrays(first, items)
            except ValueError:
                raise IndexError(f"x[rows, items]: {len(first)} rows and {len(items)} items "
                                 "do not pair (one of them may be of length 1)") from None
        one = index_by(index_by(x, first), items[:, None])  # (each row's item: a dim of 1)
        one = one[:, 0]
        return one[(slice(None),) + key[2:]] if key[2:] else one
    if isinstance(key, list) and is_index_operand(key):  # (NumPy's reading of the list)
        key = _listed(key)
    e, k = operands("[]", (x, key))
    text = is_text(e.dtype)  # (strings select and gather as row operations)
    refuse_text("[]", [k] if text else [e, k])
    if k.dtype.kind not in "biu":
        raise IndexError(f"an index array selects (bool) or gathers (integers): got "
                         f"{describe_node(k.node)} values")
    what = "mask" if k.dtype == np.bool_ else "positions"
    if not e.ndim:
        raise IndexError(f"a 0-d value ({e.type}) has no dims to select or gather along")
    for side in (e, k):
        if side.ndim and flags(side)[0][0]:  # (one row that may be missing, as row work)
            raise NotSupportedError(f"x[{what}] with an operand of type {side.type} (one row "
                                    "that may be missing): give it an outer fixed dim "
                                    "first, x[None]")
    if what == "positions" and not k.ndim:
        raise IndexError(f"one lazy position ({k.type}, such as lazyk.argmax(x)) for "
                         f"{e.type}: gather with positions of one dim, "
                         "x[lazyk.argmax(x, axis=0, keepdims=True)] (a one-item array), or "
                         "compute the position first, x[int(lazyk.evaluate(position))]")
    if not 1 <= k.ndim <= e.ndim:
        raise IndexError(f"{'a mask' if what == 'mask' else 'positions'} of {k.ndim} dims "
                         f"({k.type}) for {e.type}: their dims line up with the first dims "
                         f"of the array (1 to {e.ndim} of them)")
    at = k.ndim - 1
    for d in range(at + (k.dtype == np.bool_)):
        n, m = e.shape[d], k.shape[d]
        if isinstance(n, int) and isinstance(m, int) and n != m:
            raise ShapeError(f"x[{what}]: dim {d} has size {n} in the array ({e.type}) and "
                             f"{m} in the {what} ({k.type})")
        if n != m and isinstance(n, str) and isinstance(m, str):
            # (as elementwise work: two names may stand for two sizes)
            raise ShapeError(f"x[{what}]: dim {d} is {n} in the array ({e.type}) and {m} in "
                             f"the {what} ({k.type}): give the dims one name")
    if what == "mask" and isinstance(k.shape[at], int) and e.shape[at] is None and \
            flags(e)[0][at] and not flags(k)[1]:
        # a fixed mask dim over rows that may be missing: the mask as var rows (`k[k | True]`),
        # so a missing row stays missing whatever the mask's length there
        k = index_by(k, k | True)
    if what == "mask" and at == 0 and flags(k)[1] and any(
            r and isinstance(n, int) for r, n in zip(flags(e)[0][1:], e.shape[1:])):
        raise NotSupportedError(f"x[mask]: a row mask that may be missing ({k.type}) over "
                                f"rows that may be missing against a fixed dim ({e.type}, "
                                "`?n`) is not supported yet: fill the mask first "
                                "(x[lazyk.fill_none(mask, False)] drops those rows)")
    env = merge_env([e, k])
    op = SELECT_OP if k.dtype == np.bool_ else TAKE_OP
    shape = picked_shape(op, e.shape, k.shape, at)
    if op == TAKE_OP and k.dtype == np.uint64:  # (past int64: out of every row, not -1)
        k = where(k > np.uint64(2 ** 63 - 1), np.int64(-2 ** 63), astype(k, np.int64))
    key = k.node if op == SELECT_OP else cast(k.node, np.dtype(np.int64))
    if text:  # strings move as whole items: a row operation over the computed key
        rows, option = indexed_flags(at, flags(e), flags(k))
        name = "select" if op == SELECT_OP else "gather"
        # (fixed dims whose rows may be missing become var: `?var`, never `?n`)
        shape = tuple(None if d and rows[d] and isinstance(n, int) else n
                      for d, n in enumerate(shape))
        return Expr(Node(ROWS_OP, e.dtype, shape, (e.node, key),
                         (name, (at,), tuple(rows), option)), env)
    return Expr(Node(op, e.dtype, shape, (e.node, key), at), env)


def index_pairs(root: Node) -> list:
    """The dims that `x[mask]` / `x[positions]` in the graph of `root` pair where one side is
    a symbol and the other a size or another symbol (a compiled call checks them once
    the symbols have sizes: no row of 1 stretches, as in `index_by`): (dim, x's size, the
    key's, "mask" / "positions", x's type text, the key's)."""
    pairs = []
    for node in _toposort(root):
        if node.op not in (SELECT_OP, TAKE_OP):
            continue
        x, key = node.srcs
        for d in range(node.arg + (node.op == SELECT_OP)):
            n, m = x.shape[d], key.shape[d]
            if n != m and None not in (n, m) and (isinstance(n, str) or isinstance(m, str)):
                pairs.append((d, n, m, "mask" if node.op == SELECT_OP else "positions",
                              x.type_text(), key.type_text()))
    return pairs


def check_index_sizes(pairs: list, sizes: dict, signature: str) -> None:
    """ShapeError where a pair of `index_pairs` has two sizes once `sizes` (symbol -> size)
    gives the symbols theirs: no row of 1 stretches between array and key."""
    for d, n, m, what, xt, kt in pairs:
        a, b = (sizes.get(v, v) for v in (n, m))
        if isinstance(a, int) and isinstance(b, int) and a != b:
            raise ShapeError(f"x[{what}]: dim {d} ({n} in the array, {xt}; {m} in the "
                             f"{what}, {kt}) has size {a} in the array and {b} in the "
                             f"{what}: {signature}")


def index_expr(expr: Expr, key: Any) -> Expr:
    """`expr[key]` (`Expr.__getitem__`): selection or gather by an index array, else new
    axes and whole dims."""
    if is_index_operand(key):
        return index_by(expr, key)
    entries = _new_axis_key(key, expr.ndim)
    if entries is None:
        got = _in_lists(expr, key)
        if got is not None:
            return got
        items = key if isinstance(key, tuple) else (key,)
        if items and isinstance(items[0], slice) and expr.ndim and \
                isinstance(expr.shape[0], int) and \
                _new_axis_key(items[1:], expr.ndim - 1) is not None:
            # outer rows e[1:], e[::-1]: a gather at positions known now, then the rest
            rows = index_by(expr, np.arange(expr.shape[0])[items[0]])
            return rows[(slice(None),) + items[1:]] if items[1:] else rows
        spelled = _spelled_out(items, expr.ndim)
        if spelled is not None and (spelled != items or len(_picked(spelled)) > 1):
            e, gone = expr, 0  # (each dim's item or slice on its own, the outermost first:
            for d in _picked(spelled):  # an inner item is read only in the rows kept)
                e = e[(slice(None),) * (d - gone) + (spelled[d],)]
                gone += not isinstance(spelled[d], slice)
            return e
        lazy = [k for k in (key if isinstance(key, tuple) else (key,)) if isinstance(k, Expr)]
        if lazy:
            raise TypeError(f"a lazy expression ({summary(expr)}) cannot be indexed by a lazy "
                            f"scalar ({summary(lazy[0])}): an item or a slice is a Python "
                            "int; for positions known only when it runs, gather with an "
                            "index array of one position per row (x[positions], positions "
                            "of shape N * 1)")
        raise TypeError(f"a lazy expression ({summary(expr)}) cannot be indexed by "
                        f"[{_key_text(key)}]: "
                        "new axes, whole dims, a slice of the outer rows where their number "
                        "is known (e[1:]) and, at the dim after the first, one item or a "
                        "slice work (e[:, None], e[:, 0], e[:, :2], e[:, ::-1]); "
                        "evaluate it first, e.g. "
                        f"expr.eval()[{_key_text(key)}] (a view of the result), or "
                        "index the arrays it is built from")
    e = expr
    for at, entry in enumerate(entries):  # ascending: each at its final position
        if entry is None:
            e = _insert_axis(e, at)
    return e

"""Row operations (`lazyk.frontend.rowops`) in an evaluation: each `ROWS_OP` node is
lowered, sources first, before the kernels that read its result run (`lower`):

- `cumsum` / `cumprod`: a scan of the loop nest (`levels.Scan`) fused with the elementwise
  work that computes its values (`nest_steps.scan_nest`); NumPy's own cumsum along a
  non-last axis of fixed data.
- `is_none` / `fill_none` of values: rewritten into the graph that reads them, over
  zero-copy views of each `?T` leaf (its values, and its present bytes as a bool array):
  `fill_none(x, v)` is `where(present(x), x, v)`, so it fuses into the kernel around it.
- the rest (num, flatten, firsts, local_index, concatenate, is_none of lists, pad_none,
  sort, argsort): the sources are computed, then restructured with NumPy over their
  offsets (`lazyk.arrays.restructure`), and the result is a leaf of the rest of the
  graph, whose shapes are then taken from it (`_reshaped`).
"""
from __future__ import annotations

import numpy as np

from lazyk import types as T
from lazyk.arrays import arrmeta as M
from lazyk.arrays import restructure as R
from lazyk.arrays import sorting
from lazyk.arrays.array import Array, array, masked
from lazyk.arrays.buffers import offsets_array
from lazyk.arrays.columns import build_columns, columns
from lazyk.arrays.memory import MemoryBlock
from lazyk.arrays.trees import (
    Column,
    Leaf,
    Lists,
    Masked,
    Regular,
    Text,
    offsets_of,
    option_leaf,
    rows_memo,
    rows_memo_dict,
)
from lazyk.backend.padded import WIDTHS as PAD_WIDTHS
from lazyk.backend.padded import padded_items
from lazyk.backend.rowcopy import RowCopy
from lazyk.backend.threads import rouse
from lazyk.errors import NotSupportedError
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import (
    PICK_OP,
    ROWS_OP,
    SELECT_OP,
    TAKE_OP,
    Node,
    graph_ops,
    has_rows,
    rewrite,
    toposort,
)
from lazyk.frontend.leaves import OwnedView, RaggedLeaf, is_ragged, is_text, most_rows
from lazyk.frontend.numpy_rules import broadcast_shapes, cast, keep_ones
from lazyk.frontend.operands import as_expr
from lazyk.frontend.ops import ELEMENTWISE
from lazyk.frontend.rowops import flags
from lazyk.frontend.tuples import positions_in_lists, reshaped
from lazyk.runtime import launch
from lazyk.runtime.best_picks import (
    best_positions,
    gathered_from_whole_rows,
    shared_beside_best,
    whole_row_positions,
)
from lazyk.runtime.kept_items import join_ahead, joined_kept_rows, joined_rows
from lazyk.runtime.nest_results import tree_array
from lazyk.runtime.nest_steps import scan_nest
from lazyk.runtime.ragged_rules import selects

_BOOL = T.dshape("bool")


def evaluate_rows(expr, out=None, casting: str = "same_kind"):
    """`evaluate(expr, out, casting)` for an expression with row operations (the "rows"
    path of `lazyk.runtime.launch.evaluate`); NotImplemented without them."""
    if not has_rows(expr.node):
        return NotImplemented
    rouse(most_rows([expr.env]))  # (the workers spin while this plans)
    with rows_memo():
        low = lower(expr, result=out is None)
        if not isinstance(low, Expr):  # the row operation's own result
            return launch.numpy_if_fixed(low, expr.env)
        return launch.evaluate(low, out=out, casting=casting)


def lower(expr, result: bool = False):
    """`expr` with every row operation computed (or fused into the graph), no `ROWS_OP`
    node left; the shapes above them follow their results. `result`: where `expr` is
    itself a restructuring row operation, its computed value (an Array or NumPy array)."""
    env = dict(expr.env)
    top = expr.node if result and expr.node.op == ROWS_OP else None
    best, whole = best_positions(expr.node), set()  # (`lazyk.runtime.best_picks`)
    shared = shared_beside_best(expr.node, best)

    def visit(node, srcs):
        if id(node) in best:  # positions in whole rows, for gathers from unselected rows
            value = whole_row_positions(Expr(reshaped(node, srcs, env), env))
            if value is not None:
                leaf = _leaf(value, env, node.dtype)
                whole.add(leaf)
                return leaf
        got = gathered_from_whole_rows(node, srcs, whole)  # x[m][p] -> x[p]
        if got is not None:
            return got
        if id(node) in shared:  # read by a row operation and the rest: computed once
            node = node if srcs == node.srcs else reshaped(node, srcs, env)
            return _leaf(_computed(node, env), env, node.dtype)
        if node is top:
            value = _value(node, srcs, env)
            return value if isinstance(value, Node) else _Result(value)
        if node.op == ROWS_OP:
            value = _value(node, srcs, env)
            return value if isinstance(value, Node) else _leaf(value, env, node.dtype)
        if srcs == node.srcs:
            return node
        return reshaped(node, srcs, env)
    with rows_memo():
        join_ahead(expr.node, env)  # (the fields of a collection joined in one pass)
        root = rewrite(expr.node, visit)
    if isinstance(root, _Result):
        return root.value
    used = {n.arg for n in toposort(root) if n.op == "input"}
    return Expr(root, {k: v for k, v in env.items() if k in used})


class _Result:
    """The computed value of the row operation at the top of the graph."""

    def __init__(self, value):
        self.value = value


def _lengths(value: Array, env: dict) -> Node | None:
    """`num` at axis 1 of lists as graph nodes: offsets[1:] - offsets[:-1] over views of
    the offsets (`?var` rows: views that read the rows' own missing bytes), computed by the
    kernel that reads the lengths (`num(a) + num(b) >= 3`: one kernel, no lengths stored;
    alone, a kernel that writes them). None for other arrays."""
    if not isinstance(value.type, T.FixedDim):
        return None
    if isinstance(value.type.elem, T.Option):
        got = R.missing_rows_bounds(value)
        if got is None:
            return None
        e = (as_expr(got[1]) - as_expr(got[0])).astype(np.int64)
        env.update(e.env)
        return e.node
    tree = columns(value, 1)
    if not isinstance(tree, Lists):
        return None
    off = np.asarray(tree.offsets)
    e = (as_expr(off[1:]) - as_expr(off[:-1])).astype(np.int64)
    env.update(e.env)
    return e.node


def _computed(node: Node, env: dict):
    """The value of `node` (no row operation in its graph): a lazyk Array (an input's own
    array, not a copy)."""
    if node.op == "input":
        leaf = env[node.arg]
        if isinstance(leaf, RaggedLeaf):
            return leaf.array
        if isinstance(leaf, OwnedView):
            return leaf.owner
        if isinstance(leaf, np.ndarray):
            return array(leaf)
    value = launch.evaluate(Expr(node, env))
    if isinstance(value, Array):
        return value
    return array(np.asarray(value))


def _leaf(value, env: dict, dtype: np.dtype) -> Node:
    """A leaf of the graph over `value` (an Array or NumPy array), in `dtype`."""
    e = as_expr(value)
    env.update(e.env)
    return cast(e.node, dtype) if e.dtype != dtype and not is_text(e.dtype) else e.node


def _value(node: Node, srcs: tuple, env: dict):
    """A row operation over its (lowered) sources: graph nodes that compute it in the
    kernel reading it (or alone, if it is the result), or its value (an Array or NumPy
    array)."""
    name, params = node.arg[0], node.arg[1]
    if name in ("cumsum", "cumprod"):
        return _scan(name, srcs[0], params[0], env)
    if name == "newaxis":
        value = _computed(srcs[0], env)
        q = params[0]
        return value[(slice(None),) * q + (None,)]
    last = not srcs[0].ndim or params[:1] == (srcs[0].ndim - 1,)
    if name in ("fill_none", "is_none") and (name == "fill_none" or last):
        got = _fused_missing(name, node, srcs, env)
        if got is None and not is_text(srcs[0].dtype):  # (numbers from strings: computed)
            leaf = _leaf(_computed(srcs[0], env), env, srcs[0].dtype)
            got = _fused_missing(name, node, (leaf,) + srcs[1:], env)
        if got is not None:
            return got
    if name == "concatenate" and params[0] == 1:
        got = joined_kept_rows(node, srcs, env)  # (`x[m]`, `y[m]`: copied once)
        if got is not None:
            return got
    values = [_computed(s, env) for s in srcs]
    if name == "local_index" and srcs[0].shape[params[0]] is None and \
            not is_text(srcs[0].dtype) and PICK_OP not in graph_ops(srcs[0]):
        # (a tuples' field's positions: computed, as the tuples around it may be others)
        x = as_expr(values[0])
        if not any(flags(x)[0]):  # (lists that cannot be missing: walked by the kernel)
            e = positions_in_lists(x, params[0])
            env.update(e.env)
            return e.node
    if name == "num" and params[0] == 1:
        lens = _lengths(values[0], env)
        if lens is not None:
            return lens
    got = _ones_viewed(values[0]) if name == "firsts" and params[0] == 1 else None
    got = _restructured(name, node, params, values) if got is None else got
    if isinstance(got, Array) and isinstance(got.type, T.FixedDim) and \
            isinstance(values[0].type, T.VarDim) and node.shape[:1] == (None,):
        # an array of one row (`var * X`) stays one: its items are the result's
        got = offsets_array(np.array([0, got.type.size], np.int64), got, outer=(),
                            check=None)
    return got


# ---------------------------------------------------------------- running folds
_PICKED = frozenset((SELECT_OP, TAKE_OP, PICK_OP, "with_rows"))


def _scan(name: str, src: Node, axis: int, env: dict):
    combine = "add" if name == "cumsum" else "multiply"
    e = Expr(src, env)
    if axis != src.ndim - 1:  # fixed data along another axis: NumPy's own
        value = _computed(src, env)
        try:
            data = value.to_numpy()
        except NotSupportedError:
            raise NotSupportedError(f"{name} along axis {axis} of {value.type}: along the "
                                    "last axis only, for missing values") from None
        return getattr(np, name)(data, axis=axis, dtype=data.dtype)  # (cast already)
    # (selections, gathers and tuples: their values first, as where() over missing
    # values, then the scan)
    got = None if graph_ops(src) & _PICKED else scan_nest(e, combine)
    if got is None:
        got = scan_nest(as_expr(_computed(src, env)), combine)
    if got is None:
        raise NotSupportedError(f"{name} of {Expr(src, env).type}")
    return got


# ---------------------------------------------------------------- missing values, fused
class _Staged(Exception):
    """The values cannot be split into views (strings): compute the source first."""


def _fused_missing(name: str, node: Node, srcs: tuple, env: dict):
    """`is_none` / `fill_none` of values as graph nodes over the views of the `?T`
    leaves (None: not here, compute with NumPy)."""
    memo: dict = {}
    try:
        value, present = _split(srcs[0], env, memo)
    except _Staged:
        return None
    if present is not None and memo.get("rows"):  # rows missing where no `?T` leaf says:
        present = _and(present, _everywhere(value))  # the value's rows say where
    if name == "is_none":
        if present is None and is_text(value.dtype):
            return None  # (strings are not cast to bool: the rows give the shape)
        if present is None:  # nothing is missing: False in the value's shape
            true = Node("const", np.dtype(bool), (), (), True)
            false = Node("const", np.dtype(bool), (), (), False)
            return Node("where", np.dtype(bool), value.shape, (true, false, cast(value, bool)))
        full = _and(present, _everywhere(value)) if present.shape != value.shape else present
        return Node("logical_not", np.dtype(bool), keep_ones(full.shape, node.shape), (full,))
    dt = node.dtype
    fill = Node("const", dt, (), (), node.arg[1][0]) if len(srcs) == 1 else cast(srcs[1], dt)
    if present is None:
        return cast(value, dt)
    return Node("where", dt, keep_ones(broadcast_shapes("fill_none", [
        present.shape, value.shape, fill.shape]) or node.shape, node.shape),
                (present, cast(value, dt), fill))


def _everywhere(value: Node) -> Node:
    """True in `value`'s shape (x == x or x != x: NaN too)."""
    b = np.dtype(bool)
    eq = Node("equal", b, value.shape, (value, value))
    ne = Node("not_equal", b, value.shape, (value, value))
    return Node("logical_or", b, value.shape, (eq, ne))


def _and(a: Node | None, b: Node | None) -> Node | None:
    if a is None or b is None:
        return a if b is None else b
    return Node("logical_and", np.dtype(bool), broadcast_shapes("and", [a.shape, b.shape]),
                (a, b))


def _split(node: Node, env: dict, memo: dict) -> tuple:
    """(the graph of `node`'s values over leaves without missing values, whether each is
    present as a bool graph or None when none can be missing). Missing rows (`?var`) stay
    in both."""
    got = memo.get(node)  # (keyed by the node, which the memo holds: the leaves made here
    if got is not None:  # die after their views are taken, and their ids come back)
        return got
    if node.op == "input":
        got = _leaf_views(node, env)
        if got[1] is None and is_ragged(env[node.arg]) and env[node.arg].array.type.missing_rows:
            memo["rows"] = True  # (missing rows that no present bytes show)
    elif node.op in ("scalar", "const"):
        got = (node, None)
    elif node.op not in ELEMENTWISE or is_text(node.dtype) or \
            any(is_text(s.dtype) for s in node.srcs):
        if is_text(node.dtype) or any(is_text(s.dtype) for s in node.srcs):
            raise _Staged
        leaf = _leaf(_computed(node, env), env, node.dtype)  # a reduction, say
        got = _split(leaf, env, memo)
    elif node.op == "with_rows":  # (y read for its rows only: its missing values unused)
        (vx, px), (vy, _) = (_split(s, env, memo) for s in node.srcs)
        got = (node.replace(srcs=(vx, vy)), px)
    elif selects(node):  # missing where the condition is, else where the branch taken is
        (vc, pc), (vx, px), (vy, py) = (_split(s, env, memo) for s in node.srcs)
        value = node.replace(srcs=(vc, vx, vy))
        if px is None and py is None:
            present = pc
        else:
            true = Node("const", np.dtype(bool), (), (), True)
            taken = Node("where", np.dtype(bool), node.shape,
                         (vc, px if px is not None else true, py if py is not None else true))
            present = _and(pc, taken)
        got = (value, present)
    else:
        parts = [_split(s, env, memo) for s in node.srcs]
        present = None
        for _, p in parts:
            present = _and(present, p)
        got = (node.replace(srcs=tuple(v for v, _ in parts)), present)
    memo[node] = got
    return got


def _leaf_views(node: Node, env: dict) -> tuple:
    """An input's (values, present) nodes: a `?T` array's values and present bytes as two
    zero-copy views (read-only), else (the input, None)."""
    v = env[node.arg]
    if not is_ragged(v):
        return node, None
    arr = v.array
    if is_text(node.dtype):
        raise _Staged
    if not isinstance(arr.type.dtype, T.Option):
        return node, None
    values, present = option_views(arr)
    out = []
    for view in (values, present):
        e = as_expr(view)
        env.update(e.env)
        out.append(e.node)
    return out[0], out[1]


def option_views(arr: Array) -> tuple[Array, Array]:
    """(values, present) of an array of `?T` elements: its values as `T` and its present
    bytes as `bool`, both views of its memory (read-only; no copy): a `?T` element's
    present byte sits at its value's address + the mask offset, the last arrmeta word."""
    t, meta = arr.type, tuple(arr.meta)
    moff, meta = meta[-1], meta[:-1]
    # the innermost var dim's content word moves the elements (else the data pointer)
    rows = [d for d in M.dims_words(t, meta)[0] if isinstance(d, M.RowsWords)]
    content = rows[-1].content_at if rows else None
    values = Array.from_parts(T.with_element(t, lambda e: e.elem), meta, arr.ptr, arr.owner,
                              True, check_strings=False)
    if content is None:
        present = Array.from_parts(T.with_element(t, _BOOL), meta, arr.ptr + moff,
                                   arr.owner, True)
    else:
        shifted = meta[:content] + (meta[content] + moff,) + meta[content + 1:]
        present = Array.from_parts(T.with_element(t, _BOOL), shifted, arr.ptr, arr.owner,
                                   True)
    return values, present


# ---------------------------------------------------------------- restructured with NumPy
def _tree(value: Array, lists: int | None = None) -> Column:
    """The column tree of the items of `value`'s outer dim (of its one row for `var * X`),
    down to `lists` list levels (`columns`)."""
    if isinstance(value.type, T.VarDim):
        return R.row_items(columns(value[None], None if lists is None else lists + 1))
    if not isinstance(value.type, T.FixedDim):
        raise NotSupportedError(f"row operations on an array of type {value.type} (one row "
                                "that may be missing): give it an outer fixed dim first, "
                                "x[None]")
    return columns(value, lists)


def _converted(tree: Column, dtype: np.dtype) -> Column:
    """Every value of `tree` as `dtype`."""
    if isinstance(tree, Leaf):
        return tree if tree.values.dtype == dtype else Leaf(tree.values.astype(dtype))
    if isinstance(tree, Masked):
        return Masked(tree.present, _converted(tree.child, dtype))
    if isinstance(tree, Lists):
        return Lists(tree.offsets, _converted(tree.child, dtype))
    if isinstance(tree, Regular):
        return Regular(tree.size, _converted(tree.child, dtype), tree.count)
    return tree


def _negative_zero(data: np.ndarray) -> bool:
    """Whether -0.0 is among the values."""
    return bool(np.any(np.signbit(data) & (data == 0)))


def _restructured(name: str, node: Node, params: tuple, values: list):
    """The result of row operation `name` over the computed sources."""
    x = values[0]
    if name == "num" and params[0] == 0:
        return np.array(_tree(x).length(), np.int64)
    if name in ("sort", "argsort") and None not in node.shape and \
            not any(node.arg[2]) and not isinstance(x.type.dtype, T.Option):
        data = x.to_numpy()  # fixed data: NumPy's own, along any axis
        # (sorted values do not show the order of equal ones, but for -0.0 and 0.0: there
        # NumPy's fastest sort, else its stable one)
        kind = "stable" if data.dtype.kind == "f" and _negative_zero(data) else None
        if params[1]:
            return getattr(np, name)(data, axis=params[0],
                                     kind=kind if name == "sort" else "stable")
        # descending and stable: the flipped data sorted ascending, flipped back (ties
        # then keep their order; NaN first, as NumPy's last ascending)
        axis, flipped = params[0], np.flip(data, params[0])
        if name == "sort":
            return np.flip(np.sort(flipped, axis=axis, kind=kind), axis)
        return np.flip(data.shape[axis] - 1 - np.argsort(flipped, axis=axis, kind="stable"),
                       axis)
    if name in ("sort", "argsort") and None not in node.shape and \
            not any(node.arg[2]) and params[0] != x.type.ndim - 1:
        got = _sorted_fixed_options(x, name, params)
        if got is not None:
            return got
    if name == "flatten" and params[0] == 1 and isinstance(x, Array):
        got = R.flat_view(x)  # (rows back to back: the content they cover, no copy)
        if got is not None:
            return got
    if name == "num":  # (the lengths of the lists at the axis: their items are not read)
        return built(R.num(_tree(x, params[0]), params[0]))
    if name == "is_none" and params[0] == 0 and isinstance(x.type, T.FixedDim):
        return built(R.is_none(columns(x, 0), 0))  # (whether missing: no lists read)
    tree = _tree(x)
    if name == "flatten":
        got = (_kept_rows(tree) if params[0] == 1 else None) or R.flatten(tree, params[0])
    elif name == "firsts":
        got = (_padded(tree, 1, True, firsts=True) if params[0] == 1 else None) or \
            R.firsts(tree, params[0])
    elif name == "is_none":
        got = R.is_none(tree, params[0])
    elif name == "local_index":
        got = R.local_index(tree, params[0])
    elif name == "pad_none":
        got = (_padded(tree, params[1], params[2]) if params[0] == 1 else None) or \
            R.pad_none(tree, params[1], params[0], params[2])
    elif name == "concatenate":
        trees = [_tree(v) for v in values]
        got = joined_rows(trees, node.dtype) if params[0] == 1 else None
        if got is None:
            trees = [_converted(t, node.dtype) for t in trees] if not is_text(node.dtype) \
                else trees
            got = R.concatenate(trees, params[0])
    elif name in ("sort", "argsort"):
        got = sorting.sort(tree, x.type.ndim, params[1], name == "argsort")
    elif name in ("select", "gather"):  # strings (`lazyk.frontend.indexing.index_by`)
        got = getattr(R, name)(tree, _tree(values[1]), params[0])
    elif name == "fill_none":  # strings: the values where present, else the fill
        raise NotSupportedError(f"fill_none of {x.type}: numbers only")
    else:
        raise NotSupportedError(f"row operation {name}")
    return built(got)


def _sorted_fixed_options(x: Array, name: str, params: tuple):
    """sort / argsort of fixed `?T` data along an axis other than the last: that axis
    moved last, its rows sorted as lists are (missing values last), moved back."""
    if not isinstance(x.type.dtype, T.Option):
        return None
    axis = params[0]
    values, present = (np.moveaxis(v.to_numpy(), axis, -1) for v in option_views(x))
    moved = masked(values, present)
    got = built(sorting.sort(_tree(moved), moved.type.ndim, params[1], name == "argsort"))
    if name == "argsort":
        return np.moveaxis(got.to_numpy(), -1, axis)
    return masked(*(np.moveaxis(v.to_numpy(), -1, axis) for v in option_views(got)))


def _number_lists(tree: Column) -> tuple | None:
    """(missing-list flags or None, the lists, their values) of lists of numbers the native
    row functions copy (items of 1, 2, 4 or 8 bytes); None for other trees."""
    mask, lists = tree.unwrap()
    if not isinstance(lists, Lists) or not isinstance(lists.child, Leaf):
        return None
    values = lists.child.values
    if values.ndim != 1 or values.dtype.kind not in "biufcmM" or \
            values.dtype.itemsize not in PAD_WIDTHS:
        return None
    return mask, lists, values


def _kept_rows(tree: Column) -> Column | None:
    """`flatten` at axis 1 of lists of numbers some of which are missing: the present
    lists' items, a slice of the values where the missing lists are empty, else copied
    natively row by row (`RowCopy`); None for other trees (`restructure.flatten`)."""
    got = _number_lists(tree)
    if got is None or got[0] is None:
        return None
    mask, lists, values = got
    off, mask = np.asarray(lists.offsets, np.int64), np.asarray(mask, bool)
    if not (off[1:] - off[:-1])[~mask].any():  # (a missing list's items: none)
        return lists.child.slice(int(off[0]), int(off[-1]))
    return Leaf(RowCopy([off], np.flatnonzero(mask)).fill([values], values.dtype))


def _padded(tree: Column, target: int, clip: bool, firsts: bool = False) -> Column | None:
    """`pad_none` at axis 1 of lists of numbers (`firsts`: each list's first item, missing
    for an empty list), natively in one pass over the rows (`padded_items`); None for other
    trees (`restructure.pad_none` / `firsts` take them)."""
    got = _number_lists(tree)
    if got is None:
        return None
    mask, lists, values = got
    new = None if clip else offsets_of(np.maximum(np.diff(lists.offsets), target))
    got = option_leaf(lists.length() * target if clip else int(new[-1]), values.dtype)
    padded_items(lists.offsets, values, got.child.values, got.present, target, new)
    if firsts:  # (missing where the list is)
        if mask is not None:
            np.logical_and(got.present, np.asarray(mask, bool), out=got.present)
        return got
    rows = Regular(target, got, lists.length()) if clip else Lists(new, got)
    return rows if mask is None else Masked(mask, rows)


def _ones_viewed(x: Array) -> Array | None:
    """`firsts` of `n * 1 * ?number` in memory made by this evaluation (no input's): that
    memory viewed as `n * ?number` (its items: no copy); None for other arrays."""
    t, meta, memo = x.type, x.meta, rows_memo_dict()
    if not (isinstance(t, T.FixedDim) and isinstance(t.elem, T.FixedDim) and
            t.elem.size == 1 and isinstance(t.elem.elem, T.Option) and
            isinstance(t.elem.elem.elem, T.Scalar)) or not isinstance(x.owner, MemoryBlock) or \
            memo is None or x.owner.ref < memo["blocks from"]:
        return None
    return Array.from_parts(T.FixedDim(t.size, t.elem.elem), (t.size, meta[1]) + meta[4:],
                            x.ptr, x.owner, x.readonly, check_strings=False)


def built(tree: Column) -> Array:
    """The lazyk Array of a column tree (missing fixed-size lists, `?n`, laid out with
    their present bytes)."""
    marks: dict = {}

    def strip(node, level):
        if isinstance(node, Masked) and isinstance(node.child, Regular):
            marks[level] = np.asarray(node.present, bool)
            return strip(node.child, level)
        if isinstance(node, Masked):
            child = strip(node.child, level)
            return node if child is node.child else Masked(node.present, child)
        if isinstance(node, Lists):
            return Lists(node.offsets, strip(node.child, level + 1))
        if isinstance(node, Regular):
            return Regular(node.size, strip(node.child, level + 1), node.count)
        return node
    plain = strip(tree, 1)
    if not marks:
        return build_columns(plain)
    leaf = plain
    while isinstance(leaf, (Masked, Lists, Regular)):
        leaf = leaf.child
    # (strings: missing rows as `?var`, the type their expressions say)
    got = None if isinstance(leaf, Text) else tree_array(plain, plain.length(), None, marks)
    return got if got is not None else build_columns(_as_var_rows(tree))


def _as_var_rows(node: Column) -> Column:
    """The tree with its missing fixed-size lists (`?n`) as missing var rows (`?var`): the
    layout strings and records take."""
    if isinstance(node, Masked) and isinstance(node.child, Regular):
        r = node.child
        offsets = np.arange(r.length() + 1, dtype=np.int64) * r.size
        return Masked(node.present, Lists(offsets, _as_var_rows(r.child)))
    if isinstance(node, Masked):
        return Masked(node.present, _as_var_rows(node.child))
    if isinstance(node, Lists):
        return Lists(node.offsets, _as_var_rows(node.child))
    if isinstance(node, Regular):
        return Regular(node.size, _as_var_rows(node.child), node.count)
    return node


launch.install_path("rows", evaluate_rows)

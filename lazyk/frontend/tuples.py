"""The tuples of ragged rows: `combinations`, `argcombinations`, `cartesian` (Awkward Array
2's names, signatures and results), as lazy records (`lazyk.frontend.records.Records`).

A field of combinations or of a cartesian product is a `pick` node (`graph.PICK_OP`): the
item at one slot of each tuple of the rows at an axis. Evaluated, the loop nest walks the
tuples inside each row (a tuple level: `lazyk.codegen.levels.Combos` / `Product`), so work
over the fields that ends in a reduction never stores a tuple; `.eval()` of the records
themselves stores them, as records of Awkward's structure (`N * var * (T, T)`,
`N * var * {a: T, b: T}`).
"""
from __future__ import annotations

import itertools
import math
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from lazyk.arrays.array import Array
from lazyk.arrays.array import array as lazyk_array
from lazyk.errors import NotSupportedError, ShapeError
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import (
    PICK_OP,
    REDUCE_OP,
    ROWS_OP,
    SELECT_OP,
    TAKE_OP,
    Node,
    graph_ops,
    picked_shape,
    rewrite,
    toposort,
)
from lazyk.frontend.leaves import (
    OwnedView,
    Placeholder,
    RaggedLeaf,
    RaggedPlaceholder,
    leaf_data,
)
from lazyk.frontend.numpy_rules import broadcast_shapes
from lazyk.frontend.operands import as_expr
from lazyk.frontend.records import Records, lined_up_fields, one_shape, record_fields
from lazyk.frontend.reductions import reduce
from lazyk.frontend.rowops import flags, local_index


@dataclass(frozen=True)
class Combos:
    """The n-tuples of one row's items, i0 < i1 < ... (`replacement`: i0 <= i1 <= ...), in
    lexicographic order (ak.combinations): every slot reads a row of the same length."""

    n: int
    replacement: bool = False

    @property
    def slots(self) -> int:
        return self.n

    def group(self, slot: int) -> int:
        """The group of slots whose rows pair (one length): all of them."""
        return 0

    def count(self, lens: list) -> int:
        """How many tuples rows of lengths `lens` (one per slot) hold."""
        top = lens[0] + self.n - 1 if self.replacement else lens[0]
        return math.comb(max(top, 0), self.n)

    def listed(self, longest: int) -> tuple[np.ndarray, np.ndarray]:
        """(first, table): the tuples of rows of 0..`longest` items, in this order, one per
        row of `table` (int64, `n` slots); a row of m items holds tuples first[m] up to
        first[m + 1]."""
        make = itertools.combinations_with_replacement if self.replacement else \
            itertools.combinations
        rows = [np.array(list(make(range(m), self.n)), np.int64).reshape(-1, self.n)
                for m in range(longest + 1)]
        return np.cumsum([0] + [len(r) for r in rows]), np.concatenate(rows)

    def __str__(self) -> str:
        return f"combinations of {self.n}" + (" with replacement" if self.replacement else "")


@dataclass(frozen=True)
class Product:
    """Every tuple of one item from each of `m` rows (ak.cartesian), the first slot varying
    slowest; each slot reads rows of its own length."""

    m: int

    @property
    def slots(self) -> int:
        return self.m

    def group(self, slot: int) -> int:
        return slot

    def count(self, lens: list) -> int:
        return math.prod(lens)

    def __str__(self) -> str:
        return f"product of {self.m}"


# ---------------------------------------------------------------- items
def _item(x: Any):
    """A field expression, or records (`lazyk.zip`'s, a lazyk array of records' fields),
    a field of dims of 1 stretched to the others' lists (`met[:, None]` beside `pt`)."""
    rec = record_fields(x)
    if rec is not None and (not one_shape(rec) or not any(
            op in graph_ops(e.node) for e in rec.leaves() for op in (SELECT_OP, TAKE_OP))):
        rec = lined_up_fields(x)  # (fields of other lists, or of dims of 1: paired as zip
    return rec if rec is not None else as_expr(x)  # pairs them; selections' as they are)


def _depth_of(x) -> int:
    return x.ndim


def _rows_expr(x) -> Expr:
    """An expression with the rows of `x` (its first field for records)."""
    return x.leaves()[0] if isinstance(x, Records) else x


def _axis(axis: int, depth: int, fn: str) -> int:
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"{fn}: axis must be an int, not {axis!r}")
    a = int(axis) + depth if axis < 0 else int(axis)
    if not 0 <= a < depth:
        raise np.exceptions.AxisError(f"{fn}: axis={axis} is out of bounds for items with "
                                      f"{depth} dims")
    return a


def reads_in_nest(e: Expr) -> bool:
    """Whether every leaf of `e` is data the loop nest reads as it is (lazyk and NumPy
    arrays; no placeholder and no Dask collection's rows, which a compiled call or a
    partition binds later)."""
    return all(type(v) in (RaggedLeaf, OwnedView, np.ndarray)
               for v in e.env.values())


def positions_in_lists(e: Expr, axis: int) -> Expr:
    """Each item's position in its list at `axis` >= 1 (int64, the dims up to `axis`; a
    missing list stays missing), walked by the loop nest as the one slot of 1-tuples: it
    fuses with the work around it (`reads_in_nest(e)` must hold)."""
    return _pick((e,), Combos(1), 0, axis, True, "local_index")


def _nest_leaves(e: Expr, fn: str) -> Expr:
    """`e` with its NumPy leaves read by the loop nest (tuple levels run there only)."""
    env: dict = {}

    def visit(node, srcs):
        if node.op == "input":
            v = e.env[node.arg]
            if isinstance(v, RaggedPlaceholder) and not hasattr(v, "array"):
                env[node.arg] = v  # (each call binds a lazyk array of its type)
                return node
            if isinstance(v, Placeholder) and not hasattr(v, "array") and v.shape:
                # a per-row value (an event mask's operand): each call binds it as rows do
                env[node.arg] = RaggedPlaceholder(v.name, v.shape, v.dtype, False)
                return node
            if isinstance(v, Placeholder):
                if hasattr(v, "array"):
                    raise NotSupportedError(
                        f"{fn} of a Dask array ({node.arg}): the tuples of rows run on "
                        "lazyk arrays, NumPy arrays and collections of rows "
                        "(lazyk.dask.from_ragged)")
                raise NotSupportedError(
                    f"{fn} of placeholder {node.arg!r} ({v!r}): in lazyk.compile the tuples "
                    "run over var rows; declare it with var dims (N * var * T), or, for a "
                    "value per row, use it after the tuples are made (pairs.a.pt * "
                    f"{node.arg}[:, None])")
            if isinstance(v, RaggedLeaf):
                env[node.arg] = v
                return node
            data = leaf_data(v)
            if not isinstance(data, np.ndarray):
                raise NotSupportedError(f"{fn} of a {type(data).__name__} operand")
            arr = v.owner if isinstance(v, OwnedView) and isinstance(v.owner, Array) and \
                v.owner.shape == data.shape else _as_array(data)
            name = f"{node.arg}~rows"
            env[name] = RaggedLeaf(arr, False)
            return node.replace(arg=name)
        return node.replace(srcs=srcs) if srcs != node.srcs else node
    return Expr(rewrite(e.node, visit), env)


# id(NumPy array) -> weak refs to it and to the lazyk Array over it: the entry lives while
# that Array does (in an expression's inputs), which keeps the NumPy array alive; never past
_arrays: dict = {}


def _as_array(data: np.ndarray) -> Array:
    """One lazyk Array over a NumPy leaf for every use while one lives (a leaf's name is
    one input)."""
    key = id(data)
    got = _arrays.get(key)
    arr = got[1]() if got is not None and got[0]() is data else None
    if arr is not None:
        return arr
    arr = lazyk_array(data)
    _arrays[key] = (weakref.ref(data), weakref.ref(
        arr, lambda r, k=key, d=_arrays: d.get(k, (None, None))[1] is r and d.pop(k, None)))
    return arr


def _pick(exprs: tuple, tuples, slot: int, axis: int, position: bool, fn: str) -> Expr:
    """The pick node: the item (or its index) at `slot` of each tuple of the rows at
    `axis`; `exprs`: the value's source (and for a product each slot's rows, the value's
    at `slot`)."""
    exprs = tuple(_nest_leaves(e, fn) for e in exprs)
    sizes = [e.shape[axis] for e in exprs]
    if any(n is not None and not isinstance(n, int) for n in sizes):
        raise NotSupportedError(f"{fn} along a symbolic dim ({sizes})")
    value = exprs[slot if len(exprs) > 1 else 0]
    shape = _pick_shape([e.shape for e in exprs], tuples, slot, axis, position)
    env: dict = {}
    for e in exprs:
        env.update(e.env)
    dtype = np.dtype(np.int64) if position else value.dtype
    node = Node(PICK_OP, dtype, shape, tuple(e.node for e in exprs),
                (tuples, slot, axis, position))
    return Expr(node, env)


def _pick_shape(shapes: list, tuples, slot: int, axis: int, position: bool) -> tuple:
    """The shape of a pick over sources of these shapes: the value's (its dims up to the
    axis for positions), the axis holding the count of tuples."""
    sizes = [s[axis] for s in shapes]
    value = shapes[slot if len(shapes) > 1 else 0]
    shape = list(value[:axis + 1] if position else value)
    shape[axis] = tuples.count(sizes) if all(isinstance(n, int) for n in sizes) else None
    if shape[axis] is not None and shape[axis] >= 1 << 62:  # (an array cannot hold them)
        raise ValueError(f"{tuples} of rows of {' and '.join(map(str, sizes))} items: "
                         f"{shape[axis]:.3g} tuples per row, more than any array holds")
    return tuple(shape)


def reshaped(node: Node, srcs: tuple, env: dict | None = None) -> Node:
    """`node` over new sources (a graph rebuilt at other shapes: a partition's, a computed
    part's), its shape computed again from theirs. A min / max with `initial` is built
    again as `lazyk.min` builds it over its new source (`env`: the leaves): over fixed
    dims `initial` is folded in after (an empty axis gives it), over rows into each row."""
    if node.op == REDUCE_OP:
        if len(node.arg) > 4 and env is not None:
            op, axes, keep, skipna, initial = node.arg
            used = {n.arg: env[n.arg] for n in toposort(srcs[0]) if n.op == "input"}
            e = reduce(op, Expr(srcs[0], used), axis=axes, keepdims=keep, skipna=skipna,
                       dtype=node.dtype, initial=initial)
            env.update(e.env)
            return e.node
        axes, keep = node.arg[1], node.arg[2]
        shape = tuple((1 if d in axes else n) for d, n in enumerate(srcs[0].shape)
                      if keep or d not in axes)
        return node.replace(shape=shape, srcs=srcs)
    if not srcs:
        return node
    if node.op in (SELECT_OP, TAKE_OP):
        return node.replace(shape=picked_shape(node.op, srcs[0].shape, srcs[1].shape,
                                               node.arg), srcs=srcs)
    if node.op == PICK_OP:
        tuples, slot, axis, position = node.arg
        return node.replace(shape=_pick_shape([s.shape for s in srcs], tuples, slot, axis,
                                              position), srcs=srcs)
    if node.op == ROWS_OP:  # its builder typed it: only a kept outer dim follows the rows
        old, shape = node.srcs[0].shape[:1], node.shape
        if old and shape[:1] == old and srcs[0].shape[:1] != old:
            shape = srcs[0].shape[:1] + shape[1:]
        return node.replace(shape=shape, srcs=srcs)
    return node.replace(shape=broadcast_shapes(node.op, [s.shape for s in srcs]), srcs=srcs)


def _names(fields, n: int, fn: str) -> tuple:
    """(field names, tuple?) of n-tuples."""
    if fields is None:
        return [str(k) for k in range(n)], True
    fields = list(fields)
    if len(fields) != n or not all(isinstance(f, str) for f in fields):
        raise ValueError(f"{fn}: fields must be {n} names (str), got {fields!r}")
    if len(set(fields)) != n:
        raise ValueError(f"{fn}: field names must differ, got {fields!r}")
    return fields, False


def _check_n(n: Any, fn: str) -> int:
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ValueError(f"{fn}: n must be an int >= 1, got {n!r}")
    return int(n)


def _tuple_axis(x, axis: int, fn: str) -> int:
    a = _axis(axis, _depth_of(x), fn)
    shape = _rows_expr(x).shape
    if a == 0 and shape and shape[0] is not None:
        raise NotSupportedError(f"{fn} along axis 0 (across the {shape[0]} elements of the "
                                "outermost dim) is not supported: combine the rows of a "
                                "var dim (axis >= 1), e.g. of x[None] with axis=1")
    return a


def _line_up(shapes: list, names: list | None) -> None:
    """The dims above cartesian's axis pair up (equal sizes, or 1); else a ShapeError
    naming the arrays, the axis and the sizes (a var dim's rows are checked as they run)."""
    for ax in range(len(shapes[0])):
        sized = [(j, s[ax]) for j, s in enumerate(shapes) if isinstance(s[ax], int)]
        if len({d for _, d in sized if d != 1}) > 1:
            what = ", ".join(f"array {names[j]!r} has {d}" if names else f"array {j} has {d}"
                             for j, d in sized)
            raise ShapeError(f"cartesian: the arrays do not line up at axis {ax} ({what})")


# ---------------------------------------------------------------- public functions
def combinations(array: Any, n: int, replacement: bool = False, axis: int = 1,
                 fields: Any = None) -> Records:
    """The n-tuples of the items of each row at `axis`, i < j (< k ...), in lexicographic
    order of their positions (Awkward's `ak.combinations`): records with a field per slot
    ("0", "1", ... or the names in `fields`); `replacement=True` takes i <= j. A missing
    row gives a missing row; rows shorter than n none. Lazy: work over the fields that
    ends in a reduction walks the tuples inside each row and never stores them.

    Example: `p = lazyk.combinations(mu, 2)`; `lazyk.any((p["0"].pt + p["1"].pt) > 50,
    axis=1)` is one fused loop over the pairs of each event.

    Raises:
        ValueError: n < 1; `fields` not n names.
        NotSupportedError: axis 0 over a fixed outer dim; placeholders.
    """
    n = _check_n(n, "combinations")
    names, is_tuple = _names(fields, n, "combinations")
    x = _item(array)
    a = _tuple_axis(x, axis, "combinations")
    tuples = Combos(n, bool(replacement))
    got = {k: x.map(lambda e, s=s: _pick((e,), tuples, s, a, False, "combinations"))
           if isinstance(x, Records) else _pick((x,), tuples, s, a, False, "combinations")
           for s, k in enumerate(names)}
    return Records(got, a + 1, is_tuple, own_fields=True)


def argcombinations(array: Any, n: int, replacement: bool = False, axis: int = 1,
                    fields: Any = None) -> Records:
    """The positions (int64) of `combinations`' items within their rows
    (`ak.argcombinations`): records of n indices over the dims up to `axis`.

    Example: `lazyk.argcombinations(lazyk.array([[1.5, 2.5, 3.5]]), 2).to_list()` gives
    `[[(0, 1), (0, 2), (1, 2)]]`.
    """
    n = _check_n(n, "argcombinations")
    names, is_tuple = _names(fields, n, "argcombinations")
    x = _item(array)
    a = _tuple_axis(x, axis, "argcombinations")
    rows = _rows_expr(x)
    if isinstance(x, Records) and len(x.leaves()) > 1 and any(flags(rows)[0][:a + 1]):
        # fields whose rows may be missing, lined up: the combinations of the positions of
        # the lined-up rows' items (a missing row of any field is missing)
        return combinations(local_index(rows, axis=a), n, replacement, a, fields)
    tuples = Combos(n, bool(replacement))
    got = {k: _pick((rows,), tuples, s, a, True, "argcombinations")
           for s, k in enumerate(names)}
    return Records(got, a + 1, is_tuple, own_fields=True)


def _arrays_of(arrays: Any, fn: str) -> tuple:
    """(the keys of a dict of arrays or None, the arrays) of `cartesian`'s argument."""
    if not isinstance(arrays, (list, tuple, dict)):
        raise TypeError(f"{fn}: give a list or a dict of arrays, not {type(arrays).__name__}")
    names = list(arrays) if isinstance(arrays, dict) else None
    items = [_item(x) for x in (arrays.values() if names is not None else arrays)]
    if not items:
        raise ValueError(f"{fn}: no arrays")
    return names, items


def argcartesian(arrays: Any, axis: int = 1, nested: Any = None) -> Records:
    """The positions (int64) of `cartesian`'s items within their rows (`ak.argcartesian`):
    records of one index per array, over the dims up to `axis`.

    Example: `lazyk.argcartesian([lazyk.array([[1.5, 2.5]]), lazyk.array([[7]])]).to_list()`
    gives `[[(0, 0), (1, 0)]]`.
    """
    names, items = _arrays_of(arrays, "argcartesian")
    a = _axis(axis, min(_depth_of(x) for x in items), "argcartesian")
    at = [local_index(_rows_expr(x), axis=a) for x in items]
    return cartesian(at if names is None else dict(zip(names, at)), axis=a, nested=nested)


def cartesian(arrays: Any, axis: int = 1, nested: Any = None) -> Records:
    """Every tuple of one item from each array's row at `axis`, the first array's item
    varying slowest (Awkward's `ak.cartesian`): records with a field per array ("0",
    "1", ... for a list, the keys of a dict). `nested=True` opens a new list after each
    array but the last, a list of positions (or keys) after those. A missing row of any
    array gives a missing row. Lazy, like `combinations`.

    Example: `c = lazyk.cartesian({"jet": jets, "lep": leps}, nested=True)`;
    `lazyk.all(c.jet.eta - c.lep.eta > 0.4, axis=-1)` is one value per jet.
    """
    names, items = _arrays_of(arrays, "cartesian")
    depths = {_depth_of(x) for x in items}
    m = len(items)
    if nested is True:
        opened = list(range(m - 1))
    elif nested is None or nested is False:
        opened = []
    else:
        keys = names or []
        opened = sorted(keys.index(j) if j in keys else j for j in nested)
        if any(not isinstance(j, (int, np.integer)) or not 0 <= j < m - 1 for j in opened):
            raise ValueError(f"cartesian: nested must name arrays 0..{m - 2} (all but the "
                             f"last), got {nested!r}")
    a = _axis(axis, min(depths), "cartesian")
    for x in items:
        _tuple_axis(x, a, "cartesian")
    _line_up([_rows_expr(x).shape[:a] for x in items], names)
    if a == 0 and opened:
        raise NotSupportedError("cartesian with nested lists at axis 0 is not supported: "
                                "nest the lists of a var dim (axis >= 1)")
    groups: list = [[]]
    for j in range(m):
        groups[-1].append(j)
        if j in opened:
            groups.append([])
    ng = len(groups)
    fields = {}
    for g, members in enumerate(groups):
        # the lists of the other groups are new axes of size 1 here (they broadcast)
        key = (slice(None),) * a + (None,) * g + (slice(None),) + (None,) * (ng - 1 - g) + \
            (Ellipsis,)

        def widened(e, key=key):
            return e[key] if ng > 1 else e
        rows = tuple(widened(_rows_expr(items[j])) for j in members)
        for s, j in enumerate(members):
            k = names[j] if names is not None else str(j)
            x = items[j]
            if len(members) == 1:
                fields[k] = x.map(widened, ng - 1) if isinstance(x, Records) else \
                    widened(x)
                continue
            tuples = Product(len(members))

            def pick(e, s=s):
                srcs = rows[:s] + (widened(e),) + rows[s + 1:]
                return _pick(srcs, tuples, s, a + g, False, "cartesian")
            fields[k] = x.map(pick, ng - 1) if isinstance(x, Records) else pick(x)
    return Records(fields, a + ng, names is None, own_fields=True)


def unzip(records: Any) -> tuple:
    """Lazy `ak.unzip`: the fields of records (lazy records, `combinations` / `cartesian`
    tuples, a lazyk array of records), in order, as a tuple:
    `a, b = lazyk.unzip(lazyk.combinations(jets, 2))`."""
    rec = record_fields(records)
    if rec is None:
        raise TypeError(f"unzip takes records, not {type(records).__name__}" +
                        ("" if not hasattr(records, "type") else f" of type {records.type}"))
    return tuple(rec[f] for f in rec.fields)


__all__ = ["Combos", "Product", "argcartesian", "argcombinations", "cartesian", "combinations",
           "unzip"]

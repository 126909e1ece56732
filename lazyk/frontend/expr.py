"""User-facing lazy expressions: `Expr`, leaves, placeholders and NumPy-named builders.

Every builder types its node at once with NumPy's own ufunc resolution (NEP 50 weak
Python scalars included, `lazyk.frontend.numpy_rules`) and inserts `astype` nodes so each op sees
exactly its loop dtypes; the kernels then never guess about promotion. Computing
(`eval`, `to_numpy`, `compile`, `explain`) goes to the runtime through `lazyk.hooks`.
"""
from __future__ import annotations

import builtins
import html
import itertools
import sys
import weakref
from _weakref import _remove_dead_weakref
from typing import Any

import numpy as np

from lazyk import hooks
from lazyk import types as T
from lazyk.arrays import operators
from lazyk.arrays.array import Array
from lazyk.arrays.array import array as lazyk_array
from lazyk.arrays.columns import fixed_text_rows
from lazyk.arrays.conversions import text_numpy
from lazyk.arrays.foreign import is_foreign, is_pandas
from lazyk.arrays.operators import Operators
from lazyk.errors import (
    CastingError,
    DTypeError,
    NotSupportedError,
    ShapeError,
    UnsupportedOperandError,
)
from lazyk.frontend import leaves, ops
from lazyk.frontend.graph import (
    MAX_KEYED_INPUTS,
    PICK_OP,
    REDUCE_OP,
    ROWS_OP,
    SELECT_OP,
    TAKE_OP,
    Node,
    arg_key,
    build_type,
    dump,
    has_rows,
    picked_shape,
)
from lazyk.frontend.graph import toposort as _toposort
from lazyk.frontend.leaves import (
    DaskLeaf,
    OwnedView,
    Placeholder,
    RaggedLeaf,
    RaggedPlaceholder,
    check_dtype,
    describe_ragged,
    is_dask_array,
    is_text,
    leaf_data,
    parse_fixed_type,
    parse_placeholder_type,
    text_view,
)
from lazyk.frontend.numpy_rules import (
    broadcast_shapes,
    cast,
    clip_key,
    comparison_key,
    describe_node,
    normalize_axes,
    reduce_dtype,
    resolve,
)
from lazyk.types.parse import dshape

# Names are rows of lazyk.frontend.ops.OPS (NumPy's names; `conj` is NumPy's `conjugate`).
UNARY = ("negative", "absolute", "invert", "logical_not", "sqrt", "exp", "expm1", "log",
         "log1p", "log2", "log10", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh",
         "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "floor", "ceil", "trunc", "rint", "sign", "isnan", "isinf",
         "isfinite", "conj")
BINARY = ("add", "subtract", "multiply", "true_divide", "floor_divide", "remainder",
          "power", "arctan2", "hypot", "minimum", "maximum", "fmin", "fmax", "bitwise_and",
          "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "less", "less_equal",
          "greater", "greater_equal", "equal", "not_equal", "logical_and", "logical_or",
          "logical_xor", "fmod", "copysign")
COMPARISONS = ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal")
ALIASES = {"divide": "true_divide", "mod": "remainder", "abs": "absolute",
           "conjugate": "conj", "bitwise_not": "invert", "pow": "power"}
REDUCTIONS = ("sum", "prod", "min", "max", "mean", "any", "all")
_counter = itertools.count()
_STRING_TYPES = (dshape("string"), dshape("?string"), dshape("bytes"), dshape("?bytes"))


class Expr(Operators):
    """A lazy, typed array expression; nothing runs until `.eval()` or `lazyk.evaluate`.

    `node` is its graph; `env` maps each input leaf's name to its data (a NumPy view) or a
    `Placeholder`. An expression built again over arrays of the same dtypes and shapes
    (`_built`) makes its graph only when something reads `node` or `env`.
    """

    __slots__ = ("_node", "_env", "_key", "_leaves", "_recipe", "_launch")

    def __init__(self, node: Node, env: dict):
        self._node, self._env = node, env
        self._key = self._leaves = self._recipe = self._launch = None

    def __reduce_ex__(self, protocol):
        if type(self) is Expr:  # the graph and its leaves (not the runtime's `_launch`)
            return (Expr, (self.node, self.env))
        return super().__reduce_ex__(protocol)

    @property
    def node(self) -> Node:
        """The graph (made now if the expression was built by structure: `_built`)."""
        node = self._node
        return node if node is not None else _materialize(self)._node

    @property
    def env(self) -> dict:
        """Input name -> data of the graph's input leaves."""
        env = self._env
        return env if env is not None else _materialize(self)._env

    def _structure(self) -> tuple | None:
        """(structure key, its input arrays by position, flat) of an expression built by
        structure (`_built`), else None: the key is `node.skey`, the arrays (NumPy arrays,
        the views of NumPy-backed lazyk Arrays, var / option lazyk Arrays) the data of the
        inputs `node.names` names; flat: all of them NumPy arrays and a result of less than
        2 dims. `_launch` is the runtime's to keep what it planned for this expression
        object: a call that computes it, or gives NotImplemented."""
        key = self._key
        return None if key is None else (key[1], self._leaves, key[4])

    # --- type, without running anything ---
    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of the result."""
        key = self._key
        return key[2] if key is not None else self._node.dtype

    @property
    def shape(self) -> tuple:
        """Result shape; symbolic dims are names (str)."""
        key = self._key
        return key[3] if key is not None else self._node.shape

    @property
    def ndim(self) -> int:
        """Number of result dimensions."""
        return self.node.ndim

    @property
    def type(self):
        """The result as a lazyk type, e.g. `3 * 4 * float64` or `N * float64`."""
        node = self.node
        if not builtins.any(isinstance(v, RaggedLeaf) or _missing_rows(v)
                            for v in self.env.values()) and not has_rows(node) and \
                not _indexes(node):
            option = (has_options(self) and not _skips_missing(node)) or _none_for_empty(node)
            return build_type(node.shape, node.dtype, (), option)
        # var / option leaves: missing rows (`?var`) and values follow the graph
        dims, option = _option_flags(node, self.env)
        return build_type(node.shape, node.dtype, tuple(dims), option)

    def __repr__(self) -> str:
        return f"<lazyk.Expr {self.type}>\n{dump(self.node)}"

    def _repr_html_(self) -> str:
        """A notebook's view: the short form and the type; nothing is computed."""
        return (f"<div><b>lazyk.Expr</b> <code>{html.escape(infix(self.node))}</code><br>"
                f"type <code>{html.escape(str(self.type))}</code> (lazy: <code>.eval()</code>"
                " computes it, <code>.explain()</code> shows how)</div>")

    def __len__(self) -> int:
        if not self.shape or not isinstance(self.shape[0], int):
            raise TypeError(f"len() of a 0-d or symbolic expression ({summary(self)})")
        return self.shape[0]

    def __iter__(self):
        """Compute the expression, then iterate the result as NumPy does: the elements of
        a 1-d result, the rows of a deeper one (NumPy scalars and arrays; lazyk arrays
        where var dims or missing values have no NumPy form)."""
        if not self.ndim:
            raise TypeError(f"iteration over a 0-d expression ({summary(self)})")
        out = hooks.evaluate(self)
        if isinstance(out, Array):
            text = text_numpy(out)  # fixed strings / bytes: a NumPy `U` / `S` array
            if text is not None:
                return iter(text)
            try:
                out = out.to_numpy()
            except NotSupportedError:  # var dims / missing values: lazyk rows
                return iter(out)
        elif not isinstance(out, np.ndarray):
            out = np.asarray(out.to("cpu"))  # a device array
        return iter(out)

    # --- forcing ---
    def eval(self, out: Any = None, casting: str = "same_kind"):
        """Compute into a new `lazyk.Array` (a zero-copy wrapper of the fresh result).

        `lazyk.evaluate(expr)` and `expr.to_numpy()` give a NumPy ndarray instead. With
        `out` (as `lazyk.evaluate`: a NumPy or lazyk array; for var / option results a lazyk
        array of the result's type and row lengths) the result is written there and `out`
        is returned.
        """
        if out is not None:
            return hooks.evaluate(self, out=out, casting=casting)
        run = self._launch  # (evaluated before: the runtime's launch of this very expression)
        out = run() if run is not None else hooks.launch(self)
        if out is NotImplemented:
            out = hooks.evaluate(self)
        if type(out) is not np.ndarray:
            return out  # e.g. a device array
        return lazyk_array(out)

    def to_numpy(self) -> np.ndarray:
        """Compute into a new NumPy ndarray (GPU results are copied to the host).

        A ragged expression whose result is fixed (`sum(axis=-1)` of `N * var * float64`)
        converts too, and fixed strings / bytes give a NumPy `U` / `S` array. Raises
        NotSupportedError for a result with var dims or missing values (`?T`), which have
        no ndarray form: use `.eval()` or `.to_list()` for those.
        """
        out = hooks.evaluate(self)
        if isinstance(out, np.ndarray):
            return out
        if isinstance(out, Array):
            text = text_numpy(out)  # fixed strings / bytes: a NumPy `U` / `S` array
            if text is not None:
                return text
            try:
                return out.to_numpy()
            except NotSupportedError:
                raise NotSupportedError(
                    f"the result has type {out.type}: var dimensions and missing values "
                    "have no NumPy ndarray form; use .eval() for a lazyk array, "
                    "lazyk.to_arrow / lazyk.to_awkward for Arrow / Awkward arrays, or "
                    ".to_list() / .tolist() for Python lists") from None
        return np.asarray(out.to("cpu"))

    def to_list(self):
        """Compute and return nested Python lists (None for missing values)."""
        out = self.eval()
        to_list = getattr(out, "to_list", None)
        return to_list() if to_list is not None else self.to_numpy().tolist()

    def __array__(self, dtype=None, copy=None):
        out = self.to_numpy()
        return out if dtype is None else out.astype(dtype)

    def __array_function__(self, func, types, args, kwargs):
        """NumPy functions stay lazy where lazyk has them (`np.sum`, `np.where`, `np.clip`,
        ...; `lazyk.frontend.numpy_api.FUNCTIONS`); the others raise NotSupportedError naming the
        function instead of computing behind your back (`np.asarray(e)` computes)."""
        return hooks.array_function(func, types, args, kwargs)

    def __bool__(self) -> bool:
        out = hooks.evaluate(self)  # a 0-d `?bool` result is a lazyk Array: its own rule
        return bool(out if isinstance(out, (Array, np.ndarray)) else np.asarray(out.to("cpu")))

    def __float__(self) -> float:
        return float(self.to_numpy())

    def __getitem__(self, key: Any):
        """`e[:, None]`, `e[None]`, `e[..., None]`: new axes of size 1 (NumPy's
        `np.newaxis`), e.g. to pair a per-row array with rows (`x * w[:, None]`); `e[:]`
        and `e[...]` are `e`. No copy: the new axes reach the arrays it is built from as
        views.

        `e[mask]` and `e[positions]` (a bool or integer array or expression) select and
        gather lazily, as Awkward Array does (`index_by`): the mask's or the positions'
        dims line up with e's first dims, e.g. `x[x > 0]`,
        `x[lazyk.argmax(x, axis=1, keepdims=True)]`. Other indexes (ints, partial slices)
        are no graph node: evaluate first, then index the result."""
        if is_index_operand(key):
            return index_by(self, key)
        entries = _new_axis_key(key, self.ndim)
        if entries is None:
            raise TypeError(f"a lazy expression ({summary(self)}) cannot be indexed by "
                            f"[{_key_text(key)}]: "
                            "only new axes and whole dims work (e[:, None], e[None], "
                            "e[..., None], e[:]); evaluate it first, e.g. "
                            f"expr.eval()[{_key_text(key)}] (a view of the result), or "
                            "index the arrays it is built from")
        e = self
        for at, entry in enumerate(entries):  # ascending: each at its final position
            if entry is None:
                e = _insert_axis(e, at)
        return e

    def __int__(self) -> int:
        return int(self.to_numpy())

    def explain(self, target: str = "cpu") -> str:
        """Graph before and after each pass, KernelSpecs, LLVM IR, assembly and layouts.

        `target='cuda'` shows each kernel's NVVM IR and PTX instead.
        """
        return hooks.explain(self, target=target)

    def compile(self):
        """Compile once for every input of the same types (`lazyk.compile`)."""
        return hooks.compile(self)


def summary(e: Expr, limit: int = 80) -> str:
    """A one-line name for `e` in messages, about `limit` characters long:
    `Expr(sin(a) * 2 + 1, type='N * float64')` (the text cut short with `...`)."""
    tail = f", type={str(e.type)!r})"
    return f"Expr({infix(e.node, builtins.max(20, limit - len(tail) - 5))}{tail}"


# Python's operator precedence (higher binds tighter), so `infix` writes only the parentheses
# that Python needs.
_PRECEDENCE = {"|": 4, "^": 5, "&": 6, "<<": 7, ">>": 7, "+": 8, "-": 8, "*": 9, "/": 9,
               "//": 9, "%": 9, "**": 11}
_PREFIX = {"negative": "-", "invert": "~"}


def infix(root: Node, limit: int = 60) -> str:
    """The graph under `root` as one line of Python-like text (`sin(a) * 2 + 1`), cut to
    `limit` characters; arrays by their input names (as `dump` and `explain` show them)."""
    memo: dict = {}
    for node in _toposort(root):
        parts = [memo[id(s)] for s in node.srcs]
        sym = SYMBOLS.get(node.op)
        if node.op == "input":
            text, prec = str(node.arg), 12
        elif node.op in ("const", "scalar"):
            text = repr(node.arg)
            prec = 10 if text.startswith("-") else 12
        elif node.op == "astype":  # casts come from promotion: the value reads the same
            text, prec = parts[0]
        elif sym in _PRECEDENCE:
            p = _PRECEDENCE[sym]
            (left, lp), (right, rp) = parts
            right_assoc = sym == "**"
            left = f"({left})" if lp < p or (right_assoc and lp == p) else left
            right = f"({right})" if rp < p or (not right_assoc and rp == p) else right
            text, prec = f"{left} {sym} {right}", p
        elif sym is not None:  # a comparison
            (left, lp), (right, rp) = parts
            text = f"{f'({left})' if lp <= 3 else left} {sym} {f'({right})' if rp <= 3 else right}"
            prec = 3
        elif node.op in _PREFIX:
            inner, ip = parts[0]
            text, prec = _PREFIX[node.op] + (f"({inner})" if ip < 10 else inner), 10
        elif node.op == REDUCE_OP:
            axes = tuple(node.arg[1])
            every = len(axes) == node.srcs[0].ndim
            axis = "" if every else f", axis={axes[0] if len(axes) == 1 else axes}"
            text, prec = f"{node.arg[0]}({parts[0][0]}{axis})", 12
        else:
            text, prec = f"{node.op}({', '.join(t for t, _ in parts)})", 12
        # each text is kept a little past the limit, so a shared subgraph costs no more
        memo[id(node)] = (text if len(text) <= limit else text[:limit + 1], prec)
    text = memo[id(root)][0]
    return text if len(text) <= limit else text[:limit - 3].rstrip() + " ..."


def _key_text(key: Any) -> str:
    """An index as it was written: `3:7`, `1, ::2`, `...`."""
    def one(k):
        if isinstance(k, slice):
            parts = ["" if v is None else repr(v) for v in (k.start, k.stop, k.step)]
            return ":".join(parts[:2] if k.step is None else parts)
        return "..." if k is Ellipsis else repr(k)
    return ", ".join(map(one, key)) if isinstance(key, tuple) else one(key)


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
            for src, qs in _axis_in_sources(node, q):
                need.setdefault(id(src), set()).add(qs)
    env, built = dict(e.env), {}
    for node in order:  # sources first
        for q in need.get(id(node), ()):
            built[id(node), q] = _with_axis(node, q, built, env)
    root = built[id(e.node), at]
    used = {n.arg for n in _toposort(root) if n.op == "input"}
    return Expr(root, {k: v for k, v in env.items() if k in used})


def _axis_in_sources(node: Node, q: int) -> list:
    """(source, its position of the new axis) of each source that takes one."""
    if node.op == ROWS_OP:  # its sources keep their dims: the axis goes on its result
        return []
    if node.op in (SELECT_OP, TAKE_OP):  # the mask / positions line up with x's first dims
        x, key = node.srcs
        return [(x, q), (key, q)] if q <= node.arg else [(x, q)]
    if node.op == REDUCE_OP:
        # right after the kept dim before it: the axes folded between two kept dims stay
        # next to the dim that takes their missing rows (`_option_flags`)
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
    if node.op == ROWS_OP:  # a view of its result with the new axis
        rows = list(node.arg[2])
        rows.insert(q, False)
        return Node(ROWS_OP, node.dtype, shape, (node,),
                    ("newaxis", (q,), tuple(rows), node.arg[3]))
    if node.op == REDUCE_OP:
        src, axes, keep = node.srcs[0], node.arg[1], node.arg[2]
        (_, qs), = _axis_in_sources(node, q)
        rows = _option_flags(src, env)[0] if keep else []
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
    if node.op in (SELECT_OP, TAKE_OP):
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


def _leaf_with_axis(node: Node, q: int, env: dict) -> Node:
    """An input with a new axis at `q`: a view of its array (a new input)."""
    value = env[node.arg]
    index = (slice(None),) * q + (None, Ellipsis)
    if isinstance(value, OwnedView):
        leaf = as_expr(value.owner[index])
    elif isinstance(value, RaggedLeaf):
        if isinstance(value.array.type, T.Option):  # `?var * T`: one row, maybe missing
            raise NotSupportedError(f"a new axis on an array of type {value.array.type} (one "
                                    "row that may be missing): index the array's rows first")
        leaf = as_expr(value.array[index])
    elif isinstance(value, np.ndarray):
        leaf = as_expr(np.expand_dims(value, q))
    else:
        what = f"parameter {node.arg!r}" if isinstance(value, Placeholder) else \
            f"input of type {node.type_text()}"
        raise NotSupportedError(f"a new axis on the {what} ({type(value).__name__}): index "
                                "arrays (NumPy or lazyk) only; declare a placeholder with the "
                                "dim of size 1 instead, e.g. 'N * 1 * float64'")
    env.update(leaf.env)
    return leaf.node


# --- building by structure ------------------------------------------------------------------
# An expression of lazyk / NumPy arrays of numbers and Python scalars is built by structure:
# its build key is the op (and its arguments) with its operands' tokens (an array's dtype and
# shape, or its lazyk type for var / option arrays; a scalar's type and value; an
# expression's own token) and which operands read the same array. The first build of a key
# runs the builders (typing, every check, the graph); the result's structure key
# (`Node.skey`), dtype and shape are kept for the key, so the same key over other arrays is
# a look-up and the expression's graph is made only when something reads it (`Expr.node`:
# `_materialize` runs the same builders). Values are (token, structure key, dtype, shape,
# flat: see `Expr._structure`).
_built: dict = {}
_tokens = itertools.count(1)
_BUILT_LIMIT = 1 << 14
_NO_KEYWORDS: dict = {}  # (a recipe's keywords; never written)


def _token(x: Any) -> tuple | None:
    """(token, arrays by position) of an operand `_built` takes, else None. A token is an
    int (an expression's), a tuple (a scalar's type and value, an array's dtype and shape)
    or a lazyk type (a var / option array's): kinds that never compare equal."""
    t = type(x)
    if t is Expr:
        key = x._key
        return None if key is None else (key[0], x._leaves)
    if t is int or (t is float and x == x and x != 0.0):  # (NaN, -0.0: by their graph)
        return (t, x), ()
    if t is Array:  # (a NumPy-backed one by its view: what binding reads)
        view = x.numpy_view()
        if view is not None:
            dt = view.dtype
            return ((dt, view.shape), (view,)) if dt in _NATIVE_NUMERIC else None
        return (x.type, (x,)) if _plain_ragged(x) else None  # var dims, `?T`: by type
    if t is np.ndarray and x.dtype in _NATIVE_NUMERIC:
        return (x.dtype, x.shape), (x,)
    return None


def _plain_ragged(x: Array) -> bool:
    """Whether arrays of `x`'s type are one input leaf of their own (numbers under var
    dims, `?T`; not strings, records, missing rows against a fixed dim): known per type."""
    t = x.type
    got = _ragged_types.get(t)
    if got is None:
        try:
            e = as_expr(x)
        except Exception:  # noqa: BLE001 - (building with it raises it again)
            got = False
        else:
            leaf = e.env.get(e.node.arg) if e.node.op == "input" else None
            got = type(leaf) is RaggedLeaf and leaf.array is x
        if len(_ragged_types) >= _BUILT_LIMIT:
            _ragged_types.clear()
        _ragged_types[t] = got
    return got


_ragged_types: dict = {}  # lazyk type of var / option arrays -> `_plain_ragged`


def _build_key(head: tuple, args: tuple) -> tuple | None:
    """(build key, arrays by position) of `head` over operands `args`, or None when an
    operand has no token."""
    if len(args) == 1:  # (an expression's arrays are distinct already)
        got = _token(args[0])
        return None if got is None else (head + (got[0],), got[1])
    if len(args) == 2:
        a, b = _token(args[0]), _token(args[1])
        if a is None or b is None:
            return None
        x, y = a[1], b[1]
        if not y or not x or (len(x) == 1 == len(y) and x[0] is not y[0]):
            return head + (a[0], b[0]), x + y
        toks, joined = (a[0], b[0]), x + y
    else:
        toks, joined = [], ()
        for arg in args:
            got = _token(arg)
            if got is None:
                return None
            toks.append(got[0])
            joined += got[1]
        toks = tuple(toks)
    # which operands read the same array: each array's first position
    ids = [id(v) for v in joined]
    same = tuple([ids.index(i) for i in ids])
    arrays = tuple(v for k, v in enumerate(joined) if same[k] == k)
    if len(arrays) > MAX_KEYED_INPUTS:
        return None
    return head + toks + (same,), arrays


def _remember(got: tuple, e: Expr) -> Expr:
    """Keep what building `got` (build key, arrays) gave: `e`'s structure, when its inputs
    are those arrays in that order."""
    key, arrays = got
    node = e.node
    names = node.names
    if e._key is not None or names is None or len(names) != len(arrays):
        return e
    env = e.env
    for v, n in zip(arrays, names):
        x = env[n]
        t = type(x)
        if (x.view if t is OwnedView else x.array if t is RaggedLeaf else x) is not v:
            return e
    flat = len(node.shape) < 2 and builtins.all(type(v) is np.ndarray for v in arrays)
    entry = (next(_tokens), node.skey, node.dtype, node.shape, flat)
    if len(_built) >= _BUILT_LIMIT:
        _built.clear()
    _built[key] = entry
    e._key, e._leaves = entry, arrays
    return e


def _deferred(entry: tuple, arrays: tuple, recipe: tuple) -> Expr:
    """An expression of a known structure over `arrays`; `recipe` (builder, args, keywords)
    makes its graph when it is read."""
    e = object.__new__(Expr)
    e._node = e._env = e._launch = None
    e._key, e._leaves, e._recipe = entry, arrays, recipe
    return e


def _materialize(e: Expr) -> Expr:
    """Make the graph of `e` and of the expressions it was built from (sources first; no
    recursion: a chain of any length)."""
    stack, seen = [(e, False)], set()
    while stack:
        x, ready = stack.pop()
        recipe = x._recipe
        if recipe is None:  # (made already; or meanwhile, by another thread)
            continue
        if ready:
            fn, args, kw = recipe
            got = fn(*args, **kw)
            x._env, x._node, x._recipe = got.env, got.node, None
        elif id(x) not in seen:
            seen.add(id(x))
            stack.append((x, True))
            stack.extend((a, False) for a in (*recipe[1], *recipe[2].values())
                         if type(a) is Expr and a._recipe is not None)
    return e


# --- leaves ---------------------------------------------------------------------------------

def is_operand(x: Any) -> bool:
    """Whether `x` can take part in an expression (for NotImplemented in operators)."""
    if isinstance(x, (Expr, np.ndarray, np.generic, bool, int, float, complex)):
        return True
    return isinstance(x, Array) or hasattr(x, "__cuda_array_interface__") or \
        is_dask_array(x) or is_pandas(x) or is_foreign(x) or \
        hasattr(type(x), "__lazyk_expr__")


def _wrap_dask(x: Any) -> Expr:
    name = f"_{next(_counter)}"
    leaf = DaskLeaf(name, x)
    return Expr(Node("input", leaf.dtype, leaf.shape, (), name), {name: leaf})


def wrap_array(arr: np.ndarray, owner: Any = None) -> Expr:
    """A leaf over NumPy array `arr` (zero-copy); `owner` is the lazyk Array that owns it.

    `{begin, size}` string elements (`ops.STRING`) come only from a lazyk string array
    (`leaves.text_view`): their pointers are read by kernels, so NumPy records are refused.
    """
    dt = arr.dtype
    if dt not in _NATIVE_NUMERIC:  # (those need no check and are typed as they are)
        if not (owner is not None and dt in (ops.STRING, ops.BYTES)):
            check_dtype(dt, text=True)
        # Byte order and alignment belong to the data, not the type: the leaf is typed
        # native and the kernel spec is specialised to the actual array at bind time.
        dt = dt.newbyteorder("=")
    name = _leaf_name(arr if owner is None else owner)
    node = Node("input", dt, arr.shape, (), name)
    return Expr(node, {name: arr if owner is None else OwnedView(arr, owner)})


_NATIVE_NUMERIC = frozenset(ops.NUMERIC)


class _NameRef(weakref.ref):
    """A weak reference to an array that has an input name (`_leaf_name`)."""

    __slots__ = ("key", "name")


def _forget_name(ref: _NameRef) -> None:
    _remove_dead_weakref(_names, ref.key)  # (only while the entry is this dead one)


def _leaf_name(source: Any) -> str:
    """The input name of an array in expressions: the same for every use of the same array
    object (`x - x.mean()` reads one input), new for any other."""
    key = id(source)
    got = _names.get(key)
    if got is not None and got() is source:
        return got.name
    name = f"_{next(_counter)}"
    try:
        ref = _NameRef(source, _forget_name)
    except TypeError:  # not weakly referable: a new input each time
        return name
    ref.key, ref.name = key, name
    _names[key] = ref
    return name


_names: dict = {}  # id(array) -> weak reference to it (`_NameRef`: its input name)


def _same_source(a: Any, b: Any) -> bool:
    """Whether two env entries of one input name read the same array (`_leaf_name`)."""
    if isinstance(a, OwnedView) and isinstance(b, OwnedView):
        return a.owner is b.owner and a.view.dtype == b.view.dtype and \
            a.view.shape == b.view.shape and a.view.strides == b.view.strides
    if isinstance(a, RaggedLeaf) and isinstance(b, RaggedLeaf):
        return a.array is b.array and a.option == b.option
    return False


def _wrap_ragged(arr: Any) -> Expr:
    low, sizes = hooks.var_rows(arr)  # (the loop nest's module imports this one)
    if sizes:  # `?n` rows: `?var` rows of n elements, paired with a fixed n (exactly x)
        e, top = _wrap_ragged(low), builtins.min(sizes)
        fixed = tuple(sizes.get(j, 1) for j in range(top, len(e.node.shape)))
        if e.node.dtype == np.bool_:
            return e * np.ones(fixed, bool)
        return e - np.zeros(fixed, bool)  # x - 0 is x, -0.0 and NaN too
    shape, dtype, option = describe_ragged(arr)
    name = _leaf_name(arr)
    return Expr(Node("input", dtype, shape, (), name), {name: RaggedLeaf(arr, option)})


def _wrap_text_rows(arr: Any) -> Expr:
    """A leaf over string rows (`var * string`, `?string`): typed `ops.STRING` like fixed
    string leaves, so the string builders accept it; `lazyk.runtime.text_steps` computes the string
    operations over it before the ragged path sees the expression."""
    shape, _, option = describe_ragged(leaves.text_rows(arr, nested=True))
    name = _leaf_name(arr)
    elem = arr.type.dtype
    dtype = leaves.text_element(elem.elem if isinstance(elem, T.Option) else elem)
    return Expr(Node("input", dtype, shape, (), name), {name: RaggedLeaf(arr, option)})


def _missing_rows(v: Any) -> bool:
    """Whether `v` is a placeholder with `?var` dims (missing rows)."""
    return isinstance(v, RaggedPlaceholder) and builtins.any(v.rows)


def has_options(e: Expr) -> bool:
    """Whether any leaf of `e` is a `?T` array (its result is then `?T` too), or a row
    operation in it gives missing values or rows (`lazyk.firsts`, `lazyk.pad_none`)."""
    return builtins.any(getattr(v, "option", False) or _missing_rows(v)
                        for v in e.env.values()) or builtins.any(
        n.op == ROWS_OP and (n.arg[3] or builtins.any(n.arg[2]))
        for n in _toposort(e.node))  # missing rows (`?var`) too


def as_expr(x: Any) -> Expr:
    """Wrap an operand: Expr as is, arrays zero-copy, Python scalars weak (NEP 50)."""
    t = type(x)
    if t is Expr:
        return x
    if t is int or (t is float and x == x and x != 0.0):  # (NaN and -0.0: below)
        node = _weak_nodes.get((t, x))
        if node is None:
            node = Node("scalar", np.dtype(np.int64 if t is int else np.float64), (), (), x)
            if len(_weak_nodes) >= _WEAK_NODES_LIMIT:
                _weak_nodes.clear()
            _weak_nodes[t, x] = node
        return Expr(node, {})
    if t is Array:  # fixed dims of numbers: the NumPy view
        view = x.numpy_view()
        if view is not None and view.dtype in _NATIVE_NUMERIC:
            return wrap_array(view, x)
    elif t is np.ndarray:
        return wrap_array(x)
    if isinstance(x, Expr):
        return x
    if isinstance(x, (str, bytes)):  # a string constant: a kernel parameter (spec.text_param)
        value = str(x) if isinstance(x, str) else bytes(x)
        return Expr(Node("const", ops.STRING, (), (), value), {})
    # NOTE: before the Python checks: np.float64 subclasses float but is strong.
    if isinstance(x, np.generic):
        check_dtype(x.dtype, "scalar")
        return Expr(Node("const", x.dtype.newbyteorder("="), (), (), x.item()), {})
    if isinstance(x, bool):  # NEP 50: Python bool is not weak, it is np.bool_
        return Expr(Node("const", np.dtype(bool), (), (), bool(x)), {})
    if isinstance(x, (int, float, complex)):
        kind = int if isinstance(x, int) else float if isinstance(x, float) else complex
        default = {int: np.int64, float: np.float64, complex: np.complex128}[kind]
        return Expr(Node("scalar", np.dtype(default), (), (), kind(x)), {})
    if isinstance(x, np.ndarray):
        if isinstance(x, np.ma.MaskedArray):  # masked entries missing: `?T`
            return as_expr(lazyk_array(x))
        return wrap_array(x)
    if isinstance(x, Array):
        elem = x.type.dtype
        if isinstance(elem.elem if isinstance(elem, T.Option) else elem, T.FixedBytes):
            x = fixed_text_rows(x)  # `bytes` elements over the fixed bytes (in place)
        try:
            view = x.to_numpy()
        except NotSupportedError:  # var dims / options: the ragged path (lazyk.runtime.ragged)
            _refuse_records(x.type)
            elem = x.type.dtype
            if isinstance(elem.elem if isinstance(elem, T.Option) else elem, T.FixedString):
                x = fixed_text_rows(x)  # rows of string elements (a copy of those)
            if x.type.dtype in _STRING_TYPES:  # `{begin, size}` elements, zero-copy
                try:
                    return wrap_array(text_view(x), x)
                except NotSupportedError:  # var dims / ?string: rows (lazyk.runtime.text_steps)
                    return _wrap_text_rows(x)
            return _wrap_ragged(x)
        if view.dtype.fields is not None:
            _refuse_records(x.type, view.dtype)
        return wrap_array(view, x)
    if hasattr(x, "__cuda_array_interface__"):  # GPU arrays: lazyk.runtime.device runs them
        return wrap_array(hooks.as_device_array(x))
    if is_dask_array(x):  # a leaf that remembers the Dask array (lazyk.dask runs it)
        return _wrap_dask(x)
    if is_pandas(x) or is_foreign(x):  # as lazyk.array reads it (nulls: `?T`)
        return as_expr(lazyk_array(x))
    cls = type(x)
    if hasattr(cls, "__lazyk_expr__"):  # collections with rules of their own (lazyk.dask)
        return cls.__lazyk_expr__(x)
    what = f"{cls.__module__}.{cls.__qualname__}"
    hint = ("convert it with numpy.asarray(x) or lazyk.array(x) first"
            if hasattr(x, "__array__") else
            "use a NumPy array, a lazyk array, a Dask array or a Python scalar")
    raise TypeError(f"cannot use a {what} in a lazyk expression: {hint}")


# Python scalars seen recently -> their node, held so that an expression built again
# finds its constants interned (`(2 * a).node` is then one look-up).
_weak_nodes: dict = {}
_WEAK_NODES_LIMIT = 1024


def _refuse_records(t: T.Type, dtype: np.dtype | None = None) -> None:
    """NotSupportedError for arrays of records or tuples, which are not operands: their
    fields are (`r["x"] + 1`). `dtype`: the NumPy dtype holding them, named too. The hint
    indexes by name: `r.type`, `r.min`, `r.meta` are the array's own attributes."""
    while isinstance(t, (T.Dim, T.Option)):
        t = t.elem
    held = "" if dtype is None else f" (NumPy dtype {dtype})"
    if isinstance(t, T.Record):
        name = t.names[0] if t.names else "x"
        raise NotSupportedError(f"records are not operands of expressions{held}: use their "
                                f"fields, e.g. r[{name!r}] + 1 (fields: "
                                f"{', '.join(t.names)})")
    if isinstance(t, T.Tuple):
        keys = ", ".join(repr(str(k)) for k in range(len(t.types)))
        raise NotSupportedError(f"tuples are not operands of expressions{held}: use their "
                                f"fields, named by position as in Awkward Array, e.g. "
                                f"t['0'] + 1 (fields: {keys})")


def placeholder(name: str, type: Any) -> Expr:
    """A named typed parameter; `N` in `'N * float64'` unifies across operands.

    Example: `a = lazyk.placeholder('a', 'N * float64')`.

    Args:
        name: the parameter name in `lazyk.compile(...).signature`.
        type: fixed, symbolic and var dims over a numeric dtype or an option of one, e.g.
            `'N * 3 * float32'` or `'N * var * ?float64'` (ragged and missing-value
            parameters run through `lazyk.compile`, on lazyk arrays of that type); or
            dims over `string` / `?string` (`'N * var * ?string'`) or `bytes` /
            `?bytes`, for the string operations (comparisons, `str_len`, `startswith`,
            `endswith`, `where`).

    The type is read by `lazyk.dshape` (the one type language: `'N * int'` is int32,
    `'N * real'` float64, `'N * complex[float32]'` complex64, `'>float64'` big-endian).
    Byte order describes data, not the parameter: the node and the compiled signature
    are native and a call accepts either byte order of the same dtype.

    Raises:
        ValueError: a name that is not a Python identifier, or `out` / `casting` (the
            keywords of a compiled call).
        TypeParseError: malformed type text (with line, column and a caret).
        NotSupportedError: what a placeholder cannot hold yet: ellipsis dims, records /
            tuples and other non-numeric element types.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"placeholder name {name!r} is not a Python identifier (compiled "
                         "calls take parameters by name, as keywords)")
    if name in ("out", "casting"):
        raise ValueError(f"placeholder name {name!r} is taken: a compiled call's {name}= "
                         "keyword has that name; choose another name")
    shape, dtype, option, rows = parse_placeholder_type(type, with_rows=True)
    node = Node("input", dtype, shape, (), name)
    if option or "var" in shape:  # run by lazyk.compile on lazyk arrays of that type
        return Expr(node, {name: RaggedPlaceholder(name, shape, dtype, option, rows)})
    return Expr(node, {name: Placeholder(name, shape, dtype)})


def _merge_env(exprs) -> dict:
    # (an env is never changed once made, so expressions may share one)
    if len(exprs) == 2:
        a, b = exprs[0].env, exprs[1].env
        if not b or a is b:
            return a
        if not a:
            return b
        if a.keys().isdisjoint(b):
            return {**a, **b}
    env: dict = {}
    for e in exprs:
        for k, v in e.env.items():
            old = env.get(k)
            if old is not None and old is not v and not _same_source(old, v):
                a, b = leaf_data(old), leaf_data(v)
                if not (isinstance(a, Placeholder) and isinstance(b, Placeholder)
                        and (a.shape, a.dtype) == (b.shape, b.dtype)):
                    raise TypeError(f"two different inputs are named {k!r}")
            env[k] = v
    return env


# Python operator spellings, so errors say `==` where the user wrote `==`.
SYMBOLS = {"add": "+", "subtract": "-", "multiply": "*", "true_divide": "/",
           "floor_divide": "//", "remainder": "%", "power": "**", "bitwise_and": "&",
           "bitwise_or": "|", "bitwise_xor": "^", "left_shift": "<<", "right_shift": ">>",
           "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=",
           "equal": "==", "not_equal": "!="}


def _operand_text(a: Any) -> str:
    if isinstance(a, (str, bytes)):
        return f"Python {type(a).__name__} {a!r:.40}"
    try:
        return str(getattr(a, "type", None) or getattr(a, "dtype", None) or type(a).__name__)
    except (KeyError, ValueError, TypeError, NotImplementedError):  # a type with no text
        return type(a).__name__


def _op_text(name: str) -> str:
    return f"{name} ({SYMBOLS[name]})" if name in SYMBOLS else name


def operands(name: str, args: tuple) -> list[Expr]:
    """`as_expr` on each argument; a non-numeric operand raises UnsupportedOperandError
    (a DTypeError and a NotSupportedError) naming the op and the types."""
    try:
        return [as_expr(a) for a in args]
    except (DTypeError, NotSupportedError) as err:
        types = ", ".join(_operand_text(a) for a in args)
        raise UnsupportedOperandError(
            f"{_op_text(name)}: unsupported operand type(s) {types} ({err})") from None


def text_operand(name: str, x: Any, text: str | bytes, reflected: bool = False) -> Expr:
    """Operator `name` between a lazy value `x` and a Python str / bytes.

    String arrays compare elementwise (`lazyk.frontend.expr.apply`); a numeric `x` compares as NumPy
    does (`==` all False, `!=` all True); everything else (arithmetic, ordering a number
    with a string, record / datetime arrays) raises UnsupportedOperandError.
    """
    why = "strings of this type are not supported in expressions"
    try:
        e = as_expr(x)
    except (DTypeError, NotSupportedError) as err:
        e, why = None, str(err)
    if e is not None and is_text(e.dtype):
        return apply(name, text, e) if reflected else apply(name, e, text)
    if e is not None and name in ("equal", "not_equal"):
        answer = Node("const", np.dtype(bool), (), (), name == "not_equal")
        true = Node("const", np.dtype(bool), (), (), True)
        node = Node("where", np.dtype(bool), e.shape, (true, answer, cast(e.node, bool)))
        return Expr(node, e.env)
    pair = (text, x) if reflected else (x, text)
    what = why if e is None else "a number and a string have no common type"
    raise UnsupportedOperandError(
        f"{_op_text(name)}: unsupported operand type(s) {_operand_text(pair[0])} and "
        f"{_operand_text(pair[1])} ({what})")


def refuse_container(name: str, x: Any, other: Any, reflected: bool = False) -> None:
    """UnsupportedOperandError for operator `name` between a lazy value `x` and a Python
    list, tuple, dict, set or None (Python's own TypeError would not name the array's type).
    """
    what = type(other).__name__
    pair = (what, _operand_text(x)) if reflected else (_operand_text(x), what)
    hint = "wrap a sequence as an array first, e.g. lazyk.array([1, 2]) or np.asarray(...)" \
        if isinstance(other, (list, tuple)) else \
        "use a NumPy array, a lazyk array (e.g. lazyk.array([1, 2])) or a Python scalar"
    raise UnsupportedOperandError(
        f"{_op_text(name)}: unsupported operand type(s) {pair[0]} and {pair[1]} ({hint})")


def _text_name(node: Node) -> str:
    if node.op == "const" and is_text(node.dtype):
        return f"Python {type(node.arg).__name__}"
    if node.dtype.kind in "SU":  # NumPy's name too: `fixed_string[3, 'utf32']` is `<U3`
        return f"{node.type_text()} (NumPy {node.dtype.str})"
    return describe_node(node)


def _operand_name(e: Expr) -> str:
    """`_text_name` of an operand; a `?string` leaf says `?string`."""
    if e.node.op == "input" and has_options(e):
        return str(e.type)
    return _text_name(e.node)


def refuse_text(name: str, exprs) -> None:
    """UnsupportedOperandError (a NotSupportedError) if any operand is a string."""
    if builtins.any(is_text(e.dtype) for e in exprs):
        types = ", ".join(_operand_name(e) for e in exprs)
        raise UnsupportedOperandError(
            f"{_op_text(name)} is not supported on strings (operand types {types}); strings "
            "support ==, !=, <, <=, >, >=, lazyk.str_len, lazyk.startswith and "
            "lazyk.endswith")


def _text_apply(row: str, exprs: list[Expr], what: str) -> Expr:
    """Node for text row `row` (a comparison, startswith, ...) over string operands."""
    srcs = [e.node for e in exprs]
    if not builtins.all(is_text(n.dtype) for n in srcs):
        types = " and ".join(_operand_name(e) for e in exprs)
        raise UnsupportedOperandError(f"{what}: unsupported operand type(s) {types} (a "
                                      "number and a string have no common type)")
    data = [n.dtype for n in srcs if n.op != "const"]
    if ops.BYTES in data and not builtins.all(
            d == ops.BYTES or d.kind == "S" for d in data) or ops.BYTES in data and \
            builtins.any(n.op == "const" and isinstance(n.arg, str) for n in srcs):
        # `bytes` data is bytes as in Python: b"a" == "a" is an error here, not False
        types = " and ".join(_operand_name(e) for e in exprs)
        raise UnsupportedOperandError(
            f"{what}: operand types {types}: bytes and str have no common type (bytes "
            "compare with bytes: a Python bytes, a bytes array or a NumPy 'S' array); "
            "encode the str first, e.g. 'kiwi'.encode()")
    units = {ops.text_unit(d) for d in data}
    mixed = len({type(n.arg) for n in srcs}) > 1  # all constants: Python str and bytes
    if len(units) > 1 or (not data and mixed):
        types = " and ".join(_operand_name(e) for e in exprs)
        raise UnsupportedOperandError(
            f"{what}: operand types {types} have different encodings (UTF-8 strings, NumPy "
            "bytes 'S' and UTF-32 'U', Python str and bytes); convert one side first, e.g. "
            "with numpy.char.encode(u, 'utf-8')")
    # A Python str or bytes constant compares with string data of either kind by UTF-8
    # bytes (as numexpr reads string literals): a str is encoded, bytes are taken as they
    # are; against UTF-32 data both are packed as UTF-32 (bytes must then be UTF-8).
    if units == {4}:
        srcs = [Node("const", ops.STRING32, (), (), _utf8_text(n.arg, what, exprs))
                if n.op == "const" else n for n in srcs]
    shape = broadcast_shapes(what, [n.shape for n in srcs])
    out = ops.get(row).resolve(*(n.dtype for n in srcs))[-1]
    return Expr(Node(row, out, shape, tuple(srcs)), _merge_env(exprs))


def _utf8_text(value: str | bytes, what: str, exprs) -> str:
    """A str constant as is, a bytes constant decoded as UTF-8 (for UTF-32 string data)."""
    if isinstance(value, str):
        return value
    try:
        return bytes(value).decode("utf-8")
    except UnicodeDecodeError as err:
        types = " and ".join(_operand_name(e) for e in exprs)
        raise UnsupportedOperandError(
            f"{what}: operand types {types}: the bytes {bytes(value)!r:.40} are not UTF-8 "
            f"({err.reason} at byte {err.start}), so they have no text to compare with "
            "UTF-32 ('U') strings; pass a str, or encode the array with "
            "numpy.char.encode(u, 'utf-8')") from None


def str_len(x: Any) -> Expr:
    """Lazy number of characters (code points) of each string, as int64.

    `x`: a lazyk `string` / `fixed_string[n]` / `bytes` array, a NumPy `S` or `U` array, or
    a string expression; over `?string` the result is `?int64` (missing where the string
    is), under `var` dims it keeps the rows. Counts UTF-8 lead bytes, so it equals Python's
    `len(s)` element by element; NUL padding of fixed-size strings is not counted (as
    NumPy's `str_len`). lazyk `bytes` elements count their bytes (Python's `len(b)`).
    NumPy `S` data is read as UTF-8: for non-ASCII bytes this differs from NumPy, which
    counts bytes.
    """
    e = operands("str_len", (x,))[0]
    if not is_text(e.dtype):
        raise UnsupportedOperandError(f"str_len: unsupported operand type {_operand_name(e)} "
                                      "(strings only)")
    return Expr(Node("str_len", np.dtype(np.int64), e.shape, (e.node,)), e.env)


def startswith(x: Any, prefix: Any) -> Expr:
    """Lazy `s.startswith(prefix)` of each string `s` of `x`, as bool.

    `prefix`: a Python str (a kernel parameter: a new prefix needs no compile) or another
    string array (elementwise, broadcasting as numbers do).
    """
    return _text_apply("startswith", operands("startswith", (x, prefix)), "startswith")


def endswith(x: Any, suffix: Any) -> Expr:
    """Lazy `s.endswith(suffix)` of each string `s` of `x`, as bool (see `startswith`)."""
    return _text_apply("endswith", operands("endswith", (x, suffix)), "endswith")


def apply_built(name: str, x: Any, y: Any) -> Expr | None:
    """ufunc `name` of `x` and `y` when that structure was built before (a look-up), else
    None: then `apply` builds it. The operators' first step."""
    a = _token(x)
    if a is not None:
        b = _token(y)
        if b is not None:
            p, q = a[1], b[1]
            if not p or not q or (len(p) == 1 == len(q) and p[0] is not q[0]):
                entry = _built.get((name, a[0], b[0]))  # (`_build_key`'s key)
                if entry is not None:
                    return _deferred(entry, p + q, (_apply, (name, x, y), _NO_KEYWORDS))
    return None


def apply(name: str, *args: Any) -> Expr:
    """Build the node for ufunc `name` on `args` (typed now; errors name op and types)."""
    got = _build_key((name,), args)
    if got is not None:
        entry = _built.get(got[0])
        if entry is not None:
            return _deferred(entry, got[1], (_apply, (name,) + args, _NO_KEYWORDS))
        return _remember(got, _apply(name, *args))
    return _apply(name, *args)


def _apply(name: str, *args: Any) -> Expr:
    name = ALIASES.get(name, name)
    exprs = operands(name, args)
    srcs = tuple([e.node for e in exprs])
    for src in srcs:
        if src.dtype.kind not in "biufc" and builtins.any(is_text(e.dtype) for e in exprs):
            if name not in COMPARISONS:
                refuse_text(name, exprs)
            return _text_apply(ops.TEXT_COMPARISONS[name], exprs, _op_text(name))
    if name in COMPARISONS:
        srcs = comparison_key(name, srcs)
    elif name == "clip":
        srcs = clip_key(srcs)
    loop, result = resolve(name, srcs)
    if name == "power" and result.kind in "biu":
        _check_int_exponent(srcs[1])
    if len(srcs) == 2:
        a, b = srcs
        shape = a.shape if a.shape == b.shape or not b.shape else \
            broadcast_shapes(name, [a.shape, b.shape])
        typed = (cast(a, loop[0]), cast(b, loop[1]))
    else:
        shape = broadcast_shapes(name, [s.shape for s in srcs])
        typed = tuple([cast(s, d) for s, d in zip(srcs, loop)])
    return Expr(Node(name, result, shape, typed), _merge_env(exprs))


NEGATIVE_INT_POWER = "Integers to negative integer powers are not allowed."


def _check_int_exponent(exponent: Node) -> None:
    """NumPy's ValueError for an integer power with a negative constant exponent.

    Other exponents (arrays, sub-expressions such as `a ** (b - 5)`) are checked on their
    values before a kernel runs (`lazyk.runtime.launch.check_int_powers`).
    """
    if exponent.op in ("scalar", "const") and exponent.arg < 0:
        raise ValueError(NEGATIVE_INT_POWER)


def _make_ufunc(name: str):
    nin = ops.get(name).arity

    def fn(*args):
        if len(args) != nin:
            raise TypeError(f"{name}() takes {nin} argument(s), {len(args)} given")
        return apply(name, *args)

    fn.__name__ = name
    fn.__doc__ = f"Lazy NumPy `{name}` (types and broadcasting exactly as NumPy)."
    return fn


def positive(x: Any) -> Expr:
    """Lazy `+x` (the value itself; bool raises as in NumPy)."""
    e = as_expr(x)
    refuse_text("positive", [e])
    if e.dtype.kind not in "iufc":
        raise DTypeError(f"positive: unsupported operand type {describe_node(e.node)}")
    return e


for _name in UNARY + BINARY:
    globals()[_name] = _make_ufunc(_name)
for _alias, _target in ALIASES.items():
    globals()[_alias] = globals()[_target]
# numexpr's functions beyond NumPy's basic set (rows of lazyk.frontend.ops.OPS like the others).
arcsinh = _make_ufunc("arcsinh")
arccosh = _make_ufunc("arccosh")
arctanh = _make_ufunc("arctanh")
fmod = _make_ufunc("fmod")
copysign = _make_ufunc("copysign")


def astype(x: Any, dtype: Any, casting: str = "unsafe") -> Expr:
    """Lazy conversion; CastingError when `casting` forbids it (e.g. 'safe' float -> int)."""
    e = as_expr(x)
    refuse_text("astype", [e])
    try:  # NumPy's dtype spellings first ('f8', 'int' = int64), as ndarray.astype
        target = np.dtype(dtype)
    except TypeError:  # then the lazyk type language ('complex[float32]', 'real')
        target = parse_fixed_type(dtype)[1]
    if not np.can_cast(e.dtype, target, casting):
        raise CastingError(f"astype: cannot cast {e.dtype} to {target} under casting="
                           f"{casting!r}")
    try:
        check_dtype(target, "target")
    except UnsupportedOperandError as err:
        raise UnsupportedOperandError(f"astype: {err}") from None
    return Expr(cast(e.node, target.newbyteorder("=")), e.env)


def where(condition: Any, x: Any, y: Any) -> Expr:
    """Lazy `np.where(condition, x, y)` with NumPy's result type (weak scalars yield)."""
    exprs = operands("where", (condition, x, y))
    if builtins.any(is_text(e.dtype) for e in exprs[1:]):
        return _text_where(exprs)
    refuse_text("where", exprs)
    c, a, b = (e.node for e in exprs)
    # NOTE: typed here, not by ops.where's resolve: `np.dtype('f8') in (int, float)` is
    # True, so a table rule that tests weakness with `in` misreads float64 operands.
    kinds = [a.dtype, b.dtype] if a.weak and b.weak else \
        [n.arg if n.weak else n.dtype for n in (a, b)]
    try:
        result = np.result_type(*kinds)
    except TypeError:
        raise DTypeError(f"where: incompatible types {describe_node(a)} and "
                         f"{describe_node(b)}") from None
    if result.kind not in "biufc":
        raise DTypeError(f"where: unsupported types {describe_node(a)} and {describe_node(b)}")
    shape = broadcast_shapes("where", [c.shape, a.shape, b.shape])
    srcs = (cast(c, np.dtype(bool)), cast(a, result, wrap=True), cast(b, result, wrap=True))
    return Expr(Node("where", result, shape, srcs), _merge_env(exprs))


def _text_kind(node: Node) -> str | None:
    """'string' or 'bytes' for a text operand of where() (NumPy 'U' / 'S' data, Python
    str / bytes constants), else None."""
    if not is_text(node.dtype) or node.dtype == ops.STRING32:
        return None
    if node.op == "const":
        return "bytes" if isinstance(node.arg, bytes) else "string"
    return "bytes" if node.dtype == ops.BYTES or node.dtype.kind == "S" else "string"


def _text_where(exprs: list[Expr]) -> Expr:
    """where(c, s, t) over strings (or bytes): a `string` / `bytes` result whose elements
    are those of the branch each condition selects (`lazyk.runtime.text_steps.select_text`)."""
    refuse_text("where", exprs[:1])
    c, a, b = (e.node for e in exprs)
    kinds = [_text_kind(n) for n in (a, b)]
    types = " and ".join(_operand_name(e) for e in exprs[1:])
    if None in kinds:
        raise UnsupportedOperandError(f"where: unsupported operand type(s) {types} (a number "
                                      "and a string have no common type)")
    if kinds[0] != kinds[1]:
        raise UnsupportedOperandError(f"where: operand types {types}: bytes and str have no "
                                      "common type; encode the str first, e.g. "
                                      "'kiwi'.encode()")
    dt = ops.BYTES if kinds[0] == "bytes" else ops.STRING
    shape = broadcast_shapes("where", [c.shape, a.shape, b.shape])
    node = Node("where", dt, shape, (cast(c, np.dtype(bool)), a, b))
    return Expr(node, _merge_env(exprs))


def clip(x: Any, a_min: Any, a_max: Any) -> Expr:
    """Lazy `np.clip(x, a_min, a_max)` with NumPy's clip typing."""
    return apply("clip", x, a_min, a_max)


def real(x: Any) -> Expr:
    """Lazy real part (the value itself for real dtypes)."""
    e = as_expr(x)
    refuse_text("real", [e])
    if e.dtype.kind != "c":
        return e
    dt = np.dtype(np.float32 if e.dtype == np.complex64 else np.float64)
    return Expr(Node("real", dt, e.shape, (e.node,)), e.env)


def imag(x: Any) -> Expr:
    """Lazy imaginary part (zeros for real dtypes)."""
    e = as_expr(x)
    refuse_text("imag", [e])
    if e.dtype.kind != "c":
        # where(True, 0, x): zeros in x's dtype and shape (x * 0 would keep NaN and -0.0)
        zero = Node("const", e.dtype, (), (), np.zeros((), e.dtype).item())
        true = Node("const", np.dtype(bool), (), (), True)
        return Expr(Node("where", e.dtype, e.shape, (true, zero, e.node)), e.env)
    dt = np.dtype(np.float32 if e.dtype == np.complex64 else np.float64)
    return Expr(Node("imag", dt, e.shape, (e.node,)), e.env)


def _option_flags(root: Node, env: dict) -> tuple[list, bool]:
    """(missing-row flag per result dim, missing values?) of a graph over var / option
    leaves, by the rules the ragged evaluation follows: a missing row combined with
    anything is missing; a reduction marks the next kept dim (or the values) where it
    folds a missing row, and its values are missing as in `lazyk.reduce`."""
    memo: dict = {}
    for node in _toposort(root):
        if node.op == "input":
            leaf = env.get(node.arg)
            if _missing_rows(leaf):  # a placeholder with `?var` dims
                memo[id(node)] = (list(leaf.rows), leaf.option)
                continue
            flags, t = [], getattr(leaf, "array", None)
            t = t.type if t is not None else None
            while isinstance(t, (T.FixedDim, T.VarDim, T.Option)) and len(flags) < node.ndim:
                row = isinstance(t, T.Option)
                t = t.elem if row else t
                flags.append(row)
                t = t.elem
            flags += [False] * (node.ndim - len(flags))
            # a placeholder has no array: its option flag says whether values are missing
            memo[id(node)] = (flags, isinstance(t, T.Option) or
                              (t is None and bool(getattr(leaf, "option", False))))
        elif node.op == ROWS_OP:  # its builder typed it (`lazyk.frontend.rowops`)
            memo[id(node)] = (list(node.arg[2]), bool(node.arg[3]))
        elif node.op in (SELECT_OP, TAKE_OP):
            memo[id(node)] = _indexed_flags(node, memo[id(node.srcs[0])],
                                            memo[id(node.srcs[1])])
        elif node.op == REDUCE_OP:
            flags, option_in = memo[id(node.srcs[0])]
            op, axes, keep = node.arg[0], tuple(node.arg[1]), node.arg[2]
            skipna = op == "count" or (len(node.arg) > 3 and bool(node.arg[3]))
            nd = len(flags)
            axes = sorted(a % nd for a in axes) if nd else []
            marks = set()
            for a in axes:
                if flags[a] and (not skipna or a == axes[0]):
                    marks.add(next((i for i in range(a + 1, nd) if i not in axes), nd))
            out = []
            for i, f in enumerate(flags):
                if i in axes:
                    if keep:
                        out.append(False)
                    continue
                out.append(bool(f and (i < axes[0] or not skipna)) or i in marks)
            any_in = option_in or builtins.any(flags)
            if op == "count":
                option = False
            elif op in ops.ARG_REDUCTIONS:  # an empty row has nothing to point at
                option = any_in or "var" in node.srcs[0].shape
            elif op == "mean" or (op in ("min", "max") and len(node.arg) <= 4):
                option = any_in
            else:
                option = any_in and not skipna
            memo[id(node)] = (out, option or nd in marks)
        elif node.op == PICK_OP:
            # its item's rows and values (a position is never missing); a missing row of
            # any array of a product at or above the axis is missing
            _, slot, axis, position = node.arg
            flags, option = memo[id(node.srcs[slot if len(node.srcs) > 1 else 0])]
            flags = list(flags[:node.ndim])
            for s in node.srcs:
                sf = memo[id(s)][0]
                flags[:axis + 1] = [f or g for f, g in zip(flags, sf[:axis + 1])]
            memo[id(node)] = (flags, option and not position)
        else:
            nd, flags, option = node.ndim, [False] * node.ndim, False
            for s in node.srcs:
                sf, so = memo.get(id(s), ([], False))
                for k in range(1, builtins.min(len(sf), nd) + 1):
                    flags[-k] = flags[-k] or sf[-k]
                option = option or so
            memo[id(node)] = (flags, option)
    return memo[id(root)]


def _indexed_flags(node: Node, x: tuple, key: tuple) -> tuple[list, bool]:
    """`_option_flags` of x[mask] / x[positions] at level L (the key's dims line up with
    x's first L + 1): a missing row of either above or at L gives a missing row; a missing
    mask element or position gives a missing element (a missing value at the last level, a
    missing row below it otherwise)."""
    (xf, xo), (kf, ko), at = x, key, node.arg
    flags = [f or (d <= at and d < len(kf) and kf[d]) for d, f in enumerate(xf)]
    if ko and at + 1 < len(flags):
        flags[at + 1] = True
    return flags, xo or (ko and at + 1 == len(flags))


def _indexes(node: Node) -> bool:
    """Whether the graph selects, gathers or takes positions (`argmax`): its missing values
    follow `_option_flags` whatever its leaves."""
    return builtins.any(n.op in (SELECT_OP, TAKE_OP) or
                        (n.op == REDUCE_OP and n.arg[0] in ops.ARG_REDUCTIONS)
                        for n in _toposort(node))


def _none_for_empty(node: Node) -> bool:
    """An arg-reduction over var rows: an empty row has no position (a missing result)."""
    return node.op == REDUCE_OP and node.arg[0] in ops.ARG_REDUCTIONS and \
        "var" in node.srcs[0].shape


def _skips_missing(node: Node) -> bool:
    """A skipna sum/prod/any/all (and min/max with `initial`) has a value for every row,
    so its result is not optional."""
    return node.op == REDUCE_OP and len(node.arg) > 3 and bool(node.arg[3]) and (
        node.arg[0] in ("sum", "prod", "any", "all") or len(node.arg) > 4)


# --- reductions -----------------------------------------------------------------------------

def reduce(op: str, x: Any, axis: Any = None, keepdims: bool = False, skipna: bool = False,
           dtype: Any = None, initial: Any = None, skipnan: bool = False) -> Expr:
    """Lazy reduction node; its elementwise inputs fuse into the same kernel.

    `skipna=True` leaves missing values (`?T`) out of the fold; `skipnan=True` leaves NaN
    out (NumPy's `nansum`, `nanprod`, `nanmin`, `nanmax`, `nanmean`); both together skip
    both, as pandas' `skipna` does. `initial` (min and max only) is folded into every
    result, so a slice with nothing to fold gives `initial` (except over a placeholder's
    symbolic dim that is empty at run time: that still raises ValueError).
    """
    kw = {"axis": axis, "keepdims": keepdims, "skipna": skipna, "dtype": dtype,
          "initial": initial, "skipnan": skipnan}
    # by exact type: `keepdims=1`, `axis=True` are refused by the builder, never keyed
    if keepdims.__class__ is not bool or skipna.__class__ is not bool or \
            skipnan.__class__ is not bool or not (
                axis is None or axis.__class__ is int or axis.__class__ is tuple and
                builtins.all(a.__class__ is int for a in axis)):
        return _reduce(op, x, **kw)
    head = (REDUCE_OP, op, axis, keepdims, skipna, dtype,
            initial if initial is None else arg_key(initial), skipnan)
    if dtype is not None:
        try:  # (an unhashable dtype: built at once)
            hash(dtype)
        except TypeError:
            return _reduce(op, x, **kw)
    got = _build_key(head, (x,))
    if got is not None:
        entry = _built.get(got[0])
        if entry is not None:
            return _deferred(entry, got[1], (_reduce, (op, x), kw))
        return _remember(got, _reduce(op, x, **kw))
    return _reduce(op, x, **kw)


def _reduce(op: str, x: Any, axis: Any = None, keepdims: bool = False, skipna: bool = False,
            dtype: Any = None, initial: Any = None, skipnan: bool = False) -> Expr:
    for name, flag in (("keepdims", keepdims), ("skipna", skipna), ("skipnan", skipnan)):
        if not isinstance(flag, (bool, np.bool_)):  # "yes" or "no" would both be true
            raise TypeError(f"{op}: {name} must be True or False, not {flag!r}")
    e = operands(op, (x,))[0]
    refuse_text(op, [e])
    if skipna and not has_options(e):
        skipna = False  # only ?T values can be missing; NaN is a value, as in NumPy
    if initial is not None and op not in ("min", "max"):
        raise NotSupportedError(f"{op}: initial= is supported for min and max only")
    if skipnan and e.dtype.kind in "fc":
        return _skip_nan(op, e, axis, keepdims, skipna, dtype, initial)
    axes = normalize_axes(axis, e.ndim, op)
    node = e.node
    if op in ("any", "all"):
        acc = np.dtype(bool)
    elif dtype is not None:
        acc = np.dtype(dtype)
    else:
        acc = reduce_dtype(op, node.dtype)
    if op == "mean" and dtype is None:
        # NumPy accumulates float16 in float32 and ints in float64, then divides.
        acc = np.dtype(np.float32) if node.dtype == np.float16 else \
            np.dtype(np.float64) if node.dtype.kind in "biu" else node.dtype
    shape = tuple((1 if d in axes else n) for d, n in enumerate(node.shape) if keepdims
                  or d not in axes)
    if initial is not None:
        initial = _initial_value(op, initial, acc)
        # var / option data (or parameters of those types) fold `initial` into each row
        if not builtins.any(isinstance(v, (RaggedLeaf, RaggedPlaceholder))
                            for v in e.env.values()) and not has_rows(e.node):
            return _seeded_fixed(op, e, axes, keepdims, acc, initial)
    arg = (op, axes, bool(keepdims)) + ((True,) if skipna else ())
    if initial is not None:  # the ragged path folds `initial` into each row's result
        arg = (op, axes, bool(keepdims), bool(skipna), initial)
    red = Node(REDUCE_OP, acc, shape, (cast(node, acc),), arg)
    if op == "mean" and dtype is None and node.dtype == np.float16:
        red = cast(red, np.dtype(np.float16))
    return Expr(red, e.env)


def _initial_value(op: str, initial: Any, acc: np.dtype) -> Any:
    """`initial` in the accumulator dtype, converted as NumPy converts it: an integer
    accumulator takes `int(initial)` and refuses a value out of its range (OverflowError),
    where a plain cast would wrap it around into a wrong result."""
    if acc.kind not in "iu":
        return np.asarray(initial).astype(acc).item()
    if isinstance(initial, (complex, np.complexfloating)) or \
            getattr(initial, "ndim", 0) or not isinstance(initial, (int, float, np.number)):
        raise TypeError(f"{op}: initial must be a real scalar for {acc} data, not "
                        f"{initial!r}")
    try:
        value = int(initial)
    except (OverflowError, ValueError):  # inf, NaN
        raise OverflowError(f"{op}: initial={initial!r} does not fit {acc}") from None
    try:  # the range check of Python scalar operands (`int8 array + 200`)
        return cast(Node("scalar", np.dtype(np.int64), (), (), value), acc).arg
    except OverflowError as err:
        raise OverflowError(f"{op}: initial={initial!r}: {err}") from None


def _seeded_fixed(op: str, e: Expr, axes: tuple, keepdims: bool, acc: np.dtype,
                  initial: Any) -> Expr:
    """min/max with `initial` over fixed dims: minimum(min(x), initial); a reduction over
    an empty axis (known from the shape) is `initial` itself."""
    seed = Node("const", acc, (), (), initial)
    extent = [e.shape[d] for d in axes]
    if builtins.all(isinstance(n, int) for n in extent) and 0 in extent:
        # nothing to fold: `initial` in the result's shape (the sum only supplies the shape)
        shaped = reduce("sum", e, axis=axes, keepdims=keepdims)
        true = Node("const", np.dtype(bool), (), (), True)
        return Expr(Node("where", acc, shaped.shape, (true, seed, cast(shaped.node, acc))),
                    e.env)
    red = reduce(op, e, axis=axes, keepdims=keepdims)
    return apply("minimum" if op == "min" else "maximum", red, Expr(seed, {}))


def _skip_nan(op: str, e: Expr, axis: Any, keepdims: bool, skipna: bool, dtype: Any,
              initial: Any) -> Expr:
    """A reduction of float / complex data that leaves NaN out (NumPy's nan-functions):
    NaN becomes the fold's identity; min/max of a slice of only NaN is NaN, a mean is
    the sum of the other values over their count."""
    kw = {"axis": axis, "keepdims": keepdims, "skipna": skipna}
    nan = apply("isnan", e)
    if op in ("sum", "prod", "any", "all", "mean"):
        filler = 1 if op in ("prod", "all") else 0
        kept = where(nan, filler, e)
        if op != "mean":
            return reduce(op, kept, dtype=dtype, **kw)
        want = reduce("mean", e, dtype=dtype, **kw).dtype
        total = reduce("sum", kept, dtype=dtype, **kw)
        value = astype(apply("true_divide", total, count(e, axis, keepdims, skipnan=True)),
                       want)
        if not has_options(e):
            return value  # an empty slice gives 0 / 0 = NaN, as np.nanmean
        # nothing present: missing, as the mean of nothing over ?T data is
        return where(apply("equal", count(e, axis, keepdims), 0),
                     reduce("mean", kept, dtype=dtype, **kw).astype(want), value)
    if op not in ("min", "max") or e.dtype.kind == "c":
        raise NotSupportedError(f"{op} with skipnan=True of {e.dtype} data")
    inf = float("inf") if op == "min" else float("-inf")
    red = reduce(op, where(nan, inf, e), initial=initial, **kw)
    if initial is not None:
        return red
    # a slice of only NaN gives NaN (np.nanmin); `red + nan` keeps a missing result missing
    return where(apply("equal", count(e, axis, keepdims, skipnan=True), 0),
                 apply("add", red, float("nan")), red)


def count(x: Any, axis: Any = None, keepdims: bool = False, skipnan: bool = False) -> Expr:
    """Lazy number of present values over `axis` (int64): missing values (`?T`) are never
    counted; `skipnan=True` leaves NaN out too.

    Example: `lazyk.count(lazyk.array([[1, None, 3], [4]]), axis=-1)` gives `[2, 1]`.
    """
    e = operands("count", (x,))[0]
    if skipnan and e.dtype.kind in "fc":
        present = apply("logical_not", apply("isnan", e))
    else:  # true for every value, NaN included; missing wherever x is
        present = apply("logical_or", apply("equal", e, e), apply("not_equal", e, e))
    return reduce("sum", present, axis=axis, keepdims=keepdims, skipna=True,
                  dtype=np.dtype(np.int64))


def argmax(x: Any, axis: Any = None, keepdims: bool = False) -> Expr:
    """Lazy position of the largest value along `axis` (Awkward's `ak.argmax`, NumPy's
    `np.argmax`): int64, the first of equal values; a NaN wins over every number (the
    first NaN, as NumPy). Missing values (`?T`) are skipped (their positions still
    count); a row with nothing to point at (empty, or only missing values) gives a missing
    result, so over var rows the result is `?int64`. `axis=None` points into the
    flattened values (missing rows hold none). Over a middle axis, rows below it line up
    as elementwise work lines them up (a row of length 1 stretches).

    Example: `lazyk.argmax(lazyk.array([[1, 5, 5], [], [2]]), axis=1)` gives
    `[1, None, 0]` (type `3 * ?int64`); `x[lazyk.argmax(x, axis=1, keepdims=True)]` takes
    each row's largest value back (`[[5], [None], [2]]`).

    Args:
        x: an array or expression of bool, integer or float values.
        axis: an int (negative counts from the last axis) or None (every axis).
        keepdims: keep the reduced axis as a fixed dim of size 1 (the positions then
            gather: `x[positions]`).

    Raises:
        TypeError: a tuple of axes, or keepdims not a bool.
        DTypeError: complex or string values (no order to take a position from).
    """
    return _arg_reduce("argmax", x, axis, keepdims)


def argmin(x: Any, axis: Any = None, keepdims: bool = False) -> Expr:
    """Lazy position of the smallest value along `axis` (`ak.argmin`, `np.argmin`); the
    rules of `argmax`.

    Example: `lazyk.argmin(lazyk.array([[3, 1, 1], [], [2]]), axis=-1)` gives
    `[1, None, 0]`.
    """
    return _arg_reduce("argmin", x, axis, keepdims)


def _arg_reduce(op: str, x: Any, axis: Any, keepdims: bool) -> Expr:
    if not isinstance(keepdims, (bool, np.bool_)):
        raise TypeError(f"{op}: keepdims must be True or False, not {keepdims!r}")
    if axis is not None and not isinstance(axis, (int, np.integer)) or \
            isinstance(axis, (bool, np.bool_)):
        raise TypeError(f"{op}: axis must be an int or None (one axis to point along), not "
                        f"{axis!r}")
    e = operands(op, (x,))[0]
    refuse_text(op, [e])
    try:
        ops.get(op).resolve(e.dtype)
    except DTypeError:
        raise DTypeError(f"{op}: {describe_node(e.node)} values have no order to take a "
                         "position from (bool, integer and float values do)") from None
    axes = normalize_axes(axis, e.ndim, op)
    shape = tuple((1 if d in axes else n) for d, n in enumerate(e.shape) if keepdims
                  or d not in axes)
    # missing values are skipped (as Awkward); the nest folds `?T` data under skipna
    arg = (op, axes, bool(keepdims)) + ((True,) if has_options(e) else ())
    return Expr(Node(REDUCE_OP, np.dtype(np.int64), shape, (e.node,), arg), e.env)


# --- selection and gather -------------------------------------------------------------------

def is_index_operand(key: Any) -> bool:
    """Whether `key` indexes by values (a mask or positions: `index_by`) rather than by
    place: a lazy expression, a lazyk array, or a NumPy array of bool or integers."""
    if isinstance(key, (Expr, Array)):
        return True
    return isinstance(key, np.ndarray) and key.dtype.kind in "biufc" and key.ndim > 0


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
    `[[3.0, 1.5], [], [-1.0]]`.

    Raises:
        IndexError: a key of no dims or more dims than x, or of another dtype.
        ShapeError: fixed dims of x and the key that differ (var rows: when computed).
        NotSupportedError: (when computed) a missing mask element or position above a
            fixed dim of x, or rows of x that may be missing where the positions' dim is
            fixed, inside a larger expression (the result has `?n` rows, which are not
            operands; `x[positions]` of `N * ?var * T` itself computes, as Awkward's).
    """
    e, k = operands("[]", (x, key))
    refuse_text("[]", [e, k])
    if k.dtype.kind not in "biu":
        raise IndexError(f"an index array selects (bool) or gathers (integers): got "
                         f"{describe_node(k.node)} values")
    what = "mask" if k.dtype == np.bool_ else "positions"
    if not e.ndim:
        raise IndexError(f"a 0-d value ({e.type}) has no dims to select or gather along")
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
    env = _merge_env([e, k])
    op = SELECT_OP if k.dtype == np.bool_ else TAKE_OP
    shape = picked_shape(op, e.shape, k.shape, at)
    key = k.node if op == SELECT_OP else cast(k.node, np.dtype(np.int64))
    return Expr(Node(op, e.dtype, shape, (e.node, key), at), env)


def _make_reduction(op: str):
    def fn(x, axis=None, keepdims: bool = False, skipna: bool = False, dtype=None,
           initial=None, skipnan: bool = False):
        return reduce(op, x, axis=axis, keepdims=keepdims, skipna=skipna, dtype=dtype,
                      initial=initial, skipnan=skipnan)

    fn.__name__ = fn.__qualname__ = op  # errors name sum(), not the factory
    fn.__doc__ = (f"Lazy `{op}` over `axis` (int, tuple, None, negative), `keepdims=`, "
                  "`skipna=` (leave missing values out), `skipnan=` (leave NaN out)" +
                  (", `initial=`" if op in ("min", "max") else "") + ".")
    return fn


for _name in REDUCTIONS:
    globals()[_name] = _make_reduction(_name)


# Arrays and devices build expressions through this module (their operator mixin).
operators.use_front_end(sys.modules[__name__])

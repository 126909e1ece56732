"""The lazy expression `Expr`: its graph, its type, its text (`infix`, `summary`) and its
computing, which goes to the runtime through `lazyk.hooks`.

The builders that make expressions are `lazyk.frontend.ufuncs`, `reductions`, `strings`
and `indexing`; `lazyk.frontend.expr` names them all.
"""
from __future__ import annotations

import builtins
import html
from typing import Any

import numpy as np

from lazyk import hooks
from lazyk.arrays import operators
from lazyk.arrays.array import Array
from lazyk.arrays.array import array as lazyk_array
from lazyk.arrays.conversions import text_numpy
from lazyk.arrays.operators import Operators
from lazyk.errors import NotSupportedError
from lazyk.frontend import ops
from lazyk.frontend.graph import (
    REDUCE_OP,
    ROWS_OP,
    SELECT_OP,
    TAKE_OP,
    Node,
    build_type,
    dump,
    has_rows,
    rewrite,
)
from lazyk.frontend.graph import toposort as _toposort
from lazyk.frontend.leaves import Placeholder, RaggedLeaf, fresh_name
from lazyk.frontend.missing import (
    indexes,
    missing_rows,
    none_for_empty,
    option_flags,
)

_NUMBERS = frozenset(ops.NUMERIC)
_wrap = Array._wrap


def _read_back(node: Node, env: dict) -> Expr:
    """An expression unpickled or copied: inputs named by a counter (in this process or
    another) get new names, so they never share one with another input here."""
    new = {}
    for name, value in env.items():
        base = name.split("~")[0]
        if base[:1] == "_" and base[1:].isdigit() and not isinstance(value, Placeholder):
            new.setdefault(base, fresh_name())

    def renamed(name: str) -> str:
        base, sep, rest = name.partition("~")
        return new.get(base, base) + sep + rest

    def rename(n: Node, srcs: tuple) -> Node:
        if n.op == "input":
            return n.replace(arg=renamed(n.arg))
        return n.replace(srcs=srcs) if srcs != n.srcs else n
    if not new:
        return Expr(node, env)
    return Expr(rewrite(node, rename), {renamed(k): v for k, v in env.items()})


class Expr(Operators):
    """A lazy, typed array expression; nothing runs until `.eval()` or `lazyk.evaluate`.

    `node` is its graph; `env` maps each input leaf's name to its data (a NumPy view) or a
    `Placeholder`. An expression built again over arrays of the same dtypes and shapes
    (`lazyk.frontend.structure`) makes its graph only when something reads `node` or `env`.
    """

    __slots__ = ("_node", "_env", "_key", "_leaves", "_recipe", "_launch")

    def __init__(self, node: Node, env: dict):
        self._node, self._env = node, env
        self._key = self._leaves = self._recipe = self._launch = None

    def __reduce_ex__(self, protocol):
        if type(self) is Expr:  # the graph and its leaves (not the runtime's `_launch`)
            return (_read_back, (self.node, self.env))
        return super().__reduce_ex__(protocol)

    @property
    def node(self) -> Node:
        """The graph (made now if the expression was built by structure)."""
        node = self._node
        return node if node is not None else _materialize(self)._node

    @property
    def env(self) -> dict:
        """Input name -> data of the graph's input leaves."""
        env = self._env
        return env if env is not None else _materialize(self)._env

    def _structure(self) -> tuple | None:
        """(structure key, its input arrays by position, flat) of an expression built by
        structure (`lazyk.frontend.structure`), else None: the key is `node.skey`, the
        arrays (NumPy arrays, the views of NumPy-backed lazyk Arrays, var / option lazyk
        Arrays) the data of the inputs `node.names` names; flat: all of them NumPy arrays
        and a result of less than 2 dims. `_launch` is the runtime's to keep what it planned for this expression
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
        """Result shape: an int per fixed dim, None per var dim (as `Array.shape` and the
        evaluated result say), a name (str) per symbolic dim."""
        key = self._key
        return key[3] if key is not None else self._node.shape

    @property
    def ndim(self) -> int:
        """Number of result dimensions."""
        return self.node.ndim

    @property
    def size(self) -> int:
        """Number of result elements (NumPy's `size`); TypeError where a dim is var or
        symbolic (known once computed)."""
        if not builtins.all(isinstance(n, int) for n in self.shape):
            raise TypeError(f"size of an expression with var or symbolic dims "
                            f"({summary(self)}): known once computed (.eval())")
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def type(self):
        """The result as a lazyk type, e.g. `3 * 4 * float64` or `N * float64`."""
        node = self.node
        rows, option = type_flags(self)
        return build_type(node.shape, node.dtype, rows, option)

    def __repr__(self) -> str:
        return f"<lazyk.Expr {self.type}>\n{typed_dump(self)}"

    def _repr_html_(self) -> str:
        """A notebook's view: the short form and the type; nothing is computed."""
        return (f"<div><b>lazyk.Expr</b> <code>{html.escape(infix(self.node))}</code><br>"
                f"type <code>{html.escape(str(self.type))}</code> (lazy: <code>.eval()</code>"
                " computes it, <code>.explain()</code> shows how)</div>")

    def __len__(self) -> int:
        if not self.shape or not isinstance(self.shape[0], int):
            raise TypeError(f"len() of a 0-d expression, or one whose length is known only "
                            f"once evaluated ({summary(self)}): lazyk.num(x, axis=0) counts "
                            "lazily, len(x.eval()) evaluates")
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
        # (a result of numbers is wrapped as it is: `lazyk.array`'s first case, one call less)
        return _wrap(out) if out.dtype in _NUMBERS else lazyk_array(out)

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

    def __arrow_array__(self, type=None):
        """`pyarrow.array(e)` computes `e` (as `np.asarray(e)` does): `lazyk.to_arrow`."""
        return self.eval().__arrow_array__(type)

    def __array_function__(self, func, types, args, kwargs):
        """NumPy functions stay lazy where lazyk has them (`np.sum`, `np.where`, `np.clip`,
        ...; `lazyk.frontend.numpy_api.FUNCTIONS`); the others raise NotSupportedError naming the
        function instead of computing behind your back (`np.asarray(e)` computes)."""
        return hooks.array_function(func, types, args, kwargs)

    def __bool__(self) -> bool:
        if builtins.any(n is not None and n != 1 for n in self.shape):  # (NumPy's rule,
            raise ValueError(  # known before anything runs; var dims: once computed)
                f"the truth value of an expression of type {self.type} is ambiguous (it is "
                "not one value): use lazyk.any(e) or lazyk.all(e), or index with it")
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
        # (the indexing builders wrap operands, which makes them a later module: they are
        # reached through the registered front end, as the operators are)
        return operators.front_end().index_expr(self, key)

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



def type_flags(e: Expr) -> tuple[tuple, bool]:
    """(missing-row flags of the first dims, missing values?) of `e.type`, without
    building the type (row operations read them for every operand)."""
    node = e.node
    if not builtins.any(isinstance(v, RaggedLeaf) or missing_rows(v)
                        for v in e.env.values()) and not has_rows(node) and \
            not indexes(node) and not has_options(e):
        return (), none_for_empty(node)
    # var / option leaves: missing rows (`?var`) and values follow the graph
    dims, option = option_flags(node, e.env)
    return tuple(dims), option


def has_options(e: Expr) -> bool:
    """Whether any leaf of `e` is a `?T` array (its result is then `?T` too), a row
    operation in it gives missing values or rows (`lazyk.firsts`, `lazyk.pad_none`), or a
    gather or selection does (`x[lazyk.argmax(x, axis=1, keepdims=True)]`: None for an
    empty row)."""
    env = e.env  # (its own leaves only: an environment may hold others' too)
    return builtins.any(
        getattr(env.get(n.arg), "option", False) or missing_rows(env.get(n.arg))
        if n.op == "input"
        else n.op == ROWS_OP and (n.arg[3] or builtins.any(n.arg[2]))
        for n in _toposort(e.node)) or (  # missing rows (`?var`) too
        indexes(e.node) and e.type.missing_values)

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
        elif node.op in (SELECT_OP, TAKE_OP):  # x[mask], x[positions]
            (x, xp), (key, _) = parts
            text, prec = f"{x if xp >= 12 else f'({x})'}[{key}]", 12
        elif node.op == ROWS_OP and isinstance(node.arg[0], str):  # sort(x), num(x), ...
            text, prec = f"{node.arg[0]}({', '.join(t for t, _ in parts)})", 12
        else:
            text, prec = f"{node.op}({', '.join(t for t, _ in parts)})", 12
        # each text is kept a little past the limit, so a shared subgraph costs no more
        memo[id(node)] = (text if len(text) <= limit else text[:limit + 1], prec)
    text = memo[id(root)][0]
    return text if len(text) <= limit else text[:limit - 3].rstrip() + " ..."


# Python operator spellings, so errors say `==` where the user wrote `==`.
SYMBOLS = {"add": "+", "subtract": "-", "multiply": "*", "true_divide": "/",
           "floor_divide": "//", "remainder": "%", "power": "**", "bitwise_and": "&",
           "bitwise_or": "|", "bitwise_xor": "^", "left_shift": "<<", "right_shift": ">>",
           "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=",
           "equal": "==", "not_equal": "!="}


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


def typed_dump(e: Expr) -> str:
    """`graph.dump` with each node's type as evaluation gives it: missing rows (`?var`)
    and missing values (`?T`) shown (they follow from the leaves)."""
    lines = dump(e.node).split("\n")
    for k, node in enumerate(_toposort(e.node)):
        plain = node.type_text()
        if lines[k].endswith(" : " + plain):
            lines[k] = lines[k][:-len(plain)] + str(Expr(node, e.env).type)
    return "\n".join(lines)

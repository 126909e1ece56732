"""Building by structure: an expression built again over arrays of the same dtypes and
shapes is a look-up, and its graph is made only when something reads it.
"""
from __future__ import annotations

import builtins
import itertools
from typing import Any

import numpy as np

from lazyk.arrays.array import Array
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import MAX_KEYED_INPUTS, Node, rewrite
from lazyk.frontend.leaves import OwnedView, RaggedLeaf
from lazyk.frontend.operands import NATIVE_NUMERIC, as_expr
from lazyk.lru import Memo

# An expression of lazyk / NumPy arrays of numbers and Python scalars is built by structure:
# its build key is the op (and its arguments) with its operands' tokens (an array's dtype and
# shape, or its lazyk type for var / option arrays; a scalar's type and value; an
# expression's own token) and which operands read the same array. The first build of a key
# runs the builders (typing, every check, the graph); the result's structure key
# (`Node.skey`), dtype and shape are kept for the key, so the same key over other arrays is
# a look-up and the expression's graph is made only when something reads it (`Expr.node`:
# `_materialize` runs the same builders). Values are (token, structure key, dtype, shape,
# flat: see `Expr._structure`).
_BUILT_LIMIT = 1 << 14
built = Memo(_BUILT_LIMIT, "expressions built by structure")
_tokens = itertools.count(1)
NO_KEYWORDS: dict = {}  # (a recipe's keywords; never written)


def token(x: Any) -> tuple | None:
    """(token, arrays by position) of an operand `built` takes, else None. A token is an
    int (an expression's), a tuple (a scalar's type and value, an array's dtype and shape)
    or a lazyk type (a var / option array's): kinds that never compare equal."""
    t = type(x)
    if t is Expr:
        key = x._key
        return None if key is None else (key[0], x._leaves)
    if t is int or (t is float and x == x and x != 0.0):  # (NaN, -0.0: by their graph)
        return (t, x), ()
    if t is Array:  # (a NumPy-backed one by its view, `numpy_view()`: what binding reads)
        view = x._np
        if view is not None:
            dt = view.dtype
            return ((dt, view.shape), (view,)) if dt in NATIVE_NUMERIC else None
        typ = x._type or x.type  # var dims, `?T`: by type
        plain = _ragged_types.get(typ)
        if plain is None:
            plain = _plain_ragged(x, typ)
        return (typ, (x,)) if plain else None
    if t is np.ndarray and x.dtype in NATIVE_NUMERIC:
        return (x.dtype, x.shape), (x,)
    return None


def _plain_ragged(x: Array, typ) -> bool:
    """Whether arrays of `x`'s type `typ` are one input leaf of their own (numbers under var
    dims, `?T`; not strings, records, missing rows against a fixed dim): kept per type."""
    try:
        e = as_expr(x)
    except Exception:  # noqa: BLE001 - (building with it raises it again)
        got = False
    else:
        leaf = e.env.get(e.node.arg) if e.node.op == "input" else None
        got = type(leaf) is RaggedLeaf and leaf.array is x
    return _ragged_types.put(typ, got)


# lazyk type of var / option arrays -> `_plain_ragged`
_ragged_types = Memo(_BUILT_LIMIT, "ragged operand types")


def build_key(head: tuple, args: tuple) -> tuple | None:
    """(build key, arrays by position) of `head` over operands `args`, or None when an
    operand has no token."""
    if len(args) == 1:  # (an expression's arrays are distinct already)
        got = token(args[0])
        return None if got is None else (head + (got[0],), got[1])
    if len(args) == 2:
        a, b = token(args[0]), token(args[1])
        if a is None or b is None:
            return None
        x, y = a[1], b[1]
        if not y or not x or (len(x) == 1 == len(y) and x[0] is not y[0]):
            return head + (a[0], b[0]), x + y
        toks, joined = (a[0], b[0]), x + y
    else:
        toks, joined = [], ()
        for arg in args:
            got = token(arg)
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


def remember(got: tuple, e: Expr) -> Expr:
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
    built.put(key, entry)
    e._key, e._leaves = entry, arrays
    return e


def deferred(entry: tuple, arrays: tuple, recipe: tuple) -> Expr:
    """An expression of a known structure over `arrays`; `recipe` (builder, args, keywords)
    makes its graph when it is read."""
    e = object.__new__(Expr)
    e._node = e._env = e._launch = None
    e._key, e._leaves, e._recipe = entry, arrays, recipe
    return e


def structure_of(x: Expr) -> Any:
    """What a graph built for `x` depends on: its structure and its leaves' types where
    every leaf is a NumPy array or a lazyk array of its own (another expression of that
    structure over arrays of those types builds the same graph over its own inputs:
    `renamed`), else `x`'s graph itself."""
    node = x.node
    if node.skey is None or node.names is None:
        return node
    kinds = []
    for name in node.names:
        v = x.env.get(name)
        t = type(v)
        if t is RaggedLeaf:  # (its type says where values and rows may be missing)
            kinds.append((v.array.type, v.option))
        elif t is np.ndarray or t is OwnedView:  # (dtype and shape: the node's)
            kinds.append(None)
        else:  # placeholders, tuple picks, ...: by the graph itself
            return node
    return (node.skey, tuple(kinds))


def renamed(node: Node, names: tuple, now: tuple | None) -> Node:
    """`node`, a graph built over inputs `names`, over the inputs `now` (by position)."""
    if now is None or names == now:
        return node
    new = dict(zip(names, now))

    def rename(n: Node, srcs: tuple) -> Node:
        if n.op == "input":
            return n.replace(arg=new.get(n.arg, n.arg))
        return n.replace(srcs=srcs) if srcs != n.srcs else n
    return rewrite(node, rename)

"""Where an expression's rows and values may be missing: the `?var` / `?T` flags its type
reads (`Expr.type`), by the rules the ragged evaluation follows.
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from lazyk import types as T
from lazyk.frontend import ops
from lazyk.frontend.graph import (
    PICK_OP,
    REDUCE_OP,
    ROWS_OP,
    SELECT_OP,
    TAKE_OP,
    Node,
    input_names,
)
from lazyk.frontend.graph import toposort as _toposort
from lazyk.frontend.leaves import RaggedPlaceholder
from lazyk.lru import Memo

# graph root and what its inputs are -> its flags: an expression's type is read many times
# while it is built and evaluated, and each reading walked the whole graph
_flags = Memo(1 << 13, "option flags")


def missing_rows(v: Any) -> bool:
    """Whether `v` is a placeholder with `?var` dims (missing rows)."""
    return isinstance(v, RaggedPlaceholder) and builtins.any(v.rows)


def option_flags(root: Node, env: dict) -> tuple[list, bool]:
    """(missing-row flag per result dim, missing values?) of a graph over var / option
    leaves, by the rules the ragged evaluation follows: a missing row combined with
    anything is missing; a reduction marks the next kept dim (or the values) where it
    folds a missing row, and its values are missing as in `lazyk.reduce`."""
    key = (root, tuple([_leaf_kind(env.get(n)) for n in input_names(root)]))
    got = _flags.get(key)
    if got is None:
        got = _flags.put(key, _option_flags(root, env))
    return list(got[0]), got[1]


def _leaf_kind(leaf: Any):
    """What `option_flags` reads of an input: a placeholder's `?var` dims and option, an
    array's type (interned: one object per type)."""
    if missing_rows(leaf):
        return tuple(leaf.rows), bool(leaf.option)
    t = getattr(getattr(leaf, "array", None), "type", None)  # (a Dask array has none)
    return t if t is not None else bool(getattr(leaf, "option", False))


def _option_flags(root: Node, env: dict) -> tuple[list, bool]:
    """`option_flags` without the memo of whole graphs: each node's flags from its sources',
    the nodes of graphs seen before (their inputs' kinds the same) found in the memo, so
    a graph built step by step is walked once, not once per step."""
    memo: dict = {}
    kinds: dict = {}

    def key_of(node):
        if node.op == "input" or node.names is None:
            return None
        got = []
        for name in node.names:
            k = kinds.get(name, kinds)
            if k is kinds:
                k = kinds[name] = _leaf_kind(env.get(name))
            got.append(k)
        return node, tuple(got)
    stack, keys = [root], {}
    while stack:
        node = stack[-1]
        if id(node) in memo:
            stack.pop()
            continue
        key = keys.get(id(node), keys)
        if key is keys:  # (the first visit: its key once, not again after its sources)
            key = keys[id(node)] = key_of(node)
            got = None if key is None else _flags.get(key)
            if got is not None:
                memo[id(node)] = got
                stack.pop()
                continue
        pending = [s for s in node.srcs if id(s) not in memo]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        flags, option = _node_flags(node, memo, env)
        memo[id(node)] = got = (tuple(flags), option)
        if key is not None:
            _flags.put(key, got)
    return memo[id(root)]


def _node_flags(node: Node, memo: dict, env: dict) -> tuple[list, bool]:
    """(flags, option) of one node from its sources' in `memo` (by id)."""
    if node.op == "input":
        leaf = env.get(node.arg)
        if missing_rows(leaf):  # a placeholder with `?var` dims
            return list(leaf.rows), leaf.option
        flags, t = [], getattr(getattr(leaf, "array", None), "type", None)
        while isinstance(t, (T.FixedDim, T.VarDim, T.Option)) and len(flags) < node.ndim:
            row = isinstance(t, T.Option)
            t = t.elem if row else t
            flags.append(row)
            t = t.elem
        flags += [False] * (node.ndim - len(flags))
        # a placeholder has no array: its option flag says whether values are missing
        return flags, isinstance(t, T.Option) or (
            t is None and bool(getattr(leaf, "option", False)))
    elif node.op == ROWS_OP:  # its builder typed it (`lazyk.frontend.rowops`)
        return (list(node.arg[2]), bool(node.arg[3]))
    elif node.op in (SELECT_OP, TAKE_OP):
        return indexed_flags(node.arg, memo[id(node.srcs[0])], memo[id(node.srcs[1])])
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
            option = any_in or None in node.srcs[0].shape
        elif op == "mean" or (ops.OPS[op].no_empty_fold and len(node.arg) <= 4):
            option = any_in
        else:
            option = any_in and not skipna
        return (out, option or nd in marks)
    elif node.op == PICK_OP:
        # its item's rows and values (a position is never missing); a missing row of
        # any array of a product at or above the axis is missing
        _, slot, axis, position = node.arg
        flags, option = memo[id(node.srcs[slot if len(node.srcs) > 1 else 0])]
        flags = list(flags[:node.ndim])
        for s in node.srcs:
            sf = memo[id(s)][0]
            flags[:axis + 1] = [f or g for f, g in zip(flags, sf[:axis + 1])]
        return (flags, option and not position)
    elif node.op == "with_rows":  # x's values; y's rows above the records (`arg` dims)
        (xf, xo), (yf, _) = (memo.get(id(s), ([], False)) for s in node.srcs)
        flags = list(xf[-node.ndim:]) if node.ndim else []
        flags = [False] * (node.ndim - len(flags)) + flags
        upto = node.ndim if node.arg is None else node.arg  # (None: every dim)
        return [f or (k < upto and k < len(yf) and yf[k]) for k, f in enumerate(flags)], xo
    else:
        nd, flags, option = node.ndim, [False] * node.ndim, False
        for s in node.srcs:
            sf, so = memo.get(id(s), ([], False))
            for k in range(1, builtins.min(len(sf), nd) + 1):
                flags[-k] = flags[-k] or sf[-k]
            option = option or so
        return (flags, option)


def indexed_flags(at: int, x: tuple, key: tuple) -> tuple[list, bool]:
    """`option_flags` of x[mask] / x[positions] at level L (the key's dims line up with
    x's first L + 1): a missing row of either above or at L gives a missing row; a missing
    mask element or position gives a missing element (a missing value at the last level, a
    missing row below it otherwise)."""
    (xf, xo), (kf, ko) = x, key
    flags = [f or (d <= at and d < len(kf) and kf[d]) for d, f in enumerate(xf)]
    if ko and at + 1 < len(flags):
        flags[at + 1] = True
    return flags, xo or (ko and at + 1 == len(flags))


def indexes(node: Node) -> bool:
    """Whether the graph selects, gathers or takes positions (`argmax`): its missing values
    follow `option_flags` whatever its leaves."""
    return builtins.any(n.op in (SELECT_OP, TAKE_OP) or
                        (n.op == REDUCE_OP and n.arg[0] in ops.ARG_REDUCTIONS)
                        for n in _toposort(node))


def none_for_empty(node: Node) -> bool:
    """An arg-reduction over var rows: an empty row has no position (a missing result)."""
    return node.op == REDUCE_OP and node.arg[0] in ops.ARG_REDUCTIONS and \
        None in node.srcs[0].shape


def rows_may_miss(exprs: list, depth: int) -> bool:
    """Whether an expression of `exprs` may have missing rows in its first `depth` dims."""
    for e in exprs:
        t = e.type
        for _ in range(builtins.min(depth, e.ndim)):
            if isinstance(t, T.Option):
                return True
            t = t.elem
    return False


def keeps_present(k) -> bool:
    """Whether index item `k` keeps or drops items, never making one missing (a slice, a
    new axis, a bool mask without missing elements)."""
    dt = getattr(k, "dtype", None)
    dt = dt.to_numpy() if isinstance(dt, T.Scalar) else dt  # (a lazyk array's element)
    return k is None or k is Ellipsis or isinstance(k, slice) or dt == np.bool_

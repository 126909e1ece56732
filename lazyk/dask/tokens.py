"""Deterministic Dask tokens of lazyk expressions and arrays: graphs built twice from the
same inputs get the same keys (`dask.base.normalize_token`, registered by `register_tokens`
when `lazyk.dask` is imported)."""
from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
from dask.base import normalize_token

from lazyk.arrays.array import Array
from lazyk.dask.collection import RowsLeaf
from lazyk.errors import NotSupportedError
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import arg_key, toposort
from lazyk.frontend.leaves import DaskLeaf, Placeholder, leaf_data


def graph_token(e: Expr) -> tuple:
    """The token of an expression: its graph's hash and its leaves' own tokens."""
    order = toposort(e.node)
    names: dict[str, str] = {}
    index = {id(n): k for k, n in enumerate(order)}
    nodes = []
    for n in order:
        arg = names.setdefault(n.arg, f"${len(names)}") if n.op == "input" else arg_key(n.arg)
        nodes.append((n.op, n.dtype.str, n.shape, tuple(index[id(s)] for s in n.srcs), arg))
    leaves = []
    for name in names:
        v = leaf_data(e.env[name])
        if isinstance(v, DaskLeaf):
            leaves.append(("dask", v.array.name))
        elif isinstance(v, RowsLeaf):
            leaves.append(("rows", v.rows.name))
        elif isinstance(v, Placeholder):
            leaves.append(("placeholder", v.name, v.shape, v.dtype.str))
        elif isinstance(v, np.ndarray):
            leaves.append(normalize_token(v))
        else:
            leaves.append(("ragged", id(v)))  # no stable content token: unique per object
    return ("lazyk.Expr", hashlib.sha256(repr(nodes).encode()).hexdigest(), tuple(leaves))


def array_token(a: Any) -> tuple:
    """The token of a lazyk array: its type and values."""
    try:
        return ("lazyk.Array", str(a.type), normalize_token(a.to_numpy()))
    except NotSupportedError:
        return ("lazyk.Array", str(a.type), repr(a.to_list()))


def register_tokens() -> None:
    """Register the tokens with Dask."""
    normalize_token.register(Expr)(graph_token)
    normalize_token.register(Array)(array_token)

"""Constant folding: an op whose operands are all constants becomes one constant."""
from __future__ import annotations

import numpy as np

from lazyk.frontend import ops
from lazyk.frontend.graph import LEAF_OPS, REDUCE_OP, Node, rewrite

_CONST = ("const", "scalar")


def _value(node: Node) -> np.ndarray:
    if ops.text_unit(node.dtype):  # a Python str / bytes constant
        return np.asarray(node.arg)
    return np.asarray(node.arg, dtype=node.dtype)


def fold_node(node: Node, srcs: tuple[Node, ...]) -> Node:
    """Rebuild `node` on `srcs`; fold it to a `const` when every source is constant."""
    if node.op in LEAF_OPS:
        return node
    if node.op == REDUCE_OP or not srcs or not all(s.op in _CONST for s in srcs):
        return node.replace(srcs=srcs)
    # Folding uses the same NumPy rule the reference executor uses, so results agree.
    with np.errstate(all="ignore"):
        if node.op == "astype":
            value = _value(srcs[0]).astype(node.dtype)
        else:
            value = np.asarray(ops.get(node.op).reference(*(_value(s) for s in srcs)))
    return Node("const", node.dtype, (), (), value.astype(node.dtype).item())


def fold_constants(root: Node) -> Node:
    """Fold every all-constant subgraph to a single `const` node (types unchanged)."""
    return rewrite(root, fold_node)

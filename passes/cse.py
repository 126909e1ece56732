"""Common-subexpression elimination: canonical operand order for commutative ops.

Hash-consing already makes structurally equal nodes one object; this pass makes
`a + b` and `b + a` equal too, by sorting the operands of ops that commute for their
operand dtypes (the op table's `commutes`: float and complex min / max do not).
"""
from __future__ import annotations

import hashlib

from lazyk.frontend import ops
from lazyk.frontend.graph import Node, rewrite, toposort


def _commutative(node: Node, srcs: tuple[Node, ...]) -> bool:
    """Whether the op table says `node`'s operands may swap for their dtypes (IEEE add and
    multiply commute, but are not associative: only operands swap)."""
    row = ops.OPS.get(node.op)
    return row is not None and len(srcs) == 2 and row.commutative(*(s.dtype for s in srcs))


def eliminate_common_subexpressions(root: Node) -> Node:
    """Rebuild the graph with commutative operands in a canonical order (merges a+b, b+a).

    The order never depends on leaf names: an input is keyed by the rank of its first
    appearance in the graph as built, so rebuilding the same expression over fresh leaves
    (`_17` then `_23`) gives the same graph shape and the same kernel specs (cache hits).
    """
    keys: dict[int, str] = {}
    rank: dict[str, int] = {}
    for n in toposort(root):
        if n.op == "input":
            rank.setdefault(n.arg, len(rank))

    def visit(node: Node, srcs: tuple[Node, ...]) -> Node:
        if _commutative(node, srcs):
            srcs = tuple(sorted(srcs, key=lambda s: keys[id(s)]))
        new = node.replace(srcs=srcs) if srcs != node.srcs else node
        # Structural digest: equal subgraphs get equal keys, whatever their history; a
        # fixed-size digest keeps shared DAGs (x = x + x, repeated) linear.
        # A constant's value is a kernel parameter: keying on it would make `a * 2.0` and
        # `a * 3.0` order their operands differently (two specs, two compiles).
        arg = f"#{rank[new.arg]}" if new.op == "input" else \
            "" if new.op in ("const", "scalar") else repr(new.arg)
        text = f"{new.op}:{new.dtype.str}:{new.shape}:{arg}(" + \
            ",".join(keys[id(s)] for s in srcs) + ")"
        keys[id(new)] = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
        return new

    return rewrite(root, visit)

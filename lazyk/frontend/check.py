"""Graph invariants, run after every pass in tests (and by `run_passes(check=True)`)."""
from __future__ import annotations

import numpy as np

from lazyk.frontend import ops
from lazyk.frontend.graph import LEAF_OPS, REDUCE_OP, SELECT_OP, TAKE_OP, Node, dump, toposort


class GraphError(AssertionError):
    """A graph that breaks an invariant; the message shows the graph around the bad node."""


def _fail(root: Node, node: Node, why: str, after: str | None) -> None:
    where = f" after pass {after}" if after else ""
    lines = dump(root).splitlines()
    order = toposort(root)
    i = next(k for k, n in enumerate(order) if n is node)
    around = "\n".join(("> " if k == i else "  ") + lines[k]
                       for k in range(max(0, i - 3), min(len(lines), i + 3)))
    raise GraphError(f"invalid node %{i}{where}: {why}\n{around}")


def _broadcast(shapes: list[tuple]) -> tuple | None:
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for ax in range(ndim):
        dims = {s[len(s) - ndim + ax] for s in shapes if len(s) - ndim + ax >= 0} - {1}
        ints = {d for d in dims if isinstance(d, int)}
        if len(ints) > 1 or len(dims - ints) > 1:
            return None
        out.append(ints.pop() if ints else (dims.pop() if dims else 1))
    return tuple(out)


def check_node(node: Node) -> str | None:
    """Why `node` is invalid, or None. Operands must already have their loop dtypes."""
    if node.op in LEAF_OPS:
        if node.srcs:
            return "leaf with sources"
        if node.op != "input" and node.shape != ():
            return "constant with a shape"
        return None
    if not node.srcs:
        return "op without sources"
    if node.op == REDUCE_OP:
        op, axes, keep = node.arg[:3]
        src = node.srcs[0]
        if op not in ops.REDUCTIONS or any(not 0 <= a < src.ndim for a in axes):
            return f"bad reduction {op} axes={axes} of a {src.ndim}-d operand"
        want = tuple((1 if d in axes else n) for d, n in enumerate(src.shape)
                     if keep or d not in axes)
        if node.shape != want:
            return f"reduction shape {node.shape}, expected {want}"
        if op in ops.ARG_REDUCTIONS:  # positions of values of any ordered dtype
            return None if node.dtype == np.int64 else f"{op} gives int64, not {node.dtype}"
        if src.dtype != node.dtype:
            return f"reduction operand {src.dtype} is not the accumulator dtype {node.dtype}"
        return None
    if node.op in (SELECT_OP, TAKE_OP):
        x, key = node.srcs
        at, select = node.arg, node.op == SELECT_OP
        if not (type(at) is int and 0 <= at < x.ndim and key.ndim == at + 1) or \
                key.dtype != (np.bool_ if select else np.int64) or node.dtype != x.dtype:
            return f"{node.op} at level {at} of {x.type_text()} by {key.type_text()}"
        want = x.shape[:at] + (None,) + x.shape[at + 1:] if select else \
            key.shape + x.shape[at + 1:]
        return None if node.shape == want else f"{node.op} shape {node.shape}, expected {want}"
    if node.op == "astype":
        if node.shape != node.srcs[0].shape:
            return "astype changes the shape"
        return None
    row = ops.OPS.get(node.op)
    if row is None:
        return f"unknown op {node.op!r}"
    if len(node.srcs) != row.arity:
        return f"{node.op} takes {row.arity} operands, has {len(node.srcs)}"
    if any(s.weak for s in node.srcs):
        return "weak Python scalar left as an operand (should be a typed const)"
    want = _broadcast([s.shape for s in node.srcs])
    if want is None or want != node.shape and _broadcast([want, node.shape]) != node.shape:
        return f"shape {node.shape} is not the broadcast of {[s.shape for s in node.srcs]}"
    if node.op != "where":
        loop = row.resolve(*(s.dtype for s in node.srcs))
        if tuple(s.dtype for s in node.srcs) != loop[:-1]:
            return f"operands {[str(s.dtype) for s in node.srcs]} are not the loop {loop}"
        if np.dtype(loop[-1]) != node.dtype:
            return f"dtype {node.dtype}, the op gives {loop[-1]}"
    return None


def check_graph(root: Node, after: str | None = None) -> None:
    """Raise GraphError at the first node that breaks an invariant."""
    for node in toposort(root):
        why = check_node(node)
        if why:
            _fail(root, node, why, after)

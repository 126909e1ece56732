"""String operations over ragged and missing strings (`var * string`, `?string`,
`N * var * ?string`, string fields of records).

Before the ragged path (`lazyk.ragged`) runs an expression, every string operation in it
(comparisons, `str_len`, `startswith`, `endswith`) is computed here and replaced by a
numeric leaf with the operands' row structure: the 16-byte `{begin, size}` elements of each
string operand are gathered flat (`rows.gather`; the characters are not copied), the
operands are lined up row by row as numbers are (`rows.line_up`), the fixed string kernel
runs once over the flat elements, and the result is rebuilt into rows (`build_rows`)
with the AND of the operands' masks (missing in, missing out). A missing string's element
is never read: it is gathered as the empty string and its result is masked. The rest of
the expression (numeric work, reductions) then runs on the ragged path as for any
numeric `T` / `?T` leaf.
"""
from __future__ import annotations

import ctypes

import numpy as np

from lazyk import ops
from lazyk.expr import Expr, as_expr
from lazyk.graph import Node, rewrite, toposort
from lazyk.interchange import build_rows
from lazyk.leaves import is_ragged, leaf_data, text_rows
from lazyk.rows import Operand, Structure, from_numpy, gather, line_up, row_view
from lazyk.runtime import canonical, plan, run_program

_TEXT = frozenset(ops.TEXT)


def lower(expr: Expr) -> Expr:
    """`expr` with every string operation over ragged / missing string leaves (and any
    other string operation next to them) computed and replaced by a numeric leaf; `expr`
    itself when it has none."""
    nodes = toposort(expr.node)
    if not any(n.op in _TEXT for n in nodes):
        return expr
    env = dict(expr.env)

    def visit(node: Node, srcs: tuple) -> Node:
        node = node.replace(srcs=srcs) if srcs != node.srcs else node
        if node.op not in _TEXT or not any(s.op == "input" for s in node.srcs):
            return node  # numeric work, or a string operation on constants only
        leaf = as_expr(_compute(node, env))
        env.update(leaf.env)
        return leaf.node

    root = rewrite(expr.node, visit)
    used = {n.arg for n in toposort(root) if n.op == "input"}
    return Expr(root, {k: v for k, v in env.items() if k in used})


def computed(expr: Expr, lowered: Expr):
    """The lazyk Array that `lowered = lower(expr)` is when it is just the leaf computed
    for a string operation (`x == 'a'` itself), else None."""
    if lowered is expr or lowered.node.op != "input":
        return None
    value = lowered.env[lowered.node.arg]
    array = getattr(value, "array", None)  # a RaggedLeaf, else an OwnedView
    return array if array is not None else getattr(value, "owner", None)


def _operand(value):
    """One string leaf flattened (`rows.Operand`) with its elements as `ops.STRING`."""
    if not is_ragged(value):
        return from_numpy(value)  # fixed strings: lazyk `string`, NumPy S / U
    proxy = text_rows(value.array)
    v = row_view(proxy)
    if v.mask_offset is None:
        dense = _dense(v)
        if dense is not None:  # rows back to back (offsets over content): no copy
            starts = np.cumsum(v.lengths) - v.lengths
            return Operand(v.outer, v.lengths, starts, dense, None, v.var, v.last)
    op = gather(proxy, np.dtype(np.complex128))
    op.values = op.values.view(ops.STRING)  # missing elements were zeroed: "" (size 0)
    return op


def _dense(v) -> np.ndarray | None:
    """The elements of rows that follow each other in memory, as one read-only view."""
    ptr, ln = v.rowptr, v.lengths
    if v.stride != 16 or not len(ptr):
        return None
    if not bool(np.all(ptr[1:] == ptr[:-1] + ln[:-1] * 16)):  # offsets pass at once
        keep = ln > 0  # empty rows may start anywhere
        ptr, ln = ptr[keep], ln[keep]
        if not len(ptr) or not bool(np.all(ptr[1:] == ptr[:-1] + ln[:-1] * 16)):
            return None
    total = int(ln.sum())
    raw = np.ctypeslib.as_array((ctypes.c_uint8 * (16 * total)).from_address(int(ptr[0])))
    out = raw.view(ops.STRING)
    out.flags.writeable = False
    return out


def _compute(node: Node, env: dict):
    """The lazyk Array of string operation `node` over its leaves' data."""
    leaves = list(dict.fromkeys(s.arg for s in node.srcs if s.op == "input"))
    operands = [_operand(leaf_data(env[name])) for name in leaves]
    if len(operands) == 1:  # against constants: the operand's own rows
        op = operands[0]
        struct, index = Structure(op.outer, op.lengths, op.var, op.last), [slice(None)]
    else:
        struct, index = line_up([f"operand {k}" for k in range(len(leaves))], operands)
    total = int(struct.lengths.sum())
    data, mask = {}, None
    for name, op, ix in zip(leaves, operands, index):
        data[name] = np.ascontiguousarray(op.values[ix])
        if op.mask is not None:
            m = op.mask[ix]
            mask = m if mask is None else mask & m
    flat = node.replace(shape=(total,), srcs=tuple(
        s.replace(shape=(total,)) if s.op == "input" else s for s in node.srcs))
    flat, data = canonical(flat, data)
    values = run_program(plan(flat), data)
    has_last = struct.var or struct.last is not None
    last = None if not has_last else "var" if struct.var else struct.last
    return build_rows(values, mask, struct.outer, last, struct.lengths)

"""String builders: comparisons of string operands, `str_len`, `startswith`, `endswith`
and `where` over strings (or bytes).
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from lazyk.errors import UnsupportedOperandError
from lazyk.frontend import ops
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import Node
from lazyk.frontend.leaves import is_text
from lazyk.frontend.numpy_rules import broadcast_shapes, cast
from lazyk.frontend.operands import merge_env, operand_name, operands, refuse_text


def text_apply(row: str, exprs: list[Expr], what: str) -> Expr:
    """Node for text row `row` (a comparison, startswith, ...) over string operands."""
    srcs = [e.node for e in exprs]
    if not builtins.all(is_text(n.dtype) for n in srcs):
        types = " and ".join(operand_name(e) for e in exprs)
        raise UnsupportedOperandError(f"{what}: unsupported operand type(s) {types} (a "
                                      "number and a string have no common type)")
    data = [n.dtype for n in srcs if n.op != "const"]
    if ops.BYTES in data and not builtins.all(
            d == ops.BYTES or d.kind == "S" for d in data) or ops.BYTES in data and \
            builtins.any(n.op == "const" and isinstance(n.arg, str) for n in srcs):
        # `bytes` data is bytes as in Python: b"a" == "a" is an error here, not False
        types = " and ".join(operand_name(e) for e in exprs)
        raise UnsupportedOperandError(
            f"{what}: operand types {types}: bytes and str have no common type (bytes "
            "compare with bytes: a Python bytes, a bytes array or a NumPy 'S' array); "
            "encode the str first, e.g. 'kiwi'.encode()")
    if data and builtins.all(d.kind in "SU" for d in data):
        # (NumPy's fixed-width strings end before their trailing NULs: so do constants
        # compared with them, as NumPy converts them to the array's dtype)
        srcs = [Node("const", n.dtype, (), (), n.arg.rstrip(b"\0" if isinstance(n.arg, bytes)
                                                             else "\0"))
                if n.op == "const" else n for n in srcs]
    units = {ops.text_unit(d) for d in data}
    mixed = len({type(n.arg) for n in srcs}) > 1  # all constants: Python str and bytes
    if len(units) > 1 or (not data and mixed):
        types = " and ".join(operand_name(e) for e in exprs)
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
    return Expr(Node(row, out, shape, tuple(srcs)), merge_env(exprs))


def _utf8_text(value: str | bytes, what: str, exprs) -> str:
    """A str constant as is, a bytes constant decoded as UTF-8 (for UTF-32 string data)."""
    if isinstance(value, str):
        return value
    try:
        return bytes(value).decode("utf-8")
    except UnicodeDecodeError as err:
        types = " and ".join(operand_name(e) for e in exprs)
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
        raise UnsupportedOperandError(f"str_len: unsupported operand type {operand_name(e)} "
                                      "(strings only)")
    return Expr(Node("str_len", np.dtype(np.int64), e.shape, (e.node,)), e.env)


def startswith(x: Any, prefix: Any) -> Expr:
    """Lazy `s.startswith(prefix)` of each string `s` of `x`, as bool.

    `prefix`: a Python str (a kernel parameter: a new prefix needs no compile) or another
    string array (elementwise, broadcasting as numbers do).
    """
    return text_apply("startswith", operands("startswith", (x, prefix)), "startswith")


def endswith(x: Any, suffix: Any) -> Expr:
    """Lazy `s.endswith(suffix)` of each string `s` of `x`, as bool (see `startswith`)."""
    return text_apply("endswith", operands("endswith", (x, suffix)), "endswith")



def _text_kind(node: Node) -> str | None:
    """'string' or 'bytes' for a text operand of where() (NumPy 'U' / 'S' data, Python
    str / bytes constants), else None."""
    if not is_text(node.dtype) or node.dtype == ops.STRING32:
        return None
    if node.op == "const":
        return "bytes" if isinstance(node.arg, bytes) else "string"
    return "bytes" if node.dtype == ops.BYTES or node.dtype.kind == "S" else "string"


def text_where(exprs: list[Expr]) -> Expr:
    """where(c, s, t) over strings (or bytes): a `string` / `bytes` result whose elements
    are those of the branch each condition selects (`lazyk.runtime.text_steps.select_text`)."""
    refuse_text("where", exprs[:1])
    c, a, b = (e.node for e in exprs)
    kinds = [_text_kind(n) for n in (a, b)]
    types = " and ".join(operand_name(e) for e in exprs[1:])
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
    return Expr(node, merge_env(exprs))

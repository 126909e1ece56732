"""numexpr-compatible expression strings -> lazy lazyk expressions (`lazyk.evaluate("2*a + b")`).

The syntax lives in grammar/expr.lark. A string is parsed once into a small call tree of
lazyk.frontend.expr function names (cached per text); each evaluation looks the names up and calls
those functions, so types, broadcasting and errors are exactly lazyk's (NumPy's).
"""
from __future__ import annotations

import ast
import math
import operator
from importlib import resources
from typing import Any

import lark
import numpy as np
from lark import Token

from lazyk.arrays.array import array as lazyk_array
from lazyk.errors import ExprParseError, NotSupportedError, TypeParseError
from lazyk.frontend import expr as lx
from lazyk.frontend import ops
from lazyk.lru import Memo

MAX_DEPTH = 256  # deeper expressions are refused cleanly (Python itself stops near 200)


# ---------------------------------------------------------------- the call tree
class Const:
    """A literal: a Python int, float, complex or bool (weak, as in NumPy), or a str or bytes
    (`'kiwi'`, `b'kiwi'`: a string constant, a kernel parameter like any scalar)."""

    __slots__ = ("value",)
    depth = 1

    def __init__(self, value: Any):
        self.value = value

    def __str__(self) -> str:
        return repr(self.value)


class Name:
    """A variable, looked up in local_dict / global_dict at evaluation time."""

    __slots__ = ("name", "line", "column")
    depth = 1

    def __init__(self, name: str, line: int, column: int):
        self.name, self.line, self.column = name, line, column

    def __str__(self) -> str:
        return self.name


class Call:
    """A call of the lazyk.frontend.expr function `func` (operators are calls too)."""

    __slots__ = ("func", "args", "kwargs", "line", "column", "depth")

    def __init__(self, func: str, args: tuple, kwargs: tuple, line: int, column: int):
        self.func, self.args, self.kwargs = func, args, kwargs
        self.line, self.column = line, column
        self.depth = 1 + max([a.depth for a in args] + [v.depth for _, v in kwargs] + [0])

    def __str__(self) -> str:
        parts = [str(a) for a in self.args] + [f"{k}={v}" for k, v in self.kwargs]
        return f"{self.func}({', '.join(parts)})"


# numexpr operator -> lazyk.frontend.expr function (NumPy's ufunc names).
BINARY_OPERATORS = {
    "+": "add", "-": "subtract", "*": "multiply", "/": "true_divide", "//": "floor_divide",
    "%": "remainder", "**": "power", "<<": "left_shift", ">>": "right_shift",
    "&": "bitwise_and", "|": "bitwise_or", "^": "bitwise_xor", "<": "less", "<=": "less_equal",
    ">": "greater", ">=": "greater_equal", "==": "equal", "!=": "not_equal",
}
UNARY_OPERATORS = {"-": "negative", "+": "positive", "~": "invert"}

# numexpr function -> (lazyk.frontend.expr function, number of positional arguments).
# (every ufunc of the op table, by NumPy's name)
_UNARY_NAMES = lx.UNARY + ("real", "imag")
_BINARY_NAMES = lx.BINARY
FUNCTIONS: dict[str, tuple[str, int]] = {
    **{n: (n, 1) for n in _UNARY_NAMES},
    **{n: (n, 2) for n in _BINARY_NAMES},
    "abs": ("absolute", 1), "where": ("where", 3), "clip": ("clip", 3), "complex": ("complex", 2),
    "contains": ("contains", 2), "str_len": ("str_len", 1), "startswith": ("startswith", 2),
    "endswith": ("endswith", 2), "round": ("round", 1), "copy": ("copy", 1),
    "ones_like": ("ones_like", 1), "nextafter": ("nextafter", 2), "signbit": ("signbit", 1),
}
# What to use instead of a numexpr function lazyk does not have.
_INSTEAD = {"contains": "; startswith(s, prefix) and endswith(s, suffix) are supported",
            "copy": ": every result is a new array; write the operand alone (x, not copy(x))",
            "ones_like": ": write where(x == x, 1, 1) (or lazyk.ones_like(x) outside strings)",
            "signbit": ": copysign(1, x) < 0 is signbit(x)"}
# Reductions take the operand and an optional axis (positional or `axis=`).
REDUCTIONS = lx.REDUCTIONS


_KEYWORDS = frozenset(("and", "or", "not", "None", "lambda", "if", "else", "in", "is"))


def _keyword(tok) -> str:
    """What to write instead of a Python keyword the expression language does not have."""
    if str(tok) == "None":
        return ("None is not a value in an expression: missing values come from the "
                "arrays (?T types); compute with lazyk.fill_none or lazyk.is_none")
    if str(tok) in ("if", "else"):
        return f"{tok!s} is not supported: use where(condition, a, b)"
    if str(tok) in ("and", "or", "not"):
        return f"{tok!s} is not supported: use & | ~ for and, or, not"
    return f"{tok!s} is not supported in an expression"


class _Fail(Exception):
    """Raised inside the Transformer; turned into a positioned ExprParseError."""

    def __init__(self, message: str, token: Any):
        super().__init__(message)
        self.message, self.token = message, token


def _call(func: str, args: tuple, kwargs: tuple, tok: Token) -> Call:
    node = Call(func, args, kwargs, tok.line, tok.column)
    if node.depth > MAX_DEPTH:
        raise _Fail(f"expression nested deeper than {MAX_DEPTH} levels (each operator of a "
                    "chain such as a+b+c+... is one level): evaluate it in parts, or build "
                    "it with Python operators on lazyk arrays", tok)
    return node


class _Build(lark.Transformer):
    """One method per grammar rule of expr.lark; builds Const / Name / Call nodes."""

    def number(self, c: list) -> Const:
        tok = c[0]
        try:
            return Const(ast.literal_eval(str(tok)))
        except (ValueError, SyntaxError):
            raise _Fail(f"bad number {tok!s} (leading zeros?)", tok) from None

    def string(self, c: list) -> Const:
        tok = c[0]
        try:  # Python's own rules: escapes, b'' for bytes, r'' raw
            return Const(ast.literal_eval(str(tok)))
        except (ValueError, SyntaxError) as err:
            raise _Fail(f"bad string constant {tok!s} ({err})", tok) from None

    def name(self, c: list) -> Any:
        tok = c[0]
        if tok in ("True", "False"):
            return Const(tok == "True")
        if tok in _KEYWORDS:
            raise _Fail(_keyword(tok), tok)
        return Name(str(tok), tok.line, tok.column)

    def group(self, c: list) -> Any:
        return c[1]

    def binary(self, c: list) -> Call:
        a, op, b = c
        return _call(BINARY_OPERATORS[str(op)], (a, b), (), op)

    def unary(self, c: list) -> Any:
        op, x = c
        if isinstance(x, Const) and op in "+-" and not isinstance(x.value, (bool, str, bytes)):
            return Const(-x.value if op == "-" else x.value)  # keep literals weak scalars
        return _call(UNARY_OPERATORS[str(op)], (x,), (), op)

    def list_first(self, c: list) -> list:
        return c

    def list_more(self, c: list) -> list:
        c[0].append(c[2])
        return c[0]

    def keyword(self, c: list) -> tuple:
        return (c[0], c[2])

    def call(self, c: list) -> Call:
        tok, name = c[0], str(c[0])
        items = c[2] if len(c) > 3 else []
        seen_keyword = False
        for a in items:
            if isinstance(a, tuple):
                seen_keyword = True
            elif seen_keyword:
                raise _Fail("positional argument after a keyword argument", tok)
        args = tuple(a for a in items if not isinstance(a, tuple))
        kwargs = tuple((str(k), v) for k, v in (a for a in items if isinstance(a, tuple)))
        if name in REDUCTIONS:
            return _reduction(name, args, kwargs, tok)
        if name not in FUNCTIONS:
            raise _Fail(f"unknown function {name}", tok)
        target, arity = FUNCTIONS[name]
        if kwargs:
            raise _Fail(f"{name}() takes no keyword arguments", tok)
        if len(args) != arity:
            raise _Fail(f"{name}() takes {arity} argument(s), {len(args)} given", tok)
        return _call(target, args, (), tok)


def _reduction(name: str, args: tuple, kwargs: tuple, tok: Token) -> Call:
    """`sum(x)`, `sum(x, 1)` or `sum(x, axis=1)` with an integer constant axis, and the
    constant keywords of lazyk's reductions: `keepdims`, `skipna`, `skipnan` (True / False)
    and, for min and max, `initial` (a number)."""
    allowed = ("axis", "keepdims", "skipna", "skipnan") + (
        ("initial",) if ops.OPS[name].no_empty_fold else ())
    forms = f"{name}(x), {name}(x, axis) or {name}(x, " + \
        ", ".join(f"{k}=..." for k in allowed) + ")"
    if not args or len(args) > 2:
        raise _Fail(f"{name}() takes {forms}", tok)
    if len(args) == 2:
        args, kwargs = args[:1], (("axis", args[1]),) + kwargs
    keys = [k for k, _ in kwargs]
    for k in keys:
        if k not in allowed:
            raise _Fail(f"{name}() has no keyword {k!r}; it takes {forms}", tok)
        if keys.count(k) > 1:
            raise _Fail(f"{name}(): {k} given twice", tok)
    for k, v in kwargs:
        value = v.value if isinstance(v, Const) else None
        if k == "axis" and not (isinstance(value, int) and not isinstance(value, bool)):
            raise _Fail(f"{name}(): axis must be an integer constant", tok)
        if k == "initial" and not (isinstance(value, (int, float)) and
                                   not isinstance(value, bool)):
            raise _Fail(f"{name}(): initial must be a number constant", tok)
        if k not in ("axis", "initial") and not isinstance(value, bool):
            raise _Fail(f"{name}(): {k} must be True or False", tok)
    return _call(name, args, kwargs, tok)


_PARSER = lark.Lark(resources.files("lazyk.grammar").joinpath("expr.lark").read_text(),
                    parser="lalr", transformer=_Build())

_TERMINALS = {
    "NAME": "a name", "NUMBER": "a number", "STRING": "a string", "LPAR": "'('",
    "RPAR": "')'", "COMMA": "','", "EQ": "'='", "ADD": "'+' or '-'", "MUL": "'*', '/', '//' or "
    "'%'", "POW": "'**'", "SHIFT": "'<<' or '>>'", "AMP": "'&'", "BAR": "'|'", "CARET": "'^'",
    "TILDE": "'~'", "COMPARE": "a comparison", "$END": "end of input",
}


def _end_position(text: str) -> tuple[int, int]:
    stripped = text.rstrip()
    line = stripped.count("\n") + 1
    return line, len(stripped) - (stripped.rfind("\n") + 1) + 1


def parse(text: str) -> Any:
    """Parse an expression string into its call tree (uncached).

    Raises:
        ExprParseError: with line, column and a caret, for syntax errors and unknown functions.

    Example: `str(parse("2*a + b"))` is `'add(multiply(2, a), b)'`.
    """
    if not isinstance(text, str):
        raise TypeError(f"expression must be a str, got {type(text).__name__}")
    if not text.strip():
        raise ExprParseError("empty expression", text, 1, 1)
    try:
        return _PARSER.parse(text)
    except _Fail as err:
        raise ExprParseError(err.message, text, err.token.line, err.token.column) from None
    except lark.exceptions.VisitError as err:
        orig = err.orig_exc
        if isinstance(orig, _Fail):
            raise ExprParseError(orig.message, text, orig.token.line,
                                 orig.token.column) from None
        raise
    except lark.exceptions.UnexpectedToken as err:
        tok = err.token
        expected = ", ".join(sorted({_TERMINALS.get(e, e) for e in err.expected}))
        stack = getattr(err.state, "value_stack", None) or [None]
        if isinstance(stack[-1], Token) and stack[-1] in _KEYWORDS:
            tok = stack[-1]  # `not a`: the keyword itself is the problem
        if tok.type == "$END":
            line, col = _end_position(text)
            raise ExprParseError(f"unexpected end of input; expected {expected}", text,
                                 line, col) from None
        before = text[:tok.start_pos].rstrip() if tok.start_pos is not None else ""
        if tok.type == "COMPARE" and str(tok) == ">" and before.endswith("<"):
            msg = "unexpected '>': '<>' is not an operator; write != for 'not equal'"
        elif tok.type == "COMPARE":
            msg = "chained comparisons are not supported: write (a < b) & (b < c)"
        elif tok.type == "NAME" and tok in _KEYWORDS:
            msg = _keyword(tok)
        else:
            msg = f"unexpected {str(tok)!r}; expected {expected}"
        raise ExprParseError(msg, text, tok.line, tok.column) from None
    except lark.exceptions.UnexpectedCharacters as err:
        ch = text[err.pos_in_stream] if err.pos_in_stream < len(text) else ""
        msg = f"unexpected character {ch!r}"
        if ch.isidentifier():  # (a letter past ASCII: Python takes it, numexpr too)
            msg += ": names in an expression are ASCII letters, digits and _ (pass the " \
                "array under such a name in local_dict)"
        if ch == ".":  # `a.sum()`, `u.real`: the grammar has function calls only
            msg += ": attributes and method calls are not supported; use functions, e.g. " \
                "real(u) for u.real, sum(a, axis=-1) for a.sum(axis=-1)"
        raise ExprParseError(msg, text, err.line, err.column) from None


def _program(root: Any) -> tuple:
    """The call tree in post-order (operands before their call), built without recursion."""
    out: list = []
    stack: list = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if isinstance(node, Call) and not expanded:
            stack.append((node, True))
            kids = list(node.args) + [v for _, v in node.kwargs]
            stack.extend((k, False) for k in reversed(kids))
        else:
            out.append(node)
    return tuple(out)


_CACHE = Memo(4096, "parsed expression strings")  # text -> (call tree, program)


def compile_string(text: str) -> tuple[Any, tuple]:
    """(call tree, post-order program) for `text`, parsed once and cached."""
    hit = _CACHE.get(text)
    if hit is None:
        root = parse(text)
        hit = _CACHE.put(text, (root, _program(root)))
    return hit


def names(text: str) -> tuple[str, ...]:
    """The variable names `text` uses, in order of first appearance."""
    seen: dict[str, None] = {}
    for node in compile_string(text)[1]:
        if isinstance(node, Name):
            seen.setdefault(node.name, None)
    return tuple(seen)


def folds_scalars(text: str, arrays: set) -> bool:
    """Whether `text` calls a function (an operator) of names not in `arrays` (scalars) and
    literals only: built, the call is folded into one value (`s - t`)."""
    kinds: dict = {}
    for node in compile_string(text)[1]:
        if isinstance(node, Const):
            kinds[id(node)] = "const"
        elif isinstance(node, Name):
            kinds[id(node)] = "array" if node.name in arrays else "scalar"
        else:
            got = {kinds[id(a)] for a in list(node.args) + [v for _, v in node.kwargs]}
            if "scalar" in got and "array" not in got:
                return True
            kinds[id(node)] = "array" if "array" in got else "const"
    return False


def _complex(expr: Any, real: Any, imag: Any) -> Any:
    """numexpr's complex(re, im): the complex number of those parts, typed as NumPy types
    re + im * 1j."""
    return expr.apply("complex", real, imag)


_INT_OPS = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
            "negative": operator.neg, "positive": operator.pos, "invert": operator.invert,
            "absolute": abs, "power": pow, "floor_divide": operator.floordiv, "remainder": operator.mod,
            "left_shift": operator.lshift, "right_shift": operator.rshift,
            "bitwise_and": operator.and_, "bitwise_or": operator.or_,
            "bitwise_xor": operator.xor}


def _exact_ints(func: str, args: list) -> int | float | None:
    """`func` of integer literals computed exactly, as Python does (NumPy would compute
    in int64 and wrap), or None where NumPy's answer differs otherwise (a division by
    zero, a negative shift) or `func` is no integer arithmetic. A negative power is
    Python's float, as numexpr gives it (`2**-1` is 0.5)."""
    fn = _INT_OPS.get(func)
    if fn is None or not args or any(type(a) not in (int, bool) for a in args) or \
            all(type(a) is bool for a in args):  # (a bool is Python's 0 or 1 beside a number)
        return None
    if func == "power" and args[1] < 0:
        return float(args[0]) ** args[1]  # (0**-1: Python's ZeroDivisionError, as numexpr)
    if func in ("floor_divide", "remainder") and args[1] == 0 or \
            func in ("left_shift", "right_shift") and args[1] < 0:
        return None
    bits = abs(args[0]).bit_length() * args[1] if func == "power" else \
        args[0].bit_length() + args[1] if func == "left_shift" else 0
    if bits > 4096:
        raise OverflowError(f"integer literal arithmetic {func}{tuple(args)}: a number of "
                            "more than 4096 bits")
    return fn(*args)


_NUMBER_OPS = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
               "true_divide": operator.truediv, "floor_divide": operator.floordiv,
               "remainder": operator.mod, "power": pow, "negative": operator.neg, "absolute": abs,
               "positive": operator.pos, "less": operator.lt, "less_equal": operator.le, "greater": operator.gt,
               "greater_equal": operator.ge, "equal": operator.eq, "not_equal": operator.ne}


def _weak_numbers(func: str, args: list) -> Any:
    """An operator over Python numbers, one of them a float or complex (or a true division
    of ints, `1/3`), computed as Python does: a Python number, weak as in NumPy's
    `x * (s + 1)` (NEP 50); a division by zero gives NumPy's value (inf, nan; 0 for ints),
    weak too; None for other operators (exact ints: `_exact_ints`)."""
    fn = _NUMBER_OPS.get(func)
    if fn is None or not args or any(type(a) not in (int, float, complex, bool) for a in args):
        return None
    ints = func != "true_divide" and all(type(a) in (int, bool) for a in args)
    try:
        got = fn(*args)
    except ZeroDivisionError:
        if complex in map(type, args):
            return None
        with np.errstate(all="ignore"):  # (0 ** -1 of ints: NumPy's ValueError)
            return getattr(np, func)(*[(np.int64 if ints else np.float64)(a)
                                       for a in args]).item()
    except (ArithmeticError, ValueError):
        return None
    if ints:
        return None
    # (a negative float to a fractional power: Python's complex, NumPy's nan)
    return math.nan if type(got) is complex and complex not in map(type, args) else got


def build(text: str, local_dict: dict | None = None, global_dict: dict | None = None) -> Any:
    """The lazy expression for `text` with names taken from the two dicts (local first).

    Raises:
        ExprParseError: for a name found in neither dict (with its position).
        NotSupportedError: for a numexpr function lazyk does not implement yet.
    """
    program = compile_string(text)[1]
    local_dict = local_dict or {}
    global_dict = global_dict or {}
    values: list = []
    for node in program:
        if isinstance(node, Const):
            values.append(node.value)
        elif isinstance(node, Name):
            if "__" in node.name:  # as numexpr: no dunder names (__builtins__, __loader__, ...)
                raise ExprParseError(f"name {node.name!r}: names containing '__' are not "
                                     "allowed", text, node.line, node.column)
            if node.name in local_dict:
                value = local_dict[node.name]
            elif node.name in global_dict:
                value = global_dict[node.name]
            else:
                raise ExprParseError(f"name {node.name!r} is not defined", text, node.line,
                                     node.column)
            if isinstance(value, (list, tuple)):  # as numexpr takes them: read as an array
                value = lazyk_array(value)  # (lazyk reads None as a missing value, `?T`)
            values.append(value)  # a str or bytes is a string constant, as a literal
        else:
            n = len(node.args) + len(node.kwargs)
            operands = values[len(values) - n:]
            del values[len(values) - n:]
            args, kw = operands[:len(node.args)], dict(zip((k for k, _ in node.kwargs),
                                                           operands[len(node.args):]))
            if node.func == "complex":
                values.append(_complex(lx, *args))
                continue
            if node.func == "round":  # (numexpr's: integers as they are, else rint)
                kind = "i" if isinstance(args[0], int) else getattr(args[0], "dtype", None)
                values.append(args[0] if getattr(kind, "kind", kind) in ("b", "i", "u") else
                              lx.rint(args[0]))
                continue
            if node.func == "power" and type(args[1]) in (int, float) and \
                    args[1] in (2, -1) and hasattr(args[0], "dtype"):
                values.append(lx.power_operator(*args))  # (as Python's x ** 2 on arrays)
                continue
            exact = None if kw else _exact_ints(node.func, args)
            if exact is None and not kw:
                exact = _weak_numbers(node.func, args)
            if exact is not None:  # (Python's exact ints: 2**63 never wraps to -2**63)
                values.append(exact)
                continue
            fn = getattr(lx, node.func, None)
            if fn is None:
                where = TypeParseError("", text, node.line, node.column)
                raise NotSupportedError(f"{node.func}() is not supported by lazyk yet "
                                        f"(line {node.line}, column {node.column})"
                                        f"{_INSTEAD.get(node.func, '')}\n"
                                        + "\n".join(str(where).splitlines()[1:]))
            values.append(fn(*args, **kw))
    if isinstance(values[-1], (str, bytes)):  # never read as a further expression string
        root = program[-1]
        raise ExprParseError("a string alone is not an expression over arrays (compare it: "
                             "s == 'kiwi')", text, getattr(root, "line", 1),
                             getattr(root, "column", 1))
    return values[-1]

"""Type strings -> type objects, the grammar's side: the lark Transformer that builds a type
for each rule, the `name[...]` constructors, the LALR parser and the helpers that place an
error (nesting depth, unclosed brackets, what was expected). `lazyk.types.parse` parses.
"""
from __future__ import annotations

import re
from importlib import resources
from typing import Any

import lark
from lark import Token

from lazyk.errors import TypeParseError
from lazyk.types.base import (
    MAX_DEPTH,
    SCALAR_NAMES,
    Dim,
    EllipsisDim,
    FixedDim,
    Function,
    Option,
    Scalar,
    SymbolicDim,
    Type,
    VarDim,
)
from lazyk.types.elements import (
    Datetime,
    FixedBytes,
    FixedString,
    Pointer,
    Record,
    Timedelta,
    Tuple,
    TypeVar,
)

_ALIASES = {"int": "int32", "real": "float64", "complex": "complex128"}
_VOID = Scalar("void")
_INT64_MAX = 2**63 - 1


class TokenError(Exception):
    """Raised inside the Transformer; dshape() turns it into a positioned TypeParseError."""

    def __init__(self, message: str, token: Any):
        super().__init__(message)
        self.message = message
        self.token = token


def _int(tok: Token) -> int:
    """An INT token as an int: no leading zeros, fits int64."""
    if len(tok) > 1 and tok[0] == "0":
        raise TokenError(f"leading zeros are not allowed in {tok!s}", tok)
    value = int(tok)
    if value > _INT64_MAX:
        raise TokenError(f"{tok!s} overflows int64", tok)
    return value


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"'}
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2}|.)")


def string_value(tok: Token) -> str:
    """A quoted STRING token as text, with backslash escapes applied."""
    body = tok[1:-1]
    if "\\" not in body:
        return body

    def repl(m: re.Match) -> str:
        esc = m.group(1)
        if esc in _ESCAPES:
            return _ESCAPES[esc]
        if len(esc) > 1:
            code = int(esc[1:], 16)
            if code <= 0x10FFFF:
                return chr(code)
        raise TokenError(f"bad escape \\{esc} in string", tok)

    return _ESCAPE.sub(repl, body)


# Every scalar name and alias -> its plain-str canonical name (tokens are str subclasses).
CANONICAL = {**{n: n for n in SCALAR_NAMES}, **_ALIASES}


def _scalar_name(tok: Token) -> str | None:
    return CANONICAL.get(tok)


# Plain names that always mean the same type: one dict look-up in the parse loop.
# `void` is left out: it is only a function's return type (the VOID keyword after `->`).
NAMED: dict[str, Type] = {n: Scalar(c) for n, c in CANONICAL.items() if c != "void"}
# datashape names lazyk does not implement yet: refused by name, with or without [...].
_NOT_YET = frozenset(["categorical", "decimal", "map", "json", "object", "null", "units"])
_VOID_ONLY_RETURNED = "void is only allowed as a function's return type, as in '() -> void'"


class _Build(lark.Transformer):
    """One method per grammar rule; each builds a type object (or a list of parts)."""

    def __init__(self) -> None:
        super().__init__(visit_tokens=False)
        # The token of each ellipsis and function type built, so an error about one (a
        # second ellipsis in a list, a function as a tuple field) is reported there.
        self.tokens: dict[Type, Token] = {}

    # --- dimensions ---
    def fixed_dim(self, c: list) -> Type:
        try:
            return FixedDim(_int(c[0]), c[2])
        except ValueError as err:  # the sizes multiply past int64
            raise TokenError(str(err), c[0]) from None

    def named_dim(self, c: list) -> Type:
        tok = c[0]
        if tok == "var":
            return VarDim(c[2])
        if tok[0].isupper():
            return SymbolicDim(str(tok), c[2])
        raise TokenError(f"{tok!s} is not a dimension: use a size, 'var' or a capitalised name", tok)

    def _ellipsis(self, name: str | None, tok: Token, elem: Type) -> Type:
        d = elem
        while isinstance(d, (Dim, Option)):
            if isinstance(d, EllipsisDim):
                raise TokenError("two ellipses in one dimension list", self.tokens.get(d, tok))
            d = d.elem
        t = EllipsisDim(name, elem)
        self.tokens[t] = tok
        return t

    def ellipsis_dim(self, c: list) -> Type:
        return self._ellipsis(None, c[0], c[2])

    def named_ellipsis_dim(self, c: list) -> Type:
        tok = c[0]
        if not tok[0].isupper():
            raise TokenError(f"ellipsis name {tok!s} must be capitalised", tok)
        return self._ellipsis(str(tok), c[1], c[3])

    def option(self, c: list) -> Type:
        if isinstance(c[1], EllipsisDim):
            raise TokenError("an ellipsis cannot be optional", c[0])
        if isinstance(c[1], Option):
            raise TokenError(f"double option: {c[1]} is already optional", c[0])
        return Option(c[1])

    # --- element types ---
    def name(self, c: list) -> Type:
        tok = c[0]
        t = NAMED.get(tok)
        if t is not None:
            return t
        if tok == "void":
            raise TokenError(_VOID_ONLY_RETURNED, tok)
        name = _scalar_name(tok)
        if name is not None:
            return Scalar(name)
        if tok[0].isupper():
            return TypeVar(str(tok))
        if tok == "timedelta":
            return Timedelta()
        if tok in _NOT_YET:
            raise TokenError(f"{tok!s} is not supported yet", tok)
        if tok in CONSTRUCTORS:
            raise TokenError(f"{tok!s} needs arguments in [...]", tok)
        if tok == "var":
            raise TokenError("var is a dimension: write 'var * T'", tok)
        raise TokenError(f"unknown type name {tok!s}", tok)

    def ordered_name(self, c: list) -> Type:
        order, tok = c
        name = _scalar_name(tok)
        if name is None or Scalar(name).kind in "TSV":
            raise TokenError(f"byte order {order!s} applies to fixed-size scalars, not {tok!s}", tok)
        return Scalar(name, str(order))

    def constructor(self, c: list) -> Type:
        tok, args = c[0], c[2]
        build = CONSTRUCTORS.get(str(tok))
        if build is None:
            if tok in _NOT_YET:
                raise TokenError(f"{tok!s} is not supported yet", tok)
            if tok == "bytes":
                raise TokenError("bytes takes no arguments: N raw bytes are fixed_bytes[N]", tok)
            if _scalar_name(tok) or tok[0].isupper():
                raise TokenError(f"{tok!s} takes no arguments", tok)
            raise TokenError(f"unknown type constructor {tok!s}", tok)
        return build(tok, args)

    def record(self, c: list) -> Type:
        fields = c[1] if len(c) > 2 else []
        try:
            return Record(tuple([(f[0], f[1]) for f in fields]))
        except (ValueError, TypeError) as err:  # find the field at fault for the position
            seen = set()
            for name, t, tok in fields:
                if name in seen:
                    raise TokenError(f"duplicate field name {name!r}", tok) from None
                if isinstance(t, Function):
                    raise TokenError(f"field {name!r} is a function type; record fields hold "
                                "data", tok) from None
                seen.add(name)
            raise TokenError(str(err), c[0]) from None  # too large to address

    def field(self, c: list) -> tuple:
        tok = c[0]
        return (string_value(tok) if tok[0] in "'\"" else str(tok), c[2], tok)

    # --- lists (items, fields, args) ---
    def list_first(self, c: list) -> list:
        return c

    def list_more(self, c: list) -> list:
        c[0].append(c[2])
        return c[0]

    # --- tuples and functions ---
    def paren(self, c: list) -> tuple:
        return (c[1] if len(c) > 2 else [], c[0])  # (items, the '(' token)

    def keyword(self, c: list) -> tuple:
        return (c[0], c[2])  # (NAME token, value); ':' or '=' between

    def tuple(self, c: list) -> Type:
        items, lpar = c[0]
        for item in items:
            if isinstance(item, tuple):
                raise TokenError("keyword fields belong in function signatures, not tuples", item[0])
        try:
            return Tuple(tuple(items))
        except (ValueError, TypeError) as err:
            for item in items:
                if isinstance(item, Function):
                    raise TokenError("a tuple field cannot be a function type",
                                self.tokens.get(item, lpar)) from None
            raise TokenError(str(err), lpar) from None  # too large to address

    def function(self, c: list) -> Type:
        args, kwargs = [], []
        for item in c[0][0]:
            if isinstance(item, tuple):
                if any(str(item[0]) == n for n, _ in kwargs):
                    raise TokenError(f"duplicate keyword argument {item[0]!s}", item[0])
                kwargs.append((str(item[0]), item[1]))
            elif kwargs:
                raise TokenError("positional argument after a keyword argument", c[1])
            else:
                args.append(item)
        ret = c[2] if isinstance(c[2], Type) else _VOID  # the VOID keyword
        t = Function(tuple(args), tuple(kwargs), ret)
        self.tokens[t] = c[1]
        return t


# ---------------------------------------------------------------- constructors
def _bind(tok: Token, args: list, names: tuple[str, ...], required: int) -> list:
    """Match constructor arguments to parameter `names`; returns values in that order."""
    values: list = [None] * len(names)
    seen_kw = False
    for i, a in enumerate(args):
        if isinstance(a, tuple):
            seen_kw = True
            key = str(a[0])
            if key not in names:
                raise TokenError(f"{tok!s} has no argument {key!r}", a[0])
            j = names.index(key)
            if values[j] is not None:
                raise TokenError(f"argument {key!r} given twice", a[0])
            values[j] = a[1]
        elif seen_kw:
            raise TokenError("positional argument after a keyword argument", tok)
        elif i >= len(names):
            raise TokenError(f"{tok!s} takes at most {len(names)} argument(s)", tok)
        else:
            values[i] = a
    for j in range(required):
        if values[j] is None:
            raise TokenError(f"{tok!s} needs argument {names[j]!r}", tok)
    return values


# Tokens reach the Transformer as lark Tokens (slow path) or plain str (fast path), so
# their kind is read from the text: INT starts with a digit, STRING with a quote.
def _as_int(tok: Token, v: Any, what: str) -> int:
    if not (isinstance(v, str) and v[0].isdigit()):
        raise TokenError(f"{what} must be an integer", v if isinstance(v, str) else tok)
    return _int(v)


def _as_str(tok: Token, v: Any, what: str) -> str:
    if not (isinstance(v, str) and v[0] in "'\""):
        raise TokenError(f"{what} must be a quoted string", v if isinstance(v, str) else tok)
    return string_value(v)


def _as_type(tok: Token, v: Any, what: str) -> Type:
    if not isinstance(v, Type):
        raise TokenError(f"{what} must be a type", v if isinstance(v, Token) else tok)
    return v


def _checked(tok: Token, where: Any, build: Any, *args: Any) -> Type:
    try:
        return build(*args)
    except (ValueError, TypeError) as err:
        if isinstance(where, Type):  # a function type: point at its arrow
            where = BUILD.tokens.get(where)
        raise TokenError(str(err), where if isinstance(where, Token) else tok) from None


_ENCODING_ALIASES = {"utf-8": "utf8", "utf-16": "utf16", "utf-32": "utf32", "A": "ascii",
                     "U8": "utf8", "U16": "utf16", "U32": "utf32"}


def _fixed_string(tok: Token, args: list) -> Type:
    if len(args) == 1 and isinstance(args[0], str) and args[0][0] in "123456789":
        return FixedString(_int(args[0]))  # the common `fixed_string[N]`
    size, enc = _bind(tok, args, ("size", "encoding"), 1)
    n = _as_int(tok, size, "fixed_string size")
    if n == 0:
        raise TokenError("fixed_string size must be at least 1", size)
    e = "utf8" if enc is None else _as_str(tok, enc, "encoding")
    e = _ENCODING_ALIASES.get(e, e)
    return _checked(tok, enc, FixedString, n, e)


def _fixed_bytes(tok: Token, args: list) -> Type:
    size, align = _bind(tok, args, ("size", "align"), 1)
    n = _as_int(tok, size, "fixed_bytes size")
    if n == 0:
        raise TokenError("fixed_bytes size must be at least 1", size)
    a = 1 if align is None else _as_int(tok, align, "align")
    return _checked(tok, align, FixedBytes, n, a)


def _temporal(cls: Any) -> Any:
    def build(tok: Token, args: list) -> Type:
        (unit,) = _bind(tok, args, ("unit",), 0)
        u = "us" if unit is None else _as_str(tok, unit, "unit")
        return _checked(tok, unit, cls, u)
    return build


def _complex(tok: Token, args: list) -> Type:
    (base,) = _bind(tok, args, ("base",), 1)
    t = _as_type(tok, base, "complex base")
    if t is Scalar("float32"):
        return Scalar("complex64")
    if t is Scalar("float64"):
        return Scalar("complex128")
    raise TokenError("complex[...] takes float32 or float64", tok)


def _pointer(tok: Token, args: list) -> Type:
    (target,) = _bind(tok, args, ("target",), 1)
    return _checked(tok, target, Pointer, _as_type(tok, target, "pointer target"))


def _option(tok: Token, args: list) -> Type:
    (elem,) = _bind(tok, args, ("type",), 1)
    t = _as_type(tok, elem, "option type")
    if isinstance(t, EllipsisDim):
        raise TokenError("an ellipsis cannot be optional", tok)
    if isinstance(t, Option):
        raise TokenError(f"double option: {t} is already optional", tok)
    return _checked(tok, elem, Option, t)


def _string_constructor(tok: Token, args: list) -> Type:
    """datashape's `string[N]`, `string[N, 'enc']` (fixed_string) and `string['utf8']`."""
    if args and isinstance(args[0], str) and args[0][0] in "'\"":
        (enc,) = _bind(tok, args, ("encoding",), 1)
        if _ENCODING_ALIASES.get(string_value(enc), string_value(enc)) != "utf8":
            raise TokenError(f"string[{enc!s}] is not supported yet: variable-size strings are "
                        "utf8 (fixed_string[N, encoding] takes other encodings)", enc)
        return Scalar("string")
    return _fixed_string(tok, args)


CONSTRUCTORS = {
    "fixed_string": _fixed_string, "fixed_bytes": _fixed_bytes, "string": _string_constructor,
    "timedelta": _temporal(Timedelta), "datetime": _temporal(Datetime),
    "complex": _complex, "pointer": _pointer, "option": _option,
}

# ---------------------------------------------------------------- the parser
BUILD = _Build()
_GRAMMAR = resources.files("lazyk.grammar").joinpath("types.lark").read_text()
# The transformer runs inside the LALR parser, so no parse tree is ever built.
PARSER = lark.Lark(_GRAMMAR, parser="lalr", lexer="contextual", transformer=BUILD)

_TERMINALS = {
    "NAME": "a name", "INT": "an integer", "STRING": "a quoted string", "STAR": "'*'",
    "QMARK": "'?'", "ELLIPSIS": "'...'", "ARROW": "'->'", "ORDER": "a byte order",
    "EQ": "'='", "LPAR": "'('", "RPAR": "')'", "LBRACE": "'{'", "RBRACE": "'}'",
    "LSQB": "'['", "RSQB": "']'", "COMMA": "','", "COLON": "':'", "$END": "end of input",
}

_NESTING = re.compile(r"#[^\n]*|'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"|->|[()\[\]{}?*,]")


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def check_depth(text: str) -> None:
    """Reject nesting past MAX_DEPTH before parsing, pointing at the token that crosses it."""
    levels = [0]  # dims/options/arrows open at each bracket level
    for m in _NESTING.finditer(text):
        tok = m.group()
        if tok in "([{":
            levels.append(0)
        elif tok in ")]}":
            if len(levels) > 1:
                levels.pop()
        elif tok == ",":
            levels[-1] = 0
        elif tok in ("*", "?", "->"):
            levels[-1] += 1
        else:
            continue
        if len(levels) + sum(levels) > MAX_DEPTH:  # (the element under them: one more)
            line, col = _position(text, m.start())
            raise TypeParseError(f"type nested deeper than {MAX_DEPTH} levels", text, line, col)


def unclosed(text: str) -> str:
    """' (unclosed '(' at line L, column C)' for the innermost open bracket, else ''."""
    opened: list[int] = []
    for m in _NESTING.finditer(text):
        if m.group() in ("(", "[", "{"):
            opened.append(m.start())
        elif m.group() in (")", "]", "}") and opened:
            opened.pop()
    if not opened:
        return ""
    line, col = _position(text, opened[-1])
    return f" (unclosed {text[opened[-1]]!r} at line {line}, column {col})"


def end_position(text: str) -> tuple[int, int]:
    """Where 'end of input' is: just after the last non-blank, non-comment character."""
    stripped = re.sub(r"#[^\n]*", lambda m: " " * len(m.group()), text).rstrip()
    return _position(text, len(stripped))


_TYPE_START = {"NAME", "LPAR", "LBRACE", "QMARK"}


def describe_expected(expected: Any) -> str:
    if _TYPE_START <= set(expected):
        return "a type"
    names = sorted({_TERMINALS.get(e, e) for e in expected})
    return ", ".join(names)

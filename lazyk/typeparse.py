"""Type strings -> type objects: the Transformer, `dshape()` and its parse cache, `describe()`."""
from __future__ import annotations

import re
from importlib import resources
from typing import Any

import lark
import numpy as np
from lark import Token

from lazyk.elemtypes import (
    Datetime,
    FixedBytes,
    FixedString,
    Pointer,
    Record,
    Timedelta,
    Tuple,
    TypeVar,
    from_numpy,
)
from lazyk.errors import TypeParseError
from lazyk.typebase import (
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
    quote_name,
)

_ALIASES = {"int": "int32", "real": "float64", "complex": "complex128"}
_VOID = Scalar("void")
_INT64_MAX = 2**63 - 1


class _Fail(Exception):
    """Raised inside the Transformer; dshape() turns it into a positioned TypeParseError."""

    def __init__(self, message: str, token: Any):
        super().__init__(message)
        self.message = message
        self.token = token


def _int(tok: Token) -> int:
    """An INT token as an int: no leading zeros, fits int64."""
    if len(tok) > 1 and tok[0] == "0":
        raise _Fail(f"leading zeros are not allowed in {tok!s}", tok)
    value = int(tok)
    if value > _INT64_MAX:
        raise _Fail(f"{tok!s} overflows int64", tok)
    return value


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"'}
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2}|.)")


def _string(tok: Token) -> str:
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
        raise _Fail(f"bad escape \\{esc} in string", tok)

    return _ESCAPE.sub(repl, body)


# Every scalar name and alias -> its plain-str canonical name (tokens are str subclasses).
_CANONICAL = {**{n: n for n in SCALAR_NAMES}, **_ALIASES}


def _scalar_name(tok: Token) -> str | None:
    return _CANONICAL.get(tok)


# Plain names that always mean the same type: one dict look-up in the parse loop.
# `void` is left out: it is only a function's return type (the VOID keyword after `->`).
_NAMED: dict[str, Type] = {n: Scalar(c) for n, c in _CANONICAL.items() if c != "void"}
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
            raise _Fail(str(err), c[0]) from None

    def named_dim(self, c: list) -> Type:
        tok = c[0]
        if tok == "var":
            return VarDim(c[2])
        if tok[0].isupper():
            return SymbolicDim(str(tok), c[2])
        raise _Fail(f"{tok!s} is not a dimension: use a size, 'var' or a capitalised name", tok)

    def _ellipsis(self, name: str | None, tok: Token, elem: Type) -> Type:
        d = elem
        while isinstance(d, (Dim, Option)):
            if isinstance(d, EllipsisDim):
                raise _Fail("two ellipses in one dimension list", self.tokens.get(d, tok))
            d = d.elem
        t = EllipsisDim(name, elem)
        self.tokens[t] = tok
        return t

    def ellipsis_dim(self, c: list) -> Type:
        return self._ellipsis(None, c[0], c[2])

    def named_ellipsis_dim(self, c: list) -> Type:
        tok = c[0]
        if not tok[0].isupper():
            raise _Fail(f"ellipsis name {tok!s} must be capitalised", tok)
        return self._ellipsis(str(tok), c[1], c[3])

    def option(self, c: list) -> Type:
        if isinstance(c[1], EllipsisDim):
            raise _Fail("an ellipsis cannot be optional", c[0])
        if isinstance(c[1], Option):
            raise _Fail(f"double option: {c[1]} is already optional", c[0])
        return Option(c[1])

    # --- element types ---
    def name(self, c: list) -> Type:
        tok = c[0]
        t = _NAMED.get(tok)
        if t is not None:
            return t
        if tok == "void":
            raise _Fail(_VOID_ONLY_RETURNED, tok)
        name = _scalar_name(tok)
        if name is not None:
            return Scalar(name)
        if tok[0].isupper():
            return TypeVar(str(tok))
        if tok == "timedelta":
            return Timedelta()
        if tok in _NOT_YET:
            raise _Fail(f"{tok!s} is not supported yet", tok)
        if tok in _CONSTRUCTORS:
            raise _Fail(f"{tok!s} needs arguments in [...]", tok)
        if tok == "var":
            raise _Fail("var is a dimension: write 'var * T'", tok)
        raise _Fail(f"unknown type name {tok!s}", tok)

    def ordered_name(self, c: list) -> Type:
        order, tok = c
        name = _scalar_name(tok)
        if name is None or Scalar(name).kind in "TSV":
            raise _Fail(f"byte order {order!s} applies to fixed-size scalars, not {tok!s}", tok)
        return Scalar(name, str(order))

    def constructor(self, c: list) -> Type:
        tok, args = c[0], c[2]
        build = _CONSTRUCTORS.get(str(tok))
        if build is None:
            if tok in _NOT_YET:
                raise _Fail(f"{tok!s} is not supported yet", tok)
            if tok == "bytes":
                raise _Fail("bytes takes no arguments: N raw bytes are fixed_bytes[N]", tok)
            if _scalar_name(tok) or tok[0].isupper():
                raise _Fail(f"{tok!s} takes no arguments", tok)
            raise _Fail(f"unknown type constructor {tok!s}", tok)
        return build(tok, args)

    def record(self, c: list) -> Type:
        fields = c[1] if len(c) > 2 else []
        try:
            return Record(tuple([(f[0], f[1]) for f in fields]))
        except (ValueError, TypeError) as err:  # find the field at fault for the position
            seen = set()
            for name, t, tok in fields:
                if name in seen:
                    raise _Fail(f"duplicate field name {name!r}", tok) from None
                if isinstance(t, Function):
                    raise _Fail(f"field {name!r} is a function type; record fields hold "
                                "data", tok) from None
                seen.add(name)
            raise _Fail(str(err), c[0]) from None  # too large to address

    def field(self, c: list) -> tuple:
        tok = c[0]
        return (_string(tok) if tok[0] in "'\"" else str(tok), c[2], tok)

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
                raise _Fail("keyword fields belong in function signatures, not tuples", item[0])
        try:
            return Tuple(tuple(items))
        except (ValueError, TypeError) as err:
            for item in items:
                if isinstance(item, Function):
                    raise _Fail("a tuple field cannot be a function type",
                                self.tokens.get(item, lpar)) from None
            raise _Fail(str(err), lpar) from None  # too large to address

    def function(self, c: list) -> Type:
        args, kwargs = [], []
        for item in c[0][0]:
            if isinstance(item, tuple):
                if any(str(item[0]) == n for n, _ in kwargs):
                    raise _Fail(f"duplicate keyword argument {item[0]!s}", item[0])
                kwargs.append((str(item[0]), item[1]))
            elif kwargs:
                raise _Fail("positional argument after a keyword argument", c[1])
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
                raise _Fail(f"{tok!s} has no argument {key!r}", a[0])
            j = names.index(key)
            if values[j] is not None:
                raise _Fail(f"argument {key!r} given twice", a[0])
            values[j] = a[1]
        elif seen_kw:
            raise _Fail("positional argument after a keyword argument", tok)
        elif i >= len(names):
            raise _Fail(f"{tok!s} takes at most {len(names)} argument(s)", tok)
        else:
            values[i] = a
    for j in range(required):
        if values[j] is None:
            raise _Fail(f"{tok!s} needs argument {names[j]!r}", tok)
    return values


# Tokens reach the Transformer as lark Tokens (slow path) or plain str (fast path), so
# their kind is read from the text: INT starts with a digit, STRING with a quote.
def _as_int(tok: Token, v: Any, what: str) -> int:
    if not (isinstance(v, str) and v[0].isdigit()):
        raise _Fail(f"{what} must be an integer", v if isinstance(v, str) else tok)
    return _int(v)


def _as_str(tok: Token, v: Any, what: str) -> str:
    if not (isinstance(v, str) and v[0] in "'\""):
        raise _Fail(f"{what} must be a quoted string", v if isinstance(v, str) else tok)
    return _string(v)


def _as_type(tok: Token, v: Any, what: str) -> Type:
    if not isinstance(v, Type):
        raise _Fail(f"{what} must be a type", v if isinstance(v, Token) else tok)
    return v


def _checked(tok: Token, where: Any, build: Any, *args: Any) -> Type:
    try:
        return build(*args)
    except (ValueError, TypeError) as err:
        if isinstance(where, Type):  # a function type: point at its arrow
            where = _BUILD.tokens.get(where)
        raise _Fail(str(err), where if isinstance(where, Token) else tok) from None


_ENCODING_ALIASES = {"utf-8": "utf8", "utf-16": "utf16", "utf-32": "utf32", "A": "ascii",
                     "U8": "utf8", "U16": "utf16", "U32": "utf32"}


def _fixed_string(tok: Token, args: list) -> Type:
    if len(args) == 1 and isinstance(args[0], str) and args[0][0] in "123456789":
        return FixedString(_int(args[0]))  # the common `fixed_string[N]`
    size, enc = _bind(tok, args, ("size", "encoding"), 1)
    n = _as_int(tok, size, "fixed_string size")
    if n == 0:
        raise _Fail("fixed_string size must be at least 1", size)
    e = "utf8" if enc is None else _as_str(tok, enc, "encoding")
    e = _ENCODING_ALIASES.get(e, e)
    return _checked(tok, enc, FixedString, n, e)


def _fixed_bytes(tok: Token, args: list) -> Type:
    size, align = _bind(tok, args, ("size", "align"), 1)
    n = _as_int(tok, size, "fixed_bytes size")
    if n == 0:
        raise _Fail("fixed_bytes size must be at least 1", size)
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
    raise _Fail("complex[...] takes float32 or float64", tok)


def _pointer(tok: Token, args: list) -> Type:
    (target,) = _bind(tok, args, ("target",), 1)
    return _checked(tok, target, Pointer, _as_type(tok, target, "pointer target"))


def _option(tok: Token, args: list) -> Type:
    (elem,) = _bind(tok, args, ("type",), 1)
    t = _as_type(tok, elem, "option type")
    if isinstance(t, EllipsisDim):
        raise _Fail("an ellipsis cannot be optional", tok)
    if isinstance(t, Option):
        raise _Fail(f"double option: {t} is already optional", tok)
    return _checked(tok, elem, Option, t)


def _string_constructor(tok: Token, args: list) -> Type:
    """datashape's `string[N]`, `string[N, 'enc']` (fixed_string) and `string['utf8']`."""
    if args and isinstance(args[0], str) and args[0][0] in "'\"":
        (enc,) = _bind(tok, args, ("encoding",), 1)
        if _ENCODING_ALIASES.get(_string(enc), _string(enc)) != "utf8":
            raise _Fail(f"string[{enc!s}] is not supported yet: variable-size strings are "
                        "utf8 (fixed_string[N, encoding] takes other encodings)", enc)
        return Scalar("string")
    return _fixed_string(tok, args)


_CONSTRUCTORS = {
    "fixed_string": _fixed_string, "fixed_bytes": _fixed_bytes, "string": _string_constructor,
    "timedelta": _temporal(Timedelta), "datetime": _temporal(Datetime),
    "complex": _complex, "pointer": _pointer, "option": _option,
}

# ---------------------------------------------------------------- the parser
_BUILD = _Build()
_GRAMMAR = resources.files("lazyk.grammar").joinpath("types.lark").read_text()
# The transformer runs inside the LALR parser, so no parse tree is ever built.
_PARSER = lark.Lark(_GRAMMAR, parser="lalr", lexer="contextual", transformer=_BUILD)

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


def _check_depth(text: str) -> None:
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
        if len(levels) + sum(levels) > MAX_DEPTH + 1:
            line, col = _position(text, m.start())
            raise TypeParseError(f"type nested deeper than {MAX_DEPTH} levels", text, line, col)


def _unclosed(text: str) -> str:
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


def _end_position(text: str) -> tuple[int, int]:
    """Where 'end of input' is: just after the last non-blank, non-comment character."""
    stripped = re.sub(r"#[^\n]*", lambda m: " " * len(m.group()), text).rstrip()
    return _position(text, len(stripped))


_TYPE_START = {"NAME", "LPAR", "LBRACE", "QMARK"}


def _describe_expected(expected: Any) -> str:
    if _TYPE_START <= set(expected):
        return "a type"
    names = sorted({_TERMINALS.get(e, e) for e in expected})
    return ", ".join(names)


# ---------------------------------------------------------------- fast path
# NOTE: lark's own lexer and parser loop cost ~190 us for a 100-character type (token
# objects, contextual lexer states). The fast path splits the text with one regex and
# parses the plain-str tokens by recursive descent, building the same objects through the
# same constructors and Transformer methods. It handles only input that parses: on
# anything else it gives up (_Bail, or any other exception) and lark's full machinery
# parses again and reports the error with line and column, so the messages are lark's.
_IGNORED = frozenset(_PARSER.ignore_tokens)
_TERMS = sorted(_PARSER.terminals,
                key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name))
# NOTE: findall splits the whole text in C (~3 us per 100 chars); a regex of named groups
# matched token by token costs ~0.5 us a token. The last `.` catches any other character,
# so tokens cover the text with no gaps and a stray character reaches _kind as an error;
# only trailing blanks go unmatched.
# The terminals' first characters are disjoint, so alternatives may go in any order:
# names first, then one class for all one-character literals, then the rest. The keyword
# `void` splits and classifies as a NAME (NAME comes first); the parser checks the text.
_ONE_CHAR = [t for t in _TERMS if t.pattern.type == "str" and len(t.pattern.value) == 1]
_OTHERS = sorted((t for t in _TERMS if t not in _ONE_CHAR and t.name not in _IGNORED),
                 key=lambda t: (t.name != "NAME", t.name != "INT"))
# NOTE: only blanks go in the skipping prefix: a comment there could give characters back
# on backtracking (`# done` at the end would leave `e` as a token); in the group it is a
# token whose kind is '' and the loop skips it.
_BLANKS = [t.pattern.to_regexp() for t in _TERMS
           if t.name in _IGNORED and re.fullmatch(t.pattern.to_regexp(), " ")]
_SPLIT_RE = re.compile(
    "(?:" + "|".join(_BLANKS) + ")?("
    + "|".join([_OTHERS[0].pattern.to_regexp(),
                "[" + "".join(re.escape(t.pattern.value) for t in _ONE_CHAR) + "]"]
               + [t.pattern.to_regexp() for t in _OTHERS[1:]]
               + [t.pattern.to_regexp() for t in _TERMS if t.name in _IGNORED])
    + "|.)", re.DOTALL)
_FULL = [(t.name, re.compile(t.pattern.to_regexp()))
         for t in sorted(_TERMS, key=lambda t: (t.name != "NAME", t.name != "INT"))]
_KINDS: dict[str, str] = {}


def _kind(tok: str) -> str:
    """The terminal name of one token text ('' for blanks and comments), cached."""
    for name, pattern in _FULL:
        if pattern.fullmatch(tok):
            kind = "" if name in _IGNORED else name
            break
    else:
        raise ValueError(f"no token {tok!r}")
    if len(_KINDS) < 4096:
        _KINDS[tok] = kind
    return kind


class _Bail(Exception):
    """The fast path does not build this text: lark parses it (or reports the error)."""


# The fast parser: one function per grammar rule of grammar/types.lark. Each takes the
# token texts `v`, their kinds `k` (padded with "$END" so lookahead never runs off) and the
# index of its first token; it returns (value, index after its last token). Rare forms
# (ellipses, constructors, byte orders, functions) call the Transformer's own methods with
# the children lark would pass them; common ones build directly, giving up wherever the
# Transformer would raise an error.
def _fast_type(v: list, k: tuple, i: int) -> tuple:
    """type: datashape | paren ARROW (type | VOID)."""
    if k[i] == "LPAR":
        items, j = _fast_paren(v, k, i)
        if k[j] == "ARROW":
            if v[j + 1] == "void":
                return _BUILD.function([(items, v[i]), v[j], v[j + 1]]), j + 2
            ret, n = _fast_type(v, k, j + 1)
            return _BUILD.function([(items, v[i]), v[j], ret]), n
        return _fast_tuple(items), j
    return _fast_datashape(v, k, i)


def _fast_datashape(v: list, k: tuple, i: int) -> tuple:
    kind = k[i]
    if kind == "NAME":
        after = k[i + 1]
        if after == "STAR":  # named_dim
            elem, j = _fast_datashape(v, k, i + 2)
            name = v[i]
            if name == "var":
                return VarDim(elem), j
            if name[0].isupper():
                return SymbolicDim(name, elem), j
            raise _Bail
        if after == "LSQB":
            args, j = _fast_args(v, k, i + 2)
            return _BUILD.constructor([v[i], v[i + 1], args]), j
        if after == "ELLIPSIS":
            if k[i + 2] != "STAR":
                raise _Bail
            elem, j = _fast_datashape(v, k, i + 3)
            return _BUILD.named_ellipsis_dim([v[i], v[i + 1], v[i + 2], elem]), j
        t = _NAMED.get(v[i])
        return (_BUILD.name([v[i]]) if t is None else t), i + 1
    if kind == "INT":  # fixed_dim
        if k[i + 1] != "STAR":
            raise _Bail
        elem, j = _fast_datashape(v, k, i + 2)
        size = v[i]
        if size[0] == "0" and len(size) > 1:  # leading zeros
            raise _Bail
        return FixedDim(int(size), elem), j
    if kind == "QMARK":  # option
        elem, j = _fast_datashape(v, k, i + 1)
        if elem.__class__ is Option or elem.__class__ is EllipsisDim:
            raise _Bail
        return Option(elem), j
    if kind == "LBRACE":
        return _fast_record(v, k, i)
    if kind == "LPAR":
        items, j = _fast_paren(v, k, i)
        return _fast_tuple(items), j
    if kind == "ELLIPSIS":
        if k[i + 1] != "STAR":
            raise _Bail
        elem, j = _fast_datashape(v, k, i + 2)
        return _BUILD.ellipsis_dim([v[i], v[i + 1], elem]), j
    if (kind == "ORDER" or kind == "EQ") and k[i + 1] == "NAME":
        return _BUILD.ordered_name([v[i], v[i + 1]]), i + 2
    raise _Bail


def _fast_record(v: list, k: tuple, i: int) -> tuple:
    """LBRACE [field (COMMA field)* [COMMA]] RBRACE, field: (NAME | STRING) COLON type."""
    fields = []
    j = i + 1
    if k[j] != "RBRACE":
        while True:
            if k[j + 1] != "COLON":
                raise _Bail
            kind = k[j]
            if kind == "NAME":
                name = v[j]
            elif kind == "STRING":
                name = _string(v[j])
            else:
                raise _Bail
            t, j = _fast_type(v, k, j + 2)
            fields.append((name, t))
            kind = k[j]
            if kind == "COMMA":
                j += 1
                if k[j] == "RBRACE":
                    break
            elif kind == "RBRACE":
                break
            else:
                raise _Bail
    return Record(tuple(fields)), j + 1


def _fast_paren(v: list, k: tuple, i: int) -> tuple:
    """LPAR [item (COMMA item)* [COMMA]] RPAR, item: type | NAME COLON type; the items."""
    items: list = []
    j = i + 1
    if k[j] == "RPAR":
        return items, j + 1
    while True:
        if k[j] == "NAME" and k[j + 1] == "COLON":
            t, j2 = _fast_type(v, k, j + 2)
            items.append((v[j], t))  # a keyword, as the Transformer's keyword()
        else:
            t, j2 = _fast_type(v, k, j)
            items.append(t)
        j = j2 + 1
        kind = k[j2]
        if kind == "RPAR" or (kind == "COMMA" and k[j] == "RPAR"):
            return items, j + (kind == "COMMA")
        if kind != "COMMA":
            raise _Bail


def _fast_tuple(items: list) -> Type:
    for item in items:
        if item.__class__ is tuple:  # a keyword field
            raise _Bail
    return Tuple(tuple(items))


def _fast_args(v: list, k: tuple, j: int) -> tuple:
    """arg (COMMA arg)* [COMMA] RSQB, arg: value | NAME EQ value; the argument list."""
    args: list = []
    while True:
        if k[j] == "NAME" and k[j + 1] == "EQ":
            value, j2 = _fast_value(v, k, j + 2)
            args.append((v[j], value))  # a keyword, as the Transformer's keyword()
        else:
            value, j2 = _fast_value(v, k, j)
            args.append(value)
        j = j2 + 1
        kind = k[j2]
        if kind == "RSQB" or (kind == "COMMA" and k[j] == "RSQB"):
            return args, j + (kind == "COMMA")
        if kind != "COMMA":
            raise _Bail


def _fast_value(v: list, k: tuple, i: int) -> tuple:
    """value: type | INT | STRING (tokens stay text, as lark passes them)."""
    kind = k[i]
    if kind == "STRING" or (kind == "INT" and k[i + 1] != "STAR"):
        return v[i], i + 1
    return _fast_type(v, k, i)


_PAD = ("$END",) * 4


def _fast_parse(text: str) -> Type:
    """Split `text` and parse it by recursive descent; raises on anything unusual."""
    values = _SPLIT_RE.findall(text)
    key = tuple(map(_KINDS.get, values))  # in C; None marks a token not classified yet
    if None in key:
        key = tuple([_KINDS.get(v) if v in _KINDS else _kind(v) for v in values])
    if "" in key:  # drop comments and trailing blanks
        values = [v for k, v in zip(key, values) if k]
        key = tuple([k for k in key if k])
    if len(key) > MAX_DEPTH:  # enough tokens to nest too deep (and to recurse too far)
        _check_depth(text)
    t, i = _fast_type(values, key + _PAD, 0)
    if i != len(key):
        raise _Bail
    return t


def parse(text: str) -> Type:
    """Parse one type string (no cache). Raises TypeParseError with line/column."""
    try:
        return _fast_parse(text)
    except Exception:  # noqa: BLE001 - the slow path below re-parses and reports properly
        _BUILD.tokens.clear()
    return _slow_parse(text)


def _slow_parse(text: str) -> Type:
    """lark's own parse: slower, but every error carries a token with its position."""
    if not text.strip() or not re.sub(r"#[^\n]*", "", text).strip():
        raise TypeParseError("empty type", text, 1, 1)
    _check_depth(text)
    _BUILD.tokens.clear()
    try:
        return _PARSER.parse(text)
    except _Fail as err:
        raise _error(text, err.message, err.token) from None
    except lark.exceptions.VisitError as err:
        orig = err.orig_exc
        if isinstance(orig, _Fail):
            raise _error(text, orig.message, orig.token) from None
        raise _error(text, str(orig), None) from None
    except lark.exceptions.UnexpectedToken as err:
        tok = err.token
        stack = getattr(err.state, "value_stack", None) or [None]
        last = stack[-1]
        if isinstance(last, Token) and last.type == "INT" and set(err.expected) == {"STAR"}:
            raise TypeParseError(f"dimension {last!s} has no dtype after it: dimensions come "
                                 "before the dtype, as in '3 * int32'",
                                 text, last.line, last.column) from None
        if tok.type == "$END":
            line, col = _end_position(text)
            raise TypeParseError("unexpected end of input; expected "
                                 + _describe_expected(err.expected) + _unclosed(text),
                                 text, line, col) from None
        if tok.type == "STAR":
            msg = "dimension after the dtype: dimensions come first, as in '3 * int32'"
        else:
            msg = f"unexpected {str(tok)!r}; expected {_describe_expected(err.expected)}"
        raise TypeParseError(msg, text, tok.line, tok.column) from None
    except lark.exceptions.UnexpectedCharacters as err:
        ch = text[err.pos_in_stream] if err.pos_in_stream < len(text) else ""
        raise TypeParseError(f"unexpected character {ch!r}", text,
                             err.line, err.column) from None
    except ValueError as err:  # a constructor's own check with no token at hand
        raise TypeParseError(str(err), text, 1, 1) from None
    finally:
        _BUILD.tokens.clear()


def _error(text: str, message: str, tok: Any) -> TypeParseError:
    if isinstance(tok, Token) and tok.line is not None:
        return TypeParseError(message, text, tok.line, tok.column)
    return TypeParseError(message, text, 1, 1)


# Fixed words of the language (literal terminals, scalar names, constructors) are always
# known to the lexer; clear_cache() resets the token-kind cache to these.
_SEED_KINDS = {w: _kind(w) for w in [
    *(t.pattern.value for t in _TERMS if t.pattern.type == "str"),
    *_CANONICAL, *_CONSTRUCTORS, "var", "timedelta"]}

_CACHE: dict[str, Type] = {}
_PY_SCALARS = (bool, int, float, complex)
_CACHE_LIMIT = 10_000


def dshape(text: Any) -> Type:
    """A type from its string (cached), a NumPy dtype, or a type (returned as is).

    Raises:
        TypeParseError: for a malformed string, with line, column and a caret.

    Example: `dshape('3 * var * {x: int32, y: ?float64}')`.
    """
    t = _CACHE.get(text) if text.__class__ is str else None
    if t is not None:
        return t
    if isinstance(text, str):
        t = parse(text)
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.clear()
        _CACHE[text] = t
        return t
    if isinstance(text, Type):
        return text
    if isinstance(text, np.dtype) or (isinstance(text, type) and (
            text in _PY_SCALARS or issubclass(text, np.generic))):
        return from_numpy(text)
    # NOTE: np.dtype() would take much more (None as float64, 123 or a list with its own
    # puzzling message); anything else is refused here, by its type.
    raise TypeError(f"dshape() takes a type string, a lazyk type, a NumPy dtype or scalar "
                    f"type (np.float64, int, float, bool, complex), not {type(text).__name__}"
                    f" {text!r:.60}")


def clear_cache(tokens: bool = True) -> None:
    """Forget cached parses; with `tokens` also the kinds of words seen so far (the
    language's own words stay known).

    Benchmarks use `clear_cache(tokens=False)` (a new text made of known words) and
    `clear_cache()` (nothing seen).
    """
    _CACHE.clear()
    if tokens:
        _KINDS.clear()
        _KINDS.update(_SEED_KINDS)


# ---------------------------------------------------------------- describe
def _tree(t: Type, indent: str, label: str, out: list[str]) -> None:
    kids: list[tuple[str, Type]] = []
    if isinstance(t, FixedDim):
        head = f"fixed dimension, size {t.size}"
        kids = [("", t.elem)]
    elif isinstance(t, VarDim):
        head, kids = "var dimension", [("", t.elem)]
    elif isinstance(t, SymbolicDim):
        head, kids = f"symbolic dimension {t.name}", [("", t.elem)]
    elif isinstance(t, EllipsisDim):
        head, kids = f"ellipsis {t.name or ''}".rstrip(), [("", t.elem)]
    elif isinstance(t, Option):
        head, kids = "option", [("", t.elem)]
    elif isinstance(t, Record):
        head = f"record, {len(t.fields)} field(s)"
        kids = [(f"{quote_name(n)}: ", x) for n, x in t.fields]
    elif isinstance(t, Tuple):
        head, kids = f"tuple, {len(t.types)} field(s)", [(f"{i}: ", x)
                                                         for i, x in enumerate(t.types)]
    elif isinstance(t, Function):
        head = "function"
        kids = ([(f"arg {i}: ", x) for i, x in enumerate(t.args)]
                + [(f"keyword {n}: ", x) for n, x in t.kwargs] + [("returns: ", t.ret)])
    elif isinstance(t, Pointer):
        head, kids = "pointer", [("", t.target)]
    elif isinstance(t, TypeVar):
        head = f"type variable {t.name}"
    elif isinstance(t, Scalar):
        order = {"=": "", "|": "", "<": "little-endian", ">": "big-endian"}[t.byteorder]
        head = f"scalar {t.name}" + (f" ({order})" if order else "")
    else:
        head = str(t)
    out.append(f"{indent}{label}{head}")
    for lab, kid in kids:
        _tree(kid, indent + "  ", lab, out)


def describe(text: str) -> str:
    """Canonical form, an indented tree and (for concrete types) size facts, for `lazyk parse`."""
    t = dshape(text)
    out = [str(t)]
    _tree(t, "  ", "", out)
    if isinstance(t, Function):
        out.append("function: no itemsize")
    elif t.is_symbolic:
        out.append(f"symbolic: no itemsize  ndim: {t.ndim}")
    else:
        out.append(f"itemsize: {t.itemsize}  alignment: {t.alignment}  ndim: {t.ndim}")
    return "\n".join(out)

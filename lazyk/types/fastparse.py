"""The fast path of the type parser: one regex splits the text, recursive descent builds
the type through the same constructors and Transformer methods as lark's parse
(`lazyk.types.build`). It handles only text that parses; anything else raises and
`lazyk.types.parse` lets lark parse it again and report the error.
"""
from __future__ import annotations

import re

from lazyk.types.base import (
    MAX_DEPTH,
    EllipsisDim,
    FixedDim,
    Option,
    SymbolicDim,
    Type,
    VarDim,
)
from lazyk.types.build import (
    BUILD,
    CANONICAL,
    CONSTRUCTORS,
    NAMED,
    PARSER,
    check_depth,
    string_value,
)
from lazyk.types.elements import Record, Tuple

# NOTE: lark's own lexer and parser loop cost ~190 us for a 100-character type (token
# objects, contextual lexer states). The fast path splits the text with one regex and
# parses the plain-str tokens by recursive descent, building the same objects through the
# same constructors and Transformer methods. It handles only input that parses: on
# anything else it gives up (_Bail, or any other exception) and lark's full machinery
# parses again and reports the error with line and column, so the messages are lark's.
_IGNORED = frozenset(PARSER.ignore_tokens)
_TERMS = sorted(PARSER.terminals,
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
                return BUILD.function([(items, v[i]), v[j], v[j + 1]]), j + 2
            ret, n = _fast_type(v, k, j + 1)
            return BUILD.function([(items, v[i]), v[j], ret]), n
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
            return BUILD.constructor([v[i], v[i + 1], args]), j
        if after == "ELLIPSIS":
            if k[i + 2] != "STAR":
                raise _Bail
            elem, j = _fast_datashape(v, k, i + 3)
            return BUILD.named_ellipsis_dim([v[i], v[i + 1], v[i + 2], elem]), j
        t = NAMED.get(v[i])
        return (BUILD.name([v[i]]) if t is None else t), i + 1
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
        return BUILD.ellipsis_dim([v[i], v[i + 1], elem]), j
    if (kind == "ORDER" or kind == "EQ") and k[i + 1] == "NAME":
        return BUILD.ordered_name([v[i], v[i + 1]]), i + 2
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
                name = string_value(v[j])
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


def fast_parse(text: str) -> Type:
    """Split `text` and parse it by recursive descent; raises on anything unusual."""
    values = _SPLIT_RE.findall(text)
    key = tuple(map(_KINDS.get, values))  # in C; None marks a token not classified yet
    if None in key:
        key = tuple([_KINDS.get(v) if v in _KINDS else _kind(v) for v in values])
    if "" in key:  # drop comments and trailing blanks
        values = [v for k, v in zip(key, values) if k]
        key = tuple([k for k in key if k])
    if len(key) > MAX_DEPTH:  # enough tokens to nest too deep (and to recurse too far)
        check_depth(text)
    t, i = _fast_type(values, key + _PAD, 0)
    if i != len(key):
        raise _Bail
    return t


# Fixed words of the language (literal terminals, scalar names, constructors) are always
# known to the lexer; clear_kinds() resets the token-kind cache to these.
_SEED_KINDS = {w: _kind(w) for w in [
    *(t.pattern.value for t in _TERMS if t.pattern.type == "str"),
    *CANONICAL, *CONSTRUCTORS, "var", "timedelta"]}


def clear_kinds() -> None:
    """Forget the kinds of words seen so far (the language's own words stay known)."""
    _KINDS.clear()
    _KINDS.update(_SEED_KINDS)

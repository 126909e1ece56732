"""Type strings -> type objects: `parse` (the fast path of `lazyk.types.fastparse`, else lark's parser
of `lazyk.types.build` with positioned errors), `dshape()` and its parse cache, `describe()`."""
from __future__ import annotations

import re
from typing import Any

import lark
import numpy as np
from lark import Token

from lazyk.errors import TypeParseError
from lazyk.lru import Memo
from lazyk.types.base import (
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
from lazyk.types.build import (
    BUILD,
    PARSER,
    TokenError,
    check_depth,
    describe_expected,
    end_position,
    unclosed,
)
from lazyk.types.elements import Pointer, Record, Tuple, TypeVar, from_numpy
from lazyk.types.fastparse import clear_kinds, fast_parse


def parse(text: str) -> Type:
    """Parse one type string (no cache). Raises TypeParseError with line/column."""
    try:
        return fast_parse(text)
    except Exception:  # noqa: BLE001 - the slow path below re-parses and reports properly
        BUILD.tokens.clear()
    return _slow_parse(text)


def _slow_parse(text: str) -> Type:
    """lark's own parse: slower, but every error carries a token with its position."""
    if not text.strip() or not re.sub(r"#[^\n]*", "", text).strip():
        raise TypeParseError("empty type", text, 1, 1)
    check_depth(text)
    BUILD.tokens.clear()
    try:
        return PARSER.parse(text)
    except TokenError as err:
        raise _error(text, err.message, err.token) from None
    except lark.exceptions.VisitError as err:
        orig = err.orig_exc
        if isinstance(orig, TokenError):
            raise _error(text, orig.message, orig.token) from None
        raise _error(text, str(orig), None) from None
    except lark.exceptions.UnexpectedToken as err:
        tok = err.token
        stack = getattr(err.state, "value_stack", None) or [None]
        last = stack[-1]
        if isinstance(last, Token) and last.type == "INT" and set(err.expected) == {"STAR"}:
            if tok.type != "$END" and (tok.line, tok.column) == (last.line,
                                                                 last.column + len(last)):
                raise TypeParseError(f"unexpected {str(tok)[:1]!r} in the dimension "
                                     f"{last!s}{str(tok)}: a dimension is a whole number in "
                                     "decimal, as in '16 * int8'",
                                     text, tok.line, tok.column) from None
            raise TypeParseError(f"dimension {last!s} has no dtype after it: dimensions come "
                                 "before the dtype, as in '3 * int32'",
                                 text, last.line, last.column) from None
        if tok.type == "$END":
            line, col = end_position(text)
            raise TypeParseError("unexpected end of input; expected "
                                 + describe_expected(err.expected) + unclosed(text),
                                 text, line, col) from None
        if tok.type == "STAR":
            msg = "dimension after the dtype: dimensions come first, as in '3 * int32'"
        else:
            msg = f"unexpected {str(tok)!r}; expected {describe_expected(err.expected)}"
        raise TypeParseError(msg, text, tok.line, tok.column) from None
    except lark.exceptions.UnexpectedCharacters as err:
        ch = text[err.pos_in_stream] if err.pos_in_stream < len(text) else ""
        raise TypeParseError(f"unexpected character {ch!r}", text,
                             err.line, err.column) from None
    except ValueError as err:  # a constructor's own check with no token at hand
        raise TypeParseError(str(err), text, 1, 1) from None
    finally:
        BUILD.tokens.clear()


def _error(text: str, message: str, tok: Any) -> TypeParseError:
    if isinstance(tok, Token) and tok.line is not None:
        return TypeParseError(message, text, tok.line, tok.column)
    return TypeParseError(message, text, 1, 1)

_CACHE = Memo(10_000, "parsed types")
_PY_SCALARS = (bool, int, float, complex)


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
        return _CACHE.put(text, t)
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
        clear_kinds()


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

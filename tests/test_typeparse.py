"""Type strings: valid and invalid tables (line, column, caret), round trips, the cache."""
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lazyk
from lazyk import TypeParseError, dshape
from lazyk.types import (
    Datetime,
    EllipsisDim,
    FixedBytes,
    FixedDim,
    FixedString,
    Function,
    Option,
    Pointer,
    Record,
    Scalar,
    SymbolicDim,
    Timedelta,
    Tuple,
    TypeVar,
    VarDim,
)
from lazyk.types import fastparse as typefast
from lazyk.types import parse as typeparse

i32, f64 = Scalar("int32"), Scalar("float64")
OTHER = ">" if sys.byteorder == "little" else "<"

VALID = [
    ("int32", i32, "int32"),
    ("  int32  ", i32, "int32"),
    ("int", i32, "int32"),
    ("real", f64, "float64"),
    ("complex", Scalar("complex128"), "complex128"),
    ("complex[float32]", Scalar("complex64"), "complex64"),
    ("complex[float64]", Scalar("complex128"), "complex128"),
    ("3 * int32", FixedDim(3, i32), "3 * int32"),
    ("0 * int32", FixedDim(0, i32), "0 * int32"),
    ("3 * var * N * int32", FixedDim(3, VarDim(SymbolicDim("N", i32))), "3 * var * N * int32"),
    ("... * int32", EllipsisDim(None, i32), "... * int32"),
    ("Dims... * T", EllipsisDim("Dims", TypeVar("T")), "Dims... * T"),
    ("3 * Dims... * 2 * T", FixedDim(3, EllipsisDim("Dims", FixedDim(2, TypeVar("T")))),
     "3 * Dims... * 2 * T"),
    ("?int32", Option(i32), "?int32"),
    ("option[int32]", Option(i32), "?int32"),
    ("option[3 * int32]", Option(FixedDim(3, i32)), "?3 * int32"),
    ("?var * int32", Option(VarDim(i32)), "?var * int32"),
    ("3 * ?int32", FixedDim(3, Option(i32)), "3 * ?int32"),
    ("?{x: int32}", Option(Record((("x", i32),))), "?{x: int32}"),
    ("{x: int32, 'a name': float64,}", Record((("x", i32), ("a name", f64))),
     "{x: int32, 'a name': float64}"),
    ("{}", Record(()), "{}"),
    ("{'it\\'s': int8}", Record((("it's", Scalar("int8")),)), "{'it\\'s': int8}"),
    ("{\"q\\n\": int8}", Record((("q\n", Scalar("int8")),)), "{'q\\n': int8}"),
    ("{var: int8}", Record((("var", Scalar("int8")),)), "{var: int8}"),
    ("(int32, float64)", Tuple((i32, f64)), "(int32, float64)"),
    ("(int32,)", Tuple((i32,)), "(int32,)"),
    ("()", Tuple(()), "()"),
    ("(N * float64, N * float64) -> N * float64",
     Function((SymbolicDim("N", f64),) * 2, (), SymbolicDim("N", f64)),
     "(N * float64, N * float64) -> N * float64"),
    ("(N * float64, scale: float64) -> N * float64",
     Function((SymbolicDim("N", f64),), (("scale", f64),), SymbolicDim("N", f64)),
     "(N * float64, scale: float64) -> N * float64"),
    ("() -> int32", Function((), (), i32), "() -> int32"),
    ("fixed_string[10]", FixedString(10, "utf8"), "fixed_string[10]"),
    ("fixed_string[10, 'ascii']", FixedString(10, "ascii"), "fixed_string[10, 'ascii']"),
    ("fixed_string[10, 'utf8']", FixedString(10, "utf8"), "fixed_string[10]"),
    ("fixed_string[size=2, encoding='utf32']", FixedString(2, "utf32"),
     "fixed_string[2, 'utf32']"),
    ("fixed_bytes[8]", FixedBytes(8, 1), "fixed_bytes[8]"),
    ("fixed_bytes[8, align=4]", FixedBytes(8, 4), "fixed_bytes[8, align=4]"),
    ("timedelta", Timedelta("us"), "timedelta[unit='us']"),
    ("timedelta[unit='ns']", Timedelta("ns"), "timedelta[unit='ns']"),
    ("timedelta['s']", Timedelta("s"), "timedelta[unit='s']"),
    ("datetime", Scalar("datetime"), "datetime"),
    ("datetime[unit='ns']", Datetime("ns"), "datetime[unit='ns']"),
    ("datetime[unit='us']", Scalar("datetime"), "datetime"),
    ("datetime[unit='D']", Scalar("date"), "date"),  # NumPy's M8[D], as from_numpy
    ("pointer[3 * int32]", Pointer(FixedDim(3, i32)), "pointer[3 * int32]"),
    ("<int32" if OTHER == "<" else ">int32", Scalar("int32", OTHER), OTHER + "int32"),
    ("=int32", i32, "int32"),
    ("|int32", i32, "int32"),
    ("|int8", Scalar("int8"), "int8"),
    (("<" if sys.byteorder == "little" else ">") + "float64", f64, "float64"),
    ("3 * # three rows\n  var * # ragged\n  int32 # done", FixedDim(3, VarDim(i32)),
     "3 * var * int32"),
    ("9223372036854775807 * int8", FixedDim(2**63 - 1, Scalar("int8")),
     "9223372036854775807 * int8"),
    ("string", Scalar("string"), "string"),
    ("bytes", Scalar("bytes"), "bytes"),
    ("(int32) -> void", Function((i32,), (), Scalar("void")), "(int32) -> void"),
    ("() -> void", Function((), (), Scalar("void")), "() -> void"),
    ("{void: int8}", Record((("void", Scalar("int8")),)), "{void: int8}"),
    ("(void: int8) -> int8", Function((), (("void", Scalar("int8")),), Scalar("int8")),
     "(void: int8) -> int8"),
    # datashape's string constructors
    ("string[10]", FixedString(10, "utf8"), "fixed_string[10]"),
    ("string[10, 'ascii']", FixedString(10, "ascii"), "fixed_string[10, 'ascii']"),
    ("string['utf8']", Scalar("string"), "string"),
    ("string['U8']", Scalar("string"), "string"),
    # the largest addressable arrays
    ("3074457345618258602 * 3 * uint8", FixedDim(3074457345618258602, FixedDim(3, Scalar("uint8"))),
     "3074457345618258602 * 3 * uint8"),
    ("4611686018427387903 * int16", FixedDim(2**62 - 1, Scalar("int16")),
     "4611686018427387903 * int16"),
]


@pytest.mark.parametrize("text, expected, canonical", VALID)
def test_valid(text, expected, canonical):
    t = dshape(text)
    assert t is expected
    assert str(t) == canonical
    assert dshape(canonical) is t
    assert repr(t) == f"dshape({canonical!r})"


@pytest.mark.parametrize("text, expected, canonical", VALID)
def test_fast_and_lark_paths_agree(text, expected, canonical):
    typeparse.clear_cache()
    assert typefast.fast_parse(text) is expected  # first sight: words classified anew
    assert typefast.fast_parse(text) is expected
    assert typeparse._slow_parse(text) is expected


# (text, line, column, words in the message)
INVALID = [
    ("int33", 1, 1, "unknown type name int33"),
    ("int32 * 3", 1, 9, "dimension 3 has no dtype"),
    ("3 *", 1, 4, "end of input"),
    ("3 * ", 1, 4, "end of input"),
    ("(int32", 1, 7, "unclosed '(' at line 1, column 1"),
    ("3 * {x: (int8,\n int16}", 2, 7, "unexpected '}'"),
    ("3 * {x: pointer[int8}", 1, 21, "unexpected '}'"),
    ("{x: {y: int8}", 1, 14, "unclosed '{' at line 1, column 1"),
    ("int32)", 1, 6, "unexpected ')'"),
    ("{x: int32", 1, 10, "end of input"),
    ("3 * {x: int32]", 1, 14, "unexpected ']'"),
    ("fixed_string[0]", 1, 14, "at least 1"),
    ("fixed_bytes[0]", 1, 13, "at least 1"),
    ("fixed_bytes[6, align=4]", 1, 22, "multiple of alignment"),
    ("fixed_bytes[8, align=3]", 1, 22, "power of two"),
    ("fixed_string[4, 'utf7']", 1, 17, "encoding"),
    ("{a: int32, a: int8}", 1, 12, "duplicate field name 'a'"),
    ("... * ... * int32", 1, 7, "two ellipses"),
    ("Dims... * 3 * ... * int32", 1, 15, "two ellipses"),
    ("int32 x", 1, 7, "unexpected 'x'"),
    ("", 1, 1, "empty type"),
    ("   \n  ", 1, 1, "empty type"),
    ("# just a comment", 1, 1, "empty type"),
    ("007 * int32", 1, 1, "leading zeros"),
    ("fixed_string[01]", 1, 14, "leading zeros"),
    ("9223372036854775808 * int32", 1, 1, "overflows int64"),
    ("categorical[1, 2]", 1, 1, "not supported yet"),
    ("categorical", 1, 1, "not supported yet"),
    ("3 * int32 $", 1, 11, "unexpected character '$'"),
    ("3 *\n  int32 *\n 4", 3, 2, "dimension 4 has no dtype"),
    ("{x: int32,\n y: flot64}", 2, 5, "unknown type name flot64"),
    ("(a: int32)", 1, 2, "keyword fields belong in function signatures"),
    ("int32 -> int32", 1, 7, "unexpected '->'"),
    ("var", 1, 1, "var is a dimension"),
    ("x * int32", 1, 1, "not a dimension"),
    ("dims... * int32", 1, 1, "capitalised"),
    ("<{x: int32}", 1, 2, "unexpected '{'"),
    ("<string", 1, 2, "byte order"),
    ("int32[3]", 1, 1, "takes no arguments"),
    ("foo[3]", 1, 1, "unknown type constructor foo"),
    ("pointer[3]", 1, 9, "must be a type"),
    ("complex[int32]", 1, 1, "float32 or float64"),
    ("fixed_string[3, size=4]", 1, 17, "given twice"),
    ("fixed_string[3, bogus=4]", 1, 17, "no argument 'bogus'"),
    ("?... * int32", 1, 1, "ellipsis cannot be optional"),
    ("{'a\\q': int8}", 1, 2, "bad escape"),
    ("timedelta[unit='years']", 1, 16, "unit must be one of"),
    ("(,)", 1, 2, "unexpected ','"),
    ("{,}", 1, 2, "unexpected ','"),
    ("fixed_string", 1, 1, "needs arguments"),
    ("(x: int32, int32) -> int32", 1, 19, "positional argument after a keyword"),
    # a double option
    ("??int32", 1, 1, "double option"),
    ("3 * ??int32", 1, 5, "double option"),
    ("?option[int32]", 1, 1, "double option"),
    ("option[?int32]", 1, 1, "double option"),
    ("?var * ??int32", 1, 8, "double option"),
    # void is only a function's return type
    ("void", 1, 1, "void is only allowed as a function's return type"),
    ("3 * void", 1, 5, "void is only allowed as a function's return type"),
    ("{a: void}", 1, 5, "void is only allowed as a function's return type"),
    ("?void", 1, 2, "void is only allowed"),
    ("(void, int8)", 1, 2, "void is only allowed"),
    ("(void) -> int8", 1, 2, "void is only allowed"),
    ("(x: void) -> int8", 1, 5, "void is only allowed"),
    ("pointer[void]", 1, 9, "void is only allowed"),
    ("(int8) -> ?void", 1, 12, "void is only allowed"),
    ("(int8) -> 2 * void", 1, 15, "void is only allowed"),
    ("(int8) -> void * int8", 1, 16, "dimension after the dtype"),
    ("void * int8", 1, 1, "not a dimension"),
    ("void[3]", 1, 1, "takes no arguments"),
    # arrays too large to address (sizes or bytes past int64)
    ("3 * 3074457345618258603 * uint8", 1, 1, "9223372036854775809 elements"),
    ("2 * 3 * 1537228672809129302 * T", 1, 1, "more than 2**63-1"),
    ("4611686018427387904 * int16", 1, 1, "9223372036854775808 bytes"),
    ("var * 9223372036854775807 * int16", 1, 7, "not be addressable"),
    ("N * 3 * 4611686018427387904 * int8", 1, 5, "not be addressable"),
    ("{a: 2 * 4611686018427387904 * int8}", 1, 5, "not be addressable"),
    ("{a: 9223372036854775807 * int8, b: int8}", 1, 1, "not be addressable"),
    ("(9223372036854775807 * int8, int8)", 1, 1, "not be addressable"),
    ("3 * fixed_bytes[4611686018427387904]", 1, 1, "not be addressable"),
    ("fixed_string[4611686018427387904, 'utf16']", 1, 35, "not be addressable"),
    # function types are not data
    ("{f: (int32) -> int32}", 1, 2, "field 'f' is a function type"),
    ("{a: int8, 'f g': () -> int32}", 1, 11, "field 'f g' is a function type"),
    ("((int32) -> int32, int8)", 1, 10, "a tuple field cannot be a function type"),
    ("pointer[(int8) -> int8]", 1, 16, "pointer target cannot be a function type"),
    ("option[(int8) -> int8]", 1, 15, "cannot be a function type"),
    # datashape constructors lazyk does not have
    ("decimal[9, 2]", 1, 1, "decimal is not supported yet"),
    ("decimal", 1, 1, "decimal is not supported yet"),
    ("3 * map[string, int32]", 1, 5, "map is not supported yet"),
    ("string['ascii']", 1, 8, "string['ascii'] is not supported yet"),
    ("string['utf16']", 1, 8, "not supported yet"),
    ("string[0]", 1, 8, "at least 1"),
    ("string[3, 'klingon']", 1, 11, "encoding"),
    ("bytes[8]", 1, 1, "fixed_bytes[N]"),
    ("N * 0x10 * int8", 1, 6, "unexpected 'x' in the dimension 0x10"),
    ("N * 1e3 * int8", 1, 6, "unexpected 'e' in the dimension 1e3"),
    ("3 int8", 1, 1, "dimension 3 has no dtype"),
]


@pytest.mark.parametrize("text, line, column, words", INVALID)
def test_invalid(text, line, column, words):
    typeparse.clear_cache()
    with pytest.raises(TypeParseError) as info:
        dshape(text)
    err = info.value
    assert isinstance(err, ValueError)
    assert (err.line, err.column) == (line, column), str(err)
    assert words in str(err)
    # The message shows the offending line and a caret under the column.
    lines = str(err).splitlines()
    src = (text.splitlines() or [""])[line - 1]
    assert lines[1] == "  " + src
    assert lines[2] == "  " + " " * (column - 1) + "^"


@pytest.mark.parametrize("opener", ["(", "[", "{a: ", "?", "3 * ", "pointer[", "() -> "])
def test_deep_nesting_is_a_clean_error(opener):
    text = opener * 10_000 + "int32"
    with pytest.raises(TypeParseError) as info:
        dshape(text)
    assert "nested deeper than" in str(info.value)
    assert info.value.line == 1


def test_nesting_just_under_the_limit_parses():
    n = lazyk.types.MAX_DEPTH - 1
    t = dshape("1 * " * n + "int32")
    assert t.ndim == n and t.shape == (1,) * n
    assert dshape(str(t)) is t


def test_parse_cache_and_numpy_and_type_inputs():
    typeparse.clear_cache()
    a = dshape("3 * int32")
    assert dshape("3 * int32") is a
    assert dshape(a) is a
    assert dshape(np.dtype("float64")) is f64
    assert dshape(np.float32) is Scalar("float32")
    assert lazyk.dshape is dshape
    assert dshape(int) is Scalar("int64") and dshape(np.bool_) is Scalar("bool")


@pytest.mark.parametrize("bad", [123, 1.5, None, b"int32", [("a", "i1")], ("f8", 3), object(),
                                 str, object, np.zeros(3)])
def test_foreign_objects_are_refused_by_type(bad):
    with pytest.raises(TypeError) as info:
        dshape(bad)
    msg = str(info.value)
    assert type(bad).__name__ in msg and "type string" in msg and "NumPy dtype" in msg
    assert "Cannot interpret" not in msg


def test_describe():
    out = typeparse.describe("3 * var * {x: int32, y: ?float64}")
    lines = out.splitlines()
    assert lines[0] == "3 * var * {x: int32, y: ?float64}"
    assert lines[1] == "  fixed dimension, size 3"
    assert lines[2] == "    var dimension"
    assert "itemsize: 48  alignment: 8  ndim: 2" in lines[-1]
    assert typeparse.describe("N * T").splitlines()[-1] == "symbolic: no itemsize  ndim: 1"
    assert typeparse.describe("(int8) -> int8").splitlines()[-1] == "function: no itemsize"
    with pytest.raises(TypeParseError):
        typeparse.describe("int33")


def test_cli_parse(capsys):
    from lazyk.cli import main

    assert main(["parse", "2 * int16"]) == 0
    assert "itemsize: 4  alignment: 2  ndim: 1" in capsys.readouterr().out
    assert main(["parse", "int32 * 3"]) == 1
    err = capsys.readouterr().err
    assert "line 1, column 9" in err and "^" in err


# ---------------------------------------------------------------- round trips
_NAMES = st.sampled_from(["x", "y", "a name", "it's", "tab\there", "var", "int32", "é", "_1"])
_UPPER = st.sampled_from(["N", "M", "T", "Dims", "X1"])
_SCALARS = st.builds(Scalar, st.sampled_from([n for n in lazyk.types.SCALAR_NAMES if n != "void"]),
                     st.sampled_from(["=", "<", ">", "|"]))
_LEAVES = st.one_of(
    _SCALARS,
    st.builds(TypeVar, _UPPER),
    st.builds(FixedString, st.integers(1, 100), st.sampled_from(["utf8", "ascii", "utf16",
                                                                  "utf32"])),
    st.builds(lambda n, a: FixedBytes(n * a, a), st.integers(1, 9),
              st.sampled_from([1, 2, 4, 8, 16])),
    st.builds(Timedelta, st.sampled_from(["s", "ms", "us", "ns"])),
    st.builds(Datetime, st.sampled_from(["s", "us", "ns"])),
)


def _ellipsis(name, elem):
    try:
        return EllipsisDim(name, elem)
    except ValueError:  # a second ellipsis in one list
        return elem


def _fixed(size, elem):
    try:
        return FixedDim(size, elem)
    except ValueError:  # too large to address: keep the element
        return elem


def _option(elem):
    return elem if isinstance(elem, EllipsisDim) else Option(elem)


def _record(fields):
    seen = {}
    for n, t in fields:
        seen.setdefault(n, t)
    try:
        return Record(tuple(seen.items()))
    except ValueError:  # too large to address
        return Record(())


def _tuple(types):
    try:
        return Tuple(tuple(types))
    except ValueError:  # too large to address
        return Tuple(())


def _extend(children):
    return st.one_of(
        st.builds(_fixed, st.one_of(st.integers(0, 2**63 - 1), st.integers(0, 9)), children),
        st.builds(VarDim, children),
        st.builds(SymbolicDim, _UPPER, children),
        st.builds(_ellipsis, st.one_of(st.none(), _UPPER), children),
        st.builds(_option, children),
        st.builds(Pointer, children),
        st.builds(_record, st.lists(st.tuples(_NAMES, children), max_size=4)),
        st.builds(_tuple, st.lists(children, max_size=4)),
    )


TYPES = st.recursive(_LEAVES, _extend, max_leaves=8)
SIGNATURES = st.builds(
    lambda args, kw, ret: Function(tuple(args), tuple({n: t for n, t in kw}.items()), ret),
    st.lists(TYPES, max_size=3), st.lists(st.tuples(st.sampled_from(["x", "scale", "_k"]), TYPES),
                                          max_size=2),
    st.one_of(TYPES, st.just(Scalar("void"))))


@given(st.one_of(TYPES, SIGNATURES))
def test_round_trip(t):
    text = str(t)
    assert typefast.fast_parse(text) is t
    assert typeparse._slow_parse(text) is t
    assert dshape(text) is t
    assert eval(repr(t), {"dshape": dshape}) is t


_SOUP = st.lists(st.sampled_from(
    ["3", "0", "007", "var", "N", "Dims", "...", "*", "?", "int32", "float64", "T", "{", "}",
     "(", ")", "[", "]", ",", ":", "->", "<", ">", "=", "|", "'a b'", "x", "fixed_string",
     "fixed_bytes", "align", "pointer", "option", "complex", "timedelta", "unit", "'us'",
     "categorical", "#c\n", " ", "\n", "$", "99999999999999999999", "\\", "void", "string",
     "decimal", "9223372036854775807", "4611686018427387904", "??", "bytes", "'utf16'"]),
    max_size=25)


@given(st.one_of(_SOUP.map("".join), _SOUP.map(" ".join), st.text(max_size=30)))
def test_any_text_parses_or_raises_type_parse_error(text):
    typeparse.clear_cache()
    _parses_or_refuses(text)


def _check_error(text, err):
    """A TypeParseError points inside the text and draws its line with a caret there."""
    lines = text.split("\n")  # the parser counts lines by "\n" only ("\r" is a character)
    assert 1 <= err.line <= max(len(lines), 1), str(err)
    src = lines[err.line - 1] if err.line <= len(lines) else ""
    assert 1 <= err.column <= len(src) + 1, str(err)
    shown = str(err).split("\n")
    assert shown[1] == "  " + src and shown[2] == "  " + " " * (err.column - 1) + "^"


def _parses_or_refuses(text):
    """`text` parses, or raises a positioned TypeParseError; the fast path (which gives up
    on errors, leaving them to lark) builds exactly what lark builds, whenever lark does."""
    try:
        fast = typefast.fast_parse(text)
    except Exception:  # noqa: BLE001 - any failure means "lark decides"
        fast = None
    try:
        t = dshape(text)
    except TypeParseError as err:
        _check_error(text, err)
        assert fast is None, f"the fast path accepts {text!r}, lark refuses it"
        return None
    assert typeparse._slow_parse(text) is t and fast is t, text
    assert dshape(str(t)) is t
    return t


@pytest.mark.parametrize("text", [v[0] for v in VALID] + [v[0] for v in INVALID])
def test_every_one_character_deletion_parses_or_refuses(text):
    # A sweep of near misses: only ever a type or a positioned TypeParseError.
    typeparse.clear_cache()
    for i in range(len(text)):
        _parses_or_refuses(text[:i] + text[i + 1:])


_EDITS = st.sampled_from(list("?*,:()[]{}<>=|.'\"#\n -") + ["void", "->", "...", "0", "9" * 19])


@given(st.sampled_from([v[0] for v in VALID]), st.data())
def test_inserted_tokens_parse_or_refuse(text, data):
    i = data.draw(st.integers(0, len(text)))
    _parses_or_refuses(text[:i] + data.draw(_EDITS) + text[i:])


def test_same_shapes_with_other_texts():
    typeparse.clear_cache()
    assert dshape("3 * int32") is FixedDim(3, i32)
    # Same kinds of tokens (INT STAR NAME), different texts: each builds its own values.
    assert dshape("4 * float64") is FixedDim(4, f64)
    assert dshape("N * T") is SymbolicDim("N", TypeVar("T"))
    assert dshape("{a: int8, b: int16}") is Record((("a", Scalar("int8")),
                                                    ("b", Scalar("int16"))))
    assert dshape("{c: int8, d: int16}").names == ("c", "d")
    assert dshape("{e: int8, f: int16}").names == ("e", "f")
    with pytest.raises(TypeParseError) as info:  # same pattern, now a duplicate name
        dshape("{a: int8, a: int16}")
    assert (info.value.line, info.value.column) == (1, 11)
    with pytest.raises(TypeParseError) as info:  # same pattern, now an unknown name
        dshape("5 * int33")
    assert (info.value.line, info.value.column) == (1, 5)
    typeparse.clear_cache(tokens=False)
    assert dshape("7 * int8") is FixedDim(7, Scalar("int8"))


@pytest.mark.parametrize("text", ["\r\x1b", "int32\r\n* $", "\x0b3 * ", "3 *\u2028 $"])
def test_error_lines_are_counted_like_the_parser(text):
    """Carriage returns and other line breaks than "\\n" do not shift the line shown."""
    with pytest.raises(TypeParseError) as info:
        dshape(text)
    _check_error(text, info.value)


def test_one_level_too_deep_is_refused_at_the_token_that_crosses_the_limit():
    n = lazyk.types.MAX_DEPTH  # (n levels around an element: one too many)
    for text, line in (("pointer[\n" * n + "int32" + "]" * n, n),
                       ("var *\n" * n + "int32", n)):
        with pytest.raises(TypeParseError, match="nested deeper than") as info:
            dshape(text)
        assert info.value.line == line


def test_deeply_nested_records_and_tuples_parse_at_once():
    import time
    for open_, close in (("{a: ", "}"), ("(", ", int8)")):
        start = time.perf_counter()
        t = dshape(open_ * 100 + "int32" + close * 100)
        assert time.perf_counter() - start < 5.0  # (each level laid out once, not 2**depth)
        assert dshape(str(t)) is t


def test_the_caret_keeps_the_lines_tabs():
    """Tabs before the column stay tabs under it: the caret lands under the character
    however a terminal expands them."""
    with pytest.raises(lazyk.TypeParseError) as err:
        lazyk.dshape("3 * \tvar * flot64")
    src, caret = str(err.value).split("\n")[1:]
    assert caret.index("^") == src.index("flot64") and caret[src.index("\t")] == "\t"

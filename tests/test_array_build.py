"""Building arrays from Python data: inference, explicit types, errors, round trips."""
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lazyk
from lazyk import ArrayConstructionError, TypeParseError
from lazyk import types as T


@pytest.mark.parametrize("data, text", [
    ([1, 2, 3], "3 * int64"),
    ([[1, 2, 3], [4]], "2 * var * int64"),
    ([[1, 2], [3, 4]], "2 * 2 * int64"),
    ([1, 2.5], "2 * float64"),
    ([True, 2], "2 * int64"),
    ([True, False], "2 * bool"),
    ([1, 1j], "2 * complex128"),
    ([1, None], "2 * ?int64"),
    ([[1], None, []], "3 * ?var * int64"),
    (["a", "bé"], "2 * string"),
    ([b"a", b""], "2 * bytes"),
    ([{"x": 1, "y": "a"}, {"y": "b", "x": 2.5}], "2 * {x: float64, y: string}"),
    ([1, 2**63], "2 * uint64"),
    ([np.float32(1), np.float32(2)], "2 * float32"),
    ([[], []], "2 * 0 * float64"),
    # lists in records that may be missing are var rows, as lists that may be missing are
    ([{"t": ["a", "b"]}, None, {"t": ["c", "d"]}], "3 * ?{t: var * string}"),
    ([{"a": {"t": [1, 2]}}, None], "2 * ?{a: {t: var * int64}}"),
    ([{"t": [1, 2]}, {"t": [3, 4]}], "2 * {t: 2 * int64}"),
    (5, "int64"),
    ("text", "string"),
])
def test_inference(data, text):
    a = lazyk.array(data)
    assert a.type == T.dshape(text)
    assert a.to_list() == data


@pytest.mark.parametrize("data, text", [
    ([[1, 2, 3], [4]], "2 * var * int8"),
    ([1, 2], "2 * >int16"),
    ([1, None, 3], "3 * ?float32"),
    ([[1.5, None]], "1 * var * ?float64"),
    ([{"x": 1, "y": [1, 2]}], "1 * {x: int32, y: var * int64}"),
    ([(1, "a")], "1 * (int32, string)"),
    ([[0.5, 1], [2, 3]], "2 * 2 * complex64"),
    ([["a", None], []], "2 * var * ?string"),
])
def test_explicit_types(data, text):
    a = lazyk.array(data, type=text)
    assert a.type == T.dshape(text)
    assert a.to_list() == [tuple(x) if isinstance(x, tuple) else x for x in data]


def test_fixed_type_gives_numpy_view():
    a = lazyk.array([[1, 2], [3, 4]], type="2 * 2 * int16")
    n = a.to_numpy()
    assert n.dtype == np.int16 and n.shape == (2, 2) and n.tolist() == [[1, 2], [3, 4]]


@pytest.mark.parametrize("data, text, message", [
    ([[1, 2], [3, 4, 5]], "2 * 2 * int32", "row 1 has 3 elements, the type says 2"),
    ([[1, 2], [3, 4, 5]], "2 * 3 * int32", "row 0 has 2 elements, the type says 3"),
    ([1, 2, 3], "2 * int32", "has 3 elements, the type says 2"),
    ([[1, 2], [3, 400]], "2 * 2 * int8", r"item \[1, 1\] \(400\) does not fit int8"),
    ([-1], "1 * uint8", "does not fit uint8"),
    ([2**70], "1 * int64", "does not fit int64"),
    ([1.5], "1 * int32", r"item \[0\] is a float \(1.5\), the type says int32"),
    ([None, 2], "2 * int32", r"item \[0\] is missing \(None\)"),
    ([[1], [2, "x"]], "2 * var * int32", r"item \[1, 1\] is a str"),
    ([1, 2], "2 * 2 * int32", r"item \[0\] is a int"),
    (["a"], "1 * int32", "is a str"),
    ([{"x": 1, "z": 2}], "1 * {x: int32, y: int32}", r"item \[0\] has fields"),
    ([1j], "1 * float64", "is a complex"),
])
def test_explicit_type_refusals_name_the_item(data, text, message):
    with pytest.raises(ArrayConstructionError, match=message):
        lazyk.array(data, type=text)


@pytest.mark.parametrize("data, message", [
    ([1, "a"], r"mixed incompatible types: str at \[1\] and int at \[0\]"),
    ([[1, 2], 3], r"non-rectangular data: item \[0\] is a list but item \[1\] is a int"),
    ([[1, [2]], [3, 4]], "non-rectangular"),
    ([2**64], "does not fit in int64 or uint64"),
    ([object()], "cannot store a object"),
])
def test_inference_refusals(data, message):
    with pytest.raises(ArrayConstructionError, match=message):
        lazyk.array(data)


@pytest.mark.parametrize("data", [{2, 1}, frozenset([1.5]), {3}])
def test_unordered_containers_are_refused_by_type(data):
    with pytest.raises(TypeError, match=rf"cannot read a {type(data).__name__}: its items "
                                        r"have no order"):
        lazyk.array(data)
    with pytest.raises(ArrayConstructionError, match="cannot store a set"):
        lazyk.array([data]) if isinstance(data, set) else lazyk.array([set(data)])


def test_type_that_does_not_parse():
    with pytest.raises(TypeParseError):
        lazyk.array([1], type="3 * int 8")
    with pytest.raises(ValueError):  # TypeParseError is a ValueError
        lazyk.zeros("var * * int32")


def test_symbolic_type_refused():
    with pytest.raises(ArrayConstructionError, match="symbolic"):
        lazyk.array([1, 2], type="N * int32")


def test_zeros_full_empty():
    z = lazyk.zeros("2 * 3 * float32")
    assert z.to_numpy().dtype == np.float32 and z.to_list() == [[0.0] * 3] * 2
    f = lazyk.full("3 * var * int32", 7, [2, 0, 1])
    assert f.to_list() == [[7, 7], [], [7]] and str(f.type) == "3 * var * int32"
    e = lazyk.empty("2 * var * ?float64", [1, 2])
    assert e.to_list() == [[None], [None, None]]
    assert lazyk.zeros("2 * string").to_list() == ["", ""]
    assert lazyk.zeros("2 * {x: int8, y: var * bool}", [1, 2]).to_list() == [
        {"x": 0, "y": [False]}, {"x": 0, "y": [False, False]}]
    nested = lazyk.full("var * var * int8", 1, [[2], [1, 3]])
    assert nested.to_list() == [[1], [1, 1, 1]]
    with pytest.raises(ArrayConstructionError, match="row lengths"):
        lazyk.zeros("2 * var * int32")


def test_nan_and_missing_are_different():
    a = lazyk.array([math.nan, None, 0.0])
    out = a.to_list()
    assert math.isnan(out[0]) and out[1] is None and out[2] == 0.0
    s = lazyk.array(["", None])
    assert s.to_list() == ["", None]


# ---------------------------------------------------------------- round trips
def _nested(leaf, depth):
    """Ragged nested lists of `leaf` values, `depth` levels deep."""
    s = leaf
    for _ in range(depth):
        s = st.lists(s, max_size=4)
    return s


LEAVES = {
    "int": (st.integers(-2**63, 2**63 - 1), "int64"),
    "float": (st.floats(allow_nan=False), "float64"),
    "bool": (st.booleans(), "bool"),
    "string": (st.text(max_size=5), "string"),
    "?int32": (st.one_of(st.none(), st.integers(-2**31, 2**31 - 1)), "?int32"),
    "?string": (st.one_of(st.none(), st.text(max_size=3)), "?string"),
}


@pytest.mark.parametrize("leaf", list(LEAVES))
@given(data=st.data())
def test_round_trip_list_array_list(leaf, data):
    strategy, elem = LEAVES[leaf]
    depth = data.draw(st.integers(1, 4))
    value = data.draw(_nested(strategy, depth))
    text = " * ".join(["var"] * depth + [elem])
    a = lazyk.array(value, type=text)
    assert a.to_list() == value
    assert a.type == T.dshape(text)


@given(_nested(st.integers(-1000, 1000), 3))
def test_round_trip_inferred(value):
    a = lazyk.array(value)
    assert a.to_list() == value


@given(st.lists(st.fixed_dictionaries({"a": st.integers(-5, 5),
                                       "b": st.one_of(st.none(), st.text(max_size=3)),
                                       "c": st.lists(st.floats(allow_nan=False), max_size=3)}),
                max_size=5))
def test_round_trip_records(value):
    a = lazyk.array(value, type="var * {a: int16, b: ?string, c: var * float64}")
    assert a.to_list() == value


def test_large_ragged_build():
    rows = [list(range(i % 7)) for i in range(30000)]
    a = lazyk.array(rows)
    assert str(a.type) == "30000 * var * int64"
    assert a.to_list() == rows


def test_fixed_strings_inline():
    a = lazyk.array(["ab", "é"], type="2 * fixed_string[4]")
    assert a.to_list() == ["ab", "é"] and a[1].to_list() == "é"
    assert a.to_numpy().dtype == np.dtype("S4")  # inline, NUL-padded UTF-8
    assert a.to_numpy().tolist() == [b"ab", "é".encode()]
    u = lazyk.array(["ab", "c"], type="2 * fixed_string[2, 'utf32']")
    assert u.to_numpy().dtype == np.dtype("<U2") and u.to_list() == ["ab", "c"]
    assert repr(u) == "array(['ab', 'c'], type=\"2 * fixed_string[2, 'utf32']\")"
    with pytest.raises(ArrayConstructionError, match="has 5 units, the type fixed_string"):
        lazyk.array(["abcde"], type="1 * fixed_string[4]")
    with pytest.raises(ArrayConstructionError, match="is not ascii"):
        lazyk.array(["é"], type="1 * fixed_string[4, 'ascii']")
    r = lazyk.array([{"n": "é", "v": 1}], type="1 * {n: fixed_string[3], v: int8}")
    assert r.n.to_list() == ["é"] and r[0].to_list() == {"n": "é", "v": 1}


def test_iterables_and_scalar_types():
    assert lazyk.array(range(4)).to_list() == [0, 1, 2, 3]
    assert lazyk.array((x * x for x in range(3)), type="3 * int8").to_list() == [0, 1, 4]
    s = lazyk.array(5, type="int8")
    assert str(s.type) == "int8" and s.to_list() == 5 and s.shape == ()
    assert str(lazyk.array(2.5, type=np.float32).type) == "float32"
    assert lazyk.array([1, 2], type=T.dshape("2 * uint8")).to_numpy().dtype == np.uint8


@given(st.lists(st.one_of(st.none(), st.lists(st.one_of(st.none(), st.text(max_size=2)),
                                              max_size=3)), max_size=5))
def test_round_trip_missing_rows(value):
    a = lazyk.array(value, type="var * ?var * ?string")
    assert a.to_list() == value
    if value and all(r is not None for r in value):
        assert a[:, ::-1].to_list() == [r[::-1] for r in value]


def test_top_level_record_and_docstring_errors():
    r = lazyk.array({"x": 1, "y": "a"})
    assert str(r.type) == "{x: int64, y: string}" and r.y.to_list() == "a"


def test_numpy_str_and_bytes_items_are_strings():
    for data, text in (([np.str_("a"), "bc"], "2 * string"),
                       ([np.str_("a"), np.str_("bcd")], "2 * string"),
                       ([[np.str_("é")], ["x", None]], "2 * var * ?string"),
                       ([np.bytes_(b"a"), b"bc"], "2 * bytes")):
        x = lazyk.array(data)
        assert str(x.type) == text
        assert x.to_list() == [[str(v) if isinstance(v, np.str_) else v for v in r]
                               if isinstance(r, list) else
                               (bytes(r) if isinstance(r, np.bytes_) else str(r)
                                if isinstance(r, np.str_) else r) for r in data]
    with pytest.raises(ArrayConstructionError, match="mixed incompatible types"):
        lazyk.array([np.str_("a"), b"b"])


@pytest.mark.parametrize("items", [
    [np.datetime64("2020-01-01")],
    [np.datetime64("2020-01-01T10:00"), np.datetime64("2021-03-04")],
    [np.datetime64("2020-01-01T10:00:00.123456789")],
    [np.timedelta64(3, "s"), np.timedelta64(2, "ms")],
    [np.datetime64("2020-01-01", "Y")],
])
def test_numpy_datetime_items_are_typed_as_numpy_types_them(items):
    want = np.array(items)
    x = lazyk.array(items)
    assert x.type.dtype == T.from_numpy(want.dtype)
    got = np.asarray(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    y = lazyk.array([items, []])  # under a var dim, and with a missing value
    assert str(y.type) == f"2 * var * {T.from_numpy(want.dtype)}"
    z = lazyk.array(items + [None])
    assert str(z.type) == f"{len(items) + 1} * ?{T.from_numpy(want.dtype)}"
    assert z.to_list()[-1] is None


def test_records_that_lack_fields_read_as_awkward_reads_them():
    """A field some dicts lack is missing there (`?T`), in order of first appearance."""
    ak = pytest.importorskip("awkward")
    for data in ([{"x": 1, "y": 2.0}, {"x": 3}], [{"a": [1]}, {"b": "s"}, {}],
                 [[{"x": 1}], [{"y": 2}]], [{"x": 1}, {"y": 2}]):
        got = lazyk.array(data)
        assert got.to_list() == ak.Array(data).to_list()
    assert str(lazyk.array([{"x": 1, "y": 2.0}, {"x": 3}]).type) == \
        "2 * {x: int64, y: ?float64}"
    t = "1 * {x: int32, y: ?float64}"
    assert lazyk.array([{"x": 1}], type=t).to_list() == [{"x": 1, "y": None}]
    with pytest.raises(ArrayConstructionError, match=r"a field a record may lack is an option"):
        lazyk.array([{"x": 1}], type="1 * {x: int32, y: float64}")


def test_lists_in_records_that_may_be_missing_take_string_operations():
    r = lazyk.array([{"t": ["a", "bc"]}, None, {"t": ["def", "g"]}])
    assert lazyk.str_len(r.t).eval().to_list() == [[1, 2], None, [3, 1]]
    assert r.copy().to_list() == [{"t": ["a", "bc"]}, None, {"t": ["def", "g"]}]


def test_mixed_records_and_tuples_of_mixed_items_say_what_to_do():
    with pytest.raises(ArrayConstructionError, match=r"records mixed with other items: item "
                       r"\[2\] is a dict but item \[0\] is 1 \(int\)"):
        lazyk.array([1, None, {"x": 1}])
    with pytest.raises(ArrayConstructionError, match=r"tuples are read as lists.*type="):
        lazyk.array([[(1, "a")], []])
    assert lazyk.array([[(1, "a")], []], type="2 * var * (int64, string)").to_list() == \
        [[(1, "a")], []]

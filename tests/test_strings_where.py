"""where(c, s, t) over strings and bytes: fixed, var and missing layouts (`?string`,
`?var` rows) against the plain-Python reference (`tests/ragged_reference.py`, whose
numbers stand for strings here), the scalar forms `where(c, s, "x")`, NumPy text arrays
against `np.where`, and the result's characters kept alive by the result alone."""
from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from lazyk.errors import ShapeError, UnsupportedOperandError
from tests import ragged_reference as R
from tests import ragged_strategies as S

LAYOUTS = S.LAYOUTS + S.QVAR_LAYOUTS + S.QNEST_LAYOUTS


def _word(v: int) -> str:
    """The string that number v stands for (distinct for distinct v, lengths 1..6)."""
    return ("n" if v < 0 else "p\u00e9") + "z" * abs(v) if v != 99 else "\u20acx"


def _text(data, kind: str):
    """Nested numbers as nested strings (or bytes); None stays None."""
    if isinstance(data, list):
        return [_text(x, kind) for x in data]
    if data is None:
        return None
    w = _word(int(data))
    return w.encode() if kind == "bytes" else w


def _text_type(t: str, kind: str) -> str:
    head, leaf = t.rsplit(" * ", 1) if " * " in t else ("", t)
    leaf = ("?" if leaf.startswith("?") else "") + kind
    return f"{head} * {leaf}" if head else leaf


@settings(max_examples=30, deadline=None)
@given(S.ragged_pair(layouts=LAYOUTS, dtypes=("int64",), own_rows=True),
       st.sampled_from(["string", "bytes"]), st.sampled_from(["both", "scalar", "first"]))
def test_where_over_strings_matches_the_reference(pair, kind, form):
    t1, d1, t2, d2 = pair
    x = lazyk.array(d1, type=t1)  # the numbers: the condition reads them
    s1 = lazyk.array(_text(d1, kind), type=_text_type(t1, kind))
    s2 = lazyk.array(_text(d2, kind), type=_text_type(t2, kind))
    const = _text(99, kind)
    X, Y = R.array(d1, t1), R.array(d2, t2)
    cond = R.elementwise("greater", X, 0)
    if form == "both":
        e, ref = lazyk.where(x > 0, s1, s2), lambda: R.where(cond, X, Y)
    elif form == "scalar":
        e, ref = lazyk.where(x > 0, s1, const), lambda: R.where(cond, X, 99)
    else:
        e, ref = lazyk.where(x > 0, const, s2), lambda: R.where(cond, 99, Y)
    try:
        want = ref()
    except (ShapeError, ValueError):
        with pytest.raises((ShapeError, ValueError)):
            e.eval()
        return
    got = e.eval()
    assert str(got.type) == _text_type(str(want.type), kind)
    assert got.to_list() == _text(want.data, kind)
    if kind == "string":  # compiled over placeholders of these types: the same
        ps1 = lazyk.placeholder("s1", _text_type(t1, kind))
        ps2 = lazyk.placeholder("s2", _text_type(t2, kind))
        px = lazyk.placeholder("x", t1)
        k = lazyk.compile(lazyk.where(px > 0, ps1, ps2) if form == "both" else
                          lazyk.where(px > 0, ps1, const) if form == "scalar" else
                          lazyk.where(px > 0, const, ps2))
        called = k(**{n: {"x": x, "s1": s1, "s2": s2}[n] for n in k.params})
        assert str(called.type) == str(got.type) and called.to_list() == got.to_list()
    # the string result feeds further string work
    n = lazyk.str_len(e).eval()
    lens = R.elementwise("add", want, 0)
    assert n.to_list() == _lengths(lens.data, kind)


def _lengths(data, kind):
    if isinstance(data, list):
        return [_lengths(v, kind) for v in data]
    return None if data is None else len(_text(data, kind))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.text("ab\u00e9", max_size=4),
                          st.text("xyz\u20ac", max_size=4)), max_size=8),
       st.sampled_from([(), (2,), (2, 1)]))
def test_numpy_text_arrays_and_fixed_layouts_match_np_where(rows, shape):
    c = np.array([r[0] for r in rows], bool)
    a = np.array([r[1] for r in rows], dtype=object).astype(str)
    b = np.array([r[2] for r in rows], dtype=object).astype(str)
    c, a, b = (np.broadcast_to(v, shape + v.shape).copy() for v in (c, a, b))
    want = np.where(c, a, b).tolist()
    got = lazyk.where(c, lazyk.array(a.tolist(), type=_fixed(a.shape, "string")), b).eval()
    assert str(got.type) == _fixed(a.shape, "string")
    assert got.to_list() == want
    enc = np.char.encode(a, "utf-8") if a.size else a.astype("S1")
    got_b = lazyk.where(c, enc, b"q").eval()
    assert got_b.to_list() == np.where(c, enc, b"q").tolist()
    assert str(got_b.type) == _fixed(a.shape, "bytes")


def _fixed(shape, kind):
    return " * ".join([str(n) for n in shape] + [kind])


def test_missing_strings_follow_the_where_rule():
    q = lazyk.array(["a", None, "c", None], type="4 * ?string")
    c = lazyk.array(np.array([True, False, False, True]))
    assert lazyk.where(c, q, "x").eval().to_list() == ["a", "x", "x", None]
    assert lazyk.where(~c, q, "x").eval().to_list() == ["x", None, "c", "x"]
    m = lazyk.array([True, None, False], type="3 * ?bool")
    got = lazyk.where(m, lazyk.array(["a", "b", "c"]), "z").eval()
    assert str(got.type) == "3 * ?string" and got.to_list() == ["a", None, "z"]
    r = lazyk.array([["a", "b"], None, ["c"]], type="3 * ?var * ?string")
    u = lazyk.array([["x", "y"], ["z"], None], type="3 * ?var * string")
    got = lazyk.where(r == "a", r, u).eval()
    assert str(got.type) == "3 * ?var * ?string"
    assert got.to_list() == [["a", "y"], None, None]


def test_nested_where_comparisons_and_scalar_forms():
    v = lazyk.array([[["a"], []], [["bb", "c"]]], type="var * var * var * string")
    w = lazyk.where(v == "c", "C", v)
    assert w.eval().to_list() == [[["a"], []], [["bb", "C"]]]
    assert (w == "C").eval().to_list() == [[[False], []], [[False, True]]]
    assert lazyk.where(w == "a", "A", w).eval().to_list() == [[["A"], []], [["bb", "C"]]]
    assert lazyk.where(True, "a", "b").eval() == "a"
    assert lazyk.where(np.array([True, False]), "a", "bb").eval().to_list() == ["a", "bb"]
    empty = lazyk.where(np.zeros(0, bool), lazyk.array([], type="0 * string"), "z").eval()
    assert str(empty.type) == "0 * string" and empty.to_list() == []


def test_the_result_keeps_the_characters_alive_without_copying():
    s = lazyk.array(["apple", "kiwi", "fig"])
    t = lazyk.array(["x" * 100, "y", "z"], type="3 * ?string")
    w = lazyk.where(np.array([True, False, True]), s, t).eval()
    begins = np.frombuffer(w.owner.buffer[:48], np.uint64)[::2]
    src = np.frombuffer(s.owner.buffer[:48], np.uint64)[::2]
    assert begins[0] == src[0] and begins[2] == src[2]  # the very characters of s
    del s, t
    gc.collect()
    assert w.to_list() == ["apple", "y", "fig"]


def test_where_over_strings_refuses_mixed_kinds_by_name():
    s = lazyk.array(["a", "b"])
    c = np.array([True, False])
    with pytest.raises(UnsupportedOperandError, match="bytes and str have no common type"):
        lazyk.where(c, s, b"x")
    with pytest.raises(UnsupportedOperandError, match="a number and a string"):
        lazyk.where(c, s, 1)
    with pytest.raises(UnsupportedOperandError, match="not supported on strings"):
        lazyk.where(s, 1, 2)
    with pytest.raises(lazyk.NotSupportedError, match="out= for a 2 \\* string result"):
        lazyk.evaluate(lazyk.where(c, s, "x"), out=np.empty(2))


def test_compiled_where_over_strings_and_what_bind_refuses():
    s = lazyk.placeholder("s", "N * string")
    c = lazyk.placeholder("c", "N * bool")
    k = lazyk.compile(lazyk.where(c, s, "q"))
    got = k(np.array([True, False]), lazyk.array(["a", "b"]))
    assert str(got.type) == "2 * string" and got.to_list() == ["a", "q"]
    x = lazyk.placeholder("x", "N * var * int64")
    r = lazyk.placeholder("r", "N * var * string")
    a = lazyk.array([[1, -1], [], [2]], type="3 * var * int64")
    b = lazyk.array([["a", "b"], [], ["c"]], type="3 * var * string")
    k = lazyk.compile(lazyk.where(x > 0, r, "z"))
    assert k(a, b).to_list() == [["a", "z"], [], ["c"]]
    with pytest.raises(lazyk.NotSupportedError, match="bind.. of .*where.. over strings gives"):
        k.bind(lazyk.array([["", ""], [], [""]], type="3 * var * string"), a, b)
    # a string where() that feeds a comparison binds (the nest reads the elements)
    k = lazyk.compile(lazyk.where(x > 0, r, "z") == "a")
    out = lazyk.array([[False, False], [], [False]], type="3 * var * bool")
    assert k.bind(out, a, b)().to_list() == [[True, False], [], [False]]


def test_where_over_strings_under_a_dim_of_size_0():
    """where() over strings whose rows hold no rows (`3 * 0 * var * string`): empty rows of
    the result's type, compared with the reference."""
    for t, d in (("3 * 0 * var * int64", [[], [], []]), ("2 * 0 * int64", [[], []])):
        x = lazyk.array(d, type=t)
        s = lazyk.array(d, type=_text_type(t, "string"))
        got = lazyk.where(x > 0, s, s).eval()
        want = R.where(R.elementwise("greater", R.array(d, t), 0), R.array(d, t), R.array(d, t))
        assert str(got.type) == _text_type(str(want.type), "string")
        assert got.to_list() == want.data


def test_where_over_a_string_field_of_lined_up_records():
    """where() over `r.name` of records whose fields were lined up (`?var` rows: the
    field is computed, not a string array): the field's strings are computed first."""
    s = lazyk.array([[], ["a", "b"], None], type="3 * ?var * string")
    x = lazyk.array([[], [4.0, -1.0], None], type="3 * ?var * float64")
    r = lazyk.zip({"name": s, "pt": x})
    assert lazyk.where(r.pt > 0, r.name, "zz").eval().to_list() == [[], ["a", "zz"], None]
    assert lazyk.where(x > 0, s, "zz").eval().to_list() == [[], ["a", "zz"], None]

"""Strings in fused kernels: comparisons, str_len, startswith / endswith, refusals.

Every result is compared with plain Python on the same strings (Python's `<` on str is
code point order, which is what byte-wise UTF-8 and unit-wise UTF-32 order give).
"""
import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lazyk
from lazyk.errors import NotSupportedError, UnsupportedOperandError
from lazyk.kernel import flat as kernel
from lazyk.runtime import launch as runtime

OPS = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]
# Short strings over a small alphabet (equal strings, prefixes, empty strings are common)
# plus multi-byte characters (2-, 3- and 4-byte UTF-8) and NUL-free text.
ALPHABET = st.sampled_from("ab\u00e9\u00ff\u0100\u20ac\uffff\U0001f600z")
TEXT = st.text(ALPHABET, max_size=6)
TEXTS = st.lists(TEXT, min_size=0, max_size=12)


def python(op, xs, ys):
    return np.array([op(x, y) for x, y in zip(xs, ys)], dtype=bool)


def inputs(strings):
    """The same strings as every supported kind of operand."""
    yield "string", lazyk.array(strings, type=f"{len(strings)} * string")
    yield "U", np.array(strings, dtype=f"U{max(map(len, strings), default=0) + 1}")
    width = max((len(s.encode()) for s in strings), default=0) + 1
    yield "S", np.array([s.encode() for s in strings], dtype=f"S{width}")
    yield "fixed_string", lazyk.array(strings, type=f"{len(strings)} * fixed_string[{width}]")


@given(TEXTS, TEXT)
def test_compare_with_python_str(strings, c):
    for kind, arr in inputs(strings):
        for op in OPS:
            want = python(op, strings, [c] * len(strings))
            got = lazyk.evaluate(op(lazyk.array(arr) if kind in "SU" else arr, c))
            assert got.dtype == np.bool_ and got.shape == (len(strings),), kind
            np.testing.assert_array_equal(got, want, err_msg=f"{kind} {op.__name__} {c!r}")
            # the reflected spelling: 'kiwi' == arr, 'kiwi' < arr (Python swaps to arr > 'kiwi')
            got = lazyk.evaluate(op(c, lazyk.array(arr) if kind in "SU" else arr))
            want = python(op, [c] * len(strings), strings)
            np.testing.assert_array_equal(got, want, err_msg=f"{kind} reflected {op.__name__}")
            # the str as the first operand of the function form: lazyk.less('kiwi', arr)
            fn = getattr(lazyk, {"eq": "equal", "ne": "not_equal", "lt": "less",
                                 "le": "less_equal", "gt": "greater",
                                 "ge": "greater_equal"}[op.__name__])
            np.testing.assert_array_equal(lazyk.evaluate(fn(c, arr)), want,
                                          err_msg=f"{kind} lazyk.{fn.__name__}(str, array)")


@given(st.data())
def test_compare_two_arrays(data):
    n = data.draw(st.integers(0, 10))
    xs = data.draw(st.lists(TEXT, min_size=n, max_size=n))
    ys = data.draw(st.lists(st.one_of(TEXT, st.sampled_from(xs or [""])), min_size=n,
                            max_size=n))
    a, b = lazyk.array(xs, type=f"{n} * string"), lazyk.array(ys, type=f"{n} * string")
    u = lazyk.array(np.array(xs, dtype="U8"))
    v = lazyk.array(np.array(ys, dtype="U8"))
    s = np.array([y.encode() for y in ys], dtype="S30")
    for op in OPS:
        want = python(op, xs, ys)
        np.testing.assert_array_equal(lazyk.evaluate(op(a, b)), want)
        np.testing.assert_array_equal(lazyk.evaluate(op(u, v)), want)
        np.testing.assert_array_equal(lazyk.evaluate(op(a, lazyk.array(s))), want)
        np.testing.assert_array_equal(lazyk.evaluate(op(a[::-1], b[::-1])), want[::-1])


def test_broadcasting_and_views():
    py = [["kiwi", "fig"], ["apple", "kiwi"], ["", "fig"]]
    rows = lazyk.array(py)
    col = lazyk.array(["fig", "kiwi"])
    got = lazyk.evaluate(rows == col)
    np.testing.assert_array_equal(got, [[r == c for r, c in zip(row, ["fig", "kiwi"])]
                                        for row in py])
    assert got.shape == (3, 2)
    np.testing.assert_array_equal(lazyk.evaluate(rows[:, 1] < rows[::-1, 0]),
                                  [x[1] < y[0] for x, y in zip(py, py[::-1])])
    np.testing.assert_array_equal(lazyk.evaluate(rows[1:, ::-1] == "kiwi"),
                                  [[True, False], [False, False]])
    empty = lazyk.array(np.array([], dtype="U3"))
    assert lazyk.evaluate(empty == "a").shape == (0,)


@given(TEXTS, TEXT)
def test_str_len_startswith_endswith(strings, affix):
    for kind, arr in inputs(strings):
        x = lazyk.array(arr) if kind in "SU" else arr
        got = lazyk.evaluate(lazyk.str_len(x))
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, [len(s) for s in strings], err_msg=kind)
        np.testing.assert_array_equal(lazyk.evaluate(lazyk.startswith(x, affix)),
                                      [s.startswith(affix) for s in strings], err_msg=kind)
        np.testing.assert_array_equal(lazyk.evaluate(lazyk.endswith(x, affix)),
                                      [s.endswith(affix) for s in strings], err_msg=kind)


def test_startswith_elementwise():
    xs = ["kiwi", "apple", "", "fig", "\u20ac1"]
    ps = ["ki", "apple!", "", "g", "\u20ac"]
    got = lazyk.evaluate(lazyk.startswith(lazyk.array(xs), lazyk.array(ps)))
    np.testing.assert_array_equal(got, [x.startswith(p) for x, p in zip(xs, ps)])
    got = lazyk.evaluate(lazyk.endswith(lazyk.array(xs), lazyk.array(["wi", "le", "x", "fig",
                                                                      "1"])))
    np.testing.assert_array_equal(got, [True, True, False, True, True])


def test_fused_with_numeric_work_is_one_kernel():
    names = lazyk.array(["kiwi", "apple", "kiwi", "fig"])
    price = lazyk.array(np.array([1.0, 3.0, 3.0, 5.0]))
    e = (names == "kiwi") & (price > 2)
    assert len(runtime.plan(e.node).steps) == 1
    np.testing.assert_array_equal(lazyk.evaluate(e), [False, False, True, False])
    total = (lazyk.str_len(names) * price).sum()
    assert len(runtime.plan(total.node).steps) == 1
    assert lazyk.evaluate(total) == 4 * 1.0 + 5 * 3.0 + 4 * 3.0 + 3 * 5.0


def test_many_comparison_strings_compile_once():
    names = lazyk.array([f"s{k}" for k in range(100)])
    lazyk.evaluate(names == "warm-up")
    before = kernel.stats["compiles"]
    for k in range(50):
        got = lazyk.evaluate(names == f"s{k}")
        assert got.sum() == 1 and got[k]
    assert kernel.stats["compiles"] == before


def test_large_threaded():
    words = np.array(["kiwi", "apple", "fig", "", "kiwis"] * 40_000)
    arr = lazyk.array(words.tolist())
    got = lazyk.evaluate((arr == "kiwi") | (arr > "g"))
    np.testing.assert_array_equal(got, (words == "kiwi") | (words > "g"))


def test_comparison_is_never_a_python_bool():
    arr = lazyk.array(["kiwi", "apple"])
    assert not isinstance(arr == "kiwi", (bool, np.bool_))
    assert not isinstance("kiwi" != arr, (bool, np.bool_))
    np.testing.assert_array_equal(lazyk.evaluate(arr == np.str_("kiwi")), [True, False])
    np.testing.assert_array_equal(lazyk.evaluate(lazyk.equal(arr, "apple")), [False, True])


@pytest.mark.parametrize("build", [
    lambda a: a + "x", lambda a: "x" + a, lambda a: a * 2, lambda a: a + a, lambda a: -a,
    lambda a: a.sum(), lambda a: a.max(), lambda a: lazyk.sin(a), lambda a: lazyk.sqrt(a),
    lambda a: lazyk.where(a, a, a), lambda a: a.astype("int32"), lambda a: a.real,
    lambda a: np.add(a, a), lambda a: a == 3, lambda a: a < lazyk.array([1, 2]),
    lambda a: lazyk.str_len(lazyk.array([1, 2])),
    lambda a: np.array(["x", "y"]) == lazyk.array(np.array([b"x", b"y"])) + 0,
])
def test_refusals_name_type_and_operation(build):
    a = lazyk.array(["kiwi", "apple"])
    with pytest.raises(NotSupportedError) as info:
        build(a)
    text = str(info.value)
    assert "string" in text or "bytes" in text or "fixed_string" in text


def test_unsupported_layouts_are_refused():
    # ?string and var dims work (tests/test_strings_ragged.py); bytes elements do not
    with pytest.raises(NotSupportedError, match="bytes"):
        lazyk.array([[[b"a"]], [[b"b", b"c"]]], type="2 * var * var * bytes") == "a"
    with pytest.raises(UnsupportedOperandError, match="encodings"):
        lazyk.array(np.array(["a", "b"])) == lazyk.array(["a", "b"])


def test_cuda_refuses_strings():
    from lazyk.codegen import nvvm

    spec = runtime.plan((lazyk.array(["a"]) == "a").node).steps[0].spec
    with pytest.raises(NotSupportedError, match="string"):
        nvvm.check_supported(spec)


def test_nul_characters_in_strings():
    xs = ["a\x00", "a", "\x00", "", "a\x00b"]
    arr = lazyk.array(xs)
    for op in OPS:
        np.testing.assert_array_equal(lazyk.evaluate(op(arr, "a")), python(op, xs, ["a"] * 5))
    np.testing.assert_array_equal(lazyk.evaluate(lazyk.str_len(arr)), [len(x) for x in xs])


def test_compile_and_pickle():
    import pickle

    from lazyk.frontend.expr import as_expr

    names = lazyk.placeholder("names", "3 * string")  # one parameter, used twice
    f = lazyk.compile((names >= "b") & (lazyk.str_len(names) > 3))
    other = lazyk.array(["zz", "melon", "b\u00e9\u00e9"])
    np.testing.assert_array_equal(f(other), [False, True, False])
    g = pickle.loads(pickle.dumps(f))
    np.testing.assert_array_equal(g(other), [False, True, False])
    # a captured string array is a constant, and pickles with its strings
    kept = as_expr(lazyk.array(["kiwi", "apple", "fig"]))
    c = lazyk.compile((kept >= "b") & (lazyk.str_len(kept) > 3))
    assert c.signature == "() -> 3 * bool"
    np.testing.assert_array_equal(c(), [True, False, False])
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(c))(), [True, False, False])
    u = lazyk.compile(lazyk.placeholder("u", "2 * string") == "bc")
    np.testing.assert_array_equal(u(np.array(["bc", "x"])), [True, False])
    # NumPy unicode data is copied into a string array; numbers are refused
    np.testing.assert_array_equal(f(np.array(["a", "melon", "fig"])), [False, True, False])
    with pytest.raises(lazyk.TypeMatchError, match="string"):
        f(np.array([1.0, 2.0, 3.0]))


def test_numpy_records_shaped_like_string_elements_are_refused():
    fake = np.zeros(3, lazyk.frontend.ops.STRING)
    fake["utf8_begin"] = 16  # an address no kernel may read
    fake["utf8_size"] = 8
    with pytest.raises(NotSupportedError):
        lazyk.array(["a"]) == fake
    with pytest.raises(NotSupportedError):
        lazyk.str_len(fake)
    f = lazyk.compile(lazyk.placeholder("s", "3 * string") == "a")
    with pytest.raises(NotSupportedError):
        f(fake)
    for _ in range(3):  # evaluate(string) plans on the second call of a key
        with pytest.raises(NotSupportedError):
            lazyk.evaluate("a == b", local_dict={"a": fake, "b": fake})


def test_evaluate_string_with_string_arrays():
    a, b = lazyk.array(["kiwi", "apple", "fig"]), lazyk.array(["kiwi", "x", "fig"])
    u = np.array(["kiwi", "apple", "fig"])
    for _ in range(3):
        np.testing.assert_array_equal(lazyk.evaluate("a == b", local_dict={"a": a, "b": b}),
                                      [True, False, True])
        np.testing.assert_array_equal(lazyk.evaluate("a < b", local_dict={"a": u, "b": u[::-1]}),
                                      [False, False, True])


def test_constant_operands_fold():
    assert lazyk.evaluate(lazyk.less("a", "b")) == True  # noqa: E712 (a NumPy bool)
    assert lazyk.evaluate(lazyk.str_len("h\u00e9llo")) == 5
    assert lazyk.evaluate(lazyk.equal(b"a", b"a")) == True  # noqa: E712
    np.testing.assert_array_equal(
        lazyk.evaluate(lazyk.startswith("abc", lazyk.array(["a", "x", "abcd", ""]))),
        [True, False, False, True])
    with pytest.raises(UnsupportedOperandError, match="encodings"):
        lazyk.equal(b"a", "a")


@pytest.mark.parametrize("width", [3, 17, 70])  # memcmp against the padded parameter, loop
def test_fixed_width_with_nul_and_wide_elements(width):
    xs = ["ab", "a", "", "a\x00b", "ab" * (width // 2)]
    for dt in (f"U{width}", f"S{4 * width}"):
        arr = np.array([x.encode() if dt[0] == "S" else x for x in xs], dtype=dt)
        values = [x.decode() if isinstance(x, bytes) else str(x) for x in arr.tolist()]
        for c in ("ab", "ab\x00", "a\x00b", "", "\x00", "a", "ab" * (width // 2),
                  "ab" * (width // 2) + "x"):
            for op in OPS:  # (NumPy's rule: the constant ends before its trailing NULs)
                np.testing.assert_array_equal(lazyk.evaluate(op(lazyk.array(arr), c)),
                                              python(op, values, [c.rstrip("\0")] * len(values)),
                                              err_msg=f"{dt} {c!r}")
        if dt[0] == "U":
            continue  # UTF-32 against UTF-8 is refused
        other = lazyk.array(["ab", "ab\x00", "", "a\x00b", "ab"])  # against a string array
        for op in OPS:
            np.testing.assert_array_equal(
                lazyk.evaluate(op(lazyk.array(arr), other)),
                [op(v, o) for v, o in zip(values, ["ab", "ab\x00", "", "a\x00b", "ab"])])


def test_a_lone_surrogate_is_refused_naming_the_item():
    with pytest.raises(lazyk.ArrayConstructionError, match=r"item \[1\] .*no UTF-8 form"):
        lazyk.array(["ok", "\ud800"])
    with pytest.raises(lazyk.ArrayConstructionError, match=r"item \[1, 1\]"):
        lazyk.array([["ok"], ["a", "\ud800"]], "2 * var * string")


def test_utf16_fixed_strings_are_a_type_but_not_an_array():
    assert str(lazyk.dshape("2 * fixed_string[4, 'utf16']")) == "2 * fixed_string[4, 'utf16']"
    with pytest.raises(NotSupportedError, match="fixed_string\\[4, 'utf16'\\].*'utf32'"):
        lazyk.array(["ab", "c"], "2 * fixed_string[4, 'utf16']")


def test_a_python_string_without_utf8_form_is_refused_when_used():
    s = lazyk.array(["a", "é"])
    np.testing.assert_array_equal((s == "é").eval(), [False, True])
    with pytest.raises(UnsupportedOperandError, match="no UTF-8 form"):
        s == "\ud800"


def test_constants_ending_in_nul_compare_with_numpy_fixed_width_as_numpy():
    """NumPy 'S' / 'U' strings end before their trailing NULs, and so do the constants
    NumPy compares them with; lazyk's own strings (from lists, Arrow) keep every byte."""
    sb, u = np.array([b"ab", b"a"]), np.array(["a", "b", ""])
    cases = [(lazyk.array(sb) == b"a\x00", sb == b"a\x00"),
             (lazyk.array(sb) < b"a\x00", sb < b"a\x00"),
             (lazyk.array(u) == "b\x00", u == "b\x00"),
             (lazyk.array(u) == "\x00", u == "\x00"),
             (lazyk.startswith(lazyk.array(u), "a\x00"), np.char.startswith(u, "a\x00")),
             (lazyk.endswith(lazyk.array(u), "\x00"), np.char.endswith(u, "\x00"))]
    for got, want in cases:
        assert np.asarray(got.eval()).tolist() == want.tolist()
    s = lazyk.array(["a\x00", "a", ""])
    assert np.asarray((s == "a\x00").eval()).tolist() == [True, False, False]
    assert np.asarray(lazyk.endswith(s, "\x00").eval()).tolist() == [True, False, False]

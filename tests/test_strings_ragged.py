"""Strings in var dimensions, missing strings (`?string`) and string fields of records.

Every result is compared with a plain-Python reference over the same nested lists: an
elementwise string operation keeps the operands' rows and gives None where an operand is
missing; a reduction over the last axis folds each row (None in it makes the result None
unless skipna=True skips it).
"""
import operator
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from lazyk.arrays import arrmeta
from lazyk.errors import NotSupportedError, UnsupportedOperandError

OPS = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]
ALPHABET = st.sampled_from("ab\u00e9\u20ac\U0001f600z")
TEXT = st.text(ALPHABET, max_size=5)
MAYBE = st.one_of(TEXT, st.none())
ROWS = st.lists(st.lists(MAYBE, max_size=5), max_size=6)


def elementwise(fn, *xs):
    """fn over nested lists of equal structure; None in, None out."""
    if isinstance(xs[0], list):
        return [elementwise(fn, *ys) for ys in zip(*xs)]
    return None if any(x is None for x in xs) else fn(*xs)


def fold(fn, rows, skipna=False):
    """fn over each row's values (None: the row's result is None unless skipped)."""
    out = []
    for row in rows:
        if None in row and not skipna:
            out.append(None)
        else:
            out.append(fn([v for v in row if v is not None]))
    return out


def ragged(rows, missing=None):
    """`N * var * string`, or `N * var * ?string` when a value is missing (or `missing`)."""
    if missing is None:
        missing = any(v is None for r in rows for v in r)
    return lazyk.array(rows, type=f"{len(rows)} * var * {'?' if missing else ''}string")


def check(expr, want, type_text, static=True):
    got = expr.eval()
    assert str(got.type) == type_text
    if static:  # Expr.type, known before running (a skipna reduction under `&` is not)
        assert str(expr.type) == type_text
    assert got.to_list() == want


@given(ROWS, TEXT)
def test_compare_rows_with_python_str(rows, c):
    x = ragged(rows)
    q = "?" if "?" in str(x.type) else ""
    n = len(rows)
    for op in OPS:
        check(op(x, c), elementwise(lambda s, op=op: op(s, c), rows),
              f"{n} * var * {q}bool")
        check(op(c, x), elementwise(lambda s, op=op: op(c, s), rows),
              f"{n} * var * {q}bool")
    check(lazyk.str_len(x), elementwise(len, rows), f"{n} * var * {q}int64")
    check(lazyk.startswith(x, c), elementwise(lambda s: s.startswith(c), rows),
          f"{n} * var * {q}bool")
    check(lazyk.endswith(x, c), elementwise(lambda s: s.endswith(c), rows),
          f"{n} * var * {q}bool")


@given(st.data())
def test_compare_two_ragged_string_arrays(data):
    rows = data.draw(ROWS)
    other = [[data.draw(st.one_of(MAYBE, st.sampled_from([v for v in r if v] or [""])))
              for v in r] for r in rows]
    x, y = ragged(rows, True), ragged(other)
    n = len(rows)
    for op in OPS:
        check(op(x, y), elementwise(op, rows, other), f"{n} * var * ?bool")
    check(lazyk.startswith(x, y), elementwise(str.startswith, rows, other),
          f"{n} * var * ?bool")
    # length-1 rows broadcast along the other operand's rows
    first = [[r[0]] if r else [] for r in other]
    want = [[None if (s is None or r[0] is None) else s == r[0] for s in row] if r else []
            for row, r in zip(rows, first)]
    want = [w if r else [] for w, r in zip(want, first)]
    if all(len(r) == 1 or not r and not row for row, r in zip(rows, first)):
        check(x == ragged(first, True), want, f"{n} * var * ?bool")


@given(ROWS, TEXT)
def test_reductions_over_rows(rows, c):
    x = ragged(rows)
    n = len(rows)
    hit = elementwise(lambda s: s == c, rows)
    lens = elementwise(len, rows)
    q = "?" if "?" in str(x.type) else ""
    check((x == c).any(axis=-1), fold(any, hit), f"{n} * {q}bool")
    check((x == c).any(axis=-1, skipna=True), fold(any, hit, True), f"{n} * bool")
    check(lazyk.str_len(x).sum(axis=-1), fold(sum, lens), f"{n} * {q}int64")
    check(lazyk.str_len(x).sum(axis=-1, skipna=True), fold(sum, lens, True), f"{n} * int64")
    check(lazyk.count(x == c, axis=-1), [sum(v is not None for v in r) for r in rows],
          f"{n} * int64")
    for e, dt in (((x == c).any(axis=-1, skipna=True), np.bool_),
                  (lazyk.str_len(x).sum(axis=-1, skipna=True), np.int64)):
        got = e.to_numpy()
        assert got.dtype == dt and got.shape == (n,)
    flat = [v for r in hit for v in r]
    total = lazyk.sum(x == c, skipna=True).eval()
    assert total.to_numpy().dtype == np.int64 and int(total.to_numpy()) == sum(
        v for v in flat if v is not None)


@given(ROWS, TEXT)
def test_mixed_with_numeric_rows(rows, c):
    x = ragged(rows)
    price = [[float(k) for k in range(len(r))] for r in rows]
    p = lazyk.array(price, type=f"{len(rows)} * var * float64")
    q = "?" if "?" in str(x.type) else ""
    want = elementwise(lambda s, v: s == c and v > 1, rows, price)
    check((x == c) & (p > 1), want, f"{len(rows)} * var * {q}bool")
    want = elementwise(lambda s, v: len(s) * v, rows, price)
    check(lazyk.str_len(x) * p, want, f"{len(rows)} * var * {q}float64")
    check((lazyk.str_len(x) * p).sum(axis=-1, skipna=True),
          fold(sum, want, True), f"{len(rows)} * float64")


@given(st.lists(MAYBE, max_size=12), TEXT)
def test_missing_strings_fixed_dims(values, c):
    n = len(values)
    x = lazyk.array(values, type=f"{n} * ?string")
    price = np.arange(n, dtype=np.float64)
    for op in OPS:
        check(op(x, c), elementwise(lambda s, op=op: op(s, c), values), f"{n} * ?bool")
    check(lazyk.str_len(x), elementwise(len, values), f"{n} * ?int64")
    want = [None if s is None else s == c and p > 2 for s, p in zip(values, price)]
    check((x == c) & (lazyk.array(price) > 2), want, f"{n} * ?bool")
    hits = [s == c for s in values if s is not None]
    got = (x == c).sum(skipna=True).eval()
    assert str(got.type) == "int64" and got.to_list() == sum(hits)
    got = (x == c).sum().eval()
    assert str(got.type) == "?int64"
    assert got.to_list() == (None if None in values else sum(hits))
    # against a plain string array (one side missing)
    ys = [s if s is not None else "" for s in values][::-1]
    y = lazyk.array(ys, type=f"{n} * string")
    check(x < y, elementwise(operator.lt, values, ys), f"{n} * ?bool")


def test_nested_outer_dims_and_top_level_var():
    rows = [[["a", "bb"], []], [["bb"], ["a", None, "ccc"]]]
    x = lazyk.array(rows, type="2 * 2 * var * ?string")
    check(lazyk.str_len(x), [[[1, 2], []], [[2], [1, None, 3]]], "2 * 2 * var * ?int64")
    check((x == "a").any(axis=-1, skipna=True), [[True, False], [False, True]],
          "2 * 2 * bool")
    v = lazyk.array(["kiwi", "fig", "kiwi"], type="var * string")
    check(v == "kiwi", [True, False, True], "var * bool")
    assert (v == "kiwi").sum().eval().to_list() == 2


def test_records_with_string_fields():
    r = lazyk.array([{"name": "kiwi", "tags": ["x", "y"], "price": 3.0},
                     {"name": None, "tags": ["x"], "price": 1.0},
                     {"name": "fig", "tags": [], "price": 5.0},
                     {"name": "kiwi", "tags": ["z", None], "price": 4.0}],
                    type="4 * {name: ?string, tags: var * ?string, price: float64}")
    check(r.name == "kiwi", [True, None, False, True], "4 * ?bool")
    check(r["name"] == "kiwi", [True, None, False, True], "4 * ?bool")
    e = (r.tags == "x").any(axis=-1, skipna=True) & (r.price > 2)
    check(e, [True, False, False, False], "4 * bool", static=False)
    check(lazyk.str_len(r.tags).sum(axis=-1), [2, 1, 0, None], "4 * ?int64")
    check((r.name == "kiwi") & (r.price > 3.5), [False, None, False, True], "4 * ?bool")
    plain = lazyk.array([{"name": "kiwi", "tags": ["a"]}, {"name": "fig", "tags": []}],
                        type="2 * {name: string, tags: var * string}")
    check((plain.name == "kiwi") | (plain.tags == "a").any(axis=-1), [True, False],
          "2 * bool", static=False)


def test_string_field_of_records_inside_rows():
    # the field's elements are 16 of every 24 bytes: gathered element by element
    r = lazyk.array([[{"n": "kiwi", "k": 1}, {"n": "x", "k": 2}], [], [{"n": None, "k": 3}]],
                    type="3 * var * {k: int8, n: ?string}")
    check(r.n == "kiwi", [[True, False], [], [None]], "3 * var * ?bool")
    check(lazyk.str_len(r.n) + r.k, [[5, 3], [], [None]], "3 * var * ?int64")


def test_views_of_string_rows():
    rows = [["kiwi", "b", "c"], ["kiwi"], [], ["a", None, "kiwi"]]
    x = ragged(rows)
    for view, py in ((x[::-1], rows[::-1]), (x[:, 1:], [r[1:] for r in rows]),
                     (x[:, ::-1], [r[::-1] for r in rows]), (x[1:3], rows[1:3])):
        check(view == "kiwi", elementwise(lambda s: s == "kiwi", py),
              f"{len(py)} * var * ?bool")
    x[0, 0] = None  # a string set missing is never read
    check(lazyk.str_len(x), [[None, 1, 1], [4], [], [1, None, 4]], "4 * var * ?int64")


def test_empty_arrays():
    check(lazyk.array([], type="0 * var * string") == "a", [], "0 * var * bool")
    check(lazyk.array([], type="0 * ?string") == "a", [], "0 * ?bool")
    x = lazyk.array([[], []], type="2 * var * ?string")
    check(x == "a", [[], []], "2 * var * ?bool")
    check((x == "a").any(axis=-1), [False, False], "2 * ?bool")
    check(lazyk.str_len(x).sum(axis=-1), [0, 0], "2 * ?int64")
    check(lazyk.str_len(x).sum(axis=-1, skipna=True), [0, 0], "2 * int64")


def test_long_and_non_ascii_strings():
    long = "\u20ac" * 5000 + "x"
    rows = [[long, long[:-1] + "y", ""], [None, "\U0001f600" * 3000], ["x" * 70000]]
    x = ragged(rows)
    check(x == long, [[True, False, False], [None, False], [False]], "3 * var * ?bool")
    check(x < long, elementwise(lambda s: s < long, rows), "3 * var * ?bool")
    check(lazyk.str_len(x), elementwise(len, rows), "3 * var * ?int64")
    check(lazyk.endswith(x, "\U0001f600"), elementwise(lambda s: s.endswith("\U0001f600"),
                                                       rows), "3 * var * ?bool")


def test_large_ragged_matches_numpy():
    rng = np.random.default_rng(1)
    words = np.array(["x", "kiwi", "", "caf\u00e9", "xx"])
    lengths = rng.integers(0, 12, 20_000)
    flat = words[rng.integers(0, len(words), int(lengths.sum()))]
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    content = lazyk.array(flat.tolist(), type=f"{len(flat)} * string")
    tags = lazyk.from_offsets(offsets, content)
    assert str(tags.type) == f"{len(lengths)} * var * string"
    got = (tags == "x").any(axis=-1).to_numpy()
    want = np.logical_or.reduceat(np.append(flat == "x", False), offsets[:-1]) & (lengths > 0)
    np.testing.assert_array_equal(got, want)
    got = lazyk.str_len(tags).sum(axis=-1).to_numpy()
    assert got.dtype == np.int64
    np.testing.assert_array_equal(
        got, np.add.reduceat(np.append(np.strings.str_len(flat), 0), offsets[:-1]) *
        (lengths > 0))


def test_no_python_values_on_the_path(monkeypatch):
    x = lazyk.array([["kiwi", None], ["fig"], []], type="3 * var * ?string")
    r = lazyk.array([{"t": ["a", "b"]}, {"t": []}], type="2 * {t: var * string}")

    def refuse(*args, **kwargs):
        raise AssertionError("string values read through Python")
    monkeypatch.setattr(arrmeta, "read", refuse)
    (x == "kiwi").eval()
    (lazyk.str_len(x) > 2).any(axis=-1).eval()
    (r.t == "a").sum(axis=-1).eval()


@pytest.mark.parametrize("build", [
    lambda x: x + "a", lambda x: "a" + x, lambda x: x * 2, lambda x: x.sum(),
    lambda x: x.sum(axis=-1), lambda x: x.max(), lambda x: x.any(axis=-1), lambda x: -x,
    lambda x: lazyk.sqrt(x), lambda x: lazyk.where(x, 1, 2), lambda x: x == 3,
    lambda x: x < 1.5, lambda x: lazyk.str_len(x) + x,
    lambda x: x == lazyk.array(np.array(["a", "b"])),
])
@pytest.mark.parametrize("kind", ["3 * var * string", "3 * ?string", "3 * var * ?string"])
def test_refusals_name_type_and_operation(build, kind):
    values = ["a", None, "b"] if kind == "3 * ?string" else [["a", None], [], ["b"]]
    if "?" not in kind:
        values = [["a"], [], ["b"]]
    x = lazyk.array(values, type=kind)
    with pytest.raises(UnsupportedOperandError) as info:
        build(x)
    assert isinstance(info.value, NotSupportedError)
    text = str(info.value)
    assert "string" in text and kind.split(" * ", 1)[1] in text or "encodings" in text


def test_deeper_var_dims():
    # strings under several var dims: tests/test_strings_more.py has them all
    x = lazyk.array([[["a"]], [["b", "a"]]], type="2 * var * var * string")
    check(x == "a", [[[True]], [[False, True]]], "2 * var * var * bool")


def test_rows_outside_the_content_are_an_error():
    from lazyk.arrays.array import Array

    x = lazyk.array([["a", "b"], ["kiwi"]], type="2 * var * string")
    meta = list(x.meta)
    meta[8] = 1  # the var dim's content length: the rows now reach past it
    with pytest.raises(ValueError, match="outside the content"):
        Array.from_parts(x.type, tuple(meta), x.ptr, x.owner)  # a MemoryBlock: checked here
    bad = Array.from_parts(x.type, tuple(meta), x.ptr, object())  # any owner: where read
    with pytest.raises(ValueError, match="outside the content"):
        (bad == "a").eval()


def test_threads_evaluate_string_rows_at_once():
    from concurrent.futures import ThreadPoolExecutor

    rows = [["kiwi", None, "x"] * (k % 4) for k in range(3000)]
    x = ragged(rows)
    want = [sum(v == "x" for v in r if v is not None) for r in rows]

    def run(c):
        got = lazyk.count(x == c, axis=-1).eval()  # the present values, whatever c is
        hits = (x == c).sum(axis=-1, skipna=True).eval().to_list()
        return got.to_list(), hits
    with ThreadPoolExecutor(4) as pool:
        for counts, hits in pool.map(run, ["x"] * 16):
            assert counts == [2 * (k % 4) for k in range(3000)]
            assert hits == want


# ---------------------------------------------------------------- bytes elements
# `bytes` under the same dims as strings: comparisons in byte order (as Python's bytes),
# `str_len` is the byte length, missing in -> missing out; against str always an error.
from tests import ragged_reference as R  # noqa: E402
from tests import ragged_strategies as S  # noqa: E402

BYTE_VALUES = st.sampled_from([b"", b"a", b"ab", b"b", b"\x00", b"a\x00", b"\xff", b"\xffa",
                               b"\xc3\xa9", b"abc"])
BYTES_LAYOUTS = ("N * T",) + S.LAYOUTS + S.QVAR_LAYOUTS + S.QNEST_LAYOUTS


def _fill_bytes(draw, sk, leaf_option):
    if sk == "MISSING":
        return None
    if sk is None:
        return None if leaf_option and draw(st.integers(0, 3)) == 0 else draw(BYTE_VALUES)
    return [_fill_bytes(draw, x, leaf_option) for x in sk]


@st.composite
def bytes_case(draw, layouts=BYTES_LAYOUTS):
    """(dims, nested bytes, a second fill of the same rows, leaf option)."""
    dims, _, leaf_option = draw(S.layout_types(layouts, ("int64",)))
    sk = S.skeleton(draw, dims)
    return dims, _fill_bytes(draw, sk, leaf_option), _fill_bytes(draw, sk, leaf_option), \
        leaf_option


def tree(fn, *xs):
    """fn over nested lists of equal structure; None (a missing value or row) gives None."""
    if any(x is None for x in xs):
        return None
    if isinstance(xs[0], list):
        return [tree(fn, *ys) for ys in zip(*xs)]
    return fn(*xs)


def bytes_check(expr, want, dims, elem):
    got = expr.eval()
    assert str(got.type) == " * ".join(dims + [elem])
    assert got.to_list() == want
    return got


@settings(max_examples=8)
@given(bytes_case(), BYTE_VALUES)
def test_bytes_against_python_bytes(case, c):
    dims, d, _, q = case
    x = lazyk.array(d, type=" * ".join(dims + [("?" if q else "") + "bytes"]))
    p = "?" if q else ""
    for op in OPS:
        bytes_check(op(x, c), tree(lambda s, op=op: op(s, c), d), dims, p + "bool")
        bytes_check(op(c, x), tree(lambda s, op=op: op(c, s), d), dims, p + "bool")
    bytes_check(lazyk.str_len(x), tree(len, d), dims, p + "int64")
    bytes_check(lazyk.startswith(x, c), tree(lambda s: s.startswith(c), d), dims, p + "bool")
    bytes_check(lazyk.endswith(x, c), tree(lambda s: s.endswith(c), d), dims, p + "bool")


@settings(max_examples=8)
@given(bytes_case())
def test_two_bytes_arrays(case):
    dims, d, e, q = case
    t = " * ".join(dims + [("?" if q else "") + "bytes"])
    x, y = lazyk.array(d, type=t), lazyk.array(e, type=t)
    p = "?" if q else ""
    for op in OPS:
        bytes_check(op(x, y), tree(op, d, e), dims, p + "bool")
    bytes_check(lazyk.startswith(x, y), tree(bytes.startswith, d, e), dims, p + "bool")


@settings(max_examples=15)
@given(bytes_case(), BYTE_VALUES, st.booleans())
def test_bytes_results_reduced_as_the_reference(case, c, skipna):
    dims, d, _, q = case
    x = lazyk.array(d, type=" * ".join(dims + [("?" if q else "") + "bytes"]))
    p = "?" if q else ""
    lens = R.array(tree(len, d), " * ".join(dims + [p + "int64"]))
    hits = R.array(tree(lambda s: s == c, d), " * ".join(dims + [p + "bool"]))
    for ref, e in ((R.reduce("sum", lens, -1, skipna=skipna),
                    lazyk.str_len(x).sum(axis=-1, skipna=skipna)),
                   (R.reduce("any", hits, -1, skipna=skipna),
                    (x == c).any(axis=-1, skipna=skipna))):
        try:
            got = e.eval()
        except NotSupportedError:  # as for strings: refused by name, never wrong
            continue
        assert str(got.type) == str(ref.type)
        assert got.to_list() == ref.data


def test_bytes_by_hand_at_every_depth():
    x = lazyk.array([[[b"ab", b"c"]], [[b"x"]]], type="2 * var * var * bytes")
    check(x == b"ab", [[[True, False]], [[False]]], "2 * var * var * bool")
    check(lazyk.str_len(x), [[[2, 1]], [[1]]], "2 * var * var * int64")
    f = lazyk.array([b"\xff\x00", b"", None], type="3 * ?bytes")
    check(lazyk.str_len(f), [2, 0, None], "3 * ?int64")
    check(f < b"\xff\x01", [True, True, None], "3 * ?bool")
    check(f == np.array([b"\xff", b"", b"z"]), [False, True, None], "3 * ?bool")
    g = lazyk.array([b"ab", b"\xe9"], type="2 * bytes")
    check(lazyk.str_len(g), [2, 1], "2 * int64")  # bytes, not UTF-8 characters
    check(lazyk.startswith(g, b"a"), [True, False], "2 * bool")
    r = lazyk.array([[None, [b"a", None]], None], type="2 * ?var * ?var * ?bytes")
    check(lazyk.str_len(r), [[None, [1, None]], None], "2 * ?var * ?var * ?int64")
    rec = lazyk.array([{"k": b"kiwi", "v": 1.5}, {"k": b"x", "v": 2.0}],
                      type="2 * {k: bytes, v: float64}")
    check((rec.k == b"kiwi") & (rec.v > 1), [True, False], "2 * bool", static=False)


def test_bytes_empty_arrays_and_rows():
    check(lazyk.array([], type="0 * var * bytes") == b"a", [], "0 * var * bool")
    check(lazyk.array([], type="0 * ?bytes") == b"a", [], "0 * ?bool")
    x = lazyk.array([[], [b"a"], []], type="3 * var * ?bytes")
    check(x == b"a", [[], [True], []], "3 * var * ?bool")
    check(lazyk.str_len(x).sum(axis=-1), [0, 1, 0], "3 * ?int64")
    check(lazyk.array([[[]], []], type="2 * var * var * bytes") == b"",
          [[[]], []], "2 * var * var * bool")


def test_bytes_run_in_one_nest_kernel(monkeypatch):
    import lazyk.runtime.ragged as ragged_path

    x = lazyk.array([[b"kiwi", None], [b"x", b"kiwi"], []], type="3 * var * ?bytes")
    w = lazyk.array([[1.5, 2.0], [3.0, 4.0], []], type="3 * var * float64")

    def refuse(expr):
        raise AssertionError("the string step ran apart from the loop nest")
    monkeypatch.setattr(ragged_path, "lower_strings", refuse)
    check(((x == b"kiwi") * w).sum(axis=-1, skipna=True), [1.5, 4.0, 0.0], "3 * float64")
    check(lazyk.str_len(x) + w, [[5.5, None], [4.0, 8.0], []], "3 * var * ?float64")


@pytest.mark.parametrize("build", [
    lambda x: x == "ab", lambda x: "ab" != x, lambda x: x < "b", lambda x: lazyk.startswith(x, "a"),
    lambda x: x == lazyk.array([["ab"], [], ["c"]], type="3 * var * string"),
    lambda x: lazyk.endswith(x, lazyk.array([["ab"], [], ["c"]], type="3 * var * string")),
])
@pytest.mark.parametrize("kind", ["3 * var * bytes", "3 * var * ?bytes", "3 * var * var * bytes"])
def test_bytes_against_str_is_an_error(build, kind):
    values = [[[b"ab"]], [], [[b"c"]]] if "var * var" in kind else [[b"ab"], [], [b"c"]]
    x = lazyk.array(values, type=kind)
    with pytest.raises(TypeError) as info:
        build(x).eval()
    assert isinstance(info.value, lazyk.DTypeError)
    text = str(info.value)
    assert "bytes" in text and "str" in text and kind.split(" * ", 1)[1] in text
    f = lazyk.array([b"a"], type="1 * bytes")
    with pytest.raises(lazyk.DTypeError, match="bytes and str"):
        f == np.array(["a"])


@pytest.mark.parametrize("build", [lambda x: x + b"a", lambda x: x.sum(axis=-1),
                                   lambda x: x.max(), lambda x: lazyk.where(x, 1, 2)])
def test_bytes_refusals_name_type_and_operation(build):
    x = lazyk.array([[b"a", None], []], type="2 * var * ?bytes")
    with pytest.raises(UnsupportedOperandError) as info:
        build(x)
    assert isinstance(info.value, NotSupportedError) and "var * ?bytes" in str(info.value)


def test_records_with_string_fields_and_a_string_array_evaluated_alone():
    from lazyk.frontend.operands import as_expr

    s = lazyk.array([["bb", "a", "ccc"], [], ["z", "yy"]])
    assert as_expr(s).eval() is s  # (as where() over strings gives: the array itself)
    r = lazyk.zip({"s": s, "n": lazyk.str_len(s)})
    assert r.eval().to_list() == [[{"s": "bb", "n": 2}, {"s": "a", "n": 1},
                                   {"s": "ccc", "n": 3}], [], [{"s": "z", "n": 1},
                                                               {"s": "yy", "n": 2}]]
    q = lazyk.array([["b", None], None, ["z"]])
    assert lazyk.zip({"s": q, "n": lazyk.str_len(q)}).eval().to_list() == \
        [[{"s": "b", "n": 1}, {"s": None, "n": None}], None, [{"s": "z", "n": 1}]]
    # numbers from picked strings compute, and so do the picked strings themselves
    pairs = lazyk.combinations(s, 2)
    assert lazyk.str_len(pairs["1"]).eval().to_list() == [[1, 3, 3], [], [2]]
    assert (pairs["0"] == pairs["1"]).eval().to_list() == [[False] * 3, [], [False]]
    assert pairs.eval().to_list() == [[("bb", "a"), ("bb", "ccc"), ("a", "ccc")], [],
                                      [("z", "yy")]]
    assert lazyk.cartesian([s, lazyk.str_len(s)])["0"].eval().to_list() == \
        [["bb"] * 3 + ["a"] * 3 + ["ccc"] * 3, [], ["z", "z", "yy", "yy"]]
    nested = lazyk.cartesian({"a": s, "b": s}, nested=True)  # (Awkward's answer)
    assert nested.eval().to_list() == [
        [[{"a": p, "b": q} for q in row] for p in row] for row in s.to_list()]


def test_string_combinations_and_products_match_awkward():
    ak = pytest.importorskip("awkward")
    data = [["bb", "a", "ccc", None], [], ["z", "yy"], None, ["a"]]
    s, a = lazyk.array(data, type="5 * ?var * ?string"), ak.Array(data)
    n, an = lazyk.str_len(s), ak.Array([[2, 1, 3, None], [], [1, 2], None, [1]])
    for got, want in (
            (lazyk.combinations(s, 2), ak.combinations(a, 2)),
            (lazyk.combinations(s, 3, fields=["x", "y", "z"]).y,
             ak.combinations(a, 3, fields=["x", "y", "z"]).y),
            (lazyk.cartesian({"s": s, "n": n}), ak.cartesian({"s": a, "n": an})),
            (lazyk.cartesian({"s": s, "t": s[s != "a"]}).t,
             ak.cartesian({"s": a, "t": a[a != "a"]}).t)):
        assert got.eval().to_list() == want.to_list()


def _bools_like(x, rng, missing):
    if x is None:
        return None
    if isinstance(x, list):
        return [_bools_like(v, rng, missing) for v in x]
    return None if missing and rng.random() < 0.2 else bool(rng.random() < 0.5)


def test_string_selection_matches_awkward():
    ak = pytest.importorskip("awkward")
    rng = np.random.default_rng(4)

    def word():
        return "".join(rng.choice(list("ab\u00e9\u20acz"), rng.integers(0, 4)))

    def rows(n, depth, optv, optr):
        if depth == 0:
            return [None if optv and rng.random() < 0.25 else word() for _ in range(n)]
        return [None if optr and rng.random() < 0.2 else
                rows(int(rng.integers(0, 4)), depth - 1, optv, False) for _ in range(n)]
    checked = 0
    for _ in range(120):
        depth, optv, optr, optm = (int(rng.integers(1, 3)), *(rng.random(3) < [.5, .5, .4]))
        data = rows(int(rng.integers(1, 6)), depth, optv, optr)
        kind = ["inner", "rows", "middle"][int(rng.integers(0, 3 if depth == 2 else 2))]
        if kind == "inner":
            mask = _bools_like(data, rng, optm)
        elif kind == "rows":
            mask = [None if optm and rng.random() < 0.2 else bool(rng.random() < 0.5)
                    for _ in data]
        else:
            mask = [None if r is None else [bool(rng.random() < 0.5) for _ in r] for r in data]
        a, m = ak.Array(data), ak.Array(mask)
        if "unknown" in str(a.type) or "unknown" in str(m.type):
            continue  # (Awkward cannot type lists that are all empty)
        got = lazyk.from_awkward(a)[lazyk.from_awkward(m)]
        assert got.eval().to_list() == a[m].to_list(), (data, mask)
        checked += 1
    assert checked > 80


def test_string_selection_and_gather_in_larger_work_compile_and_dask():
    s = lazyk.array([["bb", "a", "ccc"], [], ["z", "yy"], None, ["a"]],
                    type="5 * ?var * string")
    kept = [["bb", "ccc"], [], ["z", "yy"], None, []]
    assert s[s != "a"].eval().to_list() == kept
    assert str(s[s != "a"].type) == "5 * ?var * string"
    assert lazyk.str_len(s[s != "a"]).eval().to_list() == [[2, 3], [], [1, 2], None, []]
    assert lazyk.num(s[s != "a"], axis=1).eval().to_list() == [2, 0, 2, None, 0]
    assert s[lazyk.array([True, False, True, True, False])].eval().to_list() == \
        [["bb", "a", "ccc"], ["z", "yy"], None]
    p = lazyk.placeholder("p", "N * ?var * string")
    assert lazyk.compile(p[p != "a"])(s).to_list() == kept
    pytest.importorskip("dask")
    import lazyk.dask as lazyk_dask

    rows = lazyk_dask.from_ragged(s, 2)  # (partitions with and without missing rows)
    assert lazyk_dask.evaluate(rows[rows != "a"]).compute().to_list() == kept
    # gathers: positions per row (negative from the end, missing: a missing item), the
    # take-back of argmax(..., keepdims=True), rows; a position outside its row is named
    pos = lazyk.array([[2, -3], [], [None], [0], [0]], type="5 * var * ?int64")
    assert s[pos].eval().to_list() == [["ccc", "bb"], [], [None], None, ["a"]]
    longest = s[lazyk.argmax(lazyk.str_len(s), axis=1, keepdims=True)]
    assert longest.eval().to_list() == [["ccc"], [None], ["yy"], None, ["a"]]
    assert lazyk.str_len(longest).eval().to_list() == [[3], [None], [2], None, [1]]
    assert s[lazyk.array([4, 0, -3])].eval().to_list() == [["a"], ["bb", "a", "ccc"],
                                                             ["z", "yy"]]
    assert lazyk.compile(p[lazyk.argmax(lazyk.str_len(p), axis=1, keepdims=True)])(s) \
        .to_list() == longest.eval().to_list()
    with pytest.raises(IndexError, match=r"x\[positions\]: position 3 is out of range for "
                                         r"row 0 of length 3"):
        s[lazyk.array([[3], [], [0], [0], [0]])].eval()
    with pytest.raises(IndexError, match=r"position 7 is out of range for the array of "
                                         r"length 5"):
        s[lazyk.array([7])].eval()
    with pytest.raises(lazyk.ShapeError, match=r"x\[mask\]: row 0 at dim 0 has length 3 "
                                               r"in the array and 2 in the mask"):
        s[lazyk.array([[True, False], [], [True, True], [], [True]])].eval()


def test_string_gathers_match_awkward():
    ak = pytest.importorskip("awkward")
    rng = np.random.default_rng(9)
    checked = 0
    for _ in range(120):
        optv, optr, optp = rng.random(3) < [0.5, 0.5, 0.4]
        data = [None if optr and rng.random() < 0.2 else
                [None if optv and rng.random() < 0.25 else "".join(rng.choice(list("ab\u00e9z"),
                                                                            rng.integers(0, 4)))
                 for _ in range(int(rng.integers(0, 5)))] for _ in range(int(rng.integers(1, 6)))]
        pos = [None if r is None else
               [None if optp and rng.random() < 0.2 else int(rng.integers(-len(r), len(r)))
                for _ in range(int(rng.integers(0, 4)))] if r else [] for r in data]
        a, p = ak.Array(data), ak.Array(pos)
        if "unknown" in str(a.type) or "unknown" in str(p.type):
            continue
        got = lazyk.from_awkward(a)[lazyk.from_awkward(p)].eval().to_list()
        assert got == a[p].to_list(), (data, pos)
        checked += 1
    assert checked > 60


@pytest.mark.parametrize("data", [
    [["a", "x", "b"], ["y"], ["x", "q"], ["c", "d"]],
    [["a", "x", "b"], None, ["c", "x"]],
    [[["a", "x"], ["b"]], [], [["x", "q", "r"]]],
])
def test_items_and_slices_of_selected_strings_match_awkward(data):
    ak = pytest.importorskip("awkward")
    v, a = lazyk.array(data), ak.Array(data)
    keys = [(slice(None), 0), (slice(None), -1), (slice(None), slice(None, 1)),
            (slice(None), slice(1, None)), (slice(None), slice(-1, None))]
    if len(ak.ravel(a)) and a.ndim == 3:
        keys = keys[2:] + [(slice(None), slice(None), 0), (slice(None), slice(None), -1),
                           (slice(None), slice(None), slice(1, None))]
    for key in keys:
        got = v[v != "x"][key]
        assert got.eval().to_list() == a[a != "x"][key].to_list(), key
        assert str(got.type).endswith("string")
    if a.ndim == 3:  # an empty list has no item 0, as in Awkward
        with pytest.raises(IndexError, match="row 1"):
            v[v != "x"][:, 0].eval()


def test_pad_none_clip_of_strings_with_missing_lists_matches_awkward():
    ak = pytest.importorskip("awkward")
    data = [["kiwi", "x"], [], None, ["café", None, ""]]
    e = lazyk.pad_none(lazyk.array(data), 2, clip=True)
    assert str(e.type) == "4 * ?var * ?string" == str(e.eval().type)
    assert e.eval().to_list() == ak.pad_none(ak.Array(data), 2, clip=True).to_list()
    assert lazyk.str_len(e).eval().to_list() == [[4, 1], [None, None], None, [4, None]]


def test_string_parameters_read_numpy_bytes_as_utf8_text():
    s = lazyk.placeholder("s", "N * string")
    k = lazyk.compile(lazyk.str_len(s))
    np.testing.assert_array_equal(k(np.array([b"ab", b"caf\xc3\xa9"])), [2, 4])
    np.testing.assert_array_equal(lazyk.compile(s == "ab")(np.array([b"ab", b"x"])),
                                  [True, False])
    with pytest.raises(lazyk.TypeMatchError, match="input 's'.*not UTF-8"):
        k(np.array([b"\xff"]))
    b = lazyk.placeholder("b", "N * bytes")  # bytes parameters keep bytes
    np.testing.assert_array_equal(lazyk.compile(b == b"ab")(np.array([b"ab", b"x"])),
                                  [True, False])


def test_out_for_a_string_result_is_refused_as_such():
    s = lazyk.placeholder("s", "N * var * ?string")
    v = lazyk.placeholder("v", "N * var * float64")
    k = lazyk.compile(s[v > 1])
    assert k([["a", "b", None], []], [[1.0, 2.0, 3.0], []]).to_list() == [["b", None], []]
    with pytest.raises(lazyk.NotSupportedError, match="out= for a string result"):
        k([["a", "b", None], []], [[1.0, 2.0, 3.0], []], out=lazyk.array([["x", "y"], []]))


def test_fill_none_of_numbers_computed_from_strings():
    s = lazyk.array(["a", None, "b"])
    assert lazyk.fill_none(s == "a", False).eval().to_list() == [True, False, False]
    assert lazyk.fill_none(lazyk.str_len(s), 0).eval().to_list() == [1, 0, 1]
    r = lazyk.array([["a", None], None, ["bc"]], type="3 * ?var * ?string")
    assert lazyk.fill_none(lazyk.str_len(r), -1).eval().to_list() == [[1, -1], None, [2]]


@pytest.mark.parametrize("data,t", [([["a", "b"], [], ["c"]], None),
                                    ([["a", None], None, ["é", ""]], "3 * ?var * ?string"),
                                    ([[["x"], []], [["y", "z"]]], None)])
def test_flatten_of_strings_with_no_axis_gives_every_present_string(data, t):
    ak = pytest.importorskip("awkward")
    x = lazyk.array(data, type=t) if t else lazyk.array(data)
    assert lazyk.flatten(x, axis=None).eval().to_list() == \
        ak.flatten(ak.Array(data), axis=None).to_list()


def test_concatenate_of_strings_with_bytes_is_refused():
    s = lazyk.array([["x", "é"], []])
    b = lazyk.array([[b"x"], [b"\xff"]])
    for pair in ([s, b], [b, s]):
        with pytest.raises(TypeError, match="strings with bytes"):
            lazyk.concatenate(pair, axis=1)
    assert lazyk.concatenate([s, s], axis=1).eval().to_list() == [["x", "é", "x", "é"], []]
    assert lazyk.concatenate([np.array(["a"]), np.array(["abc"])]).eval().to_list() == \
        ["a", "abc"]


def test_fixed_size_lists_of_strings_in_records_that_may_be_missing():
    pa = pytest.importorskip("pyarrow")
    kind = pa.struct([("t", pa.list_(pa.string(), 2)), ("i", pa.int64())])
    data = [{"t": ["a", "bc"], "i": 1}, None, {"t": ["ccc", None], "i": 3}]
    x = lazyk.from_arrow(pa.array(data, type=kind))
    assert str(x.type) == "3 * ?{t: 2 * ?string, i: int64}"
    # copies, pickles and Arrow read the missing record's empty strings (no characters)
    assert x.copy().to_list() == data == pickle.loads(pickle.dumps(x)).to_list()
    assert lazyk.to_arrow(x).to_pylist() == data and x.t.copy().to_list() == \
        [["a", "bc"], None, ["ccc", None]]
    # string operations read the fixed-size lists that may be missing as ?var rows
    assert lazyk.str_len(x.t).eval().to_list() == [[1, 2], None, [3, None]]
    assert (x.t == "a").eval().to_list() == [[True, False], None, [False, None]]
    assert lazyk.sum(lazyk.str_len(x.t), axis=1, skipna=True).eval().to_list() == [3, None, 3]
    made = lazyk.array([None, {"t": ["a", "b"], "i": 1}], "2 * ?{t: 2 * string, i: int64}")
    assert made.copy().to_list() == [None, {"t": ["a", "b"], "i": 1}]

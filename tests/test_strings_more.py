"""Strings: bytes and str constants against every kind of string data, strings under
several var dims, compiled expressions over ragged and missing strings, and operators
with Python containers.

Every result is compared with plain Python over the same values (None: missing).
"""
import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from lazyk.errors import NotSupportedError, UnsupportedOperandError
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_ragged_today import check as check_ref

OPS = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]
ALPHABET = st.sampled_from("ab\u00e9\u20ac\U0001f600z")
TEXT = st.text(ALPHABET, max_size=5)
MAYBE = st.one_of(TEXT, st.none())


def elementwise(fn, *xs):
    """fn over nested lists of equal structure; None in, None out."""
    if isinstance(xs[0], list):
        return [elementwise(fn, *ys) for ys in zip(*xs)]
    return None if any(x is None for x in xs) else fn(*xs)


def check(expr, want, type_text):
    got = expr.eval()
    assert str(got.type) == type_text
    assert str(expr.type) == type_text
    assert got.to_list() == want


# ---------------------------------------------------------------- bytes and str constants
def kinds(strings):
    """The same strings as each kind of string data."""
    yield lazyk.array(strings, type=f"{len(strings)} * string")
    yield lazyk.array(np.array(strings, dtype=f"U{max(map(len, strings), default=0) + 1}"))
    width = max((len(s.encode()) for s in strings), default=0) + 1
    yield lazyk.array(np.array([s.encode() for s in strings], dtype=f"S{width}"))


@given(st.lists(TEXT, max_size=8), TEXT)
def test_str_and_bytes_constants_compare_alike(strings, c):
    # a str and its UTF-8 bytes give the same answer against every kind of string data,
    # in both orders (UTF-8 byte order is code point order)
    for arr in kinds(strings):
        for op in OPS:
            want = [op(s, c) for s in strings]
            for const in (c, c.encode()):
                got = lazyk.evaluate(op(arr, const))
                assert got.dtype == np.bool_ and got.shape == (len(strings),)
                assert got.tolist() == want, (arr.type, op, const)
                got = lazyk.evaluate(op(const, arr))
                assert got.tolist() == [op(c, s) for s in strings]
        for const in (c, c.encode()):
            got = lazyk.evaluate(lazyk.startswith(arr, const))
            assert got.tolist() == [s.startswith(c) for s in strings]
            got = lazyk.evaluate(lazyk.endswith(arr, const))
            assert got.tolist() == [s.endswith(c) for s in strings]


@given(st.lists(st.lists(MAYBE, max_size=4), max_size=5), TEXT)
def test_bytes_constant_against_ragged_missing_strings(rows, c):
    x = lazyk.array(rows, type=f"{len(rows)} * var * ?string")
    for op in OPS:
        check(op(x, c.encode()), elementwise(lambda s, op=op: op(s, c), rows),
              f"{len(rows)} * var * ?bool")


def test_bytes_that_are_not_utf8_against_utf32_data():
    u = lazyk.array(np.array(["a", "\u00e9"]))
    with pytest.raises(UnsupportedOperandError, match="not UTF-8"):
        u == b"\xff"
    # against UTF-8 data the bytes compare as they are
    s = lazyk.array(["a", "\u00e9"])
    assert lazyk.evaluate(s < b"\xff").tolist() == [True, True]
    assert lazyk.evaluate(s == "\u00e9".encode("latin-1")).tolist() == [False, False]


def test_data_of_two_encodings_is_still_refused():
    with pytest.raises(UnsupportedOperandError, match="encodings"):
        lazyk.array(np.array(["a", "b"])) == lazyk.array(np.array([b"a", b"b"]))
    with pytest.raises(UnsupportedOperandError, match="encodings"):
        lazyk.equal("a", b"a")


# ---------------------------------------------------------------- Python containers
CONTAINERS = [[1, 2], (1, 2), {"a": 1}, {1, 2}, None]
BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
          operator.mod, operator.pow, operator.and_, operator.or_, operator.xor,
          operator.lt, operator.le, operator.gt, operator.ge]


@pytest.mark.parametrize("other", CONTAINERS, ids=lambda v: type(v).__name__)
@pytest.mark.parametrize("kind", ["2 * float64", "2 * var * float64", "2 * ?int64",
                                  "expr", "2 * string"])
def test_operators_with_python_containers(other, kind):
    if kind == "expr":
        x, shown = lazyk.array([1.0, 2.0]) + 1, "2 * float64"
    elif kind == "2 * var * float64":
        x, shown = lazyk.array([[1.0], [2.0, 3.0]]), kind
    elif kind == "2 * ?int64":
        x, shown = lazyk.array([1, None]), kind
    elif kind == "2 * string":
        x, shown = lazyk.array(["a", "b"]), kind
    else:
        x, shown = lazyk.array([1.0, 2.0]), kind
    name = type(other).__name__
    for op in BINARY:
        for args in ((x, other), (other, x)):
            if op in (operator.lt, operator.le, operator.gt, operator.ge) and \
                    args[0] is other and other is None:
                continue  # None < x: Python asks x > None, the same refusal
            with pytest.raises(UnsupportedOperandError) as info:
                op(*args)
            text = str(info.value)
            assert shown in text and name in text, text
            if isinstance(other, (list, tuple)) and op not in (operator.lt, operator.le,
                                                               operator.gt, operator.ge):
                assert "lazyk.array([1, 2])" in text


def test_arrays_still_combine_with_numpy_and_scalars():
    x = lazyk.array([1.0, 2.0])
    assert (x + np.array([1, 2])).eval().to_list() == [2.0, 4.0]
    assert (x + lazyk.array([1, 2])).eval().to_list() == [2.0, 4.0]
    assert (3 - x).eval().to_list() == [2.0, 1.0]


# ---------------------------------------------------------------- strings under var dims
# every layout of the loop nest, missing rows above, between and under var dims included
LAYOUTS = S.LAYOUTS + S.QNEST_LAYOUTS + S.QVAR_LAYOUTS


def fill_text(draw, sk, leaf_option, level, nd):
    """Strings into a skeleton of `tests/ragged_strategies.py` (None: missing)."""
    if sk == "MISSING":
        return None
    if level == nd:
        if leaf_option and draw(st.integers(0, 3)) == 0:
            return None
        return draw(TEXT)
    return [fill_text(draw, x, leaf_option, level + 1, nd) for x in sk]


@st.composite
def text_array(draw, layouts=LAYOUTS):
    """(dims, leaf option, nested lists of str)."""
    dims, _, leaf_option = draw(S.layout_types(layouts, ("int64",)))
    sk = S.skeleton(draw, dims)
    return dims, leaf_option, fill_text(draw, sk, leaf_option, 0, len(dims))


@st.composite
def text_pair(draw, layouts=LAYOUTS):
    """Two string operands of one row structure: some rows of length 1 (they broadcast),
    each with missing rows and values of its own."""
    dims, _, _ = draw(S.layout_types(layouts, ("int64",)))
    sk = S.skeleton(draw, [d.lstrip("?") for d in dims])
    out = []
    for _ in range(2):
        option = draw(st.booleans())
        mine = [d if not d.startswith("?") or draw(st.booleans()) else d[1:] for d in dims]
        data = S._shrink_rows(draw, fill_text(draw, sk, option, 0, len(dims)), dims)
        out.append((mine, option, S._drop_rows(draw, data, mine)))
    return out


def tmap(fn, data):
    """fn on every string of nested lists (None stays None: a missing value or row)."""
    if isinstance(data, list):
        return [tmap(fn, x) for x in data]
    return None if data is None else fn(data)


def strings(data):
    if isinstance(data, list):
        return [s for x in data for s in strings(x)]
    return [] if data is None else [data]


def typed(dims, option, leaf):
    return S.type_string(dims, leaf, option)


@settings(max_examples=20)  # about 15 expressions per example
@given(text_array(), TEXT)
def test_nested_strings_with_a_python_str(case, c):
    dims, option, data = case
    x = lazyk.array(data, type=typed(dims, option, "string"))
    for op in OPS:
        want = R.array(tmap(lambda s, op=op: op(s, c), data), typed(dims, option, "bool"))
        assert check_ref(lambda: want, lambda op=op: op(x, c)) == "match"
    lens = R.array(tmap(len, data), typed(dims, option, "int64"))
    assert check_ref(lambda: lens, lambda: lazyk.str_len(x)) == "match"
    starts = R.array(tmap(lambda s: s.startswith(c), data), typed(dims, option, "bool"))
    assert check_ref(lambda: starts, lambda: lazyk.startswith(x, c)) == "match"
    ends = R.array(tmap(lambda s: s.endswith(c), data), typed(dims, option, "bool"))
    assert check_ref(lambda: ends, lambda: lazyk.endswith(x, c)) == "match"
    # then numeric work and reductions over the last axis, as for numeric data
    hit = R.array(tmap(lambda s: s == c, data), typed(dims, option, "bool"))
    for skipna in (False, True):
        assert check_ref(lambda: R.reduce("any", hit, -1, skipna=skipna),
                         lambda: (x == c).any(axis=-1, skipna=skipna)) in ("match", "refused")
        assert check_ref(lambda: R.reduce("sum", lens, -1, skipna=skipna),
                         lambda: lazyk.str_len(x).sum(axis=-1, skipna=skipna)) in (
            "match", "refused")
    assert check_ref(lambda: R.elementwise("multiply", lens, 2),
                     lambda: lazyk.str_len(x) * 2) == "match"
    # where() over missing strings: the string step runs first (then the nest)
    assert check_ref(lambda: R.where(hit, lens, 0),
                     lambda: lazyk.where(x == c, lazyk.str_len(x), 0)) in ("match", "refused")


@given(text_pair())
def test_two_nested_string_arrays(pair):
    (da, oa, a), (db, ob, b) = pair
    # the order of the strings is the order of their ranks: the reference compares ranks
    vocab = {s: k for k, s in enumerate(sorted(set(strings(a) + strings(b))))}
    ra = R.array(tmap(vocab.get, a), typed(da, oa, "int64"))
    rb = R.array(tmap(vocab.get, b), typed(db, ob, "int64"))
    x = lazyk.array(a, type=typed(da, oa, "string"))
    y = lazyk.array(b, type=typed(db, ob, "string"))
    for op, name in ((operator.eq, "equal"), (operator.lt, "less"),
                     (operator.ge, "greater_equal")):
        got = check_ref(lambda name=name: R.elementwise(name, ra, rb),
                        lambda op=op: op(x, y))
        assert got in ("match", "raises")


def test_nested_strings_examples():
    x = lazyk.array([[["a", "bb"], []], [["bb"], ["a", "", "\u20ac\u00e9"]]],
                    type="2 * var * var * string")
    check(x == "a", [[[True, False], []], [[False], [True, False, False]]],
          "2 * var * var * bool")
    check(lazyk.str_len(x), [[[1, 2], []], [[2], [1, 0, 2]]], "2 * var * var * int64")
    check(lazyk.str_len(x).sum(axis=-1), [[3, 0], [2, 3]], "2 * var * int64")
    y = lazyk.array([[["a", None], []], [[None], ["a", None, "ccc"]]],
                    type="2 * var * var * ?string")
    check(x == y, [[[True, None], []], [[None], [True, None, False]]],
          "2 * var * var * ?bool")
    one = lazyk.array([[["bb"], []], [["bb"], ["a"]]], type="2 * var * var * string")
    check(x == one, [[[False, True], []], [[True], [True, False, False]]],
          "2 * var * var * bool")  # length-1 rows broadcast
    bad = lazyk.array([[["a", "b", "c"], []], [["bb"], ["a"]]], type="2 * var * var * string")
    with pytest.raises(lazyk.ShapeError):
        (x == bad).eval()
    # mixed with numeric var * var data, reduced over the last axis
    w = lazyk.array([[[1.0, 2.0], []], [[3.0], [4.0, 5.0, 6.0]]], type="2 * var * var * float64")
    check(((x == "a") * w).sum(axis=-1), [[1.0, 0.0], [0.0, 4.0]], "2 * var * float64")
    # a fixed dim inside rows, a missing row, a top-level var dim
    f = lazyk.array([[["a", "b"], ["c", ""]], []], type="var * var * 2 * string")
    check(f == "c", [[[False, False], [True, False]], []], "var * var * 2 * bool")
    q = lazyk.from_offsets(np.array([0, 2, 2, 3]), lazyk.array(["a", "\u00e9", "c"]),
                           validity=[True, False, True])
    check(q == "\u00e9", [[False, True], None, [False]], "3 * ?var * bool")
    check(lazyk.str_len(q).sum(axis=-1), [2, None, 1], "3 * ?int64")


def test_nested_empty_arrays_rows_and_strings():
    check(lazyk.array([], type="0 * var * var * string") == "a", [], "0 * var * var * bool")
    x = lazyk.array([[], [[]], [[""], []]], type="3 * var * var * ?string")
    check(x == "", [[], [[]], [[True], []]], "3 * var * var * ?bool")
    check(lazyk.str_len(x).sum(axis=-1), [[], [0], [0, 0]], "3 * var * ?int64")
    y = lazyk.array([[[None]]], type="1 * var * var * ?string")
    check(lazyk.str_len(y), [[[None]]], "1 * var * var * ?int64")


def test_nested_views_records_and_from_offsets():
    rows = [[["kiwi", "b"], ["c"]], [], [["a", None, "kiwi"]], [["kiwi"]]]
    x = lazyk.array(rows, type="4 * var * var * ?string")
    for view, py in ((x[::-1], rows[::-1]), (x[1:3], rows[1:3]), (x[2], rows[2])):
        check(view == "kiwi", tmap(lambda s: s == "kiwi", py),
              str(view.type).replace("string", "bool"))
    r = lazyk.array([[[{"n": "kiwi", "k": 1}], [{"n": None, "k": 2}]], []],
                    type="2 * var * var * {k: int8, n: ?string}")
    check(r.n == "kiwi", [[[True], [None]], []], "2 * var * var * ?bool")
    check(lazyk.str_len(r.n) + r.k, [[[5], [None]], []], "2 * var * var * ?int64")
    words = lazyk.array(["x", "kiwi", "", "caf\u00e9", "x"], type="5 * string")
    inner = lazyk.from_offsets(np.array([0, 2, 2, 5], np.int32), words)
    outer = lazyk.from_offsets(np.array([0, 1, 3]), inner)
    assert str(outer.type) == "2 * var * var * string"
    check(outer == "x", [[[True, False]], [[], [False, False, True]]], "2 * var * var * bool")


def test_large_nested_matches_numpy():
    rng = np.random.default_rng(2)
    words = np.array(["x", "kiwi", "", "caf\u00e9", "xx"])
    inner_len = rng.integers(0, 6, 5000)
    flat = words[rng.integers(0, len(words), int(inner_len.sum()))]
    inner_off = np.concatenate(([0], np.cumsum(inner_len)))
    outer_len = np.full(1000, 5)
    outer_off = np.concatenate(([0], np.cumsum(outer_len)))
    content = lazyk.array(flat.tolist(), type=f"{len(flat)} * string")
    x = lazyk.from_offsets(outer_off, lazyk.from_offsets(inner_off, content))
    got = lazyk.str_len(x).sum(axis=-1).eval()
    assert str(got.type) == "1000 * var * int64"
    want = np.add.reduceat(np.append(np.strings.str_len(flat), 0), inner_off[:-1]) * \
        (inner_len > 0)
    assert got.to_list() == want.reshape(1000, 5).tolist()
    hits = (x == "x").sum(axis=-1).eval().to_list()
    want = np.add.reduceat(np.append(flat == "x", False), inner_off[:-1]) * (inner_len > 0)
    assert hits == want.reshape(1000, 5).tolist()


def test_bytes_elements_under_var_dims_are_refused():
    x = lazyk.array([[[b"a"]], [[b"b", b"c"]]], type="2 * var * var * bytes")
    with pytest.raises(NotSupportedError, match="bytes"):
        x == "a"


# ---------------------------------------------------------------- lazyk.compile
def test_compile_over_ragged_and_missing_strings():
    import pickle

    s = lazyk.placeholder("s", "N * var * ?string")
    k = lazyk.compile((s == "kiwi").any(axis=-1, skipna=True))
    assert k.signature == "(s: N * var * ?string) -> N * bool"
    rows = [["kiwi", None], [], [None], ["fig", "kiwi", "\u00e9"]]
    x = lazyk.array(rows, type="4 * var * ?string")
    got = k(x)
    assert str(got.type) == "4 * bool" and got.to_list() == [True, False, False, True]
    assert pickle.loads(pickle.dumps(k))(x).to_list() == [True, False, False, True]
    assert k(x[::-1]).to_list() == [True, False, False, True][::-1]

    lens = lazyk.compile(lazyk.str_len(lazyk.placeholder("q", "N * ?string")) + 1)
    assert lens.signature == "(q: N * ?string) -> N * ?int64"
    got = lens(lazyk.array(["ab", None, "", "\U0001f600"]))
    assert str(got.type) == "4 * ?int64" and got.to_list() == [3, None, 1, 2]
    assert lens(["a", None]).to_list() == [2, None]  # lists: lazyk infers ?string

    one = lazyk.compile(lazyk.str_len(lazyk.placeholder("q", "?string")))
    assert one(lazyk.array(None, type="?string")).to_list() is None
    assert one(lazyk.array("abc", type="?string")).to_list() == 3

    fixed = lazyk.compile(lazyk.placeholder("f", "N * string") >= "b")
    assert fixed.signature == "(f: N * string) -> N * bool"
    assert fixed(lazyk.array(["a", "b", "\u00e9"])).tolist() == [False, True, True]

    d = lazyk.placeholder("d", "N * var * var * string")
    p = lazyk.placeholder("p", "N * var * var * float64")
    nested = lazyk.compile(((d == "a") * p).sum(axis=-1))
    assert nested.signature == ("(d: N * var * var * string, p: N * var * var * float64) "
                                "-> N * var * float64")
    got = nested(lazyk.array([[["a", "b"], []], [["a"]]], type="2 * var * var * string"),
                 [[[1.0, 2.0], []], [[3.0]]])
    assert str(got.type) == "2 * var * float64" and got.to_list() == [[1.0, 0.0], [3.0]]


def test_compile_string_rows_from_fixed_arrays_and_lists():
    k = lazyk.compile(lazyk.str_len(lazyk.placeholder("s", "N * var * string")).sum(axis=-1))
    want = [3, 1]
    assert k([["ab", "c"], ["\u00e9"]]).to_list() == want
    # a fixed lazyk string array fills a var parameter as rows of one length
    square = lazyk.array([["ab", "c"], ["\u00e9", ""]])
    assert str(square.type) == "2 * 2 * string"
    assert k(square).to_list() == [3, 1]
    assert k(square[:, ::-1]).to_list() == [3, 1]  # strided: packed again
    assert k(square[:, 1:]).to_list() == [1, 0]


@given(st.lists(st.lists(MAYBE, max_size=4), max_size=6), TEXT)
def test_compiled_string_rows_match_the_reference(rows, c):
    x = lazyk.array(rows, type=f"{len(rows)} * var * ?string")
    hit = R.array(tmap(lambda s: s == c, rows), f"{len(rows)} * var * ?bool")
    lens = R.array(tmap(len, rows), f"{len(rows)} * var * ?int64")
    assert check_ref(lambda: R.reduce("sum", lens, -1, skipna=True),
                     lambda: COMPILED(x)) == "match"
    assert check_ref(lambda: R.elementwise("logical_and", hit, True),
                     lambda: lazyk.compile(lazyk.placeholder("s", "N * var * ?string") == c)(
                         x)) == "match"


COMPILED = lazyk.compile(lazyk.str_len(lazyk.placeholder("s", "N * var * ?string")).sum(
    axis=-1, skipna=True))


def test_compiled_strings_compile_once_per_structure():
    x = lazyk.array([["a", None], ["bb"]], type="2 * var * ?string")
    COMPILED(x)
    before = lazyk.stats()["compiles"]
    for n in (1, 5, 50, 500):
        rows = [["x" * (k % 3), None][: k % 3] for k in range(n)]
        got = COMPILED(lazyk.array(rows, type=f"{n} * var * ?string"))
        assert got.to_list() == [sum(len(s) for s in r if s is not None) for r in rows]
    assert lazyk.stats()["compiles"] == before


def test_compiled_string_parameters_check_their_inputs():
    s = lazyk.compile(lazyk.placeholder("s", "N * var * string") == "a")
    q = lazyk.compile(lazyk.placeholder("q", "N * var * ?string") == "a")
    num = lazyk.compile(lazyk.placeholder("p", "N * var * float64") + 1)
    cases = [
        (s, lazyk.array([[1.0], []]), "string"),
        (s, lazyk.array([["a", None]], type="1 * var * ?string"), "missing values"),
        (s, np.array([[1.0]]), "string"),
        (s, lazyk.array([[["a"]]], type="1 * var * var * string"), "dimensions"),
        (num, lazyk.array([["a"]], type="1 * var * string"), "string"),
    ]
    for k, x, match in cases:
        with pytest.raises(lazyk.TypeMatchError, match=match) as info:
            k(x)
        assert k.signature in str(info.value)
    # NumPy strings are copied into string rows; data without missing values fits ?string
    assert s(np.array([["a", "b"]])).to_list() == [[True, False]]
    got = q(lazyk.array([["a"]], type="1 * var * string"))
    assert str(got.type) == "1 * var * ?bool" and got.to_list() == [[True]]


def test_nested_rows_outside_the_content_are_an_error():
    from lazyk.arrays.array import Array

    x = lazyk.array([[["a", "b"], ["kiwi"]], [["c"]]], type="2 * var * var * string")
    meta = list(x.meta)
    meta[-2] = 1  # the inner var dim's content length: rows now reach past it
    with pytest.raises(ValueError, match="var row 0: start 0, stop 2"):
        Array.from_parts(x.type, tuple(meta), x.ptr, x.owner)  # a MemoryBlock: checked here
    bad = Array.from_parts(x.type, tuple(meta), x.ptr, object())  # unchecked until read
    with pytest.raises(ValueError):
        (bad == "a").eval()
    meta = list(x.meta)
    meta[-2] = 10 ** 6  # content past the end of its block
    bad = Array.from_parts(x.type, tuple(meta), x.ptr, object())
    with pytest.raises(ValueError, match="outside"):
        (bad == "a").eval()
    words = lazyk.array(["a", "b", "c"], type="3 * string")
    offsets = np.array([0, 2, 1, 3])
    inner = lazyk.from_offsets(offsets, words)  # a decreasing offset: checked where read
    outer = lazyk.from_offsets(np.array([0, 3]), inner)
    with pytest.raises(lazyk.ArrayConstructionError):
        (outer == "a").eval()


def test_strings_outside_their_blocks_are_refused_when_made():
    # Kernels read text through each {begin, size}: an array made over a memory block with
    # a string pointing elsewhere (or a negative size) never reaches one.
    from lazyk.arrays import memory
    from lazyk.arrays.array import Array

    x = lazyk.array([["hello", "world"], [], ["abc"]], type="3 * var * string")
    assert Array.from_parts(x.type, x.meta, x.ptr, x.owner).to_list() == x.to_list()
    words = lazyk.array(["hello", "world", "abc"])
    pairs = np.frombuffer(words.owner.buffer, np.int64, 6, words.ptr - words.owner.address)
    for at, value, message in [(2, pairs[2] + 10 ** 6, r"string 1 \(5 bytes at"),
                               (3, 10 ** 5, "string 1 .* outside"),
                               (5, -1, "string 2 has a negative size")]:
        forged = memory.MemoryBlock(48)
        raw = np.frombuffer(forged.buffer, np.int64)
        raw[:] = pairs
        raw[at] = value
        with pytest.raises(ValueError, match=message):
            Array.from_parts(words.type, words.meta, forged.address, forged)
    raw[5] = 0  # an empty string reads nothing: any begin will do
    raw[4] = -1
    assert Array.from_parts(words.type, words.meta, forged.address, forged).to_list() == \
        ["hello", "world", ""]


def test_threads_evaluate_nested_string_rows_at_once():
    from concurrent.futures import ThreadPoolExecutor

    rows = [[["kiwi", None, "x"][: k % 4]] * (k % 3) for k in range(2000)]
    x = lazyk.array(rows, type="2000 * var * var * ?string")
    want = [[sum(v == "x" for v in r if v is not None) for r in row] for row in rows]

    def run(c):
        return (x == c).sum(axis=-1, skipna=True).eval().to_list()
    with ThreadPoolExecutor(4) as pool:
        for got in pool.map(run, ["x"] * 8):
            assert got == want


def test_string_operations_fuse_into_the_loop_nest(monkeypatch):
    from lazyk.runtime import text_steps

    x = lazyk.array([[["a", "bb"], []], [["bb"], ["a", None]]], type="2 * var * var * ?string")
    r = lazyk.array([["a", "bb"], [], ["x", None]], type="3 * var * ?string")
    w = lazyk.array([[[1.0, 2.0], []], [[3.0], [4.0, 5.0]]], type="2 * var * var * float64")
    ran = []
    real = text_steps._compute
    monkeypatch.setattr(text_steps, "_compute", lambda *a: ran.append(1) or real(*a))
    for e, want in (((x == "a") * w, [[[1.0, 0.0], []], [[0.0], [4.0, None]]]),
                    (((x == "a") * w).sum(axis=-1, skipna=True), [[1.0, 0.0], [0.0, 4.0]]),
                    ((r == "a").any(axis=-1), [True, False, None]),
                    (lazyk.str_len(r) + 1, [[2, 3], [], [2, None]])):
        assert e.eval().to_list() == want
    assert ran == []  # one loop-nest kernel: no string step of its own
    # where() over missing strings computes its branches for missing elements too: the
    # string step runs first there, so a missing string's element is never read
    assert lazyk.where(r == "a", 1, 2).eval().to_list() == [[1, 2], [], [2, None]]
    assert ran == [1]
    # a stepping view is read in place by the loop nest too
    assert (r[:, ::-1] == "a").eval().to_list() == [[False, True], [], [None, False]]
    assert (r[::-1, ::2] == "bb").eval().to_list() == [[False], [], [False]]
    assert len(ran) == 1
    # nested rows: the string step numbers the elements and the nest lines them up
    got = lazyk.where(x == "a", w, -w).eval()
    assert str(got.type) == "2 * var * var * ?float64"
    assert got.to_list() == [[[1.0, -2.0], []], [[-3.0], [4.0, None]]]
    assert len(ran) == 2


def test_nested_string_result_into_out():
    x = lazyk.array([[["x"], []], [["y", "x", None]]], type="2 * var * var * ?string")
    out = lazyk.array([[[None], []], [[False, False, False]]], type="2 * var * var * ?bool")
    assert (x == "x").eval(out=out) is out
    assert out.to_list() == [[[True], []], [[False, True, None]]]
    short = lazyk.array([[[False], []], [[False]]], type="2 * var * var * ?bool")
    with pytest.raises(lazyk.ShapeError):
        (x == "x").eval(out=short)

"""`x[positions]` (Awkward's gather) in the loop nest, against the plain-Python reference
(`tests/ragged_reference.py: gather`) and Awkward Array.

Positions of k dims line up with x's first k dims and pick, in each list of x's dim k - 1,
the items at their positions (negative ones from the list's end): var rows of positions,
the fixed size-1 dim `argmax(..., keepdims=True)` gives (missing for an empty row: the
item is missing), `?int64` positions, rows taken at the outer dim; empty rows and arrays,
`?T` values, `?var` rows, depth 2 and 3, reversed views; a missing position above x's last
dim gives a missing row (`?var`). Gathers inside larger fused
expressions (two position arrays at one level, a fold after a gather) are compared with
the reference evaluated step by step. A position outside its row raises IndexError naming
the row and the position.
"""
from __future__ import annotations

import itertools

import awkward as ak
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import lazyk
from lazyk.runtime.ragged_rules import RECORDERS
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_ragged_select import matches, nests
from tests.test_ragged_today import RA, L

LAYOUTS = S.LAYOUTS + ("N * ?var * T", "N * ?var * var * T")
DTYPES = S.NUMERIC + ("bool",)


def _positions(draw, d, depth: int, option: bool, one: bool):
    """Positions into the lists at depth `depth` - 1 of data `d` (missing where d's rows
    are): var rows of 0-3 positions inside each list, or one position (`one`) that is
    missing where the list is empty; a missing position one time in five (`option`)."""
    if d is None:
        return None
    if depth > 1:
        return [_positions(draw, v, depth - 1, option, one) for v in d]
    n = len(d)
    count = 1 if one else 0 if not n else draw(st.integers(0, 3))
    return [None if not n or (option and draw(st.integers(0, 4)) == 0) else
            draw(st.integers(-n, n - 1)) for _ in range(count)]


@st.composite
def gather_case(draw, layouts=LAYOUTS, one=None, option=None, k=None):
    """(x type, x data, positions type, positions data) with positions of k dims."""
    t, d = draw(S.ragged(layouts=layouts, dtypes=DTYPES))
    dims = t.split(" * ")[:-1]
    k = k or draw(st.integers(1, len(dims)))
    one = draw(st.booleans()) if one is None else one
    one = one and k > 1 and not dims[k - 1].startswith("?")
    # (a missing position above a fixed dim of x, a missing `?n` row: refused, below)
    opt = one or (draw(st.booleans()) if option is None else option)
    opt = opt and (k == len(dims) or dims[k] in ("var", "?var"))
    p = _positions(draw, d, k, opt, one)
    last = "1" if one else "?var" if dims[k - 1].startswith("?") else "var"
    ptype = " * ".join(dims[:k - 1] + [last, ("?" if opt else "") + "int64"])
    if k == 1:
        ptype = f"{len(p)} * " + ("?" if opt else "") + "int64"
    return t, d, ptype, p


def awkward_gather(d, p):
    x, idx = ak.Array(d), ak.Array(p)
    if str(idx.type).endswith("unknown"):
        idx = ak.values_astype(idx, np.int64)
    return x[idx].to_list()


@settings(deadline=None)
@given(gather_case())
def test_positions_against_the_reference_and_awkward(case):
    t, d, pt, p = case
    got = matches(lambda: R.gather(RA(t, d), RA(pt, p)), lambda: L(t, d)[L(pt, p)], t,
                  pt if pt.count("*") > 1 else "")
    if got == "match":
        assert L(t, d)[L(pt, p)].to_list() == awkward_gather(d, p)


@settings(deadline=None)
@given(gather_case(layouts=("N * var * T", "N * var * var * T", "3 * var * 4 * T"), k=2,
                   one=False))
def test_positions_into_a_reversed_view(case):
    t, d, pt, p = case
    rev = [None if r is None else r[::-1] for r in d]
    matches(lambda: R.gather(RA(t, rev), RA(pt, p)), lambda: L(t, d)[:, ::-1][L(pt, p)])


@settings(deadline=None)
@given(S.ragged(layouts=("N * var * T", "N * var * var * T", "3 * var * 4 * T"),
                dtypes=S.NUMERIC, option_rows=False),
       st.sampled_from(["argmax", "argmin"]))
def test_the_best_of_each_row_taken_back(case, op):
    """`x[argmax(x, axis=-1, keepdims=True)]`: Awkward's idiom (a missing item for an empty
    row); lazyk keeps the fixed dim of size 1 the positions have, Awkward makes it var.
    (Rows of x that may be missing against that fixed 1 are `?1` rows: refused, below.)"""
    t, d = case
    x = L(t, d)

    def ref():
        return R.gather(RA(t, d), getattr(R, op)(RA(t, d), -1, keepdims=True))
    matches(ref, lambda: x[getattr(lazyk, op)(x, axis=-1, keepdims=True)])
    ax = ak.Array(d)
    if str(ax.type).endswith("unknown") or None in _flat(d):
        return
    want = ax[getattr(ak, op)(ax, axis=-1, keepdims=True)].to_list()
    assert x[getattr(lazyk, op)(x, axis=-1, keepdims=True)].to_list() == want


def _flat(d):
    return [v for r in d for v in (_flat(r) if isinstance(r, list) else [r])] \
        if isinstance(d, list) else [d]


@settings(deadline=None, max_examples=20)  # (each example compiles a few nests)
@given(gather_case(layouts=("N * var * T", "var * var * T", "N * var * var * T"), k=2,
                   option=False, one=False), st.data())
def test_two_position_arrays_in_one_fused_expression(case, data):
    """`x[i] * 2 - x[j]` (Awkward's `lep[pairs.i]`, `lep[pairs.j]`) and a fold after it."""
    t, d, pt, i = case
    assume(not t.endswith("bool"))
    j = [None if r is None else [data.draw(st.integers(-len(xr), len(xr) - 1)) if xr else 0
                                 for _ in r] for r, xr in zip(i, d)]
    x, rx = L(t, d), RA(t, d)

    def ref():
        return R.elementwise("subtract", R.elementwise("multiply", R.gather(rx, RA(pt, i)), 2),
                             R.gather(rx, RA(pt, j)))
    got = matches(ref, lambda: x[L(pt, i)] * 2 - x[L(pt, j)], t, pt)
    if got == "match":
        matches(lambda: R.reduce("sum", ref(), -1),
                lambda: (x[L(pt, i)] * 2 - x[L(pt, j)]).sum(axis=-1), t, pt)


# ---------------------------------------------------------------- examples
def test_examples_types_and_dtypes():
    x = lazyk.array([[1.5, -2.0, 3.0], [], [-1.0], [4.0, 5.0, -6.0, 7.0]])
    idx = lazyk.array([[2, 0], [], [-1], [0, 0, 3]])
    e = x[idx]
    assert isinstance(e, lazyk.Expr) and str(e.type) == "4 * var * float64"
    got = e.eval()
    assert str(got.type) == "4 * var * float64"
    assert got.to_list() == [[3.0, 1.5], [], [-1.0], [4.0, 4.0, 7.0]]
    best = x[lazyk.argmax(x, axis=1, keepdims=True)]
    assert str(best.type) == "4 * 1 * ?float64"
    assert best.to_list() == [[3.0], [None], [-1.0], [7.0]]
    q = lazyk.array([[0, None, -1], [], [None], [1]])
    got = x[q].eval()
    assert str(got.type) == "4 * var * ?float64"
    assert got.to_list() == [[1.5, None, 3.0], [], [None], [5.0]]
    rows = x[np.array([3, 0, -1])].eval()
    assert str(rows.type) == "3 * var * float64"
    assert rows.to_list() == [[4.0, 5.0, -6.0, 7.0], [1.5, -2.0, 3.0], [4.0, 5.0, -6.0, 7.0]]
    ints = lazyk.array([[10, 20, 30], [40]], "2 * var * int16")
    got = ints[lazyk.array([[np.uint8(1)], [0]], "2 * var * uint8")].eval()
    assert str(got.type) == "2 * var * int16" and got.to_list() == [[20], [40]]


def test_depth_three_sublists_and_numpy_data():
    y = lazyk.array([[[1, 2], [3]], [[4]], []])
    got = y[lazyk.array([[1], [0], []])].eval()
    assert str(got.type) == "3 * var * var * int64" and got.to_list() == [[[3]], [[4]], []]
    assert got.to_list() == ak.Array(y.to_list())[ak.Array([[1], [0], []])].to_list()
    a = np.arange(12.0).reshape(4, 3)
    got = lazyk.array(a)[lazyk.array([[2, 0], [], [1], [-1, -1]])].eval()
    assert got.to_list() == [[2.0, 0.0], [], [7.0], [11.0, 11.0]]
    flat = np.array([3.0, -1.0, 4.0])
    assert np.array_equal(lazyk.array(flat)[np.array([2, -3, 0])].to_numpy(),
                          flat[np.array([2, -3, 0])])


def test_a_fold_after_a_gather_is_one_nest():
    x = lazyk.array([[1.5, -2.0, 3.0], [], [-1.0], [4.0, 5.0, -6.0, 7.0]])
    idx = lazyk.array([[2, 0], [], [-1], [0, 0, 3]])
    assert nests((x[idx] * 2).sum(axis=-1)) == [("reduce", "fill")]
    assert (x[idx] * 2).sum(axis=-1).to_list() == [9.0, 0.0, -2.0, 30.0]
    # positions over one offsets array: their rows are the result's, no count pass either
    idx = lazyk.from_offsets(np.array([0, 2, 2, 3, 6]), np.array([2, 0, -1, 0, 0, 3]))
    assert nests(x[idx] + 1) == [("map", "fill")]
    assert (x[idx] + 1).to_list() == [[4.0, 2.5], [], [0.0], [5.0, 5.0, 8.0]]


def test_through_compile_placeholders():
    p = lazyk.placeholder("x", "N * var * float64")
    i = lazyk.placeholder("i", "N * var * int64")
    k = lazyk.compile(p[i] * 2)
    assert k.signature == "(x: N * var * float64, i: N * var * int64) -> N * var * float64"
    x = lazyk.array([[1.5, -2.0, 3.0], [], [-1.0]])
    assert k(x, lazyk.array([[2, -3], [], [0]])).to_list() == [[6.0, 3.0], [], [-2.0]]
    best = lazyk.compile(p[lazyk.argmax(p, axis=1, keepdims=True)])
    assert best.signature == "(x: N * var * float64) -> N * 1 * ?float64"
    assert best(x).to_list() == [[3.0], [None], [-1.0]]


def test_a_position_outside_its_row_names_the_row_and_the_position():
    x = lazyk.array([[1.5, -2.0, 3.0], [], [-1.0], [4.0, 5.0, -6.0, 7.0]])
    with pytest.raises(IndexError, match=r"position 3 \(at \[0, 1\]\) is out of range for "
                       r"row \[0\] of length 3"):
        x[lazyk.array([[2, 3], [], [-1], [0]])].eval()
    with pytest.raises(IndexError, match=r"position -2 \(at \[2, 0\]\) is out of range for "
                       r"row \[2\] of length 1"):
        x[lazyk.array([[0], [], [-2], [0]])].eval()
    with pytest.raises(IndexError, match=r"position 0 \(at \[1, 0\]\) .* row \[1\] of "
                       r"length 0"):
        (x[lazyk.array([[0], [0], [0], [0]])] * 2).sum(axis=-1).eval()
    with pytest.raises(IndexError, match=r"position 4 \(at \[1\]\) is out of range for the "
                       r"array of length 4"):
        x[np.array([0, 4])].eval()
    y = lazyk.array([[[1.0, 2.0], [3.0]], [[4.0]]])
    with pytest.raises(IndexError, match=r"position 2 \(at \[0, 0\]\) .* row \[0\] of "
                       r"length 2"):
        y[lazyk.array([[2], [0]])].eval()
    got = y[lazyk.array([[None, -1], [0]])].eval()  # a missing position: a missing row
    assert str(got.type) == "2 * var * ?var * float64"
    assert got.to_list() == [[None, [3.0]], [[4.0]]]
    with pytest.raises(lazyk.NotSupportedError, match=r"missing rows against a fixed "
                       r"dim \(\?n\): a missing position above a fixed dim"):
        lazyk.array([[[1.0], [2.0]], [[3.0]]])[lazyk.array([[None], [0]])].eval()
    q = lazyk.array([[1.0, 2.0], None], "2 * ?var * float64")
    got = q[lazyk.argmax(q, axis=1, keepdims=True)].eval()  # missing rows stay missing
    assert str(got.type) == "2 * ?1 * ?float64" and got.to_list() == [[2.0], None]
    lead = q[lazyk.argmax(q, axis=1, keepdims=True)]  # (`?1` operands: rows of 1)
    assert (lead * 2).eval().to_list() == [[4.0], None]
    assert (lead + lazyk.array([[1.0, 2.0], [3.0]])).eval().to_list() == [[3.0, 4.0], None]
    assert lazyk.histogram(lazyk.flatten(lead), 2, (0, 4))[0].tolist() == [0, 1]
    with pytest.raises(IndexError, match=r"positions of 3 dims .*\(1 to 2 of them\)"):
        x[lazyk.array([[[0]], [], [], []])]
    with pytest.raises(lazyk.ShapeError, match=r"dim 0 has size 4 in the array .* and 2 in "
                       r"the positions"):
        x[lazyk.array([[0], [0]])]


def test_take_back_over_rows_that_may_be_missing_matches_awkward():
    ak = pytest.importorskip("awkward")
    data = [[55.0, 21.0, 40.0], [], [18.0, 72.0], None, [3.0, None]]
    x, a = lazyk.array(data), ak.Array(data)
    for lf, af in ((lazyk.argmax, ak.argmax), (lazyk.argmin, ak.argmin)):
        got = x[lf(x, axis=1, keepdims=True)].eval()
        assert str(got.type) == "5 * ?1 * ?float64"
        assert got.to_list() == a[af(a, axis=1, keepdims=True)].tolist()
        best = lazyk.firsts(x[lf(x, axis=1, keepdims=True)]).eval()
        assert best.to_list() == ak.firsts(a[af(a, axis=1, keepdims=True)]).tolist()
    pos = [[0, 0], [], [1], [0], [-1]]
    got = x[lazyk.array(pos)].eval()
    assert str(got.type) == "5 * ?var * ?float64"
    assert got.to_list() == a[ak.Array(pos)].tolist()
    with pytest.raises(IndexError, match="position 3"):
        x[lazyk.array([[3], [], [0], [0], [0]])].eval()


def test_a_mask_that_gathers_read_by_several_row_operations_is_computed_once():
    """`firsts(pairs.i[m])` and `firsts(pairs.j[m])` with the mask m gathering from the
    items (`x[pairs.i] != x[pairs.j]`), in one evaluation: the mask's kernel runs once and
    both results are the plain-Python ones."""
    x = lazyk.array([[1, 2, 2, 3], [], [5, 5], [1, 4, 1], [7]], "5 * var * int64")
    pairs = lazyk.argcombinations(x, 2, fields=["i", "j"])
    m = x[pairs.i] != x[pairs.j]
    first_i, first_j = lazyk.firsts(pairs.i[m]), lazyk.firsts(pairs.j[m])
    rec: list = []
    RECORDERS.append(rec)
    try:
        got = lazyk.evaluate(first_i * 10 + first_j)
    finally:
        RECORDERS.remove(rec)
    want = []
    for row in x.to_list():
        found = [(i, j) for i in range(len(row)) for j in range(i + 1, len(row))
                 if row[i] != row[j]]
        want.append(found[0][0] * 10 + found[0][1] if found else None)
    assert got.to_list() == want
    masks = [str(k.npass) for _, k, _ in rec if any(ins.op == "not_equal"
                                                     for ins in k.spec.body)]
    assert masks.count("fill") == 1, masks


def test_an_item_or_a_slice_of_every_list_lazily():
    """`e[:, i]` and `e[:, a:b]` of lazy expressions (Awkward's indexing of the lists at a
    dim after the first): values, missing values and types as Awkward's, lazily (fused with
    the work around them), records field by field; a list too short for its item raises
    IndexError naming it; other keys stay a TypeError that says what works."""
    d = [[1.5, -2.0, 3.0], [4.0, None], [], [6.0]]
    x, a = lazyk.array(d, "4 * var * ?float64"), ak.Array(d)
    long = x[lazyk.num(x) >= 1]
    along = a[ak.num(a) >= 1]
    for key in (0, -1):
        got = (long * 2)[:, key]
        assert str(got.type) == "var * ?float64"
        assert got.eval().to_list() == (along * 2)[:, key].tolist()
    for key in (slice(None, 2), slice(1, None), slice(-2, None), slice(None, -1),
                slice(1, -1), slice(5, None), slice(-9, 9), slice(None, None, 1),
                slice(2, None, 1)):
        got = (x * 2)[:, key]
        assert str(got.type) == "4 * var * ?float64", key
        assert got.eval().to_list() == (a * 2)[:, key].tolist(), key
    assert lazyk.sum((x * 1)[:, 1:], axis=1, skipna=True).eval().to_list() == \
        ak.sum(a[:, 1:], axis=1).tolist()
    q = [[1.0, 2.0, 3.0], None, [4.0]]  # missing lists: None for their item
    qx, qa = lazyk.array(q, "3 * ?var * float64"), ak.Array(q)
    for key in (0, -1, slice(1, None)):
        assert (qx * 1)[:, key].eval().to_list() == (qa * 1)[:, key].tolist(), key
    deep = [[[1, 2], [3]], [[4], [], [5, 6, 7]], [[8]]]
    y, b = lazyk.array(deep), ak.Array(deep)
    assert (y * 1)[:, 0].eval().to_list() == b[:, 0].tolist()
    assert (y * 1)[:, :, :1].eval().to_list() == b[:, :, :1].tolist()
    jets = lazyk.zip({"pt": lazyk.array([[3.0, 1.0], [2.0]]) * 1,
                      "eta": lazyk.array([[0.1, 0.2], [0.3]]) * 1})
    assert jets[:, 0].pt.eval().to_list() == [3.0, 2.0]
    assert jets[:, 1:].eta.eval().to_list() == [[0.2], []]
    assert (lazyk.array(np.array([[1, 2], [3, 4]], np.int8)) + np.int8(0))[:, 1].eval() \
        .to_list() == [2, 4]
    with pytest.raises(IndexError, match=r"row \[2\] of length 0"):
        (x * 2)[:, 0].eval()
    for key in (0, (0, slice(None))):
        with pytest.raises(TypeError, match=r"one item or a slice work"):
            (x * 2)[key]


def test_slices_with_steps_of_lazy_lists_as_awkward():
    """`e[:, a:b:c]` of lazy expressions, every start, stop and step (negative: reversed),
    after a selection too, at a deeper dim, over missing lists and values, records and
    strings, compiled: Awkward's lists."""
    d = [[1.0, -2.0, 3.0, 6.0, None], [], [4.0, 5.0], [9.0]]
    x, a = lazyk.array(d), ak.Array(d)
    bounds = (None, -7, -1, 0, 2, 6)
    for start, stop, step in itertools.product(bounds, bounds, (None, 3, -1, -2)):
        key = slice(start, stop, step)
        want = a[:, key].tolist()
        assert (x * 1)[:, key].eval().to_list() == want, key
        assert x[lazyk.num(x) >= 0][:, key].eval().to_list() == want, key
    kept = x[x > 0]
    assert lazyk.sum(kept[:, ::-1] * lazyk.local_index(kept), axis=1, skipna=True).eval() \
        .to_list() == \
        ak.sum(a[a > 0][:, ::-1] * ak.local_index(a[a > 0]), axis=1).tolist()
    deep = [[[1, 2, 3], []], [[4, 5]], []]
    y, b = lazyk.array(deep), ak.Array(deep)
    assert (y * 1)[:, :, ::-2].eval().to_list() == b[:, :, ::-2].tolist()
    assert (y * 1)[:, ::-1].eval().to_list() == b[:, ::-1].tolist()
    m = [[1.0, 2.0], None, [3.0]]
    assert (lazyk.array(m) * 1)[:, ::-1].eval().to_list() == ak.Array(m)[:, ::-1].tolist()
    s = lazyk.array([["a", "bb", "c"], []])
    assert s[s != "q"][:, ::-2].eval().to_list() == [["c", "a"], []]
    r = lazyk.zip({"p": x, "q": x * 2})
    assert r[:, 3::-2].eval().to_list() == ak.zip({"p": a, "q": a * 2})[:, 3::-2].tolist()
    p = lazyk.placeholder("x", "N * var * ?float64")
    assert lazyk.compile(p[p > 0][:, ::-1])(x).to_list() == a[a > 0][:, ::-1].tolist()
    # several dims in one index, and `...`: each dim's item or slice, as Awkward's
    for key in ((slice(1, None), slice(None, None, -1)), (Ellipsis, slice(None, None, -2)),
                (slice(None), Ellipsis)):
        assert (x * 1)[key].eval().to_list() == (a * 1)[key].tolist(), key
    three = [[[1, 2], [3]], [[4, 5, 6]]]
    for key in ((slice(None), 0, slice(None, None, -1)), (Ellipsis, slice(None, None, -1)),
                (slice(None), slice(None, None, -1), 0)):
        got = (lazyk.array(three) * 1)[key].eval().to_list()
        assert got == ak.Array(three)[key].tolist(), key
    # (the outer dims first: an inner item is read only in the rows they keep)
    for d, key in (([[1, 2], [], [3]], (slice(None, None, 2), 0)),
                   ([[1, 2], [], [3]], (slice(0, 1), 0)),
                   ([[1, 2], [5], [3, 4]], (slice(None, None, 2), Ellipsis, 1)),
                   ([[[], [1]], [[2], [3, 4]]], (slice(None), slice(1, None), 0)),
                   ([[[], [1]], [[2], [3, 4]]], (Ellipsis, slice(1, None), -1))):
        assert (lazyk.array(d) * 1)[key].eval().to_list() == ak.Array(d)[key].tolist(), key
    grid = np.arange(12).reshape(3, 4)
    assert (lazyk.array(grid) * 1)[1:, ::-2].eval().to_list() == grid[1:, ::-2].tolist()
    assert (lazyk.array(grid) * 1)[..., 1].eval().to_list() == grid[..., 1].tolist()
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        (x * 1)[:, ::0]
    y = lazyk.array([[1.0, 2.0, 3.0], [], [4.0], [5.0, 6.0]])  # (numbers past int64: clamped)
    for key in (slice(None, None, 2**63 - 1), slice(None, None, -(2**63 - 1)),
                slice(None, None, 10**30), slice(10**30, None, -1), slice(-10**30, 10**30)):
        want = [row[key] for row in y.to_list()]
        assert y[:, key].to_list() == want and (y * 1)[:, key].eval().to_list() == want, key
    with pytest.raises(TypeError, match="slice indices must be integers or None, not float"):
        (x * 1)[:, 1.0:]


@pytest.mark.parametrize("t, d", [
    ("4 * ?var * int32", [[1, 2, 3], None, [], [4]]),
    ("4 * ?var * ?var * int32", [[[1, 5], None, []], [], None, [[2, 3, 4]]]),
    ("3 * ?var * string", [["a", "bc"], None, ["d"]]),
])
def test_a_reversing_slice_of_lists_that_may_be_missing_keeps_the_items_type(t, d):
    """`e[:, ::-1]` where the lists may be missing: the items keep their type (values that
    cannot be missing stay so, as the array's own slice and Awkward's), compiled and on
    Dask alike."""
    x = lazyk.array(d, type=t)
    same = (lambda v: lazyk.where(True, v, v)) if "string" in t else lazyk.positive
    p = lazyk.placeholder("x", "N * " + t.split(" * ", 1)[1])
    for key in (slice(None, None, -1), slice(None, 0, -2)):
        want = ak.Array(d)[:, key].tolist()
        for got in (same(x)[:, key].eval(), lazyk.compile(same(p)[:, key])(x)):
            assert got.to_list() == want and str(got.type) == str(x[:, key].type) \
                == t, key



@pytest.mark.parametrize("op", ["sum", "count", "max", "mean", "prod"])
def test_reductions_of_a_gather_with_empty_rows_skip_its_missing_values(op):
    # the gather's None for an empty row is a missing value: skipna (and count) skip it
    # in the fused reduction as over the gathered array
    pt = lazyk.array([[50.0, 45.0], [], [3.0]])
    x = pt[lazyk.argmax(pt, axis=1, keepdims=True)]
    kw = {} if op == "count" else {"skipna": True}
    fused = getattr(lazyk, op)(x, axis=1, **kw)
    first = getattr(lazyk, op)(x.eval(), axis=1, **kw)
    assert fused.eval().to_list() == first.eval().to_list()
    assert str(fused.type) == str(first.eval().type)


def test_gathers_within_lists_that_may_be_missing_at_depth_three():
    ak = pytest.importorskip("awkward")
    rng = np.random.default_rng(5)

    def rows(n):
        return [None if rng.random() < 0.3 else
                [float(rng.integers(0, 9)) for _ in range(int(rng.integers(0, 4)))]
                for _ in range(n)]
    checked = 0
    for _ in range(60):
        data = [rows(int(rng.integers(0, 4))) for _ in range(int(rng.integers(1, 6)))]
        a = ak.Array(data)
        if "unknown" in str(a.type) or a.ndim != 3:
            continue
        x = lazyk.from_awkward(a)  # N * var * ?var * float64
        for how in ("argmin", "argmax"):
            got = x[getattr(lazyk, how)(x, axis=2, keepdims=True)].eval().to_list()
            assert got == a[getattr(ak, how)(a, axis=2, keepdims=True)].to_list(), data
        want = [[None if r is None else sorted(r) for r in e] for e in data]
        assert x[lazyk.argsort(x, axis=2)].eval().to_list() == want, data
        checked += 1
    assert checked > 30
    a = ak.Array([[[1.0, 2.0], [3.0]], None, [[4.0]], []])
    x = lazyk.from_awkward(a)  # N * ?var * var * float64: lists of lists gathered
    m = lazyk.fill_none(lazyk.num(x), 0) > 0
    assert x[m][:, 0].eval().to_list() == [[1.0, 2.0], [4.0]]
    p = lazyk.argmax(lazyk.num(x, axis=2), axis=1, keepdims=True)
    assert x[p].eval().to_list() == \
        a[ak.argmax(ak.num(a, axis=2), axis=1, keepdims=True)].to_list()


def test_a_selection_by_a_mask_of_a_take_back_keeps_its_missing_values():
    # x[argmax(x, keepdims=True)] is None for an empty row; (b > 5) is missing there, and
    # a missing mask element keeps a missing element, fused as evaluated first (Awkward's)
    rows = [[10.0, 30.0, 20.0], [], [1.0], [7.0, 2.0]]
    x, a = lazyk.array(rows), ak.Array(rows)
    b, ab = x[lazyk.argmax(x, axis=1, keepdims=True)], a[ak.argmax(a, axis=1, keepdims=True)]
    want = ak.to_list(ab[ab > 5])
    assert want == [[30.0], [None], [], [7.0]]
    assert b[b > 5].eval().to_list() == want
    assert (lambda e: e[e > 5])(b.eval()).eval().to_list() == want
    assert lazyk.num(b[b > 5]).eval().to_list() == ak.to_list(ak.num(ab[ab > 5]))
    # (Awkward's sum skips missing values: lazyk's with skipna=True)
    assert lazyk.sum(b[b > 5], axis=1, skipna=True).eval().to_list() == ak.to_list(
        ak.sum(ab[ab > 5], axis=1))
    assert lazyk.sum(b[b > 5], axis=1).eval().to_list() == [30.0, None, 0.0, 7.0]


def test_an_item_of_fixed_size_lists_that_may_be_missing():
    # `N * ?2 * ?T` (pad_none(clip=True) of `?var` rows): [:, i] is missing where the
    # list or the value is, as an array, lazily, and after pad_none (Awkward's)
    q = lazyk.array([[1.0, None], None, [3.0, 7.0]], type="3 * ?2 * ?float64")
    want = {0: [1.0, None, 3.0], 1: [None, None, 7.0], -1: [None, None, 7.0]}
    for i, w in want.items():
        assert q[:, i].to_list() == w
        assert (q * 1)[:, i].eval().to_list() == w
    with pytest.raises(IndexError, match="index 2 is out of bounds for axis 1 with size 2"):
        (q * 1)[:, 2].eval()  # (checked when written: a fixed dim, as NumPy's)
    b = lazyk.array([[True, None], None, [False, True]], type="3 * ?2 * ?bool")
    assert (b & True)[:, 1].eval().to_list() == b[:, 1].to_list() == [None, None, True]
    rows = [[10.0, 30.0, 20.0], None, [1.0]]
    x, a = lazyk.array(rows), ak.Array(rows)
    for i in (0, 1):
        assert lazyk.pad_none(x, 2, clip=True)[:, i].eval().to_list() == ak.to_list(
            ak.pad_none(a, 2, clip=True)[:, i])


def test_a_gather_selected_by_a_mask_of_other_arrays_with_its_rows():
    # the gathered values have the rows of their positions: a mask of those lengths built
    # from another array selects them (Awkward's pt[argsort(pt)][btag > 0.5])
    pt, btag = [[30.0, 20.0, 40.0], [3.0, 2.0], []], [[0.9, 0.1, 0.6], [0.2, 0.7], []]
    lpt, lb = lazyk.array(pt), lazyk.array(btag)
    apt, ab = ak.Array(pt), ak.Array(btag)
    o, ao = lazyk.argsort(lpt, ascending=False), ak.argsort(apt, ascending=False)
    want = ak.to_list(apt[ao][ab > 0.5])
    assert lpt[o][lb > 0.5].eval().to_list() == want == [[40.0, 20.0], [2.0], []]
    assert lpt[o].eval()[lb > 0.5].eval().to_list() == want
    with pytest.raises(lazyk.ShapeError):  # (rows of other lengths: still refused)
        lpt[o][lazyk.array([[True], [True, False], []])].eval()


def test_a_slice_of_a_fixed_dim_of_an_expression():
    # `pad_none(x, 2, clip=True)[:, 1:]` (Awkward's), and a dense expression's `e[:, a:b:c]`
    # (NumPy's): the dim stays fixed
    x, a = lazyk.array([[10.0, 30.0, 20.0], [], [1.0]]), ak.Array([[10.0, 30.0, 20.0], [], [1.0]])
    for sl in (slice(1, None), slice(None, 1), slice(None, None, -1), slice(5, 9)):
        got = lazyk.pad_none(x, 2, clip=True)[:, sl].eval()
        assert got.to_list() == ak.to_list(ak.pad_none(a, 2, clip=True)[:, sl])
    m = np.arange(24.0).reshape(2, 3, 4)
    e = lazyk.array(m) * 2
    for sl in (slice(1, None), slice(None, None, 2), slice(-2, None), slice(3, 0, -1)):
        got = e[:, sl].eval()
        assert str(got.type) == f"2 * {len(range(*sl.indices(3)))} * 4 * float64"
        np.testing.assert_array_equal(got.to_numpy(), (m * 2)[:, sl])


def test_a_slice_of_lists_selected_by_a_mask_with_missing_elements():
    # events selected by a ?bool mask (a missing element: a missing list), then their
    # leading items (Awkward's)
    rows = [[10.0, 30.0, 20.0], [], [1.0], [4.0, 5.0]]
    y, a = lazyk.array(rows), ak.Array(rows)
    m, am = lazyk.firsts(y) > 5, ak.firsts(a) > 5
    for sl in (slice(None, 2), slice(1, None), slice(-1, None)):
        assert y[m][:, sl].eval().to_list() == ak.to_list(a[am][:, sl])
    q = lazyk.array([True, None, False, True], type="4 * ?bool")
    aq = ak.Array([True, None, False, True])
    assert y[q][:, :2].eval().to_list() == ak.to_list(a[aq][:, :2])


def test_python_lists_of_positions_or_bools_index_as_numpy_arrays_do():
    x = lazyk.array([[1.0], [2.0, 3.0], []])
    assert x[[2, 0]].eval().to_list() == [[], [1.0]]
    assert (x * 2)[[1]].eval().to_list() == [[4.0, 6.0]]
    assert x[[True, False, True]].eval().to_list() == [[1.0], []]
    with pytest.raises(IndexError, match="position 5 .* length 3"):
        x[[5]].eval()
    with pytest.raises(IndexError, match="take ints, slices"):
        x[["a", 1]]  # noqa: B018


def test_sort_takes_stable_false_and_sorts_stably():
    x = lazyk.array([[3, 1, 3, 2], [], [1, 1]])
    for stable in (True, False):
        assert lazyk.argsort(x, stable=stable).eval().to_list() == [[1, 3, 0, 2], [], [0, 1]]
    with pytest.raises(TypeError, match="stable must be True or False"):
        lazyk.sort(x, stable="yes")


def test_positions_gather_from_rows_of_their_own_length_above_the_gathered_level():
    # as Awkward's jagged gather (and NumPy's on fixed dims): a row of 1 of positions does
    # not stretch over a longer row of the array above the level gathered
    rows = [[[3.0, 1.0, 2.0], [0.0, 5.0, -1.0]], [[7.0, 8.0, 9.0], [1.0, 1.0, 10.0]]]
    x = lazyk.array(rows, type="2 * var * var * float64")
    with pytest.raises(lazyk.ShapeError, match=r"x\[positions\] at row 0: .* length 2 .* "
                                               r"length 1"):
        x[lazyk.argmax(x, axis=1, keepdims=True)].eval()
    got = x[lazyk.argmax(x, axis=2, keepdims=True)].eval()  # (rows that pair: the maxima)
    assert got.to_list() == [[[3.0], [5.0]], [[9.0], [10.0]]]
    y = lazyk.array([[[1.0, 2.0]], [[3.0]]], type="2 * var * var * float64")
    idx = lazyk.array([[[1], [0]], [[0]]], type="2 * var * var * int64")
    with pytest.raises(lazyk.ShapeError, match=r"x\[positions\]"):
        y[idx].eval()


def test_slices_and_take_backs_of_pairs_made_by_broadcasting_match_awkward():
    # the closest b to each a: pairs a[:, :, None] - b[:, None, :] (or a nested product),
    # whose operands have rows of 1 above the level sliced or gathered; the pairs' own
    # rows there are the broadcast ones
    rng = np.random.default_rng(3)
    rows_a = [list(np.round(rng.normal(size=rng.poisson(2)), 2)) for _ in range(40)]
    rows_b = [list(np.round(rng.normal(size=rng.poisson(3)), 2)) for _ in range(40)]
    a = lazyk.array(rows_a, type="40 * var * float64")
    b = lazyk.array(rows_b, type="40 * var * float64")
    A, B = ak.Array(rows_a), ak.Array(rows_b)
    m, M = a[:, :, None] - b[:, None, :], A[:, :, np.newaxis] - B[:, np.newaxis, :]
    c = lazyk.cartesian({"x": a, "y": b}, nested=True)
    C = ak.cartesian({"x": A, "y": B}, nested=True)
    d, D = c.x - c.y, C.x - C.y
    for x, X in ((m, M), (d, D)):
        assert x[:, :, :1].eval().to_list() == X[:, :, :1].to_list()
        assert x[:, :, 1:].eval().to_list() == X[:, :, 1:].to_list()
        closest = x[lazyk.argmin(abs(x), axis=2, keepdims=True)]
        assert closest.eval().to_list() == \
            X[ak.argmin(abs(X), axis=2, keepdims=True)].to_list()
        assert x[lazyk.argsort(x, axis=2)].eval().to_list() == X[ak.argsort(X, axis=2)].to_list()


def test_fields_gathered_at_pair_positions_read_their_shared_rows_once():
    """Fields of one collection gathered at the positions of pairs of its rows read and
    check each row once (`those of input 0`) and give Awkward's values; an array of other
    rows gathered at the same positions is still checked row by row."""
    a = ak.Array([[1.0, 2.0, 3.0], [], [4.0], [5.0, 6.0, 7.0, 8.0]])
    b, c = a * 10, a - 1
    la, lb, lc = (lazyk.from_awkward(v) for v in (a, b, c))
    pairs = lazyk.argcombinations(la, 2, fields=["i", "j"])
    e = lazyk.sum(la[pairs.i] * lb[pairs.j] - lc[pairs.j], axis=1)
    p = ak.argcombinations(a, 2, fields=["i", "j"])
    want = ak.sum(a[p.i] * b[p.j] - c[p.j], axis=1)
    assert e.eval().to_list() == want.to_list()
    text = str(lazyk.explain(e))
    assert "those of input" in text and "taken at the positions" in text
    short = lazyk.array([[1.0, 2.0, 3.0], [], [4.0], [5.0, 6.0]], "4 * var * float64")
    with pytest.raises(IndexError, match=r"position 2 .* row \[3\] of length 2"):
        lazyk.sum(la[pairs.i] * short[pairs.j], axis=1).eval()


def test_uint64_positions_past_int64_are_out_of_range_not_from_the_end():
    x = lazyk.array([[1.0, 2, 3], [], [4.0, 5]])
    for big in (2**64 - 1, 2**63):
        i = lazyk.from_offsets(np.array([0, 1, 1, 2]), np.array([big, 0], np.uint64))
        with pytest.raises(IndexError, match="past int64"):
            x[i].eval()
    i = lazyk.from_offsets(np.array([0, 1, 1, 2]), np.array([2, 1], np.uint64))
    assert x[i].eval().to_list() == [[3.0], [], [5.0]]
    # a compiled int64 parameter: a uint64 value past int64 is refused, not wrapped
    k = lazyk.compile(lazyk.placeholder("x", "N * var * float64")[
        lazyk.placeholder("i", "N * var * int64")])
    assert k(x, i).to_list() == [[3.0], [], [5.0]]
    big = lazyk.from_offsets(np.array([0, 1, 1, 2]), np.array([2**64 - 1, 0], np.uint64))
    with pytest.raises(lazyk.CastingError, match="does not fit the parameter's int64"):
        k(x, big)
    with pytest.raises(IndexError, match=r"position -9223372036854775808 \(or a uint64"):
        k(x, [[-2**63], [], [0]])


def test_take_back_of_records_with_list_fields_under_missing_rows_names_the_fields():
    d = [[{"pt": 1.0, "tags": ["a"]}, {"pt": 5.0, "tags": []}], [],
         [{"pt": 3.0, "tags": ["b", "c"]}], None]
    x = lazyk.array(d)
    got = x[lazyk.argmax(x.pt, axis=1, keepdims=True)]
    assert got.tags.eval().to_list() == [[[]], [None], [["b", "c"]], None]
    assert got.pt.eval().to_list() == [[5.0], [None], [3.0], None]
    with pytest.raises(lazyk.NotSupportedError, match=r"field\(s\) 'pt' are rows of a fixed "
                       r"size that may be missing .*evaluate the fields"):
        got.eval()


def test_lists_of_lists_gathered_at_pair_positions_as_awkward():
    """`x[lazyk.argcombinations(x, 2)["0"]]` where x's items are lists (the positions
    index lists of lists): Awkward's lists, alone, in work after it, compiled."""
    d = [[[0.0, 1.0], [6.0], [2.0, 3.0, 4.0]], [], [[5.0, 0.0]], [[1.0], []]]
    x, a = lazyk.array(d, type="4 * var * var * float64"), ak.Array(d)
    for slot in ("0", "1"):
        want = a[ak.argcombinations(a, 2)[slot]]
        got = x[lazyk.argcombinations(x, 2)[slot]]
        assert got.eval().to_list() == want.tolist()
        assert lazyk.sum(got * 2, axis=-1).eval().to_list() == \
            ak.sum(want * 2, axis=-1).tolist()
    p = lazyk.placeholder("x", "N * var * var * float64")
    k = lazyk.compile(lazyk.num(p[lazyk.argcombinations(p, 2)["1"]], axis=-1))
    assert k(x).to_list() == ak.num(a[ak.argcombinations(a, 2)["1"]], axis=-1).tolist()

"""`x[mask]` (Awkward's selection) in the loop nest, against the plain-Python reference
(`tests/ragged_reference.py: select`) and Awkward Array.

Layouts from `tests/ragged_strategies.py` (empty rows and arrays, length-1 rows, fixed dims,
`?T` values, `?var` rows, depth 2 and 3, reversed views): a mask of the array's structure
(`?bool` too: a missing element keeps a missing element) and masks of fewer dims (rows
selected at that dim; the outer dim counts the kept rows). Selection inside larger fused
expressions is compared with the reference evaluated step by step; the nest's passes are
counted (a fold after a selection is one nest, no count pass). Errors: ShapeError for a mask
that does not line up (naming the sizes), IndexError for masks of no or too many dims.
"""
from __future__ import annotations

import awkward as ak
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import lazyk
from lazyk.runtime.ragged_rules import RECORDERS
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_ragged_today import RA, L, check

LAYOUTS = S.LAYOUTS + ("N * ?var * T", "var * ?var * T", "N * ?var * var * T")
DTYPES = S.NUMERIC + ("bool",)


def _mask(draw, d, depth: int, option: bool):
    """A mask of the first `depth` dims of data `d`: missing where d's rows are missing,
    a missing element one time in five when `option`."""
    if d is None:
        return None
    if depth == 0:
        return None if option and draw(st.integers(0, 4)) == 0 else draw(st.booleans())
    return [_mask(draw, v, depth - 1, option) for v in d]


@st.composite
def masked_case(draw, layouts=LAYOUTS, same=True, option=None):
    """(x type, x data, mask type, mask data): a mask of x's structure (`same`) or of its
    first k dims."""
    t, d = draw(S.ragged(layouts=layouts, dtypes=DTYPES))
    dims = t.split(" * ")[:-1]
    k = len(dims) if same else draw(st.integers(1, len(dims)))
    opt = draw(st.booleans()) if option is None else option
    m = _mask(draw, d, k, opt)
    return t, d, " * ".join(dims[:k] + [("?" if opt else "") + "bool"]), m


def awkward_select(d, m):
    x, mask = ak.Array(d), ak.Array(m)
    if str(mask.type).endswith("unknown"):  # nothing inside: the same structure as bools
        mask = ak.values_astype(mask, np.bool_)
    return x[mask].to_list()


def matches(ref_fn, lazyk_fn, t: str = "", mt: str = "") -> str:
    """`check` (type string, values, or the same error); over a one-row array (`var * ...`,
    type `t`) a selection below the outer dim (mask type `mt`: of 2 dims or more) keeps
    the outer var dim (the reference gives it a length)."""
    if t.startswith("var") and mt.count("*") > 1:
        ref_fn = _outer_var(ref_fn)
    got = check(ref_fn, lazyk_fn)
    assert got in ("match", "raises"), f"lazyk refused: {got}"
    return got


def _outer_var(ref_fn):
    def ref():
        r = ref_fn()
        dims = r.type.dims
        if dims and not isinstance(r.data, list):
            return r
        return R.RArray(R.RType((R.Dim(None, dims[0].option),) + dims[1:], r.type.dtype,
                                r.type.option), r.data) if dims else r
    return ref


def nests(e) -> list:
    """(mode, pass) of each loop-nest kernel run computing `e`."""
    rec: list = []
    RECORDERS.append(rec)
    try:
        e.eval()
    finally:
        RECORDERS.remove(rec)
    return [(str(k.mode), str(k.npass)) for _, k, _ in rec]


# ---------------------------------------------------------------- against the reference
@settings(deadline=None)
@given(masked_case())
def test_mask_of_the_same_structure(case):
    t, d, mt, m = case
    got = matches(lambda: R.select(RA(t, d), RA(mt, m)), lambda: L(t, d)[L(mt, m)], t, mt)
    if got == "match" and d is not None:
        assert L(t, d)[L(mt, m)].to_list() == awkward_select(d, m)


@settings(deadline=None)
@given(masked_case(same=False))
def test_mask_of_fewer_dims_selects_rows(case):
    """A missing mask element there keeps a missing row (`?var`; a fixed dim below:
    refused, `test_errors_name_the_operands`)."""
    t, d, mt, m = case
    dims = t.split(" * ")
    k = mt.count("*")
    assume(not mt.endswith("?bool") or k == len(dims) - 1 or "var" in dims[k])
    got = matches(lambda: R.select(RA(t, d), RA(mt, m)), lambda: L(t, d)[L(mt, m)], t, mt)
    if got == "match" and d is not None:
        assert L(t, d)[L(mt, m)].to_list() == awkward_select(d, m)


@settings(deadline=None)
@given(masked_case(layouts=("N * var * T", "N * var * var * T", "3 * var * 4 * T")))
def test_selection_of_a_reversed_view(case):
    t, d, mt, m = case
    x = L(t, d)[:, ::-1]
    rev = [None if r is None else r[::-1] for r in d]
    mrev = [None if r is None else r[::-1] for r in m]
    matches(lambda: R.select(RA(t, rev), RA(mt, mrev)), lambda: x[L(mt, mrev)])


@settings(deadline=None)
@given(masked_case(layouts=("N * var * T", "N * var * var * T", "N * ?var * T",
                            "3 * var * 4 * T"), option=False),
       st.sampled_from(["sum", "max", "mean", "count"]))
def test_fold_after_a_selection_in_one_nest(case, op):
    """`(x[m] * 2 + 1).op(axis=-1)`: the nest folds only the kept elements."""
    t, d, mt, m = case
    assume(not t.endswith("bool"))

    def ref():
        kept = R.elementwise("add", R.elementwise("multiply", R.select(RA(t, d), RA(mt, m)),
                                                  2), 1)
        return R.reduce(op, kept, -1)
    matches(ref, lambda: getattr(lazyk, op)(L(t, d)[L(mt, m)] * 2 + 1, axis=-1))


@settings(deadline=None, max_examples=20)  # (each example compiles a few nests)
@given(masked_case(layouts=("N * var * T", "var * var * T", "N * var * var * T")))
def test_selection_with_its_own_values_and_more_work(case):
    """`x[x > c] - x[x > c] / 2` and a second mask of the same array: one mask per nest, the
    selections of another mask computed first."""
    t, d, _, _ = case
    assume(not t.endswith("bool"))
    x, rx = L(t, d), RA(t, d)

    def ref():
        sel = R.select(rx, R.elementwise("greater", rx, 0))
        return R.elementwise("subtract", sel, R.elementwise("true_divide", sel, 2))
    matches(ref, lambda: x[x > 0] - x[x > 0] / 2, t, t)

    def twice():
        sel = R.select(rx, R.elementwise("greater", rx, -2))
        return R.select(sel, R.elementwise("less", sel, 2))
    matches(twice, lambda: x[x > -2][x[x > -2] < 2], t, t)


# ---------------------------------------------------------------- examples
def test_awkward_examples_types_and_dtypes():
    x = lazyk.array([[1.5, -2.0, 3.0], [], [-1.0], [4.0, 5.0, -6.0, 7.0]])
    e = x[x > 0]
    assert isinstance(e, lazyk.Expr) and str(e.type) == "4 * var * float64"
    got = e.eval()
    assert str(got.type) == "4 * var * float64" and got.type.dtype == lazyk.dshape("float64")
    assert got.to_list() == [[1.5, 3.0], [], [], [4.0, 5.0, 7.0]]
    m = lazyk.array([[True, None, False], [], [None], [True, None, True, False]])
    got = x[m].eval()
    assert str(got.type) == "4 * var * ?float64"
    assert got.to_list() == [[1.5, None], [], [None], [4.0, None, -6.0]]
    rows = x[np.array([True, False, True, True])]
    assert str(rows.type) == "var * var * float64"  # the count of kept rows: when computed
    assert str(rows.eval().type) == "3 * var * float64"
    assert rows.to_list() == [[1.5, -2.0, 3.0], [-1.0], [4.0, 5.0, -6.0, 7.0]]
    by_sum = x[x.sum(axis=-1) > 0]
    assert by_sum.to_list() == [[1.5, -2.0, 3.0], [4.0, 5.0, -6.0, 7.0]]
    ints = lazyk.array([[1, 2, 3], [4]], "2 * var * int32")
    got = ints[ints % 2 == 1].eval()
    assert str(got.type) == "2 * var * int32" and got.to_list() == [[1, 3], []]


def test_fixed_dims_become_var_and_numpy_data():
    a = np.arange(12.0).reshape(4, 3)
    got = lazyk.array(a)[lazyk.array(a) % 4 < 2].eval()
    assert str(got.type) == "4 * var * float64"
    assert got.to_list() == [list(r[r % 4 < 2]) for r in a] == [[0, 1], [4, 5], [8], [9]]
    flat = np.array([3.0, -1.0, 4.0, -1.0, 5.0])
    got = lazyk.array(flat)[flat > 0].eval()
    assert got.to_list() == [3.0, 4.0, 5.0] and str(got.type) == "3 * float64"
    assert np.array_equal(got.to_numpy(), flat[flat > 0])
    empty = np.zeros((0, 3))
    got = lazyk.array(empty)[empty > 0].eval()
    assert str(got.type) == "0 * var * float64" and got.to_list() == []


def test_depth_three_at_each_level():
    y = lazyk.array([[[1.0, 2.0], [3.0]], [], [[4.0, 5.0, 6.0], [], [7.0]]])
    assert y[y > 2].to_list() == [[[], [3.0]], [], [[4.0, 5.0, 6.0], [], [7.0]]]
    m1 = lazyk.array([[True, False], [], [False, True, True]])
    assert y[m1].to_list() == [[[1.0, 2.0]], [], [[], [7.0]]]
    assert y[np.array([False, True, True])].to_list() == [[], [[4.0, 5.0, 6.0], [], [7.0]]]
    ay = ak.Array(y.to_list())
    assert y[m1].to_list() == ay[ak.Array(m1.to_list())].to_list()


def test_missing_rows_stay_missing():
    x = lazyk.array([[1.5, -2.0], None, [-1.0], [4.0, 5.0, -6.0]], "4 * ?var * float64")
    got = x[x > 0].eval()
    assert str(got.type) == "4 * ?var * float64"
    assert got.to_list() == [[1.5], None, [], [4.0, 5.0]]
    assert got.to_list() == awkward_select(x.to_list(), (x > 0).to_list())


def test_a_fold_after_a_selection_is_one_nest_without_a_count_pass():
    x = lazyk.array([[1.5, -2.0, 3.0], [], [-1.0], [4.0, 5.0, -6.0, 7.0]])
    assert nests((x[x > 0] * 2).sum(axis=-1)) == [("reduce, keep1 where output 1", "fill")]
    assert (x[x > 0] * 2).sum(axis=-1).to_list() == [9.0, 0.0, 0.0, 32.0]
    # a selection kept as such: the kept items taken natively (the mask one flat map),
    # then the map over them; no count pass
    assert nests(x[x > 0] + 1) == [("map", "fill"), ("map", "fill")]
    assert (x[x > 0] + 1).to_list() == [[2.5, 4.0], [], [], [5.0, 6.0, 8.0]]
    # work beside the selection on the selected rows' own lengths: the selection first
    z = lazyk.array([[1.0, 1.0], [], [], [2.0, 2.0, 2.0]])
    assert (x[x > 0] + z).to_list() == [[2.5, 4.0], [], [], [6.0, 7.0, 9.0]]


def test_selection_over_short_rows_takes_the_kept_items_without_the_nest():
    """`x[mask]` over rows of about one item (objects per event): the mask computed flat,
    the kept items taken with NumPy: values, dtype and rows as the plain-Python selection,
    for a view whose offsets start past 0, a mask over another array of the same rows, and
    a mask whose rows do not line up (ShapeError naming the row)."""
    rng = np.random.default_rng(5)
    lens = rng.poisson(1.0, 400)
    off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    vals = rng.normal(size=off[-1] + 7).astype(np.float32)
    x = lazyk.from_offsets(off + 7, vals)  # (offsets past the content's start)
    y = lazyk.from_offsets(off, rng.normal(size=off[-1]))
    rows = [vals[7 + off[i]:7 + off[i + 1]] for i in range(400)]
    yrows = y.to_list()
    for got, keep in ((x[x > 0], [r > 0 for r in rows]),
                      (x[y < 0.5], [np.array(r) < 0.5 for r in yrows])):
        assert nests(got) == [("map", "fill")]  # (the mask's flat loop only)
        arr = got.eval()
        assert str(arr.type) == "400 * var * float32"
        assert [np.asarray(r, np.float32).tolist() for r in arr.to_list()] == \
            [r[k].tolist() for r, k in zip(rows, keep)]
    bad = lazyk.from_offsets(np.concatenate([[0], off[1:] + 1]), np.zeros(off[-1] + 1))
    with pytest.raises(lazyk.ShapeError, match="row 0"):
        x[bad > 0].eval()


def test_a_mask_that_may_be_missing_over_short_rows_is_taken_natively():
    """`x[mask]` with a `var * ?bool` mask (computed from a per-row value that may be
    missing, as `firsts` gives) over rows of about one item: the mask computed once (its
    count and fill passes: the items' positions walked, never stored) and the kept items
    taken natively for each field it selects; a missing mask element keeps a missing
    element, as in Awkward."""
    rng = np.random.default_rng(9)
    lens = rng.poisson(1.5, 300)
    off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    pt, phi = rng.normal(size=off[-1]).astype(np.float32), rng.normal(size=off[-1])
    first = [int(rng.integers(0, n)) if n and rng.integers(0, 4) else None for n in lens]
    a_pt, a_phi = (ak.unflatten(v, lens) for v in (pt, phi))
    a_first = ak.Array(first)
    mask = ak.local_index(a_pt) != a_first[:, None]
    x_pt, x_phi = (lazyk.from_offsets(off, v) for v in (pt, phi))
    i = lazyk.from_awkward(a_first)
    m = lazyk.local_index(x_pt) != i[:, None]
    for x, a in ((x_pt, a_pt), (x_phi, a_phi)):
        got = x[m]
        assert nests(got) == [("map", "count1"), ("map", "fill")]  # (the mask's only)
        arr = got.eval()
        assert str(arr.type) == f"300 * var * ?{a.layout.content.dtype}"
        assert arr.to_list() == a[mask].to_list()
    # a mask leaf with missing elements
    am = ak.Array([[True, None, False], [], [None, True], [False]])
    ax = ak.Array([[1.0, 2.0, 3.0], [], [4.0, 5.0], [6.0]])
    got = lazyk.from_awkward(ax)[lazyk.from_awkward(am)].eval()
    assert str(got.type) == "4 * var * ?float64"
    assert got.to_list() == ax[am].to_list() == [[1.0, None], [], [None, 5.0], []]


def test_through_compile_placeholders():
    p = lazyk.placeholder("x", "N * var * float64")
    m = lazyk.placeholder("m", "N * bool")
    k = lazyk.compile((p[p > 0] * 2).sum(axis=-1))
    assert k.signature == "(x: N * var * float64) -> N * float64"
    x = lazyk.array([[1.5, -2.0, 3.0], [], [-1.0], [4.0, 5.0, -6.0, 7.0]])
    assert k(x).to_list() == [9.0, 0.0, 0.0, 32.0]
    rows = lazyk.compile(p[m])
    got = rows(x, np.array([True, False, False, True]))
    assert got.to_list() == [[1.5, -2.0, 3.0], [4.0, 5.0, -6.0, 7.0]]


def test_errors_name_the_operands():
    x = lazyk.array([[1.5, -2.0, 3.0], [], [-1.0], [4.0, 5.0, -6.0, 7.0]])
    with pytest.raises(lazyk.ShapeError, match=r"dim 0 has size 4 in the array .* and 5 in "
                       r"the mask"):
        x[np.array([True, False, False, True, True])]
    with pytest.raises(lazyk.ShapeError, match=r"row 0: .*length 3.*length 2|length 2.*"
                       r"length 3"):
        x[lazyk.array([[True, False], [], [True], [True, False, True, True]])].eval()
    with pytest.raises(IndexError, match=r"a mask of 3 dims \(4 \* var \* 1 \* bool\) for "
                       r"4 \* var \* float64.*\(1 to 2 of them\)"):
        x[lazyk.array([[[True]], [], [], []])]
    with pytest.raises(IndexError, match="selects \\(bool\\) or gathers \\(integers\\): got "
                       "2 \\* float64"):
        x[np.array([1.5, 2.0])]
    one_row = lazyk.array([[1.0], [2.0], [3.0]], "var * var * float64")  # (its length: data)
    with pytest.raises(lazyk.ShapeError, match="the mask has length 2 and the array 3"):
        one_row[np.array([True, False])].eval()
    q = lazyk.array([[[1.0], [2.0]], [[3.0]]])
    with pytest.raises(lazyk.NotSupportedError, match=r"missing rows against a "
                       r"fixed dim \(\?n\): a missing mask element above a fixed dim"):
        q[lazyk.array([[True, None], [False]])].eval()


def test_rows_of_one_do_not_stretch_against_the_mask():
    # a mask selects from rows of its own lengths: stretching a row of 1 would select values
    # that are not there (Awkward refuses a mask row longer than the array's; a shorter one
    # it reads as the positions of its true elements, which is no selection either)
    cases = [([[1.0], [2.0, 3.0]], [[True, True, False], [True, False]], (0, 1, 3)),
             ([[1.0, 5.0], [2.0, 3.0]], [[True], [True, False]], (0, 1, 2)),
             ([[1.0, 5.0, 6.0], [2.0]], [[True, False, True], [True, True]], (1, 1, 2))]
    for data, mask, words in cases[::2]:
        with pytest.raises(IndexError):
            ak.Array(data)[ak.Array(mask)]
    for data, mask, words in cases:
        for x in (lazyk.array(data), lazyk.array(data, "var * var * float64")):
            for e in (x[lazyk.array(mask)], (x * 2)[lazyk.array(mask)],
                      x[lazyk.array(mask)].sum(axis=-1)):
                row, a, b = words
                with pytest.raises(lazyk.ShapeError, match=(
                        rf"x\[mask\] at row {row}: operand \w+ has length ({a}|{b}) and .* has "
                        rf"length ({a}|{b}) \(a mask selects from rows of its own length\)")):
                    e.eval()
    # a mask (or an array) with a fixed dim of 1 there: no stretching either
    y = lazyk.array([[[1.0, 2.0], [4.0]], [[3.0]]])
    with pytest.raises(lazyk.ShapeError, match=r"x\[mask\] at row 0: operand \w+ has length 2 "
                                               r"and the fixed dim has length 1"):
        y[lazyk.array([[True], [False]], "2 * 1 * bool")].eval()
    assert y[lazyk.array([[True, False], [False]])].eval().tolist() == [[[1.0, 2.0]], []]
    one = lazyk.array([[1.0], [2.0]], "2 * 1 * float64")
    assert one[lazyk.array([[True], [False]], "2 * var * bool")].eval().tolist() == [[1.0], []]
    with pytest.raises(lazyk.ShapeError, match=r"x\[mask\] at row 1: operand \w+ has length 2 "
                                               r"and the fixed dim has length 1"):
        one[lazyk.array([[True], [False, True]])].eval()
    # rows above the selected level pair exactly too (a mask of 3 dims)
    mask3 = lazyk.array([[[True, False], [True, True]], [[True]]])
    for x3 in (lazyk.array([[[1.0, 2.0]], [[3.0]]]),
               lazyk.array([[[1.0, 2.0]], [[3.0]]], "2 * var * var * float64")):
        with pytest.raises(lazyk.ShapeError, match=r"x\[mask\] at row 0: operand \w+ has "
                                                   r"length 2 and .* has length 1"):
            x3[mask3].eval()
    # the array's own operands still stretch among themselves, as elementwise work does
    a, b = lazyk.array([[1.0, 2.0], [3.0]]), lazyk.array([[10.0], [20.0]])
    assert (a * b)[a > 1.5].eval().tolist() == [[20.0], [60.0]]
    # a missing mask row pairs with any row (its result row is missing)
    x = lazyk.array([[1.0, 2.0], [3.0]])
    got = x[lazyk.array([None, [True]], "2 * ?var * bool")].eval()
    want = ak.Array([[1.0, 2.0], [3.0]])[ak.Array([None, [True]])]
    assert got.tolist() == want.tolist() == [None, [3.0]]


def test_selections_of_selections_and_of_tuples():
    # rows selected twice (the second mask computed from the first selection's rows)
    x = lazyk.array(np.arange(6.0))
    r = lazyk.array([[1.0, 2.0], [], [3.0], [4.0, 5.0, 6.0], [7.0], [8.0, 9.0]])
    m1 = lazyk.num(r) >= 1
    assert x[m1][lazyk.any(r[m1] > 4, axis=1)].eval().to_list() == [3.0, 4.0, 5.0]
    short = (r[m1] * 2)[np.array([True, False, True])]
    with pytest.raises(lazyk.ShapeError, match="mask has length 3 and the array 5"):
        short.eval()
    # values gathered at tuple positions, selected by a mask over the tuples
    y = lazyk.array([[1.0, 2.0, 3.0], [], [4.0, 5.0]])
    p = lazyk.argcombinations(y, 2, fields=["i", "j"])
    keep = y[p.i] + 1.5 < y[p.j]
    assert (y[p.i] + y[p.j])[keep].eval().to_list() == [[4.0], [], []]
    assert p.i[keep].eval().to_list() == [[0], [], []]
    h = lazyk.histogram(y[p.j][keep], 4, (0, 4)).to_numpy()
    assert h.tolist() == [0, 0, 0, 1]


def test_full_like_keeps_the_structure():
    ak = pytest.importorskip("awkward")

    data = [[1.5, None, np.nan], [], None]
    x = lazyk.array(data)
    got = lazyk.full_like(x, 7)
    assert str(got.type) == "3 * ?var * ?float64"
    assert got.eval().to_list() == ak.full_like(ak.Array(data), 7).tolist()
    assert lazyk.zeros_like(x, dtype="int32").eval().to_list() == [[0, None, 0], [], None]
    ones = lazyk.ones_like(lazyk.array(np.arange(3)))
    assert ones.dtype == np.int64 and ones.eval().to_numpy().tolist() == [1, 1, 1]
    with pytest.raises(TypeError, match="1000 does not fit int8"):
        lazyk.full_like(lazyk.array(np.arange(3, dtype=np.int8)), 1000)


def test_passes_split_by_what_they_read(monkeypatch):
    """Fewer rows than two parts' worth, but many items per row (a count pass reads
    them) or many operands per value (a fill reads each): both passes run in several
    parts, and the values are those of one part."""
    from lazyk.kernel import nest as nest_kernel

    rng = np.random.default_rng(5)
    lens = rng.integers(0, 9, 3000)
    flat = rng.normal(size=int(lens.sum()))
    offsets = np.concatenate([[0], np.cumsum(lens)])
    rows = [flat[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]
    x = lazyk.array(rows)
    y = x * 2
    e = (x + y * y - x * 3)[x > 0]
    want = [[v + 4 * v * v - 3 * v for v in r if v > 0] for r in rows]
    monkeypatch.setattr(nest_kernel, "MIN_PART", 2000)  # 3000 rows: one part by rows
    rec: list = []
    RECORDERS.append(rec)
    try:
        with lazyk.threads(2):
            got = e.eval().to_list()
    finally:
        RECORDERS.remove(rec)
    assert [np.allclose(g, w) and len(g) == len(w) for g, w in zip(got, want)] == \
        [True] * len(rows)
    assert [str(k.npass) for _, k, n in rec if n > 1], rec  # several parts
    assert all(n > 1 for _, k, n in rec if "count" in str(k.npass)), rec


def test_last_axis_fold_of_pairs_needs_no_count_pass():
    """A last-axis reduction of `N * var * var` whose outer rows are one array's rows (a
    jet's pairs with the event's leptons): the result has those rows, no count pass runs,
    and the values are those of a Python loop (an empty inner row folds to the
    identity)."""
    jets = [[1.0, 2.0], [], [3.0], [0.5, 4.0, 6.0]]
    leps = [[1.0], [2.0, 3.0], [], [0.25, 0.5]]
    x, y = lazyk.array(jets), lazyk.array(leps)
    pairs = lazyk.cartesian({"j": x, "l": y}, axis=1, nested=True)
    e = lazyk.sum(pairs.j * pairs.l, axis=-1)
    assert [p for _, p in nests(e)] == ["fill"]
    assert e.eval().to_list() == [[j * sum(r) for j in js] for js, r in zip(jets, leps)]
    far = lazyk.all(abs(pairs.j - pairs.l) >= 1, axis=-1)
    assert [p for _, p in nests(far)] == ["fill"]
    assert far.eval().to_list() == [[all(abs(j - v) >= 1 for v in r) for j in js]
                                    for js, r in zip(jets, leps)]


def test_a_selection_paired_with_other_rows_is_taken_first():
    """`jets[jets.pt > 30]` paired with every lepton of its event (`cartesian(...,
    nested=True)`) and folded over the leptons: the jets' kept items are taken natively
    first, so the fold runs no count pass; values as a Python loop."""
    rng = np.random.default_rng(11)
    lens_j, lens_l = rng.integers(0, 6, 200), rng.integers(0, 4, 200)
    jets = [rng.normal(30, 10, n).round(1).tolist() for n in lens_j]
    leps = [rng.normal(0, 1, n).round(2).tolist() for n in lens_l]
    j, lp = lazyk.array(jets), lazyk.array(leps)
    kept = j[j > 30]
    pairs = lazyk.cartesian({"j": kept, "l": lp}, axis=1, nested=True)
    e = lazyk.all(pairs.j * pairs.l < 20, axis=-1)
    passes = [p for _, p in nests(e)]
    assert "count1" not in passes, passes
    want = [[all(a * b < 20 for b in r) for a in js if a > 30] for js, r in zip(jets, leps)]
    assert e.eval().to_list() == want
    assert (kept + 1).eval().to_list() == [[a + 1 for a in js if a > 30] for js in jets]


def test_selection_of_one_row_that_may_be_missing_is_refused_with_the_way_round():
    """A top-level `?var` array is one row that may be missing: `x[mask]` there is refused
    when built, naming the type and `x[None]` (which selects)."""
    y = lazyk.array([1.0, -2.0, 3.0], type="?var * float64")
    for build in (lambda: y[y > 0], lambda: y[lazyk.array([True, False, True])],
                  lambda: lazyk.array([1.0, 2.0, 3.0])[y > 0]):
        with pytest.raises(lazyk.NotSupportedError, match=r"\?var \* (float64|bool).*x\[None\]"):
            build()
    z = y[None]
    assert z[z > 0].eval().to_list() == [[1.0, 3.0]]


def test_error_messages_show_selections_gathers_and_row_operations_as_written():
    import re

    from lazyk.frontend.expression import summary

    r = lazyk.array([[3.0, 1.0], [], [2.0]])

    def shown(e):  # (arrays are named _0, _1, ... in the order they were first used)
        return re.sub(r"_\d+", "x", summary(e))
    assert shown(r[lazyk.argsort(r, axis=1)]).startswith("Expr(x[argsort(x)]")
    assert shown(r[r > 1]).startswith("Expr(x[x > 1.0]")
    assert shown((r + 1)[lazyk.argmax(r, axis=1, keepdims=True)]).startswith(
        "Expr((x + 1.0)[argmax(x, axis=1)]")
    assert shown(lazyk.sort(r) + 1).startswith("Expr(sort(x) + 1.0")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(-4, 4), st.one_of(st.none(), st.integers(-4, 4)),
                                   st.booleans()), max_size=4), min_size=1, max_size=5))
def test_selection_of_a_where_between_missing_values_keeps_the_chosen_branch(rows):
    """where(c, x, y) with `?T` y: an element where c holds is x's value, present even
    where y's is missing; a selection, a slice and a take-back of it keep that (a selection
    read y's missing state for every element)."""
    n = len(rows)
    X = [[float(a) for a, _, _ in r] for r in rows]
    Y = [[b for _, b, _ in r] for r in rows]
    M = [[k for _, _, k in r] for r in rows]
    x = lazyk.array(X, f"{n} * var * float64")
    y = lazyk.array(Y, f"{n} * var * ?int64")
    m = lazyk.array(M, f"{n} * var * bool")
    w = lazyk.where(x > 0, x, y)
    ref = [[a if a > 0 else (None if b is None else float(b)) for a, b in zip(xr, yr)]
           for xr, yr in zip(X, Y)]
    assert w[m].eval().to_list() == [[v for v, k in zip(r, mr) if k] for r, mr in zip(ref, M)]
    assert w[:, :2].eval().to_list() == [r[:2] for r in ref]
    assert (w * 2)[x > -5].eval().to_list() == [[None if v is None else 2 * v for v in r]
                                                 for r in ref]
    k = lazyk.compile(lazyk.where(lazyk.placeholder("x", "N * var * float64") > 0,
                                  lazyk.placeholder("x", "N * var * float64"),
                                  lazyk.placeholder("y", "N * var * ?int64"))
                      [lazyk.placeholder("m", "N * var * bool")])
    assert k(x, y, m).to_list() == [[v for v, k in zip(r, mr) if k] for r, mr in zip(ref, M)]


def test_where_between_selections_over_missing_values():
    """where(c[m], x[m], y[m]) with `?T` y: the chosen branch's value and missing state."""
    x = lazyk.array([[1, 2, 3], [4]])
    y = lazyk.array([[None, 20, None], [40]])
    c = lazyk.array([[True, True, False], [True]])
    m = lazyk.array([[True, True, True], [True]])
    w = lazyk.where(c[m], x[m], y[m])
    assert w.eval().to_list() == [[1, 2, None], [4]]
    assert lazyk.sum(w, axis=1, skipna=True).eval().to_list() == [3, 4]
    assert w[:, 1:].eval().to_list() == [[2, None], []]


def test_a_fixed_mask_over_rows_that_may_be_missing_keeps_them_missing():
    """A missing row selected by a mask of a fixed dim stays missing (the mask's length
    there does not matter); a present row pairs with the mask exactly."""
    x = lazyk.array([[1, 2], None, [3, 4]], type="3 * ?var * int64")
    f = np.array([[1, 2], [3, 4], [5, 6]])
    want = [[], None, [3, 4]]
    assert x[f > 2].eval().to_list() == want
    assert x[lazyk.array(f) > 2].eval().to_list() == want
    assert (x * 2)[f > 2].sum(axis=1).eval().to_list() == [0, None, 14]
    s = lazyk.array([["a", "b"], None, ["c", "d"]], type="3 * ?var * string")
    assert s[f > 2].eval().to_list() == [[], None, ["c", "d"]]
    deep = lazyk.array([[[1], [2, 3]], None, [[4], []]], type="3 * ?var * var * int64")
    assert deep[f > 2].eval().to_list() == [[], None, [[4], []]]
    wrong = lazyk.array([[1, 2], None, [3, 4, 5]], type="3 * ?var * int64")
    with pytest.raises(lazyk.ShapeError, match="row 2: operand 1 has length 2 and operand 0 "
                                               "has length 3"):
        wrong[f > 2].eval()

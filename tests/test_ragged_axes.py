"""Reductions over any tuple of axes of ragged data in the loop nest (`var * var * T`,
`N * var * var * T`, `3 * var * 4 * T`, `var * var * var * T`, fixed dims over one
trailing var dim `2 * N * var * T`; leaves `T` and `?T`, NaN among the floats) against
the plain-Python reference: values, dtypes, result types, missing values, `keepdims`,
`skipna`, `initial`; rows that do not fold together (ShapeError) and min / max of nothing
(ValueError) raise as the reference does."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from lazyk.kernel import nest as nest_kernel
from tests import ragged_reference as R
from tests.ragged_strategies import ragged, ragged_pair
from tests.test_ragged_reference import same

NEST = ("var * var * T", "N * var * var * T", "3 * var * 4 * T", "var * var * var * T",
        "2 * N * var * T")
OPS = ("sum", "prod", "min", "max", "any", "all", "mean", "count")


def run(op, a, axes, keepdims, skipna, initial):
    """lazyk's reduction, evaluated."""
    if op == "count":
        return lazyk.count(a, axis=axes, keepdims=keepdims).eval()
    kw = {"skipna": True} if skipna else {}
    if initial is not None:
        kw["initial"] = initial
    return getattr(a, op)(axis=axes, keepdims=keepdims, **kw).eval()


def compare(op, a, ra, axes, keepdims=False, skipna=False, initial=None):
    """lazyk against the reference: the same type and values, or the same error."""
    try:
        ref = R.reduce(op, ra, axis=axes, keepdims=keepdims, skipna=skipna, initial=initial)
    except lazyk.ShapeError:
        with pytest.raises(lazyk.ShapeError, match="fold together|has length"):
            run(op, a, axes, keepdims, skipna, initial)
        return
    except ValueError as e:
        assert "zero-size" in str(e)
        with pytest.raises(ValueError, match=f"zero-size .*{op}"):
            run(op, a, axes, keepdims, skipna, initial)
        return
    got = run(op, a, axes, keepdims, skipna, initial)
    assert str(got.type) == str(ref.type), (str(got.type), str(ref.type), axes)
    assert same(got.to_list(), ref.data), (got.to_list(), ref.data, axes)


@st.composite
def axis_tuples(draw, nd: int):
    """Distinct axes (mostly two or more, not all), some negative."""
    lo, hi = (2, nd - 1) if nd > 2 and draw(st.integers(0, 3)) else (1, nd)
    axes = sorted(draw(st.sets(st.integers(0, nd - 1), min_size=lo, max_size=hi)))
    return tuple(a - nd if draw(st.booleans()) else a for a in axes)


@settings(max_examples=30, deadline=None)
@given(ragged(layouts=NEST, dtypes=("float64", "int32", "bool"), option_rows=False, nan=True),
       st.sampled_from(OPS), st.booleans(), st.booleans(), st.data())
def test_any_axes(arr, op, keepdims, skipna, data):
    t, values = arr
    a, ra = lazyk.array(values, type=t), R.array(values, t)
    axes = data.draw(axis_tuples(ra.type.ndim))
    compare(op, a, ra, axes, keepdims, skipna)


@settings(max_examples=20, deadline=None)
@given(ragged(layouts=NEST, dtypes=("float64", "int64"), option_rows=False),
       st.sampled_from(["min", "max"]), st.booleans(), st.booleans(), st.data())
def test_min_max_initial(arr, op, keepdims, skipna, data):
    t, values = arr
    a, ra = lazyk.array(values, type=t), R.array(values, t)
    axes = data.draw(axis_tuples(ra.type.ndim))
    compare(op, a, ra, axes, keepdims, skipna, initial=data.draw(st.sampled_from([0, 2])))


@settings(max_examples=20, deadline=None)
@given(ragged_pair(layouts=NEST, broadcast=True, option_rows=False),
       st.sampled_from(["sum", "max", "mean"]), st.booleans(), st.data())
def test_any_axes_of_an_expression(pair, op, skipna, data):
    """The elementwise body fuses into the fold; its operands' rows pair first (length-1
    rows stretch) and the folded rows pair as the reference's rows do."""
    t1, d1, t2, d2 = pair
    x, y = lazyk.array(d1, type=t1), lazyk.array(d2, type=t2)
    rx, ry = R.array(d1, t1), R.array(d2, t2)
    try:
        ref_in = R.elementwise("add", R.elementwise("multiply", rx, 2), ry)
    except lazyk.ShapeError:
        return  # the operands do not pair: elementwise tests cover that
    axes = data.draw(axis_tuples(ref_in.type.ndim))
    compare(op, x * 2 + y, ref_in, axes, skipna=skipna)


def test_examples():
    a = lazyk.array([[[1., 2.], [3.]], [[4.]], []], type="var * var * var * float64")
    got = a.mean(axis=(1, 2), keepdims=True).eval()
    assert str(got.type) == "var * 1 * 1 * float64"
    assert same(got.to_list(), [[[2.0]], [[4.0]], [[float("nan")]]])
    with pytest.raises(lazyk.ShapeError, match="fold together"):
        a.min(axis=(0, 2)).eval()  # rows of length 2, 1 and 0 along axis 0
    a = lazyk.array([[[1., 2.], [3.]], [[4.]]], type="var * var * var * float64")
    got = a.min(axis=(0, 2)).eval()  # rows of length 1 stretch: [min(1, 2, 4), min(3, 4)]
    assert str(got.type) == "var * float64" and got.to_list() == [1.0, 3.0]
    got = a.max(axis=(-3, -2)).eval()  # [[1, 2], [3]] -> [3, 3]; with [[4]] -> [4, 4]
    assert str(got.type) == "var * float64" and got.to_list() == [4.0, 4.0]
    b = lazyk.array([[[1, 2, 3, 4]], [], [[5, 6, 7, 8], [1, 1, 1, 1]]], type="3 * var * 4 * int32")
    got = b.sum(axis=(0, 1)).eval()
    assert str(got.type) == "4 * int64" and got.to_list() == [7, 9, 11, 13]
    got = lazyk.count(b, axis=(1, 2)).eval()
    assert str(got.type) == "3 * int64" and got.to_list() == [4, 0, 8]
    m = lazyk.array([[[1, None], [3]], [[None]]], type="2 * var * var * ?int64")
    assert m.sum(axis=(0, 2)).eval().to_list() == [None, None]  # [None] stretches
    assert m.sum(axis=(0, 2), skipna=True).eval().to_list() == [1, 3]
    assert m.max(axis=(1, 2), skipna=True).eval().to_list() == [3, None]
    assert m.max(axis=(1, 2), skipna=True, initial=0).eval().to_list() == [3, 0]


def test_empty_groups_are_nothing_folded():
    # the empty middle row of row 1 folds nothing: the fold over axis 0 skips it (it is
    # not a row of length 0 that would have to pair with the row of length 2)
    a = lazyk.array([[[1., 2.]], [[]]], type="2 * var * var * float64")
    ra = R.array([[[1., 2.]], [[]]], "2 * var * var * float64")
    for op in ("sum", "min", "mean", "count"):
        compare(op, a, ra, (0, 1))
    # [[5.], []] folds to [5, nothing]; [[1.]] to [1], which stretches: [1, 1]
    b = lazyk.array([[[5.], []], [[1.]]], type="var * var * var * float64")
    assert b.min(axis=(0, 2)).eval().to_list() == [1.0, 1.0]
    rb = R.array([[[5.], []], [[1.]]], "var * var * var * float64")
    for op in ("max", "prod", "mean"):
        compare(op, b, rb, (0, 2))
    for t in ("0 * var * var * float64", "var * var * var * ?float64"):
        e, re_ = lazyk.array([], type=t), R.array([], t)
        for op in ("min", "mean"):
            for axes in ((0, 1), (0, 2)):
                compare(op, e, re_, axes, keepdims=op == "min")


def test_min_of_an_empty_group_raises():
    a = lazyk.array([[[1.], []], [[]]], type="2 * var * var * float64")
    with pytest.raises(ValueError, match="zero-size .*min"):
        a.min(axis=(1, 2)).eval()
    assert a.min(axis=(1, 2), initial=7.0).eval().to_list() == [1.0, 7.0]
    with pytest.raises(lazyk.ShapeError, match="fold together"):
        lazyk.array([[[1., 2.]], [[1., 2., 3.]]], type="2 * var * var * float64") \
            .sum(axis=(0, 1)).eval()


def test_one_compile_for_many_sizes():
    def go(n):
        rng = np.random.default_rng(n)
        outer = np.concatenate([[0], np.cumsum(rng.integers(0, 4, n))])
        inner = np.concatenate([[0], np.cumsum(rng.integers(0, 4, outer[-1]))])
        x = lazyk.from_offsets(outer, lazyk.from_offsets(inner, rng.standard_normal(inner[-1])))
        return x.max(axis=(-2, -1), initial=0.0).eval()
    go(3)
    before = nest_kernel.nest_stats["compiles"]
    for n in (1, 20, 500):
        got = go(n)
        assert len(got.to_list()) == n
    assert nest_kernel.nest_stats["compiles"] == before


def _deep(rng, n):
    """n * var * var * var * float64: every middle row holds three rows (so a fold over
    axes 1 and 3 pairs them), the innermost rows of random lengths."""
    outer = np.concatenate([[0], np.cumsum(rng.integers(0, 5, n))])
    mid = np.arange(0, 3 * outer[-1] + 1, 3)
    inner = np.concatenate([[0], np.cumsum(rng.integers(0, 4, mid[-1]))])
    return lazyk.from_offsets(outer, lazyk.from_offsets(
        mid, lazyk.from_offsets(inner, rng.standard_normal(inner[-1]))))


def test_against_numpy_and_the_thread_split(monkeypatch):
    rng = np.random.default_rng(7)
    x = _deep(rng, 400)
    rows = x.to_list()
    want = [[float(sum(sum(r[k]) for r in row)) for k in range(3)] if row else []
            for row in rows]
    monkeypatch.setattr(nest_kernel, "MIN_PART", 16)
    old = lazyk.get_num_threads()
    try:
        out = {}
        for t in (1, 2):
            lazyk.set_num_threads(t)
            got = x.sum(axis=(1, 3)).eval()
            assert str(got.type) == "400 * var * float64"
            out[t] = [got.to_list(), x.max(axis=(1, 2, 3), initial=-9.0).eval().to_list(),
                      (x - x.mean(axis=(1, 2, 3), keepdims=True)).eval().to_list()]
    finally:
        lazyk.set_num_threads(old)
    assert same(out[1][0], want)
    assert same(out[1][1], [max([v for r in row for q in r for v in q], default=-9.0)
                            for row in rows])
    for row, cen in zip(rows, out[1][2]):
        flat = [v for r in row for q in r for v in q]
        m = np.mean(flat) if flat else 0.0
        assert same(cen, [[[v - m for v in q] for q in r] for r in row])
    assert all(same(a, b) for a, b in zip(out[1], out[2]))


def test_numpy_operand_broadcasts_into_the_fold():
    d = [[[1, 2, 3, 4]], [], [[5, 6, 7, 8], [1, 1, 1, 1]]]
    b, rb = lazyk.array(d, type="3 * var * 4 * int32"), R.array(d, "3 * var * 4 * int32")
    w = np.array([1, 0, 2, 0], np.int32)
    got = (b * w).sum(axis=(0, 1)).eval()
    assert str(got.type) == "4 * int64" and got.to_list() == [7, 0, 22, 0]
    ref = R.elementwise("multiply", rb, R.array(w.tolist(), "4 * int32"))
    for op in ("max", "count"):
        for axes in ((0, 1), (1, 2), (0, 2)):
            compare(op, b * w, ref, axes)


def test_a_fold_over_no_axis_is_each_value_as_numpy():
    rows = [[1.0, 0.0], [], [2.0, 3.0, 4.0]]
    r = lazyk.array(rows)
    for op in ("sum", "max", "min", "mean", "prod"):
        got = getattr(lazyk, op)(r, axis=()).eval()
        assert got.to_list() == rows and str(got.type) == "3 * var * float64", op
    assert lazyk.count(r, axis=()).eval().to_list() == [[1, 1], [], [1, 1, 1]]
    assert lazyk.count_nonzero(r, axis=()).eval().to_list() == [[1, 0], [], [1, 1, 1]]
    assert lazyk.any(r, axis=()).eval().to_list() == [[True, False], [], [True] * 3]
    assert lazyk.max(r, axis=(), initial=2.5).eval().to_list() == [[2.5, 2.5], [], [2.5, 3, 4]]
    i = lazyk.array([[1, 2], [3]], type="2 * var * int32")
    assert str(lazyk.sum(i, axis=()).eval().type) == "2 * var * int64"


def test_a_fold_over_no_axis_of_missing_values_keeps_them():
    x = lazyk.array([[1.0, None]])  # 1 * 2 * ?float64
    assert lazyk.sum(x, axis=()).eval().to_list() == [[1.0, None]]
    assert lazyk.max(x, axis=(), skipna=True).eval().to_list() == [[1.0, None]]
    # skipping a value alone folds nothing: the fold of nothing, as NumPy's sum of no value
    for op, want in (("sum", [[1.0, 0.0]]), ("prod", [[1.0, 1.0]]), ("any", [[True, False]]),
                     ("all", [[True, True]])):
        got = getattr(lazyk, op)(x, axis=(), skipna=True).eval()
        assert got.to_list() == want and "?" not in str(got.type), op
    assert lazyk.count(x, axis=()).eval().to_list() == [[1, 0]]
    assert lazyk.count_nonzero(x, axis=()).eval().to_list() == [[1, 0]]
    r = lazyk.array([[1, None], None, [3]], type="3 * ?var * ?int32")
    got = lazyk.count(r, axis=()).eval()
    assert got.to_list() == [[1, 0], None, [1]] and str(got.type) == "3 * ?var * int64"

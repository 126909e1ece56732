"""Missing-value rules of ragged and `?T` evaluation against the plain-Python reference
(`tests/ragged_reference.py`) and NumPy: where() over missing branches, empty arrays, the
mean of nothing, `initial=` for min/max, `count`, and `skipnan=`.

Layouts lazyk runs today (fixed dims, then at most one trailing var dim) must match the
reference exactly; `tests/test_ragged_today.py` covers every layout (refusals included).
"""
from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazyk
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_ragged_reference import same
from tests.test_ragged_today import RA, L, case_reduce, case_where, check

# Layouts every rule below is supported on: each case must match the reference.
RUN = ("var * T", "N * var * T", "N * T", "3 * N * T")


@given(S.ragged_pair(layouts=RUN, option_rows=False))
def test_where_takes_the_missing_state_of_the_branch_selected(pair):
    assert case_where(pair) == "match"


@given(S.ragged_pair(layouts=RUN, option_rows=False),
       st.sampled_from(["sum", "max", "mean", "count"]), st.booleans())
def test_where_inside_a_reduction(pair, op, skipna):
    """The reduced value of where(c, x, y) is the reference's reduction of its result."""
    t1, d1, t2, d2 = pair

    def ref():
        x = RA(t1, d1)
        w = R.where(R.elementwise("greater", x, 0), x, RA(t2, d2))
        return R.reduce(op, w, -1, skipna=skipna)

    def lz():
        x = L(t1, d1)
        w = lazyk.where(x > 0, x, L(t2, d2))
        return getattr(lazyk, op)(w, axis=-1, **({} if op == "count" else {"skipna": skipna}))
    assert check(ref, lz) in ("match", "raises")


def test_where_by_hand():
    x = L("3 * ?int32", [4, -1, None])
    y = L("3 * ?int32", [None, None, 7])
    assert lazyk.where(x > 0, x, y).to_list() == [4, None, None]
    assert lazyk.where(x > 0, x, 0).to_list() == [4, 0, None]
    r = L("2 * var * ?float64", [[1.0, -2.0], [None]])
    assert lazyk.where(r > 0, r, -r).to_list() == [[1.0, 2.0], [None]]
    assert lazyk.where(r > 0, 5.0, r).sum(axis=-1).to_list() == [3.0, None]
    # functions of one value spelled with a constant condition stay missing where x is
    assert lazyk.imag(r).to_list() == [[0.0, 0.0], [None]]


@pytest.mark.parametrize("t", ["0 * var * float64", "0 * var * ?float32", "0 * 3 * var * int32",
                               "3 * 0 * var * ?int64"])
def test_elementwise_on_an_empty_array(t):
    data = R.array([[]] * 3 if t.startswith("3 * 0") else [], t).data
    for f, g in [(lambda a: a + 1, lambda a: R.elementwise("add", a, 1)),
                 (lambda a: lazyk.where(a > 0, a, 2 * a),
                  lambda a: R.where(R.elementwise("greater", a, 0), a,
                                    R.elementwise("multiply", 2, a)))]:
        assert check(lambda: g(RA(t, data)), lambda: f(L(t, data))) == "match"


@given(S.ragged(layouts=RUN, dtypes=S.NUMERIC, nan=True, option_rows=False), st.booleans(),
       st.booleans())
def test_mean_matches_the_reference(case, skipna, keepdims):
    """Including rows with nothing to fold: NaN for T, missing for ?T."""
    assert case_reduce(case, "mean", -1, keepdims, skipna) in ("match", "raises")


def test_mean_of_nothing():
    x = L("3 * var * ?float64", [[], [None], [1.0, None]])
    assert x.mean(axis=-1).to_list() == [None, None, None]
    assert x.mean(axis=-1, skipna=True).to_list() == [None, None, 1.0]
    plain = L("2 * var * float64", [[], [2.0]]).mean(axis=-1).to_list()
    assert np.isnan(plain[0]) and plain[1] == 2.0


@st.composite
def reduce_case(draw, layouts=RUN):
    t, d = draw(S.ragged(layouts=layouts, nan=True, option_rows=False))
    nd = R.parse_type(t).ndim
    axis = draw(st.sampled_from([-1, None] + ([tuple(range(nd - 1))] if nd > 1 else [])))
    return (t, d), axis, draw(st.booleans()), draw(st.booleans())


@given(reduce_case(), st.sampled_from(["min", "max"]), st.integers(-3, 3))
def test_min_max_initial_matches_the_reference(case, op, initial):
    (t, d), axis, keepdims, skipna = case
    assert case_reduce((t, d), op, axis, keepdims, skipna, initial) in ("match", "raises")


@settings(max_examples=30)
@given(hnp.arrays(st.sampled_from([np.float64, np.float32, np.int32, np.int64]),
                  hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4),
                  elements=st.integers(-5, 5)),
       st.sampled_from(["min", "max"]), st.integers(-3, 3), st.data())
def test_min_max_initial_matches_numpy(a, op, initial, data):
    axis = data.draw(st.sampled_from([None] + list(range(a.ndim))))
    keepdims = data.draw(st.booleans())
    want = getattr(np, op)(a, axis=axis, keepdims=keepdims, initial=initial)
    got = getattr(lazyk, op)(lazyk.array(a), axis=axis, keepdims=keepdims,
                             initial=initial).to_numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert np.min(lazyk.array(a), initial=initial, axis=axis).to_numpy().dtype == a.dtype


def test_initial_refusals():
    with pytest.raises(lazyk.NotSupportedError, match="initial"):
        lazyk.mean(lazyk.array(np.ones(3)), initial=1)
    with pytest.raises(lazyk.NotSupportedError, match="initial"):
        lazyk.any(lazyk.array(np.ones(3)), initial=1)
    with pytest.raises(lazyk.NotSupportedError, match="where"):
        lazyk.array(np.ones(3)).min(where=np.ones(3, bool))


@given(S.ragged(layouts=RUN, nan=True, option_rows=False), st.booleans())
def test_count_matches_the_reference(case, keepdims):
    nd = R.parse_type(case[0]).ndim
    for axis in [-1, None] + ([0] if nd > 1 else []):
        assert case_reduce(case, "count", axis, keepdims, False) in ("match", "raises")


def test_count_by_hand():
    x = L("3 * var * ?float64", [[1.0, None, float("nan")], [], [None]])
    assert lazyk.count(x, axis=-1).to_list() == [2, 0, 0]
    assert lazyk.count(x, axis=-1, skipnan=True).to_list() == [1, 0, 0]
    assert lazyk.count(x).to_list() == 2
    assert str(lazyk.count(x, axis=-1).type) == "3 * int64"
    a = np.zeros((2, 5))
    got = lazyk.count(lazyk.array(a), axis=1).to_numpy()
    assert got.dtype == np.int64 and got.tolist() == [5, 5]


NAN_FUNCTIONS = {"sum": np.nansum, "prod": np.nanprod, "min": np.nanmin, "max": np.nanmax,
                 "mean": np.nanmean}


@settings(max_examples=30)
@given(hnp.arrays(st.sampled_from([np.float64, np.float32]),
                  hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=4),
                  elements=st.sampled_from([np.nan, -1.5, 0.0, 2.0, 3.5])),
       st.sampled_from(sorted(NAN_FUNCTIONS)), st.data())
def test_skipnan_matches_numpy_nan_functions(a, op, data):
    axis = data.draw(st.sampled_from([None] + list(range(a.ndim))))
    with _quiet():
        want = NAN_FUNCTIONS[op](a, axis=axis)
    got = getattr(lazyk, op)(lazyk.array(a), axis=axis, skipnan=True).to_numpy()
    assert got.dtype == np.asarray(want).dtype and got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@contextlib.contextmanager
def _quiet():
    """NumPy's nan-functions warn on all-NaN slices; lazyk answers the same, silently."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


@given(S.ragged(layouts=("N * var * T",), dtypes=("float64", "float32"), nan=True,
                option_rows=False), st.sampled_from(sorted(NAN_FUNCTIONS)), st.booleans())
def test_skipnan_on_ragged_rows(case, op, skipna):
    """Per row: NumPy's nan-function over the row's present values (missing values skipped
    under skipna; without it a missing value makes the row missing); for ?T data a row
    with no present value is missing, as for every reduction of nothing over ?T."""
    t, d = case
    x = L(t, d)
    option = "?" in t
    dtype = np.dtype(t.rsplit("?", 1)[-1].rsplit(" ", 1)[-1])
    want = []
    for row in d:
        present = [v for v in row if v is not None]
        if option and ((not skipna and len(present) < len(row)) or
                       (not present and op in ("min", "max", "mean"))):
            want.append(None)
            continue
        if not present and op in ("min", "max"):
            want.append("raise")
            continue
        with _quiet():
            want.append(NAN_FUNCTIONS[op](np.array(present, dtype)).item())
    got_expr = getattr(lazyk, op)(x, axis=-1, skipna=skipna, skipnan=True)
    if "raise" in want:
        with pytest.raises(ValueError):
            got_expr.eval()
        return
    got = got_expr.eval()
    assert same(got.to_list(), want, rel=1e-5), (got.to_list(), want)
    assert got.to_list() == [] or str(got.type).endswith(dtype.name)


def test_skipnan_by_hand():
    x = L("3 * var * float64", [[1.0, float("nan"), 3.0], [float("nan")], [2.0]])
    assert x.sum(axis=-1, skipnan=True).to_list() == [4.0, 0.0, 2.0]
    m = x.max(axis=-1, skipnan=True).to_list()
    assert m[0] == 3.0 and np.isnan(m[1]) and m[2] == 2.0
    assert x.max(axis=-1, skipnan=True, initial=0.0).to_list() == [3.0, 0.0, 2.0]
    y = L("2 * var * ?float64", [[1.0, None, float("nan")], [None]])
    assert y.mean(axis=-1, skipna=True, skipnan=True).to_list() == [1.0, None]
    assert y.sum(axis=-1, skipnan=True).to_list() == [None, None]
    # integers have no NaN: skipnan changes nothing
    i = lazyk.array(np.arange(6).reshape(2, 3))
    assert i.sum(axis=1, skipnan=True).to_numpy().tolist() == [3, 12]


@st.composite
def outer_reduce_cases(draw):
    t, d = draw(S.ragged(layouts=("N * 3 * var * T", "3 * N * var * T", "N * var * T"),
                         nan=True, option_rows=False))
    axis, keepdims = draw(S.reduce_args(R.parse_type(t).ndim))
    op = draw(st.sampled_from(R.REDUCERS))
    return (t, d), op, axis, keepdims, draw(st.booleans())


@given(outer_reduce_cases())
def test_reductions_over_any_axes_of_fixed_dims_then_var(args):
    """Any axis or tuple of axes of `N * M * var * T`: kept outer dims, folded outer dims
    (rows fold element by element, length-1 rows stretching), the var axis or not."""
    assert case_reduce(*args) in ("match", "raises")


def test_outer_axis_folds_by_hand():
    x = L("2 * 3 * var * float64", [[[1.0], [], [2.0, 4.0]], [[2.0, 3.0], [1.0], [5.0, 6.0]]])
    assert lazyk.sum(x, axis=0).to_list() == [[3.0, 4.0], [], [7.0, 10.0]]  # 1 stretches to 0
    assert lazyk.sum(x, axis=(0, 2)).to_list() == [6.0, 1.0, 17.0]
    assert str(lazyk.sum(x, axis=(0, 2), keepdims=True).eval().type) == "1 * 3 * 1 * float64"
    with pytest.raises(lazyk.ShapeError):  # rows of length 1 and 2 fold; 0 and 2 do not
        lazyk.sum(x, axis=1).eval()
    y = L("2 * var * float64", [[5.0], []])  # a length-1 row stretches to length 0
    assert lazyk.sum(y, axis=0).to_list() == []

"""Folds of data with missing rows at several levels (`var * ?var * ?var * T`, `?var` and
`?n` together, fixed and var dims between and below), and folds over axis 0 and a var
axis that keep var rows below missing rows deeper than axis 1 (skipna, count), against
the reference: each missing row as a row of missing values folded in the nest, then the
result rows marked missing or emptied from the same fold of one flag per row. Values,
dtypes, result types and missing state; empty arrays, empty rows, all rows missing and
length-1 rows by hand and from the strategies."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_ragged_qaxes import _call
from tests.test_ragged_qfull import in_nest
from tests.test_ragged_today import LAZYK_REDUCERS, L

# two levels of missing rows, with fixed / var dims between or below
QLEVELS = ("var * ?var * ?var * T", "N * ?var * ?var * T", "var * ?var * var * ?var * T",
           "2 * ?var * 2 * ?var * T", "2 * ?var * ?2 * T", "N * ?var * ?var * 2 * T")
# missing rows deeper than axis 1 under a var axis, var rows kept below
QDEEP = ("2 * var * ?var * var * T", "N * var * ?var * var * T",
         "var * var * ?var * var * T")


def _several(nd):
    return [a for n in range(1, nd + 1) for a in itertools.combinations(range(nd), n)]


@settings(max_examples=15, deadline=None)
@given(S.ragged(layouts=QLEVELS, dtypes=("float64", "int32"), nan=True, option_rows=False),
       st.sampled_from(LAZYK_REDUCERS), st.data())
def test_folds_over_missing_rows_at_two_levels(case, op, data):
    t, d = case
    axes = data.draw(st.sampled_from(_several(R.parse_type(t).ndim)))
    in_nest(*_call(op, t, d, axes, data.draw(st.booleans()), data.draw(st.booleans())))


@settings(max_examples=8, deadline=None)
@given(S.ragged(layouts=QDEEP, dtypes=("float64", "int64"), option_rows=False),
       st.sampled_from(("sum", "count", "max", "mean")), st.booleans())
def test_folds_over_axis_0_and_a_var_axis_above_deeper_missing_rows(case, op, keepdims):
    t, d = case
    for axes in ((0, 1), (0, 2), (0, 1, 2)):
        in_nest(*_call(op, t, d, axes, keepdims, True))


def test_folds_over_missing_rows_at_two_levels_by_hand():
    t = "var * ?var * ?var * float64"
    x = L(t, [[[1.0, 2.0], None], None, [[3.0], [4.0, 5.0]]])
    got = x.sum(axis=(0, 2)).eval()
    assert str(got.type) == "?var * ?float64" and got.to_list() is None
    got = x.sum(axis=(0, 2), skipna=True).eval()
    assert str(got.type) == "var * float64" and got.to_list() == [6.0, 9.0]
    got = x.sum(axis=(1, 2)).eval()
    assert str(got.type) == "var * ?float64" and got.to_list() == [None, None, 12.0]
    got = x.sum(axis=(1, 2), skipna=True).eval()
    assert got.to_list() == [3.0, None, 12.0]  # a missing row along its own axis
    got = lazyk.count(x, axis=(0, 1)).eval()  # [3.0] stretches against [1.0, 2.0]
    assert str(got.type) == "var * int64" and got.to_list() == [3, 3]
    # every row missing; empty rows; an empty array; length-1 rows that stretch
    cases = [[None, None], [[None, None]], [[[], []], [[]]], [], [[[1.0]], [[2.0, 3.0]]]]
    for d, axes, skipna in itertools.product(cases, [(0, 1), (0, 2), (1, 2)], [False, True]):
        assert in_nest(*_call("sum", t, d, axes, False, skipna)) == "match"
    got = L(t, [None, None]).sum(axis=(0, 2), skipna=True).eval()  # no row at axis 1
    assert str(got.type) == "var * float64" and got.to_list() == []
    got = L(t, [[None, None]]).sum(axis=(0, 2), skipna=True).eval()  # rows, no values
    assert str(got.type) == "var * float64" and got.to_list() == [0.0, 0.0]
    y = L("2 * ?var * ?2 * int32", [[[1, 2], None], None])
    got = y.sum(axis=(0, 1), skipna=True).eval()
    assert str(got.type) == "2 * int64" and got.to_list() == [1, 2]
    assert y.sum(axis=0).to_list() is None


def test_folds_over_axis_0_and_a_var_axis_above_deeper_missing_rows_by_hand():
    t = "2 * var * ?var * var * float64"
    x = L(t, [[[[1.0], [2.0, 3.0]], None], [None, [[4.0], [5.0, 6.0]]]])
    got = x.sum(axis=(0, 1), skipna=True).eval()
    assert str(got.type) == "var * var * float64"
    assert got.to_list() == [[5.0], [7.0, 9.0]]
    got = lazyk.count(x, axis=(0, 2)).eval()
    assert str(got.type) == "var * var * int64" and got.to_list() == [[2, 2], [2, 2]]
    for axes, op in itertools.product([(0, 1), (0, 2), (0, 1, 2)], ["sum", "count"]):
        assert in_nest(*_call(op, t, x.to_list(), axes, False, True)) == "match"
    every = [[None], [None, None]]  # groups of only missing rows: empty rows
    got = L(t, every).sum(axis=(0, 1), skipna=True).eval()
    assert str(got.type) == "var * var * float64" and got.to_list() == []


@pytest.mark.parametrize("axes", [(0, 2), (1, 2), (0, 1), (0, 3), (1, 3)])
def test_fixed_dims_between_missing_rows(axes):
    t = "2 * ?var * 2 * ?var * float64"
    d = [[[[1.0], None], [[2.0, 3.0], [4.0]]], None]
    for skipna in (False, True):
        assert in_nest(*_call("sum", t, d, axes, True, skipna)) in ("match", "raises")

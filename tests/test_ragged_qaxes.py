"""Reductions over several axes of data with missing rows (`?var`), against the reference.

They run in the loop nest when every `?var` dim lies above the first folded axis, and for
fixed dims over one trailing `?var` dim (the elementwise part first, then the fold of its
rows), also under var dims and over var dims (tests/test_ragged_qforms.py). Folds over several
axes at or above a `?var` dim with another `?var` dim below it are refused by name (the
nest's group walk does not track missing rows): never a wrong answer. Empty arrays,
empty rows and length-1 rows come from the strategies.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_ragged_qfull import QALL, in_nest
from tests.test_ragged_today import LAZYK_REDUCERS, RA, L, check

# `?var` above two trailing axes: those fold in the nest
QDEEP = ("N * ?var * var * var * T", "var * ?var * var * 2 * T")


def _call(op, t, d, axes, keepdims, skipna):
    kw = {} if op == "count" else {"skipna": skipna}

    def ref():
        return R.reduce(op, RA(t, d), axes, keepdims=keepdims, skipna=skipna)

    def got():
        return getattr(lazyk, op)(L(t, d), axis=axes, keepdims=keepdims, **kw)
    return ref, got


@settings(max_examples=20, deadline=None)
@given(S.ragged(layouts=QDEEP, dtypes=("float64", "int32"), nan=True, option_rows=False),
       st.sampled_from(LAZYK_REDUCERS), st.sampled_from([(2, 3), (-2, -1)]), st.booleans(),
       st.booleans())
def test_several_axes_below_missing_rows_run_in_the_nest(case, op, axes, keepdims, skipna):
    t, d = case
    in_nest(*_call(op, t, d, axes, keepdims, skipna))


@settings(max_examples=20, deadline=None)
@given(S.ragged(layouts=QALL, dtypes=("float64",), nan=True), st.sampled_from(LAZYK_REDUCERS),
       st.data())
def test_several_axes_at_or_above_missing_rows_never_answer_wrong(case, op, data):
    t, d = case
    nd = R.parse_type(t).ndim
    tuples = [a for n in range(2, nd) for a in itertools.combinations(range(nd), n)]
    if not tuples:
        return
    axes = data.draw(st.sampled_from(tuples))
    keepdims, skipna = data.draw(st.booleans()), data.draw(st.booleans())
    # refused by name where the nest does not take the form
    assert check(*_call(op, t, d, axes, keepdims, skipna)) in ("match", "refused", "raises")


@pytest.mark.parametrize("t, data, axes", [
    ("2 * ?var * ?var * float64", [[[1.0], None], None], (1, 2)),
    ("var * ?var * ?var * float64", [[[1.0]], None], (0, 2)),
])
def test_several_axes_at_or_above_missing_rows_at_two_levels(t, data, axes):
    """(Missing rows at two levels: `tests/test_ragged_qlevels.py` draws them.)"""
    for skipna in (False, True):
        assert in_nest(*_call("sum", t, data, axes, False, skipna)) == "match"


def test_several_axes_below_missing_rows_by_hand():
    t, d = "2 * ?var * var * var * float64", [[[[1.0, 2.0], [3.0]], [[4.0]]], None]
    assert in_nest(*_call("sum", t, d, (2, 3), False, False)) == "match"
    x = L(t, d)
    got = x.sum(axis=(2, 3)).eval()
    assert str(got.type) == "2 * ?var * ?float64"  # as the reference types it
    assert got.to_list() == [[6.0, 4.0], None]
    got = x.max(axis=(-2, -1), keepdims=True).eval()
    assert str(got.type) == "2 * ?var * 1 * 1 * ?float64"
    assert got.to_list() == [[[[3.0]], [[4.0]]], None]


@settings(max_examples=20, deadline=None)
@given(S.ragged(layouts=("3 * N * ?var * T", "N * ?var * T"), dtypes=("float64", "int32"),
                nan=True), st.sampled_from(LAZYK_REDUCERS), st.data())
def test_several_axes_at_or_above_missing_rows_of_fixed_dims_run_in_the_nest(case, op, data):
    """Fixed dims over one trailing `?var` dim: the elementwise part first, then a fold
    where a missing row is skipped (skipna) or makes its group's result (row) missing."""
    t, d = case
    nd = R.parse_type(t).ndim
    axes = data.draw(st.sampled_from([a for n in range(2, nd + 1)
                                      for a in itertools.combinations(range(nd), n)]))
    keepdims, skipna = data.draw(st.booleans()), data.draw(st.booleans())
    in_nest(*_call(op, t, d, axes, keepdims, skipna))


@settings(max_examples=20, deadline=None)
@given(S.ragged(layouts=("N * ?var * T", "3 * N * ?var * T"), dtypes=("float64", "int64"),
                nan=True), st.integers(1, 3), st.sampled_from(LAZYK_REDUCERS), st.data())
def test_missing_rows_against_a_fixed_dim_folded_in_the_nest(case, n, op, data):
    """`?n` rows (a missing row against a NumPy operand's last dim of n) folded over a
    middle axis, several axes or every axis: missing values skipped or propagated."""
    t, d = case
    nd = R.parse_type(t).ndim
    a = np.arange(1, n + 1, dtype=np.float64)
    axes = data.draw(st.sampled_from([(0,), None] + [a for k in range(2, nd + 1)
                                                     for a in itertools.combinations(
                                                         range(nd), k)]))
    keepdims, skipna = data.draw(st.booleans()), data.draw(st.booleans())
    kw = {} if op == "count" else {"skipna": skipna}
    r = R.array(a.tolist(), f"{n} * float64")

    def ref():
        return R.reduce(op, R.elementwise("add", RA(t, d), r), axes, keepdims=keepdims,
                        skipna=skipna)

    def got():
        return getattr(lazyk, op)(L(t, d) + a, axis=axes, keepdims=keepdims, **kw)
    in_nest(ref, got)


def test_folds_over_missing_rows_by_hand():
    x = L("2 * 2 * ?var * float64", [[[1.0, 2.0], None], [None, None]])
    assert x.sum(axis=(0, 1)).to_list() is None
    got = x.max(axis=(0, 1), skipna=True).eval()
    assert str(got.type) == "var * ?float64" and got.to_list() == [1.0, 2.0]
    got = x.mean(axis=(1, 2), skipna=True).eval()
    assert str(got.type) == "2 * ?float64" and got.to_list() == [1.5, None]
    got = x.sum(axis=(0, 2), skipna=True).eval()
    assert str(got.type) == "2 * float64" and got.to_list() == [3.0, 0.0]
    # a group with no present row: an empty row under skipna
    y = L("2 * 2 * ?var * float64", [[None, None], [[1.0], [2.0, 3.0]]])
    assert y.sum(axis=(1,), skipna=True).to_list() == [[], [3.0, 4.0]]
    assert y.sum(axis=(0, 1), skipna=True).to_list() == [3.0, 4.0]
    z = L("3 * ?var * float64", [[1.0, 2.0], None, [3.0]])
    got = (z + np.ones(2)).sum(axis=0, skipna=True).eval()
    assert str(got.type) == "2 * float64" and got.to_list() == [6.0, 7.0]
    got = (z + np.ones(2)).sum(axis=0).eval()
    assert str(got.type) == "?2 * ?float64" and got.to_list() is None
    assert (z + np.ones(2)).sum(skipna=True).to_list() == 13.0


@settings(max_examples=25, deadline=None)
@given(S.ragged(layouts=("N * ?var * var * var * T",), dtypes=("float64",), nan=True,
                option_rows=False),
       st.sampled_from(LAZYK_REDUCERS), st.sampled_from([(0, 2), (0, 2, 3), (0, 3)]),
       st.booleans(), st.booleans())
def test_folds_over_the_axis_above_missing_rows_keeping_var_rows_below(case, op, axes,
                                                                       keepdims, skipna):
    # a missing row adds nothing under skipna (and to a count), not even a row length
    t, d = case
    assert check(*_call(op, t, d, axes, keepdims, skipna)) in ("match", "raises")


@pytest.mark.parametrize("op", ["sum", "count", "max"])
def test_a_missing_row_gives_no_length_to_rows_folded_from_none(op):
    t = "3 * ?var * var * var * float64"
    for d in ([None, [[]], [[]]], [None, [[], [[2.0, 3.0]]], [[]]]):
        assert check(*_call(op, t, d, (0, 2), False, True)) == "match"

"""Folds of data with missing rows (`?var`) the loop nest takes in two steps, against the
reference: several axes at or above a `?var` dim under var dims (the elementwise part,
each missing row as one row of missing values folded in the nest, and which result rows
fold a missing row from the same fold of one flag per row). Values, dtypes, result types
and missing state; empty arrays, empty rows and length-1 rows come from the strategies.
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
from tests.test_ragged_qaxes import _call
from tests.test_ragged_qfull import in_nest
from tests.test_ragged_today import LAZYK_REDUCERS, RA, L

# a `?var` dim under var dims (and fixed ones)
QUNDER = ("N * var * ?var * T", "var * var * ?var * T", "var * 2 * ?var * T",
          "2 * var * var * ?var * T")


def _several(nd):
    return [a for n in range(2, nd) for a in itertools.combinations(range(nd), n)]


@settings(max_examples=20, deadline=None)
@given(S.ragged(layouts=QUNDER, dtypes=("float64", "int32"), nan=True, option_rows=False),
       st.sampled_from(LAZYK_REDUCERS), st.data())
def test_several_axes_at_or_above_missing_rows_under_var_dims(case, op, data):
    t, d = case
    axes = data.draw(st.sampled_from(_several(R.parse_type(t).ndim)))
    keepdims, skipna = data.draw(st.booleans()), data.draw(st.booleans())
    in_nest(*_call(op, t, d, axes, keepdims, skipna))


@settings(max_examples=20, deadline=None)
@given(S.ragged(layouts=("N * var * ?var * T",), dtypes=("float64",), option_rows=False),
       st.booleans())
def test_broadcast_rows_of_missing_rows_under_var_dims(case, skipna):
    """Length-1 rows stretch against the others in the fold (the strategies draw many)."""
    t, d = case
    for axes in ((0, 1), (1, 2), (0, 2)):
        in_nest(*_call("sum", t, d, axes, False, skipna))


def test_several_axes_above_missing_rows_under_var_dims_by_hand():
    t = "2 * var * ?var * float64"
    x = L(t, [[[1.0], None], [[2.0, 3.0]]])
    got = x.sum(axis=(0, 1)).eval()
    assert str(got.type) == "?var * ?float64" and got.to_list() is None
    got = x.sum(axis=(0, 1), skipna=True).eval()
    assert str(got.type) == "var * float64" and got.to_list() == [3.0, 4.0]
    y = L("3 * var * ?var * int32", [[[1], None], [[2, 3]], []])
    got = y.max(axis=(1, 2)).eval()
    assert str(got.type) == "3 * ?int32" and got.to_list() == [None, 3, None]
    # a group with no present row: an empty row under skipna, a missing one without
    z = L("2 * var * ?var * float64", [[None, None], [[1.0], None]])
    got = z.sum(axis=(0, 1), skipna=True).eval()
    assert str(got.type) == "var * float64" and got.to_list() == [1.0]
    w = L("2 * 2 * var * ?var * float64", [[[None], []], [[None], [None, [2.0, 3.0]]]])
    got = w.sum(axis=(0, 2), skipna=True).eval()
    assert str(got.type) == "2 * var * float64" and got.to_list() == [[], [2.0, 3.0]]
    got = w.sum(axis=(0, 2)).eval()
    assert str(got.type) == "2 * ?var * ?float64" and got.to_list() == [None, None]
    for axes, skipna in itertools.product([(0, 2), (1, 2), (0, 1)], [False, True]):
        in_nest(*_call("sum", "2 * 2 * var * ?var * float64", w.to_list(), axes, False,
                       skipna))


@settings(max_examples=20, deadline=None)
@given(S.ragged(layouts=("N * var * ?var * T", "var * var * ?var * T", "var * ?var * T"),
                dtypes=("float64", "int64"), nan=True, option_rows=False),
       st.integers(1, 3), st.sampled_from(LAZYK_REDUCERS), st.data())
def test_missing_rows_against_a_fixed_dim_under_var_dims(case, n, op, data):
    """`?n` rows (a missing row against a NumPy operand's last dim of n) with var dims
    above them, folded over a middle axis, several axes or every axis."""
    t, d = case
    nd = R.parse_type(t).ndim
    a = np.arange(1, n + 1, dtype=np.float64)
    axes = data.draw(st.sampled_from([None] + [a for k in range(1, nd + 1)
                                               for a in itertools.combinations(range(nd), k)]))
    keepdims, skipna = data.draw(st.booleans()), data.draw(st.booleans())
    kw = {} if op == "count" else {"skipna": skipna}
    r = R.array(a.tolist(), f"{n} * float64")

    def ref():
        return R.reduce(op, R.elementwise("add", RA(t, d), r), axes, keepdims=keepdims,
                        skipna=skipna)

    def got():
        return getattr(lazyk, op)(L(t, d) + a, axis=axes, keepdims=keepdims, **kw)
    in_nest(ref, got)


def test_missing_rows_against_a_fixed_dim_under_var_dims_by_hand():
    x = L("2 * var * ?var * float64", [[[1.0, 2.0], None], [[2.0, 3.0]]]) + np.ones(2)
    got = x.sum(axis=1).eval()
    assert str(got.type) == "2 * ?2 * ?float64" and got.to_list() == [None, [3.0, 4.0]]
    got = x.sum(axis=(0, 1), skipna=True).eval()
    assert str(got.type) == "2 * float64" and got.to_list() == [5.0, 7.0]
    assert x.sum().to_list() is None
    got = x.max(axis=2).eval()
    assert str(got.type) == "2 * var * ?float64" and got.to_list() == [[3.0, None], [4.0]]


def test_a_fold_over_several_axes_never_looks_into_rows_stretched_to_nothing():
    """Axis 1 is kept below folded axis 0: its rows (lengths 0, 0, 0, 1) pair to length 0,
    so the length-1 row stretches to nothing and the rows of lengths 2 and 0 it holds
    (which axis 2 would fold together) reach no result; folded in any order, the same."""
    t, d = "4 * var * var * var * float64", [[], [], [], [[[0.0, 0.0], []]]]
    ref = R.reduce("sum", RA(t, d), (0, 2))
    assert str(ref.type) == "var * var * float64" and ref.data == []
    assert in_nest(*_call("sum", t, d, (0, 2), False, False)) == "match"
    got = L(t, d).sum(axis=(0, 2)).eval()
    assert str(got.type) == "var * var * float64" and got.to_list() == []
    # where the row is reached (axis 1 of length 1 everywhere), they must still fold
    d = [[[[1.0]]], [[[0.0, 0.0], []]]]
    with pytest.raises(lazyk.ShapeError):
        R.reduce("sum", RA("2 * var * var * var * float64", d), (0, 2))
    with pytest.raises(lazyk.ShapeError):
        L("2 * var * var * var * float64", d).sum(axis=(0, 2)).eval()


@settings(max_examples=20, deadline=None)
@given(S.ragged(layouts=("N * ?var * ?var * T", "var * ?var * ?var * T", "N * ?var * var * T",
                         "N * ?var * 2 * T", "2 * N * ?var * 2 * T"),
                dtypes=("float64", "int32"), nan=True, option_rows=False),
       st.sampled_from(LAZYK_REDUCERS), st.booleans(), st.booleans())
def test_a_missing_row_folded_along_its_own_axis(case, op, keepdims, skipna):
    """Along the axis of the (first) `?var` dim, with another `?var` dim, a var dim or
    fixed dims (of size 0 too) below or above it: the result row under a missing row is
    missing."""
    t, d = case
    a = t.split(" * ").index("?var")
    in_nest(*_call(op, t, d, (a,), keepdims, skipna))


def test_a_missing_row_folded_along_its_own_axis_under_a_dim_of_0():
    t = "2 * 0 * ?var * 2 * float64"
    for op, skipna in itertools.product(("sum", "max"), (False, True)):
        assert in_nest(*_call(op, t, [[], []], (2,), False, skipna)) == "match"
    got = L(t, [[], []]).sum(axis=2).eval()
    assert str(got.type) == "2 * 0 * ?2 * ?float64" and got.to_list() == [[], []]


# a `?var` dim with var dims below it
QOVER = ("var * ?var * var * T", "N * ?var * var * T", "2 * var * ?var * var * T",
         "N * ?var * var * var * T")


@settings(max_examples=20, deadline=None)
@given(S.ragged(layouts=QOVER, dtypes=("float64", "int32"), nan=True, option_rows=False),
       st.sampled_from(LAZYK_REDUCERS), st.data())
def test_several_axes_at_or_above_missing_rows_over_other_dims(case, op, data):
    """Each missing row becomes one element of missing values (var rows of length 1 below
    it, which stretch), the nest folds that, and the result rows at the first kept dim
    from the `?var` dim on are marked missing (emptied under skipna where it is kept)."""
    t, d = case
    q = t.split(" * ").index("?var")
    nd = R.parse_type(t).ndim
    axes = data.draw(st.sampled_from([a for a in _several(nd) if a[0] <= q] or [(0, 1)]))
    keepdims, skipna = data.draw(st.booleans()), data.draw(st.booleans())
    in_nest(*_call(op, t, d, axes, keepdims, skipna))


@settings(max_examples=10, deadline=None)
@given(S.ragged(layouts=("var * ?var * var * T", "2 * var * ?var * var * T"),
                dtypes=("float64",), option_rows=False), st.booleans())
def test_several_axes_over_missing_rows_and_var_dims_sum(case, skipna):
    t, d = case
    for axes in _several(R.parse_type(t).ndim):
        if axes[0] <= t.split(" * ").index("?var"):
            in_nest(*_call("sum", t, d, axes, False, skipna))


def test_several_axes_over_missing_rows_and_var_dims_by_hand():
    x = L("var * ?var * var * float64", [[[1.0], [2.0, 3.0]], None, [[4.0]]])
    got = x.sum(axis=(0, 1)).eval()
    assert str(got.type) == "?var * ?float64" and got.to_list() is None
    got = x.sum(axis=(0, 1), skipna=True).eval()
    assert str(got.type) == "var * float64" and got.to_list() == [7.0, 8.0]
    y = L("3 * ?var * var * float64", [[[1.0], [2.0, 3.0]], None, [[5.0]]])
    got = y.sum(axis=(1, 2)).eval()  # a missing row at the first folded axis: missing
    assert str(got.type) == "3 * ?float64" and got.to_list() == [6.0, None, 5.0]
    got = y.max(axis=(1, 2), skipna=True).eval()
    assert got.to_list() == [3.0, None, 5.0]
    # under skipna a present row with no rows at the first kept dim adds none: empty
    t, d = "2 * var * ?var * var * float64", [[None], [[]]]
    for axes in ((0, 2), (0, 1, 2), (0, 1)):
        assert in_nest(*_call("sum", t, d, axes, False, True)) == "match"
    assert L(t, d).sum(axis=(0, 2), skipna=True).to_list() == [[]]


def test_keepdims_keep_a_missing_row_at_the_top():
    x = L("?var * var * var * float64", None)
    got = x.sum(axis=(1, 2), keepdims=True).eval()
    assert str(got.type) == "?var * 1 * 1 * ?float64" and got.to_list() is None
    y = L("?var * var * var * float64", [[[1.0]], [[2.0, 3.0], []]])
    for skipna in (False, True):
        assert in_nest(*_call("sum", "?var * var * var * float64", y.to_list(), (1, 2),
                              True, skipna)) == "match"

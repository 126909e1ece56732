"""Missing rows the loop nest takes in the last forms: `?0` rows (a missing-or-empty fixed
row: each row keeps its present byte in one alignment unit of padding), folds along or
over a `?var` dim with fixed and var dims below it, and missing rows folded with present
rows that pair to length 0. Against `tests/ragged_reference.py`: values, dtypes, result
types and missing state; empty arrays, empty rows and length-1 rows come from the
strategies."""
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
from tests.test_ragged_today import LAZYK_REDUCERS, RA, L, check

QZERO = ("N * ?var * 0 * T", "2 * var * ?var * 0 * T", "N * ?var * 0 * 2 * T")


def _axes(nd):
    return [None] + list(range(nd)) + [
        a for n in range(2, nd) for a in itertools.combinations(range(nd), n)]


# ---------------------------------------------------------------- `?0` rows
@pytest.mark.parametrize("t, d", [
    ("2 * ?0 * float64", [None, []]),
    ("3 * 2 * ?0 * int32", [[None, []], [[], []], [None, None]]),
    ("3 * var * ?0 * float64", [[None, []], [], [None]]),
    ("2 * ?0 * 2 * float64", [None, []]),
    ("2 * ?2 * 0 * ?float64", [None, [[], []]]),
    ("0 * ?0 * float64", []),
])
def test_construct_missing_rows_of_size_0(t, d):
    x = L(t, d)
    assert str(x.type) == t and x.to_list() == d
    # each row has an address of its own for its present byte
    assert x.type.elem.itemsize > 0 or not isinstance(x.type.elem, lazyk.types.Option)


def test_missing_rows_of_size_0_made_and_indexed():
    assert lazyk.zeros("2 * ?0 * float64").to_list() == [[], []]
    assert lazyk.empty("2 * ?0 * float64").to_list() == [None, None]
    x = L("2 * ?0 * float64", [None, []])
    assert x[::-1].to_list() == [[], None] and x[1].to_list() == []
    assert L("1 * 2 * ?0 * int8", [[None, []]])[0, 0].to_list() is None
    r = L("{a: 2 * ?0 * int8}", {"a": [None, []]})
    assert r.to_list() == {"a": [None, []]}


@given(S.ragged(layouts=("N * ?var * T", "var * ?var * T", "N * var * ?var * T"),
                dtypes=S.NUMERIC, option_rows=False), st.data())
def test_missing_rows_against_a_dim_of_size_0(case, data):
    """`?var` rows against a fixed 0 give `?0` rows (every present row empty or of length
    1); reduced over any axis."""
    t, d = case
    nd = R.parse_type(t).ndim
    zero = np.ones((1,) * data.draw(st.integers(0, nd - 1)) + (0,))

    def ref():
        return R.elementwise("add", RA(t, d), R.array(zero.tolist(), " * ".join(
            [str(k) for k in zero.shape] + ["float64"])))
    in_nest(ref, lambda: L(t, d) + zero)
    axis, skipna = data.draw(st.sampled_from(_axes(nd))), data.draw(st.booleans())
    in_nest(lambda: R.reduce("sum", ref(), axis, skipna=skipna),
            lambda: lazyk.sum(L(t, d) + zero, axis=axis, skipna=skipna))


@settings(max_examples=20, deadline=None)
@given(S.ragged(layouts=QZERO, dtypes=("float64", "int32"), option_rows=False),
       st.sampled_from(LAZYK_REDUCERS), st.data())
def test_reductions_of_missing_rows_over_size_0(case, op, data):
    t, d = case
    nd = R.parse_type(t).ndim
    axis = data.draw(st.sampled_from(_axes(nd)))
    in_nest(*_call(op, t, d, axis, data.draw(st.booleans()), data.draw(st.booleans())))


def test_missing_rows_of_size_0_by_hand():
    x = L("3 * ?var * 0 * float64", [[[]], None, []])
    got = x.sum(axis=1, skipna=True).eval()
    assert str(got.type) == "3 * ?0 * float64" and got.to_list() == [[], None, []]
    got = x.sum(axis=1, keepdims=True).eval()
    assert str(got.type) == "3 * 1 * ?0 * ?float64"
    assert got.to_list() == [[[]], [None], [[]]]
    y = L("3 * ?var * float64", [[], None, []]) + np.ones(0)
    assert str(y.eval().type) == "3 * ?0 * float64"
    assert lazyk.sum(y).to_list() is None and lazyk.sum(y, skipna=True).to_list() == 0.0
    assert lazyk.sum(y, axis=-1).to_list() == [0.0, None, 0.0]
    assert lazyk.sum(y, axis=0).to_list() is None  # missing, and holds no value
    assert lazyk.sum(y, axis=0, skipna=True).to_list() == []
    # `?n` arrays are operands too: the same answers from the evaluated array
    assert lazyk.sum(y.eval()).to_list() is None
    assert lazyk.sum(y.eval(), axis=0, skipna=True).to_list() == []
    # rows of size 0 folded over two axes: the result's row holds one item of no bytes
    z = L("2 * var * ?var * 0 * float64", [[], [[[]]]])
    assert lazyk.sum(z, axis=(0, 1)).eval().to_list() == [[]]
    assert lazyk.sum(z, axis=(0, 1), keepdims=True).eval().to_list() == [[[[]]]]


# ---------------------------------------------------------------- fixed dims below `?var`
QFIXED = ("N * ?var * 2 * T", "N * ?var * 2 * var * T", "var * ?var * 3 * T",
          "N * var * ?var * 2 * T", "2 * ?var * var * 2 * T", "N * ?var * 2 * 2 * var * T")


@settings(max_examples=25, deadline=None)
@given(S.ragged(layouts=QFIXED, dtypes=("float64", "int32"), nan=True, option_rows=False),
       st.sampled_from(LAZYK_REDUCERS), st.data())
def test_folds_along_or_over_missing_rows_with_fixed_dims_below(case, op, data):
    """Along the `?var` axis or over several axes at or above it, with fixed dims (and var
    dims) below: each missing row becomes one element of missing values (var rows of
    length 1, which stretch), folded in the nest; the result rows at the first kept dim
    from the `?var` dim on are missing where their group folds a missing row (`?n` rows
    over var dims too), or under skipna emptied where it folds only missing rows."""
    t, d = case
    nd = R.parse_type(t).ndim
    axis = data.draw(st.sampled_from(_axes(nd)))
    in_nest(*_call(op, t, d, axis, data.draw(st.booleans()), data.draw(st.booleans())))


def test_folds_with_fixed_and_var_dims_below_missing_rows_by_hand():
    t = "2 * ?var * 2 * var * float64"
    x = L(t, [[[[1.0, 2.0], [3.0]], [[4.0], []]], None])
    got = x.sum(axis=1).eval()
    assert str(got.type) == "2 * ?2 * var * ?float64"
    assert got.to_list() == [[[5.0, 6.0], []], None]  # [3.0] stretches to []
    got = x.sum(axis=(0, 1), skipna=True).eval()
    assert str(got.type) == "2 * var * float64" and got.to_list() == [[5.0, 6.0], []]
    got = x.sum(axis=(0, 1)).eval()
    assert str(got.type) == "?2 * var * ?float64" and got.to_list() is None
    y = L("2 * ?var * 2 * var * float64", [None, None])
    got = y.sum(axis=(0, 1), skipna=True).eval()  # only missing rows: nothing to fold
    assert str(got.type) == "2 * var * float64" and got.to_list() == [[], []]
    for axes, skipna in itertools.product([1, (0, 1), (1, 2), (1, 3), (0, 1, 3)],
                                          [False, True]):
        in_nest(*_call("sum", t, x.to_list(), axes, False, skipna))


# ---------------------------------------------------------------- missing rows, length 0
@pytest.mark.parametrize("perm", list(itertools.permutations(range(4))))
@pytest.mark.parametrize("skipna", [False, True])
def test_missing_row_beside_rows_that_pair_to_length_0(perm, skipna):
    """Rows of length 1 stretch to the length-0 row, so their contents are never paired
    ([0, 0, 0] against []): a missing row among them pairs with any row and the result is
    missing (or, under skipna, the fold of the present rows: []), wherever it sits."""
    rows = [[[0, 0, 0]], [[]], None, []]
    d = [rows[i] for i in perm]
    t = "4 * ?var * var * int64"
    assert check(lambda: R.reduce("sum", RA(t, d), 0, skipna=skipna),
                 lambda: L(t, d).sum(axis=0, skipna=skipna)) == "match"
    got = L(t, d).sum(axis=0, skipna=skipna).eval()
    assert got.to_list() == ([] if skipna else None)
    assert str(got.type) == ("var * var * int64" if skipna else "?var * var * ?int64")


@pytest.mark.parametrize("t, d", [("3 * ?0 * float64", [[], None, []]),
                                  ("2 * var * ?0 * float64", [[[], None], []]),
                                  ("2 * ?0 * var * float64", [None, []])])
def test_missing_rows_of_size_0_to_awkward_and_arrow(t, d):
    ak = pytest.importorskip("awkward")
    x = L(t, d)
    got = lazyk.to_awkward(x)
    assert got.tolist() == d and "option[0 *" in str(got.type)
    assert isinstance(ak.to_layout(got), ak.contents.Content)
    pytest.importorskip("pyarrow")
    try:
        assert lazyk.to_arrow(x).to_pylist() == d
    except lazyk.NotSupportedError as e:  # pyarrow's fixed-size lists need a size > 0
        assert "size 0" in str(e)


@pytest.mark.parametrize("perm", [(0, 1, 2, 3), (3, 2, 1, 0), (2, 0, 1, 3)])
def test_missing_row_beside_rows_that_pair_to_length_0_on_dask(perm):
    """Dask (one row per partition: the partials fold together) agrees."""
    ldask = pytest.importorskip("lazyk.dask")
    rows = [[[0, 0, 0]], [[]], None, []]
    d = [rows[i] for i in perm]
    for skipna in (False, True):
        x = ldask.from_ragged(L("4 * ?var * var * int64", d), 1)
        got = ldask.evaluate(x.sum(axis=0, skipna=skipna)).compute()
        want = R.reduce("sum", RA("4 * ?var * var * int64", d), 0, skipna=skipna)
        assert str(got.type) == str(want.type) and got.to_list() == want.data

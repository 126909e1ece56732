"""Missing rows (`?var`) above, between and under var dims, against the plain-Python reference.

Layouts: `tests/ragged_strategies.py` QNEST_LAYOUTS (`var * ?var * T`, `N * ?var * var * T`,
`N * ?var * 4 * T`, ...) over `T` or `?T`, each operand with missing rows of its own.
Elementwise work and reductions over the last axis must match the reference (type string,
values, missing rows and values) or raise the same error; other reductions match or are
refused by name (NotSupportedError), never a wrong answer.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_ragged_qfull import in_nest
from tests.test_ragged_today import LAZYK_REDUCERS, RA, L, check

Q = S.QNEST_LAYOUTS
BINARY = ("add", "subtract", "multiply", "maximum", "greater")


def matches(ref_fn, lazyk_fn) -> str:
    got = check(ref_fn, lazyk_fn)
    assert got in ("match", "raises"), f"lazyk refused: {got}"
    return got


@given(S.ragged_pair(layouts=Q, own_rows=True), st.sampled_from(BINARY))
def test_binary(pair, op):
    t1, d1, t2, d2 = pair
    matches(lambda: R.elementwise(op, RA(t1, d1), RA(t2, d2)),
            lambda: getattr(lazyk, op)(L(t1, d1), L(t2, d2)))


@given(S.ragged_pair(layouts=Q, own_rows=True, broadcast=True), st.sampled_from(BINARY))
def test_binary_length_1_rows(pair, op):
    t1, d1, t2, d2 = pair
    matches(lambda: R.elementwise(op, RA(t1, d1), RA(t2, d2)),
            lambda: getattr(lazyk, op)(L(t1, d1), L(t2, d2)))


@given(S.ragged(layouts=Q, dtypes=S.NUMERIC, nan=True),
       st.sampled_from(["negative", "sqrt", "absolute"]), st.sampled_from([2, 0.5]))
def test_unary_and_scalars(case, op, k):
    t, d = case
    matches(lambda: R.elementwise("multiply", R.elementwise(op, RA(t, d)), k),
            lambda: getattr(lazyk, op)(L(t, d)) * k)


@given(S.ragged(layouts=Q, nan=True), st.sampled_from(LAZYK_REDUCERS), st.booleans(),
       st.booleans())
def test_last_axis_reductions(case, op, keepdims, skipna):
    t, d = case
    kw = {} if op == "count" else {"skipna": skipna}
    matches(lambda: R.reduce(op, RA(t, d), -1, keepdims=keepdims, skipna=skipna),
            lambda: getattr(lazyk, op)(L(t, d), axis=-1, keepdims=keepdims, **kw))


@given(S.ragged_pair(layouts=Q, dtypes=("float64",), own_rows=True), st.booleans())
def test_fused_sum_of_two(pair, skipna):
    t1, d1, t2, d2 = pair
    matches(lambda: R.reduce("sum", R.elementwise(
                "add", R.elementwise("multiply", RA(t1, d1), 2), RA(t2, d2)), -1,
                skipna=skipna),
            lambda: (L(t1, d1) * 2 + L(t2, d2)).sum(axis=-1, skipna=skipna))


@given(S.ragged(layouts=Q), st.sampled_from(LAZYK_REDUCERS), st.data())
def test_other_reductions_match_or_are_refused(case, op, data):
    t, d = case
    axis = data.draw(st.sampled_from([None, 0, 1]))
    got = check(lambda: R.reduce(op, RA(t, d), axis),
                lambda: getattr(lazyk, op)(L(t, d), axis=axis))
    assert got in ("match", "raises", "refused")


def test_by_hand():
    x = L("2 * var * ?var * float64", [[[1.0, 2.0], None], [None, [3.0], []]])
    r = (x * 2).eval()
    assert str(r.type) == "2 * var * ?var * float64"
    assert r.to_list() == [[[2.0, 4.0], None], [None, [6.0], []]]
    # a missing row lines up with any row and stays missing; present rows still pair
    y = L("2 * var * var * float64", [[[1.0], [5.0, 6.0, 7.0]], [[1.0], [1.0], [1.0]]])
    assert (x + y).to_list() == [[[2.0, 3.0], None], [None, [4.0], []]]
    with pytest.raises(lazyk.ShapeError):
        (x + L("2 * var * var * float64", [[[1.0, 2.0, 3.0], []], [[], [], []]])).eval()
    s = x.sum(axis=-1).eval()
    assert str(s.type) == "2 * var * ?float64"
    assert s.to_list() == [[3.0, None], [None, 3.0, 0.0]]
    assert x.sum(axis=-1, skipna=True).to_list() == [[3.0, None], [None, 3.0, 0.0]]
    # a missing row above the last dim: the rows under it are not there
    z = L("2 * ?var * var * int32", [[[1, 2], [3]], None])
    assert str((z + 1).eval().type) == "2 * ?var * var * int32"
    assert (z + 1).to_list() == [[[2, 3], [4]], None]
    assert z.sum(axis=-1).to_list() == [[3, 3], None]


def test_folded_along_its_own_axis_by_hand():
    x = L("2 * ?var * 2 * float64", [[[1.0, 2.0]], None])
    r = x.sum(axis=1, skipna=True).eval()  # the result has rows `?2`
    assert str(r.type) == "2 * ?2 * float64" and r.to_list() == [[1.0, 2.0], None]


def test_corrupted_row_mask_offset_raises():
    """A `?var` dim's mask_offset pointing outside the index buffer is caught before any
    kernel reads the row mask bytes."""
    x = L("2 * var * ?var * float64", [[[1.0, 2.0], None], [[3.0]]])
    at = 2 + 7  # the fixed dim's 2 words, the var dim's 7: the ?var dim's mask_offset
    meta = list(x.meta)
    assert (x * 2).to_list() == [[[2.0, 4.0], None], [[6.0]]]
    for moff in (1 << 20, -(1 << 20)):
        meta[at] = moff
        bad = lazyk.Array.from_parts(x.type, tuple(meta), x.ptr, x.owner)
        with pytest.raises(ValueError, match="outside|memory|block"):
            (bad * 2).eval()


@settings(max_examples=15, deadline=None)
@given(S.ragged(layouts=("N * ?var * 4 * T", "var * ?var * 2 * T"), dtypes=("float64", "int32"),
                nan=True), st.sampled_from(LAZYK_REDUCERS), st.booleans(), st.booleans())
def test_missing_rows_folded_along_their_own_axis_above_a_fixed_dim(case, op, keepdims,
                                                                   skipna):
    """A missing row reduced along its own axis: the fixed row under it is missing (`?n`),
    skipna too; empty rows fold to the identity (or missing, for min / max / mean)."""
    t, d = case
    kw = {} if op == "count" else {"skipna": skipna}
    in_nest(lambda: R.reduce(op, RA(t, d), 1, keepdims=keepdims, skipna=skipna),
            lambda: getattr(lazyk, op)(L(t, d), axis=1, keepdims=keepdims, **kw))

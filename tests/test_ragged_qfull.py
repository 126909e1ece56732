"""Missing rows (`?var`) in the loop nest, against the plain-Python reference.

The forms here run in the generated loop nest (checked with the kernel recorder), and every
drawn case must match `tests/ragged_reference.py` (type string, values, missing rows and
values) or raise the same error: a last `?var` under fixed dims (`N * ?var * T`,
`3 * N * ?var * ?T`, `?var * T`), empty arrays, empty rows and length-1 rows included.
"""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import lazyk
from lazyk.rowrules import RECORDERS
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_ragged_today import LAZYK_REDUCERS, RA, L, check

QV = S.QVAR_LAYOUTS
BINARY = ("add", "subtract", "multiply", "maximum", "greater")


def in_nest(ref_fn, lazyk_fn) -> str:
    """`check` that lazyk matches the reference (or raises alike), every kernel that ran
    being a loop-nest kernel."""
    rec: list = []
    RECORDERS.append(rec)
    try:
        got = check(ref_fn, lazyk_fn)
    finally:
        RECORDERS.remove(rec)
    assert got in ("match", "raises"), f"lazyk refused: {got}"
    if got == "match":
        assert rec and all(r[0] == "nest" for r in rec), f"not in the loop nest: {rec}"
    return got


# ---------------------------------------------------------------- a last ?var under fixed dims
@given(S.ragged_pair(layouts=QV, own_rows=True), st.sampled_from(BINARY))
def test_last_qvar_binary(pair, op):
    t1, d1, t2, d2 = pair
    in_nest(lambda: R.elementwise(op, RA(t1, d1), RA(t2, d2)),
            lambda: getattr(lazyk, op)(L(t1, d1), L(t2, d2)))


@given(S.ragged_pair(layouts=QV, own_rows=True, broadcast=True), st.sampled_from(BINARY))
def test_last_qvar_length_1_rows(pair, op):
    t1, d1, t2, d2 = pair
    in_nest(lambda: R.elementwise(op, RA(t1, d1), RA(t2, d2)),
            lambda: getattr(lazyk, op)(L(t1, d1), L(t2, d2)))


@given(S.ragged(layouts=QV, nan=True), st.sampled_from(LAZYK_REDUCERS), st.booleans(),
       st.booleans())
def test_last_qvar_last_axis_reductions(case, op, keepdims, skipna):
    t, d = case
    kw = {} if op == "count" else {"skipna": skipna}
    in_nest(lambda: R.reduce(op, RA(t, d), -1, keepdims=keepdims, skipna=skipna),
            lambda: getattr(lazyk, op)(L(t, d), axis=-1, keepdims=keepdims, **kw))


@pytest.mark.parametrize("t, data", [
    ("0 * ?var * float64", []), ("2 * 0 * ?var * ?int32", [[], []]),
    ("3 * ?var * float64", [[], None, [1.5]]), ("2 * ?var * int32", [None, None]),
    ("?var * float64", None), ("?var * float64", []), ("?var * ?float64", [None])])
def test_last_qvar_empty_and_short(t, data):
    in_nest(lambda: R.elementwise("add", RA(t, data), 1), lambda: L(t, data) + 1)
    for op in ("sum", "max", "mean"):
        in_nest(lambda: R.reduce(op, RA(t, data), -1, skipna=True),
                lambda: getattr(lazyk, op)(L(t, data), axis=-1, skipna=True))


def test_last_qvar_corrupted_row_mask_offset_raises():
    x = L("3 * ?var * float64", [[1.0, 2.0], None, [3.0]])
    at = 2  # the fixed dim's 2 words, then the ?var dim's mask_offset
    meta = list(x.meta)
    for moff in (1 << 20, -(1 << 20)):
        meta[at] = moff
        with pytest.raises(ValueError, match="outside|memory|block"):
            (lazyk.Array.from_parts(x.type, tuple(meta), x.ptr, x.owner) * 2).eval()

"""Ragged / missing data as a new user meets it: the type an expression reports before
evaluation, and the fixes found by trying the README's features."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import lazyk
from tests import ragged_strategies as S

ALL = S.LAYOUTS + S.QVAR_LAYOUTS
REDUCERS = ("sum", "prod", "min", "max", "mean", "any", "all", "count")


def same_type(make):
    """`e.type` before evaluation is the evaluated array's type (when lazyk runs it)."""
    try:
        e = make()
        got = e.eval()
    except (lazyk.NotSupportedError, lazyk.ShapeError, ValueError):
        return  # refused forms and empty reductions are covered elsewhere
    assert e.type == got.type, f"{e.type} before evaluation, {got.type} after"


@given(S.ragged_pair(layouts=ALL, own_rows=True), st.sampled_from(["add", "multiply",
                                                                  "greater", "where"]))
def test_elementwise_type_before_evaluation(pair, op):
    t1, d1, t2, d2 = pair
    x, y = lazyk.array(d1, type=t1), lazyk.array(d2, type=t2)
    if op == "where":
        same_type(lambda: lazyk.where(x > 0, x, y))
    else:
        same_type(lambda: getattr(lazyk, op)(x, y))
    same_type(lambda: x * 2 + 1)


@given(S.ragged(layouts=ALL, dtypes=S.NUMERIC), st.sampled_from(REDUCERS), st.data())
def test_reduction_type_before_evaluation(case, op, data):
    t, d = case
    x = lazyk.array(d, type=t)
    axis, keepdims = data.draw(S.reduce_args(x.ndim))
    skipna = data.draw(st.booleans())
    kw = {} if op == "count" else {"skipna": skipna}
    same_type(lambda: getattr(lazyk, op)(x, axis=axis, keepdims=keepdims, **kw))
    same_type(lambda: getattr(lazyk, op)(x * 2, axis=axis, keepdims=keepdims, **kw) + 1)


def test_missing_rows_type_by_hand():
    x = lazyk.array([[1.0, 2.0], None, [3.0]], type="3 * ?var * float64")
    y = lazyk.array([[1.0], [None], [3.0, None]], type="3 * var * ?float64")
    cases = {
        "3 * ?var * float64": x * 2,
        "3 * ?var * ?float64": x + y,
        "3 * ?float64": x.sum(axis=-1, skipna=True),  # a missing row sums to missing
        "?var * ?float64": x.sum(axis=0),
        "3 * ?var * ?float64": x - x.mean(axis=-1, keepdims=True),
        "3 * ?var * bool": x > 1,
    }
    for want, e in cases.items():
        assert str(e.type) == want
        assert e.eval().type == e.type
    with pytest.raises(lazyk.ShapeError):
        (x + lazyk.array([[1.0, 2.0, 3.0], [], []], type="3 * var * float64")).eval()

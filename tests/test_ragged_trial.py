"""Ragged / missing data as a new user meets it: the type an expression reports before
evaluation, and the fixes found by trying the README's features."""
from __future__ import annotations

import numpy as np
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
    cases = [
        ("3 * ?var * float64", x * 2),
        ("3 * ?var * ?float64", x + y),
        ("3 * ?float64", x.sum(axis=-1, skipna=True)),  # a missing row sums to missing
        ("?var * ?float64", x.sum(axis=0)),
        ("3 * ?var * ?float64", x - x.mean(axis=-1, keepdims=True)),
        ("3 * ?var * bool", x > 1),
        ("3 * ?int64", lazyk.count(x, axis=-1)),
    ]
    for want, e in cases:
        assert str(e.type) == want
        assert e.eval().type == e.type
    with pytest.raises(lazyk.ShapeError):
        (x + lazyk.array([[1.0, 2.0, 3.0], [], []], type="3 * var * float64")).eval()


def test_to_arrow_and_to_awkward_take_numpy_arrays_and_expressions():
    pa = pytest.importorskip("pyarrow")
    x = lazyk.from_offsets(np.array([0, 2, 2, 5]), np.arange(5.0))
    assert lazyk.to_arrow(np.zeros(3)).to_pylist() == [0.0, 0.0, 0.0]
    assert lazyk.to_arrow(x * 2).to_pylist() == [[0.0, 2.0], [], [4.0, 6.0, 8.0]]
    assert pa.types.is_large_list(lazyk.to_arrow(x).type)  # int64 offsets
    with pytest.raises(TypeError, match="to_arrow takes a lazyk Array.*not list"):
        lazyk.to_arrow([1.0, 2.0])


def test_to_awkward_takes_numpy_arrays():
    pytest.importorskip("awkward")
    assert lazyk.to_awkward(np.arange(3)).tolist() == [0, 1, 2]
    with pytest.raises(TypeError, match="to_awkward takes a lazyk Array.*not dict"):
        lazyk.to_awkward({})


def test_out_with_missing_rows():
    y = lazyk.array([[1.0, 2.0], None, [3.0]], type="3 * ?var * float64")
    out = lazyk.full("3 * ?var * float64", 0.0, lengths=[2, 0, 1])
    assert (y * 2).eval(out=out) is out and out.to_list() == [[2.0, 4.0], None, [6.0]]
    with pytest.raises(lazyk.ShapeError, match="3 \\* var \\* float64"):
        (y * 2).eval(out=lazyk.full("3 * var * float64", 0.0, lengths=[2, 0, 1]))
    # a fixed result of missing rows goes into a ?T out
    o = lazyk.full("3 * ?float64", 0.0)
    y.sum(axis=-1, out=o)
    assert o.tolist() == [3.0, None, 3.0]
    # count of a missing row is missing (README: the rules)
    assert lazyk.count(y, axis=-1).eval().tolist() == [2, None, 1]


@pytest.mark.parametrize("data", [["ab", "c"], [["ab"], []], ["ab", None], [b"ab", b"c"]])
def test_from_awkward_reads_strings_as_strings_not_their_bytes(data):
    ak = pytest.importorskip("awkward")
    x = lazyk.from_awkward(ak.Array(data))
    assert x.tolist() == data and "int" not in str(x.type)
    assert lazyk.from_awkward(ak.Array([[1, 2], None])).tolist() == [[1, 2], None]


def test_compiled_var_parameter_takes_fixed_rows():
    """A NumPy array or rectangular lists are var rows of one length."""
    k = lazyk.compile((lazyk.placeholder("x", "N * var * float64") * 2).sum(axis=-1))
    a = np.arange(12.0).reshape(3, 4)
    for x in (a, np.asfortranarray(a), a[::2, ::-1], np.arange(6).reshape(2, 3)):
        got = k(x)  # (NumPy in, NumPy out)
        want = (np.asarray(x, np.float64) * 2).sum(axis=-1)
        assert isinstance(got, np.ndarray) and got.dtype == np.float64 and \
            got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got.tolist()), want)
    assert k([[1.0, 2.0], [3.0, 4.0]]).tolist() == [6.0, 14.0]
    assert k(np.ones((2, 0))).tolist() == [0.0, 0.0]
    e = lazyk.compile(lazyk.placeholder("x", "N * var * float64") + 1)
    assert e(a[:, :2]).tolist() == (a[:, :2] + 1).tolist()
    with pytest.raises(lazyk.TypeMatchError, match="1 dimensions, not 2"):
        k(np.ones(3))
    with pytest.raises(lazyk.CastingError, match="complex128 to float64"):
        k(np.ones((2, 2), complex))


def test_repr_shows_missing_rows_and_values():
    q = lazyk.array([[1.0, 2.0], None, [3.0]], type="3 * ?var * float64")
    assert repr(q * 2).startswith("<lazyk.Expr 3 * ?var * float64>")
    m = lazyk.array([[1.0, None], [2.0]])
    assert repr(m.sum(axis=-1)).startswith("<lazyk.Expr 2 * ?float64>")
    assert repr(lazyk.array(np.ones(3)) + 1).startswith("<lazyk.Expr 3 * float64>")


@pytest.mark.parametrize("other", [None, [1.0, 2.0], (1.0,), object()])
def test_equality_with_foreign_objects_is_refused_not_false(other):
    """Python would answer `arr == None` by identity (a silent False): refused by name."""
    for arr in (lazyk.array([1.0, 2.0]), lazyk.array([[1.0, None], [3.0]])):
        for op in (lambda a: a == other, lambda a: a != other, lambda a: other == a):
            with pytest.raises(lazyk.UnsupportedOperandError, match=type(other).__name__):
                op(arr)
        with pytest.raises(lazyk.UnsupportedOperandError, match="NoneType"):
            (arr + 1) == None  # noqa: E711


@pytest.mark.parametrize("foreign", [object(), [[1.0], [2.0]], {"x": 1}, "text"])
def test_from_awkward_refuses_foreign_objects_by_type(foreign):
    pytest.importorskip("awkward")
    with pytest.raises(TypeError, match=f"from_awkward takes an awkward.Array.*not "
                                        f"{type(foreign).__name__}"):
        lazyk.from_awkward(foreign)

"""The plain-Python ragged reference: its rules on hand-written cases, and against Awkward Array.

Where Awkward Array 2.14 and the reference's rules differ, the test asserts the reference's
rule and states the difference (tests named `test_differs_from_awkward_*`):

- var rows of length 1 broadcast here; Awkward raises "cannot broadcast nested list".
- fixed n against var: here every row must have length n or 1 and the result is fixed n;
  Awkward needs length exactly n and gives var.
- operands of fewer dims line up on the right here (NumPy); Awkward lines a lower-rank
  operand up on the left when the other has var dims (`[[1, 2], [3]] + [10, 20]`).
- reductions along an axis above a var dim fold rows by the broadcasting rule here
  (length-1 rows stretch, other mismatches raise ShapeError); Awkward lines rows up on
  the left and folds what is there (`reduce(..., fold="left")` reproduces it).
- Awkward's reducers always skip missing values (our `skipna=True`); its min/max of nothing
  is missing even without options; its mean of nothing is NaN unless `mask_identity=True`;
  its mean of float32 is float64 (NumPy's and ours: float32).
- NaN: np.max/np.min (and the reference) propagate NaN; Awkward's max/min skip a NaN
  unless it comes first.
- Awkward takes one axis per reduction, no tuple of axes.
- `where` with a missing row (`?var`): Awkward gives an empty row, the reference a
  missing row.
- keepdims over a missing row: Awkward gives None, the reference [None] (the kept axis is
  a fixed 1 holding a missing value).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lazyk
from tests import ragged_reference as R
from tests import ragged_strategies as S

try:
    import awkward as ak
except ImportError:  # the Awkward comparisons skip; the reference's own tests still run
    ak = None

needs_ak = pytest.mark.skipif(ak is None, reason="awkward is not installed (pip install "
                                                 "'lazyk[ragged]')")


def same(a, b, rel=1e-6) -> bool:
    """Nested equality: None where None, NaN where NaN, floats to `rel`, bools as bools."""
    if isinstance(a, list) or isinstance(b, list):
        return (isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
                and all(same(x, y, rel) for x, y in zip(a, b)))
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    if isinstance(a, float) or isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or math.isclose(a, b, rel_tol=rel)
    return a == b


# ---------------------------------------------------------------- the reference's own rules
def A(data, t):
    return R.array(data, t)


def test_types_parse_print_and_check_values():
    for s in ("var * var * float64", "N * var * 4 * ?int32", "3 * ?var * ?bool"):
        assert str(R.parse_type(s)) == s
        assert str(lazyk.dshape(s)) == s  # the same language as lazyk's
    a = A([[[1, 2, 3, 4]], [], [[5, 6, 7, None]]], "N * var * 4 * ?int32")
    assert str(a.type) == "3 * var * 4 * ?int32"
    with pytest.raises(ValueError, match=r"row \[0, 0\] has length 3"):
        A([[[1, 2, 3]]], "N * var * 4 * int32")
    with pytest.raises(ValueError, match="missing value"):
        A([[1, None]], "1 * var * int32")
    assert A([[1.5, 2]], "1 * var * float32").data == [[1.5, 2.0]]
    assert A([[300]], "1 * var * int8").data == [[44]]  # NumPy's wrap-around


def test_typeof():
    assert str(R.typeof([[1.0, 2.0], [3.0]])) == "2 * var * float64"
    assert str(R.typeof([[1, None], [2, 3]])) == "2 * 2 * ?int64"
    assert str(R.typeof([[[1], [2, 3]], None])) == "2 * ?var * var * int64"
    assert str(R.typeof([[True], []])) == "2 * var * bool"


@given(S.ragged())
def test_drawn_types_are_lazyk_types(case):
    t, d = case
    assert str(lazyk.dshape(t)) == t == str(R.parse_type(t))
    assert str(R.array(d, t).type) == t


def test_ragged_broadcasting_rules():
    x, y = A([[1, 2], [3]], "2 * var * int64"), A([[4], [5, 6, 7]], "2 * var * int64")
    assert R.elementwise("add", x, y).data == [[5, 6], [8, 9, 10]]
    r = R.elementwise("add", A([[1, 2, 3], [4]], "2 * var * int32"),
                      A([[10, 20, 30], [1, 2, 3]], "2 * 3 * int32"))
    assert str(r.type) == "2 * 3 * int32" and r.data == [[11, 22, 33], [5, 6, 7]]
    r = R.elementwise("add", A([[1, 2, 3], [4]], "2 * var * int64"), A([[1], [2]], "2 * 1 * int64"))
    assert str(r.type) == "2 * var * int64" and r.data == [[2, 3, 4], [6]]  # fixed 1 stretches
    r = R.elementwise("add", A([[1, 2, 3], [4]], "2 * var * int64"), A([10, 20, 30], "3 * int64"))
    assert str(r.type) == "2 * 3 * int64" and r.data == [[11, 22, 33], [14, 24, 34]]
    with pytest.raises(lazyk.ShapeError, match=r"row \[1\]: operand 0 has length 2 and "
                                               r"operand 1 has length 3"):
        R.elementwise("add", A([[1], [2, 3]], "2 * var * int64"),
                      A([[1], [2, 3, 4]], "2 * var * int64"))
    with pytest.raises(lazyk.ShapeError, match=r"row \[0, 1\]: operand 0 has length 0"):
        R.elementwise("add", A([[[1], []]], "1 * var * var * int64"),
                      A([[[1], [2, 3]]], "1 * var * var * int64"))
    with pytest.raises(lazyk.ShapeError, match="outermost dim: operand 0 has length 2"):
        R.elementwise("add", A([[1], [2]], "var * var * int64"), A([[1], [2], [3]],
                                                                   "var * var * int64"))
    with pytest.raises(lazyk.ShapeError, match="fixed sizes"):
        R.elementwise("add", A([[1, 2]], "1 * 2 * int64"), A([[1, 2, 3]], "1 * 3 * int64"))
    # a missing row meets anything and stays missing
    r = R.elementwise("add", A([[1, 2], None], "2 * ?var * int64"),
                      A([[1], [1, 2, 3]], "2 * var * int64"))
    assert str(r.type) == "2 * ?var * int64" and r.data == [[2, 3], None]


def test_elementwise_dtypes_and_missing():
    x = A([[1, None, 3], []], "2 * var * ?int32")
    r = R.elementwise("multiply", x, 2)
    assert str(r.type) == "2 * var * ?int32" and r.data == [[2, None, 6], []]
    assert str(R.elementwise("multiply", x, 2.5).type) == "2 * var * ?float64"
    assert str(R.elementwise("sqrt", x).type) == "2 * var * ?float64"
    f = A([[1.0, 2.0]], "1 * var * float32")
    assert str(R.elementwise("add", f, 1.0).type) == "1 * var * float32"  # weak scalar
    assert R.elementwise("greater", x, 1).data == [[False, None, True], []]
    assert R.elementwise("add", A([[127]], "1 * var * int8"), 1).data == [[-128]]
    r = R.elementwise("isnan", A([[float("nan"), None]], "1 * var * ?float64"))
    assert r.data == [[True, None]]  # NaN is a value, not missing


def test_where_takes_missing_from_condition_and_branch():
    c = A([[True, None, False, False]], "1 * var * ?bool")
    x = A([[1, 2, None, 4]], "1 * var * ?int32")
    y = A([[None, 20, 30, None]], "1 * var * ?int32")
    r = R.where(c, x, y)
    assert str(r.type) == "1 * var * ?int32" and r.data == [[1, None, 30, None]]
    r = R.where(A([[True], [False]], "2 * var * bool"), A([[1, 2], [3]], "2 * var * int64"), 0.5)
    assert str(r.type) == "2 * var * float64" and r.data == [[1.0, 2.0], [0.5]]


def test_reductions_innermost_with_missing_and_empty():
    v = A([[1.0, None, 3.0], [4.0], []], "3 * var * ?float64")
    want = {  # op: (skipna=False, skipna=True)
        "sum": ([None, 4.0, 0.0], [4.0, 4.0, 0.0]), "prod": ([None, 4.0, 1.0], [3.0, 4.0, 1.0]),
        "min": ([None, 4.0, None], [1.0, 4.0, None]), "max": ([None, 4.0, None], [3.0, 4.0, None]),
        "any": ([None, True, False], [True, True, False]),
        "all": ([None, True, True], [True, True, True]),
        "mean": ([None, 4.0, None], [2.0, 4.0, None]), "count": ([2, 1, 0], [2, 1, 0])}
    for op, (plain, skip) in want.items():
        assert R.reduce(op, v, -1).data == plain, op
        assert R.reduce(op, v, -1, skipna=True).data == skip, op
    assert str(R.reduce("sum", v, -1).type) == "3 * ?float64"
    assert str(R.reduce("sum", v, -1, skipna=True).type) == "3 * float64"
    assert str(R.reduce("max", v, -1, skipna=True).type) == "3 * ?float64"
    assert str(R.reduce("count", v, -1).type) == "3 * int64"
    p = A([[1, 2], []], "2 * var * int32")
    assert str(R.reduce("sum", p, 1).type) == "2 * int64"  # NumPy's sum dtype
    assert R.reduce("mean", p, 1).data[1] != R.reduce("mean", p, 1).data[1]  # NaN
    with pytest.raises(ValueError, match="initial"):
        R.reduce("max", p, 1)
    assert R.reduce("max", p, 1, initial=10).data == [10, 10]
    assert R.reduce("min", p, 1, initial=10).data == [1, 10]


def test_reductions_nan_and_keepdims():
    n = float("nan")
    v = A([[1.0, n, 3.0], [n], [2.0]], "3 * var * float64")
    assert same(R.reduce("max", v, -1).data, [n, n, 2.0])
    assert same(R.reduce("sum", v, -1, skipna=True).data, [n, n, 2.0])  # NaN is not skipped
    assert R.reduce("any", A([[0.0, n]], "1 * var * float64"), -1).data == [True]
    r = R.reduce("sum", A([[1, 2], [3]], "2 * var * int64"), -1, keepdims=True)
    assert str(r.type) == "2 * 1 * int64" and r.data == [[3], [3]]


def test_reductions_over_outer_and_middle_axes():
    x = A([[1, 2, 3], [10]], "2 * var * int64")
    assert R.reduce("sum", x, 0).data == [11, 12, 13]  # the length-1 row stretches
    assert R.reduce("sum", x, 0, fold="left").data == [11, 2, 3]  # Awkward's rule
    # a tuple folds the innermost axis first: every element counts once
    assert R.reduce("sum", x, (0, 1)).data == 16 == R.reduce("sum", x).data
    with pytest.raises(lazyk.ShapeError, match=r"row \[2\]: rows of length 3 and 2"):
        R.reduce("sum", A([[1, 2, 3], [1], [1, 2]], "3 * var * int64"), 0)
    r = R.reduce("sum", x, 0, keepdims=True)
    assert str(r.type) == "1 * var * int64" and r.data == [[11, 12, 13]]
    # a middle var axis over a fixed inner dim; an empty row gives the identity
    m = A([[[1, 2, 3, 4], [10, 20, 30, 40]], []], "2 * var * 4 * int32")
    r = R.reduce("sum", m, 1)
    assert str(r.type) == "2 * 4 * int64" and r.data == [[11, 22, 33, 44], [0, 0, 0, 0]]
    r = R.reduce("mean", m, (1, 2))
    assert str(r.type) == "2 * float64" and same(r.data, [13.75, float("nan")])
    # a middle var axis above a var dim: rows fold element by element; empty gives []
    w = A([[[1, 2], [3]], [], [[10]]], "3 * var * var * float64")
    assert R.reduce("sum", w, 1).data == [[4.0, 5.0], [], [10.0]]
    assert R.reduce("max", w, 0, fold="left").data == [[10.0, 2.0], [3.0]]
    with pytest.raises(lazyk.ShapeError, match=r"row \[1\]: rows of length 2 and 0"):
        R.reduce("max", w, 0)  # the empty row does not fold with a row of length 2
    assert R.reduce("max", A([[[1, 2], [3]], [[10]]], "2 * var * var * int64"), 0).data == [
        [10, 10], [10]]  # [[10]] stretches over both rows
    assert R.reduce("sum", w, (0, 1), fold="left").data == [14.0, 2.0]
    assert R.reduce("sum", w).data == 16.0
    r = R.reduce("sum", w, (0, 2), keepdims=True, fold="left")
    assert str(r.type) == "1 * var * 1 * float64" and r.data == [[[13.0], [3.0]]]


def test_reductions_missing_rows():
    x = A([[1, 2], None, [3]], "3 * ?var * int32")
    assert R.reduce("max", x, -1).data == [2, None, 3]  # a missing row: a missing result
    assert R.reduce("sum", x, 0).data is None
    r = R.reduce("sum", x, 0, skipna=True)
    assert str(r.type) == "var * int64" and r.data == [4, 5]
    assert R.reduce("count", x).data == 3
    s = A(None, "?int32")
    assert R.reduce("sum", s).data is None and R.reduce("sum", s, skipna=True).data == 0
    with pytest.raises(np.exceptions.AxisError):
        R.reduce("sum", x, 2)


# ---------------------------------------------------------------- against Awkward Array
def ak_array(t: str, data):
    """An Awkward array of exactly the reference type `t` (fixed dims regular, `?var` rows
    byte-masked), built from its layout (ak.enforce_type drops rows in some cases)."""
    rt = R.parse_type(t)
    C = ak.contents

    def content(dims, items):
        if not dims:
            values = np.array([0 if v is None else v for v in items], dtype=rt.dtype)
            out = C.NumpyArray(values)
            if rt.option:
                mask = np.array([v is not None for v in items], dtype=np.int8)
                out = C.ByteMaskedArray(ak.index.Index8(mask), out, valid_when=True)
            return out
        d, rows = dims[0], [[] if r is None else r for r in items]
        inner = content(dims[1:], [x for r in rows for x in r])
        if d.var:
            offsets = np.cumsum([0] + [len(r) for r in rows], dtype=np.int64)
            out = C.ListOffsetArray(ak.index.Index64(offsets), inner)
        else:
            assert not d.option, "?fixed rows are not drawn"
            out = C.RegularArray(inner, d.size, zeros_length=len(rows))
        if d.option:
            mask = np.array([r is not None for r in items], dtype=np.int8)
            out = C.ByteMaskedArray(ak.index.Index8(mask), out, valid_when=True)
        return out
    return ak.Array(content(rt.dims[1:], data))


def ak_dtype(x):
    return ak.to_numpy(ak.flatten(x, axis=None)).dtype


def test_ak_array_round_trips():
    if ak is None:
        pytest.skip("awkward is not installed")
    a = ak_array("2 * ?var * 4 * ?int32", [[[1, 2, 3, None]], None])
    assert str(a.type) == "2 * option[var * 4 * ?int32]"
    assert a.to_list() == [[[1, 2, 3, None]], None]


BINARY = ("add", "subtract", "multiply", "maximum", "greater", "equal")


@needs_ak
@given(S.ragged_pair(), st.sampled_from(BINARY))
def test_elementwise_matches_awkward(pair, op):
    t1, d1, t2, d2 = pair
    ref = R.elementwise(op, A(d1, t1), A(d2, t2))
    got = getattr(np, op)(ak_array(t1, d1), ak_array(t2, d2))
    assert same(got.to_list(), ref.data), (t1, t2)
    if len(got):
        assert ak_dtype(got) == ref.type.dtype


@needs_ak
@given(S.ragged(dtypes=S.NUMERIC, nan=True), st.sampled_from(["negative", "sqrt", "absolute"]),
       st.sampled_from([None, 2, 0.5]))
def test_unary_and_scalars_match_awkward(case, op, scalar):
    t, d = case
    ref = R.elementwise(op, A(d, t))
    with np.errstate(all="ignore"):
        got = getattr(np, op)(ak_array(t, d))
        if scalar is not None:
            ref = R.elementwise("multiply", ref, scalar)
            got = got * scalar
    assert same(got.to_list(), ref.data), t
    if len(got):
        assert ak_dtype(got) == ref.type.dtype


@needs_ak
@given(S.ragged_pair(option_rows=False))  # Awkward's where turns a missing row into []
def test_where_matches_awkward(pair):
    t1, d1, t2, d2 = pair
    x, y = A(d1, t1), A(d2, t2)
    c = R.elementwise("greater", x, 0)
    ref = R.where(c, x, y)
    got = ak.where(ak_array(t1, d1) > 0, ak_array(t1, d1), ak_array(t2, d2))
    assert same(got.to_list(), ref.data), (t1, t2)


def _as_option(x: R.RArray) -> R.RArray:
    """The same data typed ?T: how Awkward treats min/max (and mean with mask_identity)."""
    return R.RArray(R.RType(x.type.dims, x.type.dtype, True), x.data)


@needs_ak
@given(S.ragged(dtypes=S.DTYPES), st.sampled_from(R.REDUCERS), st.data())
def test_reductions_match_awkward_left_fold_skipping_missing(case, op, data):
    t, d = case
    x = A(d, t)
    axis = data.draw(st.integers(-x.type.ndim, x.type.ndim - 1), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    if keepdims and x.type.dims[axis].option:
        keepdims = False  # Awkward keeps a missing row as None, the reference as [None]
    if op in ("min", "max", "mean"):
        x = _as_option(x)
    try:
        ref = R.reduce(op, x, axis, keepdims=keepdims, skipna=True, fold="left")
    except ValueError:
        return  # only a plain-T min/max of nothing raises: covered by _as_option above
    fn = getattr(ak, op)
    kw = {"mask_identity": True} if op == "mean" else {}
    with np.errstate(all="ignore"):
        got = fn(ak_array(t, d), axis=axis, keepdims=keepdims, **kw)
    got = got.to_list() if isinstance(got, ak.Array) else got
    got = None if got is None else got.item() if hasattr(got, "item") else got
    assert same(got, ref.data, rel=1e-5), (t, op, axis, keepdims)


# ---------------------------------------------------------------- where Awkward differs
@needs_ak
def test_differs_from_awkward_var_length_one_rows_broadcast():
    x, y = [[1, 2], [3]], [[4], [5, 6, 7]]
    t = "2 * var * int64"
    assert R.elementwise("add", A(x, t), A(y, t)).data == [[5, 6], [8, 9, 10]]
    with pytest.raises(ValueError, match="cannot broadcast nested list"):
        ak_array(t, x) + ak_array(t, y)


@needs_ak
def test_differs_from_awkward_fixed_against_var():
    x, f = [[1, 2, 3], [4]], [[10, 20, 30], [1, 2, 3]]
    r = R.elementwise("add", A(x, "2 * var * int64"), A(f, "2 * 3 * int64"))
    assert str(r.type) == "2 * 3 * int64" and r.data == [[11, 22, 33], [5, 6, 7]]
    with pytest.raises(ValueError, match="cannot broadcast"):
        ak_array("2 * var * int64", x) + ak_array("2 * 3 * int64", f)
    same_len = ak_array("2 * var * int64", [[1, 2, 3], [4, 5, 6]]) + ak_array("2 * 3 * int64", f)
    assert str(same_len.type) == "2 * var * int64"  # Awkward: var; here: 2 * 3


@needs_ak
def test_differs_from_awkward_lower_rank_lines_up_on_the_right():
    x = A([[1, 2], [3, 4, 5]], "2 * var * int64")
    v = A([10, 20], "2 * int64")
    with pytest.raises(lazyk.ShapeError, match=r"row \[1\]: operand 0 has length 3"):
        R.elementwise("add", x, v)  # NumPy: the 2 lines up with the var dim
    got = ak_array("2 * var * int64", x.data) + ak_array("2 * int64", v.data)
    assert got.to_list() == [[11, 12], [23, 24, 25]]  # Awkward: with the outer dim


@needs_ak
def test_differs_from_awkward_outer_axis_reduction():
    x = A([[1, 2, 3], [10]], "2 * var * int64")
    assert R.reduce("sum", x, 0).data == [11, 12, 13]
    assert ak.sum(ak_array(str(x.type), x.data), axis=0).to_list() == [11, 2, 3]
    y = A([[1, 2, 3], [10, 20]], "2 * var * int64")
    with pytest.raises(lazyk.ShapeError):
        R.reduce("sum", y, 0)
    assert ak.sum(ak_array(str(y.type), y.data), axis=0).to_list() == [11, 22, 3]


@needs_ak
def test_differs_from_awkward_nan_empty_and_dtypes():
    n = float("nan")
    x = A([[1.0, n, 3.0]], "1 * var * float64")
    assert same(R.reduce("max", x, -1).data, [n])
    assert ak.max(ak_array(str(x.type), x.data), axis=-1).to_list() == [3.0]
    e = A([[1.0], []], "2 * var * float64")
    with pytest.raises(ValueError):
        R.reduce("max", e, -1)
    assert ak.max(ak_array(str(e.type), e.data), axis=-1).to_list() == [1.0, None]
    assert same(R.reduce("mean", e, -1).data, [1.0, n])
    f = A([[1.0, 2.0]], "1 * var * float32")
    assert R.reduce("mean", f, -1).type.dtype == np.float32
    assert ak_dtype(ak.mean(ak_array(str(f.type), f.data), axis=-1)) == np.float64
    o = A([[1.0, None]], "1 * var * ?float64")
    assert R.reduce("sum", o, -1).data == [None]  # missing unless skipna
    assert ak.sum(ak_array(str(o.type), o.data), axis=-1).to_list() == [1.0]
    with pytest.raises(ValueError):
        ak.sum(ak_array(str(x.type), x.data), axis=(0, 1))


# ---------------------------------------------------------------- Awkward's vocabulary: types
def test_vocabulary_result_types_and_values():
    """Result types of the reference's Awkward functions (their values against Awkward:
    tests/test_reference_vs_awkward.py)."""
    x = A([[1, None, 3], [], None], "N * ?var * ?int32")
    f = A([[[1.0, 2.0]], [[3.0]]], "N * var * var * float32")
    want = {
        "num": (R.num(x), "3 * ?int64", [3, 0, None]),
        "flatten": (R.flatten(x), "3 * ?int32", [1, None, 3]),
        "flatten None": (R.flatten(x, None), "2 * int32", [1, 3]),
        "flatten f 2": (R.flatten(f, 2), "2 * var * float32", [[1.0, 2.0], [3.0]]),
        "firsts": (R.firsts(x), "3 * ?int32", [1, None, None]),
        "local_index": (R.local_index(x), "3 * ?var * int64", [[0, 1, 2], [], None]),
        "is_none": (R.is_none(x, 1), "3 * ?var * bool", [[False, True, False], [], None]),
        "fill_none 0": (R.fill_none(x, 0), "3 * ?var * int32", [[1, 0, 3], [], None]),
        "fill_none 1.5": (R.fill_none(x, 1.5), "3 * ?var * float64", [[1.0, 1.5, 3.0], [], None]),
        "pad_none": (R.pad_none(x, 2, clip=True), "3 * ?2 * ?int32",
                     [[1, None], [None, None], None]),
        "argmax": (R.argmax(x, 1), "3 * ?int64", [2, None, None]),
        "argmax keepdims": (R.argmax(x, 1, keepdims=True), "3 * ?1 * ?int64",
                            [[2], [None], None]),
        "std": (R.std(x, 1), "3 * ?float64", [1.0, float("nan"), None]),
        "var f": (R.var(f, 2), "2 * var * float32", [[0.25], [0.0]]),
        "cumsum": (R.cumsum(x), "3 * ?var * ?int64", [[1, None, 4], [], None]),
        "cumprod f": (R.cumprod(f), "2 * var * var * float32", [[[1.0, 2.0]], [[3.0]]]),
        "sort": (R.sort(x, ascending=False), "3 * ?var * ?int32", [[3, 1, None], [], None]),
        "argsort": (R.argsort(x), "3 * ?var * int64", [[0, 2, 1], [], None]),
        "select": (R.select(x, R.elementwise("greater", x, 1)), "3 * ?var * ?int32",
                   [[None, 3], [], None]),
        "gather": (R.gather(x, R.argmax(x, 1, keepdims=True)), "3 * ?1 * ?int32",
                   [[3], [None], None]),
        "concatenate": (R.concatenate([x, A([[1.5], [2.5], [3.5]], "3 * var * float64")]),
                        "3 * var * ?float64", [[1.0, None, 3.0, 1.5], [2.5], [3.5]]),
        "histogram": (R.histogram(x, 3, (0, 3)), "3 * int64", [0, 1, 1]),
        "histogram weights": (R.histogram(x, 3, (0, 3), weights=R.elementwise("multiply", x, 0.5)),
                              "3 * float64", [0.0, 0.5, 1.5]),
    }
    for name, (r, t, data) in want.items():
        assert str(r.type) == t and same(r.data, data), name
    a, b = R.combinations(x, 2)
    assert str(a.type) == str(b.type) == "3 * ?var * ?int32"
    assert R.records((a, b), 2) == [[(1, None), (1, 3), (None, 3)], [], None]
    c = R.argcombinations(f, 2, axis=2, fields=["i", "j"])
    assert str(c["i"].type) == "2 * var * var * int64"
    assert R.records(c, 3) == [[[{"i": 0, "j": 1}]], [[]]]
    c = R.cartesian({"a": x, "b": A([[1.5], [2.5], [3.5]], "3 * var * float64")}, nested=True)
    assert [str(p.type) for p in c.values()] == ["3 * ?var * var * ?int32",
                                                 "3 * ?var * var * float64"]
    assert R.records(c, 3) == [[[{"a": 1, "b": 1.5}], [{"a": None, "b": 1.5}],
                                [{"a": 3, "b": 1.5}]], [], None]
    with pytest.raises(np.exceptions.AxisError):
        R.firsts(x, 0)
    with pytest.raises(np.exceptions.AxisError):
        R.sort(f, axis=1)  # the last axis only


def test_a_value_per_row_against_lists_says_to_add_an_axis():
    pt = lazyk.array([[1.0, 2.0, 3.0], [], [4.0], [5.0]])
    met = lazyk.array([10.0, 20.0, 30.0, 40.0])
    with pytest.raises(lazyk.ShapeError, match=r"row 0: operand 0 has length 3, the fixed "
                       r"dim has length 4 \(operands broadcast from the right.*v\[:, None\]"):
        (pt * met).eval()
    assert (pt * met[:, None]).eval().to_list() == [[10.0, 20.0, 30.0], [], [120.0], [200.0]]

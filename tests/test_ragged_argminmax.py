"""`lazyk.argmax` / `lazyk.argmin` (a reduction kind of the loop nest: the accumulator holds
the best value and its position) against the plain-Python reference
(`tests/ragged_reference.py: argmax / argmin`), Awkward Array and NumPy.

The position within the row along `axis` (the first of equal values), None where a row has
nothing to point at (empty, or only missing values: `?int64`), missing values skipped (their
positions still count), `axis=None` pointing into the flattened values; over fixed dims only
NumPy's results (int64, ValueError for an empty axis). NaN: the first NaN wins, as NumPy's
(Awkward's comparisons let a NaN win only where it comes first: checked against NumPy).
"""
from __future__ import annotations

import awkward as ak
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from lazyk.frontend import ops
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_ragged_select import matches, nests
from tests.test_ragged_today import RA, L

LAYOUTS = S.LAYOUTS + ("N * ?var * T", "var * ?var * T", "N * ?var * var * T")
DTYPES = S.NUMERIC + ("bool",)
OPS = ("argmax", "argmin")


def awkward_arg(op, d, axis, keepdims):
    x = ak.Array(d)
    got = getattr(ak, op)(x, axis=axis, keepdims=keepdims)
    return got.to_list() if isinstance(got, ak.Array) else got


def kept_rows(ref_fn, depth: int):
    """The reference's keepdims result with a missing reduced row as lazyk gives it (as its
    other reductions do): a row of one missing position (`[None]`, type `1 * ?int64`), where
    Awkward's is a missing row (`None`, `?1`)."""
    def ref():
        r = ref_fn()
        dims = list(r.type.dims)
        if len(dims) < depth or not dims[depth - 1].option:
            return r

        def fill(v, k):
            if k == depth - 1:
                return [None] if v is None else v
            return None if v is None else [fill(x, k + 1) for x in v]
        dims[depth - 1] = R.Dim(1)
        return R.RArray(R.RType(tuple(dims), r.type.dtype, True), fill(r.data, 0))
    return ref


@settings(deadline=None)
@given(S.ragged(layouts=LAYOUTS, dtypes=DTYPES), st.sampled_from(OPS), st.booleans())
def test_last_axis_against_the_reference_and_awkward(case, op, keepdims):
    t, d = case
    ref = lambda: getattr(R, op)(RA(t, d), -1, keepdims=keepdims)  # noqa: E731
    got = matches(kept_rows(ref, t.count("*")) if keepdims else ref,
                  lambda: getattr(lazyk, op)(L(t, d), axis=-1, keepdims=keepdims), t, t)
    if got == "match" and d and not str(ak.Array(d).type).endswith("unknown") and \
            "?var" not in t:
        assert getattr(lazyk, op)(L(t, d), axis=-1, keepdims=keepdims).to_list() == \
            awkward_arg(op, d, -1, keepdims)


@settings(deadline=None)
@given(S.ragged(layouts=LAYOUTS, dtypes=DTYPES), st.sampled_from(OPS))
def test_every_axis_points_into_the_flattened_values(case, op):
    t, d = case
    got = getattr(lazyk, op)(L(t, d)).eval()
    assert str(got.type) == "?int64"
    want = getattr(R, op)(RA(t, d), None).data
    assert got.to_list() == want
    if d and not str(ak.Array(d).type).endswith("unknown"):
        assert want == awkward_arg(op, d, None, False)


@settings(deadline=None)
@given(S.ragged(layouts=("N * var * 3 * T", "var * var * 2 * T", "3 * var * 4 * T"),
                dtypes=S.NUMERIC, option_rows=False),
       st.sampled_from(OPS), st.booleans())
def test_a_middle_axis_over_fixed_dims(case, op, keepdims):
    """Over axis 1 every group's rows line up (the fixed dim below), as Awkward lines them
    up on the left. (A missing row there: `test_missing_rows_as_other_reductions`.)"""
    t, d = case
    matches(lambda: getattr(R, op)(RA(t, d), 1, keepdims=keepdims),
            lambda: getattr(lazyk, op)(L(t, d), axis=1, keepdims=keepdims), t, t)


@settings(deadline=None)
@given(S.ragged(layouts=("N * var * T", "var * var * T", "N * var * var * T"),
                dtypes=("float64", "float32"), options=False, nan=True), st.sampled_from(OPS))
def test_nan_wins_as_in_numpy(case, op):
    t, d = case

    def rows(v, depth):
        if depth == 1:
            return None if not v else int(getattr(np, op)(np.array(v, t.split(" * ")[-1])))
        return [rows(r, depth - 1) for r in v]
    got = getattr(lazyk, op)(L(t, d), axis=-1).to_list()
    assert got == rows(d, t.count("*"))


@settings(deadline=None)
@given(S.long_rows(dtypes=S.NUMERIC + ("bool",), nan=True), st.sampled_from(OPS),
       st.integers(0, 30))
def test_long_and_short_rows_side_by_side(case, op, pad):
    """Rows of 0-40 values (ties, NaN, +-inf) after `pad` values of other rows: rows with
    room after them in the content fold their first values with no branch on the row's
    length, the others element by element; both give NumPy's position."""
    t, d = case
    dims = t.split(" * ")
    dtype = np.dtype(dims[-1])
    rows = [r for g in d for r in (g if dims[1] == "var" and len(dims) == 4 else [g])]
    rows = [[0] * pad] + rows + [[0] * 5]
    off = np.cumsum([0] + [len(r) for r in rows])
    x = lazyk.from_offsets(off, np.array([v for r in rows for v in r], dtype))
    want = [None if not r else int(getattr(np, op)(np.array(r, dtype))) for r in rows]
    assert getattr(lazyk, op)(x, axis=1).to_list() == want


@settings(deadline=None)
@given(st.sampled_from(OPS), st.sampled_from(["int8", "uint16", "int64", "float32", "bool"]),
       st.integers(1, 4), st.integers(0, 5), st.booleans())
def test_numpy_data_gives_numpys_answer(op, dtype, n, m, keepdims):
    a = (np.arange(n * m * 3).reshape(n, m, 3) * 7 % 5).astype(dtype)
    for axis in (None, 0, 1, 2, -1):
        if a.shape[axis] == 0 if axis is not None else a.size == 0:  # nothing to point at
            with pytest.raises(ValueError, match=f"attempt to get {op} of an empty sequence"):
                getattr(lazyk, op)(a, axis=axis, keepdims=keepdims).eval()
            continue
        got = getattr(lazyk, op)(a, axis=axis, keepdims=keepdims).to_numpy()
        want = getattr(np, op)(a, axis=axis, keepdims=keepdims)
        assert got.dtype == np.int64 and np.array_equal(got, want)


# ---------------------------------------------------------------- examples
def test_examples_types_methods_and_numpy_functions():
    x = lazyk.array([[1.0, 5.0, 5.0], [], [2.0], [None, 3.0, None]])
    e = lazyk.argmax(x, axis=1)
    assert isinstance(e, lazyk.Expr) and str(e.type) == "4 * ?int64"
    assert e.to_list() == [1, None, 0, 1]
    assert lazyk.argmin(x, axis=-1).to_list() == [0, None, 0, 1]
    keep = lazyk.argmax(x, axis=1, keepdims=True).eval()
    assert str(keep.type) == "4 * 1 * ?int64" and keep.to_list() == [[1], [None], [0], [1]]
    assert lazyk.argmax(x).to_list() == 1 and lazyk.argmin(x).to_list() == 0
    lazy = np.argmax(x, axis=1)  # NumPy calls the method: still lazy
    assert isinstance(lazy, lazyk.Expr) and lazy.to_list() == [1, None, 0, 1]
    assert (x * 2).argmin(axis=1).to_list() == [0, None, 0, 1]
    assert isinstance(np.argmin(x * -1, axis=1), lazyk.Expr)
    ints = lazyk.array([[3, 9, 9], [7]], "2 * var * int32")
    got = lazyk.argmax(ints - 1, axis=1).eval()
    assert str(got.type) == "2 * ?int64" and got.type.dtype == lazyk.dshape("?int64")
    assert got.to_list() == [1, 0]


def test_missing_rows_as_other_reductions():
    """A missing row folded along its own axis gives a missing result, with keepdims a row
    of one missing position (Awkward: a missing row), as lazyk's max gives; along a middle
    axis it makes the result row below it missing."""
    x = lazyk.array([[4.0, 9.0], None, []], "3 * ?var * float64")
    got = lazyk.argmax(x, axis=1, keepdims=True).eval()
    assert str(got.type) == "3 * 1 * ?int64" and got.to_list() == [[1], [None], [None]]
    assert lazyk.max(x, axis=1, keepdims=True).to_list() == [[9.0], [None], [None]]
    y = lazyk.array([[[1.0, 2.0, 3.0], [4.0, 0.0, 9.0]], None, []], "3 * ?var * 3 * float64")
    got = lazyk.argmax(y, axis=1).eval()
    assert str(got.type) == "3 * ?3 * ?int64"
    assert got.to_list() == [[1, 0, 1], None, [None, None, None]]


def test_fused_work_and_a_position_used_again():
    x = lazyk.array([[1.0, -5.0, 2.0], [], [4.0, 3.0]])
    assert nests(lazyk.argmin(x * x - 4, axis=-1)) == [("reduce", "fill")]
    assert lazyk.argmin(x * x - 4, axis=-1).to_list() == [0, None, 1]
    # a position feeding more work: the arg-reduction first, then the rest
    assert (lazyk.argmax(x, axis=-1) + 10).to_list() == [12, None, 10]
    assert lazyk.argmax(x[x < 3], axis=-1).to_list() == [2, None, None]


def test_through_compile_placeholders():
    p = lazyk.placeholder("x", "N * var * float64")
    k = lazyk.compile(lazyk.argmin(p, axis=1))
    assert k.signature == "(x: N * var * float64) -> N * ?int64"
    assert k(lazyk.array([[3.0, 1.0], [], [2.0]])).to_list() == [1, None, 0]
    d = lazyk.placeholder("d", "N * 3 * float32")
    k = lazyk.compile(lazyk.argmax(d, axis=1))
    assert k.signature == "(d: N * 3 * float32) -> N * int64"
    a = np.array([[1, 5, 2], [7, 0, 7]], np.float32)
    assert np.array_equal(np.asarray(k(a)), np.argmax(a, axis=1))


def test_the_op_table_row():
    row = ops.get("argmax")
    assert row.kind == "reduction" and row.combine == "greater" and row.finish is not None
    assert ops.get("argmin").combine == "less"
    assert row.infer(np.dtype("float32")) == np.int64
    assert row.identity(np.dtype("int8")) == -128


def test_errors_name_the_operands():
    x = lazyk.array([[1.0, 5.0], [2.0]])
    with pytest.raises(TypeError, match=r"argmax: axis must be an int or None .* not \(0, 1\)"):
        lazyk.argmax(x, axis=(0, 1))
    with pytest.raises(TypeError, match="argmin: keepdims must be True or False"):
        lazyk.argmin(x, axis=1, keepdims="yes")
    with pytest.raises(lazyk.NotSupportedError, match="argmax: positions of complex values "
                                                      r"\(complex128\) are not supported yet"):
        lazyk.argmax(np.ones(3, complex))
    with pytest.raises(lazyk.UnsupportedOperandError, match="argmin is not supported on "
                       "strings"):
        lazyk.argmin(lazyk.array(["a", "b"]))
    with pytest.raises(np.exceptions.AxisError):
        lazyk.argmax(x, axis=2)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "uint8"])
def test_short_rows_pick_the_first_best_position_as_awkward(dtype):
    """Short rows (a row's first values fold without a branch on its length): ties give the
    first position, NaN wins (the first one), -0.0 equals 0.0, rows longer than the
    peeled values go on element by element; as Awkward."""
    ak = pytest.importorskip("awkward")
    kind = np.dtype(dtype).kind
    rows = [[1, 5, 5, 2], [], [3], [7, 7], list(range(12)), [2, 9, 1, 9, 0, 3, 4, 9, 9, 1],
            [0, 0, 0, 0, 0, 0, 0, 0, 0, 4], [6, 2, 6]]
    if kind == "f":
        rows += [[np.nan, 1.0, np.nan], [-0.0, 0.0], [-np.inf, -np.inf], [np.inf, 1.0]]
    x = lazyk.array(rows, type=f"{len(rows)} * var * {dtype}")
    a = ak.values_astype(ak.Array(rows), dtype)
    for fn, ref in ((lazyk.argmax, ak.argmax), (lazyk.argmin, ak.argmin)):
        e = fn(x, axis=1)
        assert e.eval().to_list() == ak.to_list(ref(a, axis=1)), fn.__name__


def test_an_axis_of_length_0_is_numpys_error_whatever_the_other_dims_hold():
    for shape, axis in [((0, 0), 1), ((0, 0), 0), ((3, 0), 1), ((0, 3), None)]:
        with pytest.raises(ValueError, match="argmax of an empty sequence"):
            np.argmax(np.zeros(shape), axis=axis)
        with pytest.raises(ValueError, match="argmax of an empty sequence"):
            lazyk.argmax(lazyk.array(np.zeros(shape)), axis=axis).eval()
    assert lazyk.argmin(lazyk.array(np.zeros((0, 3))), axis=1).eval().to_numpy().shape == (0,)
    empty = lazyk.array([], type="0 * var * int64")  # (Awkward's: an empty result)
    assert lazyk.argmax(empty, axis=1).eval().to_list() == []


EMPTY_AXES = [(shape, axis) for shape in [(0, 0), (3, 0), (0, 3), (2, 0, 3), (0, 2, 0),
                                          (2, 3, 0)]
              for axis in (None, 0, 1, -1) if axis is None or axis < len(shape)]


def _numpys(fn, a, axis):
    try:
        return fn(a, axis=axis)
    except ValueError as e:
        return e


@pytest.mark.parametrize("op", OPS)
def test_an_empty_axis_through_compile_bind_and_a_selection_is_numpys_error(op):
    """An empty fixed axis whose result is empty too (no row to name): a compiled call over
    `N * ...` (N = 0, or the axis a symbol M = 0), a bound call and a selection that empties
    the rows raise NumPy's ValueError as `.eval()` does; they returned an empty array."""
    for shape, axis in EMPTY_AXES:
        a = np.zeros(shape)
        want = _numpys(getattr(np, op), a, axis)
        inner = " * ".join(["N", "M", "K"][:len(shape)])
        for t in (" * ".join(["N"] + [str(n) for n in shape[1:]]), inner):
            k = lazyk.compile(getattr(lazyk, op)(lazyk.placeholder("x", t + " * float64"),
                                                 axis=axis))
            for call in (lambda: k(a), lambda: k(lazyk.array(a))):
                if isinstance(want, ValueError):
                    with pytest.raises(ValueError, match=f"attempt to get {op} of an empty "
                                                         "sequence"):
                        call()
                else:
                    got = np.asarray(call())
                    assert got.dtype == np.int64 and got.shape == want.shape, (shape, axis)
                    np.testing.assert_array_equal(got, want)
    k = lazyk.compile(getattr(lazyk, op)(lazyk.placeholder("x", "N * 0 * float64"), axis=1))
    with pytest.raises(ValueError, match=rf"{op} of an empty sequence \(axis 1 has length 0\)"):
        k.bind(np.zeros(0, np.int64), np.zeros((0, 0)))()
    with pytest.raises(ValueError, match=f"{op} of an empty sequence"):  # a[m] is 0 * 0
        getattr(np, op)(np.zeros((3, 0))[np.zeros(3, bool)], axis=1)
    for m in (np.zeros(3, bool), lazyk.array(np.zeros(3, bool))):
        for keep in (False, True):
            with pytest.raises(ValueError, match=f"{op} of an empty sequence"):
                getattr(lazyk, op)(lazyk.array(np.zeros((3, 0)))[m], axis=1,
                                   keepdims=keep).eval()


@pytest.mark.parametrize("op", OPS)
def test_nanarg_over_an_empty_axis_is_awkwards_the_same_through_every_path(op):
    """`nanargmax` / `nanargmin` (Awkward's: None where nothing is left) of an empty axis: an
    empty result is empty (`0 * 0` along axis 0 raised NumPy's error in `.eval()`), the
    same compiled and evaluated."""
    for shape, axis in EMPTY_AXES:
        a = np.zeros(shape)
        want = ak.to_list(getattr(ak, f"nan{op}")(ak.Array(a), axis=axis))
        fn = getattr(lazyk, f"nan{op}")
        t = " * ".join(["N"] + [str(n) for n in shape[1:]]) + " * float64"
        k = lazyk.compile(fn(lazyk.placeholder("x", t), axis=axis))
        for got in (fn(lazyk.array(a), axis=axis).eval(), lazyk.evaluate(fn(a, axis=axis)),
                    k(a)):
            assert got.to_list() == want, (shape, axis)
            assert got.type.dtype == lazyk.dshape("?int64").dtype


def test_a_compiled_arg_reduction_of_numpy_data_is_numpys_scan():
    """`lazyk.compile(lazyk.argmax(p))` called with NumPy arrays scans the values with
    NumPy's argmax, as `evaluate` does (the loop nest ran it on one thread): no kernel for an
    input itself, NumPy's positions (the first NaN, ties) for every axis and keepdims."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((40, 30))
    x[3, 4] = x[9, 2] = np.nan
    x[5] = 1.0
    for op in ("argmax", "argmin"):
        for axis in (None, 0, 1, -1):
            for keepdims in (False, True):
                f = lazyk.compile(getattr(lazyk, op)(lazyk.placeholder("p", "N * M * float64"),
                                                     axis=axis, keepdims=keepdims))
                before = lazyk.stats()
                got = f(x)
                assert lazyk.stats()["compiles"] == before["compiles"]  # (NumPy's scan)
                want = getattr(np, op)(x, axis=axis, keepdims=keepdims)
                assert isinstance(got, np.ndarray) and got.dtype == np.int64
                np.testing.assert_array_equal(got, want)
    g = lazyk.compile(lazyk.argmax(lazyk.placeholder("p", "N * float32") * 2))
    y = rng.standard_normal(1000).astype(np.float32)
    assert g(y) == np.argmax(y * 2)
    with pytest.raises(ValueError):
        g(np.zeros(0, np.float32))


def test_arg_reductions_along_the_first_axis_of_numpy_data_fold_by_columns():
    """Along the first axis of enough rows read along, the loop nest folds blocks of
    columns on every thread (NumPy walks each column: one value per row); NumPy's positions
    (the first NaN, ties), every form of call. A column-major array stays NumPy's."""
    rng = np.random.default_rng(8)
    x = rng.integers(-5, 5, (600, 300)).astype(np.float32)
    x[rng.random(x.shape) < 0.001] = np.nan
    for op in ("argmax", "argmin"):
        for keepdims in (False, True):
            want = getattr(np, op)(x * 2, axis=0, keepdims=keepdims)
            e = getattr(lazyk, op)(lazyk.array(x) * 2, axis=0, keepdims=keepdims)
            assert "fold0" in lazyk.explain(e)
            f = lazyk.compile(getattr(lazyk, op)(lazyk.placeholder("p", "N * M * float32") * 2,
                                                 axis=0, keepdims=keepdims))
            for got in (e.eval(), lazyk.evaluate(e), f(x)):
                got = np.asarray(got)
                assert got.dtype == np.int64
                np.testing.assert_array_equal(got, want)
        e = getattr(lazyk, op)(lazyk.array(np.asfortranarray(x)), axis=0)
        assert f"NumPy's {op}" in lazyk.explain(e)
        np.testing.assert_array_equal(np.asarray(e.eval()), getattr(np, op)(x, axis=0))


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_a_bound_arg_reduction_over_an_empty_axis_raises_as_the_call(op):
    """`bind()` of a compiled argmax over an empty fixed axis whose result is not empty
    raises NumPy's ValueError, as the call does (its values were -1)."""
    p = lazyk.placeholder("p", "N * M * float64")
    for axis, keepdims, shape, out in ((1, False, (2, 0), np.zeros(2, np.int64)),
                                       (0, True, (0, 3), np.zeros((1, 3), np.int64))):
        f = lazyk.compile(getattr(lazyk, op)(p, axis=axis, keepdims=keepdims))
        with pytest.raises(ValueError, match="empty sequence"):
            f(np.zeros(shape))
        with pytest.raises(ValueError, match="empty sequence"):
            f.bind(out, np.zeros(shape))()
    x = np.random.default_rng(8).standard_normal((3, 4))
    f = lazyk.compile(getattr(lazyk, op)(p, axis=1))
    np.testing.assert_array_equal(f.bind(np.zeros(3, np.int64), x)(), getattr(np, op)(x, axis=1))


def test_arg_reductions_over_every_axis_skip_missing_rows_of_a_fixed_size():
    """A missing `?n` row holds no value of the flattened array (as a `?var` one): its n
    slots are not positions; a missing value's slot still is."""
    for t in ("2 * ?2 * uint16", "2 * ?var * uint16"):
        x = L(t, [None, [6, 7]])
        got = (lazyk.argmax(x, axis=None).eval(), lazyk.argmin(x, axis=None).eval())
        assert [g.to_list() for g in got] == [1, 0] == [
            ak.argmax(ak.Array([None, [6, 7]]), axis=None), ak.argmin(ak.Array([None, [6, 7]]),
                                                                        axis=None)]
    x = L("3 * var * ?2 * float64", [[None, [-0.5, 1.5]], [None, [1.5, -2.5]], []])
    assert lazyk.argmax(x, axis=None).eval().to_list() == 1
    got = lazyk.argmin(x, axis=None, keepdims=True).eval()
    assert str(got.type) == "1 * 1 * 1 * ?int64" and got.to_list() == [[[3]]]
    for t, d in (("2 * ?2 * ?int32", [None, [None, 3]]), ("2 * var * ?2 * int32",
                 [[None, [1, 5]], [[7, 2], None]]), ("2 * ?2 * var * float64",
                 [None, [[1.0], [3.0, -1.0]]]), ("3 * ?0 * int32", [None, [], None])):
        x = L(t, d)
        for op in OPS:
            want = getattr(ak, op)(ak.Array(d), axis=None)
            assert getattr(lazyk, op)(x, axis=None).eval().to_list() == want, (t, op)
            assert getattr(lazyk, op)(x * 2 - 1, axis=None).eval().to_list() == want, (t, op)

"""Edge cases where lazyk must give NumPy's (or numexpr's) values and dtypes: literals,
complex numbers, signed zeros, integer bounds, empty folds and the errors of bad dtypes."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import lazyk
from lazyk.errors import UnsupportedOperandError


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    for part in ((lambda v: v.real), (lambda v: v.imag)) if want.dtype.kind == "c" else \
            ((lambda v: v),):
        g, w = part(got), part(want)
        if w.dtype.kind in "fc":  # (NaN in each part: assert_array_equal reads a complex's
            assert np.isnan(g).tolist() == np.isnan(w).tolist()  # NaN whatever part holds it)
        signed = ~np.isnan(w) if w.dtype.kind in "fc" else np.ones(w.shape, bool)
        assert np.signbit(g[signed]).tolist() == np.signbit(w[signed]).tolist()  # (not NaN's)


def test_complex_of_parts_keeps_infinite_and_nan_imaginary_parts():
    re = np.array([1.0, 2.0, 3.0])
    im = np.array([np.inf, np.nan, -np.inf])
    got = lazyk.evaluate("complex(re, im)")
    want = np.empty(3, complex)
    want.real, want.imag = re, im
    np.testing.assert_array_equal(got, want)  # (re + im*1j would make the real parts NaN)
    f32 = lazyk.evaluate("complex(a, b)", local_dict={"a": re.astype(np.float32), "b": 1})
    assert f32.dtype == np.complex64 and f32.tolist() == [1 + 1j, 2 + 1j, 3 + 1j]
    with pytest.raises(lazyk.DTypeError):
        lazyk.evaluate("complex(re, 1j)")


def test_integer_literals_in_strings_are_exact_python_ints():
    d = np.array([-5, 0, 7])
    np.testing.assert_array_equal(lazyk.evaluate("d > 2**63"), d > 2**63)
    np.testing.assert_array_equal(lazyk.evaluate("d + 2**62"), d + 2**62)
    np.testing.assert_array_equal(lazyk.evaluate("d < -2**63 + 1"), d < -2**63 + 1)
    with pytest.raises(OverflowError, match="out of bounds for int64"):
        lazyk.evaluate("2**63")
    with pytest.raises(OverflowError, match="out of bounds for int64"):
        lazyk.evaluate("d * 2**63")
    with pytest.raises(OverflowError, match="4096 bits"):
        lazyk.evaluate("10**10000 > d")
    np.testing.assert_array_equal(lazyk.evaluate("d > abs(-2**63)"), d > abs(-2**63))
    np.testing.assert_array_equal(lazyk.evaluate("d + abs(-2.5)"), d + abs(-2.5))
    with pytest.raises(OverflowError, match="out of bounds for int64"):
        lazyk.evaluate("abs(-2**63) + 0 * d")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(lazyk.evaluate("7 // 0 + d"), np.int64(7) // 0 + d)
    # a negative power of integer literals is Python's float, as numexpr gives it
    got = lazyk.evaluate("2**-2 + d")
    np.testing.assert_array_equal(got, 2**-2 + d)
    assert got.dtype == np.float64 and lazyk.evaluate("(-2)**-1") == -0.5
    with pytest.raises(ZeroDivisionError):
        lazyk.evaluate("0**-1 + d")
    with pytest.raises(ValueError, match="negative integer powers"):
        lazyk.evaluate("d**-2")


def test_powers_two_and_minus_one_are_numpys_square_and_reciprocal():
    b = np.array([True, False])
    for got in ((lazyk.array(b) ** 2).eval(), lazyk.evaluate("b**2")):
        _same_bits(got, b ** 2)  # int8 (np.power: int64)
    vals = [np.inf, -np.inf, np.nan, 0.0, -0.0, 2.0, -2.5, 1e-308]
    z = np.array([complex(a, c) for a in vals for c in vals])
    with np.errstate(all="ignore"):
        want = z ** -1
        for got in ((lazyk.array(z) ** -1).eval(), lazyk.evaluate("z**-1"),
                    np.reciprocal(lazyk.array(z)).eval()):
            _same_bits(got, want)
        z64 = z.astype(np.complex64)
        _same_bits(np.reciprocal(lazyk.array(z64)).eval(), np.reciprocal(z64))
        _same_bits(np.power(lazyk.array(z[:3]), -1).eval(), np.power(z[:3], -1))
    with np.errstate(all="ignore"):
        for dt in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64, bool):
            a = np.array([0, 1, 2, 3, 127] if dt is not bool else [0, 1], dt)
            if np.dtype(dt).kind == "i":
                a = np.concatenate([a, np.array([-1, -2, np.iinfo(dt).min], dt)])
            _same_bits(np.reciprocal(lazyk.array(a)).eval(), np.reciprocal(a))


def test_cumsum_keeps_a_leading_negative_zero():
    for dt in (np.float64, np.float32, np.float16):
        a = np.array([-0.0, 0.0, 1.0, -0.0], dt)
        _same_bits(lazyk.cumsum(lazyk.array(a)).eval(), np.cumsum(a))
    z = np.array([complex(-0.0, -0.0), 0j, complex(-0.0, 0.0)])
    _same_bits(lazyk.cumsum(lazyk.array(z)).eval(), np.cumsum(z))
    rows = lazyk.cumsum(lazyk.array([[-0.0, 1.0], [], [-0.0]]), axis=1).eval().to_list()
    assert rows == [[0.0, 1.0], [], [0.0]] and np.signbit(rows[0][0]) and np.signbit(rows[2][0])


def test_complex_cumprod_starts_from_the_first_value():
    """A row's first running product is its first value itself: (1+0j) * (inf+0j) would
    be inf+nanj."""
    c = np.array([[complex(np.inf, 0), 2 + 0j, 3], [1j, complex(0, np.inf), 2]])
    with np.errstate(invalid="ignore"):
        for axis in (0, 1):
            _same_bits(lazyk.cumprod(lazyk.array(c), axis=axis).eval(), np.cumprod(c, axis))
        f = np.array([np.inf, 2.0])
        _same_bits(lazyk.cumprod(lazyk.array(f), dtype=np.complex128).eval(),
                   np.cumprod(f, dtype=np.complex128))
    rows = lazyk.array([[complex(np.inf, 0), 2], [], [None, complex(np.inf, 0), 2]],
                       type="3 * var * ?complex128")
    got = lazyk.cumprod(rows, axis=1).eval().to_list()
    assert str(got) == "[[(inf+0j), (inf+nanj)], [], [None, (inf+0j), (inf+nanj)]]"


@pytest.mark.parametrize("lo, hi", [(-129, None), (None, 300), (-200, 100), (0, 1000),
                                    (np.int16(200), 300), (np.int16(-300), 1000),
                                    (200, None), (None, -200)])
def test_clip_python_int_bounds_beyond_the_dtype(lo, hi):
    a = np.array([0, 1, -1, 100, -128, 127], np.int8)
    try:
        want = np.clip(a, lo, hi)
    except OverflowError:
        with pytest.raises(OverflowError):
            lazyk.clip(lazyk.array(a), lo, hi).eval()
        return
    _same_bits(lazyk.clip(lazyk.array(a), lo, hi).eval(), want)


def test_mean_of_an_empty_axis_in_an_integer_dtype():
    a = np.zeros((0, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for dt in ("int64", "int16", "float32"):
            _same_bits(lazyk.array(a).mean(axis=0, dtype=dt).eval(),
                       np.mean(a, axis=0, dtype=dt))
        for dt in ("complex128", "complex64"):  # (0 / 0 of complex numbers: nan+nanj)
            z = a.astype(dt)
            _same_bits(lazyk.evaluate("mean(z, axis=0)"), np.mean(z, axis=0))
            _same_bits(lazyk.mean(lazyk.array(z)).eval(), np.mean(z))


def test_compiled_scalars_take_python_ints_past_int64():
    x = lazyk.placeholder("x", "N * float64")
    f = lazyk.compile(x * lazyk.placeholder("s", "float64"))
    np.testing.assert_array_equal(f(np.arange(3.0), 2**70), np.arange(3.0) * 2**70)
    g = lazyk.compile(lazyk.placeholder("y", "N * int64") * lazyk.placeholder("s", "int64"))
    with pytest.raises(OverflowError, match="'s': Python integer .* out of bounds for int64"):
        g(np.arange(3), 2**70)


def test_reduction_dtypes_lazyk_does_not_compute_are_refused_by_name():
    a = lazyk.array(np.arange(4.0))
    for dt in (object, "U3"):
        with pytest.raises(UnsupportedOperandError, match=r"sum\(dtype=...\)"):
            a.sum(dtype=dt)


def test_where_and_fill_none_take_python_ints_that_only_uint64_holds():
    c, x = np.array([True, False]), np.array([1, 2], np.uint64)
    _same_bits(lazyk.where(lazyk.array(c), lazyk.array(x), 2**63).eval(),
               np.where(c, x, 2**63))
    got = lazyk.fill_none(lazyk.array([1, None], type="2 * ?uint64"), 2**63).eval()
    assert got.to_list() == [1, 2**63] and str(got.type) == "2 * uint64"
    with pytest.raises(OverflowError):
        lazyk.where(lazyk.array(c), lazyk.array(x), 2**64).eval()


def test_astype_takes_option_type_strings_and_refuses_other_types_by_name():
    x = lazyk.array([1, None])
    assert lazyk.astype(x, "?float32").eval().to_list() == [1.0, None]
    assert str(lazyk.astype(x, "?float32").type) == "2 * ?float32"
    for bad in ("string", "3 * float32", "var * int8", "{a: int8}"):
        with pytest.raises(lazyk.NotSupportedError, match="converts numbers to another number"):
            lazyk.astype(x, bad)


def test_numpy_string_dtype_is_refused_by_name_at_every_entry():
    a = np.array(["kiwi", "x"], dtype=np.dtypes.StringDType())
    s = lazyk.compile(lazyk.placeholder("s", "N * string") == "kiwi")
    f = lazyk.compile(lazyk.placeholder("x", "N * float64") * 2)
    for call in (lambda: lazyk.evaluate("a == 'kiwi'", {"a": a}),
                 lambda: lazyk.array(["kiwi", "x"]) == a, lambda: s(a), lambda: f(a)):
        with pytest.raises(UnsupportedOperandError, match=r"StringDType\): convert with .astype\('U<n>'\)"):
            call()
    np.testing.assert_array_equal(s(a.astype("U4")), [True, False])


def test_results_over_numpy_data_are_numpy_arrays_for_every_operation():
    """`lazyk.evaluate` and a compiled expression over NumPy data give NumPy arrays for
    fixed results (scans and arg-reductions too, as sums do); `.eval()` gives lazyk arrays;
    over lazyk arrays with var rows the result stays a lazyk array."""
    a = np.array([3.0, 1.0, 2.0])
    x = lazyk.placeholder("x", "N * float64")
    cases = {"sum": (lazyk.sum, np.sum(a)), "cumsum": (lazyk.cumsum, np.cumsum(a)),
             "cumprod": (lazyk.cumprod, np.cumprod(a)), "argmax": (lazyk.argmax, 0),
             "argmin": (lazyk.argmin, 1), "sort": (lazyk.sort, np.sort(a))}
    for name, (fn, want) in cases.items():
        for got in (lazyk.compile(fn(x))(a), lazyk.compile(fn(x))(x=a), lazyk.evaluate(fn(a)),
                    lazyk.evaluate(fn(lazyk.array(a)))):
            assert isinstance(got, np.ndarray), name
            np.testing.assert_array_equal(got, want)
        assert isinstance(fn(a).eval(), lazyk.Array)
    rows = lazyk.array([[1.0, 2.0], [3.0]])
    p = lazyk.placeholder("p", "N * var * float64")
    assert isinstance(lazyk.compile(lazyk.cumsum(p, axis=1))(rows), lazyk.Array)
    assert isinstance(lazyk.evaluate(lazyk.cumsum(rows, axis=1)), lazyk.Array)


def test_size_as_numpy_and_a_dask_array_indexed_by_an_expression_is_refused_clearly():
    assert lazyk.array(np.zeros((3, 4))).sum(axis=0).size == 4
    assert (lazyk.array(np.zeros((3, 4))) + 1).size == 12
    with pytest.raises(TypeError, match="var or symbolic dims"):
        (lazyk.array([[1.0], []]) + 1).size  # noqa: B018
    da = pytest.importorskip("dask.array")
    rows = lazyk.array([[], [1.0, 5.0], [], [2.0], [0.5, 0.7]])
    met = da.from_array(np.arange(5.0), chunks=2)
    with pytest.raises(lazyk.NotSupportedError, match="evaluate first"):
        met[lazyk.num(rows) >= 1]


def test_ufunc_reductions_of_a_0d_result_take_axis_0_and_minus_1_as_numpy():
    x = np.arange(6.0)
    for op in ("sum", "prod", "min", "max", "any", "all"):
        for axis in (0, -1):
            want = getattr(np, op)(getattr(np, op)(x), axis=axis)
            got = getattr(lazyk, op)(getattr(lazyk, op)(lazyk.array(x)), axis=axis).eval()
            assert got.to_numpy().tolist() == np.asarray(want).tolist(), (op, axis)
    with pytest.raises(np.exceptions.AxisError):
        lazyk.sum(lazyk.sum(lazyk.array(x)), axis=(0,))  # (a tuple is checked, as NumPy)
    with pytest.raises(np.exceptions.AxisError):
        lazyk.mean(lazyk.sum(lazyk.array(x)), axis=0)  # (mean: NumPy refuses it too)


def test_ragged_compiled_scalars_refuse_python_ints_past_int64_as_dense_ones_do():
    x = lazyk.placeholder("x", "N * var * float64")
    i = lazyk.placeholder("i", "int64")
    k = lazyk.compile(x * i)
    assert k([[1.0], []], 3).to_list() == [[3.0], []]
    with pytest.raises(OverflowError, match="'i': Python integer .* out of bounds for int64"):
        k([[1.0], []], 2**70)
    f = lazyk.compile(x * lazyk.placeholder("s", "float64"))
    assert f([[1.0], []], 2**70).to_list() == [[float(2**70)], []]


def test_min_max_with_initial_keep_the_dtype_asked_for():
    a = np.array([[300, -2], [7, 8]], dtype=np.int64)
    got = lazyk.max(lazyk.array(a), axis=1, dtype="int8", initial=5).eval()
    want = np.maximum.reduce(a, axis=1, dtype="int8", initial=5)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()
    f = lazyk.min(lazyk.array(np.array([1.0, 2.0])), dtype="float32", initial=5.0).eval()
    assert np.asarray(f).dtype == np.float32 and float(f) == 1.0


def test_sort_and_argsort_with_no_axis_take_the_flattened_values():
    """`lazyk.sort(x, axis=None)`, `lazyk.argsort` and the method: NumPy's flattened order
    (missing values last, kept), as `np.sort(x, axis=None)` gives over lazyk."""
    x = lazyk.array([[3.0, None], [1.0, 2.0]])
    assert lazyk.sort(x, axis=None).eval().to_list() == [1.0, 2.0, 3.0, None]
    assert lazyk.argsort(x, axis=None).eval().tolist() == [2, 3, 0, 1]
    assert x.argsort(axis=None).eval().tolist() == np.argsort(x, axis=None).eval().tolist()
    dense = np.array([[3.0, 0.0], [2.0, 1.0]])
    np.testing.assert_array_equal(lazyk.sort(lazyk.array(dense), axis=None).eval(),
                                  np.sort(dense, axis=None))
    np.testing.assert_array_equal(lazyk.argsort(lazyk.array(dense), axis=None).eval(),
                                  np.argsort(dense, axis=None, kind="stable"))


def test_ufunc_dtype_follows_numpys_casting_rule():
    n = np.array([1.5, -2.5, 3.7])
    for x in (lazyk.array(n), lazyk.array(n) * 1, lazyk.array([[1.5, -2.5], [], [3.7]])):
        with pytest.raises(TypeError, match=r"Cannot cast ufunc 'add' input 0 from "
                                            r"dtype\('float64'\) to dtype\('int64'\)"):
            np.add(x, 1, dtype=np.int64)
    with pytest.raises(TypeError, match="No loop matching"):
        np.sqrt(lazyk.array(n) * 1, dtype=np.int64)
    got = np.add(lazyk.array(n) * 1, 1, dtype=np.int64, casting="unsafe").eval()
    want = np.add(n, 1, dtype=np.int64, casting="unsafe")
    assert got.to_numpy().tolist() == want.tolist() and got.to_numpy().dtype == want.dtype
    got = np.add(lazyk.array(np.array([1, 2])) * 1, 1.5, dtype="f4").eval().to_numpy()
    assert got.dtype == np.float32 and got.tolist() == [2.5, 3.5]


def test_numpy_functions_on_fixed_arrays_and_edge_keywords_answer_as_numpy():
    n = np.arange(6.0).reshape(2, 3)
    a = lazyk.array(n)
    assert np.astype(a, np.int32).tolist() == np.astype(n, np.int32).tolist()
    assert np.clip(a * 1).eval().to_numpy().tolist() == n.tolist()  # (no bounds: the values)
    assert np.concatenate([a * 1, a * 1], axis=None).eval().to_numpy().tolist() == \
        np.concatenate([n, n], axis=None).tolist()
    rows = lazyk.concatenate([lazyk.array([[1.0], [2.0, 3.0]]), lazyk.array([[4.0], []])],
                             axis=None)
    assert rows.eval().to_list() == [1.0, 2.0, 3.0, 4.0]


def test_records_project_a_list_of_fields_whatever_they_come_from():
    ak = pytest.importorskip("awkward")
    A = ak.zip({"pt": [[45.0, 40.0], [], [30.0]], "eta": [[0.1, -1.2], [], [0.5]],
                "q": [[1, -1], [], [1]]})
    want = A[["pt", "q"]].to_list()
    assert lazyk.from_awkward(A)[["pt", "q"]].to_list() == want
    assert lazyk.array(A.to_list())[["pt", "q"]].to_list() == want
    z = lazyk.zip({k: lazyk.array(A[k].to_list()) for k in A.fields})
    assert z[["pt", "q"]].eval().to_list() == want
    assert z[1:3].eval().to_list() == A[1:3].to_list()  # (outer rows: positions known now)


def test_matmul_operator_answers_as_numpy_or_is_refused_by_name():
    n = np.arange(4.0).reshape(2, 2)
    a = lazyk.array(n)
    assert np.asarray(a @ a).tolist() == (n @ n).tolist()
    assert np.asarray(np.ones((2, 2)) @ a).tolist() == (np.ones((2, 2)) @ n).tolist()
    for f in (lambda: (a * 1) @ a, lambda: a @ (a * 1)):
        with pytest.raises(lazyk.NotSupportedError, match="numpy.matmul"):
            f()


def test_clip_of_a_python_scalar_types_it_as_an_array_as_numpy():
    """np.clip makes its clipped value an array: a Python number there is not weak."""
    x = np.array([1.0, 2.0], np.float32)
    u = np.array([1, 2], np.uint16)
    for args in [(-3.25, x, x), (-2**31, u, u), (5, u, 3), (2.5, None, x), (3, 1, 2)]:
        want = np.clip(*args)
        got = np.asarray(lazyk.clip(*[lazyk.array(a) if isinstance(a, np.ndarray) else a
                                      for a in args]).eval())
        assert got.dtype == want.dtype and np.array_equal(got, want), args


def test_variance_of_complex_values_in_a_real_dtype_and_numpy_keywords():
    """var / std of complex data with a real dtype= answer as NumPy's (the mean of the
    real parts, the complex deviations from it); np.std / np.var take dtype=, and
    np.positive is lazy."""
    z = np.array([1 + 1j, 3 - 1j, 2 + 5j])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        for fn in ("var", "std"):
            want = getattr(np, fn)(z, dtype=np.float64)
            got = np.asarray(getattr(lazyk, fn)(lazyk.array(z), dtype=np.float64).eval())
            assert got.dtype == want.dtype and np.isclose(got, want, rtol=1e-14, atol=0)
    a = lazyk.array(np.arange(5.0))
    got = np.std(a * 2, dtype=np.float32)
    assert isinstance(got, lazyk.Expr)
    np.testing.assert_allclose(np.asarray(got.eval()), np.std(np.arange(5.0) * 2,
                                                              dtype=np.float32), rtol=1e-6)
    assert np.asarray(got.eval()).dtype == np.float32
    pos = np.positive(a * 2)
    assert isinstance(pos, lazyk.Expr) and np.asarray(pos.eval()).tolist() == [0, 2, 4, 6, 8]


def test_nan_constants_keep_their_sign_whichever_came_first():
    """Constants are interned by value: every NaN prints as `nan`, so the key holds its
    bits (a -nan after a nan was the nan)."""
    a = np.arange(3.0)
    x = lazyk.array(a)
    for first, then in ((np.nan, -np.nan), (-np.nan, np.nan)):
        for s in (first, then):
            for got in (lazyk.evaluate(lazyk.where(x > 9, x, s)), (x * 0 + s).eval()):
                assert np.array_equal(np.signbit(np.asarray(got)),
                                      np.signbit(np.where(a > 9, a, s)))


def test_outer_rows_of_an_expression_slice_as_numpy():
    D = np.arange(6.0).reshape(3, 2)
    d = lazyk.array(D) * 2
    for k in (slice(1, None), slice(None, None, -2), slice(5, None), (slice(0, 2), None)):
        assert np.asarray(d[k].eval()).tolist() == (D * 2)[k].tolist()
    x = lazyk.array([[1.0, 2.0], [], [3.0]])
    assert (x * 1)[::-1].eval().to_list() == x[::-1].to_list()
    with pytest.raises(TypeError, match="outer rows where their number is known"):
        lazyk.placeholder("p", "N * float64")[1:]


def test_outer_rows_of_one_dim_expressions_slice_as_numpy():
    a = lazyk.array([[1.0, 2, 3], [], [4, 5]])
    assert np.asarray((lazyk.array(np.arange(4.0)) * 2)[1:].eval()).tolist() == [2.0, 4.0, 6.0]
    assert np.asarray(lazyk.num(a, axis=1)[::-1].eval()).tolist() == [2, 0, 3]
    assert np.asarray(lazyk.sum(a, axis=1)[1:].eval()).tolist() == [0.0, 9.0]


@pytest.mark.parametrize("n", [4, 16, 100_000])
def test_float32_products_never_overflow_in_a_reordered_partial_product(n):
    # NumPy multiplies in order: [1e30, 1e-30, ..., 1e30, 1e-30] gives 1.0; lanes that
    # multiply 1e30 * 1e30 and 1e-30 * 1e-30 apart would give inf * 0 = NaN in float32.
    b = np.ones(n, np.float32)
    b[0], b[1], b[n // 2], b[n // 2 + 1] = 1e30, 1e-30, 1e30, 1e-30
    with np.errstate(all="ignore"):
        want = np.prod(b)
    got = lazyk.array(b).prod().eval().to_numpy()
    assert got.dtype == np.float32 and got == want == 1.0
    rows = lazyk.from_offsets(np.array([0, n, n]), b)
    assert rows.prod(axis=1).eval().to_list() == [1.0, 1.0]
    assert lazyk.array(np.full(2, 3e38, np.float32)).prod().eval().to_numpy() == np.inf


def test_sum_and_prod_take_initial_as_numpy():
    a = np.arange(6.0).reshape(2, 3)
    i8 = np.array([1, 2], np.int8)
    cases = [(np.sum, a, {"initial": 3}), (np.sum, a, {"axis": 1, "initial": 3}),
             (np.prod, a + 1, {"axis": 0, "initial": 2}), (np.sum, i8, {"initial": 1.5}),
             (np.sum, np.zeros((2, 0)), {"axis": 1, "initial": 5}),
             (np.nansum, np.array([np.nan, 1.0]), {"initial": 2}),
             (np.add.reduce, a, {"axis": 1, "initial": 1}),
             (np.multiply.reduce, i8, {"initial": 3})]
    for fn, data, kw in cases:
        want = fn(data, **kw)
        got = fn(lazyk.array(data), **kw)
        got = got.eval() if hasattr(got, "eval") else got
        got = np.asarray(got.to_numpy() if hasattr(got, "to_numpy") else got)
        assert got.dtype == np.asarray(want).dtype and np.array_equal(got, want), (fn, kw)
    rows = lazyk.array([[1, 2], [], [3]])
    assert lazyk.sum(rows, axis=1, initial=10).eval().to_list() == [13, 10, 13]
    assert lazyk.prod(rows, axis=1, initial=2).eval().to_list() == [4, 2, 6]
    k = lazyk.compile(lazyk.sum(lazyk.placeholder("x", "N * float64"), initial=0.5))
    assert k(np.zeros(0)) == 0.5 and k(np.ones(3)) == 3.5
    with pytest.raises(OverflowError, match="initial=.*int64"):
        lazyk.sum(lazyk.array(i8), initial=2**70)


@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
def test_running_folds_of_a_0d_array_along_axis_0_as_numpy(fn):
    want = getattr(np, fn)(np.array(3.0), axis=0)
    got = getattr(lazyk, fn)(lazyk.array(np.array(3.0)), axis=0).eval().to_numpy()
    assert got.shape == want.shape == (1,) and got.tolist() == want.tolist()
    with pytest.raises(np.exceptions.AxisError):
        getattr(lazyk, fn)(lazyk.array(np.array(3.0)), axis=1)


@pytest.mark.parametrize("ascending", [True, False])
def test_sorted_fixed_values_keep_the_order_of_minus_and_plus_zero(ascending):
    """Fixed data sorts with NumPy: -0.0 and 0.0 in their order (stable), NaN last
    ascending and first descending, along every axis, values and positions."""
    a = np.array([[0.0, -0.0, np.nan, 1.0, -0.0, 0.0], [2.0, np.nan, 0.0, -0.0, -1.0, 0.0]])
    for axis in (0, 1):
        flip = np.flip(a, axis)
        want = np.sort(a, axis=axis, kind="stable") if ascending else \
            np.flip(np.sort(flip, axis=axis, kind="stable"), axis)
        got = lazyk.sort(lazyk.array(a), axis=axis, ascending=ascending).eval().to_numpy()
        assert got.tobytes() == want.tobytes()
        pos = lazyk.argsort(lazyk.array(a), axis=axis, ascending=ascending).eval().to_numpy()
        assert np.take_along_axis(a, pos, axis).tobytes() == want.tobytes()
    b = np.array([3, 1, 2, 1])  # (no -0.0: NumPy's fastest sort, the same values)
    assert lazyk.sort(lazyk.array(b), ascending=ascending).eval().to_list() == \
        sorted(b.tolist(), reverse=not ascending)


def test_argmax_of_fixed_data_is_numpys_over_the_computed_values():
    """argmax / argmin of fixed data without missing values: the values by the flat
    kernels (an array: itself), then NumPy's own scan; explain() says so."""
    a = np.array([[1.0, np.nan, 3.0], [4.0, 4.0, -1.0]])
    for fn in ("argmax", "argmin"):
        for e, values in ((lazyk.array(a), a), (lazyk.array(a) * 2 - 1, a * 2 - 1)):
            for axis in (None, 0, 1, -1):
                for keepdims in (False, True):
                    got = np.asarray(getattr(lazyk, fn)(e, axis=axis, keepdims=keepdims).eval())
                    want = getattr(np, fn)(values, axis=axis, keepdims=keepdims)
                    assert got.dtype == np.int64
                    assert got.shape == np.shape(want) and got.tolist() == want.tolist()
        assert f"NumPy's {fn}" in getattr(lazyk, fn)(lazyk.array(a) * 2).explain()
    with pytest.raises(ValueError, match="empty sequence"):
        lazyk.argmax(lazyk.array(np.zeros(0))).eval()
    m = lazyk.mask(lazyk.array(a), lazyk.array(a) > 0)  # (missing values: the loop nest's)
    assert lazyk.argmax(m, axis=1).eval().to_list() == [2, 0]

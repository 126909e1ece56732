"""Lazy expressions against NumPy: every op and dtype, typing, broadcasting, errors."""
import numpy as np
import pytest

import lazyk
from lazyk.frontend import expr as E
from lazyk.frontend.check import check_graph

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
RNG = np.random.default_rng(0)


def sample(dtype, shape=(2, 5)):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return RNG.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        return RNG.integers(1 if dt.kind == "u" else -5, 9, shape).astype(dt)
    v = RNG.normal(size=shape) * 3
    if dt.kind == "c":
        v = v + 1j * RNG.normal(size=shape)
    v = v.astype(dt)
    v.flat[0] = np.nan  # NaN flows through every float op
    if v.size > 2:
        v.flat[1] = np.inf
    return v


def numpy_result(name, *args):
    fn = {"clip": np.clip, "where": np.where, "real": np.real, "imag": np.imag}.get(name) \
        or getattr(np, name)
    with np.errstate(all="ignore"):
        return np.asarray(fn(*args))


def assert_same(got, want, name=""):
    if isinstance(got, lazyk.Array):  # eval() gives a lazyk Array over the fresh result
        got = got.to_numpy()
    assert isinstance(got, np.ndarray)
    assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
    assert got.shape == want.shape, (name, got.shape, want.shape)
    if want.dtype.kind in "fc":
        tol = float(np.finfo(want.dtype).resolution) * 10
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True, err_msg=name)
    else:
        np.testing.assert_array_equal(got, want, err_msg=name)


def supported(name, *args):
    try:
        return getattr(lazyk.frontend.expr, name)(*args)
    except (lazyk.DTypeError, lazyk.NotSupportedError):
        with pytest.raises(TypeError):  # NumPy refuses too, or complex is not lowered yet
            if lazyk.frontend.ops.get(name).supported(lazyk.frontend.ops.get(name).resolve(
                    *(np.asarray(a).dtype for a in args))):
                numpy_result(name, *args)
            else:
                raise TypeError("not lowered")
        return None


@pytest.mark.parametrize("name", E.UNARY)
@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_op_matches_numpy(name, dtype):
    x = sample(dtype)
    e = supported(name, x)
    if e is None:
        return
    check_graph(e.node)
    assert_same(lazyk.evaluate(e), numpy_result(name, x), f"{name}({dtype})")


@pytest.mark.parametrize("name", E.BINARY)
@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_op_matches_numpy(name, dtype):
    x, y = sample(dtype), sample(dtype, (5,))
    if name in ("left_shift", "right_shift") and np.dtype(dtype).kind in "iu":
        y = (np.abs(y) % 7).astype(dtype)
    if name in ("floor_divide", "remainder") and np.dtype(dtype).kind in "iu":
        y[y == 0] = 1  # NumPy's integer division by zero is 0 with a warning; tested elsewhere
    if name == "power" and np.dtype(dtype).kind == "i":
        y = np.abs(y)
    e = supported(name, x, y)
    if e is None:
        return
    check_graph(e.node)
    assert_same(lazyk.evaluate(e), numpy_result(name, x, y), f"{name}({dtype})")


@pytest.mark.parametrize("a,b", [("int8", "float32"), ("uint8", "int8"), ("int64", "uint64"),
                                 ("float16", "int16"), ("bool", "float16"),
                                 ("float32", "complex64"), ("uint32", "float64")])
def test_mixed_dtype_promotion(a, b):
    x, y = sample(a), sample(b)
    for name in ("add", "multiply", "less", "maximum"):
        e = supported(name, x, y)
        if e is not None:
            assert_same(lazyk.evaluate(e), numpy_result(name, x, y), f"{name}({a},{b})")


@pytest.mark.parametrize("dtype", ["int8", "uint8", "float16", "float32", "float64", "bool"])
@pytest.mark.parametrize("scalar", [2, 2.5, True])
def test_weak_python_scalars_nep50(dtype, scalar):
    x = sample(dtype)
    for fn, ref in ((lambda v: v * scalar, None), (lambda v: scalar - v, None)):
        with np.errstate(all="ignore"):
            try:
                want = fn(x)
            except TypeError:
                with pytest.raises(TypeError):
                    fn(E.as_expr(x))
                continue
        e = fn(E.as_expr(x))
        assert e.dtype == want.dtype
        assert_same(lazyk.evaluate(e), want)


def test_out_of_range_python_int_overflows_like_numpy():
    x = np.arange(3, dtype=np.uint8)
    with pytest.raises(OverflowError):
        E.as_expr(x) + 300
    assert_same(lazyk.evaluate(E.as_expr(x) < -1), x < -1)


def test_where_clip_astype_real_imag():
    x, y = sample("float32"), sample("int16")
    assert_same(lazyk.where(x > 0, x, 0).eval(), np.where(x > 0, x, 0))
    assert_same(lazyk.where(y > 0, x, y).eval(), np.where(y > 0, x, y))
    assert_same(lazyk.clip(y, -2, 3).eval(), np.clip(y, -2, 3))
    assert_same(lazyk.clip(x, 0.0, 1.5).eval(), np.clip(x, 0.0, 1.5))
    assert_same(lazyk.astype(x, "int32").eval(), np.nan_to_num(x).astype("int32") * 0
                + lazyk.astype(x, "int32").eval())  # NaN->int is platform-defined: dtype only
    assert_same(E.as_expr(y).astype(np.float64).eval(), y.astype(np.float64))
    z = sample("complex128")
    assert_same(lazyk.real(z).eval(), z.real)
    assert_same(lazyk.imag(z).eval(), z.imag)
    assert_same(lazyk.imag(x).eval(), np.imag(x))
    assert_same(E.as_expr(z).conj().eval(), z.conj())


def test_ufunc_protocol_keeps_values_lazy():
    x, y = sample("float64"), sample("float64", (5,))
    lx = E.as_expr(x)
    e = np.sin(lx) * y
    assert isinstance(e, lazyk.Expr)
    assert_same(e.eval(), np.sin(x) * y)
    assert isinstance(y + lx, lazyk.Expr)  # ndarray defers to us
    assert isinstance(np.add.reduce(lx, axis=1), lazyk.Expr)
    assert_same(np.maximum.reduce(lx, axis=0).eval(), np.maximum.reduce(x, axis=0))
    out = np.empty_like(x)
    assert np.add(lx, 1, out=out) is out
    assert_same(out, x + 1)
    assert_same(np.asarray(lx * 2), x * 2)


def test_type_without_running():
    a = lazyk.placeholder("a", "N * float64")
    b = lazyk.placeholder("b", "N * float32")
    e = a * b + 1
    assert str(e.type) == "N * float64"
    x = E.as_expr(np.zeros((3, 1), np.int8)) + np.zeros(4, np.float32)
    assert str(x.type) == "3 * 4 * float32"
    assert str(x.sum(axis=0).type) == "4 * float32"
    assert str(x.mean(keepdims=True).type) == "1 * 1 * float32"


def test_type_errors_name_op_and_types():
    f = E.as_expr(np.zeros(3))
    with pytest.raises(lazyk.DTypeError, match=r"bitwise_and.*float64"):
        f & f
    with pytest.raises(lazyk.DTypeError):
        lazyk.sin(np.array(["ab", "c"]))
    with pytest.raises(TypeError):
        f + "text"
    with pytest.raises(TypeError, match="takes 1"):
        lazyk.sin(f, f)


def test_shape_errors_name_operands_axis_sizes():
    with pytest.raises(lazyk.ShapeError, match=r"axis -1.*operand 0 has 3.*operand 1 has 4"):
        E.as_expr(np.zeros((2, 3))) + np.zeros(4)
    with pytest.raises(np.exceptions.AxisError):
        E.as_expr(np.zeros((2, 3))).sum(axis=2)
    with pytest.raises(ValueError, match="duplicate"):
        E.as_expr(np.zeros((2, 3))).sum(axis=(0, -2))


@pytest.mark.parametrize("op", ["sum", "prod", "min", "max", "mean", "any", "all"])
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64", "float16", "float32",
                                   "float64", "complex128"])
@pytest.mark.parametrize("axis", [None, -1, (0, 2)])
def test_reductions_match_numpy(op, dtype, axis):
    x = sample(dtype, (3, 4, 2))
    if np.dtype(dtype).kind in "fc":
        x = np.nan_to_num(x, posinf=2.0)
    if op in ("min", "max") and np.dtype(dtype).kind == "c":
        return
    for keep in (False, True):
        e = getattr(lazyk, op)(x, axis=axis, keepdims=keep)
        want = np.asarray(getattr(np, op)(x, axis=axis, keepdims=keep))
        assert e.dtype == want.dtype and e.shape == want.shape
        assert_same(e.eval(), want, f"{op} {dtype} {axis}")


def test_reduction_fused_with_elementwise_and_followed_by_more_work():
    x = sample("float64", (4, 6))
    x = np.nan_to_num(x, posinf=1.0)
    lx = E.as_expr(x)
    assert_same(((lx * 2 + 1) ** 2).sum(axis=1).eval(), ((x * 2 + 1) ** 2).sum(axis=1))
    assert_same((lx - lx.mean(axis=0)).eval(), x - x.mean(axis=0))
    assert_same((lx / lx.max()).sum(axis=0).eval(), (x / x.max()).sum(axis=0))


def test_empty_reductions():
    z = np.zeros((0, 3))
    assert_same(lazyk.sum(z, axis=0).eval(), z.sum(axis=0))
    assert_same(lazyk.prod(z, axis=0).eval(), z.prod(axis=0))
    assert_same(lazyk.sum(z, axis=1).eval(), z.sum(axis=1))
    with pytest.raises(ValueError):
        lazyk.max(z, axis=0).eval()


@pytest.mark.parametrize("dtype", ["int64", "float64", "complex128", "float32"])
def test_where_on_default_width_dtypes(dtype):
    # Regression: a type rule testing weakness with `dt in (int, float, complex)` misreads
    # float64/int64/complex128 (np.dtype('f8') == float is True).
    x = sample(dtype)
    assert_same(lazyk.where(np.isfinite(x), x, 0).eval(), np.where(np.isfinite(x), x, 0))


@pytest.mark.parametrize("lo, hi", [(None, 2.5), (1, None), (None, None), (1, 2)])
def test_clip_takes_none_for_no_bound_as_numpy(lo, hi):
    a = np.arange(4)
    got = np.asarray(lazyk.clip(lazyk.array(a), lo, hi).eval())
    want = np.clip(a, lo, hi)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int64, np.uint64])
def test_integers_compare_exactly_with_python_ints_beyond_their_range(dt):
    info = np.iinfo(dt)
    a = np.array([info.min, info.min + 1, 0, info.max - 1, info.max], dt)
    for s in (info.max + 1, info.min - 1, 2**63, 2**64, -2**63 - 1, 2**70, -1):
        for op in ("==", "!=", "<", "<=", ">", ">="):
            for text in (f"a {op} s", f"s {op} a"):
                want = eval(text, {"a": a, "s": s})
                got = eval(text, {"a": lazyk.array(a), "s": s}).eval()
                np.testing.assert_array_equal(np.asarray(got), want, err_msg=text)
    x = lazyk.array([1, None, 3])
    assert (x < 2**70).eval().to_list() == [True, None, True]


def test_where_and_fill_none_take_python_ints_beyond_int64_with_floats():
    a = np.array([0.5, 2.0])
    np.testing.assert_array_equal(lazyk.where(lazyk.array(a) > 1, a, 2**64).eval(),
                                  np.where(a > 1, a, 2**64))
    assert lazyk.fill_none(lazyk.array([0.5, None]), 2**64).eval().to_list() == [0.5, 2.0**64]


def test_power_of_one_half_is_numpys_square_root():
    x = np.array([-np.inf, -0.0, 4.0, np.nan])
    with np.errstate(invalid="ignore"):
        for v in (x, x.astype(np.float32), np.array([4, 9])):
            got = (lazyk.array(v) ** 0.5).eval()
            want = v ** 0.5
            np.testing.assert_array_equal(got, want)
            assert got.dtype == want.dtype and np.signbit(got).tolist() == \
                np.signbit(want).tolist()


def test_bools_squared_are_int8_as_numpys_square():
    b = np.array([True, False])
    for got, want in ((lazyk.array(b) ** 2, b ** 2), (np.square(lazyk.array(b)), np.square(b)),
                      (lazyk.array(b) ** 3, b ** 3), (np.power(lazyk.array(b), 2),
                                                       np.power(b, 2))):
        got = got.eval()
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
    assert (lazyk.array([[True], [False, True]]) ** 2).type == lazyk.dshape("2 * var * int8")
    assert (lazyk.array([True, None]) ** 2).eval().to_list() == [1, None]

"""Generated from the op table: every op on every dtype it supports, run as a compiled kernel
and compared with the row's NumPy rule (values, dtype, shape)."""
import warnings

import numpy as np
import pytest

from lazyk.errors import DTypeError
from lazyk.frontend import ops
from lazyk.kernel.flat import Instr, KernelSpec, execute

DTYPES = [np.dtype(d) for d in ops.NUMERIC]
# Libm-class functions: NumPy uses its own SIMD versions, so allow a few ULPs.
TRANSCENDENTAL = {"exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan",
                  "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arctan2", "hypot",
                  "power", "true_divide", "absolute"}
ULPS = 8


def sample(dt: np.dtype, n: int = 29, seed: int = 0) -> np.ndarray:
    """Values covering signs, zeros, limits, NaN/inf for dtype `dt` (deterministic)."""
    rng = np.random.default_rng(seed)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        special = [0, 1, 2, 3, 7, info.max, info.max - 1]
        if dt.kind == "i":
            special += [-1, -2, -7, info.min, info.min + 1]
        rnd = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        return np.concatenate([np.array(special, dt), rnd])[:n]
    if dt.kind == "f":
        special = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.5, 0.25, np.nan, np.inf, -np.inf, 100.0]
        rnd = rng.standard_normal(n) * 3
        return np.concatenate([np.array(special), rnd]).astype(dt)[:n]
    comp = np.dtype("f4" if dt.itemsize == 8 else "f8")
    re, im = sample(comp, n, seed), sample(comp, n, seed + 1)[::-1]
    out = np.empty(n, dt)
    out.real, out.imag = re, im
    return out


def domain(op: str, j: int, x: np.ndarray) -> np.ndarray:
    """Restrict operand `j` where NumPy raises or the result is undefined in C."""
    if op == "power" and x.dtype.kind in "iu":
        return (np.abs(x.astype(np.int64)) % 6).astype(x.dtype) if j == 1 else x
    return x


def close(got: np.ndarray, want: np.ndarray, ulps: int) -> None:
    """Equal dtype and shape; values bit-equal up to NaN, or within `ulps` for floats."""
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    if want.dtype.kind == "c":
        close(got.real.copy(), want.real.copy(), ulps)
        close(got.imag.copy(), want.imag.copy(), ulps)
        return
    if want.dtype.kind != "f" or ulps == 0:
        if want.dtype.kind == "f":
            nan = np.isnan(want)
            assert np.array_equal(np.isnan(got), nan), (got, want)
            assert np.array_equal(got[~nan], want[~nan]), (got, want)
        else:
            assert np.array_equal(got, want), (got, want)
        return
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan), (got, want)
    g, w = got[~nan], want[~nan]
    inf = np.isinf(w)
    assert np.array_equal(g[inf], w[inf]), (got, want)
    g, w = g[~inf].astype(np.float64), w[~inf].astype(np.float64)
    tol = ulps * np.spacing(np.abs(w).astype(want.dtype)).astype(np.float64)
    assert np.all(np.abs(g - w) <= tol), (op_err(g, w), got, want)


def op_err(g, w):
    return np.max(np.abs(g - w))


def run(ops_: list, arrays: list, attrs=None) -> None:
    """Run every op in `ops_` on `arrays` as ONE multi-output kernel (few compiles), then
    compare each output with its NumPy rule."""
    dts = tuple(a.dtype for a in arrays)
    attrs = attrs or [None] * len(ops_)
    body = [Instr("load", d, (), j) for j, d in enumerate(dts)]
    outs, wants, names = [], [], []
    for op, attr in zip(ops_, attrs):
        row = ops.get(op)
        args = dts[:row.arity]
        loop = row.resolve(*args, attr=attr)
        if not row.supported(loop, "cpu"):
            continue  # complex lowering not implemented for this row: a visible gap
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            want = np.asarray(row.reference(*arrays[:row.arity], attr=attr))
        assert loop[-1] == want.dtype, f"{op}{args}: infer {loop[-1]}, NumPy {want.dtype}"
        body.append(Instr(op, loop[-1], tuple(range(row.arity)), attr))
        outs.append((len(body) - 1, loop[-1]))
        wants.append(want)
        names.append(f"{op}{tuple(map(str, args))}" + (f"->{attr}" if attr is not None else ""))
    if not outs:
        pytest.skip("nothing lowered for these dtypes")
    spec = KernelSpec(dts, (True,) * len(dts), tuple(body), tuple(outs))
    gots = [np.empty(w.shape, w.dtype) for w in wants]
    execute(spec, tuple(gots) if len(gots) > 1 else gots[0], *arrays)
    for name, op, got, want in zip(names, ops_, gots, wants):
        ulps = ULPS if op in TRANSCENDENTAL else 0
        if want.dtype.kind == "c" and op == "multiply":
            ulps = 2  # NumPy's SIMD complex multiply fuses (fmaddsub)
        if want.dtype.kind in "fc" and want.dtype.itemsize == 2 and op in TRANSCENDENTAL:
            ulps = 2
        try:
            close(got, want, ulps)
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from None


ELEMENTWISE = [n for n in ops.ELEMENTWISE if n != "astype"]


def _resolvable(op: str, dts: tuple) -> bool:
    try:
        ops.get(op).resolve(*dts)
        return True
    except DTypeError:
        with pytest.raises(TypeError):  # NumPy refuses it too
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                ops.get(op).reference(*(sample(d) for d in dts))
        return False


@pytest.mark.parametrize("dt", DTYPES, ids=str)
@pytest.mark.parametrize("arity", [1, 2, 3])
def test_op_same_dtype(arity, dt):
    """Every op of this arity on operands of one dtype (`where` takes a bool condition)."""
    if arity == 3:
        dts = (dt, dt, dt)
        names = [n for n in ELEMENTWISE if ops.get(n).arity == 3 and n != "where"]
        names = [n for n in names if _resolvable(n, dts)]
        run(names, [sample(d, seed=j) for j, d in enumerate(dts)])
        wdts = (np.dtype(bool), dt, dt)
        run(["where"], [sample(d, seed=j) for j, d in enumerate(wdts)])
        return
    dts = (dt,) * arity
    names = [n for n in ELEMENTWISE if ops.get(n).arity == arity and _resolvable(n, dts)]
    arrays = [sample(d, seed=j) for j, d in enumerate(dts)]
    plain = [n for n in names if n != "power"]
    run(plain, arrays)
    if "power" in names:
        run(["power"], [domain("power", j, a) for j, a in enumerate(arrays)])


MIXED = [("int8", "uint8"), ("int32", "float32"), ("uint64", "int64"), ("float16", "int8"),
         ("bool", "int16"), ("float32", "float64"), ("uint8", "float16"), ("int64", "float64"),
         ("complex64", "float64")]
MIXED_OPS = ["add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "less",
             "greater_equal", "equal", "maximum", "fmin", "arctan2", "bitwise_and",
             "logical_xor"]


@pytest.mark.parametrize("pair", MIXED, ids="-".join)
def test_op_mixed(pair):
    dts = tuple(np.dtype(p) for p in pair)
    names = [n for n in MIXED_OPS if _resolvable(n, dts)]
    run(names, [sample(dts[0], seed=3), sample(dts[1], seed=4)[::-1].copy()])


@pytest.mark.parametrize("src", DTYPES, ids=str)
def test_astype(src):
    """src -> every dtype, in one kernel per source dtype."""
    x = sample(src)
    safe = x
    if src.kind in "fc":
        # NaN / inf / out of range into integers too: the reference is ops.cast_values
        safe = (np.abs(np.nan_to_num(x.real if src.kind == "c" else x)) % 100).astype(src)
    if src.kind == "i" and src.itemsize > 1:
        safe = x % 1000  # int -> float16 goes through double in NumPy: avoid double rounding
    run(["astype"] * len(DTYPES), [x], attrs=DTYPES)
    ints = [d for d in DTYPES if d.kind in "iuf"]
    run(["astype"] * len(ints), [safe], attrs=ints)


def test_weak_scalar_const():
    """`a + 1` on int8 stays int8 (NEP 50) and the constant wraps like NumPy."""
    i8 = np.dtype("int8")
    assert ops.get("add").infer(i8, int) == i8
    assert ops.get("multiply").infer(i8, float) == np.dtype("float64")
    body = (Instr("load", i8, (), 0), Instr("const", i8, (), 100), Instr("add", i8, (0, 1)))
    spec = KernelSpec((i8,), (True,), body, ((2, i8),))
    a = np.arange(-128, 128, dtype=i8)
    out = np.empty_like(a)
    execute(spec, out, a)
    assert np.array_equal(out, a + np.int8(100))


def test_float16_rounds_each_step():
    """float16 ops compute in float32 and round after every op, as NumPy does."""
    f2 = np.dtype("float16")
    body = (Instr("load", f2, (), 0), Instr("load", f2, (), 1), Instr("multiply", f2, (0, 1)),
            Instr("add", f2, (2, 0)))
    spec = KernelSpec((f2, f2), (True, True), body, ((3, f2),))
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(500) * 50).astype(f2), (rng.standard_normal(500) * 3).astype(f2)
    out = np.empty(500, f2)
    execute(spec, out, a, b)
    assert np.array_equal(out, a * b + a)


@pytest.mark.parametrize("red", ops.REDUCTIONS)
@pytest.mark.parametrize("dt", ["bool", "int8", "int32", "uint64", "float16", "float32",
                                "float64", "complex128"])
def test_reductions(red, dt):
    dt = np.dtype(dt)
    row = ops.get(red)
    if red == "mean":
        pytest.skip("mean is sum / count in the front end")
    if row.finish is not None:  # an arg-reduction: the loop nest folds positions
        _check_arg_reduction(red, dt)
        return
    try:
        acc = row.infer(dt)
    except DTypeError:
        return
    if not row.supported((dt, acc), "cpu"):
        pytest.skip(f"{red} of {dt} not lowered")
    x = sample(dt, n=60, seed=5).reshape(6, 10)
    if dt.kind == "f":
        x = np.nan_to_num(x, posinf=9, neginf=-9) % 4  # keep prod/sum finite and comparable
        x = x.astype(dt)
    if dt.kind in "iu" and red == "prod":
        x = (x % 3).astype(dt)
    body = (Instr("load", dt, (), 0),)
    spec = KernelSpec((dt,), (True,), body, ((0, acc),), red)
    for axis in (None, 0, 1):
        want = np.asarray(getattr(np, red)(x, axis=axis, keepdims=True))
        assert want.dtype == acc
        got = np.empty(want.shape, acc)
        execute(spec, got, x)
        close(got, want, 0 if dt.kind in "biu" else 16)


def _check_arg_reduction(red, dt):
    """argmax / argmin through the front end (the loop nest) against NumPy's, every axis;
    complex values are refused (not supported yet)."""
    import lazyk

    if dt.kind == "c":
        with pytest.raises(lazyk.NotSupportedError, match=f"{red}: positions of complex"):
            getattr(lazyk, red)(np.ones(3, dt))
        return
    x = sample(dt, n=60, seed=5).reshape(6, 10)
    if dt.kind == "f":  # NaN at a few places: the first NaN wins, as NumPy's
        with np.errstate(invalid="ignore"):
            x = np.where(np.arange(60).reshape(6, 10) % 7 == 3, np.nan, x % 4).astype(dt)
    for axis in (None, 0, 1, -1):
        for keepdims in (False, True):
            got = getattr(lazyk, red)(x, axis=axis, keepdims=keepdims).to_numpy()
            want = getattr(np, red)(x, axis=axis, keepdims=keepdims)
            assert got.dtype == np.int64 and got.shape == np.shape(want)
            assert np.array_equal(got, want), (axis, keepdims, got, want)


def test_reduction_nan_propagates():
    f8 = np.dtype("f8")
    x = np.array([1.0, np.nan, -3.0, 2.0] * 50)
    for red in ("min", "max", "sum"):
        spec = KernelSpec((f8,), (True,), (Instr("load", f8, (), 0),), ((0, f8),), red)
        got = np.empty(1)
        execute(spec, got, x)
        assert np.isnan(got[0])
    spec = KernelSpec((f8,), (True,), (Instr("load", f8, (), 0),), ((0, f8),), "min")
    got = np.empty(1)
    execute(spec, got, np.array([3.0, -np.inf, 2.0]))
    assert got[0] == -np.inf


@pytest.mark.parametrize("op", ELEMENTWISE)
def test_op_through_front_end(op):
    """The same rows reached through `lazyk.<op>` (graph, fusion, kernel) on NumPy inputs."""
    import lazyk

    fn = getattr(lazyk, op, None)
    if fn is None:
        pytest.skip(f"lazyk.{op} not exported")
    row = ops.get(op)
    for dt in (np.dtype("float32"), np.dtype("int16")):
        dts = (np.dtype(bool), dt, dt) if op == "where" else (dt,) * row.arity
        try:
            row.resolve(*dts)
        except DTypeError:
            continue
        arrays = [domain(op, j, sample(d, seed=j)) for j, d in enumerate(dts)]
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            want = np.asarray(row.reference(*arrays))
            got = np.asarray(lazyk.evaluate(fn(*arrays)))
        close(got, want, ULPS if op in TRANSCENDENTAL else 0)


# ---------------------------------------------------------------- numexpr's extra functions
# arcsinh/arccosh/arctanh call libm asinh/acosh/atanh; NumPy has its own SIMD versions.
TRANSCENDENTAL |= {"arcsinh", "arccosh", "arctanh"}
NUMEXPR_EXTRA = ["arcsinh", "arccosh", "arctanh", "fmod", "copysign"]
SPECIAL = np.array([0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -7.25, 1e300, -1e-300, np.nan,
                    np.inf, -np.inf])


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")
@pytest.mark.parametrize("op", NUMEXPR_EXTRA)
@pytest.mark.parametrize("dt", ["float16", "float32", "float64", "int8", "uint16", "int64",
                                "bool", "complex64", "complex128"])
def test_numexpr_extra_rows(op, dt):
    """Values (NaN, inf, signed zeros), result dtype and shape against NumPy."""
    dt = np.dtype(dt)
    row = ops.get(op)
    if row.arity == 1:
        arrays = [sample(dt, seed=5)]
        if dt.kind == "f":
            arrays = [np.concatenate([SPECIAL.astype(dt), arrays[0]])]
    else:
        x, y = sample(dt, seed=6), sample(dt, seed=7)
        if dt.kind == "f":
            x = np.concatenate([np.repeat(SPECIAL, len(SPECIAL)), x]).astype(dt)
            y = np.concatenate([np.tile(SPECIAL, len(SPECIAL)), y]).astype(dt)
        arrays = [x, y]
    try:
        loop = row.resolve(*(a.dtype for a in arrays))
    except DTypeError:
        assert dt.kind in "c", f"{op} refuses {dt}"  # NumPy has no complex fmod/copysign
        with pytest.raises(TypeError):
            row.reference(*arrays)
        return
    if dt.kind == "c":
        assert row.supported(loop, "cpu") and not row.supported(loop, "cuda")
    run([op], arrays)


@pytest.mark.parametrize("dt", ["int8", "int16", "int32", "int64", "uint8", "uint64"])
def test_fmod_integer_edges(dt):
    """Sign of the dividend, x % 0 == 0 and MIN % -1 == 0 (no trap), as NumPy."""
    info = np.iinfo(dt)
    xs = np.array([7, 0, 1, info.max, info.min, info.min + 1, info.max - 1], dt)
    ys = np.array([2, 3, 0, 1, 2, 7, info.max], dt)
    if info.min < 0:
        xs = np.concatenate([xs, np.array([-7, -7, 7, info.min, info.min, -1], dt)])
        ys = np.concatenate([ys, np.array([2, -2, -2, -1, 0, info.min], dt)])
    x, y = np.repeat(xs, len(ys)), np.tile(ys, len(xs))
    run(["fmod"], [x, y])


@pytest.mark.parametrize("op", ["fmod", "remainder", "floor_divide"])
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_float_remainder_edges(op, dt):
    """Float fmod / remainder / floor_divide bit for bit as NumPy across |x| < |y|,
    |y| <= |x| < 2|y| (computed without a libm call) and beyond, zeros, infinities, NaN and
    subnormals, both signs."""
    ys = np.array([2 * np.pi, -2 * np.pi, 3, -3, 0, -0.0, np.inf, -np.inf, np.nan, 1e-300,
                   5e-324, 1e30], dt)
    rng = np.random.default_rng(1)
    xs = np.concatenate([rng.uniform(-30, 30, 200),
                         [0, -0.0, np.inf, -np.inf, np.nan, 3, -3, 6, -6, 5.999999, 2 * np.pi,
                          4 * np.pi, -4 * np.pi, 1e30, 2e30, -1e-310, 5e-324]]).astype(dt)
    x, y = np.repeat(xs, len(ys)), np.tile(ys, len(xs))
    with np.errstate(all="ignore"):
        want = getattr(np, op)(x, y)
    import lazyk

    got = np.asarray(getattr(lazyk, op)(lazyk.array(x), lazyk.array(y)).eval())
    assert got.dtype == want.dtype
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_float_fmod_is_exact_where_the_quotient_rounds_and_vectorizes(dt):
    """The CPU's fmod (trunc and fma, widened by the loop vectorizer): x one ulp either side
    of k * y (the quotient rounds to k), huge quotients and infinities among ordinary values
    in one vector (those elements take libm's), bit for bit as NumPy; inside a ragged
    reduction too. The optimized kernel calls a vector variant."""
    import lazyk

    dt = np.dtype(dt).type
    rng = np.random.default_rng(7)
    y = (rng.uniform(0.1, 10, 3000) * rng.choice([-1, 1], 3000)).astype(dt)
    k = rng.integers(-2000, 2000, 3000).astype(dt)
    exact = (k * y).astype(dt)
    x = np.concatenate([exact, np.nextafter(exact, dt(np.inf)), np.nextafter(exact, dt(-np.inf))])
    y = np.tile(y, 3)
    x[::97], y[::89] = dt(1e30), dt(np.inf)  # (lanes of the slow path among the others)
    for op in ("fmod", "remainder"):
        with np.errstate(all="ignore"):
            want = getattr(np, op)(x, y)
        got = np.asarray(getattr(lazyk, op)(lazyk.array(x), lazyk.array(y)).eval())
        assert np.array_equal(got, want, equal_nan=True)
        assert np.array_equal(np.signbit(got), np.signbit(want))
    lens = rng.integers(0, 6, 2000)
    off = np.r_[0, np.cumsum(lens)]
    vals = rng.uniform(-30, 30, int(off[-1])).astype(dt)
    rows = lazyk.from_offsets(off, vals)
    got = np.asarray(lazyk.sum(lazyk.fmod(rows, dt(2 * np.pi)), axis=1).eval())
    want = np.array([np.fmod(vals[a:b], dt(2 * np.pi)).sum(dtype=got.dtype)
                     for a, b in zip(off[:-1], off[1:])])
    np.testing.assert_allclose(got, want, rtol=1e-5 if dt is np.float32 else 1e-12,
                               atol=1e-4 if dt is np.float32 else 0)  # (sums in another order)
    text = str(lazyk.explain(lazyk.fmod(lazyk.array(x), lazyk.array(y))))
    assert any("call <" in line and "@lazyk.fmod.v" in line for line in text.splitlines())


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_float_fmod_by_a_value_the_optimizer_finds_constant(dt):
    """`x % (x > x)` divides by a zero the optimizer proves constant, where lazyk's own
    folding does not: the kernel still compiles and answers as NumPy (it did not: the
    constant argument was dropped from the call its vector variants describe)."""
    import lazyk

    x = np.array([1.5, -2.5, 3.0, 0.0, -7.25] * 9, dt)
    a = lazyk.array(x)
    with np.errstate(all="ignore"):
        cases = [(a % (a > a), x % (x > x)), ((a > a) // a, (x > x) // x),
                 (lazyk.fmod(a, a > a), np.fmod(x, x > x)),
                 (lazyk.fmod(a, a - a + 2), np.fmod(x, x - x + 2))]
        for e, want in cases:
            got = np.asarray(e.eval())
            assert got.dtype == want.dtype
            assert np.array_equal(got, want, equal_nan=True)
            assert np.array_equal(np.signbit(got), np.signbit(want))
        rows = lazyk.array([x[:3].tolist(), [], x[3:].tolist()], type=f"3 * var * {dt}")
        got = lazyk.sum(lazyk.fmod(rows, rows > rows), axis=1).eval().to_list()
        assert np.isnan(got[0]) and got[1] == 0 and np.isnan(got[2])


def test_numexpr_extra_front_end():
    """lazyk.frontend.expr functions and numexpr strings reach the rows; wrong arity is a TypeError."""
    import lazyk
    from lazyk.frontend import expr

    a = np.linspace(-3, 3, 13)
    b = np.linspace(0.5, 4, 13)[::-1].copy()
    with np.errstate(all="ignore"):
        cases = {"arcsinh(a)": np.arcsinh(a), "arccosh(b + 1)": np.arccosh(b + 1),
                 "arctanh(a / 4)": np.arctanh(a / 4), "fmod(a, b)": np.fmod(a, b),
                 "copysign(b, a)": np.copysign(b, a),
                 "fmod(a, 0.75) + copysign(1, a)": np.fmod(a, 0.75) + np.copysign(1, a)}
        for text, want in cases.items():
            got = lazyk.evaluate(text, local_dict={"a": a, "b": b})
            close(np.asarray(got), want, ULPS)
        close(np.asarray(expr.arcsinh(a).eval()), np.arcsinh(a), ULPS)
        close(np.asarray(expr.arctanh(a / 4).eval()), np.arctanh(a / 4), ULPS)
        close(np.asarray(expr.arccosh(b + 1).eval()), np.arccosh(b + 1), ULPS)
        close(np.asarray(expr.fmod(a, b).eval()), np.fmod(a, b), 0)
        close(np.asarray(expr.copysign(b, a).eval()), np.copysign(b, a), 0)
        i = np.arange(-6, 7, dtype=np.int32)
        close(np.asarray(expr.fmod(i, 4).eval()), np.fmod(i, 4), 0)
    assert expr.fmod(i, 4).dtype == np.fmod(i, 4).dtype
    assert expr.copysign(i, 1.0).dtype == np.copysign(i, 1.0).dtype
    with pytest.raises(TypeError):
        expr.fmod(a)
    with pytest.raises(DTypeError):
        expr.fmod(a.astype(complex), a)


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_complex_power_of_zero_as_numpy(dt):
    """NumPy 2's nc_pow: 0 ** z is 0 when z.real > 0 (any imaginary part), NaN otherwise,
    and z ** 0 is 1; checked for the four complex zeros."""
    import lazyk

    zeros = [0j, complex(-0.0, 0.0), complex(0.0, -0.0), complex(-0.0, -0.0)]
    exps = [1 + 1j, 2.5 + 0.5j, 1j, -1 + 1j, -1 + 0j, 0j, 1 + 0j, 2 + 0j, 0.5 + 0j,
            complex(np.nan, 0), complex(0, np.nan), complex(np.inf, 1), complex(1e-300, -3)]
    x = np.array([z for z in zeros for _ in exps], dt)
    y = np.array(exps * len(zeros), dt)
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    k = lazyk.compile(lazyk.placeholder("x", f"N * {dt}") ** lazyk.placeholder("y", f"N * {dt}"))
    for got in (np.asarray((lazyk.array(x) ** lazyk.array(y)).eval()), k(x, y),
                np.asarray((lazyk.array(x[:1]) ** lazyk.array(y[:1])).eval())):
        w = want[:len(got)]
        assert got.dtype == w.dtype and got.shape == w.shape
        np.testing.assert_array_equal(got, w)  # NaNs in the same places

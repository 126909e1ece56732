"""End-to-end acceptance tests of types, arrays, expressions and kernels through the public
API only (`import lazyk`, the `lazyk` console command through a subprocess).

Each test checks a concrete user-visible promise: values against NumPy, dtypes, shapes,
error types and the words in their messages. Cases that could crash the interpreter run
in a subprocess, so a segfault fails the test instead of killing pytest.
"""
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import lazyk

PY = sys.executable


def run_py(code: str, env: dict | None = None, timeout: int = 60) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter; a crash shows up as a negative return code."""
    return subprocess.run([PY, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "lazyk.cli", *args], capture_output=True, text=True,
                          timeout=60, env={**os.environ, **(env or {})})


def npv(x) -> np.ndarray:
    """The value of a lazyk result (Array or ndarray) as a NumPy array."""
    return np.asarray(x)


# --- type strings ---------------------------------------------------------------------------

@pytest.mark.parametrize("text, line, column, words", [
    ("int33", 1, 1, "int33"),
    ("int32 * 3", 1, 9, "dimension"),
    ("3 *", 1, 4, "end of input"),
    ("{x: int32", 1, 10, "unclosed"),
    ("fixed_string[0]", 1, 14, "at least 1"),
    ("{x: int32, x: float64}", 1, 12, "duplicate field name 'x'"),
    ("... * Dims... * int32", 1, 11, "two ellipses"),
    ("3 * int32 garbage", 1, 11, "garbage"),
    ("", 1, 1, "empty"),
    ("03 * int32", 1, 1, "leading zeros"),
    ("99999999999999999999 * int32", 1, 1, "overflows int64"),
    ("3 *\n  int33", 2, 3, "int33"),
    ("categorical['a', 'b']", 1, 1, "not supported yet"),
])
def test_type_string_errors_have_line_column_and_caret(text, line, column, words):
    with pytest.raises(lazyk.TypeParseError) as info:
        lazyk.dshape(text)
    e = info.value
    assert isinstance(e, ValueError)
    assert (e.line, e.column) == (line, column)
    msg = str(e)
    assert words in msg
    # the offending source line is shown with a caret under the column
    src = text.split("\n")[line - 1]
    assert f"\n  {src}\n  {' ' * (column - 1)}^" in msg


@pytest.mark.parametrize("text", ["(" * 10000 + "int32" + ")" * 10000, "?" * 10000 + "int32",
                                  "3 * " * 10000 + "int32", "{a: " * 10000 + "int8" + "}" * 10000])
def test_deep_nesting_is_one_clean_error(text):
    with pytest.raises(lazyk.TypeParseError, match="nested deeper than"):
        lazyk.dshape(text)


def test_types_roundtrip_intern_and_properties():
    for s in ["{x: int32, 'a name': ?float64}", "(int32,)", "3 * var * N * int32",
              "(N * float64, scale: float64) -> N * float64", ">float64",
              "fixed_bytes[8, align=4]", "timedelta[unit='us']", "?3 * int32", "pointer[int8]",
              "Dims... * T", "fixed_string[10, 'ascii']"]:
        t = lazyk.dshape(s)
        assert str(t) == s
        assert lazyk.dshape(str(t)) is t
        assert repr(t) == f"dshape({s!r})"
    assert lazyk.dshape("int") is lazyk.dshape("int32")
    assert lazyk.dshape("real") is lazyk.dshape("float64")
    assert lazyk.dshape("complex[float32]") is lazyk.dshape("complex64")
    assert lazyk.dshape(" 3*int32 # comment\n") is lazyk.dshape("3 * int32")
    t = lazyk.dshape("3 * 4 * {a: int8, b: float64}")
    assert (t.ndim, t.shape, t.itemsize, t.alignment, t.is_symbolic) == (2, (3, 4), 192, 8, False)
    assert t.dtype is lazyk.dshape("{a: int8, b: float64}")
    assert lazyk.dshape("3 * var * N * int32").shape == (3, None, None)
    assert lazyk.dshape(np.dtype(">i4")) is lazyk.dshape(">int32")
    assert lazyk.dshape("{a: int8, b: >float64}").to_numpy() == np.dtype(
        {"names": ["a", "b"], "formats": ["i1", ">f8"], "offsets": [0, 8], "itemsize": 16})


def test_match_and_promote():
    sig = "(Dims... * T, Dims... * T) -> Dims... * T"
    assert lazyk.types.match(sig, "5 * 1 * int32", "3 * int32") is lazyk.dshape("5 * 3 * int32")
    with pytest.raises(lazyk.TypeMatchError) as info:
        lazyk.types.match(sig, "5 * 2 * int32", "3 * int32")
    assert "5 * 2 * int32" in str(info.value) and "3 * int32" in str(info.value)
    p = lazyk.types.promote
    assert p("int8", "uint8") is lazyk.dshape("int16")
    assert p("uint64", "int64") is lazyk.dshape("float64")
    assert p("int32", "complex64") is lazyk.dshape("complex128")
    assert p("float16", int) is lazyk.dshape("float16")
    assert p("float32", complex) is lazyk.dshape("complex64")
    assert p("uint8", int) is lazyk.dshape("uint8")


def test_cli_parse():
    r = run_cli("parse", "2 * 3 * float64")
    assert r.returncode == 0
    assert r.stdout.splitlines()[0] == "2 * 3 * float64"
    assert "itemsize: 48" in r.stdout and "ndim: 2" in r.stdout
    r = run_cli("parse", "3 * int32 *")
    assert r.returncode != 0
    assert "end of input" in r.stderr and "^" in r.stderr


# --- arrays ---------------------------------------------------------------------------------

def test_seed_example_and_inference():
    a = lazyk.empty("2 * 3 * int32")
    a[...] = [[1, 2, 3], [4]]
    assert a.to_list() == [[1, 2, 3], [4, 4, 4]]
    assert str(a.type) == "2 * 3 * int32"
    assert str(lazyk.array([[1, 2, 3], [4]]).type) == "2 * var * int64"
    assert str(lazyk.array([1, None]).type) == "2 * ?int64"
    assert str(lazyk.array(["a", "bc"]).type) == "2 * string"
    assert str(lazyk.array([{"x": 1, "y": 2.0}, {"x": 3, "y": 4}]).type) == \
        "2 * {x: int64, y: float64}"
    assert str(lazyk.array([1, 2.5, True]).type) == "3 * float64"
    assert str(lazyk.array([2 ** 63]).type) == "1 * uint64"
    assert repr(lazyk.array([[1, 2, 3], [4]], type="2 * var * int32")) == \
        "array([[1, 2, 3], [4]], type='2 * var * int32')"
    assert lazyk.array([[1, None], [3]]).to_list() == [[1, None], [3]]


@pytest.mark.parametrize("data, type, exc, words", [
    ([[1, 2], [3, 4, 5]], "2 * 2 * int32", lazyk.ArrayConstructionError, "row 1 has 3"),
    ([1, 300], "2 * int8", lazyk.ArrayConstructionError, "[1]"),
    ([1, -1], "2 * uint8", lazyk.ArrayConstructionError, "uint8"),
    ([1, "a"], None, lazyk.ArrayConstructionError, "mixed incompatible types"),
    ([1], "2 * int33", lazyk.TypeParseError, "int33"),
    ([1.5], "1 * int32", lazyk.ArrayConstructionError, "1.5"),
    ([1, None], "2 * int32", lazyk.ArrayConstructionError, "?int32"),
    ([2 ** 64], None, lazyk.ArrayConstructionError, "does not fit"),
])
def test_array_construction_errors(data, type, exc, words):
    with pytest.raises(exc) as info:
        lazyk.array(data, type=type)
    assert words in str(info.value)


def test_numpy_layouts_zero_copy_and_values():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((6, 8))
    buf = np.zeros(6 * 8 * 8 + 1, np.uint8)
    unaligned = buf[1:].view(np.float64).reshape(6, 8)
    unaligned[...] = base
    layouts = {
        "negative": base[::-1, ::-2], "zero": np.broadcast_to(base[0], (6, 8)),
        "fortran": np.asfortranarray(base), "noncontig": base[1::2, ::3],
        "swapped": base.astype(">f8"), "unaligned": unaligned,
    }
    for name, x in layouts.items():
        a = lazyk.array(x)
        assert np.shares_memory(a.to_numpy(), x), name
        assert a.to_list() == x.tolist(), name
        r = (a * 2 - 1).eval()
        assert str(r.type) == f"{x.shape[0]} * {x.shape[1]} * float64", name
        assert np.array_equal(npv(r), x * 2 - 1), name
    assert lazyk.array(unaligned).aligned is False
    assert str(lazyk.array(layouts["swapped"]).type) == "6 * 8 * >float64"


def test_indexing_views_and_errors():
    r = lazyk.array([[1, 2, 3], [4]])
    assert r[1].to_list() == [4]
    assert r[:, ::-1].to_list() == [[3, 2, 1], [4]]
    assert r[0, ::-2].to_list() == [3, 1]
    with pytest.raises(IndexError, match="row 1"):
        r[:, 1]
    a = lazyk.array([[1, 2, 3], [4, 5]], type="2 * var * int32")
    with pytest.raises(lazyk.ShapeError, match="row 0"):
        a[...] = [[1, 2], [3, 4]]
    n = np.arange(3)
    n.flags.writeable = False
    ro = lazyk.array(n)
    with pytest.raises(ValueError, match="read-only"):
        ro[0] = 5
    assert n.tolist() == [0, 1, 2]
    rec = lazyk.array([{"x": 1, "y": 2.0}, {"x": 3, "y": 4.0}])
    assert rec.x.to_list() == [1, 3] and rec["y"].to_list() == [2.0, 4.0]
    with pytest.raises(lazyk.NotSupportedError, match="to_list"):
        lazyk.array([[1, 2], [3]]).to_numpy()


# --- lazy expressions -----------------------------------------------------------------------

def test_numpy_functions_stay_lazy_and_types_known_without_running():
    x = np.linspace(0, 1, 5)
    y = np.arange(5.0)
    lx, ly = lazyk.array(x), lazyk.array(y)
    e = np.sin(lx) * ly
    assert isinstance(e, lazyk.Expr)
    assert e.type is lazyk.dshape("5 * float64")
    assert isinstance(np.ones(5) * ly, lazyk.Expr)
    assert np.allclose(npv(e.eval()), np.sin(x) * y, rtol=1e-15)
    r = e.eval()
    assert isinstance(r, lazyk.Array) and r.type is lazyk.dshape("5 * float64")
    t = (lx.astype("float32") + lazyk.array(np.int8([1] * 5))).type
    assert t is lazyk.dshape("5 * float32")
    with pytest.raises(lazyk.DTypeError, match="bitwise_and.*float64"):
        lx & ly
    with pytest.raises(lazyk.DTypeError, match="sin.*string"):
        lazyk.sin(lazyk.array(["a", "b"]))


def test_shape_mismatch_names_operands_axis_sizes():
    with pytest.raises(lazyk.ShapeError) as info:
        (lazyk.array(np.ones((3, 5))) + lazyk.array(np.ones((4, 1)))).eval()
    msg = str(info.value)
    assert "axis -2" in msg and "operand 0 has 3" in msg and "operand 1 has 4" in msg
    with pytest.raises(lazyk.ShapeError, match=r"\(5,\).*\(4,\)"):
        lazyk.evaluate(lazyk.array(np.ones(5)) + 1, out=np.zeros(4))


def _overlap_cases():
    """(name, fn(a) writing into a, expected from a copy)."""
    def ev(expr, out):
        lazyk.evaluate(expr, out=out)

    def setitem1(a):
        x = lazyk.array(a)
        x[1:] = x[:-1] * 2

    def setitem2(a):
        x = lazyk.array(a)
        x[:-1] = x[1:] * 2 + x[:-1]

    def exp_set(b, sl, val):
        b = b.copy()
        b[sl] = val
        return b
    return [
        ("fwd", lambda a: ev(lazyk.array(a)[1:] + lazyk.array(a)[:-1], a[:-1]),
         lambda b: exp_set(b, slice(None, -1), b[1:] + b[:-1])),
        ("bwd", lambda a: ev(lazyk.array(a)[1:] + lazyk.array(a)[:-1], a[1:]),
         lambda b: exp_set(b, slice(1, None), b[1:] + b[:-1])),
        ("reversed", lambda a: ev(lazyk.array(a)[::-1] * 2, a),
         lambda b: b[::-1] * 2),
        ("strided", lambda a: ev(lazyk.array(a)[::2] + lazyk.array(a)[1::2],
                                 a[len(a) // 4:len(a) // 4 + len(a) // 2]),
         lambda b: exp_set(b, slice(len(b) // 4, len(b) // 4 + len(b) // 2),
                           b[::2] + b[1::2])),
        ("exact alias", lambda a: ev(lazyk.array(a) * 3 + 1, a), lambda b: b * 3 + 1),
        ("setitem fwd", setitem1, lambda b: exp_set(b, slice(1, None), b[:-1] * 2)),
        ("setitem bwd", setitem2, lambda b: exp_set(b, slice(None, -1), b[1:] * 2 + b[:-1])),
        ("string", lambda a: lazyk.evaluate("2*p + q", local_dict={"p": a[1:], "q": a[:-1]},
                                            out=a[1:]),
         lambda b: exp_set(b, slice(1, None), 2 * b[1:] + b[:-1])),
        ("reduce+elem", lambda a: ev(lazyk.array(a)[::-1].sum() + lazyk.array(a), a),
         lambda b: b[::-1].sum() + b),
    ]


@pytest.mark.parametrize("n", [20, 400_002])
@pytest.mark.parametrize("name, fn, expected", _overlap_cases(), ids=lambda v: v
                         if isinstance(v, str) else "")
def test_overlapping_outputs_equal_numpy(name, fn, expected, n):
    b = np.random.default_rng(3).standard_normal(n)
    a = b.copy()
    fn(a)
    exp = expected(b)
    if name == "reduce+elem":
        assert np.allclose(a, exp, rtol=1e-12, atol=1e-9)
    else:
        assert np.array_equal(a, exp)


def test_overlap_2d_and_compiled():
    b = np.random.default_rng(4).standard_normal((5, 5))
    a = b.copy()
    lazyk.evaluate(lazyk.array(a) + lazyk.array(a.T), out=a)
    assert np.array_equal(a, b + b.T)
    a = b.copy()
    lazyk.evaluate(lazyk.array(a).sum(axis=1), out=a[:, 0])
    exp = b.copy()
    exp[:, 0] = b.sum(axis=1)
    assert np.allclose(a, exp, rtol=1e-14)
    p, q = lazyk.placeholder("p", "N * float64"), lazyk.placeholder("q", "N * float64")
    k = lazyk.compile(p * 2 + q)
    c = np.arange(9.0)
    k(c[1:], c[:-1], out=c[:-1])
    assert c.tolist() == [2 * i + (i - 1) for i in range(1, 9)] + [8.0]


def test_read_only_outputs_raise_value_error():
    r = np.arange(5.0)
    r.flags.writeable = False
    expr = lazyk.array(np.ones(5)) + 1
    with pytest.raises(ValueError, match="read-only"):
        lazyk.evaluate(expr, out=r)
    with pytest.raises(ValueError, match="read-only"):
        lazyk.evaluate(expr, out=lazyk.array(r))
    with pytest.raises(ValueError, match="read-only"):
        lazyk.array(r)[...] = expr
    k = lazyk.compile(lazyk.placeholder("a", "N * float64") + 1)
    with pytest.raises(ValueError, match="read-only"):
        k(np.ones(5), out=r)
    assert r.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_forcing_into_outputs():
    y = lazyk.array(np.arange(5.0))
    a = lazyk.array(np.zeros(6))
    a[1:] = y * 2
    assert a.to_list() == [0.0, 0.0, 2.0, 4.0, 6.0, 8.0]
    o = np.zeros((2, 5))
    lazyk.array(o)[...] = y + 1
    assert o.tolist() == [[1.0, 2.0, 3.0, 4.0, 5.0]] * 2
    with pytest.raises(lazyk.ShapeError):
        lazyk.array(np.zeros(4))[1:] = y * 2
    o32 = np.zeros(5, np.float32)
    assert lazyk.evaluate(y + 0.5, out=o32) is o32 and o32.tolist() == [0.5, 1.5, 2.5, 3.5, 4.5]
    ob = np.zeros(5, ">f8")
    lazyk.evaluate(y + 0.5, out=ob)
    assert ob.tolist() == [0.5, 1.5, 2.5, 3.5, 4.5]
    with pytest.raises(lazyk.CastingError, match="float64.*int64.*same_kind"):
        lazyk.evaluate(y + 0.5, out=np.zeros(5, np.int64))


def test_string_api_values_and_errors():
    a = np.arange(5.0)
    b = np.ones(5)
    c = np.array([-1.0, 2, -3, 4, -5])
    r = lazyk.evaluate("2*a + 3*b - where(c > 0, c, 0)")
    assert isinstance(r, np.ndarray) and r.dtype == np.float64
    assert np.array_equal(r, 2 * a + 3 * b - np.where(c > 0, c, 0))
    assert float(lazyk.evaluate("sum(a*b)")) == 10.0
    assert lazyk.evaluate("x + y", local_dict={"x": a}, global_dict={"y": 10}).tolist() == \
        [10.0, 11.0, 12.0, 13.0, 14.0]
    assert np.array_equal(lazyk.evaluate("-a**2"), -(a ** 2))
    cases = [("a + zz * 2", ValueError, "'zz'", 1, 5),
             ("a + foo(b)", ValueError, "foo", 1, 5),
             ("where(a, b)", ValueError, "where() takes 3", 1, 1),
             ("a + * b", ValueError, "unexpected '*'", 1, 5),
             ("a +\n zz", ValueError, "'zz'", 2, 2)]
    for text, exc, words, line, col in cases:
        with pytest.raises(exc) as info:
            lazyk.evaluate(text)
        e = info.value
        assert isinstance(e, lazyk.TypeParseError), text
        assert words in str(e) and (e.line, e.column) == (line, col), text
        assert "^" in str(e)


def test_casting_safe():
    ai = np.arange(5, dtype=np.int32)  # noqa: F841  (read by lazyk.evaluate)
    r = lazyk.evaluate("ai + 1", casting="safe")
    assert r.dtype == np.int32 and r.tolist() == [1, 2, 3, 4, 5]
    a = np.arange(5.0)  # noqa: F841  (read by lazyk.evaluate)
    with pytest.raises(lazyk.CastingError, match="float64.*float32.*'safe'"):
        lazyk.evaluate("a * 2", out=np.zeros(5, np.float32), casting="safe")
    with pytest.raises(lazyk.CastingError, match="int32.*int16"):
        lazyk.evaluate("ai * 2", out=np.zeros(5, np.int16), casting="safe")
    o = np.zeros(5, np.int64)
    lazyk.evaluate("ai * 2", out=o, casting="safe")
    assert o.tolist() == [0, 2, 4, 6, 8]
    o = np.zeros(5, np.int64)
    lazyk.evaluate("a * 2.5", out=o, casting="unsafe")
    assert o.tolist() == [0, 2, 5, 7, 10]


def test_nan_inf_and_empty():
    n = np.array([np.nan, 1.0, -np.inf, np.inf, 0.0, -0.0])
    la = lazyk.array(n)
    with np.errstate(all="ignore"):
        for fn in ["sqrt", "log", "sign", "floor", "isnan", "isinf", "isfinite", "abs", "rint"]:
            r, e = npv(getattr(lazyk, fn)(la).eval()), getattr(np, fn)(n)
            assert r.dtype == e.dtype and np.array_equal(r, e, equal_nan=True), fn
    assert np.isnan(float(la.max().eval())) and np.isnan(float(la.sum().eval()))
    assert np.array_equal(npv(lazyk.maximum(la, 0.5).eval()), np.maximum(n, 0.5), equal_nan=True)
    assert np.array_equal(npv(lazyk.fmax(la, 0.5).eval()), np.fmax(n, 0.5))
    e = lazyk.array(np.zeros(0))
    assert (e + 1).eval().to_list() == [] and str((e + 1).type) == "0 * float64"
    assert float(e.sum().eval()) == 0.0 and float(e.prod().eval()) == 1.0
    assert bool(e.all().eval()) is True and bool(e.any().eval()) is False
    with pytest.raises(ValueError, match="identity"):
        e.max().eval()
    assert lazyk.array(np.zeros((0, 3))).sum(axis=0).eval().to_list() == [0.0, 0.0, 0.0]
    assert lazyk.array(np.zeros((0, 3))).sum(axis=1).eval().to_list() == []


def test_integer_semantics_match_numpy():
    A = np.array([-7, 7, -7, 7, -8], np.int32)
    B = np.array([2, -2, -2, 2, 0], np.int32)
    with np.errstate(all="ignore"):
        for op in ["floor_divide", "remainder"]:
            r = npv(getattr(lazyk, op)(lazyk.array(A), lazyk.array(B)).eval())
            assert r.dtype == np.int32 and r.tolist() == getattr(np, op)(A, B).tolist(), op
    r = npv((lazyk.array(np.array([1, -8], np.int32)) >>
             lazyk.array(np.array([40, 2], np.int32))).eval())
    assert r.tolist() == [0, -2]
    with pytest.raises(OverflowError):
        lazyk.array(np.int8([1, 2])) + 300
    s = lazyk.array(np.full(500, 100, np.int8)).sum().eval()
    assert int(s) == 50000 and str(s.type) == "int64"
    rng = np.random.default_rng(1)
    dts = [np.int8, np.uint16, np.uint64, np.float16, np.bool_]
    for da in dts:
        for db in dts:
            x = rng.integers(0, 2, 7).astype(da) if da == np.bool_ else \
                rng.integers(-50, 50, 7).astype(da)
            y = np.ones(7, bool) if db == np.bool_ else rng.integers(1, 50, 7).astype(db)
            for op in ["add", "floor_divide", "true_divide"]:
                try:
                    e = getattr(np, op)(x, y)
                except TypeError:
                    continue
                r = npv(getattr(lazyk, op)(lazyk.array(x), lazyk.array(y)).eval())
                assert r.dtype == e.dtype and np.array_equal(r, e), (op, da, db)


def test_reductions_axes_keepdims():
    m = np.arange(24.0).reshape(2, 3, 4)
    lm = lazyk.array(m)
    assert npv(lm.sum(axis=(0, 2)).eval()).tolist() == m.sum(axis=(0, 2)).tolist()
    assert npv(lm.max(axis=-1).eval()).tolist() == m.max(axis=-1).tolist()
    k = lm.mean(axis=-1, keepdims=True)
    assert k.type is lazyk.dshape("2 * 3 * 1 * float64")
    assert np.array_equal(npv(k.eval()), m.mean(axis=-1, keepdims=True))
    assert float(lazyk.sum(lm * 2).eval()) == float((m * 2).sum())
    with pytest.raises(np.exceptions.AxisError, match="axis 3"):
        lm.sum(axis=3)
    with pytest.raises(ValueError, match="duplicate"):
        lm.sum(axis=(1, 1))


# --- ragged and missing ----------------------------------------------------------------------

def test_ragged_reductions_and_broadcasting():
    x = lazyk.array([[1.0, 2.0], [3.0], [4.0, 5.0, 6.0]])
    assert x.type is lazyk.dshape("3 * var * float64")
    s = x.sum(axis=-1)
    assert s.type is lazyk.dshape("3 * float64")
    assert s.eval().to_list() == [3.0, 3.0, 15.0]
    assert x.mean(axis=-1).eval().to_list() == [1.5, 3.0, 5.0]
    assert x.prod(axis=-1).eval().to_list() == [2.0, 3.0, 120.0]
    assert (x - x.mean(axis=-1, keepdims=True)).eval().to_list() == \
        [[-0.5, 0.5], [0.0], [-1.0, 0.0, 1.0]]
    t = lazyk.array([[1, 2], [3], []], type="3 * var * float64")
    assert t.sum(axis=-1).type is lazyk.dshape("3 * float64")
    assert t.sum(axis=-1).eval().to_list() == [3.0, 3.0, 0.0]
    # a length-1 row broadcasts, equal lengths pair up
    y = lazyk.array([[10.0], [20.0], [1.0, 1.0, 1.0]])
    assert (x + y).eval().to_list() == [[11.0, 12.0], [23.0], [5.0, 6.0, 7.0]]
    assert (x + np.array([[1.0], [2.0], [3.0]])).eval().to_list() == \
        [[2.0, 3.0], [5.0], [7.0, 8.0, 9.0]]
    with pytest.raises(lazyk.ShapeError) as info:
        (lazyk.array([[1.0, 2.0], [3.0]]) + lazyk.array([[1.0, 2.0, 3.0], [4.0]])).eval()
    msg = str(info.value)
    assert "row 0" in msg and "2" in msg and "3" in msg
    with pytest.raises(lazyk.ShapeError, match=r"row 0.*length 2.*length 3"):
        (x + np.array([1.0, 2.0, 3.0])).eval()
    with pytest.raises(lazyk.ShapeError, match=r"row 2.*length 3.*length 2"):
        (x + np.array([1.0, 2.0])).eval()
    with pytest.raises(ValueError, match="row 2"):
        t.max(axis=-1).eval()


def test_missing_values_propagate_and_skipna():
    m = lazyk.array([1.0, None, 3.0])
    assert m.type is lazyk.dshape("3 * ?float64")
    assert (m + 1).eval().to_list() == [2.0, None, 4.0]
    c = m < 2
    assert c.type is lazyk.dshape("3 * ?bool")
    assert c.eval().to_list() == [True, None, False]
    assert m.sum().eval().to_list() is None
    assert m.sum(skipna=True).eval().to_list() == 4.0
    assert m.mean(skipna=True).eval().to_list() == 2.0
    assert m.max(skipna=True).eval().to_list() == 3.0
    assert (m + lazyk.array([None, 2.0, 3.0])).eval().to_list() == [None, None, 6.0]
    v = (lazyk.array([np.nan, None]) + 0).eval().to_list()
    assert np.isnan(v[0]) and v[1] is None  # NaN is a value, not a missing marker
    mm = lazyk.array([[1, None], [None, None], [3, 4, 5]])
    assert mm.sum(axis=-1).eval().to_list() == [None, None, 12]
    assert mm.sum(axis=-1, skipna=True).eval().to_list() == [1, 0, 12]
    assert mm.max(axis=-1, skipna=True).eval().to_list() == [1, None, 5]
    assert lazyk.where(m > 1, m, 0).eval().to_list() == [0.0, None, 3.0]


# --- placeholders and compile ----------------------------------------------------------------

def test_placeholders_unify_and_compile():
    a = lazyk.placeholder("a", "N * float64")
    b = lazyk.placeholder("b", "N * float64")
    k = lazyk.compile(2 * a + 3 * b)
    assert k.signature == "(a: N * float64, b: N * float64) -> N * float64"
    for n in (0, 1, 3, 1000):
        r = k(np.arange(float(n)), np.ones(n))
        assert r.dtype == np.float64 and np.array_equal(r, 2 * np.arange(float(n)) + 3)
    with pytest.raises(lazyk.ShapeError, match=r"N is 3 in 'a'( \(axis 0\))? but 4 in 'b'"):
        k(np.arange(3.0), np.ones(4))
    np.testing.assert_array_equal(k(np.arange(3), np.ones(3)), 2 * np.arange(3) + 3.0)
    with pytest.raises(lazyk.TypeMatchError, match=r"'a'.*N \* float64.*3 \* 1 \* int64"):
        k(np.arange(3)[:, None], np.ones(3))
    with pytest.raises(TypeError, match="expected 2 inputs"):
        k(np.ones(3))
    with pytest.raises(lazyk.BindError, match="placeholder 'a'"):
        (2 * a).eval()
    with pytest.raises(TypeError, match="named 'a'"):
        a + lazyk.placeholder("a", "N * int32")
    c = lazyk.placeholder("c", "N * float64")
    assert (c + lazyk.array(np.ones(3))).type is lazyk.dshape("3 * float64")
    with pytest.raises(lazyk.ShapeError, match="N.*M"):
        c + lazyk.placeholder("d", "M * float64")
    o = np.zeros(3)
    assert k(np.arange(3.0), np.ones(3), out=o) is o and o.tolist() == [3.0, 5.0, 7.0]


def test_compiled_kernel_from_8_threads():
    a = lazyk.placeholder("a", "N * float64")
    b = lazyk.placeholder("b", "N * float64")
    k = lazyk.compile(lazyk.sqrt(a * a + b) - 1.5 * b)
    rng = np.random.default_rng(5)
    datas = [(rng.random(1000 + 37 * i), rng.random(1000 + 37 * i)) for i in range(8)]
    datas[7] = (rng.random(300_000), rng.random(300_000))  # big enough for the thread pool
    bad: list = []
    done = [0] * 8
    barrier = threading.Barrier(8)

    def work(i):
        try:
            x, y = datas[i]
            exp = np.sqrt(x * x + y) - 1.5 * y
            barrier.wait()
            for _ in range(20):
                out = np.empty_like(x) if i % 2 else None
                r = k(x, y, out=out)
                if not np.allclose(r, exp, rtol=1e-15, atol=0):
                    bad.append(i)
                done[i] += 1
        except Exception as e:  # pragma: no cover
            bad.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == [] and done == [20] * 8


def test_set_num_threads():
    before = lazyk.get_num_threads()
    try:
        big = np.random.default_rng(6).random(1_000_003)
        for n in (1, 2, 3):
            lazyk.set_num_threads(n)
            assert lazyk.get_num_threads() == n
            assert abs(float(lazyk.array(big).sum().eval()) - big.sum()) < 1e-7
            assert np.array_equal(npv((lazyk.array(big) * 2 + 1).eval()), big * 2 + 1)
        for bad in (0, -1):
            with pytest.raises(ValueError, match=">= 1"):
                lazyk.set_num_threads(bad)
    finally:
        lazyk.set_num_threads(before)


# --- explain and cache CLI, in subprocesses --------------------------------------------------

def test_explain():
    x = lazyk.array(np.ones(4))
    text = (x + x * 2).explain()
    for part in ("graph as built", "LLVM IR", "assembly", "kernel data"):
        assert part in text
    r = run_cli("explain", "2*a + 3*b - c", "--type", "a=N * float64", "--type",
                "b=N * float64", "--type", "c=N * float64")
    assert r.returncode == 0
    for part in ("graph as built", "graph after fold_constants", "LLVM IR", "assembly",
                 "kernel data"):
        assert part in r.stdout
    r = run_cli("explain", "a + zz", "--type", "a=N * float64")
    assert r.returncode != 0 and "'zz'" in r.stderr and "column 5" in r.stderr
    r = run_cli("explain", "a + 1", "--type", "a")
    assert r.returncode != 0 and "NAME=TYPE" in r.stderr


def test_cache_cli_and_corrupt_entry(tmp_path):
    env = {"LAZYK_CACHE_DIR": str(tmp_path)}
    r = run_cli("cache", "info", env=env)
    assert r.returncode == 0 and "entries:   0" in r.stdout
    code = ("import lazyk, numpy as np; "
            "print((lazyk.array(np.arange(4.0)) * 11 + 5).eval().to_list())")
    r = run_py(code, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "[5.0, 16.0, 27.0, 38.0]"
    objs = list(tmp_path.glob("*.o"))
    assert len(objs) >= 1
    r = run_cli("cache", "info", env=env)
    assert f"entries:   {len(objs)}" in r.stdout
    for corrupt in (objs[0].read_bytes()[:100], b"garbage"):
        objs[0].write_bytes(corrupt)
        r = run_py(code, env=env)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "[5.0, 16.0, 27.0, 38.0]"
    r = run_cli("cache", "clear", env=env)
    assert r.returncode == 0
    assert list(tmp_path.glob("*.o")) == []
    assert "entries:   0" in run_cli("cache", "info", env=env).stdout


def test_risky_inputs_do_not_crash_the_process():
    r = run_py("""
        import numpy as np, lazyk
        out = []
        # overlapping, unaligned, byte-swapped, negative-stride mix, big enough for threads
        b = np.random.default_rng(7).standard_normal(500_001)
        buf = np.zeros(b.size * 8 + 1, np.uint8)
        u = buf[1:].view('>f8'); u[:] = b
        a = b.copy()
        lazyk.evaluate(lazyk.array(u[::-1]) + lazyk.array(a)[::-1], out=a)
        out.append(np.array_equal(a, b[::-1] * 2))
        x = lazyk.array(np.arange(5.0)); e = x
        for i in range(1000):
            e = e + 1.0
        out.append(np.asarray(e.eval()).tolist() == [1000.0, 1001.0, 1002.0, 1003.0, 1004.0])
        try:
            lazyk.evaluate("a" + "+a" * 3000, local_dict={"a": np.ones(2)})
            out.append(True)
        except ValueError as ex:
            out.append("deeper" in str(ex))
        try:
            lazyk.dshape("(" * 100000)
        except lazyk.TypeParseError:
            out.append(True)
        print(out)
    """)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "[True, True, True, True]"


def test_random_overlapping_views_equal_numpy():
    rng = np.random.default_rng(11)
    p, q = lazyk.placeholder("p", "N * float64"), lazyk.placeholder("q", "N * float64")
    k = lazyk.compile(p - q * 3)
    checked = 0
    for trial in range(240):
        n = int(rng.integers(4, 60))
        m = int(rng.integers(1, n // 2 + 1))
        a = rng.standard_normal(n)

        def view():
            step = int(rng.choice([1, 2, -1, -2, 3]))
            span = (m - 1) * abs(step) + 1
            if span > n:
                return None
            start = int(rng.integers(0, n - span + 1))
            if step > 0:
                return a[start:start + span:step]
            return a[start + span - 1:(start - 1 if start > 0 else None):step]
        o, x, y = view(), view(), view()
        if o is None or x is None or y is None:
            continue
        xe, ye = x.copy(), y.copy()
        kind = trial % 4
        if kind == 0:
            lazyk.evaluate(lazyk.array(x) * 2 + lazyk.array(y), out=o)
            exp = xe * 2 + ye
        elif kind == 1:
            lazyk.array(o)[...] = lazyk.sqrt(lazyk.abs(lazyk.array(x))) - lazyk.array(y)
            exp = np.sqrt(np.abs(xe)) - ye
        elif kind == 2:
            lazyk.evaluate("x*y + 1", local_dict={"x": x, "y": y}, out=o)
            exp = xe * ye + 1
        else:
            k(x, y, out=o)
            exp = xe - ye * 3
        assert np.array_equal(o, exp), (trial, o.strides, x.strides, y.strides)
        checked += 1
    assert checked > 150


def test_ragged_views_records_and_nested_rows():
    x = lazyk.array([[1.0, 2.0, 3.0], [4.0], [5.0, 6.0]])
    assert (x[:, ::-1] + x).eval().to_list() == [[4.0, 4.0, 4.0], [8.0], [11.0, 11.0]]
    assert (x[:, 1:] * 2).eval().to_list() == [[4.0, 6.0], [], [12.0]]
    assert x[::2].sum(axis=-1).eval().to_list() == [6.0, 11.0]
    bs = lazyk.array([[1, 2], [3]], type="2 * var * >int32")
    r = (bs + 1).eval()
    assert r.type is lazyk.dshape("2 * var * int32") and r.to_list() == [[2, 3], [4]]
    rec = lazyk.array([{"x": [1.0, 2.0], "y": 1}, {"x": [3.0], "y": 2}])
    assert rec.x.sum(axis=-1).eval().to_list() == [3.0, 3.0]
    assert (rec.x * 2).eval().to_list() == [[2.0, 4.0], [6.0]]
    n = lazyk.array([[[1.0], [2.0, 3.0]], [[4.0, 5.0], [6.0, 7.0, 8.0]]])
    s = n.sum(axis=-1)
    assert s.type is lazyk.dshape("2 * 2 * float64")
    assert s.eval().to_list() == [[1.0, 5.0], [9.0, 21.0]]
    with pytest.raises(lazyk.ShapeError, match="length 3.*length 2"):
        (n + np.array([1.0, 2.0])).eval()
    assert (lazyk.array([1.0, None, 3.0])[::-1] + 1).eval().to_list() == [4.0, None, 2.0]


def test_concurrent_building_and_compiling_from_8_threads():
    bad: list = []

    def work(i):
        try:
            rng = np.random.default_rng(i)
            for j in range(4):
                a, b = rng.standard_normal(50 + j), rng.standard_normal(50 + j)
                e = lazyk.array(a) * (i + 1) + lazyk.array(b) ** 2 - lazyk.sin(lazyk.array(a)) * j
                if not np.allclose(npv(e.eval()), a * (i + 1) + b ** 2 - np.sin(a) * j,
                                   rtol=1e-13):
                    bad.append((i, j))
                s = lazyk.evaluate(f"sum(a * {i} + b)", local_dict={"a": a, "b": b})
                if not np.isclose(float(s), (a * i + b).sum()):
                    bad.append(("sum", i, j))
        except Exception as e:  # pragma: no cover
            bad.append(repr(e))
    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []


def test_string_api_nep50_and_refusals():
    u = np.arange(3, dtype=np.uint8)  # noqa: F841  (read by lazyk.evaluate)
    r = lazyk.evaluate("u - 1")
    assert r.dtype == np.uint8 and r.tolist() == [255, 0, 1]
    with pytest.raises(OverflowError, match="-1 out of bounds for uint8"):
        lazyk.evaluate("u + -1")
    s = np.int64(-1)  # noqa: F841  (read by lazyk.evaluate)
    r = lazyk.evaluate("u + s")
    assert r.dtype == np.int64 and r.tolist() == [-1, 0, 1]
    r = lazyk.evaluate("1 + 2")
    assert r.shape == () and r.dtype == np.int64 and int(r) == 3
    for text, words, col in [("u < u < 3", "chained comparisons", 7),
                             ("u and u", "and is not supported", 3),
                             ("u.real", "unexpected character '.'", 2)]:
        with pytest.raises(ValueError) as info:
            lazyk.evaluate(text)
        assert words in str(info.value) and info.value.column == col, text
    with pytest.raises(lazyk.NotSupportedError, match=r"contains\(\) is not supported"):
        lazyk.evaluate('contains(u, "a")')
    with pytest.raises(ValueError, match="casting must be one of"):
        lazyk.evaluate("u * 2", out=np.zeros(3, np.int64), casting="bogus")
    with pytest.raises(lazyk.CastingError, match="casting='no'"):
        lazyk.evaluate("u * 2.0", out=np.zeros(3, np.float32), casting="no")


def test_large_fresh_outputs_stay_valid_after_reuse():
    n = 1_000_000
    k = lazyk.compile(lazyk.placeholder("p", "N * float64") * 2)
    x = np.arange(float(n))
    r1 = k(x)
    v = r1[10:13]
    del r1
    k(x + 1)
    k(x + 2)
    s = (lazyk.array(x) * 3).eval()
    t = s.to_numpy()[:3]
    del s
    (lazyk.array(x) * 5).eval()
    assert v.tolist() == [20.0, 22.0, 24.0] and t.tolist() == [0.0, 3.0, 6.0]

"""Scalar constants are kernel parameters: a new value is a new bind, never a new compile.

Values are compared with NumPy (dtypes by NEP 50), and the compile counter of the kernel
cache (`lazyk.kernel.flat.cache_info()["compiles"]`) must not move after the first value.
"""
import numpy as np
import pytest

import lazyk
from lazyk.kernel import flat as kernel
from lazyk.runtime.launch import plan


def _compiles() -> int:
    return kernel.cache_info()["compiles"]


def test_evaluate_string_with_a_new_float_each_call_compiles_once():
    a = np.linspace(-3, 3, 257)
    values = np.random.default_rng(0).standard_normal(1000)
    s = float(values[0])
    lazyk.evaluate("a*s")
    before = _compiles()
    for v in values:
        s = float(v)
        r = lazyk.evaluate("a*s")
        np.testing.assert_array_equal(r, a * s)
        assert r.dtype == np.float64 and r.shape == a.shape
    assert _compiles() == before


def test_expr_with_a_new_constant_each_time_compiles_once():
    x = np.arange(100.0)
    lx = lazyk.array(x)
    (lx * 0.5 + 1).eval()
    before = _compiles()
    for s in np.linspace(-2, 2, 1000)[::3]:
        s = float(s)
        r = (lx * s + 1).eval().to_numpy()
        np.testing.assert_array_equal(r, x * s + 1)
    assert _compiles() == before


def test_lazyk_compile_with_different_constants_compiles_once():
    x = lazyk.placeholder("x", "N * float32")
    data = np.arange(50, dtype=np.float32)
    lazyk.compile(x * 1.5 - 2)(data)
    before = _compiles()
    for s in np.linspace(0, 9, 300):
        s = float(s)
        f = lazyk.compile(x * s - 2)
        r = f(data)
        want = data * s - 2
        assert r.dtype == want.dtype == np.float32
        np.testing.assert_array_equal(r, want)
        np.testing.assert_array_equal(f(data, out=np.empty_like(data)), want)
    assert _compiles() == before


def test_spec_never_holds_a_constant_value():
    a = lazyk.array(np.arange(4.0))
    s1 = plan((a * 2.5 + 7).node).steps[0]
    s2 = plan((a * -1e300 + 0.25).node).steps[0]
    assert s1.spec is s2.spec  # one interned spec: the launch caches key on it
    assert [i.op for i in s1.spec.body].count("param") == 2
    assert "2.5" not in repr(s1.spec) and "7" not in repr(s1.spec.body)
    assert s1.consts != s2.consts and len(s1.consts) == 2 * kernel.PARAM_SLOT


def test_small_integer_exponents_are_baked_others_are_parameters():
    a = np.linspace(0.1, 3, 33)
    la = lazyk.array(a)
    for p, baked in [(2, True), (2.0, True), (-1, True), (0.5, None), (3, True),
                     (2.7, False), (100.0, False)]:
        step = plan((la ** p).node).steps[0]
        ops = [i.op for i in step.spec.body]
        if baked is None:  # x ** 0.5: NumPy's square root
            assert ops == ["load", "sqrt"], ops
        else:
            assert ("const" in ops) == baked and ("param" in ops) == (not baked), (p, ops)
        np.testing.assert_allclose((la ** p).eval().to_numpy(), a ** p, rtol=1e-15)
    i = np.arange(-5, 6, dtype=np.int32)
    for p in (0, 1, 2, 3, 7, 20, 31):
        r = lazyk.evaluate("i**p")
        np.testing.assert_array_equal(r, i ** p)
        assert r.dtype == (i ** p).dtype


@pytest.mark.parametrize("dt", ["f2", "f4", "f8", "c8", "c16", "i1", "u2", "i8", "u8", "?"])
def test_parameter_values_of_every_dtype(dt):
    a = (np.arange(1, 20) % 7).astype(dt)
    for v in (np.array(3).astype(dt)[()], np.array(1).astype(dt)[()]):
        want = np.add(a, v)
        got = lazyk.evaluate("a + v")
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    if dt[0] in "fc":
        s = (1.25 - 0.5j) if dt[0] == "c" else -1.75
        want = a * s
        got = lazyk.evaluate("a * s")
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_nep50_weak_and_strong_scalars_unchanged():
    f32 = np.arange(8, dtype=np.float32)
    for s in (0.1, 1e-3, 3.0):
        r = lazyk.evaluate("f32 * s")
        assert r.dtype == np.float32
        np.testing.assert_array_equal(r, f32 * s)
    s = np.float64(0.1)  # strong
    r = lazyk.evaluate("f32 * s")
    assert r.dtype == np.float64
    np.testing.assert_array_equal(r, f32 * s)
    i8 = np.arange(8, dtype=np.int8)
    with pytest.raises(OverflowError):
        lazyk.evaluate("i8 + 300")
    big = 300  # noqa: F841 - read by name from this frame
    with pytest.raises(OverflowError):
        lazyk.evaluate("i8 + big")
    r = lazyk.evaluate("i8 + big", local_dict={"i8": i8, "big": np.int64(300)})
    assert r.dtype == np.int64
    np.testing.assert_array_equal(r, i8 + np.int64(300))
    for k in (5, 100, 127, -128):
        r = lazyk.evaluate("i8 + k")
        assert r.dtype == np.int8
        np.testing.assert_array_equal(r, i8 + k)
        np.testing.assert_array_equal(lazyk.evaluate("i8 > k"), i8 > k)
    np.testing.assert_array_equal(lazyk.evaluate("i8 < 1000"), i8 < 1000)


def test_constants_in_reductions_where_threads_and_strided_layouts():
    a = np.random.default_rng(1).standard_normal(300_001)  # threaded sizes
    m = np.random.default_rng(2).standard_normal((40, 30))[:, ::2]
    before = None
    for s in (0.5, -2.25, 3.125):
        np.testing.assert_allclose(lazyk.evaluate("sum(a*s)"), np.sum(a * s), rtol=1e-9)
        np.testing.assert_array_equal(lazyk.evaluate("a*s + 1"), a * s + 1)
        np.testing.assert_array_equal(lazyk.evaluate("where(m > 0, m, s)"),
                                      np.where(m > 0, m, s))
        np.testing.assert_allclose(lazyk.evaluate("sum(m*s, axis=1)"), np.sum(m * s, axis=1),
                                   rtol=1e-12)
        x = lazyk.placeholder("x", "N * float64")
        f = lazyk.compile(x * s + 1)
        for _ in range(3):  # repeated calls take the native guard / pool record
            np.testing.assert_array_equal(f(a), a * s + 1)
            out = np.empty_like(a)
            f(a, out=out)
            np.testing.assert_array_equal(out, a * s + 1)
        if before is None:
            before = _compiles()
    assert _compiles() == before


def test_ragged_nest_kernel_takes_parameters():
    from lazyk.kernel import nest as nest_kernel

    r = lazyk.array([[1.0, 2.0, 3.0], [4.0], []])
    rows = [[1.0, 2.0, 3.0], [4.0], []]
    (r * 9.0 + 1).sum(axis=-1).eval()
    before = nest_kernel.nest_stats["compiles"]
    for s in (2.5, -1.0, 0.125):
        got = (r * s + 1).sum(axis=-1).eval()
        want = [sum(v * s + 1 for v in row) for row in rows]
        np.testing.assert_array_equal(np.asarray(got.to_numpy()), want)
    assert nest_kernel.nest_stats["compiles"] == before


def test_bind_and_dispatcher_take_parameter_bytes():
    from lazyk.kernel.dispatch import Dispatcher
    from lazyk.kernel.flat import bind, pack_params

    step = plan((lazyk.array(np.ones(3)) * 4.0).node).steps[0]
    spec = step.spec
    a, out = np.arange(6.0), np.empty(6)
    with bind(spec, out, a, params=pack_params(spec.params, (-3.0,))) as ck:
        ck()
    np.testing.assert_array_equal(out, a * -3.0)
    d = Dispatcher(spec, pack_params(spec.params, (0.5,)))
    for _ in range(3):
        np.testing.assert_array_equal(d(np.empty(6), a), a * 0.5)
    for v in (2.0, -7.5, 2.0):  # other values: private copies of guard and kernel data
        np.testing.assert_array_equal(
            d.call_with(pack_params(spec.params, (v,)), np.empty(6), a), a * v)
    np.testing.assert_array_equal(d(np.empty(6), a), a * 0.5)  # its own values unchanged
    with pytest.raises(lazyk.BindError, match="parameters"):
        bind(spec, out, a)  # the spec reads one parameter: its bytes are required
    with pytest.raises(lazyk.BindError, match="parameters"):
        pack_params(spec.params, ())
    bad = lazyk.KernelSpec(spec.inputs, spec.aligned, (
        lazyk.Instr("load", np.dtype("f8"), (), 0), lazyk.Instr("param", np.dtype("f8"), (), 3),
        lazyk.Instr("multiply", np.dtype("f8"), (0, 1))), spec.outputs)
    with pytest.raises(ValueError, match="parameter"):
        bad.check()

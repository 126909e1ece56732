"""Compiled reductions on the fast path: `f = lazyk.compile(lazyk.sum(a * b))`.

A repeated small call is one native guard call; threaded sizes combine per-thread partials;
every case agrees with NumPy in value, dtype and shape, and bad outputs are refused as before.
"""
import numpy as np
import pytest

import lazyk
from lazyk.kernel import flat as _kernel


def _ph(name, t="N * float64"):
    return lazyk.placeholder(name, t)


def _forbid_general_path(monkeypatch):
    import lazyk.runtime.compiled as c

    def boom(*a, **k):
        raise AssertionError("repeated call left the fast path")

    monkeypatch.setattr(c, "run_program", boom)
    monkeypatch.setattr(_kernel, "compile", boom)


@pytest.mark.parametrize("n", [1, 7, 1000, 5000, 70_000, 300_000])
@pytest.mark.parametrize("threads", [1, 2])
def test_sum_of_product_matches_numpy(n, threads, monkeypatch):
    old = lazyk.get_num_threads()
    lazyk.set_num_threads(threads)
    try:
        f = lazyk.compile(lazyk.sum(_ph("a") * _ph("b")))
        rng = np.random.default_rng(n)
        a, b = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
        first = f(a, b)
        _forbid_general_path(monkeypatch)
        again = f(a, b)
        a2, b2 = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
        other = f(a2, b2)  # same geometry, new data
    finally:
        lazyk.set_num_threads(old)
    for got, x, y in ((first, a, b), (again, a, b), (other, a2, b2)):
        assert isinstance(got, np.ndarray) and got.shape == () and got.dtype == np.float64
        np.testing.assert_allclose(got, np.sum(x * y), rtol=1e-12, atol=1e-12 * n)


def test_small_repeat_is_one_guard_call():
    f = lazyk.compile(lazyk.sum(_ph("a") * _ph("b")))
    a, b = np.arange(100.0), np.ones(100)
    f(a, b)
    assert f._g_new is not None  # the next call is one foreign call
    assert f(a, b) == 4950.0
    out = np.empty(())
    f(a, b, out=out)
    assert f._g_out is not None
    out[...] = -1
    assert f(a, b, out=out) is out and out == 4950.0


@pytest.mark.parametrize("op,dtype", [("sum", "int32"), ("max", "float32"), ("min", "int64"),
                                      ("prod", "float64"), ("sum", "uint8")])
def test_other_ops_and_dtypes(op, dtype):
    x = _ph("x", f"N * {dtype}")
    f = lazyk.compile(getattr(lazyk, op)(x + x))
    rng = np.random.default_rng(0)
    for n in (5, 3000, 100_000):
        v = (rng.integers(1, 3, n) if op == "prod" else rng.integers(-50, 50, n)).astype(dtype)
        if op == "prod":
            v = v[:40]
        want = getattr(np, op)(v + v)
        for _ in range(2):
            got = f(v)
            assert got.dtype == want.dtype and got.shape == ()
            np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("axis,keepdims", [(0, False), (1, False), (1, True), ((0, 1), True)])
def test_axis_reductions(axis, keepdims):
    a, b = _ph("a", "M * N * float64"), _ph("b", "M * N * float64")
    f = lazyk.compile(lazyk.sum(a * b, axis=axis, keepdims=keepdims))
    rng = np.random.default_rng(1)
    for shape in ((3, 4), (300, 50), (3, 4)):
        x, y = rng.random(shape), rng.random(shape)
        want = np.sum(x * y, axis=axis, keepdims=keepdims)
        for _ in range(2):
            got = f(x, y)
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-12)
        out = np.full(want.shape, np.nan)
        assert f(x, y, out=out) is out
        np.testing.assert_allclose(out, want, rtol=1e-12)


def test_strided_and_broadcast_inputs():
    f = lazyk.compile(lazyk.sum(_ph("a") * _ph("b")))
    x = np.arange(2000.0)
    for a, b in ((x[::2], x[1::2]), (x[::-2], x[::2]), (x[:1000], np.float64(3.0) + 0 * x[:1000])):
        for _ in range(2):
            np.testing.assert_allclose(f(a, b), np.sum(a * b))


def test_mean_and_empty_stay_correct():
    f = lazyk.compile(lazyk.mean(_ph("a") * 2.0))
    assert f(np.arange(10.0)) == 9.0
    g = lazyk.compile(lazyk.sum(_ph("a") * 2.0))
    for _ in range(2):
        assert g(np.empty(0)) == 0.0
    h = lazyk.compile(lazyk.max(_ph("a") * 2.0))
    with pytest.raises(ValueError):
        h(np.empty(0))


def test_bad_outputs_are_refused():
    f = lazyk.compile(lazyk.sum(_ph("a", "M * N * float64"), axis=1))
    x = np.ones((4, 5))
    f(x)
    with pytest.raises(Exception, match="shape|broadcast"):
        f(x, out=np.empty(5))
    ro = np.empty(4)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only|writ"):
        f(x, out=ro)


def test_output_overlapping_an_input_is_not_clobbered():
    """The kernel writes the identity into its output first: an output that is (part of) an
    input must go through a temporary, never the guard."""
    a = _ph("a", "M * N * float64")
    f = lazyk.compile(lazyk.sum(a, axis=1, keepdims=True))
    for _ in range(3):
        x = np.arange(12.0).reshape(4, 3)
        want = x.sum(axis=1, keepdims=True)
        f(x, out=x[:, :1])
        np.testing.assert_array_equal(x[:, :1], want)
    g = lazyk.compile(lazyk.sum(a, axis=1, keepdims=True))
    for _ in range(3):
        y = np.arange(4.0).reshape(4, 1)
        want = y.copy()
        g(y, out=y)  # exact alias: reducing a length-1 axis
        np.testing.assert_array_equal(y, want)

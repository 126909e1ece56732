"""Repeated threaded calls of a compiled expression: one record per geometry.

A repeat call with the geometry of an earlier one must not plan again (no layout, no bind,
no run_layout) and must still give NumPy's answer for every layout; the overlap and
read-only checks still apply.
"""
import numpy as np
import pytest

import lazyk
from lazyk.kernel import flat as _kernel
from lazyk.runtime import fast_calls
from lazyk.runtime.launch import THREAD_MIN

N = 4 * THREAD_MIN  # above the threading threshold


@pytest.fixture(autouse=True)
def two_threads():
    old = lazyk.get_num_threads()
    lazyk.set_num_threads(2)
    yield
    lazyk.set_num_threads(old)


def _ph(name, text="N * float64"):
    return lazyk.placeholder(name, text)


def _boom(*a, **k):
    raise AssertionError("planning function called on a repeated threaded call")


def test_repeat_call_does_not_plan(monkeypatch):
    rng = np.random.default_rng(1)
    f = lazyk.compile(2 * _ph("a") + 3 * _ph("b") - _ph("c"))
    a, b, c = (rng.random(N) for _ in range(3))
    o = np.empty(N)
    f(a, b, c, out=o)
    f(a, b, c)
    assert f._threaded, "no threaded record was cached"
    f(a, b, c, out=o)  # second call: the record runs, and a native guard is installed
    f(a, b, c)
    assert f._t_out is not None and f._t_new is not None
    monkeypatch.setattr(type(f), "_call_fast", _boom)
    for name in ("run_layout", "prepare", "broadcast_strides", "threaded_run"):
        monkeypatch.setattr(fast_calls, name, _boom)
    for name in ("run_layout", "bind", "plan"):
        monkeypatch.setattr(_kernel, name, _boom)
    monkeypatch.setattr(_kernel.BoundKernel, "__init__", _boom)
    a2, b2, c2 = (rng.random(N) for _ in range(3))  # new data, same geometry
    want = 2 * a2 + 3 * b2 - c2
    assert f(a2, b2, c2, out=o) is o
    np.testing.assert_allclose(o, want, rtol=1e-15)
    np.testing.assert_allclose(f(a2, b2, c2), want, rtol=1e-15)


def _layouts(rng):
    m = N // 256
    yield "contiguous", (rng.random(N), rng.random(N)), None
    yield "strided", (rng.random(2 * N)[::2], rng.random(3 * N)[::3]), None
    yield "reversed", (rng.random(N)[::-1], rng.random(N)), None
    yield "out strided", (rng.random(N), rng.random(N)), np.empty(2 * N)[::2]
    yield "2-D C", (rng.random((m, 256)), rng.random((m, 256))), None
    yield "2-D transposed", (rng.random((256, m)).T, rng.random((m, 256))), None
    yield "2-D out Fortran", (rng.random((m, 256)), rng.random((m, 256))), \
        np.empty((m, 256), order="F")
    yield "broadcast row", (rng.random((m, 256)), rng.random(256)), None
    yield "broadcast col", (rng.random((m, 256)), rng.random((m, 1))), None


def test_layouts_match_numpy():
    rng = np.random.default_rng(2)
    for name, (x, y), out in _layouts(rng):
        tx = " * ".join(["N"] + [str(s) for s in x.shape[1:]] + ["float64"])
        ty = " * ".join((["N"] if y.ndim == x.ndim else [])
                        + [str(s) for s in y.shape[(1 if y.ndim == x.ndim else 0):]]
                        + ["float64"])
        f = lazyk.compile(_ph("x", tx) * 2.0 + _ph("y", ty))
        for _ in range(4):  # first call plans, then the cached record, then the guard
            x[...] = rng.random(x.shape)
            y[...] = rng.random(y.shape)
            want = x * 2.0 + y
            np.testing.assert_array_equal(f(x, y), want, err_msg=name)
            o = np.empty(want.shape) if out is None else out
            assert f(x, y, out=o) is o
            np.testing.assert_array_equal(o, want, err_msg=name)


def test_in_place_and_partial_overlap():
    rng = np.random.default_rng(3)
    f = lazyk.compile(_ph("a") + _ph("b"))
    a, b = rng.random(N), rng.random(N)
    for _ in range(3):
        want = a + b
        f(a, b, out=a)  # exact aliasing is allowed
        np.testing.assert_array_equal(a, want)
    buf = rng.random(N + 1)
    b = rng.random(N)
    for _ in range(3):  # same geometry as the overlapping call below (guard installed)
        f(buf[1:].copy(), b, out=buf[:N])
    buf = rng.random(N + 1)
    want = buf[1:] + b
    f(buf[1:], b, out=buf[:N])  # partial overlap: must not race in place
    np.testing.assert_array_equal(buf[:N], want)


def test_read_only_out_still_refused():
    f = lazyk.compile(_ph("a") + _ph("b"))
    a, b = np.ones(N), np.ones(N)
    o = np.empty(N)
    for _ in range(3):
        f(a, b, out=o)
    o.flags.writeable = False
    with pytest.raises(Exception):
        f(a, b, out=o)


def test_thread_count_changes_between_calls():
    rng = np.random.default_rng(4)
    f = lazyk.compile(_ph("a") - _ph("b"))
    a, b = rng.random(N), rng.random(N)
    for n in (2, 1, 2, 1, 2):
        lazyk.set_num_threads(n)
        for _ in range(2):
            a[:] = rng.random(N)
            np.testing.assert_array_equal(f(a, b), a - b)


def test_concurrent_callers():
    import threading

    rng = np.random.default_rng(5)
    f = lazyk.compile(_ph("a") * _ph("b"))
    data = [(rng.random(N), rng.random(N)) for _ in range(4)]
    errors = []

    def work(a, b):
        o = np.empty(N)
        for _ in range(30):
            if not np.array_equal(f(a, b, out=o), a * b) or not np.array_equal(f(a, b), a * b):
                errors.append("mismatch")

    ts = [threading.Thread(target=work, args=d) for d in data]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def test_one_thread_repeat_call_does_not_plan(monkeypatch):
    # After set_num_threads(1) a large repeated call is still one guard call + one foreign
    # call (it went through run_layout's Python path: ~10 us at n = 1e5).
    rng = np.random.default_rng(6)
    f = lazyk.compile(_ph("a") + _ph("b"))
    a, b = rng.random(N), rng.random(N)
    o = np.empty(N)
    for _ in range(2):
        f(a, b, out=o)
        f(a, b)
    assert f._t_new is not None  # 2-thread records and native guards exist now
    lazyk.set_num_threads(1)
    for _ in range(3):
        f(a, b, out=o)
        f(a, b)
    allocations = []
    real_empty = fast_calls.empty_out  # (the compiled call's `fresh_out` calls it)
    monkeypatch.setattr(fast_calls, "empty_out",
                        lambda *s: allocations.append(s) or real_empty(*s))
    monkeypatch.setattr(fast_calls, "run_layout", _boom)
    monkeypatch.setattr(fast_calls, "threaded_run", _boom)
    for name in ("run_layout", "bind", "plan"):
        monkeypatch.setattr(_kernel, name, _boom)
    a2, b2 = rng.random(N), rng.random(N)
    assert f(a2, b2, out=o) is o
    np.testing.assert_array_equal(o, a2 + b2)
    np.testing.assert_array_equal(f(a2, b2), a2 + b2)
    # One output per fresh call: a dropped second one made glibc fault new pages every call.
    assert len(allocations) == 1, allocations

"""Compiled expressions called again: the native-guard fast path.

Structural, not timing: a repeated call must not re-enter the passes, fusion, the kernel
compiler or LLVM, and every check of the slow path (dtype, shape, read-only, overlap) must
still hold when the geometry matches a previous call.
"""
from __future__ import annotations

import numpy as np
import pytest

import lazyk
from lazyk.errors import CastingError, TypeMatchError
from lazyk.kernel import dispatch
from lazyk.kernel import flat as kernel
from lazyk.runtime import compiled, fast_calls
from lazyk.runtime import launch as runtime


def _f(text="x + y"):
    x = lazyk.placeholder("x", "N * float64")
    y = lazyk.placeholder("y", "N * float64")
    return lazyk.compile(eval(text, {"x": x, "y": y}))


def _forbid(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("repeated call re-entered planning or LLVM")

    monkeypatch.setattr(runtime, "run_passes", boom)
    monkeypatch.setattr(runtime, "plan", boom)
    monkeypatch.setattr(compiled, "plan", boom)
    monkeypatch.setattr(kernel, "compile", boom)
    monkeypatch.setattr(kernel, "CompiledKernel", boom)
    from lazyk.backend import cpu

    monkeypatch.setattr(cpu, "JITModule", boom)
    monkeypatch.setattr(kernel, "JITModule", boom)
    monkeypatch.setattr(runtime, "prepare", boom)
    monkeypatch.setattr(fast_calls, "prepare", boom)


@pytest.mark.parametrize("n", [1, 7, 1000])
def test_repeated_call_no_passes_no_llvm(monkeypatch, n):
    f = _f("x * 2.0 + y")
    a, b, o = np.arange(n, dtype=float), np.ones(n), np.empty(n)
    f(a, b, out=o)
    f(a, b)
    _forbid(monkeypatch)
    a2, b2, o2 = np.arange(n, dtype=float) + 1, np.full(n, 3.0), np.empty(n)
    assert f(a2, b2, out=o2) is o2
    np.testing.assert_array_equal(o2, a2 * 2 + b2)
    np.testing.assert_array_equal(f(a2, b2), a2 * 2 + b2)


def test_guard_installed_and_used():
    f = _f("x - y")  # non-commutative: the kernel's input order matters
    a, b, o = np.array([5.0]), np.array([2.0]), np.empty(1)
    f(a, b, out=o)
    if f._gfn is None:
        pytest.skip("no native guard on this NumPy layout")
    assert f._g_out is not None
    for k in range(5):
        a[0], b[0] = k, 10 * k
        assert f(a, b, out=o) is o and o[0] == k - 10 * k
        assert f(b, a)[0] == 10 * k - k


def test_fast_path_keeps_checks():
    f = _f()
    a, b, o = np.ones(3), np.ones(3), np.empty(3)
    f(a, b, out=o)
    f(a, b)
    # Other numeric dtypes are cast under casting= ('same_kind'): float32 / int64 in, not complex.
    want = f(a, b)
    np.testing.assert_array_equal(f(a.astype(np.float32), b, out=o), want)
    np.testing.assert_array_equal(f(a, b.astype(np.int64)), want)
    with pytest.raises(CastingError, match="complex128.*float64"):
        f(a, b.astype(np.complex128))
    with pytest.raises(TypeMatchError):
        f(a, b[None])
    ro = np.empty(3)
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        f(a, b, out=ro)
    with pytest.raises(Exception):
        f(a, np.ones(4), out=o)
    with pytest.raises(TypeError):
        f(a, out=o)
    # other array types still go through the slow path
    np.testing.assert_array_equal(f(lazyk.array(a), b), a + b)
    # the same geometry again after the errors
    a[:] = [1, 2, 3]
    np.testing.assert_array_equal(f(a, b, out=o), [2, 3, 4])


def test_fast_path_overlap():
    f = _f("x + 2.0 * y")
    buf = np.arange(10.0)
    a, b, o = np.arange(4.0), np.arange(4.0) * 10, np.empty(4)
    f(a, b, out=o)  # guard for (4,) contiguous float64
    # exact aliasing is allowed (elementwise in place)
    x = np.arange(4.0)
    f(x, b, out=x)
    np.testing.assert_array_equal(x, np.arange(4.0) + 2 * b)
    # partial overlap with the same geometry must equal NumPy (through a temporary)
    for shift in (1, -1, 2):
        buf = np.arange(10.0)
        src = buf[3:7]
        dst = buf[3 + shift:7 + shift]
        want = src + 2.0 * b
        assert f(src, b, out=dst) is dst
        np.testing.assert_array_equal(dst, want)
    # output aliasing the second input, exactly
    y = np.arange(4.0)
    want = a + 2.0 * y
    f(a, y, out=y)
    np.testing.assert_array_equal(y, want)


def test_fast_path_geometry_changes():
    f = _f()
    for n in (1, 5, 1, 5):
        a, b = np.arange(n, dtype=float), np.ones(n)
        np.testing.assert_array_equal(f(a, b), a + 1)
    a = np.arange(12.0).reshape(3, 4)
    g = lazyk.compile(lazyk.placeholder("x", "M * N * float64")
                      + lazyk.placeholder("y", "M * N * float64"))
    for arr in (a, a.T, a[:, ::2], a, a[::-1]):
        np.testing.assert_array_equal(g(arr, arr), arr + arr)
        o = np.empty_like(arr)
        np.testing.assert_array_equal(g(arr, arr, out=o), arr + arr)
    # byte-swapped and unaligned inputs take the slow path
    sw = a.astype(">f8")
    np.testing.assert_array_equal(g(sw, a), a + a)
    raw = np.zeros(12 * 8 + 1, np.uint8)[1:].view(np.float64).reshape(3, 4)
    raw[...] = a
    np.testing.assert_array_equal(g(raw, a), a + a)


# ---------------------------------------------------------------- deterministic specs (#5)
def _fresh_state():
    """Forget plans and per-geometry launches (as a new process would), keep the kernels."""
    runtime.plans.clear()


@pytest.mark.parametrize("build", [
    lambda a, b: a * 2.0,
    lambda a, b: 2.0 * a + b * a,
    lambda a, b: lazyk.sin(a) * b + (a + b) * (b + a),
    lambda a, b: (a * b).sum(),
    lambda a, b: lazyk.where(a > b, a - b, b * 3.0),
])
def test_same_expression_same_spec_and_cache_hit(build):
    from lazyk.frontend.expr import as_expr

    x, y = np.arange(1.0, 6.0), np.linspace(-1, 1, 5)
    specs = []
    for k in range(6):  # fresh leaves each time: `_17`, `_23`, ... (names must not matter)
        _fresh_state()
        before = dict(kernel.cache_info())
        f = lazyk.compile(build(as_expr(x), as_expr(y)))
        specs.append(tuple(s.spec for s in f.program.steps))
        np.testing.assert_allclose(f(*(x, y)[:len(f.params)]), np.asarray(build(x, y)),
                                   rtol=1e-12)
        after = kernel.cache_info()
        if k:
            assert after["compiles"] == before["compiles"], "rebuilt expression recompiled"
            assert after["hits"] > before["hits"]
    assert all(s == specs[0] for s in specs)
    assert len({repr(s) for s in specs}) == 1  # the disk-cache key text too


def test_spec_independent_of_leaf_names():
    def spec(names):
        a = lazyk.placeholder(names[0], "N * float64")
        b = lazyk.placeholder(names[1], "N * float64")
        return lazyk.compile(a * 2.0 + b * a + 1.0).program.steps[0].spec

    got = {spec(n) for n in [("a", "b"), ("zz", "aa"), ("x9", "x10"), ("m", "n")]}
    assert len(got) == 1


def test_mid_size_guard_releases_the_gil():
    """Mid-size kernels take the guard entry that releases the GIL; small ones the one that
    keeps it (cheaper); threaded sizes none (the pool releases it)."""
    import ctypes

    f = _f()
    for n in (fast_calls._GUARD_MAX, fast_calls._GUARD_MAX + 1):
        a, b, o = np.ones(n), np.arange(n, dtype=np.float64), np.empty(n)
        f(a, b, out=o)
        g = f._g_out
        assert g is not None
        nogil = not (g[1]._flags_ & ctypes._FUNCFLAG_PYTHONAPI)
        assert nogil == (n > fast_calls._GUARD_MAX)
        o[:] = 0
        np.testing.assert_array_equal(f(a, b, out=o), a + b)


def test_one_guard_module_for_every_operand_count():
    # Every operand count's guard entry lives in one module compiled once per process (a
    # module per count cost 40-76 ms each, more than the kernel it guarded).
    from lazyk.kernel import abi

    fns = [dispatch.guard_fn(n) for n in (2, 3, 5, abi.GUARD_MAXOPS)]
    assert all(f is not None for f in fns)
    jits = [v for k, v in dispatch._guards.items() if k == "jit"]
    assert len(jits) == 1 and set(jits[0].addresses) == {
        abi.guard_name(n) for n in range(1, abi.GUARD_MAXOPS + 1)} | {abi.GUARD_ANY}
    # (more operands: the entry over an array of them, in the same module)
    assert dispatch.guard_fn(abi.GUARD_MAXOPS + 1) is not None and len(jits) == 1


@pytest.mark.parametrize("nin", [1, 4, 11, 12, 20])
def test_guarded_calls_any_operand_count(nin):
    # 11 inputs + out: an entry point of their own; more: the entry over an array of them
    rng = np.random.default_rng(nin)
    ps = [lazyk.placeholder(f"x{k}", "N * float64") for k in range(nin)]
    e = 1.5 * ps[0]
    for k, p in enumerate(ps[1:]):
        e = e + (k + 2) * p
    f = lazyk.compile(e)
    xs = [rng.random(100) for _ in range(nin)]
    want = 1.5 * xs[0] + sum((k + 2) * x for k, x in enumerate(xs[1:]))
    o = np.empty(100)
    for _ in range(3):  # the second call installs the guard, the third runs through it
        np.testing.assert_allclose(f(*xs, out=o), want, rtol=1e-13)
        np.testing.assert_allclose(f(*xs), want, rtol=1e-13)
    assert f._g_out is not None
    # the guard still refuses a wrong geometry: falls back to the checked path
    with pytest.raises(Exception):
        f(*xs[:-1], rng.random(99), out=o)


def test_a_fresh_result_over_fortran_inputs_is_fortran_ordered_as_evaluates():
    """Over Fortran-ordered inputs (a transposed C array) a compiled call's new result is in
    Fortran order, as `evaluate`'s order 'K' and NumPy's: written in the inputs' memory
    order (C order made it a transposing loop, 10-27x NumPy), on every path (the first
    bind, the native guard, threaded sizes)."""
    rng = np.random.default_rng(0)
    p = [lazyk.placeholder(n, "N * M * float32") for n in "abc"]
    f = lazyk.compile(p[0] * p[1] + p[2])
    for shape in ((30, 20), (600, 500)):  # (the second: threaded sizes)
        xs = [rng.random(shape).astype(np.float32).T for _ in range(3)]
        for _ in range(3):  # (bind, then the guard's calls)
            got = f(*xs)
            assert got.flags.f_contiguous and not got.flags.c_contiguous
            np.testing.assert_array_equal(got, xs[0] * xs[1] + xs[2])
        cs = [np.ascontiguousarray(x) for x in xs]
        for ins in (cs, [xs[0], cs[1], xs[2]]):  # C or mixed: C order, as NumPy's 'K'
            got = f(*ins)
            assert got.flags.c_contiguous
            np.testing.assert_array_equal(got, ins[0] * ins[1] + ins[2])
    g = lazyk.compile(lazyk.sum(p[0] * p[1], axis=0))
    x = rng.random((50, 40)).astype(np.float32).T
    np.testing.assert_allclose(g(x, x), np.sum(x * x, axis=0), rtol=1e-5)

"""Repeated `lazyk.evaluate(string)`: the planned program is reused (no graph is built) and
every result is still NumPy's (values, dtypes, shapes, out= semantics, errors).
"""
import numpy as np
import pytest

import lazyk
from lazyk.frontend import exprparse
from lazyk.kernel import flat as kernel


@pytest.fixture
def builds(monkeypatch):
    """Counts the strings run through the general path (graph built and planned)."""
    from lazyk.runtime import launch as runtime

    count = [0]
    real = runtime.evaluate

    def counting(expr, *args, **kwargs):
        count[0] += not isinstance(expr, str)
        return real(expr, *args, **kwargs)
    monkeypatch.setattr(runtime, "evaluate", counting)
    return count


def _rng(seed=0):
    return np.random.default_rng(seed)


CASES = [
    ("2*a + 3*b - c", lambda a, b, c: 2 * a + 3 * b - c),
    ("sin(a) * exp(-b)", lambda a, b, c: np.sin(a) * np.exp(-b)),
    ("where(a > b, a, c) + 1", lambda a, b, c: np.where(a > b, a, c) + 1),
    ("sum(a * b)", lambda a, b, c: np.sum(a * b)),
    ("sum(a * b, axis=0) + 1", lambda a, b, c: np.sum(a * b, axis=0) + 1),
    ("a**2 + b**0.5", lambda a, b, c: a ** 2 + np.abs(b) ** 0.5),
    ("max(a - b)", lambda a, b, c: np.max(a - b)),
    ("mean(a) + prod(b > -9)", lambda a, b, c: np.mean(a) + np.prod(b > -9)),
]


@pytest.mark.parametrize("text,ref", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("shape", [(7,), (3, 5), (300_001,)], ids=["1d", "2d", "threaded"])
def test_repeated_strings_match_numpy_without_rebuilding(text, ref, shape, builds):
    if "0.5" in text:
        text = "a**2 + abs(b)**0.5"
    for k in range(4):
        rng = _rng(k)
        a, b, c = (rng.standard_normal(shape) for _ in range(3))
        want = ref(a, b, c)
        got = lazyk.evaluate(text)
        assert np.asarray(got).dtype == np.asarray(want).dtype
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        again = lazyk.re_evaluate()
        np.testing.assert_allclose(again, want, rtol=1e-12, atol=1e-12)
    assert builds[0] <= 2  # planned once: at most the first two calls run the general path


def test_new_sizes_dtypes_and_layouts_stay_correct(builds):
    for shape in [(5,), (9,), (1,), (0,), (4, 3), (4, 1), (1, 3)]:
        a = _rng(1).standard_normal(shape)
        b = _rng(2).standard_normal(shape[-1:])
        for _ in range(2):
            np.testing.assert_array_equal(lazyk.evaluate("a * b - 1"), a * b - 1)
    for n in (0, 3, 0, 5):
        e = np.arange(float(n))
        for _ in range(2):
            np.testing.assert_array_equal(lazyk.evaluate("sum(e * 2)"), np.sum(e * 2))
            if n == 0:
                with pytest.raises(ValueError):
                    lazyk.evaluate("max(e)")
            else:
                np.testing.assert_array_equal(lazyk.evaluate("max(e)"), np.max(e))
    for dt in ["f4", "i4", "u1", "c16", "f2"]:
        a = (np.arange(12) % 5).astype(dt)
        b = (np.arange(12) % 3 + 1).astype(dt)
        for _ in range(3):
            got, want = lazyk.evaluate("a * b + 2"), a * b + 2
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    m = np.arange(24.0).reshape(4, 6)
    for view in (m, m.T, m[:, ::2], m[::-1], np.asfortranarray(m)):
        for order in ("K", "C", "F", "A"):
            for _ in range(2):
                got = lazyk.evaluate("view * 2", order=order)
                np.testing.assert_array_equal(got, view * 2)
                if order == "F" or (order in "AK" and view.flags.f_contiguous
                                    and not view.flags.c_contiguous):
                    assert got.flags.f_contiguous


def test_result_order_follows_each_calls_layouts():
    # (4, 1) is both C- and F-contiguous: with an F-only operand the result is F ordered,
    # with a C-only one in its place it is C ordered (same dtypes and ndims).
    f = np.asfortranarray(np.arange(24.0).reshape(4, 6))
    for first in [np.ones((4, 1)), np.ones((4, 6)), np.ones((4, 1)), np.ones((4, 6))]:
        got = lazyk.evaluate("first + f")
        np.testing.assert_array_equal(got, first + f)
        assert got.flags.f_contiguous == (first.flags.f_contiguous and f.flags.f_contiguous)
    # order 'K' over an input whose axes are permuted: its memory order, as NumPy's; a
    # sliced input (axes in C order) and order 'C' give C order
    x = np.arange(24.0).reshape(2, 3, 4).transpose(2, 0, 1)
    z = np.arange(48.0).reshape(2, 3, 8)[:, :, ::2]
    for _ in range(3):  # (the planned entries too)
        for got, want in [(lazyk.evaluate("x * 2"), np.multiply(x, 2)),
                          (lazyk.evaluate(lazyk.array(x) * 2), np.multiply(x, 2)),
                          (lazyk.evaluate("z * 2"), z * 2),
                          (lazyk.evaluate("x * 2", order="C"), np.multiply(x, 2, order="C"))]:
            np.testing.assert_array_equal(got, want)
            assert got.strides == want.strides


def test_a_repeated_plain_string_is_one_native_call(monkeypatch):
    """After its first calls, an elementwise string runs through its kernel's native guard
    on a new output (`Dispatcher.fresh`), also with a scalar whose value is part of the
    program (a small integer: a literal of the kernel) among its names."""
    from lazyk.kernel.dispatch import Dispatcher

    ran, real = [], Dispatcher.fresh

    def fresh(self, inputs):
        out = real(self, inputs)
        ran.append(out is not None)
        return out
    monkeypatch.setattr(Dispatcher, "fresh", fresh)
    rng = _rng(12)
    a, b, x = rng.random(33), rng.random(33), 2
    for text, want in [("a*3 - b*7 + 0.125", a * 3 - b * 7 + 0.125),
                       ("a*0.375 + b*x", a * 0.375 + b * x), ("x*b - a*0.625", x * b - a * 0.625)]:
        del ran[:]
        for _ in range(6):
            got = lazyk.evaluate(text)
            assert got.dtype == np.float64 and got.shape == (33,)
            np.testing.assert_array_equal(got, want)
        assert ran[-2:] == [True, True], (text, ran)


def test_scalar_names_are_parameters_bound_per_call(builds):
    a = np.linspace(-2, 2, 101)
    f32 = a.astype(np.float32)
    i16 = np.arange(-50, 51, dtype=np.int16)
    s = 0.25
    lazyk.evaluate("a * s + f32 * s")
    lazyk.evaluate("f32 * s")
    before = kernel.cache_info()["compiles"]
    nbuild = builds[0]
    for v in np.random.default_rng(3).standard_normal(200):
        s = float(v)
        got = lazyk.evaluate("a * s + f32 * s")
        np.testing.assert_array_equal(got, a * s + f32 * s)
        np.testing.assert_array_equal(lazyk.evaluate("f32 * s"), f32 * s)
        assert lazyk.evaluate("f32 * s").dtype == np.float32
    assert kernel.cache_info()["compiles"] == before
    assert builds[0] <= nbuild + 3
    # two names, the same value: still two parameters, right values when they differ later
    for s, t in [(1.5, 1.5), (1.5, -2.0), (3.0, 3.0), (0.1, 0.2)]:
        np.testing.assert_array_equal(lazyk.evaluate("a*s + a*t"), a * s + a * t)
        np.testing.assert_array_equal(lazyk.evaluate("a*s + t + 17"), a * s + t + 17)
    # integers: NEP 50 range checks and comparisons as NumPy, whatever the previous value
    for k in [5, 100, 20000, 32767, -32768, 40000, -1, 2**40, 3, 7]:
        np.testing.assert_array_equal(lazyk.evaluate("i16 > k"), i16 > k)
        np.testing.assert_array_equal(lazyk.evaluate("i16 == k"), i16 == k)
        if -32768 <= k <= 32767:
            got = lazyk.evaluate("i16 + k")
            assert got.dtype == np.int16
            np.testing.assert_array_equal(got, i16 + np.int16(k))
        else:
            with pytest.raises(OverflowError):
                lazyk.evaluate("i16 + k")
    # exponents: small integers are baked, others are parameters
    pos = np.abs(a) + 0.5
    for p in [2, 3, 2.5, 0.5, -1, 17, 2.0, 1.25]:
        for _ in range(2):
            np.testing.assert_allclose(lazyk.evaluate("pos ** p"), pos ** p, rtol=1e-14)
    ints = np.arange(6, dtype=np.int64)
    for p in [2, 3, 20]:
        np.testing.assert_array_equal(lazyk.evaluate("ints ** p"), ints ** p)
    p = -2
    with pytest.raises(ValueError):
        lazyk.evaluate("ints ** p")
    # NumPy scalars are strong
    for s in [np.float32(0.5), np.float64(0.5), np.int8(3), np.float32(1.7)]:
        for _ in range(2):
            got, want = lazyk.evaluate("f32 * s"), f32 * s
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_out_casting_and_errors_as_the_general_path(builds):
    a, b = np.arange(10.0), np.ones(10)
    for _ in range(3):
        out = np.empty(10)
        assert lazyk.evaluate("a + b", out=out) is out
        np.testing.assert_array_equal(out, a + b)
        o32 = np.empty(10, np.float32)
        assert lazyk.evaluate("a + b", out=o32, casting="same_kind") is o32
        np.testing.assert_array_equal(o32, (a + b).astype(np.float32))
        with pytest.raises(lazyk.CastingError):
            lazyk.evaluate("a + b", out=np.empty(10, np.int64))
        wide = np.empty((3, 10))
        lazyk.evaluate("a + b", out=wide)
        np.testing.assert_array_equal(wide, np.broadcast_to(a + b, (3, 10)))
        with pytest.raises(lazyk.ShapeError):
            lazyk.evaluate("a + b", out=np.empty(9))
        ro = np.empty(10)
        ro.flags.writeable = False
        with pytest.raises(ValueError):
            lazyk.evaluate("a + b", out=ro)
        x = np.arange(12.0)
        lazyk.evaluate("x + x", out=x)  # exact alias
        np.testing.assert_array_equal(x, np.arange(12.0) * 2)
        y = np.arange(12.0)
        p, q = y[1:], y[:-1]  # noqa: F841 - read by name from this frame
        lazyk.evaluate("p + q", out=p)  # partial overlap: through a temporary
        z = np.arange(12.0)
        np.testing.assert_array_equal(y[1:], z[1:] + z[:-1])
        c = np.arange(4.0)  # noqa: F841 - read by name from this frame
        with pytest.raises(lazyk.ShapeError):
            lazyk.evaluate("a + c")
    with pytest.raises(exprparse.ExprParseError):
        lazyk.evaluate("a + nope")


def test_same_array_under_two_names_then_different_arrays(builds):
    a = np.arange(5.0)
    for k in range(3):
        b = a if k == 0 else np.arange(5.0) * (k + 1)
        np.testing.assert_array_equal(lazyk.evaluate("a * 2 + b"), a * 2 + b)
        np.testing.assert_array_equal(lazyk.evaluate("a - b"), a - b)


def test_re_evaluate_uses_the_new_arrays_and_the_last_options():
    a = np.arange(6.0)
    out = np.empty(6)
    lazyk.evaluate("a * 3", out=out)
    a = np.arange(6.0) + 10
    assert lazyk.re_evaluate() is out
    np.testing.assert_array_equal(out, a * 3)
    np.testing.assert_array_equal(lazyk.re_evaluate({"a": np.ones(6)}), np.full(6, 3.0))


def test_re_evaluate_without_a_previous_string_raises():
    import subprocess
    import sys

    code = ("import lazyk\ntry:\n    lazyk.re_evaluate()\nexcept RuntimeError as e:\n"
            "    print('ok', e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60, check=False)
    assert r.stdout.startswith("ok"), r.stdout + r.stderr


def test_signed_zeros_and_wrapped_scalars_stay_exact():
    a = np.array([-2.0, 3.0])
    for s in (0.0, -0.0, 0.0, -0.0, 2.0, -2.0):
        got = lazyk.evaluate("a * s")
        np.testing.assert_array_equal(np.signbit(got), np.signbit(a * s))
    c = np.array([True, False, True])
    i8 = np.array([1, 2, 3], np.int8)
    for s in (5, 300, 5, 300, -1000):
        np.testing.assert_array_equal(lazyk.evaluate("where(c, i8, s)"),
                                      np.where(c, i8, s))


def test_scalar_parameters_from_several_threads():
    import threading

    a = np.linspace(0, 1, 513)
    errors = []

    def work(seed):
        try:
            for v in np.random.default_rng(seed).standard_normal(300):
                loc = {"a": a, "s": float(v)}
                got = lazyk.evaluate("a * s + 1", local_dict=loc)
                if not np.array_equal(got, a * float(v) + 1):
                    errors.append((seed, v))
        except Exception as exc:  # pragma: no cover
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_string_memos_stay_bounded_and_results_right(monkeypatch):
    # 12 distinct strings, each run 3 times (planned on the second call, served on the
    # third) into memos of 4: they stay at their size and every result is NumPy's
    from lazyk.lru import Memo
    from lazyk.runtime import stringeval

    monkeypatch.setattr(stringeval, "_FAST", Memo(4, "string programs"))
    monkeypatch.setattr(stringeval, "_names_of", Memo(4, "string names"))
    a, b = _rng(5).random(7), _rng(6).random(7)
    for i in range(12):
        for _ in range(3):
            got = lazyk.evaluate(f"a * {i + 2} + b", local_dict={"a": a, "b": b})
            np.testing.assert_allclose(got, a * (i + 2) + b)
            assert got.dtype == np.float64 and got.shape == (7,)
        assert 0 < len(stringeval._FAST) <= 4 and 0 < len(stringeval._names_of) <= 4


@pytest.mark.parametrize("text", ["x*(s-t)", "x*(s//t)", "x*(s%t)", "x*maximum(s,t)",
                                  "x*(s<t)", "where(x>s, s-t, t-s)", "x*(s+t)", "s*t*x"])
def test_scalars_folded_together_are_computed_on_every_call(text):
    # the same string, called with the same scalars and then others: never a frozen value
    x = np.arange(1, 4, dtype=np.float64)
    for s, t in [(1.5, 1 / 3)] * 3 + [(4.0, 2.5), (0.25, 7.0)]:
        got = lazyk.evaluate(text, local_dict={"x": x, "s": s, "t": t})
        want = eval(text, {"where": np.where, "maximum": np.maximum}, {"x": x, "s": s, "t": t})
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype


@pytest.mark.parametrize("s", [-2**31, 2**31 - 1, -2**40, 2**63 - 1, 2**64 - 1, 3])
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex64])
def test_large_python_ints_over_floats_on_every_call(s, dt):
    x = np.ones(4, dt)
    for _ in range(4):  # (planned on the second call, run so from the third)
        got = lazyk.evaluate("x * s", local_dict={"x": x, "s": s})
        np.testing.assert_array_equal(got, x * s)

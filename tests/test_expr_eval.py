"""Forcing: eval, evaluate(out=) with broadcasting/overlap/casting, compile and signatures."""
import numpy as np
import pytest

import lazyk
from lazyk.frontend import expr as E


def test_eval_returns_new_lazyk_array_evaluate_returns_numpy():
    a = np.arange(6.0).reshape(2, 3)
    e = E.as_expr(a) * 2 + 1
    arr = e.eval()
    assert isinstance(arr, lazyk.Array) and str(arr.type) == "2 * 3 * float64"
    np.testing.assert_array_equal(arr.to_numpy(), a * 2 + 1)
    got = lazyk.evaluate(e)
    assert isinstance(got, np.ndarray) and got.dtype == np.float64
    assert isinstance(e.to_numpy(), np.ndarray)
    np.testing.assert_array_equal(got, a * 2 + 1)
    assert not np.shares_memory(got, a)


def test_numpy_leaves_are_not_copied():
    a = np.arange(4.0)
    e = E.as_expr(a) + 1
    a[0] = 100.0  # lazy: the value at eval time counts
    np.testing.assert_array_equal(e.eval(), a + 1)


def test_evaluate_into_out_with_broadcasting_and_cast():
    a = np.arange(3, dtype=np.int32)
    out = np.zeros((2, 3), np.float64)
    assert lazyk.evaluate(E.as_expr(a) * 2, out=out) is out
    np.testing.assert_array_equal(out, np.broadcast_to(a * 2, (2, 3)))
    with pytest.raises(lazyk.ShapeError):
        lazyk.evaluate(E.as_expr(np.zeros(4)) + 1, out=np.zeros(3))


def test_casting_rules():
    a = np.arange(3.0)
    out = np.zeros(3, np.int64)
    with pytest.raises(lazyk.CastingError):
        lazyk.evaluate(E.as_expr(a) + 1, out=out, casting="safe")
    with pytest.raises(lazyk.CastingError):
        lazyk.evaluate(E.as_expr(a) + 1, out=out)  # float -> int is not same_kind
    lazyk.evaluate(E.as_expr(a) + 1, out=out, casting="unsafe")
    np.testing.assert_array_equal(out, [1, 2, 3])
    with pytest.raises(lazyk.CastingError):
        lazyk.astype(a, np.int8, casting="safe")


def test_read_only_out_raises():
    out = np.zeros(3)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        lazyk.evaluate(E.as_expr(np.ones(3)) + 1, out=out)


def test_exact_alias_in_place():
    a = np.arange(5.0)
    want = a * 2 + 1
    lazyk.evaluate(E.as_expr(a) * 2 + 1, out=a)
    np.testing.assert_array_equal(a, want)


@pytest.mark.parametrize("shift", [1, -1, 2])
def test_overlapping_out_equals_numpy(shift):
    base = np.arange(10.0)
    ref = base.copy()
    n = 10 - abs(shift)
    src = slice(0, n) if shift > 0 else slice(-shift, 10)
    dst = slice(shift, shift + n) if shift > 0 else slice(0, n)
    want = ref[src] + ref[src][::-1] * 2
    lazyk.evaluate(E.as_expr(base[src]) + E.as_expr(base[src][::-1]) * 2, out=base[dst])
    np.testing.assert_array_equal(base[dst], want)


def test_reduction_into_overlapping_out():
    a = np.arange(12.0).reshape(3, 4)
    want = a.sum(axis=0)
    lazyk.evaluate(lazyk.sum(a, axis=0), out=a[0])
    np.testing.assert_array_equal(a[0], want)


def test_setitem_with_expression():
    a = np.arange(6.0)
    b = np.zeros(6)
    b[...] = E.as_expr(a) * 3
    np.testing.assert_array_equal(b, a * 3)
    b[1:] = E.as_expr(a[:-1]) + 1
    np.testing.assert_array_equal(b[1:], a[:-1] + 1)


def test_lazyk_array_operands_and_out():
    arr = lazyk.array([1.0, 2.0, 3.0]) if hasattr(lazyk, "array") else None
    if arr is None:
        pytest.skip("lazyk.array not exported yet")
    e = arr * 2 + np.ones(3)
    assert isinstance(e, lazyk.Expr)
    np.testing.assert_array_equal(lazyk.evaluate(e), [3.0, 5.0, 7.0])
    out = lazyk.array([0.0, 0.0, 0.0])
    lazyk.evaluate(e, out=out)
    np.testing.assert_array_equal(out.to_numpy(), [3.0, 5.0, 7.0])


def test_compile_placeholders_signature_and_calls():
    a = lazyk.placeholder("a", "N * float64")
    b = lazyk.placeholder("b", "N * float64")
    c = lazyk.placeholder("c", "N * float64")
    k = lazyk.compile(2 * a + 3 * b - c)
    assert k.signature == "(a: N * float64, b: N * float64, c: N * float64) -> N * float64"
    for n in (0, 1, 7, 1000):
        x, y, z = (np.random.default_rng(n).normal(size=n) for _ in range(3))
        np.testing.assert_allclose(k(x, y, z), 2 * x + 3 * y - z)
    out = np.empty(5)
    assert k(np.ones(5), np.ones(5), np.ones(5), out=out) is out
    np.testing.assert_array_equal(out, 4.0)
    with pytest.raises(lazyk.ShapeError, match="dimension N"):
        k(np.ones(3), np.ones(4), np.ones(3))
    np.testing.assert_array_equal(k(np.ones(3, np.float32), np.ones(3), np.ones(3)), 4.0)
    with pytest.raises(lazyk.CastingError):
        k(np.ones(3, np.complex64), np.ones(3), np.ones(3))
    with pytest.raises(lazyk.TypeMatchError):
        k(np.ones((3, 1)), np.ones(3), np.ones(3))
    with pytest.raises(TypeError):
        k(np.ones(3))


def test_compile_concrete_leaves_are_constants():
    x, y = np.arange(3.0), np.arange(3, dtype=np.float32)
    a = lazyk.placeholder("a", "3 * float32")
    k = lazyk.compile(E.as_expr(x) * a + y)
    assert k.signature == "(a: 3 * float32) -> 3 * float64"
    assert [v is x or v is y for v in k.constants.values()] == [True, True]
    z = np.float32([5, 6, 7])
    np.testing.assert_array_equal(k(z), x * z + y)


def test_compile_reduction_and_keepdims():
    a = lazyk.placeholder("a", "N * M * float64")
    k = lazyk.compile((a * a).sum(axis=1, keepdims=True))
    assert k.signature == "(a: N * M * float64) -> N * 1 * float64"
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(k(x), (x * x).sum(axis=1, keepdims=True))


def test_placeholder_eval_needs_data():
    with pytest.raises(lazyk.BindError):
        lazyk.placeholder("a", "N * float64").eval()


@pytest.mark.parametrize("layout", ["F", "T", "neg", "step", "swap", "unaligned", "zero"])
def test_input_layouts(layout):
    base = np.arange(24.0).reshape(4, 6)
    x = {"F": np.asfortranarray(base), "T": base.T.copy().T, "neg": base[::-1, ::-1],
         "step": np.arange(48.0).reshape(4, 12)[:, ::2], "swap": base.astype(">f8"),
         "unaligned": np.frombuffer(b"\0" + base.tobytes(), "f8", 24, 1).reshape(4, 6),
         "zero": np.broadcast_to(np.arange(6.0), (4, 6))}[layout]
    e = E.as_expr(x) * 2 + np.arange(6.0)
    np.testing.assert_array_equal(e.eval(), np.asarray(x) * 2 + np.arange(6.0))
    np.testing.assert_allclose(lazyk.sum(x, axis=0).eval(), np.asarray(x).sum(axis=0))


def test_lazyk_array_setitem_with_expression():
    if not hasattr(lazyk, "array"):
        pytest.skip("lazyk.array not exported yet")
    dst = lazyk.array(np.zeros(5))
    x = np.arange(5.0)
    dst[1:] = E.as_expr(x[:-1]) * 2
    np.testing.assert_array_equal(dst.to_numpy(), [0, 0, 2, 4, 6])


def test_explain_shows_every_stage():
    a = lazyk.placeholder("a", "N * float64")
    text = (2 * a + np.float64(1) * np.float64(3)).sum().explain()
    for part in ("== graph as built", "== graph after fold_constants",
                 "== graph after eliminate_common_subexpressions", "reduce: sum",
                 "== launch 1: layout after passes.dims", "kernel data", "== LLVM IR",
                 "== assembly"):
        assert part in text, part
    # the level stack, dense as ragged: one fixed level after coalescing
    assert "\nlevels fixed (" in text
    ragged = lazyk.sum(lazyk.array([[1.0, 2.0], [3.0]]) * 2, axis=1).explain()
    assert "levels fixed * var" in ragged


def test_cli_explain(capsys):
    from lazyk.cli import main

    assert main(["explain", "sin(a) * b", "--type", "a=N * float32", "--type",
                 "b=N * float32", "--no-asm"]) == 0
    out = capsys.readouterr().out
    assert "sin(%" in out and "== LLVM IR" in out and "== assembly" not in out
    assert main(["explain", "a & 1.5", "--type", "a=N * float32"]) == 1
    assert "bitwise_and" in capsys.readouterr().err
    assert main(["explain", "a + 300", "--type", "a=N * int8"]) == 1  # (one line, no trace)
    err = capsys.readouterr().err
    assert err.startswith("error: OverflowError: ") and "Traceback" not in err
    assert main(["explain", "a", "--type", "a=N * string", "--no-asm"]) == 0
    assert "no kernel: the strings themselves" in capsys.readouterr().out


def test_compile_of_a_string_parameter_alone():
    s = lazyk.placeholder("s", "N * string")
    k = lazyk.compile(s)
    assert k.signature == "(s: N * string) -> N * string"
    assert k(["a", "bc"]).to_list() == ["a", "bc"]


def test_compiled_kernel_from_many_threads():
    from concurrent.futures import ThreadPoolExecutor

    a = lazyk.placeholder("a", "N * float64")
    k = lazyk.compile(lazyk.sin(a) * 2 + a)
    inputs = [np.random.default_rng(i).normal(size=100 + i) for i in range(64)]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(k, inputs))
    for x, got in zip(inputs, results):
        np.testing.assert_allclose(got, np.sin(x) * 2 + x, rtol=1e-12)


def test_string_expressions_dispatch():
    a, b = np.arange(4.0), np.ones(4)
    got = lazyk.evaluate("2*a + 3*b - where(a > 1, a, 0)")
    np.testing.assert_array_equal(got, 2 * a + 3 * b - np.where(a > 1, a, 0))

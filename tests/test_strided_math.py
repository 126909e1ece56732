"""Math over strided operands (layout kind 's') runs by blocks through stack buffers
(`codegen.llvm.KernelGen._emit_blocks`): values against NumPy's for every stride kind."""
import numpy as np
import pytest

import lazyk
from lazyk.kernel.flat import Instr, KernelSpec, execute

LENGTHS = [0, 1, 7, 255, 256, 257, 1000]
RTOL = {np.float32: 2e-6, np.float64: 1e-13, np.complex64: 2e-6, np.complex128: 1e-13}


def _views(base: np.ndarray) -> dict:
    """1-d views of `base` ((n, 4)) with n elements: a column, reversed, stride 0."""
    n = base.shape[0]
    return {"column": base[:, 1], "reversed": base[::-1, 2],
            "broadcast": np.broadcast_to(base[:1, 3], (n,)) if n else base[:, 3]}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("n", LENGTHS)
def test_unary_math_of_strided_views(dtype, n):
    rng = np.random.default_rng(n)
    base = rng.uniform(0.5, 2.0, (n, 4)).astype(dtype)
    for name, x in _views(base).items():
        for f in ("sin", "exp", "log"):
            got = np.asarray(lazyk.evaluate(f"{f}(x)", {"x": x}))
            np.testing.assert_allclose(got, getattr(np, f)(x), rtol=RTOL[dtype],
                                       err_msg=f"{f} of a {name} view, n={n}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", LENGTHS)
def test_strided_inputs_and_outputs(dtype, n):
    """Two strided inputs, a contiguous one, strided and reversed outputs (`out=`), a fold."""
    rng = np.random.default_rng(n + 1)
    base = rng.uniform(0.5, 2.0, (n, 4)).astype(dtype)
    x, y, z = base[:, 1], base[::-1, 2], np.ascontiguousarray(base[:, 3])
    want = np.arctan2(x, y) * z
    got = np.asarray(lazyk.evaluate("arctan2(x, y) * z", {"x": x, "y": y, "z": z}))
    np.testing.assert_allclose(got, want, rtol=RTOL[dtype])
    for out in (np.zeros((n, 3), dtype)[:, 1], np.zeros((n, 2), dtype)[::-1, 0]):
        lazyk.evaluate("arctan2(x, y) * z", {"x": x, "y": y, "z": z}, out=out)
        np.testing.assert_allclose(out, want, rtol=RTOL[dtype])
    if n:
        got = lazyk.evaluate("sum(exp(x))", {"x": x})
        np.testing.assert_allclose(got, np.exp(x.astype(np.float64)).sum(), rtol=1e-6)
        base[n // 2, 2] = np.nan
        assert np.isnan(lazyk.evaluate("max(sin(y))", {"y": y}))


def test_byteswapped_unaligned_integer_and_transposed_operands():
    rng = np.random.default_rng(7)
    x = rng.uniform(0.5, 2.0, (1001, 4)).astype(">f8")[:, 1]
    np.testing.assert_allclose(lazyk.evaluate("log(x)", {"x": x}), np.log(x), rtol=1e-13)
    raw = np.zeros(1001 * 4 * 8 + 1, np.uint8)[1:].view(np.float64).reshape(1001, 4)
    raw[:] = rng.uniform(0.5, 2.0, (1001, 4))
    np.testing.assert_allclose(lazyk.evaluate("sin(x)", {"x": raw[:, 2]}), np.sin(raw[:, 2]),
                               rtol=1e-13)
    i = rng.integers(-100, 100, (1001, 3)).astype(np.int16)[:, 1]
    np.testing.assert_allclose(lazyk.evaluate("sin(i)", {"i": i}), np.sin(i), rtol=1e-6)
    t = rng.uniform(0.5, 2.0, (300, 257))
    out = np.empty((257, 300))
    lazyk.evaluate("exp(t)", {"t": t.T}, out=out)  # (C order: the input's inner stride 2056)
    np.testing.assert_allclose(out, np.exp(t.T), rtol=1e-13)
    x = rng.uniform(0.5, 2.0, (1000, 4))[:, 2]  # in place, the exact alias
    want = np.sin(x)
    lazyk.evaluate("sin(x)", {"x": x}, out=x)
    np.testing.assert_allclose(x, want, rtol=1e-13)


@pytest.mark.parametrize("red", ["sum", "max"])
def test_folds_into_strided_outputs(red):
    """A fold along an outer dim into a strided output: the block reads the output too."""
    f8 = np.dtype("f8")
    spec = KernelSpec((f8,), (True,), (Instr("load", f8, (), 0), Instr("sin", f8, (0,))),
                      ((1, f8),), red)
    a = np.random.default_rng(8).standard_normal((600, 700))[::2, ::2]
    want = getattr(np, red)(np.sin(a), axis=0, keepdims=True)
    out = np.zeros((2, 700))[::2, ::2]
    execute(spec, out, a)
    np.testing.assert_allclose(out, want, rtol=1e-12)

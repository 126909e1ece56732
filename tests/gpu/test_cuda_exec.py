"""Execution on an NVIDIA GPU: every op class against NumPy. Skips without a GPU and driver.

Run on an NVIDIA H200 (CUDA 13.0 driver) on 2026-12-04: all passed after the float
remainder fix (NVPTX's frem is inexact; libdevice fmod is not).
"""
import numpy as np
import pytest

cuda = pytest.importorskip("lazyk.backend.cuda")
if not cuda.available():
    pytest.skip("no CUDA driver or GPU on this machine", allow_module_level=True)

from lazyk.codegen import nvvm  # noqa: E402
from lazyk.frontend import ops  # noqa: E402
from lazyk.kernel import gpu  # noqa: E402
from lazyk.kernel.flat import Instr, KernelSpec  # noqa: E402
from lazyk.passes.dims import simplify_dims  # noqa: E402
from lazyk.runtime.device import DeviceArray  # noqa: E402

pytestmark = pytest.mark.gpu
RNG = np.random.default_rng(6)


def run(spec, out_shape, arrays, reduced=None):
    """Run spec on the GPU over host arrays broadcast to out_shape; returns the host result."""
    shape = np.broadcast_shapes(*(a.shape for a in arrays), out_shape)
    views = [np.broadcast_to(a, shape) for a in arrays]
    dev = [DeviceArray.from_numpy(np.ascontiguousarray(a)) for a in arrays]
    dstrides = [tuple(0 if v.strides[d] == 0 else d_.strides[d - (len(shape) - d_.ndim)]
                      for d in range(len(shape))) for v, d_ in zip(views, dev)]
    reduced = reduced or (False,) * len(shape)
    out_dt = np.dtype(spec.outputs[0][1])
    rshape = tuple(1 if r else n for n, r in zip(shape, reduced))
    out = DeviceArray.empty(rshape, out_dt)
    ostr = tuple(0 if r else s for r, s in zip(reduced, out.strides))
    layout = simplify_dims(shape, (ostr, *dstrides), reduced)
    gpu.execute(spec, layout, out.ptr, tuple(d.ptr for d in dev))
    cuda.synchronize()
    return out.to_numpy()


def unary(name, dt):
    dt = np.dtype(dt)
    loop = ops.OPS[name].resolve(dt)
    return KernelSpec((dt,), (True,), (Instr("load", dt, (), 0), Instr(name, loop[-1], (0,))),
                      ((1, loop[-1]),))


def binary(name, dt, reduce=None, out=None):
    dt = np.dtype(dt)
    loop = ops.OPS[name].resolve(dt, dt)
    return KernelSpec((dt, dt), (True, True), (Instr("load", dt, (), 0), Instr("load", dt, (), 1),
                                               Instr(name, loop[-1], (0, 1))),
                      ((2, np.dtype(out or loop[-1])),), reduce)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "true_divide", "floor_divide",
                                  "remainder", "fmod", "power", "minimum", "maximum", "arctan2",
                                  "hypot"])
@pytest.mark.parametrize("dt", ["float64", "float32", "int32", "uint8"])
def test_binary_ops_match_numpy(name, dt):
    row = ops.OPS[name]
    try:
        spec = binary(name, dt)
    except Exception:
        pytest.skip(f"{name} on {dt} not a NumPy loop")
    a = (RNG.standard_normal(1000) * 50).astype(dt)
    b = (RNG.standard_normal(1000) * 50).astype(dt)
    if np.dtype(dt).kind in "iu":
        b[b == 0] = 1
        if name == "power":
            b = np.abs(b) % 8  # NumPy refuses negative integer exponents
    with np.errstate(all="ignore"):
        want = row.numpy(a, b)
    got = run(spec, a.shape, [a, b])
    np.testing.assert_allclose(got, want, rtol=2e-15 if dt == "float64" else 1e-6, equal_nan=True)


@pytest.mark.parametrize("name", ["sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "expm1",
                                  "log1p", "arcsin", "floor", "rint", "absolute", "negative"])
@pytest.mark.parametrize("dt", ["float64", "float32", "float16"])
def test_unary_math_within_ulps(name, dt):
    a = RNG.uniform(-0.99, 0.99, 1000).astype(dt)
    a[:3] = [np.nan, np.inf, -np.inf]
    with np.errstate(all="ignore"):
        want = ops.OPS[name].numpy(a)
    got = run(unary(name, dt), a.shape, [a])
    # libdevice is within 2 ULP of the correctly rounded result; NumPy's libm within ~1.
    np.testing.assert_array_max_ulp(got, want.astype(got.dtype), maxulp=4)


def test_fma_disabled_gives_cpu_rounding():
    a, b, c = (RNG.standard_normal(4096) for _ in range(3))
    f8 = np.dtype("f8")
    body = (Instr("load", f8, (), 0), Instr("load", f8, (), 1), Instr("load", f8, (), 2),
            Instr("multiply", f8, (0, 1)), Instr("add", f8, (3, 2)))
    got = run(KernelSpec((f8,) * 3, (True,) * 3, body, ((4, f8),)), a.shape, [a, b, c])
    assert np.array_equal(got, a * b + c)


def test_broadcast_and_strided():
    a = RNG.standard_normal((64, 1))
    b = RNG.standard_normal((1, 48))
    got = run(binary("subtract", "f8"), (64, 48), [a, b])
    assert np.array_equal(got, a - b)


@pytest.mark.parametrize("reduce,dt,out", [("sum", "f8", "f8"), ("sum", "i4", "i8"),
                                           ("min", "f4", "f4"), ("max", "u1", "u1"),
                                           ("prod", "f8", "f8")])
def test_full_reduction(reduce, dt, out):
    lo, hi = (0.999, 1.001) if reduce == "prod" else (0.5, 1.5)  # a product must not underflow
    a = RNG.uniform(lo, hi, 100_003).astype(dt)
    b = np.ones_like(a)
    got = run(binary("multiply", dt, reduce=reduce, out=out), (), [a, b], reduced=(True,))
    want = getattr(np, reduce)((a * b).astype(out))
    np.testing.assert_allclose(got.reshape(()), want, rtol=1e-9 if dt == "f8" else 1e-4)


def test_partial_reduction_rows():
    a = RNG.standard_normal((300, 70))
    got = run(binary("add", "f8", reduce="sum"), (300, 70), [a, a], reduced=(False, True))
    np.testing.assert_allclose(got[:, 0], (a + a).sum(axis=1), rtol=1e-12)


def test_partial_reduction_columns():
    a = RNG.standard_normal((300, 70))
    got = run(binary("add", "f8", reduce="max"), (300, 70), [a, a], reduced=(True, False))
    np.testing.assert_array_equal(got[0], (a + a).max(axis=0))


def test_device_array_round_trip_and_interface():
    x = np.arange(12.0).reshape(3, 4)
    d = DeviceArray.from_numpy(x)
    assert d.device == "cuda:0" and d.__cuda_array_interface__["shape"] == (3, 4)
    assert np.array_equal(d.to("cpu"), x)
    view = DeviceArray.from_cuda_array_interface(d)
    assert view.ptr == d.ptr and np.array_equal(view.to_numpy(), x)


def test_kernel_cache_per_device():
    spec = binary("add", "f8")
    layout = simplify_dims((10,), ((8,), (8,), (8,)))
    k1 = gpu.kernel(spec, layout)
    k2 = gpu.kernel(spec, simplify_dims((99,), ((8,), (8,), (8,))))
    assert k1 is k2 and ".entry " + nvvm.ENTRY in k1.ptx


def test_public_expressions_against_numpy():
    import lazyk
    x = RNG.standard_normal(100_001)
    y = RNG.standard_normal(100_001).astype(np.float32)
    dx, dy = lazyk.array(x, device="cuda"), lazyk.array(y, device="cuda")
    got = lazyk.where(dx > dy, dx * 2 - dy, lazyk.exp(-abs(dy))).eval()
    assert got.dtype == np.float64 and got.shape == x.shape
    np.testing.assert_allclose(got.to_numpy(), np.where(x > y, x * 2 - y, np.exp(-np.abs(y))),
                               rtol=1e-6)
    assert (dx > 0).eval().to_numpy().dtype == np.bool_
    np.testing.assert_allclose(dx.mean().eval().to_numpy(), x.mean(), rtol=1e-12)
    m = RNG.standard_normal((333, 77))
    dm = lazyk.array(m, device="cuda")
    np.testing.assert_allclose(dm.sum(axis=0).eval().to_numpy(), m.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose((dm * dm).max(axis=1).eval().to_numpy(), (m * m).max(axis=1))


def test_repeated_evaluation_reads_the_current_values():
    # A call of a geometry seen before reuses its prepared launch: only pointers and values
    # change, never a stale result.
    import lazyk
    from lazyk.backend import cuda
    x = np.arange(1000.0)
    d = lazyk.array(x, device="cuda")
    e = d * 3 + 1
    first = e.eval().to_numpy()
    cuda.copy_to_device(d.ptr, x[::-1].copy())
    second = e.eval().to_numpy()
    np.testing.assert_array_equal(first, x * 3 + 1)
    np.testing.assert_array_equal(second, x[::-1] * 3 + 1)
    other = lazyk.array(x + 5, device="cuda")  # same geometry, another array
    np.testing.assert_array_equal((other * 3 + 1).eval().to_numpy(), (x + 5) * 3 + 1)


def test_threads_evaluate_at_once():
    from concurrent.futures import ThreadPoolExecutor

    import lazyk
    n = 50_000

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(20):
            a = rng.standard_normal(n)
            d = lazyk.array(a, device="cuda")
            got = (lazyk.sin(d) * 2 + d).eval().to_numpy()
            total = (d * d).sum().eval().to_numpy()
            np.testing.assert_allclose(got, np.sin(a) * 2 + a, rtol=1e-13, atol=1e-13)
            np.testing.assert_allclose(total, (a * a).sum(), rtol=1e-10)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(work, range(8)))  # (re-raises a thread's failure here)


def test_large_results_stay_in_the_pool():
    # An 800 MB result is kept for the next call of that size (a pool of a quarter of the
    # GPU's memory), not freed and allocated again each time.
    import lazyk
    from lazyk.backend import cuda
    n = 100_000_000
    dev = cuda.get_device(0)
    if dev.memory < 16 * n * 8:
        pytest.skip("needs 13 GB of GPU memory")
    r = (lazyk.array(np.ones(n), device="cuda") + 1).eval()
    assert DeviceArray((1,), r.dtype, r.ptr + 8 * (n - 1), owner=r).to_numpy()[0] == 2.0
    size = cuda._Pool.size_class(8 * n)
    del r
    assert size in {s for (o, s) in cuda._pool.free if o == 0}

"""lazyk on Dask: values against NumPy on three schedulers, graph structure, pickling and
tokens, compile counters and thread count in workers, and the refusal of foreign arrays."""
import os
import pickle
import subprocess
import sys
import time

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

import lazyk  # noqa: E402,I001
import lazyk.dask as ldask  # noqa: E402

RNG = np.random.default_rng(7)
X, Y = RNG.random(1000), RNG.random(1000)
M, V = RNG.random((30, 20)), RNG.random(20)


def _da(x, chunks):
    return da.from_array(x, chunks=chunks)


# ---------------------------------------------------------------- building expressions
def test_expressions_take_dask_leaves():
    a, b = _da(X, 100), _da(Y, 100)
    for e in (lazyk.sin(a) * b, a * lazyk.array(Y), lazyk.array(Y) + a, np.add(a, lazyk.sin(b)),
              np.exp(lazyk.array(X) - b), lazyk.add(2 * a, 1)):
        assert isinstance(e, lazyk.Expr)
        assert e.shape == (1000,) and e.dtype == np.float64
    with pytest.raises(lazyk.NotSupportedError, match="lazyk.dask.evaluate"):
        (lazyk.sin(a) * b).eval()


def test_one_blockwise_layer_and_values_threaded():
    a, b = _da(X, 128), _da(Y, 128)
    # NOTE: `-b` on a plain Dask array would be Dask's own layer: lazyk.negative keeps it lazyk
    r = ldask.evaluate(lazyk.sin(a) * lazyk.exp(lazyk.negative(b)) + lazyk.multiply(2, a))
    assert isinstance(r, da.Array) and r.dtype == np.float64 and r.chunks == a.chunks
    assert len(r.dask.layers) == 3  # the two inputs and one fused layer
    out = r.compute(scheduler="threads")
    np.testing.assert_allclose(out, np.sin(X) * np.exp(-Y) + 2 * X, rtol=1e-14)
    # same inputs, same expression: same keys, also from the string form
    again = ldask.evaluate("sin(a) * exp(-b) + 2*a")
    assert again.name == r.name and len(again.dask.layers) == 3


def test_string_mixed_chunks_broadcast_and_dtypes():
    a, b = _da(X, 300), _da(Y, 250)
    c = np.arange(1000, dtype=np.int32)
    r = ldask.evaluate("where(a > b, a * c, b - 1)", local_dict={"a": a, "b": b, "c": c})
    np.testing.assert_allclose(r.compute(), np.where(X > Y, X * c, Y - 1))
    m = _da(M, (7, 6))
    r = ldask.evaluate(m * V + _da(V[None, :], (1, 5)))
    assert r.shape == (30, 20)
    np.testing.assert_allclose(r.compute(), M * V + V)
    i = _da(np.arange(10, dtype=np.int8), 4)
    r = ldask.evaluate(i * 3)
    assert r.dtype == np.int8 and r.compute().dtype == np.int8
    np.testing.assert_array_equal(r.compute(), np.arange(10, dtype=np.int8) * 3)


@pytest.mark.parametrize("op", ["sum", "prod", "min", "max", "any", "all", "mean"])
def test_reductions_every_axis(op):
    m = _da(M, (7, 6))
    ref = getattr(np, op)
    for axis in (None, 0, 1, -1, (0, 1)):
        for keepdims in (False, True):
            e = getattr(lazyk, op)(m * V - 0.3, axis=axis, keepdims=keepdims)
            got = ldask.evaluate(e, split_every=2).compute()
            want = ref(M * V - 0.3, axis=axis, keepdims=keepdims)
            assert got.shape == want.shape and got.dtype == want.dtype, (axis, keepdims)
            np.testing.assert_allclose(got, want, rtol=1e-12)
    a = _da(X, 64)
    got = ldask.evaluate(getattr(lazyk, op)(a * 2)).compute()
    np.testing.assert_allclose(got, ref(X * 2), rtol=1e-12)


@pytest.mark.parametrize("op", ["min", "max", "sum", "mean"])
def test_reductions_skip_empty_blocks(op):
    n = np.arange(12.0).reshape(4, 3) - 5
    a = da.from_array(n, chunks=((2, 0, 2), (3,)))
    for axis in (None, 0, 1):
        got = ldask.evaluate(getattr(lazyk, op)(a * 2, axis=axis)).compute()
        np.testing.assert_allclose(got, getattr(np, op)(n * 2, axis=axis))
    if op in ("min", "max"):  # nothing at all to fold: NumPy's error, in lazyk's words
        empty = da.from_array(np.empty((0, 3)), chunks=((0,), (3,)))
        with pytest.raises(ValueError, match="zero-size"):
            ldask.evaluate(getattr(lazyk, op)(empty, axis=0)).compute()


def test_sum_of_product_never_materialises_the_product():
    r = ldask.evaluate("sum(a*b)", local_dict={"a": _da(X, 100), "b": _da(Y, 100)})
    np.testing.assert_allclose(r.compute(), np.sum(X * Y), rtol=1e-13)
    # every layer is an input or a lazyk step; the fused chunk step makes one value per block
    assert all(name.startswith(("lazyk", "array")) for name in r.dask.layers)
    partial = [v for k, v in r.dask.layers.items() if k.startswith("lazyk-partial-")]
    assert len(partial) == 1 and len(partial[0]) == 10
    ints = ldask.evaluate(lazyk.sum(_da(np.arange(100, dtype=np.int8), 30)))
    assert ints.dtype == np.int64 and ints.compute() == 4950


def test_reduction_inside_an_expression():
    m = _da(M, (7, 6))
    r = ldask.evaluate(m - lazyk.mean(m, axis=0))
    np.testing.assert_allclose(r.compute(), M - M.mean(axis=0), rtol=1e-12, atol=1e-15)


def test_aligned_and_unaligned_blocks_share_one_kernel():
    raw = np.zeros(8 * X.size + 1, np.uint8)[1:].view(np.float64)  # not 8-byte aligned
    raw[:] = X
    assert not raw.flags.aligned
    mixed = da.concatenate([_da(X, 250), da.from_array(raw, chunks=250)])
    before = lazyk.stats()
    # (a structure no other test builds: scalars are kernel parameters, so `a * c + d`
    # would find the kernel another test compiled in the same process)
    r = ldask.evaluate("(a + 0.5) * 1.8125 - a / 3.0", local_dict={"a": mixed})
    xx = np.concatenate([X, X])
    want = (xx + 0.5) * 1.8125 - xx / 3.0
    np.testing.assert_array_equal(r.compute(scheduler="sync"), want)
    after = lazyk.stats()
    made = after["compiles"] + after["disk_loads"] - before["compiles"] - before["disk_loads"]
    assert made == 1


def test_compiled_kernel_on_dask_arrays():
    p = lazyk.placeholder("p", "N * K * float64")
    q = lazyk.placeholder("q", "K * float64")
    k = lazyk.compile(p * 2 + q)
    r = k(_da(M, (7, 6)), _da(V, 5))
    assert isinstance(r, da.Array)
    np.testing.assert_allclose(r.compute(), M * 2 + V)
    k2 = lazyk.compile(lazyk.sum(p * q, axis=1))
    np.testing.assert_allclose(k2(_da(M, 8), V).compute(), (M * V).sum(axis=1))
    np.testing.assert_allclose(k(_da(M.astype(np.float32), 8), V).compute(),  # converted
                               M.astype(np.float32) * 2 + V)
    with pytest.raises(lazyk.CastingError, match="casting='same_kind'"):
        k(_da(M.astype(np.complex128), 8), V)


def test_processes_scheduler():
    a, b = _da(X, 250), _da(Y, 250)
    r = ldask.evaluate(lazyk.sin(a) * b)
    np.testing.assert_allclose(r.compute(scheduler="processes", num_workers=2),
                               np.sin(X) * Y, rtol=1e-14)


# ---------------------------------------------------------------- pickling and tokens
_TOKEN_SCRIPT = """
import pickle, sys
import numpy as np, dask.array as da
from dask.base import tokenize
import lazyk, lazyk.dask
k = pickle.loads(sys.stdin.buffer.read())
x = lazyk.placeholder('x', 'N * float64')
k2 = lazyk.compile(lazyk.sin(x) * 2.5 + x)
a = da.from_array(np.arange(100.0), chunks=10)
r = k(np.arange(4.0))
made = lazyk.stats()['compiles'] + lazyk.stats()['disk_loads']
print(tokenize(k), tokenize(k2), tokenize(lazyk.sin(a) * 2),
      lazyk.dask.evaluate(lazyk.sin(a) * 2).name, ' '.join(map(repr, r.tolist())), made)
"""


def test_pickle_round_trip_and_tokens_equal_across_processes():
    from dask.base import tokenize

    x = lazyk.placeholder("x", "N * float64")
    k = lazyk.compile(lazyk.sin(x) * 2.5 + x)
    blob = pickle.dumps(k)
    assert len(blob) < 2000 and b"ctypes" not in blob
    k_back = pickle.loads(blob)
    assert k_back.signature == k.signature
    np.testing.assert_array_equal(k_back(X), k(X))
    assert tokenize(k) == tokenize(k_back) == tokenize(lazyk.compile(lazyk.sin(x) * 2.5 + x))
    a = _da(np.arange(100.0), 10)
    here = (tokenize(k), tokenize(lazyk.sin(a) * 2), ldask.evaluate(lazyk.sin(a) * 2).name)
    out = subprocess.run([sys.executable, "-c", _TOKEN_SCRIPT], input=blob, capture_output=True,
                         timeout=120, env={**os.environ, "LAZYK_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr.decode()
    t1, t2, t3, name, *values, made = out.stdout.decode().split()
    assert (t1, t3, name) == here and t2 == t1
    want = np.sin(np.arange(4.0)) * 2.5 + np.arange(4.0)
    np.testing.assert_array_equal([float(v) for v in values], want)
    assert int(made) == 1  # the pickled and the rebuilt kernel share one compiled kernel


def test_tokens_of_arrays_and_expressions():
    from dask.base import tokenize

    assert tokenize(lazyk.array(X)) == tokenize(lazyk.array(X.copy()))
    assert tokenize(lazyk.array(X)) != tokenize(lazyk.array(Y))
    assert tokenize(lazyk.array(X) * 2) == tokenize(lazyk.array(X) * 2)
    assert tokenize(lazyk.array(X) * 2) != tokenize(lazyk.array(X) * 3)


# ---------------------------------------------------------------- refusing foreign arrays
def test_refusing_a_large_dask_array_is_fast_and_clear():
    big = da.zeros(10**7, chunks=10**6)
    t = time.perf_counter()
    with pytest.raises(TypeError, match=r"dask\.array\.core\.Array.*lazyk\.dask\.evaluate"):
        lazyk.array(big)
    assert time.perf_counter() - t < 1.0


def test_foreign_objects():
    class WithArray:  # e.g. a pandas Series: converts through NumPy
        def __array__(self, dtype=None, copy=None):
            return np.arange(3.0)

    np.testing.assert_array_equal(lazyk.array(WithArray()).to_numpy(), np.arange(3.0))

    class Opaque:
        pass

    with pytest.raises(TypeError, match="Opaque"):
        lazyk.array(Opaque())
    with pytest.raises(TypeError, match=r"WithArray.*numpy\.asarray"):
        lazyk.sin(WithArray())
    with pytest.raises(TypeError, match="Opaque"):
        lazyk.sin(Opaque())
    unknown = da.from_array(X, chunks=100)[da.from_array(X, chunks=100) > 0.5]
    with pytest.raises((lazyk.NotSupportedError, lazyk.DTypeError), match="compute_chunk_sizes"):
        lazyk.sin(unknown)


def test_dtype_for_array_consumers():
    a = lazyk.array(X)
    assert a.dtype == np.float64
    d = da.from_array(a, chunks=100)
    np.testing.assert_array_equal(d.compute(), X)
    assert str(a.type.dtype) == "float64"
    rec = np.zeros(3, dtype=[("x", "i4"), ("y", "f8")])
    assert lazyk.array(rec).dtype == rec.dtype
    assert str(lazyk.array(rec).type.dtype) == "{x: int32, y: float64}"
    assert lazyk.array(np.array(["ab", "c"])).dtype == np.dtype("U2")
    assert lazyk.array(np.arange(3, dtype=">i4")).dtype == np.dtype(">i4")
    ragged = lazyk.array([[1, 2], [3]])  # no NumPy equivalent: the lazyk element type
    assert ragged.dtype == ragged.type.dtype and str(ragged.dtype) == "int64"


# ---------------------------------------------------------------- out=
@pytest.mark.parametrize("scheduler", ["sync", "threads"])
def test_out_fills_numpy_and_lazyk_arrays(scheduler):
    a, b = _da(X, 128), _da(Y, 300)
    with dask.config.set(scheduler=scheduler):
        out = np.full(1000, -1.0)
        assert ldask.evaluate(lazyk.sin(a) * b, out=out) is out
        np.testing.assert_allclose(out, np.sin(X) * Y, rtol=1e-12)
        out32 = np.zeros(1000, np.float32)  # same_kind: float64 into float32, as NumPy
        ldask.evaluate("a * 2", local_dict={"a": a}, out=out32)
        np.testing.assert_array_equal(out32, (X * 2).astype(np.float32))
        m = _da(M, (7, 6))
        wide = np.zeros((4, 30, 20))  # the result broadcast into out, as lazyk.evaluate
        ldask.evaluate(lazyk.sqrt(m) + lazyk.array(V), out=wide)
        np.testing.assert_allclose(wide, np.broadcast_to(np.sqrt(M) + V, (4, 30, 20)))
        total = np.zeros(())
        ldask.evaluate(lazyk.sum(a * b), out=total)
        np.testing.assert_allclose(total, np.sum(X * Y), rtol=1e-12)
        lz = lazyk.array(np.zeros(20))
        assert ldask.evaluate(lazyk.max(m, axis=0), out=lz) is lz
        np.testing.assert_array_equal(lz.to_numpy(), M.max(axis=0))
        with pytest.raises(lazyk.CastingError, match="float64 to output int64"):
            ldask.evaluate(a * 2, out=np.zeros(1000, np.int64))
        with pytest.raises(lazyk.ShapeError, match=r"\(1000,\) into output of shape \(999,\)"):
            ldask.evaluate(a * 2, out=np.zeros(999))
        with pytest.raises(lazyk.NotSupportedError, match="immutable"):
            ldask.evaluate(a * 2, out=da.zeros(1000))
        with pytest.raises(TypeError, match="NumPy or lazyk array"):
            ldask.evaluate(a * 2, out=[0.0] * 1000)
        ro = np.zeros(1000)
        ro.flags.writeable = False
        with pytest.raises(ValueError, match="read-only"):
            ldask.evaluate(a * 2, out=ro)
        assert not ro.any()


def test_out_fills_ragged_arrays_from_collections():
    x = lazyk.array([[1.0, 2.0], [3.0], [], [None, 4.0]], type="4 * var * ?float64")
    r = ldask.from_ragged(x, 3)
    with dask.config.set(scheduler="sync"):
        out = lazyk.array([[0.0, 0.0], [0.0], [], [0.0, 0.0]], type="4 * var * ?float64")
        assert ldask.evaluate(r * 2 + 1, out=out) is out
        assert out.to_list() == [[3.0, 5.0], [7.0], [], [None, 9.0]]
        sums = np.zeros(4)
        ldask.evaluate(r.sum(axis=-1, skipna=True), out=sums)
        np.testing.assert_array_equal(sums, [3.0, 3.0, 0.0, 4.0])
        with pytest.raises(lazyk.NotSupportedError, match="immutable"):
            ldask.evaluate(r * 2, out=r)


# ---------------------------------------------------------------- a 2-process cluster
@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address="127.0.0.1:0")
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def _blocks(aligned: bool, data: np.ndarray):
    # Made on the worker from bytes: offset 1 gives a float64 block that is not 8-aligned.
    raw = (b"" if aligned else b"\0") + data.tobytes()
    block = dask.delayed(np.frombuffer)(raw, dtype=np.float64, offset=0 if aligned else 1)
    return da.from_delayed(block, shape=data.shape, dtype=np.float64)


def test_cluster_values_threads_and_one_compile_per_worker(client):
    assert set(client.run(lazyk.get_num_threads).values()) == {1}
    before = client.run(lazyk.stats)
    parts = [RNG.random(5000) for _ in range(8)]
    a = da.concatenate([_blocks(i % 2 == 0, p) for i, p in enumerate(parts)])
    r = ldask.evaluate("a * 3.0625 - 1")
    got = client.compute(r).result(timeout=60)
    np.testing.assert_allclose(got, np.concatenate(parts) * 3.0625 - 1)
    after = client.run(lazyk.stats)
    made = {w: (after[w]["compiles"] + after[w]["disk_loads"])
            - (before[w]["compiles"] + before[w]["disk_loads"]) for w in after}
    assert all(n <= 1 for n in made.values()), made  # aligned or not: one kernel per worker
    assert sum(made.values()) >= 1
    s = client.compute(ldask.evaluate("sum(a*a)", local_dict={"a": a})).result(timeout=60)
    np.testing.assert_allclose(s, np.sum(np.concatenate(parts) ** 2), rtol=1e-12)
    out = np.zeros(40000)  # out= under distributed: computed, then copied in this process
    assert ldask.evaluate("a * 2", local_dict={"a": a}, out=out) is out
    np.testing.assert_allclose(out, np.concatenate(parts) * 2)
    k = lazyk.compile(lazyk.sin(lazyk.placeholder("x", "N * float64")))
    futures = client.map(k, [X, Y])  # compiled kernels pickle for distributed
    np.testing.assert_allclose(client.gather(futures)[1], np.sin(Y))


def test_compiled_kernel_runs_in_a_process_pool():
    """`ProcessPoolExecutor.submit(k, ...)` pickles the compiled expression (no ctypes)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    x, y = lazyk.placeholder("x", "N * float64"), lazyk.placeholder("y", "N * float64")
    k = lazyk.compile(2.0 * x + 3.0 * y - 1.0)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(k, X[i:], Y[i:]) for i in range(3)]
        got = [f.result(timeout=120) for f in futures]
    for i, r in enumerate(got):
        assert r.dtype == np.float64 and r.shape == X[i:].shape
        np.testing.assert_array_equal(r, 2.0 * X[i:] + 3.0 * Y[i:] - 1.0)


@pytest.mark.parametrize("dtype", [np.longdouble, np.clongdouble, "M8[s]", object])
def test_dask_leaves_of_unsupported_dtypes_are_refused(dtype):
    a = da.from_array(np.zeros(4, dtype=dtype), chunks=2)
    with pytest.raises(lazyk.UnsupportedOperandError, match="Dask array dtype"):
        ldask.evaluate(lazyk.sin(a))
    with pytest.raises(lazyk.UnsupportedOperandError):
        ldask.evaluate("a + 1")


def test_float32_sums_round_once_whatever_the_chunks():
    rng = np.random.default_rng(7)
    h = rng.standard_normal(1000).astype(np.float32)
    exact = np.float32(h.astype(np.float64).sum())
    for chunks in (7, 100, 1000):
        got = ldask.evaluate(lazyk.sum(da.from_array(h, chunks=chunks))).compute()
        assert got.dtype == np.float32 and got == exact
    col = ldask.from_ragged(lazyk.array(h.reshape(100, 10)), 7)
    assert np.asarray(ldask.evaluate(lazyk.sum(col)).compute()) == exact
    m = h.reshape(100, 10)
    got = ldask.evaluate(lazyk.sum(da.from_array(m, chunks=(7, 3)), axis=0)).compute()
    np.testing.assert_array_equal(got, m.astype(np.float64).sum(axis=0).astype(np.float32))


def test_row_operations_over_dask_arrays_compute_or_refuse_by_name():
    A = np.array([[0.0, 3.0, 1.0], [4.0, 0.0, 2.0]])
    a = _da(A, 1)
    def f(x): return lazyk.firsts(lazyk.sin(x)[lazyk.argmax(x, axis=1, keepdims=True)])
    got = ldask.evaluate(f(a)).compute()
    assert got.to_list() == lazyk.evaluate(f(A)).to_list()
    np.testing.assert_array_equal(ldask.evaluate(lazyk.cumsum(a, axis=None)).compute(),
                                  np.cumsum(A))  # (Dask's own, across the chunks)
    with pytest.raises(lazyk.NotSupportedError, match="sort at axis 0"):
        ldask.evaluate(lazyk.sort(a, axis=0)).compute()


def test_compiled_calls_convert_dask_inputs_as_numpy_inputs():
    x = lazyk.placeholder("x", "N * float64")
    k = lazyk.compile(x * 2 + 1)
    for a in (da.arange(5, chunks=2), da.arange(5, chunks=2).astype(np.float32)):
        got = k(a).compute()
        assert got.dtype == np.float64 and got.tolist() == [1.0, 3.0, 5.0, 7.0, 9.0]
    xr = lazyk.placeholder("xr", "N * var * float64")
    col = ldask.from_ragged(lazyk.array([[1, 2], [3]]), 1)
    assert lazyk.compile(xr * 2)(col).compute().to_list() == [[2.0, 4.0], [6.0]]
    with pytest.raises(lazyk.CastingError):  # (complex to float: not same_kind)
        k(da.from_array(np.array([1 + 2j]), chunks=1))
    got = k(da.from_array(np.array([2.5]), chunks=1).astype(np.float64), casting="no")
    assert got.compute().tolist() == [6.0]
    i8 = lazyk.compile(lazyk.placeholder("y", "N * int8") + 1)
    with pytest.raises(lazyk.CastingError, match="casting='unsafe'"):
        i8(da.from_array(np.array([1.7]), chunks=1))
    assert i8(da.from_array(np.array([1.7]), chunks=1), casting="unsafe").compute().tolist() \
        == [2]


def test_a_new_axis_on_an_expression_over_dask_arrays():
    A = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    a = _da(A, 1)
    got = ldask.evaluate(a - lazyk.mean(a, axis=1)[:, None]).compute()
    np.testing.assert_array_equal(got, A - A.mean(axis=1)[:, None])


def test_evaluate_takes_one_expression_on_dask():
    a = _da(np.arange(4.0), 2)
    with pytest.raises(TypeError, match="takes one expression"):
        ldask.evaluate(a * 2, a + 1)

"""lazyk.histogram's repeated passes and its counters: a second evaluation of the same
histogram (or of one built again over the same arrays) makes no graph, no plan and no
kernel; counts equal numpy.histogram's at float32 edges, NaN, infinities, values on the
edges, runs of one bin (the counters' lanes), every block remainder, weights (bit for bit:
their float sums keep the values' order), ragged and `?T` input, and two histograms of one
pass."""
from __future__ import annotations

import numpy as np
import pytest

import lazyk
from lazyk.frontend import histogram as histogram_module
from lazyk.kernel.nest import nest_stats
from lazyk.runtime import histograms

F32_EDGES = np.linspace(0.1, 0.7, 13, dtype=np.float32)


def _stats() -> tuple:
    return (histograms.stats["graphs"], histograms.stats["plans"], nest_stats["compiles"])


def test_a_second_evaluation_makes_no_graph_plan_or_kernel():
    x = lazyk.array(np.random.default_rng(1).random(1000).astype(np.float32) * 250)
    h = lazyk.histogram(x, 100, (0, 200))
    first = lazyk.evaluate(h)
    made, hits = _stats(), histograms.stats["hits"]
    again = lazyk.evaluate(h)
    built_again = lazyk.evaluate(lazyk.histogram(x, 100, (0, 200)))  # (a new Histogram)
    assert _stats() == made and histograms.stats["hits"] == hits + 2
    np.testing.assert_array_equal(again, first)
    np.testing.assert_array_equal(built_again, first)
    # other arrays of the same layout: a graph of their own, the same kernel
    y = lazyk.array(np.float32([1, 150, 199.5, 200, 250]))
    assert lazyk.evaluate(lazyk.histogram(y, 100, (0, 200))).sum() == 4
    assert nest_stats["compiles"] == made[2]


def test_new_arrays_of_one_structure_make_no_graph_or_plan(monkeypatch):
    # The next chunk or Dask partition: new arrays, the same dtypes and shapes (or ragged
    # types). Its pass finds the last one's graph and plan (inputs named by position).
    rng = np.random.default_rng(5)

    def chunk():
        off = np.concatenate([[0], np.cumsum(rng.poisson(3, 400))])
        pt = (rng.random(int(off[-1])) * 250).astype(np.float32)
        return (lazyk.array((rng.random(400) * 250).astype(np.float32)),
                lazyk.from_offsets(off, pt), rng.random(400), pt)

    def passes(met, jets, w):
        return lazyk.evaluate(lazyk.histogram(met, 50, (0, 200)),
                              lazyk.histogram(met * 2, 40, (0, 400), weights=w),
                              lazyk.histogram(jets, 20, (0, 200)))
    passes(*chunk()[:3])
    made = _stats()
    for _ in range(3):
        met, jets, w, pt = chunk()
        with monkeypatch.context() as m:  # (the kept bin graphs are renamed by position only)
            m.setattr(histogram_module, "renamed", None)
            a, b, c = passes(met, jets, w)
        m = np.asarray(met)
        np.testing.assert_array_equal(a, np.histogram(m, 50, (0, 200))[0])
        np.testing.assert_allclose(b, np.histogram(m * 2, 40, (0, 400), weights=w)[0])
        np.testing.assert_array_equal(c, np.histogram(pt, 20, (0, 200))[0])
        # one array read twice is another structure than two arrays: its own graph
        same = lazyk.evaluate(lazyk.histogram(met + met, 10, (0, 500)))
        np.testing.assert_array_equal(same, np.histogram(m + m, 10, (0, 500))[0])
        other = lazyk.array(m[::-1].copy())
        two = lazyk.evaluate(lazyk.histogram(met + other, 10, (0, 500)))
        np.testing.assert_array_equal(two, np.histogram(m + m[::-1], 10, (0, 500))[0])
    assert _stats()[:2] == (made[0] + 2, made[1] + 2)  # (met + met, met + other: once)
    # a histogram of row folds (`met[sum(pt > 40, axis=1) >= 2]`): the same
    counts = []
    for k in range(3):
        met, jets, _, pt = chunk()
        counts.append(lazyk.evaluate(lazyk.histogram(met[lazyk.sum(jets > 40, axis=1) >= 2],
                                                     20, (0, 200))))
        want = np.histogram(np.asarray(met)[lazyk.sum(jets > 40, axis=1).eval() >= 2],
                            20, (0, 200))[0]
        np.testing.assert_array_equal(counts[-1], want)
        if k == 0:
            made = _stats()
    assert _stats() == made


def test_a_selection_by_an_inner_reduction_plans_once():
    # `met[sum(pt > 40, axis=1) >= 2]`: the reduction is computed on every pass (a new
    # array each time) and read under the same name, so the pass finds its graph and plan
    rng = np.random.default_rng(3)
    off = np.concatenate([[0], np.cumsum(rng.poisson(3, 500))])
    pt = lazyk.from_offsets(off, (rng.random(int(off[-1])) * 100).astype(np.float32))
    met = lazyk.array((rng.random(500) * 200).astype(np.float32))
    flat = [pt.to_list()[i] for i in range(500)]
    want = np.histogram(np.asarray(met)[[sum(v > 40 for v in r) >= 2 for r in flat]],
                        20, (0, 200))[0]

    def h():
        return lazyk.histogram(met[lazyk.sum(pt > 40, axis=1) >= 2], 20, (0, 200))
    first = lazyk.evaluate(h())
    made, hits = _stats(), histograms.stats["hits"]
    again = lazyk.evaluate(h())
    assert _stats() == made and histograms.stats["hits"] == hits + 1
    np.testing.assert_array_equal(first, want)
    np.testing.assert_array_equal(again, want)


def test_rows_are_checked_on_every_pass():
    off = np.array([0, 2, 3])
    x = lazyk.from_offsets(off, np.array([1.0, 2.0, 3.0]))  # (shares `off`)
    h = lazyk.histogram(x, 3, (0, 3))
    assert lazyk.evaluate(h).tolist() == [0, 1, 2]
    off[1:] = [1, 50]  # offsets past the content: refused, never read
    with pytest.raises(lazyk.ArrayConstructionError, match="outside the content"):
        lazyk.evaluate(h)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 3, 4, 5, 255, 256, 257, 1023, 5000])
def test_values_on_edges_nan_and_outside(dt, n):
    edges = F32_EDGES.astype(dt)
    pool = np.concatenate([edges, np.nextafter(edges, dt(0)), np.nextafter(edges, dt(1)),
                           np.array([np.nan, np.inf, -np.inf, 0.0999, 0.7001, -0.0], dt)])
    x = np.random.default_rng(n).choice(pool, n).astype(dt)
    for bins, r in ((12, (0.1, 0.7)), (7, (dt(0.1), dt(0.7))), (5, (0.1, 0.70000001)),
                    (1, (0.1, 0.7)), (600, (0.1, 0.7)), (edges, None)):
        want, want_edges = np.histogram(x, bins, r)
        got, got_edges = lazyk.histogram(x, bins, r)
        assert got.dtype == np.int64 and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got_edges, want_edges)
        assert got_edges.dtype == want_edges.dtype


def test_runs_of_one_bin_count_in_every_lane():
    x = np.full(10_001, 3.5, np.float32)
    x[::7] = 9.0
    for threads in (1, 2):
        with lazyk.threads(threads):
            got = lazyk.histogram(x, 10, (0, 10)).to_numpy()
        np.testing.assert_array_equal(got, np.histogram(x, 10, (0, 10))[0])
    big = np.full(3_000_000, 1.0)
    with lazyk.threads(2):
        assert lazyk.histogram(big, 4, (0, 4)).to_numpy().tolist() == [0, 3_000_000, 0, 0]


def test_weights_are_numpys_sums_bit_for_bit():
    rng = np.random.default_rng(3)
    x = rng.random(3000).astype(np.float32) * 10
    w = rng.normal(0, 1, 3000) * np.exp(rng.normal(0, 8, 3000))  # (sums that round)
    want = np.histogram(x, 10, (0, 10), weights=w)[0]
    got = lazyk.histogram(x, 10, (0, 10), weights=w).to_numpy()
    assert got.dtype == want.dtype and got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)


def test_ragged_and_missing_values():
    rng = np.random.default_rng(5)
    lens = rng.poisson(4, 5000)
    vals = (rng.exponential(40, int(lens.sum())) + 15).astype(np.float32)
    vals[::11] = np.nan
    x = lazyk.from_offsets(np.concatenate([[0], np.cumsum(lens)]), vals)
    h = lazyk.histogram(x, 100, (0, 200))
    want = np.histogram(vals, 100, (0, 200))[0]
    np.testing.assert_array_equal(lazyk.evaluate(h), want)
    np.testing.assert_array_equal(lazyk.evaluate(h), want)  # (the kept plan)
    rows = [[1.0, None, 2.5, 2.0], None, [], [3.0, float("nan"), 4.0, None, 5.5]]
    q = lazyk.array(rows, type="4 * ?var * ?float32")
    flat = np.float32([v for r in rows if r for v in r if v is not None])
    for _ in range(2):
        got, edges = lazyk.histogram(q, 4, (1, 5))
        np.testing.assert_array_equal(got, np.histogram(flat, 4, (1, 5))[0])
        np.testing.assert_array_equal(edges, np.histogram(flat, 4, (1, 5))[1])


def test_two_histograms_in_one_pass_twice():
    rng = np.random.default_rng(6)
    lens = rng.poisson(3, 4000)
    off = np.concatenate([[0], np.cumsum(lens)])
    pt = rng.exponential(30, int(lens.sum())).astype(np.float32)
    eta = rng.normal(0, 2, int(lens.sum()))
    a, b = lazyk.from_offsets(off, pt), lazyk.from_offsets(off, eta)
    h1, h2 = lazyk.histogram(a, 50, (0, 100)), lazyk.histogram(b, 7, (-4, 4), weights=a)
    want1 = np.histogram(pt, 50, (0, 100))[0]
    want2 = np.histogram(eta, 7, (-4, 4), weights=pt)[0]
    for _ in range(2):
        runs = nest_stats["runs"]
        c1, c2 = lazyk.evaluate(h1, h2)
        assert nest_stats["runs"] == runs + 1
        np.testing.assert_array_equal(c1, want1)
        np.testing.assert_array_equal(c2, want2)


def test_bins_computed_in_int32():
    h = lazyk.histogram(np.float32([1, 2]), 10, (0, 10))
    text = lazyk.explain(h)
    assert ") : int32" in text
    assert "-> <i4" in text  # (the pass's counter words in int32 too)
    wide = lazyk.histogram(np.float64([1, 2]), 10, (0.1, 0.7))  # (corrected estimates)
    assert wide.estimate()[0].dtype == np.int32 and "-> <i4" in lazyk.explain(wide)


def test_parts_write_only_their_own_cache_lines(monkeypatch):
    """Threads write their part's record, status row and counters: each starts a cache line
    of its own (two threads writing one line halved a histogram's speed in some processes,
    by where NumPy placed the buffer)."""
    import ctypes

    from lazyk.kernel import nest as nest_kernel

    word = lambda address: ctypes.c_int64.from_address(address).value  # noqa: E731
    seen = {}
    run, original = nest_kernel.parallel_for, nest_kernel.NestKernel.run

    def parallel_for(fn, arg, n):  # several parts: arg is {part table, parts, next part}
        table, count = word(arg), word(arg + 8)
        records = [word(table + 8 * t) for t in range(count)]
        seen["records"] = records
        seen["statuses"] = [word(r + 8 * nest_kernel.PREFIX) for r in records]
        return run(fn, arg, n)

    def nest_run(self, words, params, parts, keep, labels=None):
        seen["counters"], seen["parts"] = int(words[3]), len(parts)
        return original(self, words, params, parts, keep, labels)

    monkeypatch.setattr(nest_kernel, "parallel_for", parallel_for)
    monkeypatch.setattr(nest_kernel.NestKernel, "run", nest_run)
    monkeypatch.setattr(nest_kernel, "MIN_PART", 8)
    values = np.random.default_rng(3).random(5000) * 250
    with lazyk.threads(2):
        got = lazyk.evaluate(lazyk.histogram(lazyk.array(values), 100, (0, 200)))
    np.testing.assert_array_equal(got, np.histogram(values, 100, (0, 200))[0])
    assert seen["parts"] > 1 and len(seen["records"]) == seen["parts"]
    # each part's counters: 101 bins of 4 lanes, padded to whole lines from an aligned start
    assert seen["counters"] % 64 == 0
    for address in seen["records"] + seen["statuses"]:
        assert address % 64 == 0


def test_a_pass_over_the_same_numpy_arrays_runs_bound(monkeypatch):
    from lazyk.runtime import bin_counts
    planned = []
    real = histograms._one_pass
    monkeypatch.setattr(histograms, "_one_pass", lambda *a: planned.append(1) or real(*a))
    rng = np.random.default_rng(8)
    v, w = rng.random(5000) * 10, rng.random(5000)
    x = lazyk.array(v)
    hist = lambda: lazyk.histogram(x * 2.0, 20, (0, 20), weights=w)  # noqa: E731
    want = np.histogram(v * 2.0, 20, (0, 20), weights=w)[0]
    np.testing.assert_array_equal(hist().to_numpy(), want)
    assert len(planned) == 1
    np.testing.assert_array_equal(hist().to_numpy(), want)  # (built again: bound)
    assert len(planned) == 1
    v[:10] = 19.5  # values changed in place: read by the bound pass
    np.testing.assert_array_equal(hist().to_numpy(), np.histogram(v * 2.0, 20, (0, 20),
                                                                   weights=w)[0])
    assert len(planned) == 1
    with lazyk.threads(1):  # (other threads: planned again)
        np.testing.assert_array_equal(lazyk.histogram(x * 2.0, 20, (0, 20), weights=w)[0],
                                      np.histogram(v * 2.0, 20, (0, 20), weights=w)[0])
    # other arrays of the same expression (a new one where a dead one was): their own pass
    for n in (3000, 5000):
        y = rng.random(n) * 10
        got = lazyk.histogram(lazyk.array(y) * 2.0, 20, (0, 20)).to_numpy()
        np.testing.assert_array_equal(got, np.histogram(y * 2.0, 20, (0, 20))[0])
    # edges from the data, or rows: never kept bound
    assert bin_counts.pass_key([lazyk.histogram(x, 20)]) is None
    assert bin_counts.pass_key([lazyk.histogram(lazyk.array([[1.0], []]), 2, (0, 2))]) is None


def test_range_bounds_of_zero_dims_and_lazy_ones():
    d = np.array([0.5, 1.5, 2.5])
    x = lazyk.array(d)
    counts, edges = lazyk.histogram(x, 2, (0, lazyk.array(np.array(3.0))))
    want = np.histogram(d, 2, (0, np.array(3.0)))
    assert counts.tolist() == want[0].tolist() and edges.tolist() == want[1].tolist()
    with pytest.raises(TypeError, match="a lazy value .* not computed yet"):
        lazyk.histogram(x, 2, (x.min(), x.max()))

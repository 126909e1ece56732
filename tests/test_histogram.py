"""lazyk.histogram against numpy.histogram (counts exactly equal, weights too where their sums
are exact) over every layout (empty rows, empty arrays, `?T`, `?var`, fixed dims, depth 2 and
3), with the bins, range, float32 edges, NaN and outside values as NumPy has them; several
histograms in one pass (`lazyk.evaluate(h1, h2)`), threads, and histograms of
combinations."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from lazyk.kernel.nest import nest_stats
from tests import ragged_reference as R
from tests import ragged_strategies as S

LAYOUTS = S.LAYOUTS + S.QNEST_LAYOUTS


def present_values(data, depth: int) -> list:
    """The values at `depth` in order; None (missing) kept, missing rows skipped."""
    if depth == 0:
        return [data]
    if data is None:
        return []
    return [v for x in data for v in present_values(x, depth - 1)]


def drawn(data, dtypes=S.NUMERIC, nan=True):
    t, d = data.draw(S.ragged(layouts=LAYOUTS, dtypes=dtypes, nan=nan), label="array")
    return t, d, lazyk.array(d, type=t)


def bins_and_range(data):
    kind = data.draw(st.sampled_from(["range", "range", "auto", "edges"]), label="bins")
    if kind == "edges":
        edges = sorted(data.draw(st.lists(st.integers(-6, 6), min_size=2, max_size=6),
                                 label="edges"))
        return np.array(edges, dtype=data.draw(st.sampled_from(["int64", "float64"]))), None
    bins = data.draw(st.integers(1, 9), label="n")
    if kind == "auto":
        return bins, None
    lo = data.draw(st.sampled_from([-6, -2.5, 0, 0.1, 1]), label="lo")
    hi = lo + data.draw(st.sampled_from([0, 0.3, 1, 2.5, 7]), label="width")
    return bins, (lo, hi)


@given(st.data())
def test_counts_match_numpy(data):
    t, d, x = drawn(data)
    rt = R.parse_type(t)
    values = [v for v in present_values(d, rt.ndim) if v is not None]
    flat = np.array(values, dtype=rt.dtype)
    bins, rng = bins_and_range(data)
    try:
        want, edges = np.histogram(flat, bins, rng)
    except ValueError as err:  # NumPy refuses it (a NaN in an automatic range): so do we
        with pytest.raises(ValueError, match=str(err).split(" ")[0]):
            lazyk.histogram(x, bins, rng).to_numpy()
        return
    h = lazyk.histogram(x, bins, rng)
    got, got_edges = h
    assert got.dtype == np.int64 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_edges, edges)
    assert got_edges.dtype == edges.dtype
    # the reference's rule agrees
    assert got.tolist() == R.histogram(R.array(d, t), bins, rng).data


@given(st.data())
def test_weights_match_numpy(data):
    t, d, x = drawn(data, nan=False)
    rt = R.parse_type(t)
    bins, rng = bins_and_range(data)
    wdt = data.draw(st.sampled_from(["float64", "float32", "int64"]), label="weights dtype")
    # weights of x's structure, halves or small integers: their sums are exact in any order
    w = lazyk.astype(abs(x) * 2 + 1 if rt.dtype.kind == "f" else abs(x) + 1, wdt).eval()
    wd = w.to_list()
    pairs = [(v, u) for v, u in zip(present_values(d, rt.ndim), present_values(wd, rt.ndim))
             if v is not None and u is not None]
    flat = np.array([v for v, _ in pairs], dtype=rt.dtype)
    ws = np.array([u for _, u in pairs], dtype=wdt)
    try:
        want, _ = np.histogram(flat, bins, rng, weights=ws)
    except ValueError:
        return
    got = lazyk.histogram(x, bins, rng, weights=w).to_numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    with np.errstate(all="ignore"):  # (no weight at all: 0 / 0, as NumPy)
        dens = lazyk.histogram(x, bins, rng, weights=w, density=True).to_numpy()
        np.testing.assert_allclose(dens, np.histogram(flat, bins, rng, weights=ws,
                                                      density=True)[0], rtol=1e-12)


def test_float32_edges_and_values_on_edges():
    # values exactly on float32 edges of a range given as Python floats: NumPy's edges are
    # float32, and so is the comparison
    edges = np.linspace(0.1, 0.7, 13, dtype=np.float32)
    x = np.concatenate([edges, np.nextafter(edges, 0), np.nextafter(edges, 1),
                        np.float32([np.nan, np.inf, -np.inf, 0.0999, 0.7001])])
    x = np.tile(x, 50).astype(np.float32)
    for bins, rng in ((12, (0.1, 0.7)), (12, None), (7, (np.float32(0.1), np.float32(0.7))),
                      (5, (0.1, 0.70000001))):
        sel = x if rng is not None else x[np.isfinite(x)]
        want = np.histogram(sel, bins, rng)
        got = lazyk.histogram(sel, bins, rng)
        np.testing.assert_array_equal(got.to_numpy(), want[0])
        np.testing.assert_array_equal(got.edges, want[1])
        assert got.edges.dtype == want[1].dtype


def test_integer_data_and_narrow_ranges():
    rng = np.random.default_rng(4)
    for dt in (np.int8, np.int16, np.uint8, np.int64, np.float16):
        x = rng.integers(-100, 100, 3000).astype(dt)
        for bins, r in ((13, None), (7, (-3, 9)), (200, (0, 1)), (3, (5, 5))):
            want = np.histogram(x, bins, r)
            got = lazyk.histogram(x, bins, r)
            np.testing.assert_array_equal(got.to_numpy(), want[0])
            np.testing.assert_array_equal(got.edges, want[1])


def test_missing_values_and_rows_are_not_counted():
    x = lazyk.array([[1.0, None, 2.5], None, [], [3.0, float("nan"), 7.0]],
                    type="4 * ?var * ?float64")
    got, edges = lazyk.histogram(x, 3, (0, 6))
    assert got.tolist() == [1, 2, 0] and edges.tolist() == [0, 2, 4, 6]
    w = lazyk.array([[1.0, 5.0, None], None, [], [2.0, 2.0, 2.0]], type="4 * ?var * ?float64")
    assert lazyk.histogram(x, 3, (0, 6), weights=w).to_numpy().tolist() == [1.0, 2.0, 0.0]
    assert lazyk.histogram(lazyk.array([], type="0 * var * float64"), 4).to_numpy().tolist() \
        == [0, 0, 0, 0]
    assert lazyk.histogram(lazyk.array([], type="0 * var * float64"), 4).edges.tolist() == \
        np.histogram([], 4)[1].tolist()


def test_a_histogram_of_flattened_lists_counts_the_lists_in_place(monkeypatch):
    """Every axis is counted, so `flatten` under a histogram (Awkward users write
    `hist.fill(ak.flatten(x))`) changes no count: its lists are counted where they are
    (missing lists and values nowhere), never flattened first."""
    from lazyk.runtime import row_steps

    x = lazyk.array([[1.0, None, 2.5], None, [], [3.0, float("nan"), 7.0]],
                    type="4 * ?var * ?float64")
    deep = lazyk.array([[[1.0], [2.0, 3.0]], [], [[4.0], [], [7.5]]])
    ran = []
    real = row_steps._restructured
    monkeypatch.setattr(row_steps, "_restructured",
                        lambda name, *a: ran.append(name) or real(name, *a))
    for e, values in [(lazyk.flatten(x), [1.0, 2.5, 3.0, 7.0]),
                      (lazyk.flatten(x, axis=None), [1.0, 2.5, 3.0, 7.0]),
                      (lazyk.flatten(lazyk.flatten(deep)), [1.0, 2.0, 3.0, 4.0, 7.5]),
                      (lazyk.flatten(deep, axis=2) * 2, [2.0, 4.0, 6.0, 8.0, 15.0])]:
        got, edges = lazyk.histogram(e, 4, (0, 8))
        want, want_edges = np.histogram(values, 4, (0, 8))
        assert got.tolist() == want.tolist() and got.dtype == np.int64
        assert edges.tolist() == want_edges.tolist()
    assert ran == ["flatten"]  # only the one under other work
    w = lazyk.array([[1.0, 5.0, None], None, [], [2.0, 2.0, 2.0]], type="4 * ?var * ?float64")
    got = lazyk.histogram(lazyk.flatten(x), 3, (0, 6), weights=lazyk.flatten(w))
    assert got.to_numpy().tolist() == [1.0, 2.0, 0.0]  # weights: flattened as given


def test_per_event_weights_broadcast():
    jets = lazyk.array([[10.0, 20.0], [30.0], []])
    w = np.array([1.0, 2.0, 4.0])
    got = lazyk.histogram(jets, 3, (0, 30), weights=w[:, None]).to_numpy()
    assert got.tolist() == [0.0, 1.0, 3.0]


def test_several_histograms_in_one_pass():
    rng = np.random.default_rng(7)
    counts = rng.poisson(4, 20_000)
    off = np.concatenate([[0], np.cumsum(counts)])
    pt = lazyk.from_offsets(off, rng.exponential(30, int(counts.sum())))
    eta = lazyk.from_offsets(off, rng.normal(0, 2, int(counts.sum())))
    h1, h2 = lazyk.histogram(pt, 50, (0, 100)), lazyk.histogram(eta, 20, (-4, 4))
    h3 = lazyk.histogram(pt, 10, (0, 200), weights=abs(eta))
    before = nest_stats["runs"]
    a, b, c = lazyk.evaluate(h1, h2, h3)
    assert nest_stats["runs"] - before == 1  # one pass over the jets for all three
    flat_pt, flat_eta = pt.to_list(), eta.to_list()
    fp = np.array([v for r in flat_pt for v in r])
    fe = np.array([v for r in flat_eta for v in r])
    np.testing.assert_array_equal(a, np.histogram(fp, 50, (0, 100))[0])
    np.testing.assert_array_equal(b, np.histogram(fe, 20, (-4, 4))[0])
    np.testing.assert_allclose(c, np.histogram(fp, 10, (0, 200), weights=np.abs(fe))[0],
                               rtol=1e-12)
    # rows that do not line up: one pass each, the same counts
    other = lazyk.from_offsets(np.arange(len(counts) + 1), np.ones(len(counts)))
    d, e = lazyk.evaluate(h1, lazyk.histogram(other, 2, (0, 2)))
    np.testing.assert_array_equal(d, a)
    assert e.tolist() == [0, len(counts)]


def test_threads_fill_their_own_counters():
    rng = np.random.default_rng(9)
    counts = rng.poisson(3, 300_000)
    off = np.concatenate([[0], np.cumsum(counts)])
    values = rng.normal(0, 1, int(counts.sum()))
    x = lazyk.from_offsets(off, values)
    want = np.histogram(values, 64, (-3, 3))[0]
    with lazyk.threads(1):
        one = lazyk.histogram(x, 64, (-3, 3)).to_numpy()
    with lazyk.threads(2):
        two = lazyk.histogram(x, 64, (-3, 3)).to_numpy()
        flat = lazyk.histogram(values, 64, (-3, 3)).to_numpy()
    np.testing.assert_array_equal(one, want)
    np.testing.assert_array_equal(two, want)
    np.testing.assert_array_equal(flat, want)


def test_histogram_of_pair_values_walks_the_pairs():
    x = lazyk.array([[1.0, 2.0, 3.0], [], [4.0, 5.0], [6.0]])
    c = lazyk.combinations(x, 2)
    got = lazyk.histogram(c["0"] + c["1"], 5, (0, 10)).to_numpy()
    sums = [a + b for row in x.to_list() for i, a in enumerate(row) for b in row[i + 1:]]
    np.testing.assert_array_equal(got, np.histogram(sums, 5, (0, 10))[0])


def test_lazy_until_asked_and_errors():
    x = lazyk.array([[1.0, 2.0], [3.0]])
    h = lazyk.histogram(x * 2, 4, (0, 8))
    assert isinstance(h, lazyk.frontend.histogram.Histogram)
    assert h.dtype == np.int64 and h.shape == (4,)
    assert np.asarray(h).tolist() == [0, 1, 1, 1]
    assert h.eval().to_list() == [0, 1, 1, 1]
    with pytest.raises(ValueError, match="max must be larger than min"):
        lazyk.histogram(x, 3, (2, 1))
    with pytest.raises(ValueError, match="not finite"):
        lazyk.histogram(x, 3, (0, np.inf))
    with pytest.raises(ValueError, match="must be positive"):
        lazyk.histogram(x, 0)
    with pytest.raises(ValueError, match="increase monotonically"):
        lazyk.histogram(x, [0, 2, 1])
    with pytest.raises(ValueError, match="autodetected range of \\[nan, nan\\]"):
        lazyk.histogram(lazyk.array([[1.0, float("nan")]]), 3).to_numpy()
    with pytest.raises(lazyk.NotSupportedError, match="real numbers only"):
        lazyk.histogram(x, 3, weights=x * 1j)
    with pytest.raises(lazyk.NotSupportedError, match=r"histogram of 1 \* string \(strings\)"):
        lazyk.histogram(lazyk.array(["abc"]), 3, (0, 1))
    with pytest.raises(TypeError, match="out= takes one expression"):
        lazyk.evaluate(h, h, out=np.empty(4))


def test_numpy_histogram_of_an_expression_is_numpys_pair():
    x = lazyk.array([[55.0, 21.0, 40.0], [], [18.0, 72.0]])
    h = np.histogram(x * 1, 4, (0, 80))  # lazy until read
    want = np.histogram([55.0, 21.0, 40.0, 18.0, 72.0], 4, (0, 80))
    assert len(h) == 2
    np.testing.assert_array_equal(h[0], want[0])
    np.testing.assert_array_equal(h[1], want[1])
    counts, edges = h
    np.testing.assert_array_equal(counts, want[0])
    assert counts.dtype == np.int64 and edges.dtype == want[1].dtype


def test_weights_that_do_not_broadcast_are_refused_at_once():
    x = np.arange(4.0, dtype=np.float32)
    with pytest.raises(lazyk.ShapeError, match=r"weights \(3 \* float64\) do not broadcast to "
                       r"the values \(4 \* float32\): axis 0 has 3 weights for 4 values"):
        lazyk.histogram(x, 3, (0, 4), weights=np.ones(3))
    grid = lazyk.array(np.ones((2, 3)))
    with pytest.raises(lazyk.ShapeError, match="axis 0 has 3 weights for 2 values"):
        lazyk.histogram(grid, 2, (0, 2), weights=np.ones((3, 3)))
    got = lazyk.evaluate(lazyk.histogram(grid, 2, (0, 2), weights=np.array([1.0, 2.0, 3.0])))
    want = np.histogram(np.ones((2, 3)), 2, (0, 2), weights=np.tile([1.0, 2.0, 3.0], (2, 1)))[0]
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype


def test_weights_of_more_dims_than_the_values_name_both():
    # one weight per value: weights with a dim the values lack would stretch the values
    # (it was a broadcasting error naming 'operand 1' and a row)
    v = lazyk.array([[1.0, 2.0], [3.0], []])
    for w in ([[[1.0], [3.0]], [[5.0]], []], [[[1.0, 2.0], [3.0, 1.0]], [[5.0, 1.0]], []]):
        w = lazyk.array(w)
        with pytest.raises(lazyk.NotSupportedError, match=re.escape(
                f"histogram: the weights ({w.type}) have more dims than the values "
                "(3 * var * float64)")):
            lazyk.histogram(v, 3, (0, 6), weights=w)

def test_weights_that_do_not_fit_a_flattened_array_name_both_operands():
    x = lazyk.array([[1.0, 2.0], [3.0], []], "3 * var * float64")
    h = lazyk.histogram(lazyk.flatten(x), 3, (0, 4), weights=np.ones(5))
    with pytest.raises(lazyk.ShapeError, match=r"histogram of values \(var \* float64\) with "
                       r"weights \(5 \* float64\): .*\b3\b.*\b5\b"):
        h.to_numpy()
    got = lazyk.histogram(lazyk.flatten(x), 3, (0, 4), weights=np.array([1.0, 2.0, 4.0])).to_numpy()
    np.testing.assert_array_equal(got, [1.0, 2.0, 4.0])


@settings(max_examples=10, deadline=None)
@given(st.data())
def test_histogram_of_a_selection_counts_the_kept_values(data):
    # the histogram of x[mask] counts x's values where the mask is true (its bins are
    # computed in place, the selection is not gathered): the same counts as the
    # selection's own values give, for element masks, row masks and `?bool` masks
    t, d, x = drawn(data, dtypes=["float64", "float32", "int32"])
    rt = R.parse_type(t)
    if rt.ndim < 1:
        return
    cut = data.draw(st.sampled_from([-1, 0, 2]), label="cut")
    by_rows = rt.ndim > 1 and data.draw(st.booleans(), label="row mask")
    mask = lazyk.num(x, axis=1) > 1 if by_rows else x > cut
    bins, rng = data.draw(st.sampled_from([(5, (-3, 3)), (3, (0, 1)),
                                           (np.array([-2.0, 0.0, 0.5, 4.0]), None)]),
                          label="bins")
    kept = x[mask].eval()
    values = [v for v in present_values(kept.to_list(), rt.ndim) if v is not None]
    want = np.histogram(np.array(values, dtype=rt.dtype), bins, rng)[0]
    np.testing.assert_array_equal(lazyk.histogram(x[mask], bins, rng).to_numpy(), want)


def test_histogram_of_selected_rows_gathers_nothing():
    rng = np.random.default_rng(4)
    counts = rng.poisson(3, 5_000)
    off = np.concatenate([[0], np.cumsum(counts)])
    pt = lazyk.from_offsets(off, rng.exponential(30, int(counts.sum())))
    met = rng.gamma(2, 15, len(counts))
    picked = lazyk.array(met)[lazyk.sum(pt > 40, axis=1) >= 2]
    h = lazyk.histogram(picked, 20, (0, 200))
    passing = np.array([sum(v > 40 for v in row) >= 2 for row in pt.to_list()])
    np.testing.assert_array_equal(h.to_numpy(), np.histogram(met[passing], 20, (0, 200))[0])
    # one pass folds each event's jets into its mask, then bins and counts the event's value
    # where the mask is true: no kernel reads the selected rows, no fold is stored
    text = lazyk.explain(h)
    assert text.count("\n== nest ") == 1 and "of row folds" in text


def _events(seed: int = 5, n: int = 3_000):
    rng = np.random.default_rng(seed)
    counts = rng.poisson(2.5, n)
    off = np.concatenate([[0], np.cumsum(counts)])
    pt = rng.exponential(30, int(counts.sum()))
    return counts, off, pt, rng.gamma(2, 15, n)


def _reference(counts, pt, keep_rows):
    """Per-row Python lists of the pt of the rows kept."""
    rows, k = [], 0
    for c, kept in zip(counts, keep_rows):
        if kept:
            rows.append(list(pt[k:k + c]))
        k += c
    return rows


def test_histogram_after_a_row_selection_reads_all_rows_and_counts_the_kept():
    counts, off, pt, met = _events()
    x = lazyk.from_offsets(off, pt)
    m = lazyk.num(x) >= 2
    sel, met_sel = x[m], lazyk.array(met)[m]
    kept = _reference(counts, pt, counts >= 2)
    # pairs of the kept rows, a per-row mask over them, and a per-event value
    pairs = lazyk.combinations(sel, 2)
    mass = pairs["0"] + pairs["1"]
    want_mass = [a + b for r in kept for i, a in enumerate(r) for b in r[i + 1:]]
    h = lazyk.histogram(mass, 30, (0, 300))
    np.testing.assert_array_equal(h.to_numpy(), np.histogram(want_mass, 30, (0, 300))[0])
    assert "select" not in lazyk.frontend.graph.dump(h.index().node)  # nothing gathered
    good = lazyk.any(mass > 90, axis=1)
    want = [v for r, v in zip(kept, met[counts >= 2])
            if any(a + b > 90 for i, a in enumerate(r) for b in r[i + 1:])]
    h = lazyk.histogram(met_sel[good], 20, (0, 200))
    np.testing.assert_array_equal(h.to_numpy(), np.histogram(want, 20, (0, 200))[0])
    assert "select" not in lazyk.frontend.graph.dump(h.index().node)
    # the row lengths (`num`) are computed first, then one pass folds each event's pairs
    # and bins and counts its value where both masks hold: no fold is stored
    text = lazyk.explain(h)
    assert text.count("\n== nest ") == 1 and "of row folds" in text
    # the largest pt of each kept row, by argmax and a gather inside the rows
    lead = sel[lazyk.argmax(sel, axis=1, keepdims=True)]
    h = lazyk.histogram(lead, 20, (0, 200))
    np.testing.assert_array_equal(h.to_numpy(),
                                  np.histogram([max(r) for r in kept], 20, (0, 200))[0])


def test_histogram_of_selected_rows_with_work_across_rows_or_other_arrays():
    # each of these reads more than the selected rows: the selection is computed as
    # written, and the counts are the selection's
    counts, off, pt, met = _events(6)
    x = lazyk.from_offsets(off, pt)
    m = lazyk.num(x) >= 2
    kept = _reference(counts, pt, counts >= 2)
    flat = np.concatenate([np.array(r) for r in kept])
    n_kept = len(kept)
    other = lazyk.array(np.arange(n_kept, dtype=np.float64))  # an array of the kept rows
    cases = [
        (x[m] - lazyk.mean(x[m]), flat - flat.mean()),  # a reduction over every row
        (lazyk.sum(x[m], axis=1) + other, [sum(r) + i for i, r in enumerate(kept)]),
        (x[m][lazyk.num(x[m]) >= 3], [v for r in kept if len(r) >= 3 for v in r]),
    ]
    y = lazyk.from_offsets(off, pt * 2)
    cases.append((x[m] + y[lazyk.num(y) >= 2], flat * 3))  # two masks of one value
    for got, want in cases:
        h = lazyk.histogram(got, 25, (-100, 400))
        np.testing.assert_allclose(h.to_numpy(), np.histogram(want, 25, (-100, 400))[0])


def test_positions_that_fit_only_the_selected_rows_are_not_read_on_the_others():
    # the second item of each row of two or more: position 1 lies outside the rows the
    # selection drops, so those rows are never gathered from
    x = lazyk.array([[5.0, 7.0], [1.0], [], [3.0, 4.0, 9.0]])
    sel = x[lazyk.num(x) >= 2]
    second = sel[lazyk.argmin(sel, axis=1, keepdims=True) * 0 + 1]
    np.testing.assert_array_equal(lazyk.histogram(second, 2, (0, 10)).to_numpy(), [1, 1])
    lead = sel[lazyk.argmax(sel, axis=1, keepdims=True)]  # (argmax: always in its row)
    h = lazyk.histogram(lead, 2, (0, 10))
    np.testing.assert_array_equal(h.to_numpy(), [0, 2])
    assert "select" not in lazyk.frontend.graph.dump(h.index().node)


def test_a_mask_of_items_after_a_row_selection():
    # sel.pt[abs(sel.eta) < 1]: the rows' mask and the items' mask both hold, each on its
    # own dims
    counts, off, pt, _ = _events(8)
    eta = np.random.default_rng(8).normal(0, 2, len(pt))
    x = lazyk.zip({"pt": lazyk.from_offsets(off, pt), "eta": lazyk.from_offsets(off, eta)})
    sel = x[lazyk.num(x) >= 2]
    h = lazyk.histogram(sel.pt[abs(sel.eta) < 1], 10, (0, 100))
    keep = np.repeat(counts >= 2, counts) & (np.abs(eta) < 1)
    np.testing.assert_array_equal(h.to_numpy(), np.histogram(pt[keep], 10, (0, 100))[0])
    assert "select" not in lazyk.frontend.graph.dump(h.index().node)


def test_values_next_to_every_edge_match_numpy():
    # equal bins are estimated in one multiply, and only values near an edge are corrected
    # against the edges: values on, just below and just above every edge, of ranges far
    # from 0, narrow, wide and negative, in every float dtype and integers
    for dt in (np.float32, np.float64, np.float16, np.int64):
        for bins, rng in ((100, (0.0, 200.0)), (7, (-3.3, 9.1)), (1000, (1e4, 1e4 + 30.0)),
                          (3, (-1e30, 1e30)), (64, (0.1, 0.7)), (50, (-5, 5)),
                          (100, (123456.7, 123457.7)), (64, (0.0, 16.0)), (3, (0, 3 * 2.0 ** -20)),
                          (100, (15.0, 60.0))):
            if dt is np.float16 and max(abs(v) for v in rng) > 1e3:
                continue  # (no finite float16 edges there)
            if dt is np.int64 and max(abs(v) for v in rng) > 1e15:
                continue
            edges = np.histogram_bin_edges(np.zeros(0, dt), bins, rng)
            near = [edges]
            for _ in range(3):
                near += [np.nextafter(near[-2 if len(near) > 1 else 0], -np.inf),
                         np.nextafter(near[-1], np.inf)]
            spread = np.random.default_rng(bins).uniform(*rng, 3000)
            x = np.concatenate(near + [np.linspace(*rng, 997), spread]).astype(dt)
            want = np.histogram(x, bins, rng)[0]
            h = lazyk.histogram(lazyk.array(x), bins, rng)
            np.testing.assert_array_equal(h.to_numpy(), want,
                                          err_msg=f"{dt.__name__} {bins} {rng}")
    assert "counts by estimate" in h.explain()
    # float32 data far from float32's limits is estimated in float32
    h = lazyk.histogram(lazyk.array(np.float32([20.0])), 100, (15.0, 60.0))
    assert "floor(%9) : float32" in h.explain()


def test_bins_of_a_power_of_two_width_from_zero_need_no_correction():
    # value * (1 / width) is exact there: the estimate is the bin, nothing is corrected
    tiny = [0.0, -0.0, 1e-40, 5e-324, np.inf, -np.inf, np.nan, -1e-30]
    for dt in (np.float32, np.float64, np.int32):
        for bins, rng in ((100, (0.0, 200.0)), (8, (0, 1)), (256, (0.0, 256.0))):
            edges = np.histogram_bin_edges(np.zeros(0, dt), bins, rng)
            near = [edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf)]
            x = np.concatenate(near + [np.float64(tiny)]) if dt is not np.int32 else \
                np.arange(-3, 300)
            x = x.astype(dt) if dt is not np.float32 else \
                np.concatenate([x.astype(dt), np.nextafter(edges.astype(dt), dt(-np.inf))])
            h = lazyk.histogram(lazyk.array(x), bins, rng)
            np.testing.assert_array_equal(h.to_numpy(), np.histogram(x, bins, rng)[0],
                                          err_msg=f"{dt.__name__} {bins} {rng}")
            text = h.explain()
            assert "counts by estimate" not in text and "floor(" not in text
    # a width that is not a power of two, or a range not from 0: corrected near the edges
    for rng in ((0.0, 30.0), (2.0, 202.0)):
        h = lazyk.histogram(lazyk.array(np.linspace(0, 300, 7)), 100, rng)
        assert "counts by estimate" in h.explain()


def test_a_range_that_is_not_a_pair_is_refused_by_name():
    for bad in ((0, 1, 2), (1,), 5):
        with pytest.raises(ValueError, match="give a pair"):
            lazyk.histogram(lazyk.array(np.arange(3.0)), 2, bad)


def test_the_same_query_over_new_arrays_bins_their_own_values():
    # a histogram's bin graph is kept by the structure of its expression: over other
    # arrays of that structure it reads those arrays, never the ones it was built for
    rng = np.random.default_rng(4)
    for bins, span in ((16, (0.0, 16.0)), (30, (0.3, 7.1))):  # exact bins, corrected bins
        for _ in range(3):
            counts = rng.poisson(3, 400)
            values = rng.uniform(-1, 9, counts.sum()).astype(np.float32)
            x = lazyk.from_offsets(np.concatenate([[0], np.cumsum(counts)]), values)
            got = [lazyk.histogram(x[x > 2], bins, span).eval(),
                   lazyk.histogram(x * 2, bins, span).eval()]
            want = [np.histogram(values[values > 2], bins, span)[0],
                    np.histogram(values * np.float32(2), bins, span)[0]]
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)


def test_a_kept_bin_graph_is_not_reused_over_missing_mask_elements():
    # `x[m]` with a bool mask and with a ?bool mask build alike but bin differently (a
    # missing mask element gives a missing value: not counted)
    x = lazyk.array([[1.0, 2.0, 3.0], [4.0], [5.0, 6.0]])
    plain = lazyk.array([[True, False, True], [True], [False, True]])
    maybe = lazyk.array([[True, None, True], [None], [False, True]], type="3 * var * ?bool")
    for m, want in ((plain, [1, 0, 1, 1, 0, 1]), (maybe, [1, 0, 1, 0, 0, 1]),
                    (plain, [1, 0, 1, 1, 0, 1])):
        got = lazyk.histogram(x[m], 6, (0.5, 6.5)).eval()
        np.testing.assert_array_equal(got, want)


def test_bools_without_a_range_bin_as_numpys_uint8():
    b = np.array([True, False, True])
    for x in (lazyk.array(b), lazyk.array([[True, False], [True]])):
        counts, edges = lazyk.histogram(x, 2)
        want = np.histogram(b, 2)
        np.testing.assert_array_equal(counts, want[0])
        np.testing.assert_array_equal(edges, want[1])


def test_an_empty_rows_max_counts_nowhere_with_an_automatic_range():
    pt = lazyk.array([[45.0, 10.0], [], [50.0]])
    counts, edges = lazyk.histogram(lazyk.max(pt, axis=1), 2)
    np.testing.assert_array_equal(counts, [1, 1])
    np.testing.assert_array_equal(edges, [45.0, 47.5, 50.0])
    np.testing.assert_array_equal(lazyk.histogram(lazyk.max(pt, axis=1), 2, (0, 100))[0],
                                  [1, 1])


def test_float32_range_scalars_bin_as_numpy_with_their_float32_edges():
    # np.linspace computes the edges in float32 (then float64): edge 55 is 0.0 exactly,
    # not the float64 value near 4.8e-8, and a value of 0 is in bin 55
    r = (np.float32(-3.3), np.float32(2.7))
    for x in (np.zeros(4, np.int64), np.float64([0.0, 1e-9, -1e-9, 0.6, -0.6])):
        counts, edges = lazyk.histogram(x, 100, r)
        want, want_edges = np.histogram(x, 100, r)
        np.testing.assert_array_equal(counts, want)
        np.testing.assert_array_equal(edges, want_edges)


def test_an_automatic_range_over_a_selection_that_keeps_nothing_is_0_to_1():
    a = lazyk.array(np.array([1.0, -1.0, 2.0]))
    counts, edges = lazyk.histogram(a[a > 5], 3)
    want = np.histogram(np.zeros(0), 3)
    np.testing.assert_array_equal(counts, want[0])
    np.testing.assert_array_equal(edges, want[1])
    # (its min and max: `initial` where nothing is kept, as NumPy's)
    assert lazyk.evaluate(lazyk.min(a[a > 5], initial=np.inf)) == np.inf
    assert lazyk.evaluate(lazyk.max(a[a > 0], initial=-np.inf)) == 2.0


def test_a_weighted_histogram_of_a_selection_after_an_unweighted_one():
    # the unweighted one bins the values in place (the selection never gathered); the
    # weighted one reads the selected values and weights: each keeps its own bin graph
    x, w = np.array([1.0, -1.0, 2.0, -3.0, 0.5]), np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    a, m = lazyk.array(x), lazyk.array(x) > 0
    np.testing.assert_array_equal(lazyk.histogram(a[m], 3, (0, 3))[0], [1, 1, 1])
    got = lazyk.histogram(a[m], 3, (0, 3), weights=lazyk.array(w)[m])[0]
    np.testing.assert_array_equal(got, np.histogram(x[x > 0], 3, (0, 3), weights=w[x > 0])[0])
    np.testing.assert_array_equal(lazyk.histogram(a[m], 3, (0, 3))[0], [1, 1, 1])


def test_each_evaluation_reads_the_data_and_its_range_as_they_are_then():
    x = np.array([0.0, 1.0, 2.0, 3.0])
    h = lazyk.histogram(lazyk.array(x), 3)
    np.testing.assert_array_equal(h.to_numpy(), [1, 1, 2])
    x[:] = [10.0, 20.0, 30.0, 40.0]  # (in place: the same array)
    counts, edges = h
    want = np.histogram(x, 3)
    np.testing.assert_array_equal(counts, want[0])
    np.testing.assert_array_equal(edges, want[1])
    # edges given as an array are the histogram's own: changing the caller's array later
    # changes neither what counts nor what `.edges` shows
    v, given = np.full(4, 0.9), np.array([0.0, 0.5, 1.0])
    h = lazyk.histogram(v, given)
    given[1] = 0.95
    np.testing.assert_array_equal(h.to_numpy(), [0, 4])
    np.testing.assert_array_equal(h.edges, [0.0, 0.5, 1.0])
    with pytest.raises(ValueError, match="NaN"):
        lazyk.histogram(v, [0.0, np.nan, 1.0])


def test_float16_data_and_subnormal_widths_bin_as_numpy():
    # NumPy estimates the bin in float16 there (off by a bin or more), then corrects it
    # once each way against the float16 edges: lazyk computes the same
    rng = np.random.default_rng(1)
    cases = [(np.float16([-0.00263, 0.0001941, 0.003473]), 1000, None),
             (np.uint8([235, 3, 240]), 1000, (np.float16(123.44), np.float16(378.5))),
             (np.int64([1895]), 1000, (np.float16(-17.62), np.float16(2336.0))),
             (rng.normal(0, 100, 2000).astype(np.float16), 257, None),
             (rng.normal(0, 100, 2000).astype(np.float16), 1929, (-123.4, 250.7)),
             (np.float64([1e-310, 2e-310, 3e-310]), 7, None),  # (n / width overflows)
             (np.float64([0.0, 5e-324, 1e-323, 1.5e-323, 2e-323]), 4, (0, 2e-323)),
             # (float32 edges: n / width past float32's range; subnormal float32 edges,
             # whose linspace step has few bits, with float64 values near them)
             (np.float32([0.0, 1e-38, 2.5e-38, 5e-38, 7.5e-38, 9.9e-38]), 100, (0.0, 1e-37)),
             (np.r_[2.598441755382151e-40, rng.uniform(3.86e-41, 4.67e-40, 500)], 64,
              (np.float32(3.8572e-41), np.float32(4.67683e-40)))]
    for x, n, r in cases:
        want, want_edges = np.histogram(x, n, r)
        got, edges = lazyk.histogram(x, n, r)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(edges, want_edges)


def test_values_in_missing_rows_of_a_fixed_size_count_where_present():
    x = lazyk.array([None, [1.5, 0.0], [2.0]], type="3 * ?var * float64")
    p = lazyk.pad_none(x, 2, clip=True)  # 3 * ?2 * ?float64
    assert str(p.eval().type) == "3 * ?2 * ?float64"
    got = lazyk.histogram(p, 3, (0, 3)).to_numpy()
    np.testing.assert_array_equal(got, np.histogram([1.5, 0.0, 2.0], 3, (0, 3))[0])
    assert got.dtype == np.int64
    with pytest.raises(lazyk.NotSupportedError, match=r"\?n.*flatten"):
        lazyk.histogram(p, 3, (0, 3), weights=p * 2).to_numpy()


def test_explain_of_a_histogram_its_data_makes_fail():
    x = lazyk.array([[1.0, 2.0], [], [3.0]])
    text = str(lazyk.explain(lazyk.histogram(x[lazyk.array([[5], [], [0]])], 2, (0, 4))))
    assert "== running it on its data raised IndexError" in text

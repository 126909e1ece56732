"""Histograms of row folds: one pass folds each row (a sum, count, min... over its last
axis) and counts the row's value in the histogram (`Bins.after`); the folds are never
stored. Compared with numpy.histogram over plain-Python folds."""
from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from lazyk.kernel import nest as nest_kernel


def _rows(seed: int, n: int = 2_000, lam: float = 3.0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    counts = rng.poisson(lam, n)
    off = np.concatenate([[0], np.cumsum(counts)])
    values = (rng.exponential(30, int(off[-1]))).astype(dtype)
    per_row = rng.gamma(2, 15, n)
    return off, values, per_row, [list(values[a:b]) for a, b in zip(off[:-1], off[1:])]


def _one_nest(h) -> bool:
    text = lazyk.explain(h)
    return text.count("\n== nest ") == 1 and "of row folds" in text


FOLDS = {
    "sum": (lambda x: lazyk.sum(x, axis=1), lambda r: sum(r)),
    "prod": (lambda x: lazyk.prod(x / 30, axis=1), lambda r: float(np.prod(np.array(r) / 30))),
    "min": (lambda x: lazyk.min(x, axis=1), lambda r: min(r) if r else None),
    "max": (lambda x: lazyk.max(x, axis=1), lambda r: max(r) if r else None),
    "count": (lambda x: lazyk.sum(x > 40, axis=1), lambda r: sum(v > 40 for v in r)),
}


@pytest.mark.parametrize("fold", sorted(FOLDS))
@pytest.mark.parametrize("bins", [(100, (0, 200)), (7, (3.5, 180.25))])
def test_a_histogram_of_each_rows_fold_matches_numpy(fold, bins):
    off, values, _, rows = _rows(1)
    lazy, ref = FOLDS[fold]
    x = lazyk.from_offsets(off, values)
    h = lazyk.histogram(lazy(x), *bins)
    want = np.histogram([v for v in map(ref, rows) if v is not None], *bins)[0]
    np.testing.assert_array_equal(h.to_numpy(), want)
    assert h.to_numpy().dtype == np.int64
    assert _one_nest(h)


@pytest.mark.parametrize("lam", [0.3, 4.0, 30.0])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_values_per_row_selected_by_a_count_of_trues(lam, dtype):
    # `met[sum(pt > 40, axis=1) >= 2]`: rows short and long, empty rows, and values of
    # the row read at each row's end
    off, values, met, rows = _rows(2, lam=lam, dtype=dtype)
    x = lazyk.from_offsets(off, values)
    h = lazyk.histogram(lazyk.array(met)[lazyk.sum(x > 40, axis=1) >= 2], 50, (0, 200))
    keep = np.array([sum(v > 40 for v in r) >= 2 for r in rows], bool)
    np.testing.assert_array_equal(h.to_numpy(), np.histogram(met[keep], 50, (0, 200))[0])
    assert _one_nest(h)


def test_weights_and_strided_values_of_each_row():
    off, values, met, rows = _rows(3)
    x = lazyk.from_offsets(off, values)
    wide = np.repeat(met, 2)[::2]  # (a strided view: the pass reads it row by row)
    assert wide.strides == (16,)
    folded = lazyk.max(x, axis=1) - lazyk.array(wide)
    h = lazyk.histogram(folded, 40, (-100, 300), weights=lazyk.array(wide) / 10)
    got = [(max(r) - m, m / 10) for r, m in zip(rows, met) if r]
    want = np.histogram([g for g, _ in got], 40, (-100, 300), weights=[w for _, w in got])[0]
    np.testing.assert_allclose(h.to_numpy(), want, rtol=1e-12)
    assert h.to_numpy().dtype == np.float64
    assert _one_nest(h)


def test_two_histograms_of_one_fold_run_in_one_pass():
    off, values, met, rows = _rows(4)
    x = lazyk.from_offsets(off, values)
    top = lazyk.max(x, axis=1)
    h1 = lazyk.histogram(top, 30, (0, 300))
    h2 = lazyk.histogram(lazyk.array(met)[top > 60], 30, (0, 300))
    a, b = lazyk.evaluate(h1, h2)
    tops = [max(r) if r else None for r in rows]
    np.testing.assert_array_equal(a, np.histogram([t for t in tops if t is not None], 30,
                                                  (0, 300))[0])
    np.testing.assert_array_equal(b, np.histogram(
        [m for t, m in zip(tops, met) if t is not None and t > 60], 30, (0, 300))[0])


def test_any_and_all_folds_and_empty_input():
    off, values, met, rows = _rows(5, lam=1.5)
    x = lazyk.from_offsets(off, values)
    for lazy, ref in ((lazyk.any, any), (lazyk.all, all)):
        h = lazyk.histogram(lazyk.array(met)[lazy(x > 20, axis=1)], 25, (0, 250))
        keep = np.array([ref(v > 20 for v in r) for r in rows], bool)
        np.testing.assert_array_equal(h.to_numpy(), np.histogram(met[keep], 25, (0, 250))[0])
    empty = lazyk.from_offsets(np.zeros(1, np.int64), np.zeros(0))
    h = lazyk.histogram(lazyk.sum(empty, axis=1), 10, (0, 10))
    assert h.to_numpy().tolist() == [0] * 10


def test_rows_and_values_of_different_lengths_are_refused():
    off, values, met, _ = _rows(6, n=50)
    x = lazyk.from_offsets(off, values)
    with pytest.raises(lazyk.ShapeError):
        lazyk.evaluate(lazyk.histogram(lazyk.array(met[:49])[lazyk.sum(x, axis=1) > 1], 10,
                                       (0, 100)))


def test_missing_values_take_the_path_that_folds_first():
    # `?T` values: the folds are computed first (then binned); the counts are NumPy's
    rng = np.random.default_rng(7)
    rows = [[None if rng.random() < 0.2 else float(rng.exponential(30))
             for _ in range(rng.poisson(3))] for _ in range(300)]
    x = lazyk.array(rows)
    assert "?" in str(x.type)
    h = lazyk.histogram(lazyk.sum(x, axis=1, skipna=True), 20, (0, 400))
    want = np.histogram([sum(v for v in r if v is not None) for r in rows], 20, (0, 400))[0]
    np.testing.assert_array_equal(h.to_numpy(), want)
    assert "of row folds" not in lazyk.explain(h)


_OPS = {"sum": (lazyk.sum, np.sum), "prod": (lazyk.prod, np.prod), "min": (lazyk.min, np.min),
        "max": (lazyk.max, np.max), "any": (lazyk.any, np.any), "all": (lazyk.all, np.all)}


@st.composite
def _row_fold_case(draw):
    n = draw(st.integers(0, 60))
    lens = draw(st.lists(st.sampled_from([0, 1, 1, 2, 3, 4, 9, 17, 40]), min_size=n,
                         max_size=n))
    dtype = draw(st.sampled_from(["float64", "float32", "int32", "int64"]))
    nan = dtype.startswith("float") and draw(st.booleans())
    vals = [draw(st.integers(-4, 4)) / (2 if dtype.startswith("float") else 1)
            for _ in range(sum(lens))]
    if nan and vals:
        vals[draw(st.integers(0, len(vals) - 1))] = float("nan")
    per_row = draw(st.lists(st.integers(0, 40), min_size=n, max_size=n))
    op = draw(st.sampled_from(sorted(_OPS)))
    form = draw(st.sampled_from(["fold", "selected", "weighted"]))
    bins = draw(st.sampled_from([(8, (-8.0, 8.0)), (5, (-3.0, 7.5)), (16, (0.0, 16.0))]))
    threads = draw(st.sampled_from([1, 2, 3]))
    return lens, np.array(vals, dtype), np.array(per_row, np.float64), op, form, bins, threads


@settings(max_examples=150, deadline=None)
@given(_row_fold_case())
def test_row_fold_histograms_match_a_per_row_reference(case):
    lens, vals, per_row, op, form, bins, threads = case
    off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    rows = [vals[a:b] for a, b in zip(off[:-1], off[1:])]
    lazy, ref = _OPS[op]
    x = lazyk.from_offsets(off, vals)
    src = x > 0 if op in ("any", "all") else x
    folded = lazy(src, axis=1)
    folds = []
    for r in rows:  # NumPy per row (min / max of an empty row: no value)
        r = r > 0 if op in ("any", "all") else r
        folds.append(None if op in ("min", "max") and len(r) == 0 else ref(r))
    weights = None
    if form == "fold":
        h = lazyk.histogram(folded, *bins)
        data = [float(f) for f in folds if f is not None]
    elif form == "selected":  # per-row values where the fold holds
        bins = (bins[0], (0, 40))
        mask = folded if op in ("any", "all") else folded > 1
        h = lazyk.histogram(lazyk.array(per_row)[mask], *bins)
        keep = [f is not None and (bool(f) if op in ("any", "all") else f > 1) for f in folds]
        data = [p for p, k in zip(per_row, keep) if k]
    else:  # the fold less a per-row value, weighted by another
        h = lazyk.histogram(folded - lazyk.array(per_row), *bins,
                            weights=lazyk.array(per_row) / 4)
        data = [float(f) - p for f, p in zip(folds, per_row) if f is not None]
        weights = [p / 4 for f, p in zip(folds, per_row) if f is not None]
    with lazyk.threads(threads), mock.patch.object(nest_kernel, "MIN_PART", 8):
        got = h.to_numpy()  # (several parts of these few rows)
    with np.errstate(invalid="ignore"):
        want = np.histogram(np.array(data, np.float64), bins[0], bins[1], weights=weights)[0]
    if weights is None:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)

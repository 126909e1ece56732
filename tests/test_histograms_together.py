"""Histograms evaluated together (`lazyk.evaluate(h1, h2, ...)`, one pass where they share
rows) count exactly what each counts alone: a missing value, or a row whose min / max
folds nothing, leaves out only the histograms that read it. Against numpy.histogram of
the plain-Python values (Awkward's None counts nowhere)."""
from __future__ import annotations

import numpy as np
import pytest

import lazyk


def _np(values, bins, rng):
    return np.histogram(np.asarray([v for v in values if v is not None], float), bins,
                        rng)[0].tolist()


def _row_max(rows, skip_missing=True):
    out = []
    for r in rows:
        vals = [v for v in r if v is not None] if skip_missing else r
        out.append(max(vals) if vals else None)
    return out


def _check_together(hists, wants):
    alone = [lazyk.evaluate(h).tolist() for h in hists]
    assert alone == wants
    together = [c.tolist() for c in lazyk.evaluate(*hists)]
    assert together == wants


def test_a_missing_value_leaves_out_only_the_histograms_that_read_it():
    rows = [[10.0, 50.0], [], [30.0], [5.0, None]]
    pt = lazyk.array(rows)  # 4 * var * ?float64
    w = [1.0, 2.0, 3.0, 4.0]
    sums = [sum(v for v in r if v is not None) for r in rows]
    _check_together(
        [lazyk.histogram(lazyk.max(pt, axis=1, skipna=True), 3, (0, 60)),
         lazyk.histogram(lazyk.sum(pt, axis=1, skipna=True), 3, (0, 60)),
         lazyk.histogram(lazyk.array(w), 3, (0, 6))],
        [_np(_row_max(rows), 3, (0, 60)), _np(sums, 3, (0, 60)), _np(w, 3, (0, 6))])


def test_a_missing_element_leaves_out_only_its_own_histogram():
    x = lazyk.array([1.0, None, 3.0, 4.5, None], type="5 * ?float64")
    y = lazyk.array([0.5, 1.5, None, 2.5, 3.5], type="5 * ?float64")
    _check_together([lazyk.histogram(x, 4, (0, 5)), lazyk.histogram(y, 4, (0, 5)),
                     lazyk.histogram(x + y, 4, (0, 10))],
                    [_np([1.0, None, 3.0, 4.5, None], 4, (0, 5)),
                     _np([0.5, 1.5, None, 2.5, 3.5], 4, (0, 5)),
                     _np([1.5, None, None, 7.0, None], 4, (0, 10))])


@pytest.mark.parametrize("n", [7, 3000])
def test_a_row_whose_max_folds_nothing_counts_nowhere_in_its_histogram_only(n):
    rng = np.random.default_rng(n)
    lens = rng.integers(0, 4, n)
    off = np.r_[0, np.cumsum(lens)].astype(np.int64)
    values = rng.uniform(0, 60, int(off[-1]))
    rows = [values[off[i]:off[i + 1]].tolist() for i in range(n)]
    pt = lazyk.from_offsets(off, values)
    met = rng.uniform(0, 6, n)
    _check_together(
        [lazyk.histogram(lazyk.max(pt, axis=1), 3, (0, 60)),
         lazyk.histogram(lazyk.max(pt, axis=1, initial=0.0), 3, (0, 60)),
         lazyk.histogram(met, 3, (0, 6))],
        [_np(_row_max(rows), 3, (0, 60)),
         _np([max(r, default=0.0) for r in rows], 3, (0, 60)), _np(met, 3, (0, 6))])


def test_folds_that_fold_nothing_in_larger_expressions_count_nowhere():
    rows = [[10.0, 50.0], [], [30.0]]
    pt = lazyk.array(rows)
    pairs = lazyk.combinations(pt, 2)
    hi, lo = _row_max(rows), [min(r) if r else None for r in rows]
    _check_together(
        [lazyk.histogram(lazyk.max(pt, axis=1) - lazyk.min(pt, axis=1), 3, (0, 60)),
         lazyk.histogram(lazyk.max(pairs["0"] + pairs["1"], axis=1), 3, (0, 100))],
        [_np([None if a is None else a - b for a, b in zip(hi, lo)], 3, (0, 60)),
         _np([60.0, None, None], 3, (0, 100))])
    nested = lazyk.array([[[1.0], []], [[2.0, 3.0]]])
    assert lazyk.evaluate(lazyk.histogram(lazyk.max(nested, axis=2), 3, (0, 6))).tolist() == \
        _np([1.0, 3.0], 3, (0, 6))


def test_selections_by_folds_over_missing_rows_keep_their_own_rows():
    rows = [None, [15.87, None], None, [40.0, 3.0]]
    pt = lazyk.array(rows)  # 4 * ?var * ?float64
    met = [6.2, 25.9, 31.0, 55.5]
    mx = lazyk.max(pt, axis=1, skipna=True, initial=-50.0)
    cnt = lazyk.sum(pt > 0, axis=1, skipna=True)
    py_mx = [None if r is None else max([v for v in r if v is not None] + [-50.0]) for r in rows]
    py_cnt = [None if r is None else sum(v is not None and v > 0 for v in r) for r in rows]
    _check_together(
        [lazyk.histogram(lazyk.array(met)[mx > 5], 5, (0, 100)),
         lazyk.histogram(lazyk.array(met)[cnt >= 2], 5, (0, 100))],
        [_np([m for m, k in zip(met, py_mx) if k is not None and k > 5], 5, (0, 100)),
         _np([m for m, k in zip(met, py_cnt) if k is not None and k >= 2], 5, (0, 100))])


def test_out_is_refused_for_one_histogram_naming_what_it_is():
    h = lazyk.histogram(lazyk.array([[1.0, 2.0], [], [3.0]]), 2, (0, 4))
    with pytest.raises(TypeError, match="a Histogram's result comes back as a new array"):
        lazyk.evaluate(h, out=np.zeros(2, np.int64))
    assert lazyk.evaluate(h).tolist() == [1, 2]


def test_folds_over_selections_that_fold_nothing_count_nowhere_weighted_too():
    rows = [[10.0, 50.0], [], [30.0], [5.0]]
    pt = lazyk.array(rows)
    met = [1.0, 2.0, 3.0, 4.0]
    w = [0.5, 1.0, 2.0, 4.0]
    kept = [[v for v in r if v > 20] for r in rows]
    lo = [min(r) if r else None for r in kept]
    hi = [max(r) if r else None for r in kept]
    sel = [m for m, h in zip(met, hi) if h is not None and h > 40]
    sel_w = [x for x, h in zip(w, hi) if h is not None and h > 40]
    h_lo = lazyk.histogram(lazyk.min(pt[pt > 20], axis=1), 3, (0, 60))
    h_met = lazyk.histogram(lazyk.array(met)[lazyk.max(pt[pt > 20], axis=1) > 40], 4, (0, 4))
    h_w = lazyk.histogram(lazyk.array(met)[lazyk.max(pt[pt > 20], axis=1) > 40], 4, (0, 4),
                          weights=lazyk.array(w)[lazyk.max(pt[pt > 20], axis=1) > 40])
    want_w = np.histogram(sel, 4, (0, 4), weights=sel_w)[0].tolist()
    _check_together([h_lo, h_met, h_w],
                    [_np(lo, 3, (0, 60)), _np(sel, 4, (0, 4)), want_w])


def test_a_selection_by_a_fold_of_selected_rows():
    rows = [[5.0, 7.0], [1.0], [], [3.0, 4.0, 9.0]]
    x = lazyk.array(rows)
    xm = x[lazyk.num(x) >= 2]
    kept = [r for r in rows if len(r) >= 2]
    for e, want in ((xm[lazyk.sum(xm, axis=1) >= 13], [r for r in kept if sum(r) >= 13]),
                    (xm[lazyk.num(xm) >= 3], [r for r in kept if len(r) >= 3])):
        flat = [v for r in want for v in r]
        assert lazyk.evaluate(lazyk.histogram(e, 5, (0, 10))).tolist() == _np(flat, 5, (0, 10))


def test_a_fold_of_inner_lists_that_folds_nothing_is_missing_not_a_seed():
    """`max` over the innermost lists of `N * var * var`: an empty list's max is missing,
    so `y[max < 5]` leaves that item out (a stand-in seed of -inf would pass `< 5`)."""
    p3 = lazyk.array([[[1.0], []], [[2.0, 3.0]]])
    y = lazyk.array([[10.0, 20.0], [30.0]])
    h = lazyk.histogram(y[lazyk.max(p3, axis=2) < 5], 4, (0, 40))
    _check_together([h, lazyk.histogram(y, 4, (0, 40))],
                    [_np([10.0, 30.0], 4, (0, 40)), _np([10.0, 20.0, 30.0], 4, (0, 40))])

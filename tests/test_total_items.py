"""Reductions over every axis of `N * var` rows of one offsets array run one loop over the
items (one level, no loop per row); other row forms keep the loop per row. Values against
NumPy on the items and a plain-Python reference over the rows."""
from __future__ import annotations

import math

import numpy as np
import pytest

import lazyk
from lazyk.runtime.ragged_rules import RECORDERS


def _nest_levels(*exprs) -> list:
    """The number of levels of each loop-nest kernel run computing `exprs` together."""
    rec: list = []
    RECORDERS.append(rec)
    try:
        got = lazyk.evaluate(*exprs)
    finally:
        RECORDERS.remove(rec)
    return got, [len(k.levels) for _, k, _ in rec]


def _rows(lens, seed, dtype=np.float64, start=0):
    rng = np.random.default_rng(seed)
    off = np.r_[0, np.cumsum(lens)].astype(np.int64) + start
    values = (rng.uniform(-1, 1, int(off[-1])) * 100).astype(dtype)
    return off, values


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64])
@pytest.mark.parametrize("op", ["sum", "max", "min", "mean", "prod", "any", "all"])
def test_a_fold_over_every_axis_reads_the_items_in_one_level(op, dtype):
    lens = np.random.default_rng(3).poisson(3, 5000)
    off, values = _rows(lens, 4, dtype)
    if op == "prod":
        values = (values % 3 + 1).astype(dtype)[: len(values)] if dtype in (np.int32, np.int64) \
            else (1 + values / 1e4).astype(dtype)
    x = lazyk.from_offsets(off, values)
    got, levels = _nest_levels(getattr(x, op)())
    assert levels == [1]
    want = getattr(np, op)(values)
    if op in ("any", "all"):
        assert bool(got) == bool(want)
    elif dtype in (np.float32, np.float64) or op in ("mean", "prod"):  # (another order)
        np.testing.assert_allclose(float(got), float(want), rtol=1e-5)
    else:
        assert got == want
    assert np.asarray(got).dtype == np.asarray(x.__getattribute__(op)().eval()).dtype


def test_offsets_from_a_later_item_and_empty_rows_read_only_their_items():
    lens = np.array([0, 3, 0, 0, 2, 1, 0])
    off, values = _rows(lens, 5, start=4)
    values = np.r_[np.full(4, 1e9), values[4:], np.full(3, 1e9)]  # items outside the rows
    x = lazyk.from_offsets(off, values)
    got, levels = _nest_levels(x.sum(), (x * 2).max())
    assert levels == [1, 1]
    inside = values[off[0]:off[-1]]
    assert math.isclose(float(got[0]), float(inside.sum()))
    assert float(got[1]) == float((inside * 2).max())


def test_several_fields_of_one_collection_fold_as_items():
    lens = np.random.default_rng(6).poisson(2, 3000)
    off, pt = _rows(lens, 7)
    eta = np.random.default_rng(8).uniform(-3, 3, len(pt))
    jets = lazyk.zip({"pt": lazyk.from_offsets(off, pt), "eta": lazyk.from_offsets(off, eta)})
    got, levels = _nest_levels((jets.pt * abs(jets.eta)).sum())
    assert levels == [1]
    assert math.isclose(float(got), float((pt * abs(eta)).sum()), rel_tol=1e-12)


def test_missing_values_and_nan_fold_as_over_rows():
    """A missing item makes the total missing; skipna=True folds the present items (NaN
    included, as NumPy folds it)."""
    for values in ([[1.0, None, 3.0], [], [None], [np.nan, 2.0]],
                   [[1.0, None, 3.0], [], [None], [5.0, 2.0]],
                   [[1.0, 4.0], [], [7.5]]):
        items = [v for row in values for v in row]
        off = np.r_[0, np.cumsum([len(r) for r in values])].astype(np.int64)
        x = lazyk.from_offsets(off, lazyk.array(items, type=f"{len(items)} * ?float64"))
        present = [v for v in items if v is not None]
        for op in ("sum", "max"):
            got, levels = _nest_levels(getattr(x, op)())
            assert levels == [1]
            if None in items:
                assert got.to_list() is None
            else:
                assert float(got) == getattr(np, op)(present)
            got, levels = _nest_levels(getattr(x, op)(skipna=True))
            want = getattr(np, op)(present)
            assert levels == [1]
            assert (np.isnan(float(got)) and np.isnan(want)) or float(got) == want


def test_other_row_forms_keep_the_loop_per_row():
    lens = [2, 0, 3, 1]
    off, values = _rows(lens, 9)
    x = lazyk.from_offsets(off, values)
    stepped = x[::2]  # index pairs, not one offsets array
    got, levels = _nest_levels(stepped.sum())
    rows = [values[off[i]:off[i + 1]] for i in range(0, len(lens), 2)]
    assert math.isclose(float(got), float(sum(r.sum() for r in rows)))
    assert levels == [2]
    got, levels = _nest_levels(x.sum(keepdims=True))  # keepdims: the nest over rows
    assert np.asarray(got.to_list() if hasattr(got, "to_list") else got).ravel()[0] == \
        pytest.approx(values.sum())
    assert levels == [2]


def test_an_empty_array_and_rows_with_no_items():
    for off in ([0], [0, 0, 0]):
        x = lazyk.from_offsets(np.array(off, np.int64), np.zeros(0))
        assert float(lazyk.evaluate(x.sum())) == 0.0
        with pytest.raises(ValueError):
            lazyk.evaluate(x.max())

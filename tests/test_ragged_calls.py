"""Repeated ragged calls: an array's checked operand is reused (`nest_plan.nest_operand`)
while its memory is open, never past a closed block or changed offsets; a last-axis sum
over `N * var * var` rows builds its result over the values directly; a run split into
parts (two threads, content-weighted) gives the one-part answer. Values, dtypes and
result types against `tests/ragged_reference.py` and NumPy."""
from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import given, settings

import lazyk
from lazyk.arrays import memory
from lazyk.codegen.levels import FIXED, VAR
from lazyk.frontend.leaves import RaggedLeaf
from lazyk.kernel import nest as nest_kernel
from lazyk.runtime import nest_plan, nest_threads
from tests import ragged_reference as R
from tests.ragged_strategies import ragged
from tests.test_ragged_onepath import check


def _var_var(rng, n, lo=0, hi=6):
    outer = np.zeros(n + 1, np.int64)
    np.cumsum(rng.integers(lo, hi + 1, n), out=outer[1:])
    inner = np.zeros(int(outer[-1]) + 1, np.int64)
    np.cumsum(rng.integers(lo, hi + 1, int(outer[-1])), out=inner[1:])
    return outer, inner, rng.integers(-50, 50, int(inner[-1])).astype(np.float64)


def _sums(outer, inner, x):
    """x.sum(axis=-1) of `N * var * var` data with NumPy, as nested lists."""
    s = np.array([x[a:b].sum() for a, b in zip(inner[:-1], inner[1:])])
    return [s[a:b].tolist() for a, b in zip(outer[:-1], outer[1:])]


def test_a_second_call_reuses_the_checked_operand(monkeypatch):
    rng = np.random.default_rng(0)
    outer, inner, x = _var_var(rng, 40)
    a = lazyk.from_offsets(outer, lazyk.from_offsets(inner, x))
    made = []
    orig = nest_plan._nest_operand
    monkeypatch.setattr(nest_plan, "_nest_operand", lambda leaf: made.append(1) or orig(leaf))
    for _ in range(3):
        r = a.sum(axis=-1).eval()
        assert str(r.type) == "40 * var * float64"
        assert r.to_list() == _sums(outer, inner, x)
    assert len(made) == 1
    b = lazyk.from_offsets(outer, lazyk.from_offsets(inner, x))  # another array: its own
    assert b.sum(axis=-1).eval().to_list() == _sums(outer, inner, x)
    assert len(made) == 2
    n = len(nest_plan._operands)
    del a, b, r
    gc.collect()
    assert len(nest_plan._operands) <= n - 2  # entries go with their arrays


def test_offsets_changed_in_place_are_read_again():
    rng = np.random.default_rng(1)
    outer, inner, x = _var_var(rng, 30, lo=1)
    a = lazyk.from_offsets(outer, lazyk.from_offsets(inner, x))
    assert a.sum(axis=-1).eval().to_list() == _sums(outer, inner, x)
    inner[1:-1] = np.minimum(inner[1:-1] + 1, inner[-1])  # other rows, still valid
    assert a.sum(axis=-1).eval().to_list() == _sums(outer, inner, x)
    was = inner.copy()
    inner[3] = inner[4] + 5  # a decreasing offset: named, never read past
    with pytest.raises(lazyk.ArrayConstructionError):
        a.sum(axis=-1).eval()
    inner[:] = was
    outer[2] = outer[1] - 1  # the outer rows too
    with pytest.raises(lazyk.ArrayConstructionError):
        a.sum(axis=-1).eval()


def test_a_closed_block_is_refused_after_a_cached_call():
    a = lazyk.array([[[1.0, 2.0], []], [[3.0]]], type="2 * var * var * float64")
    assert a.sum(axis=-1).eval().to_list() == [[3.0, 0.0], [3.0]]
    refs = nest_plan._refs(a)
    assert refs and all(r in memory.blocks for r in refs)
    memory.lookup(refs[-1]).close()  # the content block is gone: not read through the cache
    assert not all(r in memory.blocks for r in refs)
    with pytest.raises(ValueError):
        a.sum(axis=-1).eval()


@pytest.mark.parametrize("width", [np.int32, np.int64])
def test_flat_sums_over_every_row_form(width):
    rng = np.random.default_rng(2)
    for n, lo, hi in ((0, 0, 3), (1, 0, 0), (1, 1, 1), (7, 0, 1), (25, 0, 5)):
        outer, inner, x = _var_var(rng, n, lo, hi)
        o, i = outer.astype(width), inner.astype(width)
        r = lazyk.from_offsets(o, lazyk.from_offsets(i, x)).sum(axis=-1).eval()
        assert str(r.type) == f"{n} * var * float64"
        assert r.to_list() == _sums(outer, inner, x)
        if n > 1:  # outer offsets not from 0: a copy from the first row
            s = lazyk.from_offsets(o[1:], lazyk.from_offsets(i, x)).sum(axis=-1).eval()
            assert s.to_list() == _sums(outer, inner, x)[1:]
    # keepdims and missing values take the general result path
    outer, inner, x = _var_var(rng, 12)
    a = lazyk.from_offsets(outer, lazyk.from_offsets(inner, x))
    k = a.sum(axis=-1, keepdims=True).eval()
    assert k.to_list() == [[[v] for v in row] for row in _sums(outer, inner, x)]
    m = lazyk.from_offsets(outer, lazyk.from_offsets(
        inner, lazyk.array(np.ma.masked_array(x, mask=x > 30))))
    got = m.sum(axis=-1).eval()
    assert str(got.type) == "12 * var * ?float64"
    want = []
    for s, e in zip(outer[:-1], outer[1:]):
        segs = [x[lo:hi] for lo, hi in zip(inner[s:e], inner[s + 1:e + 1])]
        want.append([None if (g > 30).any() else float(g.sum()) for g in segs])
    assert got.to_list() == want


def test_parts_on_two_threads_match_one_part():
    rng = np.random.default_rng(3)
    outer, inner, x = _var_var(rng, 4000, 0, 40)  # ~1.6e6 values: several parts
    assert len(x) > 4 * nest_kernel.MIN_PART
    a = lazyk.from_offsets(outer, lazyk.from_offsets(inner, x))
    was = lazyk.get_num_threads()
    try:
        lazyk.set_num_threads(1)
        one = a.sum(axis=-1).eval()
        lazyk.set_num_threads(2)
        two = a.sum(axis=-1).eval()
    finally:
        lazyk.set_num_threads(was)
    assert one.to_list() == two.to_list() == _sums(outer, inner, x)


@settings(max_examples=20, deadline=None)
@given(ragged(layouts=("N * var * var * T", "var * var * T", "N * var * T"),
              dtypes=("float64", "int32", "bool")))
def test_repeated_calls_follow_the_reference(arr):
    t, data = arr
    a, ra = lazyk.array(data, type=t), R.array(data, t)
    for _ in range(2):  # the second call is served from the caches
        check(a.sum(axis=-1), R.reduce("sum", ra, axis=-1))
        check(a * 2 + 1, R.elementwise("add", R.elementwise("multiply", ra, 2), 1))


@pytest.mark.parametrize("threads", [2, 3])
def test_part_searches_in_numpy_are_the_bisection(monkeypatch, threads):
    monkeypatch.setattr(nest_kernel, "MIN_PART", 1)
    monkeypatch.setattr(nest_kernel, "get_num_threads", lambda: threads)
    rng = np.random.default_rng(4)
    for n in (1, 2, 5, 40, 1000):
        off = np.zeros(n + 1, np.int64)
        np.cumsum(rng.integers(0, 30, n), out=off[1:])
        for rl, upto in (((FIXED, VAR), 2), ((FIXED, VAR), 1), ((FIXED,), 1)):
            fast = nest_threads._weight(list(rl), [n, 0][:len(rl)], {1: off}, upto)
            assert hasattr(fast, "starts") or hasattr(fast, "rows")

            def plain(r, rl=rl, upto=upto):
                return nest_plan.positions(r, list(rl), [n, 0][:len(rl)], {1: off}, upto)[-1]
            assert nest_kernel.split(n, fast(n), fast) == nest_kernel.split(n, plain(n), plain)


def test_plans_kept_on_an_operand_stay_bounded():
    # one array against 12 partners: its operand keeps the last plans only (a Memo of 8)
    rng = np.random.default_rng(3)
    outer = np.concatenate([[0], np.cumsum(rng.integers(0, 5, 30))])
    x = rng.random(int(outer[-1]))
    a = lazyk.from_offsets(outer, x)
    partners = []
    for _ in range(12):
        y = rng.random(len(x))
        partners.append(lazyk.from_offsets(outer.copy(), y))  # kept: ids stay distinct
        got = (a * partners[-1]).sum(axis=-1).eval()
        want = [float((x * y)[lo:hi].sum()) for lo, hi in zip(outer[:-1], outer[1:])]
        assert np.allclose(got.to_list(), want)
    plans = nest_plan.nest_operand(RaggedLeaf(a, False)).plans
    assert 0 < len(plans) <= plans.size == 8

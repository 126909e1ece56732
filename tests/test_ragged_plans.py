"""The loop nest's per-structure plan cache (`nest_structure.prepared_plan`): a second call of
the same expression over arrays of the same types is served from it, a different structure is
not, and a cached plan gives the right answer over every layout of those types (sizes, sliced
and stepping views, offsets not from 0, int32 offsets, index pairs, missing values and
rows). A last-axis sum over `N * var * var` rows shares the input's int64 offsets."""
from __future__ import annotations

import gc
import math

import numpy as np
import pytest

import lazyk
from lazyk.arrays.buffers import pairs_array
from lazyk.kernel import nest as nest_kernel


def _rows(rng, n, lo=0, hi=6):
    off = np.zeros(n + 1, np.int64)
    np.cumsum(rng.integers(lo, hi + 1, n), out=off[1:])
    return off


def _var_var(seed=0, n=30, dtype=np.float64):
    rng = np.random.default_rng(seed)
    outer = _rows(rng, n)
    inner = _rows(rng, int(outer[-1]))
    x = rng.integers(-50, 50, int(inner[-1])).astype(dtype)
    return outer, inner, x


def _ref(x, skipna=False):
    """x.sum(axis=-1) of `N * var * var` data in plain Python (missing rows stay missing;
    a missing value makes its row's sum missing unless skipna)."""
    out = []
    for row in x.to_list():
        if row is None:
            out.append(None)
            continue
        got = []
        for inner in row:
            if inner is None or (not skipna and any(v is None for v in inner)):
                got.append(None)
            else:
                got.append(math.fsum(v for v in inner if v is not None))
        out.append(got)
    return out


def _check(x, skipna=False):
    r = x.sum(axis=-1, skipna=skipna).eval() if skipna else x.sum(axis=-1).eval()
    assert r.to_list() == _ref(x, skipna)
    return r


def test_second_call_is_a_plan_hit_and_another_structure_misses(monkeypatch):
    from lazyk.runtime import nest_structure

    nest_structure.plans.clear()  # (plans other tests made)
    outer, inner, x = _var_var()
    a = lazyk.from_offsets(outer, lazyk.from_offsets(inner, x))
    _check(a)
    before = dict(nest_kernel.nest_stats)
    b = lazyk.from_offsets(outer[:11], lazyk.from_offsets(inner, x * 2))  # new data, sizes
    r = _check(b)
    assert str(r.type) == "10 * var * float64"
    assert nest_kernel.nest_stats["plan_hits"] == before["plan_hits"] + 1
    assert nest_kernel.nest_stats["plans"] == before["plans"]
    assert nest_kernel.nest_stats["compiles"] == before["compiles"]
    # another dtype, another expression, another option: a plan of its own
    for e in (lazyk.from_offsets(outer, lazyk.from_offsets(inner, x.astype(np.int32))
                                 ).sum(axis=-1),
              (a * 2).sum(axis=-1), a.sum(axis=-1, keepdims=True), a.max(axis=-1, initial=0.0)):
        plans = nest_kernel.nest_stats["plans"]
        e.eval()
        assert nest_kernel.nest_stats["plans"] == plans + 1
    # and the first plan still serves
    hits = nest_kernel.nest_stats["plan_hits"]
    _check(a)
    assert nest_kernel.nest_stats["plan_hits"] == hits + 1


def test_a_cached_plan_serves_every_layout_of_its_types():
    outer, inner, x = _var_var(seed=1, n=40)
    a = lazyk.from_offsets(outer, lazyk.from_offsets(inner, x))
    _check(a)
    rng = np.random.default_rng(2)
    mask = rng.random(len(x)) > 0.2
    layouts = [
        a[5:17],                                   # outer rows not from 0
        a[::3],                                    # a stepping view of the outer rows
        a[::-1],                                   # reversed
        a[:, 1:],                                  # sliced inner rows
        a[:, ::2],                                 # stepping inner rows
        lazyk.from_offsets(outer.astype(np.int32),
                           lazyk.from_offsets(inner.astype(np.int32), x)),
        lazyk.from_offsets(outer + 3, lazyk.from_offsets(
            np.concatenate([[0, 1, 2], inner + 2]), np.concatenate([[9.0, 9.0], x]))),
        lazyk.from_offsets(outer, pairs_array(inner[:-1], inner[1:], x)),
        lazyk.from_offsets(outer[:1], lazyk.from_offsets(inner, x)),  # no rows
        lazyk.from_offsets(outer, lazyk.from_offsets(inner, np.ma.masked_array(
            x, mask=~mask))),                      # ?float64
        lazyk.from_offsets(outer, lazyk.from_offsets(inner, x), validity=outer[1:] % 3 > 0),
    ]
    for v in layouts:
        _check(v)
        _check(v, skipna=True)


def test_bad_rows_after_a_plan_hit_are_errors():
    outer, inner, x = _var_var(seed=3)
    _check(lazyk.from_offsets(outer, lazyk.from_offsets(inner, x)))
    down = outer.copy()
    down[4], down[5] = down[5] + 1, down[5]  # a row that runs backwards
    with pytest.raises((lazyk.errors.ArrayConstructionError, lazyk.errors.ShapeError)):
        lazyk.from_offsets(down, lazyk.from_offsets(inner, x)).sum(axis=-1).eval()


def test_the_result_shares_the_outer_offsets():
    outer, inner, x = _var_var(seed=4)
    a = lazyk.from_offsets(outer, lazyk.from_offsets(inner, x))
    expect = _ref(a)
    r = a.sum(axis=-1).eval()
    assert r.ptr == a.ptr  # no copy of the outer offsets
    assert not r.readonly
    del a
    outer = None
    gc.collect()
    assert r.to_list() == expect  # the result keeps them alive
    # offsets not from 0 and read-only ones are copied (the result stays writable)
    o2, inner, x = _var_var(seed=5)
    shifted = lazyk.from_offsets(o2[3:], lazyk.from_offsets(inner, x))
    assert _check(shifted).ptr != shifted.ptr
    i32 = lazyk.from_offsets((o2[:5] - o2[0]).astype(np.int32), lazyk.from_offsets(inner, x))
    assert _check(i32).ptr == i32.ptr  # int32 offsets are shared too
    ro = o2.copy()
    ro.flags.writeable = False
    r = _check(lazyk.from_offsets(ro, lazyk.from_offsets(inner, x)))
    assert not r.readonly


def test_plans_are_bounded_and_shared_between_threads(monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from lazyk.runtime import nest_structure

    monkeypatch.setattr(nest_structure.plans, "size", 3)
    monkeypatch.setattr(nest_structure.structures, "size", 3)
    outer, inner, x = _var_var(seed=7)
    arrays = [lazyk.from_offsets(outer, lazyk.from_offsets(inner, x.astype(dt)))
              for dt in (np.float64, np.float32, np.int64, np.int32, np.int16)]
    want = [_ref(a) for a in arrays]

    def work(i):
        a = arrays[i % len(arrays)]
        return i, a.sum(axis=-1).eval().to_list()
    with ThreadPoolExecutor(4) as pool:
        for i, got in pool.map(work, range(40)):
            assert got == want[i % len(arrays)]
    assert len(nest_structure.plans) <= 3 and len(nest_structure.structures) <= 3


@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_the_split_searched_in_numpy_is_the_bisection(monkeypatch, dt):
    monkeypatch.setattr(nest_kernel, "MIN_PART", 4)
    monkeypatch.setattr(nest_kernel, "get_num_threads", lambda: 3)
    rng = np.random.default_rng(8)
    for n in (1, 2, 7, 100, 1000):
        starts = (np.cumsum(rng.integers(0, 9, n)) + 5).astype(dt)
        end = int(starts[-1]) + 3

        def before(r):
            return (int(starts[r]) if r < n else end) - int(starts[0])

        def searched(r):
            return before(r)
        searched.starts, searched.base = starts, int(starts[0])
        total = before(n)
        want = nest_kernel.split(n, total, before)
        assert nest_kernel.split(n, total, searched) == want
        assert want[0] == 0 and want[-1] == n and want == sorted(set(want))

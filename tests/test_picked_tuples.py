"""`f(tuple fields)[positions]`: the fields of combinations taken back at one tuple per row
(Awkward's `f(pairs)[ak.argmin(g(pairs), axis=1, keepdims=True)]`). The positions become
each slot's item positions, so only the picked tuples are computed; the values, missing
rows and errors as a plain-Python loop over the tuples gives them."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from lazyk.runtime import nest_select


def _rows(lens, seed):
    rng = np.random.default_rng(seed)
    off = np.r_[0, np.cumsum(lens)].astype(np.int64)
    return off, rng.uniform(0, 50, int(off[-1])), rng.uniform(-1, 1, int(off[-1]))


def _tuples(n, m, replacement):
    make = itertools.combinations_with_replacement if replacement else itertools.combinations
    return list(make(range(m), n))


def _picked(monkeypatch):
    """A list that grows by one each time positions become slot positions."""
    calls = []
    real = nest_select.slot_positions

    def counted(*args):
        got = real(*args)
        calls.append(got is not None)
        return got
    monkeypatch.setattr(nest_select, "slot_positions", counted)
    return calls


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 7), min_size=0, max_size=40), st.integers(2, 3),
       st.booleans(), st.integers(0, 2**16))
def test_the_tuple_closest_to_a_target_taken_back(lens, n, replacement, seed):
    off, pt, eta = _rows(lens, seed)
    x = lazyk.zip({"pt": lazyk.from_offsets(off, pt), "eta": lazyk.from_offsets(off, eta)})
    tup = lazyk.combinations(x, n, replacement=replacement, fields=[f"s{k}" for k in range(n)])
    fields = [getattr(tup, f"s{k}") for k in range(n)]
    total = sum(f.pt for f in fields)
    best = lazyk.argmin(abs(total - 60.0), axis=1, keepdims=True)
    spread = np.maximum(fields[0].eta, fields[-1].eta) * sum(f.pt for f in fields[1:])
    got_total, got_spread = lazyk.evaluate(total[best], spread[best])
    want_total, want_spread = [], []
    for r in range(len(lens)):
        ts = _tuples(n, lens[r], replacement)
        if not ts:
            want_total.append([None])
            want_spread.append([None])
            continue
        sums = [sum(pt[off[r] + i] for i in t) for t in ts]
        t = ts[int(np.argmin([abs(s - 60.0) for s in sums]))]
        want_total.append([sum(pt[off[r] + i] for i in t)])
        want_spread.append([max(eta[off[r] + t[0]], eta[off[r] + t[-1]]) *
                            sum(pt[off[r] + i] for i in t[1:])])
    for got, want in ((got_total, want_total), (got_spread, want_spread)):
        assert str(got.type) == f"{len(lens)} * 1 * ?float64"
        rows = got.to_list()
        assert [r[0] is None for r in rows] == [w[0] is None for w in want]
        np.testing.assert_allclose([r[0] for r in rows if r[0] is not None],
                                   [w[0] for w in want if w[0] is not None], rtol=1e-12)


def test_only_the_picked_tuples_are_computed(monkeypatch):
    """The take-back runs through the slots' positions (no value of the other tuples)."""
    calls = _picked(monkeypatch)
    off, pt, _ = _rows([4, 0, 3, 5, 2], 1)
    x = lazyk.from_offsets(off, pt)
    pairs = lazyk.combinations(x, 2, fields=["a", "b"])
    m = pairs.a * pairs.b
    got = (pairs.a + pairs.b)[lazyk.argmax(m, axis=1, keepdims=True)].eval()
    assert calls == [True]
    want = []
    for r in range(5):
        ts = _tuples(2, off[r + 1] - off[r], False)
        if not ts:
            want.append([None])
            continue
        i, j = ts[int(np.argmax([pt[off[r] + a] * pt[off[r] + b] for a, b in ts]))]
        want.append([pt[off[r] + i] + pt[off[r] + j]])
    assert got.to_list() == want


def test_positions_from_the_end_and_outside_the_tuples(monkeypatch):
    """Negative positions count from the row's last tuple; a position outside the tuples
    is the gather's IndexError, naming the row."""
    calls = _picked(monkeypatch)
    off, pt, _ = _rows([3, 4, 3], 2)
    x = lazyk.from_offsets(off, pt)
    pairs = lazyk.combinations(x, 2, fields=["a", "b"])
    s = pairs.a - pairs.b
    pos = lazyk.array(np.array([[-1], [0], [2]]))
    got = s[pos].eval().to_list()
    rows = [_tuples(2, n, False) for n in (3, 4, 3)]
    want = [[pt[off[r] + rows[r][k][0]] - pt[off[r] + rows[r][k][1]]]
            for r, k in ((0, -1), (1, 0), (2, 2))]
    assert got == want and calls == [True]
    with pytest.raises(IndexError, match=r"row \[1\]"):
        s[lazyk.array(np.array([[0], [6], [0]]))].eval()
    assert calls[-1] is False


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=0, max_size=30), st.integers(2, 3),
       st.integers(0, 2**16))
def test_argcombinations_taken_back(lens, n, seed):
    """`pairs[best]` of argcombinations (Awkward's `firsts(pairs[argmin(..., keepdims=True)])`
    in a Z search): each slot's position in the picked tuple."""
    off, pt, _ = _rows(lens, seed)
    x = lazyk.from_offsets(off, pt)
    tup = lazyk.argcombinations(x, n, fields=[f"s{k}" for k in range(n)])
    total = sum(x[getattr(tup, f"s{k}")] for k in range(n))
    best = lazyk.argmin(abs(total - 60.0), axis=1, keepdims=True)
    picked = tup[best]
    got = lazyk.evaluate(*(getattr(picked, f"s{k}") for k in range(n)),
                         lazyk.firsts(picked)[f"s{n - 1}"])
    want = []
    for r in range(len(lens)):
        ts = _tuples(n, lens[r], False)
        want.append(ts[int(np.argmin([abs(sum(pt[off[r] + i] for i in t) - 60.0)
                                      for t in ts]))] if ts else None)
    for k in range(n):
        assert str(got[k].type) == f"{len(lens)} * 1 * ?int64"
        assert got[k].to_list() == [[None if w is None else w[k]] for w in want]
    assert got[n].to_list() == [None if w is None else w[n - 1] for w in want]


def test_argcombinations_taken_back_read_the_picked_tuple(monkeypatch):
    """The positions of argcombinations taken back are the slots' positions: no tuple's
    index stored, no copy kernel (the argmin's nest alone)."""
    calls = _picked(monkeypatch)
    off, pt, _ = _rows([4, 0, 3, 5, 1], 3)
    x = lazyk.from_offsets(off, pt)
    pairs = lazyk.argcombinations(x, 2, fields=["i", "j"])
    best = lazyk.argmin(abs(x[pairs.i] * x[pairs.j] - 400.0), axis=1, keepdims=True)
    text = str(lazyk.explain(pairs[best].j))
    assert "== nest 1:" in text and "== nest 2:" not in text
    assert calls and all(calls)

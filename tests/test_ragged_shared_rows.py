"""Operands over one offsets array (the fields of a collection) read and check each row
once: the nest marks the later ones as reading the first one's rows (`Rows.shares`),
decided from each call's own arrays. Values against NumPy row by row, for plain rows,
combinations, views, int32 offsets and compiled calls that switch between shared and
separate offsets; separate offsets, a copy of them, or content of another length are never
shared, and a bad row is still named."""
from __future__ import annotations

import numpy as np
import pytest

import lazyk


def _rows(seed=0, n=400, hi=6):
    rng = np.random.default_rng(seed)
    off = np.concatenate([[0], np.cumsum(rng.integers(0, hi + 1, n))])
    return rng, off


def _per_row(off, f):
    return [f(a, b) for a, b in zip(off[:-1], off[1:])]


def test_fields_of_one_collection_share_their_rows():
    rng, off = _rows()
    a = rng.uniform(-1, 1, off[-1])
    b = rng.integers(-5, 5, off[-1]).astype(np.int32)
    x, y = lazyk.from_offsets(off, a), lazyk.from_offsets(off, b)
    e = (x * y).sum(axis=1)
    assert "those of input 0" in e.explain()
    np.testing.assert_allclose(e.eval().to_list(), _per_row(off, lambda s, t: (a[s:t] * b[s:t]).sum()))
    m = ((x > 0) & (y > 0)).eval().to_list()
    assert m == _per_row(off, lambda s, t: list((a[s:t] > 0) & (b[s:t] > 0)))
    # a view of both: rows from 7 on, still one offsets array
    got = (x[7:] + y[7:]).max(axis=1, initial=-9.0).eval().to_list()
    np.testing.assert_allclose(got, _per_row(off[7:], lambda s, t: (a[s:t] + b[s:t]).max(
        initial=-9.0)))
    # int32 offsets
    o32 = off.astype(np.int32)
    e32 = (lazyk.from_offsets(o32, a) - lazyk.from_offsets(o32, b)).sum(axis=1)
    assert "those of input 0" in e32.explain()
    np.testing.assert_allclose(e32.eval().to_list(), _per_row(off, lambda s, t: (a[s:t] - b[s:t]).sum()))


def test_other_offsets_are_never_shared():
    rng, off = _rows(1)
    a, b = rng.uniform(-1, 1, off[-1]), rng.uniform(-1, 1, off[-1])
    x = lazyk.from_offsets(off, a)
    for y in (lazyk.from_offsets(off.copy(), b),  # the same values, other memory
              lazyk.from_offsets(off, np.concatenate([b, [5.0]]))):  # longer content
        e = (x + y).sum(axis=1)
        assert "those of input" not in e.explain()
        np.testing.assert_allclose(e.eval().to_list(), _per_row(off, lambda s, t: (a[s:t] + b[s:t]).sum()))
    # rows that do not line up are still named
    r = int(np.argmax(np.diff(off) >= 2))  # a row of 2 or more: one more does not stretch
    other = off.copy()
    other[r + 1:] += 1
    with pytest.raises(lazyk.ShapeError, match=f"row {r}|{r}"):
        (x + lazyk.from_offsets(other, np.zeros(off[-1] + 1))).eval()


def test_a_bad_row_is_named_once_shared():
    _, off = _rows(2)
    bad = off.copy()
    bad[3] = off[-1] + 5  # row 2 reaches past the content
    x, y = lazyk.from_offsets(bad, np.zeros(off[-1])), lazyk.from_offsets(bad, np.ones(off[-1]))
    with pytest.raises((lazyk.ArrayConstructionError, ValueError), match="row"):
        (x + y).sum(axis=1).eval()


def test_combinations_of_a_collection_share_its_rows():
    rng, off = _rows(3, n=300, hi=5)
    pt, eta = rng.uniform(0, 50, off[-1]), rng.uniform(-2, 2, off[-1])
    rec = lazyk.zip({"pt": lazyk.from_offsets(off, pt), "eta": lazyk.from_offsets(off, eta)})
    pairs = lazyk.combinations(rec, 2, fields=["a", "b"])
    e = lazyk.max(pairs.a.pt * pairs.b.eta - pairs.b.pt * pairs.a.eta, axis=1, initial=-1e9)
    assert "those of input 0" in e.explain()

    def best(s, t):
        v = [pt[i] * eta[j] - pt[j] * eta[i] for i in range(s, t) for j in range(i + 1, t)]
        return max(v, default=-1e9)
    np.testing.assert_allclose(e.eval().to_list(), _per_row(off, best))


def test_a_compiled_call_plans_each_call_s_arrays():
    """One compiled expression called over shared offsets, then over two offsets arrays
    whose rows differ in length at one row, then shared again: each call's answer (or the
    error naming the row)."""
    rng, off = _rows(4)
    a, b = rng.uniform(-1, 1, off[-1]), rng.uniform(-1, 1, off[-1])
    px, py = lazyk.placeholder("x", "N * var * float64"), lazyk.placeholder("y", "N * var * float64")
    k = lazyk.compile((px * py).sum(axis=1))
    want = _per_row(off, lambda s, t: (a[s:t] * b[s:t]).sum())
    x, y = lazyk.from_offsets(off, a), lazyk.from_offsets(off, b)
    np.testing.assert_allclose(k(x, y).to_list(), want)
    np.testing.assert_allclose(k(x, lazyk.from_offsets(off.copy(), b)).to_list(), want)
    r = int(np.argmax(np.diff(off) >= 2))
    other = off.copy()
    other[r + 1:] += 1
    with pytest.raises(lazyk.ShapeError):
        k(x, lazyk.from_offsets(other, np.concatenate([b, [0.0]])))
    np.testing.assert_allclose(k(x, y).to_list(), want)

"""One field of `combinations` (or the pairs themselves) indexed per row: gathered at
positions (`argmax(..., keepdims=True)`, `argsort`, given positions), items and slices of its
lists. The positions count the tuples, not the items they were made from. Compared with a
plain-Python reference (and Awkward where it is installed)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk

try:
    import awkward as ak
except ImportError:
    ak = None

ROWS = [[50.0, 45.0, 12.0, 60.0], [1.0, 2.0, 7.0], [], [3.0], [8.0, 0.5]]


def pairs_of(rows: list, n: int = 2) -> list:
    return [list(itertools.combinations(r, n)) for r in rows]


def test_a_field_gathered_at_the_best_pair():
    pt = lazyk.array(ROWS)
    p = lazyk.combinations(pt, 2, fields=["a", "b"])
    i = lazyk.argmax(p.a + p.b, axis=1, keepdims=True)
    ref = [[max(r, key=sum)] if r else [None] for r in pairs_of(ROWS)]
    assert p.b[i].eval().to_list() == [[None if t is None else t[1] for t in r] for r in ref]
    assert p.a[i].eval().to_list() == [[None if t is None else t[0] for t in r] for r in ref]
    two = lazyk.combinations(lazyk.array(ROWS[:2]), 2, fields=["a", "b"])
    best = two.b[lazyk.argmax(two.a + two.b, axis=1, keepdims=True)]
    assert lazyk.sum(best, axis=1).eval().to_list() == [60.0, 7.0]
    got = p[i].eval().to_list()
    assert got[0] == [{"a": 50.0, "b": 60.0}] and got[1] == [{"a": 2.0, "b": 7.0}]
    if ak is not None:
        ap = ak.combinations(ak.Array(ROWS), 2, fields=["a", "b"])
        ai = ak.argmax(ap.a + ap.b, axis=1, keepdims=True)
        assert p.b[i].eval().to_list() == ap.b[ai].to_list()


def test_a_field_gathered_at_given_positions_and_sorted():
    pt = lazyk.array(ROWS)
    p = lazyk.combinations(pt, 2, fields=["a", "b"])
    b = [[t[1] for t in r] for r in pairs_of(ROWS)]
    pos = [[len(r) - 1, 0] if r else [] for r in b]
    got = p.b[lazyk.array(pos, "5 * var * int64")].eval()
    assert got.to_list() == [[r[k] for k in q] for r, q in zip(b, pos)]
    assert got.type == lazyk.dshape("5 * var * float64")
    order = p.b[lazyk.argsort(p.b, axis=1)].eval().to_list()
    assert order == [sorted(r) for r in b]
    with pytest.raises(IndexError):
        p.b[lazyk.array([[6], [0], [], [], [0]], "5 * var * int64")].eval()


def test_items_and_slices_of_a_field():
    pt = lazyk.array(ROWS[:2])
    p = lazyk.combinations(pt, 2, fields=["a", "b"])
    b = [[t[1] for t in r] for r in pairs_of(ROWS[:2])]
    a = [[t[0] for t in r] for r in pairs_of(ROWS[:2])]
    assert p.b[:, 1].eval().to_list() == [r[1] for r in b]
    assert p.a[:, 1].eval().to_list() == [r[1] for r in a]
    assert p.b[:, 1:].eval().to_list() == [r[1:] for r in b]
    assert (p.a + p.b)[:, :2].eval().to_list() == [[u + v for u, v in zip(ra[:2], rb[:2])]
                                                   for ra, rb in zip(a, b)]


def test_triplets_and_equal_rows():
    t = lazyk.combinations(lazyk.array(ROWS[:2]), 3)
    i = lazyk.argmax(t["0"] + t["1"] + t["2"], axis=1, keepdims=True)
    assert t[i].eval().to_list() == [[(50.0, 45.0, 60.0)], [(1.0, 2.0, 7.0)]]
    grid = np.array([[50.0, 45.0, 12.0, 60.0], [1.0, 2.0, 7.0, 3.0]])
    q = lazyk.combinations(lazyk.array(grid), 2, fields=["a", "b"])
    j = lazyk.argmax(q.a + q.b, axis=1, keepdims=True)
    assert q.b[j].eval().to_list() == [[60.0], [3.0]]
    assert q.b[:, 1].eval().to_list() == [12.0, 7.0]


X = [[5.0, 1.0, 9.0, 2.0], [3.0, 0.1], [], [8.0, 0.5, 4.0]]


def _cumsum(r: list) -> list:
    return [float(v) for v in np.cumsum(r)] if r else []


def test_slices_and_running_sums_after_selections_gathers_and_tuples():
    x = lazyk.array(X)
    kept = [[v for v in r if v > 1] for r in X]
    assert x[x > 1][:, 1:].eval().to_list() == [r[1:] for r in kept]
    assert x[x > 1][:, :1].eval().to_list() == [r[:1] for r in kept]
    assert (x * 2)[:, 1:][:, 1:].eval().to_list() == [[2 * v for v in r[2:]] for r in X]
    assert lazyk.cumsum(x[x > 1], axis=1).eval().to_list() == [_cumsum(r) for r in kept]
    ordered = lazyk.cumsum(x[lazyk.argsort(x, axis=1)], axis=1).eval().to_list()
    assert ordered == [_cumsum(sorted(r)) for r in X]
    seconds = [[t[1] for t in r] for r in pairs_of(X)]
    got = lazyk.cumsum(lazyk.combinations(x, 2)["1"], axis=1).eval().to_list()
    assert got == [_cumsum(r) for r in seconds]
    p = lazyk.combinations(x, 2)
    assert (p["0"] + p["1"])[:, 1:].eval().to_list() == \
        [[a + b for a, b in r[1:]] for r in pairs_of(X)]


def test_a_cartesian_product_sliced_and_its_slot_combined():
    x = lazyk.array(X)
    c = lazyk.cartesian({"a": x, "b": x * 10})
    want = [[{"a": a, "b": 10 * b} for a in r for b in r][:2] for r in X]
    assert c[:, :2].eval().to_list() == want
    pairs = lazyk.combinations(c.b, 2)
    got = lazyk.sum(pairs["0"] * pairs["1"], axis=1).eval().to_list()
    slot_b = [[10 * b for _ in r for b in r] for r in X]
    assert got == pytest.approx([sum(u * v for u, v in itertools.combinations(r, 2))
                                 for r in slot_b])


def _reference(rows: list, n: int, slot: int, how: str, k: int) -> list:
    """The slot's values of each row's n-tuples, indexed as `how` says (plain Python)."""
    got = []
    for r in rows:
        tuples = list(itertools.combinations(r, n))
        v = [t[slot] for t in tuples]
        if how == "best":  # at the tuple of the largest sum: [None] for a row with none
            got.append([max(tuples, key=sum)[slot]] if tuples else [None])
        elif how == "sorted":
            got.append(sorted(v))
        elif how == "slice":
            got.append(v[k:])
        else:  # "running"
            got.append(_cumsum(v))
    return got


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 9).map(float), max_size=5), min_size=1, max_size=8),
       st.sampled_from([2, 3]), st.data(), st.sampled_from(["best", "sorted", "slice", "running"]),
       st.integers(0, 3))
def test_a_slot_of_tuples_indexed_per_row_matches_the_reference(rows, n, data, how, k):
    slot = data.draw(st.integers(0, n - 1))
    t = lazyk.combinations(lazyk.array(rows, f"{len(rows)} * var * float64"), n)
    v = t[str(slot)]
    if how == "best":
        total = t["0"] + t["1"] + (t["2"] if n == 3 else 0)
        got = v[lazyk.argmax(total, axis=1, keepdims=True)]
    elif how == "sorted":
        got = v[lazyk.argsort(v, axis=1)]
    elif how == "slice":
        got = v[:, k:]
    else:
        got = lazyk.cumsum(v, axis=1)
    assert got.eval().to_list() == _reference(rows, n, slot, how, k)


@pytest.mark.skipif(ak is None, reason="needs awkward")
def test_fields_of_a_product_of_computed_missing_values_sliced_and_selected():
    # a product's slot of values made missing from plain data (`mask`, `nan_to_none`):
    # its where() is read in the tuples' nest with the other slot's rows (it was computed
    # alone, with no rows for the other slot: NotSupportedError "over missing rows")
    rows = [[-3.0, -1.0, 4.0], [], [2.0], [5.0, 0.0]]
    x, a = lazyk.array(rows), ak.Array(rows)
    for lx, la in ((lazyk.mask(x, x > 0), ak.mask(a, a > 0)),
                   (lazyk.nan_to_none(x / x), ak.nan_to_none(a / a))):
        for lc, ac in ((lazyk.cartesian([lx, x]), ak.cartesian([la, a])),
                       (lazyk.cartesian([x, lx + 1]), ak.cartesian([a, la + 1]))):
            lp, ap = lc["0"] * lc["1"], ac["0"] * ac["1"]
            for work, akwork in ((lambda p: p[:, :2], lambda p: p[:, :2]),
                                 (lambda p: p[p > 1], lambda p: p[p > 1]),
                                 (lambda p: lazyk.sum(p[:, 1:], axis=1, skipna=True),
                                  lambda p: ak.sum(p[:, 1:], axis=1)),
                                 (lambda p: p[lazyk.argsort(p, axis=1)],
                                  lambda p: p[ak.argsort(p, axis=1)])):
                got = work(lp).eval()
                assert got.to_list() == ak.to_list(akwork(ap))
                assert str(got.type).endswith("var * ?float64" if got.ndim == 2 else "float64")
            assert lazyk.to_list(lc["0"][:, ::-1]) == ak.to_list(ac["0"][:, ::-1])

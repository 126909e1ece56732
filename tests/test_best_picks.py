"""`x[m][argmin(f(y[m]), axis=1, keepdims=True)]` (Awkward's pick of the best selected
element, argmax too): the arg-reduction counts positions in the whole rows and x's own
rows are gathered there, so `x[m]` is never stored. The values, missing rows and types
as Awkward and a plain-Python loop give them, over empty rows, rows with nothing kept,
`?bool` masks, pairs and selected events."""
from __future__ import annotations

import itertools

import awkward as ak
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from lazyk.runtime import best_picks
from lazyk.runtime.ragged_rules import RECORDERS


def _data(lens, seed):
    rng = np.random.default_rng(seed)
    off = np.r_[0, np.cumsum(lens)].astype(np.int64)
    n = int(off[-1])
    return off, rng.uniform(0, 100, n), rng.integers(-1, 2, n).astype(np.int32)


def _nests(*exprs) -> list:
    """(mode, pass) of each loop-nest kernel run computing `exprs` together."""
    rec: list = []
    RECORDERS.append(rec)
    try:
        lazyk.evaluate(*exprs)
    finally:
        RECORDERS.remove(rec)
    return [(str(k.mode), str(k.npass)) for _, k, _ in rec]


def _python_best(rows_v, rows_keep, rows_x, pick):
    """Per row: [x at the kept element whose value `pick` (min or max) selects], [None]
    where nothing is kept."""
    out = []
    for v, keep, x in zip(rows_v, rows_keep, rows_x):
        kept = [(val, xv) for val, k, xv in zip(v, keep, x) if k]
        if not kept:
            out.append([None])
            continue
        vals = [val for val, _ in kept]
        i = vals.index(pick(vals))  # (the first of equal values, as argmin / argmax)
        out.append([kept[i][1]])
    return out


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=30), st.integers(0, 2**16),
       st.sampled_from(["argmin", "argmax"]))
def test_the_best_kept_element_taken_back(lens, seed, arg):
    off, v, q = _data(lens, seed)
    y, c = lazyk.from_offsets(off, v), lazyk.from_offsets(off, q)
    m = c != 0
    pos = getattr(lazyk, arg)(abs(y[m] - 50.0), axis=1, keepdims=True)
    got_q, got_y = (e.eval() for e in (c[m][pos], y[m][pos]))
    rows_v = [v[off[i]:off[i + 1]] for i in range(len(lens))]
    rows_q = [q[off[i]:off[i + 1]] for i in range(len(lens))]
    keep = [r != 0 for r in rows_q]
    pick = min if arg == "argmin" else max
    dist = [abs(r - 50.0) for r in rows_v]
    assert got_q.to_list() == _python_best(dist, keep, [r.tolist() for r in rows_q], pick)
    assert got_y.to_list() == _python_best(dist, keep, [r.tolist() for r in rows_v], pick)
    assert str(got_q.type) == f"{len(lens)} * 1 * ?int32"
    # as Awkward
    counts = np.asarray(lens, np.int64)
    ay, ac = ak.unflatten(v, counts), ak.unflatten(q, counts)
    am = ac != 0
    apos = getattr(ak, arg)(abs(ay[am] - 50.0), axis=1, keepdims=True)
    assert got_y.to_list() == ay[am][apos].to_list()


def test_the_selection_is_not_stored():
    """Two fields of one selection, gathered at one arg-reduction's positions: one nest
    (the fold, no count or fill pass of a selection) and the two gathers."""
    off, v, q = _data([3, 0, 5, 1, 4] * 50, 3)
    y, c = lazyk.from_offsets(off, v), lazyk.from_offsets(off, q)
    m = c != 0
    pos = lazyk.argmin(abs(y[m] - 50.0), axis=1, keepdims=True)
    runs = _nests(lazyk.firsts(c[m][pos]), lazyk.firsts(y[m][pos]))
    assert not any("keep" in mode and "positions in the whole row" not in mode
                   for mode, _ in runs)
    assert sum("positions in the whole row" in mode for mode, _ in runs) == 1


def test_pairs_of_same_flavour_closest_to_a_mass():
    """The ADL Q8 form: `pairs[sfos][argmin(|m[sfos] - 91.2|, keepdims=True)]` over the
    leptons of selected events, against a loop over the pairs of each event."""
    lens = [0, 2, 3, 4, 1, 3, 5, 2] * 20
    off, pt, charge = _data(lens, 11)
    flavour = (np.arange(int(off[-1])) % 2).astype(np.int32)
    lep = lazyk.zip({"pt": lazyk.from_offsets(off, pt), "q": lazyk.from_offsets(off, charge),
                     "f": lazyk.from_offsets(off, flavour)})
    events = lazyk.num(lep.pt) >= 2
    lep = lep[events]
    pairs = lazyk.argcombinations(lep, 2, fields=["i", "j"])
    l1, l2 = lep[pairs.i], lep[pairs.j]
    sfos = (l1.f == l2.f) & (l1.q != l2.q)
    mass = (l1.pt + l2.pt)[sfos]
    best = lazyk.firsts(pairs[sfos][lazyk.argmin(abs(mass - 91.2), axis=1, keepdims=True)])
    got_i, got_j = (e.eval().to_list() for e in (best.i, best.j))
    # the pair read by several row operations (firsts of both fields, is_none of them):
    # the pair mask is folded inside the arg-reduction's nest, never stored (no count pass
    # sizing it), and no tuple's index is stored
    has = ~lazyk.is_none(best)
    then = lazyk.sum(lep.pt[has], axis=1) + best.i[has] + best.j[has]
    runs = _nests(then)
    assert not any(npass.startswith("count") for _, npass in runs), runs
    assert sum("positions in the whole row" in mode for mode, _ in runs) == 1
    sums = [sum(pt[off[r]:off[r + 1]]) for r, n in enumerate(lens) if n >= 2]
    np.testing.assert_allclose(then.eval().to_list(), [s + i + j for s, i, j in
                                             zip(sums, got_i, got_j) if i is not None])
    want_i, want_j = [], []
    for r, n in enumerate(lens):
        if n < 2:
            continue
        lo = off[r]
        cands = [(abs(pt[lo + a] + pt[lo + b] - 91.2), a, b)
                 for a, b in itertools.combinations(range(n), 2)
                 if flavour[lo + a] == flavour[lo + b] and charge[lo + a] != charge[lo + b]]
        best_ab = min(cands, key=lambda t: t[0]) if cands else (None, None, None)
        want_i.append(best_ab[1])
        want_j.append(best_ab[2])
    assert got_i == want_i and got_j == want_j


def test_a_missing_mask_element_is_never_picked():
    """A `?bool` mask: its missing elements keep missing values, which argmax skips (as
    Awkward's); the values and types as Awkward's."""
    ax = ak.Array([[5.0, 1.0, 3.0], [2.0, 9.0], [], [4.0], [7.0, 8.0], [6.0, 2.0]])
    am = ak.Array([[None, True, True], [True, None], [], [None], [False, False],
                   [True, True]])
    x, m = lazyk.from_awkward(ax), lazyk.from_awkward(am)
    for arg in ("argmax", "argmin"):
        pos = getattr(lazyk, arg)(x[m], axis=1, keepdims=True)
        got = x[m][pos]
        assert best_picks.best_positions(got.node)
        want = ax[am][getattr(ak, arg)(ax[am], axis=1, keepdims=True)]
        arr = got.eval()
        assert arr.to_list() == want.to_list(), arg
        assert str(arr.type) == "6 * 1 * ?float64"


def test_other_forms_are_computed_as_written():
    """Positions read by anything but such a gather, a gather at another mask, or a fold
    without keepdims: the selection is stored as before (same values)."""
    off, v, q = _data([3, 0, 5, 1, 4], 5)
    y, c = lazyk.from_offsets(off, v), lazyk.from_offsets(off, q)
    m = c != 0
    pos = lazyk.argmin(y[m], axis=1, keepdims=True)
    assert best_picks.best_positions((c[m][pos] + pos).node) == set()
    assert best_picks.best_positions(c[c > 0][pos].node) == set()
    got = (c[m][pos] + pos).eval().to_list()
    rows = [(v[off[i]:off[i + 1]], q[off[i]:off[i + 1]]) for i in range(5)]
    want = []
    for vr, qr in rows:
        kept = [(a, b) for a, b in zip(vr, qr) if b != 0]
        if not kept:
            want.append([None])
            continue
        k = int(np.argmin([a for a, _ in kept]))
        want.append([int(kept[k][1]) + k])
    assert got == want

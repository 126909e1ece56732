"""A plain reference for the eight ADL queries: one Python loop per event over NumPy columns.

Slow on purpose (about 1e4 events a second): each query is written the way its definition
reads, with `itertools` for the pairs and triplets and explicit loops for the "closest to",
"highest pt" and "not within dR" choices, over the `adl_events.Events` columns (no Awkward).
The kinematics are `adl_kinematics`' (the same float64 formulas as the Awkward queries), so
the values selected per event are expected to be equal to the last bit, and with them every
histogram count.

`QUERIES[name](events)` returns {histogram name: values in event order}; `numpy_counts`
bins them by numpy.histogram's rule (edges from np.linspace in the values' float type, a
value on an edge goes right, the last bin closed) and `regular_counts` by boost-histogram's
regular-axis rule (bin = floor((x - lo) / (hi - lo) * bins) in double, x == hi overflows),
which differ for a value that lies exactly on an edge.
"""
from __future__ import annotations

import sys
from itertools import combinations
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import adl_kinematics as kin  # noqa: E402
from adl_events import Events  # noqa: E402
from adl_kinematics import TOP_MASS, Z_MASS  # noqa: E402


def numpy_counts(values: np.ndarray, bins: int, lo: float, hi: float) -> np.ndarray:
    """numpy.histogram's counts (int64) of `values` over [lo, hi]."""
    return np.histogram(values, bins, (lo, hi))[0].astype(np.int64)


def regular_counts(values, bins: int, lo: float, hi: float) -> np.ndarray:
    """boost-histogram's regular-axis counts, bin by bin in Python floats (IEEE doubles)."""
    out = np.zeros(bins, np.int64)
    for x in values:
        z = (float(x) - lo) / (hi - lo)
        if 0 <= z < 1:
            out[int(z * bins)] += 1
    return out


def _p4(objs: dict):
    return kin.p4(objs["pt"], objs["eta"], objs["phi"], objs["mass"])


def _add(xs):
    """x0 + x1 + ... added left to right (as the Awkward queries write it)."""
    out = xs[0]
    for x in xs[1:]:
        out = out + x
    return out


def _sum_mass(p, idx):
    """Invariant mass of the sum of the four-vectors `idx` of p = (px, py, pz, E)."""
    return kin.mass(*(_add([c[i] for i in idx]) for c in p))


def q1(ev: Events) -> dict:
    return {"Q1": np.array([ev.met_pt[i] for i in range(len(ev))], np.float32)}


def q2(ev: Events) -> dict:
    out = []
    for i in range(len(ev)):
        out += list(ev.jets.event(i)["pt"])
    return {"Q2": np.array(out, np.float32)}


def q3(ev: Events) -> dict:
    out = []
    for i in range(len(ev)):
        jets = ev.jets.event(i)
        out += [pt for pt, eta in zip(jets["pt"], jets["eta"]) if abs(eta) < 1]
    return {"Q3": np.array(out, np.float32)}


def q4(ev: Events) -> dict:
    out = []
    for i in range(len(ev)):
        if sum(1 for pt in ev.jets.event(i)["pt"] if pt > 40) >= 2:
            out.append(ev.met_pt[i])
    return {"Q4": np.array(out, np.float32)}


def q5(ev: Events) -> dict:
    out = []
    for i in range(len(ev)):
        mu = ev.muons.event(i)
        p = _p4(mu)
        for a, b in combinations(range(len(mu["pt"])), 2):
            if mu["charge"][a] != mu["charge"][b] and 60 < _sum_mass(p, (a, b)) < 120:
                out.append(ev.met_pt[i])
                break
    return {"Q5": np.array(out, np.float32)}


def q6(ev: Events) -> dict:
    pts, btags = [], []
    for i in range(len(ev)):
        jets = ev.jets.event(i)
        if len(jets["pt"]) < 3:
            continue
        p = _p4(jets)
        best, best_dist = None, None
        for tri in combinations(range(len(jets["pt"])), 3):
            dist = abs(_sum_mass(p, tri) - TOP_MASS)
            if best is None or dist < best_dist:  # the first of equal distances
                best, best_dist = tri, dist
        px, py = _add([p[0][j] for j in best]), _add([p[1][j] for j in best])
        pts.append(kin.pt(px, py))
        btags.append(max(jets["btag"][j] for j in best))
    return {"Q6_pt": np.array(pts, np.float64), "Q6_btag": np.array(btags, np.float32)}


def q7(ev: Events) -> dict:
    out = []
    for i in range(len(ev)):
        jets = ev.jets.event(i)
        leptons = [(eta, phi) for c in (ev.muons, ev.electrons)
                   for pt, eta, phi in zip(*(c.event(i)[k] for k in ("pt", "eta", "phi")))
                   if pt > 10]
        total, n = 0.0, 0
        for pt, eta, phi in zip(jets["pt"], jets["eta"], jets["phi"]):
            if pt > 30 and all(kin.delta_r(eta, phi, le, lp) >= 0.4 for le, lp in leptons):
                total += float(pt)
                n += 1
        if n:
            out.append(total)
    return {"Q7": np.array(out, np.float64)}


def q8(ev: Events) -> dict:
    out = []
    for i in range(len(ev)):
        mu, el = ev.muons.event(i), ev.electrons.event(i)
        lep = {k: np.concatenate([mu[k], el[k]]) for k in mu}
        flavour = [0] * len(mu["pt"]) + [1] * len(el["pt"])
        n = len(flavour)
        if n < 3:
            continue
        p = _p4(lep)
        best, best_dist = None, None
        for a, b in combinations(range(n), 2):
            if flavour[a] != flavour[b] or lep["charge"][a] == lep["charge"][b]:
                continue
            dist = abs(_sum_mass(p, (a, b)) - Z_MASS)
            if best is None or dist < best_dist:
                best, best_dist = (a, b), dist
        if best is None:
            continue
        lead = None
        for j in range(n):  # the first of equal pts
            if j not in best and (lead is None or lep["pt"][j] > lep["pt"][lead]):
                lead = j
        out.append(kin.transverse_mass(lep["pt"][lead], lep["phi"][lead], ev.met_pt[i],
                                       ev.met_phi[i]))
    return {"Q8": np.array(out, np.float64)}


QUERIES = {"Q1": q1, "Q2": q2, "Q3": q3, "Q4": q4, "Q5": q5, "Q6": q6, "Q7": q7, "Q8": q8}

"""The eight IRIS-HEP ADL functionality queries with Awkward Array 2, coffea style.

Written as an Awkward user writes them (`ak.zip`, `ak.combinations`, `ak.cartesian`,
`ak.argmin(..., keepdims=True)`, `ak.num`, `ak.flatten`, boolean masks), with histograms
filled by boost-histogram (Int64 storage, so counts compare exactly). The kinematics come from
`adl_kinematics` (float64 arithmetic); the binning is that of the ROOT RDataFrame reference
implementations listed in the iris-hep/adl-benchmarks-index (100 bins; `BINS`).

Each query takes the events of `adl_events.to_awkward` and returns {histogram name:
Filled(values, hist)}: `values` are the histogrammed values in event order (a float NumPy
array), `hist` the boost-histogram. Q6 fills two histograms from one trijet search.

    python benchmarks/adl_awkward.py --events 1e6 --repeat 5   # timings per query
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import NamedTuple

import awkward as ak
import boost_histogram as bh
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import adl_events  # noqa: E402
import adl_kinematics as kin  # noqa: E402
from adl_kinematics import BINS, TOP_MASS, Z_MASS  # noqa: E402,F401


class Filled(NamedTuple):
    values: np.ndarray
    hist: bh.Histogram


def fill(name: str, values) -> Filled:
    """Histogram `name` of a flat Awkward (or NumPy) array of values."""
    values = ak.to_numpy(values)
    if np.ma.isMaskedArray(values):  # an option type without a missing value
        assert not values.mask.any(), f"{name}: missing values reached the histogram"
        values = values.data
    bins, lo, hi = BINS[name]
    h = bh.Histogram(bh.axis.Regular(bins, lo, hi), storage=bh.storage.Int64())
    h.fill(values)
    return Filled(values, h)


def with_p4(objects, **extra):
    """Records of px, py, pz, E (float64) of `objects` plus the `extra` fields."""
    px, py, pz, e = kin.p4(objects.pt, objects.eta, objects.phi, objects.mass)
    return ak.zip({"px": px, "py": py, "pz": pz, "e": e, **extra})


def q1(ev) -> dict:
    """MET of all events."""
    return {"Q1": fill("Q1", ev.MET.pt)}


def q2(ev) -> dict:
    """pt of all jets."""
    return {"Q2": fill("Q2", ak.flatten(ev.Jet.pt))}


def q3(ev) -> dict:
    """pt of the jets with |eta| < 1."""
    jets = ev.Jet
    return {"Q3": fill("Q3", ak.flatten(jets.pt[abs(jets.eta) < 1]))}


def q4(ev) -> dict:
    """MET of the events with at least two jets of pt > 40."""
    return {"Q4": fill("Q4", ev.MET.pt[ak.sum(ev.Jet.pt > 40, axis=1) >= 2])}


def q5(ev) -> dict:
    """MET of the events with an opposite-charge muon pair of mass in (60, 120)."""
    ev = ev[ak.num(ev.Muon) >= 2]
    muons = with_p4(ev.Muon, charge=ev.Muon.charge)
    pairs = ak.combinations(muons, 2, fields=["a", "b"])
    a, b = pairs.a, pairs.b
    m = kin.mass(a.px + b.px, a.py + b.py, a.pz + b.pz, a.e + b.e)
    good = (a.charge != b.charge) & (m > 60) & (m < 120)
    return {"Q5": fill("Q5", ev.MET.pt[ak.any(good, axis=1)])}


def q6(ev) -> dict:
    """In events with >= 3 jets, the trijet of mass closest to 172.5: its pt, and the largest
    b-tag among its three jets."""
    ev = ev[ak.num(ev.Jet) >= 3]
    jets = with_p4(ev.Jet, btag=ev.Jet.btag)
    tri = ak.combinations(jets, 3, fields=["j1", "j2", "j3"])
    j1, j2, j3 = tri.j1, tri.j2, tri.j3
    px, py = j1.px + j2.px + j3.px, j1.py + j2.py + j3.py
    m = kin.mass(px, py, j1.pz + j2.pz + j3.pz, j1.e + j2.e + j3.e)
    best = ak.argmin(abs(m - TOP_MASS), axis=1, keepdims=True)
    btag = np.maximum(np.maximum(j1.btag, j2.btag), j3.btag)
    return {"Q6_pt": fill("Q6_pt", ak.flatten(kin.pt(px, py)[best])),
            "Q6_btag": fill("Q6_btag", ak.flatten(btag[best]))}


def q7(ev) -> dict:
    """Scalar sum of the pt of jets with pt > 30 that are not within dR 0.4 of any lepton
    (muon or electron) with pt > 10, in events with at least one such jet."""
    jets = ev.Jet[ev.Jet.pt > 30]
    leptons = ak.concatenate([ev.Muon[ev.Muon.pt > 10], ev.Electron[ev.Electron.pt > 10]],
                             axis=1)
    pairs = ak.cartesian({"jet": jets, "lep": leptons}, axis=1, nested=True)
    dr = kin.delta_r(pairs.jet.eta, pairs.jet.phi, pairs.lep.eta, pairs.lep.phi)
    isolated = jets[ak.all(dr >= 0.4, axis=-1)]
    sumpt = ak.sum(ak.values_astype(isolated.pt, np.float64), axis=1)
    return {"Q7": fill("Q7", sumpt[ak.num(isolated) > 0])}


def q8(ev) -> dict:
    """In events with >= 3 leptons and a same-flavour opposite-charge pair: the pair of mass
    closest to 91.2, then mT of MET and the highest-pt lepton outside that pair."""
    ev = ev[ak.num(ev.Muon) + ak.num(ev.Electron) >= 3]

    def leptons(c, flavour):
        return ak.zip({"pt": c.pt, "eta": c.eta, "phi": c.phi, "mass": c.mass,
                       "charge": c.charge, "flavour": ak.full_like(c.charge, flavour)})
    lep = ak.concatenate([leptons(ev.Muon, 0), leptons(ev.Electron, 1)], axis=1)
    p4 = with_p4(lep)
    pairs = ak.argcombinations(lep, 2, fields=["i", "j"])
    l1, l2, a, b = lep[pairs.i], lep[pairs.j], p4[pairs.i], p4[pairs.j]
    sfos = (l1.flavour == l2.flavour) & (l1.charge != l2.charge)
    m = kin.mass(a.px + b.px, a.py + b.py, a.pz + b.pz, a.e + b.e)[sfos]
    pairs = pairs[sfos]
    best = ak.firsts(pairs[ak.argmin(abs(m - Z_MASS), axis=1, keepdims=True)])
    has = ~ak.is_none(best)  # events without a same-flavour opposite-charge pair drop out
    lep, best, met = lep[has], best[has], ev.MET[has]
    index = ak.local_index(lep)
    others = lep[(index != best.i) & (index != best.j)]
    lead = others[ak.argmax(others.pt, axis=1, keepdims=True)]
    mt = kin.transverse_mass(lead.pt, lead.phi, met.pt, met.phi)
    return {"Q8": fill("Q8", ak.flatten(mt))}


QUERIES = {"Q1": q1, "Q2": q2, "Q3": q3, "Q4": q4, "Q5": q5, "Q6": q6, "Q7": q7, "Q8": q8}


def run_all(ev) -> dict:
    """Every histogram: {name: Filled}."""
    out = {}
    for q in QUERIES.values():
        out.update(q(ev))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=float, default=1e6)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--seed", type=int, default=2012)
    args = p.parse_args(argv)
    gen = []
    for _ in range(3):
        t0 = time.perf_counter()
        events = adl_events.generate(int(args.events), args.seed)
        gen.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    ev = adl_events.to_awkward(events)
    wrap = time.perf_counter() - t0
    print(f"{len(events):,} events ({events.nbytes / 1e6:.0f} MB of columns): generated in "
          f"{statistics.median(gen):.2f} s (median of 3), wrapped for Awkward in "
          f"{wrap * 1e3:.2f} ms (awkward {ak.__version__}, boost-histogram {bh.__version__}, "
          f"numpy {np.__version__})")
    # CPU time (user + system, this process) next to wall time: on a shared machine it
    # does not count the time spent waiting for a core
    print(f"\n| query | wall, median of {args.repeat} (ms) | wall, min (ms) | CPU, median (ms) "
          "| entries | entries binned otherwise by numpy.histogram |")
    print("|---|---|---|---|---|---|")
    for name, q in QUERIES.items():
        times, cpu = [], []
        for _ in range(args.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            res = q(ev)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        for hname, r in res.items():
            bins, lo, hi = BINS[hname]
            # boost's regular axis and numpy.histogram disagree only for values on an edge
            moved = int(np.abs(np.histogram(r.values, bins, (lo, hi))[0]
                               - r.hist.values()).sum())
            print(f"| {hname if len(res) > 1 else name} | "
                  f"{statistics.median(times) * 1e3:.1f} | {min(times) * 1e3:.1f} | "
                  f"{statistics.median(cpu) * 1e3:.1f} | {int(r.hist.values().sum()):,} | "
                  f"{moved} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

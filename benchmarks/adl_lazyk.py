"""The eight IRIS-HEP ADL functionality queries with lazyk: `adl_awkward.py` with `ak.`
replaced by `lazyk.` (plus `[:, None]` where a per-event value meets per-object values:
lazyk broadcasts from the right, as NumPy does).

Everything is lazy: a query builds its histogram(s) (`lazyk.histogram`, numpy.histogram's
bins) and `run` evaluates a query's histograms with one `lazyk.evaluate(...)`, so the
combinations, the reductions over them and the histogram fill run in fused loop nests over
the events (Q6's two histograms of one trijet search in one pass). The kinematics are the
same `adl_kinematics` NumPy ufuncs (they dispatch to lazyk on lazyk expressions).

Each query takes the events of `events(adl_events.to_lazyk(...))` and returns {histogram name:
lazyk.histogram}.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import lazyk

sys.path.insert(0, str(Path(__file__).resolve().parent))
import adl_kinematics as kin  # noqa: E402
from adl_kinematics import BINS, TOP_MASS, Z_MASS  # noqa: E402,F401


def events(columns: dict):
    """The event records (`ev.Jet.pt`, `ev.MET.pt`, ...) over `adl_events.to_lazyk`'s
    columns: lazy records, nothing copied."""
    def collection(prefix: str):
        names = sorted({k.split("_", 1)[1] for k in columns if k.startswith(prefix + "_")})
        return lazyk.zip({n: columns[f"{prefix}_{n}"] for n in names})
    return lazyk.zip({"MET": lazyk.zip({"pt": columns["met_pt"], "phi": columns["met_phi"]}),
                      "Jet": collection("Jet"), "Muon": collection("Muon"),
                      "Electron": collection("Electron")}, depth_limit=1)


def fill(name: str, values):
    """Histogram `name` of the values (every axis: nothing to flatten)."""
    bins, lo, hi = BINS[name]
    return lazyk.histogram(values, bins, (lo, hi))


def with_p4(objects, **extra):
    """Records of px, py, pz, E (float64) of `objects` plus the `extra` fields."""
    px, py, pz, e = kin.p4(objects.pt, objects.eta, objects.phi, objects.mass)
    return lazyk.zip({"px": px, "py": py, "pz": pz, "e": e, **extra})


def q1(ev) -> dict:
    """MET of all events."""
    return {"Q1": fill("Q1", ev.MET.pt)}


def q2(ev) -> dict:
    """pt of all jets."""
    return {"Q2": fill("Q2", ev.Jet.pt)}


def q3(ev) -> dict:
    """pt of the jets with |eta| < 1."""
    jets = ev.Jet
    return {"Q3": fill("Q3", jets.pt[abs(jets.eta) < 1])}


def q4(ev) -> dict:
    """MET of the events with at least two jets of pt > 40."""
    return {"Q4": fill("Q4", ev.MET.pt[lazyk.sum(ev.Jet.pt > 40, axis=1) >= 2])}


def q5(ev) -> dict:
    """MET of the events with an opposite-charge muon pair of mass in (60, 120)."""
    ev = ev[lazyk.num(ev.Muon) >= 2]
    muons = with_p4(ev.Muon, charge=ev.Muon.charge)
    pairs = lazyk.combinations(muons, 2, fields=["a", "b"])
    a, b = pairs.a, pairs.b
    m = kin.mass(a.px + b.px, a.py + b.py, a.pz + b.pz, a.e + b.e)
    good = (a.charge != b.charge) & (m > 60) & (m < 120)
    return {"Q5": fill("Q5", ev.MET.pt[lazyk.any(good, axis=1)])}


def q5_fused(ev) -> dict:
    """Q5's pair search alone (no selection): per event, whether it has an opposite-charge
    muon pair of mass in (60, 120), as a 2-bin histogram of that flag. The part of Q5 this
    branch runs; `figures` in bench_adl.py times it against Awkward."""
    muons = with_p4(ev.Muon, charge=ev.Muon.charge)
    pairs = lazyk.combinations(muons, 2, fields=["a", "b"])
    a, b = pairs.a, pairs.b
    m = kin.mass(a.px + b.px, a.py + b.py, a.pz + b.pz, a.e + b.e)
    good = (a.charge != b.charge) & (m > 60) & (m < 120)
    return {"Q5_any": lazyk.histogram(lazyk.any(good, axis=1), 2, (0, 2))}


def q6(ev) -> dict:
    """In events with >= 3 jets, the trijet of mass closest to 172.5: its pt, and the largest
    b-tag among its three jets."""
    ev = ev[lazyk.num(ev.Jet) >= 3]
    jets = with_p4(ev.Jet, btag=ev.Jet.btag)
    tri = lazyk.combinations(jets, 3, fields=["j1", "j2", "j3"])
    j1, j2, j3 = tri.j1, tri.j2, tri.j3
    px, py = j1.px + j2.px + j3.px, j1.py + j2.py + j3.py
    m = kin.mass(px, py, j1.pz + j2.pz + j3.pz, j1.e + j2.e + j3.e)
    best = lazyk.argmin(abs(m - TOP_MASS), axis=1, keepdims=True)
    btag = np.maximum(np.maximum(j1.btag, j2.btag), j3.btag)
    return {"Q6_pt": fill("Q6_pt", kin.pt(px, py)[best]),
            "Q6_btag": fill("Q6_btag", btag[best])}


def q7(ev) -> dict:
    """Scalar sum of the pt of jets with pt > 30 that are not within dR 0.4 of any lepton
    (muon or electron) with pt > 10, in events with at least one such jet."""
    jets = ev.Jet[ev.Jet.pt > 30]
    leptons = lazyk.concatenate([ev.Muon[ev.Muon.pt > 10], ev.Electron[ev.Electron.pt > 10]],
                                axis=1)
    pairs = lazyk.cartesian({"jet": jets, "lep": leptons}, axis=1, nested=True)
    dr = kin.delta_r(pairs.jet.eta, pairs.jet.phi, pairs.lep.eta, pairs.lep.phi)
    isolated = jets[lazyk.all(dr >= 0.4, axis=-1)]
    sumpt = lazyk.sum(isolated.pt.astype(np.float64), axis=1)
    return {"Q7": fill("Q7", sumpt[lazyk.num(isolated) > 0])}


def q8(ev) -> dict:
    """In events with >= 3 leptons and a same-flavour opposite-charge pair: the pair of mass
    closest to 91.2, then mT of MET and the highest-pt lepton outside that pair."""
    ev = ev[lazyk.num(ev.Muon) + lazyk.num(ev.Electron) >= 3]

    def leptons(c, flavour):
        return lazyk.zip({"pt": c.pt, "eta": c.eta, "phi": c.phi, "mass": c.mass,
                          "charge": c.charge, "flavour": lazyk.full_like(c.charge, flavour)})
    lep = lazyk.concatenate([leptons(ev.Muon, 0), leptons(ev.Electron, 1)], axis=1)
    p4 = with_p4(lep)
    pairs = lazyk.argcombinations(lep, 2, fields=["i", "j"])
    l1, l2, a, b = lep[pairs.i], lep[pairs.j], p4[pairs.i], p4[pairs.j]
    sfos = (l1.flavour == l2.flavour) & (l1.charge != l2.charge)
    m = kin.mass(a.px + b.px, a.py + b.py, a.pz + b.pz, a.e + b.e)[sfos]
    pairs = pairs[sfos]
    best = lazyk.firsts(pairs[lazyk.argmin(abs(m - Z_MASS), axis=1, keepdims=True)])
    has = ~lazyk.is_none(best)
    lep, best, met = lep[has], best[has], ev.MET[has]
    index = lazyk.local_index(lep)
    others = lep[(index != best.i[:, None]) & (index != best.j[:, None])]
    lead = others[lazyk.argmax(others.pt, axis=1, keepdims=True)]
    mt = kin.transverse_mass(lead.pt, lead.phi, met.pt[:, None], met.phi[:, None])
    return {"Q8": fill("Q8", lazyk.flatten(mt))}


QUERIES = {"Q1": q1, "Q2": q2, "Q3": q3, "Q4": q4, "Q5": q5, "Q6": q6, "Q7": q7, "Q8": q8}


def run(query, ev) -> dict:
    """{histogram name: counts (NumPy)} of one query: its histograms in one evaluation."""
    hists = query(ev)
    counts = lazyk.evaluate(*hists.values())
    if len(hists) == 1:
        counts = (counts,)
    return dict(zip(hists, counts))

"""NanoAOD-like events for the ADL benchmark: NumPy offsets + content columns, and Awkward arrays.

Every event has missing transverse energy (`met_pt`, `met_phi`) and three collections of
objects: jets (`pt eta phi mass btag`), muons and electrons (`pt eta phi mass charge`). The
numbers of objects per event are Poisson (jets 4, muons 1.2, electrons 1.0 on average) and
the columns follow falling or flat distributions shaped like CMS NanoAOD's, stored as NanoAOD
stores them: float32 kinematics, int32 charge. Generation is vectorised (one NumPy call per
column, no Python loop per event): 1e6 events take well under two seconds.

A collection is one `offsets` array (int64, n_events + 1 entries) and one flat content array
per field, so `lazyk.from_offsets(jets.offsets, jets.pt)` reads the same memory that
`to_awkward` wraps (neither copies).

    python benchmarks/adl_events.py --events 1000000     # generation time and a summary
"""
from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

JET_FIELDS = ("pt", "eta", "phi", "mass", "btag")
LEPTON_FIELDS = ("pt", "eta", "phi", "mass", "charge")
MUON_MASS = 0.105658  # GeV
ELECTRON_MASS = 0.000511


@dataclass
class Collection:
    """Objects of one kind: row i is `field[offsets[i]:offsets[i + 1]]` for every field."""

    offsets: np.ndarray  # int64, n_events + 1
    fields: dict  # name -> flat NumPy content

    def __getattr__(self, name):
        fields = self.__dict__.get("fields", {})
        if name in fields:
            return fields[name]
        raise AttributeError(name)

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)

    def event(self, i: int) -> dict:
        """The objects of event `i` as {field: NumPy slice}."""
        lo, hi = self.offsets[i], self.offsets[i + 1]
        return {k: v[lo:hi] for k, v in self.fields.items()}


@dataclass
class Events:
    """A block of events: MET per event and the jet, muon and electron collections."""

    met_pt: np.ndarray  # float32, n_events
    met_phi: np.ndarray  # float32, n_events
    jets: Collection
    muons: Collection
    electrons: Collection

    def __len__(self) -> int:
        return len(self.met_pt)

    @property
    def nbytes(self) -> int:
        cols = [self.met_pt, self.met_phi]
        for c in (self.jets, self.muons, self.electrons):
            cols += [c.offsets, *c.fields.values()]
        return sum(a.nbytes for a in cols)


def _offsets(counts: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets


def _falling(rng, n: int, start: float, scale: float) -> np.ndarray:
    """A falling pT spectrum: `start` plus an exponential of mean `scale` (float32)."""
    return (start + scale * rng.standard_exponential(n, dtype=np.float32)).astype(np.float32)


def _eta(rng, n: int, sigma: float, limit: float) -> np.ndarray:
    """Gaussian eta of width `sigma` inside +-limit (the tails redrawn flat, no spike at the
    edge), float32."""
    eta = sigma * rng.standard_normal(n, dtype=np.float32)
    out = np.abs(eta) >= limit
    eta[out] = rng.uniform(-limit, limit, int(out.sum())).astype(np.float32)
    return eta


def _phi(rng, n: int) -> np.ndarray:
    """Flat in [-pi, pi) (float32; the float32 rounding of pi is kept inside the range)."""
    phi = rng.uniform(-np.pi, np.pi, n).astype(np.float32)
    return np.minimum(phi, np.nextafter(np.float32(np.pi), np.float32(0)))


def _leptons(rng, n_events: int, mean: float, mass: float) -> Collection:
    counts = rng.poisson(mean, n_events)
    offsets = _offsets(counts)
    n = int(offsets[-1])
    return Collection(offsets, {
        "pt": _falling(rng, n, 5.0, 20.0),  # NanoAOD keeps leptons from a few GeV
        "eta": _eta(rng, n, 1.2, 2.5),
        "phi": _phi(rng, n),
        "mass": np.full(n, mass, np.float32),
        "charge": np.where(rng.random(n) < 0.5, -1, 1).astype(np.int32),
    })


def generate(n_events: int = 1_000_000, seed: int = 2012) -> Events:
    """`n_events` NanoAOD-like events, the same for the same seed.

    Jets: Poisson(4) per event, pt 15 GeV + exponential (mean 20 GeV), eta Gaussian (width
    2.0) within |eta| < 4.7, phi flat, mass 4-20 % of pt, b-tag flat in [0, 1). Muons: Poisson
    (1.2), electrons: Poisson(1.0), both pt 5 GeV + exponential (mean 20 GeV), eta Gaussian
    (width 1.2) within |eta| < 2.5, phi flat, their physical mass, charge -1 or +1. MET: pt
    from a Gamma(2, 15 GeV) (mean 30 GeV), phi flat.
    """
    if n_events < 0:
        raise ValueError(f"n_events must be >= 0, got {n_events}")
    rng = np.random.default_rng(seed)
    met_pt = (15.0 * rng.standard_gamma(2.0, n_events, dtype=np.float32)).astype(np.float32)
    met_phi = _phi(rng, n_events)
    counts = rng.poisson(4.0, n_events)
    offsets = _offsets(counts)
    n = int(offsets[-1])
    pt = _falling(rng, n, 15.0, 20.0)
    jets = Collection(offsets, {
        "pt": pt,
        "eta": _eta(rng, n, 2.0, 4.7),
        "phi": _phi(rng, n),
        "mass": (pt * rng.uniform(0.04, 0.20, n)).astype(np.float32),
        "btag": rng.random(n, dtype=np.float32),
    })
    muons = _leptons(rng, n_events, 1.2, MUON_MASS)
    electrons = _leptons(rng, n_events, 1.0, ELECTRON_MASS)
    return Events(met_pt, met_phi, jets, muons, electrons)


def to_awkward(events: Events):
    """The events as one Awkward array of records, coffea's NanoEvents layout:
    `ev.MET.pt`, `ev.Jet.pt`, `ev.Muon.charge`, `ev.Electron.eta`, ... (no copy)."""
    import awkward as ak

    C = ak.contents

    def collection(c: Collection):
        record = C.RecordArray([C.NumpyArray(v) for v in c.fields.values()], list(c.fields))
        return C.ListOffsetArray(ak.index.Index64(c.offsets), record)

    met = C.RecordArray([C.NumpyArray(events.met_pt), C.NumpyArray(events.met_phi)],
                        ["pt", "phi"])
    layout = C.RecordArray(
        [met, collection(events.jets), collection(events.muons), collection(events.electrons)],
        ["MET", "Jet", "Muon", "Electron"])
    return ak.Array(layout)


def to_lazyk(events: Events) -> dict:
    """The columns as lazyk arrays over the same memory, NanoAOD's flat names:
    `met_pt`, `met_phi` (`N * float32`) and `Jet_pt`, `Muon_charge`, ... (`N * var * T`)."""
    import lazyk

    out = {"met_pt": lazyk.array(events.met_pt), "met_phi": lazyk.array(events.met_phi)}
    for prefix, c in (("Jet", events.jets), ("Muon", events.muons),
                      ("Electron", events.electrons)):
        for name, values in c.fields.items():
            out[f"{prefix}_{name}"] = lazyk.from_offsets(c.offsets, values)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=float, default=1e6)
    p.add_argument("--seed", type=int, default=2012)
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    ev = generate(int(args.events), args.seed)
    dt = time.perf_counter() - t0
    print(f"{len(ev):,} events in {dt:.2f} s ({ev.nbytes / 1e6:.0f} MB): "
          f"{len(ev.jets.pt):,} jets, {len(ev.muons.pt):,} muons, "
          f"{len(ev.electrons.pt):,} electrons")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

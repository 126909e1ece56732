"""Combinations and histograms at 1e6 events: lazyk's fused loop nests against Awkward and
NumPy (not run in CI; the machine's load moves wall times: the CPU time is reported too).

- pairs: per event, whether a muon pair has invariant mass in (60, 120) GeV:
  `ak.any(mass(ak.combinations(mu, 2)) in window, axis=1)` against the same code with
  `lazyk.` (the pairs walked inside the kernel, never stored).
- triplets: per event, the largest trijet mass (ak.max over ak.combinations(jets, 3)).
- histogram: `np.histogram(x, 100, (0, 200))` against `lazyk.histogram` of 1e6 float64 and
  float32 values, and of a ragged `N * var * float32` column (4e6 jet pts) against
  `np.histogram(ak.flatten(...))`.

    python benchmarks/bench_tuples.py --events 1e6 --repeat 5
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import adl_events  # noqa: E402
import adl_kinematics as kin  # noqa: E402

import lazyk  # noqa: E402


def pair_flags(mu, lib):
    px, py, pz, e = kin.p4(mu.pt, mu.eta, mu.phi, mu.mass)
    p = lib.combinations(lib.zip({"px": px, "py": py, "pz": pz, "e": e}), 2)
    a, b = p["0"], p["1"]
    m = kin.mass(a.px + b.px, a.py + b.py, a.pz + b.pz, a.e + b.e)
    return lib.any((m > 60) & (m < 120), axis=1)


def top_trijet(jets, lib):
    px, py, pz, e = kin.p4(jets.pt, jets.eta, jets.phi, jets.mass)
    t = lib.combinations(lib.zip({"px": px, "py": py, "pz": pz, "e": e}), 3)
    a, b, c = t["0"], t["1"], t["2"]
    m = kin.mass(a.px + b.px + c.px, a.py + b.py + c.py, a.pz + b.pz + c.pz, a.e + b.e + c.e)
    return lib.max(m, axis=1, initial=-1.0)


def measure(rows: dict, repeat: int) -> dict:
    """{row: {tool: (median wall s, median CPU s)}}, the tools interleaved per round."""
    out = {}
    for row, tools in rows.items():
        for fn in tools.values():
            fn()  # compiled, caches warm
        times = {t: ([], []) for t in tools}
        names = list(tools)
        for r in range(repeat):
            for t in (names if r % 2 == 0 else names[::-1]):
                w, c = time.perf_counter(), time.process_time()
                tools[t]()
                times[t][0].append(time.perf_counter() - w)
                times[t][1].append(time.process_time() - c)
        out[row] = {t: (statistics.median(w), statistics.median(c))
                    for t, (w, c) in times.items()}
    return out


def main(argv=None) -> int:
    import awkward as ak
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=lambda s: int(float(s)), default=1_000_000)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    ev = adl_events.generate(args.events, 2012)
    aev, cols = adl_events.to_awkward(ev), adl_events.to_lazyk(ev)

    def coll(prefix):
        names = sorted({k.split("_", 1)[1] for k in cols if k.startswith(prefix + "_")})
        return lazyk.zip({n: cols[f"{prefix}_{n}"] for n in names})
    lmu, ljets = coll("Muon"), coll("Jet")
    # the same answers first
    assert np.array_equal(pair_flags(lmu, lazyk).to_numpy(),
                          ak.to_numpy(pair_flags(aev.Muon, ak)))
    np.testing.assert_allclose(top_trijet(ljets, lazyk).to_numpy(),
                               ak.to_numpy(top_trijet(aev.Jet, ak)), rtol=1e-9)
    x64 = np.random.default_rng(1).exponential(30, args.events)
    x32 = x64.astype(np.float32)
    flat_pt = ev.jets.pt
    for x in (x64, x32):
        assert np.array_equal(lazyk.histogram(x, 100, (0, 200)).to_numpy(),
                              np.histogram(x, 100, (0, 200))[0])
    assert np.array_equal(lazyk.histogram(cols["Jet_pt"], 100, (15, 60)).to_numpy(),
                          np.histogram(ak.to_numpy(ak.flatten(aev.Jet.pt)), 100, (15, 60))[0])
    rows = {
        "pairs: any(mass in 60-120) per event": {
            "Awkward": lambda: ak.to_numpy(pair_flags(aev.Muon, ak)),
            "lazyk": lambda: pair_flags(lmu, lazyk).to_numpy()},
        "triplets: largest trijet mass per event": {
            "Awkward": lambda: ak.to_numpy(top_trijet(aev.Jet, ak)),
            "lazyk": lambda: top_trijet(ljets, lazyk).to_numpy()},
        f"histogram of {args.events:.0e} float64": {
            "NumPy": lambda: np.histogram(x64, 100, (0, 200)),
            "lazyk": lambda: lazyk.histogram(x64, 100, (0, 200)).to_numpy()},
        f"histogram of {args.events:.0e} float32": {
            "NumPy": lambda: np.histogram(x32, 100, (0, 200)),
            "lazyk": lambda: lazyk.histogram(x32, 100, (0, 200)).to_numpy()},
        f"histogram of jet pt ({len(flat_pt):.1e} float32 in var rows)": {
            "NumPy": lambda: np.histogram(ak.to_numpy(ak.flatten(aev.Jet.pt)), 100, (15, 60)),
            "lazyk": lambda: lazyk.histogram(cols["Jet_pt"], 100, (15, 60)).to_numpy()},
    }
    got = measure(rows, args.repeat)
    print(f"{args.events:,} events, {lazyk.get_num_threads()} lazyk threads, median of "
          f"{args.repeat} interleaved rounds (wall; CPU of this process in brackets)\n")
    print("| workload | other (ms) | lazyk (ms) | other / lazyk (wall) | (CPU) |")
    print("|---|---|---|---|---|")
    for row, tools in got.items():
        other = next(t for t in tools if t != "lazyk")
        (ow, oc), (lw, lc) = tools[other], tools["lazyk"]
        print(f"| {row} ({other}) | {ow * 1e3:.1f} [{oc * 1e3:.1f}] | {lw * 1e3:.1f} "
              f"[{lc * 1e3:.1f}] | {ow / lw:.1f}x | {oc / lc:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

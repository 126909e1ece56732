"""The ADL benchmark: the eight IRIS-HEP ADL queries with lazyk (`adl_lazyk.py`) against
Awkward Array + boost-histogram (`adl_awkward.py`), on NanoAOD-like events
(`adl_events.py`). `lazyk bench --adl` runs it.

1. Generate `--events` events once (fixed seed); wrap the same buffers for both tools.
2. Check every query on `--check-events` events first: lazyk's counts must equal
   numpy.histogram of Awkward's values (boost's regular axis bins values on an edge
   otherwise: benchmarks/ADL.md). A query lazyk cannot run yet is reported as pending, with
   the operation it waits for.
3. Time each runnable query in interleaved rounds (each round runs both tools once, the
   order alternating; the median of `--repeat` rounds, more for a query of a millisecond or
   less: rounds filling ~0.3 s, at most 200), a query being everything from the
   event columns to the filled histogram(s). Report both medians, the ratio, lazyk's cold
   compile (a new process, an empty kernel cache: the first call) and its warm-cache first
   call (a new process, the cache filled), and how close lazyk comes to memory bandwidth:
   the bytes of the event columns the query reads over its time, against a NumPy copy's
   GB/s (bytes read + written) measured in the same run.

Extra rows time parts of a query lazyk runs fused today: "Q5 pairs" (per event, whether an
opposite-charge muon pair has mass in 60-120: `ak.any` over `ak.combinations` against the
pairs walked inside the kernel).

    python benchmarks/bench_adl.py --events 1e6 --repeat 5 [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import adl_awkward as A  # noqa: E402
import adl_events  # noqa: E402
import adl_lazyk as L  # noqa: E402
from adl_reference import numpy_counts  # noqa: E402

import lazyk  # noqa: E402


def awkward_q5_pairs(ev):
    """Awkward's side of the "Q5 pairs" row: the pair search of Q5 and its `ak.any`."""
    import awkward as ak
    muons = A.with_p4(ev.Muon, charge=ev.Muon.charge)
    pairs = ak.combinations(muons, 2, fields=["a", "b"])
    a, b = pairs.a, pairs.b
    m = A.kin.mass(a.px + b.px, a.py + b.py, a.pz + b.pz, a.e + b.e)
    good = ak.any((a.charge != b.charge) & (m > 60) & (m < 120), axis=1)
    return {"Q5_any": np.histogram(ak.to_numpy(good).view(np.uint8), 2, (0, 2))[0]}


ROWS = {name: (getattr(A, name.lower()), fn) for name, fn in L.QUERIES.items()}
ROWS["Q5 pairs"] = (awkward_q5_pairs, L.q5_fused)


def awkward_counts(result: dict) -> dict:
    """numpy.histogram counts of Awkward's histogrammed values (the rule lazyk follows)."""
    out = {}
    for name, r in result.items():
        if isinstance(r, np.ndarray):
            out[name] = r
            continue
        bins, lo, hi = A.BINS[name]
        out[name] = numpy_counts(r.values, bins, lo, hi)
    return out


def check(n_events: int, seed: int) -> dict:
    """{row: None (equal) or the reason it is pending}; AssertionError if counts differ."""
    ev = adl_events.generate(n_events, seed)
    aev, lev = adl_events.to_awkward(ev), L.events(adl_events.to_lazyk(ev))
    status = {}
    for row, (aw, lz) in ROWS.items():
        try:
            got = L.run(lz, lev)
        except (AttributeError, TypeError, lazyk.NotSupportedError) as err:
            status[row] = f"fails ({type(err).__name__}): {str(err).splitlines()[0][:90]}"
            continue
        want = awkward_counts(aw(aev))
        for name, counts in got.items():
            if not np.array_equal(counts, want[name]):
                raise AssertionError(f"{row}: lazyk's {name} counts differ from Awkward's "
                                     f"({int(np.abs(counts - want[name]).sum())} entries)")
        status[row] = None
    return status


def first_call(row: str, n_events: int, seed: int, cache: str) -> float:
    """Seconds of the first lazyk call of `row` in a new process with kernel cache `cache`
    (the process imports lazyk, which starts loading LLVM in the background, then builds
    its events: a program's first call comes after its data, too)."""
    env = dict(os.environ, LAZYK_CACHE_DIR=cache)
    code = ("import sys, time; sys.path.insert(0, %r)\n"
            "import adl_events, adl_lazyk as L, bench_adl as B\n"
            "ev = L.events(adl_events.to_lazyk(adl_events.generate(%d, %d)))\n"
            "t = time.perf_counter(); L.run(B.ROWS[%r][1], ev)\n"
            "print(time.perf_counter() - t)") % (str(HERE), n_events, seed, row)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=600)
    if out.returncode:
        raise RuntimeError(out.stderr.strip().splitlines()[-1])
    return float(out.stdout.strip().splitlines()[-1])


def column_bytes(ev) -> dict:
    """{column name: (bytes of its values, its collection or None, bytes of the offsets)}."""
    out = {"met_pt": (ev.met_pt.nbytes, None, 0), "met_phi": (ev.met_phi.nbytes, None, 0)}
    for prefix, c in (("Jet", ev.jets), ("Muon", ev.muons), ("Electron", ev.electrons)):
        for name, values in c.fields.items():
            out[f"{prefix}_{name}"] = (values.nbytes, prefix, c.offsets.nbytes)
    return out


def bytes_read(query, cols: dict, sizes: dict) -> int:
    """Bytes of the event columns `query` reads (each collection's offsets once): the
    columns its histograms' leaves view. (A leaf made while building, such as the
    `var * 1` view a nested cartesian takes, views its column's memory block.)"""
    memory = {id(getattr(a, "_owner", a)): name for name, a in cols.items()}
    names = set()
    for h in query(L.events(cols)).values():
        for e in (h.x, h.weights):
            for leaf in (() if e is None else e.env.values()):
                a = getattr(leaf, "array", getattr(leaf, "owner", leaf))
                name = memory.get(id(getattr(a, "_owner", a)))
                if name is not None:
                    names.add(name)
    collections = {sizes[n][1]: sizes[n][2] for n in names}
    return sum(sizes[n][0] for n in names) + sum(v for k, v in collections.items() if k)


def copy_bandwidth(nbytes: int, repeat: int) -> float:
    """GB/s of a NumPy copy (bytes read + written): the yardstick of the bandwidth column."""
    src = np.ones(nbytes // 8)
    dst = np.empty_like(src)
    times = []
    for _ in range(repeat + 1):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - t0)
    return 2 * src.nbytes / statistics.median(times[1:]) / 1e9


ROUNDS_SECONDS, MAX_ROUNDS = 0.3, 200  # (rounds of a fast query: about this long in all)


def timed(fn, ev) -> float:
    t0 = time.perf_counter()
    fn(ev)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=lambda s: int(float(s)), default=1_000_000)
    p.add_argument("--check-events", type=lambda s: int(float(s)), default=10_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--seed", type=int, default=2012)
    p.add_argument("--rows", nargs="+", default=None, help="only these rows (Q1 ... Q8, "
                                                          "'Q5 pairs')")
    p.add_argument("--no-compile", action="store_true", help="skip the compile timings")
    p.add_argument("--json", default=None, help="write the results here")
    args = p.parse_args(argv)
    rows = args.rows or list(ROWS)
    status = check(args.check_events, args.seed)
    ev = adl_events.generate(args.events, args.seed)
    cols = adl_events.to_lazyk(ev)
    aev, lev = adl_events.to_awkward(ev), L.events(cols)
    copy = copy_bandwidth(ev.nbytes, args.repeat)
    print(f"ADL benchmark: {len(ev):,} events ({ev.nbytes / 1e6:.0f} MB of columns), "
          f"{lazyk.get_num_threads()} lazyk threads, median of {args.repeat} interleaved "
          f"rounds (up to {MAX_ROUNDS} for a fast query); counts checked equal on {args.check_events:,} events; NumPy copy "
          f"bandwidth {copy:.1f} GB/s (read + write)\n")
    print("| query | Awkward (ms) | lazyk (ms) | Awkward / lazyk | lazyk cold compile (ms) "
          "| lazyk first call, warm cache (ms) | columns read (MB) | lazyk GB/s (of copy) |")
    print("|---|---|---|---|---|---|---|---|")
    sizes = column_bytes(ev)
    results = {}
    for row in rows:
        if status.get(row):
            print(f"| {row} | | | {status[row]} | | |")
            results[row] = {"pending": status[row]}
            continue
        aw, lz = ROWS[row]
        L.run(lz, lev)  # compiled
        # a fast query gets more rounds (its median of 5 single calls was noise)
        once = timed(aw, aev) + timed(lambda e: L.run(lz, e), lev)
        rounds = max(args.repeat, min(MAX_ROUNDS, int(ROUNDS_SECONDS / once)))
        ta, tl = [], []
        for r in range(rounds):
            order = ((aw, ta), (lambda e: L.run(lz, e), tl))
            for fn, times in (order if r % 2 == 0 else order[::-1]):
                times.append(timed(fn, aev if times is ta else lev))
        a, lz_t = statistics.median(ta), statistics.median(tl)
        cold = warm = float("nan")
        if not args.no_compile:
            with tempfile.TemporaryDirectory() as cache:
                cold = first_call(row, 1000, args.seed, cache)
                warm = first_call(row, 1000, args.seed, cache)
        read = bytes_read(lz, cols, sizes)
        gbs = read / lz_t / 1e9
        results[row] = {"awkward_ms": a * 1e3, "lazyk_ms": lz_t * 1e3, "ratio": a / lz_t,
                        "cold_compile_ms": cold * 1e3, "warm_cache_ms": warm * 1e3,
                        "bytes_read": read, "lazyk_gb_s": gbs, "of_copy": gbs / copy,
                        "rounds": rounds}
        print(f"| {row} | {a * 1e3:.1f} | {lz_t * 1e3:.1f} | {a / lz_t:.1f}x | "
              f"{cold * 1e3:.0f} | {warm * 1e3:.0f} | {read / 1e6:.1f} | "
              f"{gbs:.1f} ({gbs / copy:.0%}) |")
    if args.json:
        Path(args.json).write_text(json.dumps({"events": len(ev), "repeat": args.repeat,
                                               "threads": lazyk.get_num_threads(),
                                               "copy_gb_s": copy,
                                               "rows": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`lazyk bench`: time the E1-E10 suite with lazyk, NumPy, numexpr and Numba in one run, then
the call-overhead rows (`lazyk.bench.overhead`; alone with `--overhead`).

Every row is the median of several timed batches after a warm-up call, on the same data for every
tool; GB/s counts the bytes each call must move through memory, compared with a STREAM-style
copy/triad/read measured in the same run by the fastest tool available. Results go to
`--out` as JSON and Markdown (and a PNG chart when matplotlib is installed).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

import lazyk
from lazyk.bench import dask_suite
from lazyk.bench.measure import (
    BANDWIDTH_N,
    bandwidth,
    calibrate,
    call_overhead,
    count_arg,
    cpu_name,
    has,
    lazyk_ready,
    llc_mb,
    one_off_costs,
    time_batch,
    versions,
)
from lazyk.bench.overhead import markdown as overhead_markdown
from lazyk.bench.overhead import overhead_rows
from lazyk.bench.report import PEERS, chart, chart_series, fmt_time, markdown, short
from lazyk.errors import DeviceError

SIZES = (1_000, 100_000, 1_000_000, 10_000_000)
QUICK_SIZES = (1_000, 100_000, 1_000_000)
# Idle time before each row of the round robin. OpenMP's workers (Numba's threading layer here)
# spin 10-20 ms after a parallel region (measured: lazyk 2 threads at n = 1e5 ran 3x slower
# 10 ms after a Numba call, not after 20 ms); lazyk's pool spins ~0.25 ms.
SETTLE_S = {"after_openmp": 0.05, "other": 0.003}
QUICK_SETTLE_S = {"after_openmp": 0.03, "other": 0.002}


# --- the suite and the tools -----------------------------------------------------------------

def load_suite(path: str | None = None):
    """Import benchmarks/bench_expr.py (next to the lazyk package in a source checkout)."""
    candidates = [Path(path)] if path else [Path(__file__).resolve().parents[2] / "benchmarks" / "bench_expr.py",
                                            Path.cwd() / "benchmarks" / "bench_expr.py"]
    for p in candidates:
        if p.is_file():
            spec = importlib.util.spec_from_file_location("lazyk_bench_expr", p)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = mod  # dataclasses look their module up by name
            spec.loader.exec_module(mod)
            return mod
    raise FileNotFoundError("benchmarks/bench_expr.py not found; run from a lazyk source checkout "
                            "or pass --suite PATH")


class Tool:
    """One row kind: a tool, its thread count, its output mode and, for lazyk, the spelling
    timed: `compiled` (`lazyk.compile(...)(a, b)`), `evaluate` (`lazyk.evaluate("a + b")`,
    numexpr's spelling) or `eval` (the expression built from lazyk arrays, then `.eval()`)."""

    def __init__(self, name: str, family: str, threads: int, mode: str,
                 spelling: str = "compiled") -> None:
        self.name, self.family, self.threads, self.mode = name, family, threads, mode
        self.spelling = spelling

    def set_threads(self) -> None:
        """Apply this row's thread count to its library."""
        if self.family == "numexpr":
            import numexpr

            numexpr.set_num_threads(self.threads)
        elif self.family == "numba" and self.threads > 1:
            import numba

            numba.set_num_threads(self.threads)
        elif self.family == "lazyk":
            lazyk.set_num_threads(self.threads)


def make_tools(ncores: int) -> tuple[list[Tool], list[str]]:
    """The rows to run, and notes for the peers that are missing."""
    tools, notes = [Tool("numpy", "numpy", 1, "fresh")], []
    if has("numexpr"):
        tools += [Tool("numexpr 1t", "numexpr", 1, "fresh"), Tool(f"numexpr {ncores}t", "numexpr", ncores, "fresh"),
                  Tool(f"numexpr {ncores}t out=", "numexpr", ncores, "out")]
    else:
        notes.append("numexpr not installed: its rows are skipped")
    if has("numba"):
        tools += [Tool("numba", "numba", 1, "fresh"), Tool("numba par", "numba", ncores, "fresh"),
                  Tool("numba par out=", "numba", ncores, "out")]
    else:
        notes.append("numba not installed: its rows are skipped")
    why = lazyk_ready()
    if why is None:
        tools += [Tool("lazyk 1t", "lazyk", 1, "fresh"), Tool("lazyk 1t out=", "lazyk", 1, "out"),
                  Tool(f"lazyk {ncores}t", "lazyk", ncores, "fresh"),
                  Tool(f"lazyk {ncores}t out=", "lazyk", ncores, "out"),
                  # The other spellings, so their cost over a compiled call is visible.
                  Tool(f"lazyk evaluate {ncores}t", "lazyk", ncores, "fresh", "evaluate"),
                  Tool(f"lazyk evaluate {ncores}t out=", "lazyk", ncores, "out", "evaluate"),
                  Tool(f"lazyk .eval() {ncores}t", "lazyk", ncores, "fresh", "eval")]
    else:
        notes.append(why + ": lazyk rows are skipped")
    return tools, notes



def _callable(suite, case, tool: Tool, data: dict, compiled: dict) -> Callable[[], Any] | None:
    """A zero-argument call running `case` with `tool` (None where the mode does not apply)."""
    args = [data[k] for k in case.names]
    out = suite.out_for(case, data) if tool.mode == "out" else None
    if tool.mode == "out" and out is None:
        return None  # reductions have no output array
    if tool.family == "numpy":
        return lambda: case.numpy(*args)
    if tool.family == "numexpr":
        return suite.numexpr_fn(case, data, out)
    if tool.family == "numba":
        key = ("numba", case.id, tool.threads > 1, out is None)
        if key not in compiled:
            f = suite.numba_fn(case, parallel=tool.threads > 1, fresh=out is None)
            t0 = time.perf_counter()
            f(*args) if out is None else f(*args, out)
            compiled[key] = f
            compiled[("compile_s",) + key] = time.perf_counter() - t0
        f = compiled[key]
        return (lambda: f(*args)) if out is None else (lambda: f(*args, out))
    if tool.family == "lazyk" and tool.spelling == "evaluate":
        return suite.lazyk_evaluate_fn(case, data, out)
    if tool.family == "lazyk" and tool.spelling == "eval":
        return None if out is not None else suite.lazyk_eval_fn(case, data)
    if tool.family == "lazyk":
        key = ("lazyk", case.id)
        if key not in compiled:
            compiled[key] = suite.lazyk_compiled(case, data)
        f = compiled[key]
        return (lambda: f(*args)) if out is None else (lambda: f(*args, out=out))
    raise ValueError(tool.family)


def _check(value: Any, ref: np.ndarray, out: np.ndarray | None) -> bool:
    """Does a tool's result equal NumPy's (to rounding)?"""
    got = np.asarray(value if value is not None else out)
    return got.shape == np.shape(ref) and bool(np.allclose(got, ref, rtol=1e-9, atol=0))




# --- the run --------------------------------------------------------------------------------------

def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the suite as `args` says; returns everything that is written out."""
    suite_path = str(Path(args.suite).resolve()) if args.suite else None
    suite = load_suite(suite_path)
    suite_path = suite_path or suite.__file__
    sizes = tuple(args.sizes) if args.sizes else (QUICK_SIZES if args.quick else SIZES)
    # Medians of 5 (quick) or 9 batches: one batch slowed by another process on a shared
    # machine moves no ratio and stretches no axis of the chart.
    samples = 5 if args.quick else 9
    target = 0.003 if args.quick else 0.01
    ncores = os.cpu_count() or 1
    tools, notes = make_tools(ncores)
    if args.tools:
        tools = [t for t in tools if t.family in args.tools]
    unknown = sorted(set(args.cases or ()) - {c.id for c in suite.CASES})
    if unknown:
        print(f"lazyk bench: error: argument --cases: unknown {', '.join(unknown)} (choose "
              f"from {', '.join(c.id for c in suite.CASES)})", file=sys.stderr)
        raise SystemExit(2)
    cases = [c for c in suite.CASES if not args.cases or c.id in args.cases]
    for note in notes:
        print(f"note: {note}", flush=True)
    meta = {"machine": platform.machine(), "processor": cpu_name(), "cores": ncores,
            "llc_mb": llc_mb(),
            "python": platform.python_version(), "numpy": np.__version__,
            "versions": versions(), "sizes": list(sizes), "quick": bool(args.quick),
            "samples": samples, "notes": notes, "bandwidth_n": args.bandwidth_n, "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    print(f"reference bandwidth (n = {args.bandwidth_n:.0e}):", flush=True)
    bw = bandwidth({t.family for t in tools}, samples, target, args.bandwidth_n)
    rows: list[dict[str, Any]] = []
    compiled: dict = {}
    total = len(sizes) * len(cases) * len(tools)
    k = 0
    for n in sizes:
        data = suite.make_data(n)
        for case in cases:
            ref = case.numpy(*[data[key] for key in case.names])
            ready = []
            for tool in tools:  # build, warm up and check every tool first
                row = {"n": n, "case": case.id, "expr": case.text, "tool": tool.name, "family": tool.family,
                       "threads": tool.threads, "mode": tool.mode, "spelling": tool.spelling}
                try:
                    tool.set_threads()
                    fn = _callable(suite, case, tool, data, compiled)
                    if fn is None:
                        continue
                    row["correct"] = _check(fn(), ref, _out_of(fn))
                    ready.append((row, tool, fn, calibrate(fn, target)))
                except Exception as err:
                    row["error"] = f"{type(err).__name__}: {err}"[:200]
                rows.append(row)
            # Round robin: sample s of every tool before sample s + 1 of any, so drifting load
            # on a shared machine hits every row alike and the ratios stay fair.
            times: dict[int, list[float]] = {id(r): [] for r, _, _, _ in ready}
            settle = QUICK_SETTLE_S if args.quick else SETTLE_S
            prev = None
            for sample in range(samples):
                # Rotate the order each sample: no tool always runs right after another's
                # spinning workers (OpenMP's spin 10-20 ms; they slowed the next tool 2x).
                turn = sample % max(len(ready), 1)
                for row, tool, fn, reps in ready[turn:] + ready[:turn]:
                    try:
                        tool.set_threads()
                        # Let the previous tool's spinning workers go to sleep first, or they
                        # steal this tool's cores on a 2-core machine.
                        openmp = prev is not None and prev.family == "numba" and prev.threads > 1
                        time.sleep(settle["after_openmp" if openmp else "other"])
                        prev = tool
                        # Warm up for a quarter batch, not one call: after the settle sleep
                        # this VM's idle vCPU takes ~5 calls of 1e6 elements (a few ms) to
                        # reach full speed again (first calls 2-3x slower), for every tool.
                        time_batch(fn, max(1, reps // 4))
                        times[id(row)].append(time_batch(fn, reps))
                    except Exception as err:
                        row["error"] = f"{type(err).__name__}: {err}"[:200]
            for row in rows[len(rows) - len(tools):]:
                if row["n"] != n or row["case"] != case.id:
                    continue
                k += 1
                if times.get(id(row)) and "error" not in row:
                    row["seconds"] = statistics.median(times[id(row)])
                _progress(k, total, row, case)
        del data
    # The machine's limit is the best it showed: measure again at the end (load drifts).
    print(f"reference bandwidth again (n = {args.bandwidth_n:.0e}):", flush=True)
    for kind, v in bandwidth({t.family for t in tools}, samples, target, args.bandwidth_n).items():
        if v["gbps"] > bw[kind]["gbps"]:
            bw[kind] = v
    _annotate(rows, cases, bw, meta["llc_mb"])
    numba_compile = {f"{k[2]}{' par' if k[3] else ''}{'' if k[4] else ' out'}": v * 1e3
                     for k, v in compiled.items() if k[0] == "compile_s"}
    print("one-off costs:", flush=True)
    once = one_off_costs(suite_path, any(t.family == "lazyk" for t in tools))
    once["numba_compile_ms"] = numba_compile
    once["call_overhead_us"] = call_overhead(samples)
    for key, value in once.items():
        print(f"  {key}: {short(value)}", flush=True)
    return {"meta": meta, "bandwidth": bw, "rows": rows, "once": once,
            "overhead": _overhead({t.family for t in tools}, samples, target)}


def _overhead(families: set, samples: int, target: float) -> list[dict]:
    """The call-overhead rows (`lazyk.bench.overhead`), printed as they are measured."""
    print("call overhead:", flush=True)
    rows = overhead_rows(families, samples, target)
    for r in rows:
        cell = f"{r['seconds'] * 1e6:9.1f} us (cpu {r['cpu_seconds'] * 1e6:.1f} us)" \
            if "seconds" in r else "error: " + r["error"]
        goal = f"  [{r['goal']}: {r['goal_met']}]" if "goal" in r else ""
        print(f"  {r['case']} n={r['n']:<9,d} {r['tool']:30s} {cell}{goal}", flush=True)
    return rows


def run_overhead(args: argparse.Namespace) -> dict[str, Any]:
    """`lazyk bench --overhead`: the call-overhead rows alone."""
    families = set(args.tools or ("numpy", "numexpr", "numba", "lazyk"))
    if lazyk_ready() is not None:
        families.discard("lazyk")
    samples, target = (3, 0.003) if args.quick else (7, 0.01)
    meta = {"processor": cpu_name(), "cores": os.cpu_count() or 1,
            "python": platform.python_version(), "numpy": np.__version__,
            "versions": versions(), "samples": samples,
            "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    return {"meta": meta, "overhead": _overhead(families, samples, target)}


def _out_of(fn: Callable[[], Any]) -> np.ndarray | None:
    """The `out` array a lambda closes over, if any (to check out= rows)."""
    names = fn.__code__.co_freevars
    if "out" in names:
        return fn.__closure__[names.index("out")].cell_contents
    return None


def _progress(k: int, total: int, row: dict, case) -> None:
    if "seconds" in row:
        gbps = case.traffic(row["n"]) / row["seconds"] / 1e9
        mark = "" if row.get("correct", True) else "  WRONG RESULT"
        msg = f"{fmt_time(row['seconds']):>10s} {gbps:6.1f} GB/s{mark}"
    else:
        msg = "error: " + row.get("error", "?")
    print(f"[{k:4d}/{total}] n={row['n']:<9,d} {row['case']:4s} {row['tool']:18s} {msg}", flush=True)


def _annotate(rows: list[dict], cases, bw: dict, llc_mb: float | None = None) -> None:
    """Add GB/s, fraction of the machine limit, ratios to NumPy and to the best peer, and
    whether the bytes a call moves fit in the last-level cache (`llc_mb`; None: unknown)."""
    traffic = {c.id: c.traffic for c in cases}
    reduce = {c.id: c.reduce for c in cases}
    by = {}
    for r in rows:
        by.setdefault((r["n"], r["case"]), []).append(r)
    for (n, cid), group in by.items():
        ok = [r for r in group if "seconds" in r and r.get("correct", True)]
        numpy_t = next((r["seconds"] for r in ok if r["family"] == "numpy"), None)
        peers = [r for r in ok if r["family"] in PEERS]
        for r in group:
            if "seconds" not in r:
                continue
            limit = bw["read" if reduce[cid] else "triad"]["gbps"]
            r["gbps"] = traffic[cid](n) / r["seconds"] / 1e9
            r["frac_limit"] = r["gbps"] / limit
            r["in_cache"] = llc_mb is not None and traffic[cid](n) <= llc_mb * 1e6
            r["vs_numpy"] = numpy_t / r["seconds"] if numpy_t else None
            # Fresh rows compare with fresh peers; out= rows with every peer row.
            pool = [p for p in peers if r["mode"] == "out" or p["mode"] == "fresh"]
            best = min(pool, key=lambda p: p["seconds"]) if pool else None
            r["best_peer"] = best["tool"] if best else None
            r["vs_best_peer"] = best["seconds"] / r["seconds"] if best else None



def add_arguments(p: argparse.ArgumentParser) -> None:
    """The `lazyk bench` options."""
    p.add_argument("--quick", action="store_true", help="sizes 1e3-1e6, fewer samples (about a minute)")
    p.add_argument("--sizes", type=count_arg, nargs="+", metavar="N", help="element counts")
    p.add_argument("--cases", nargs="+", metavar="E", help="only these cases (E1 ... E10)")
    p.add_argument("--out", default="bench-results", help="directory for JSON, Markdown and PNG")
    p.add_argument("--suite", default=None, help="path to bench_expr.py")
    p.add_argument("--tools", nargs="+", metavar="T", choices=("numpy", "numexpr", "numba", "lazyk"),
                   help="only these tools (default: every one installed)")
    p.add_argument("--bandwidth-n", type=count_arg, default=BANDWIDTH_N,
                   help="elements for the copy/triad/read reference (default 1e7: main memory)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cuda: E1-E10 on the GPU against CuPy (benchmarks/bench_cuda.py)")
    p.add_argument("--overhead", action="store_true",
                   help="only the call-overhead rows (the lazy API, compiled and ragged calls at "
                        "sizes where the call is the cost, against NumPy, numexpr and Numba)")
    p.add_argument("--dask", action="store_true",
                   help="E2, E6, E10 on a local 2-process Dask cluster: lazyk.dask.evaluate vs plain "
                        "dask.array, map_blocks(numexpr.evaluate) and map_blocks(compiled kernel)")
    p.add_argument("--dask-n", type=count_arg, default=200_000_000,
                   help="elements per array for --dask (default 2e8: 1.6 GB per float64 array)")
    p.add_argument("--dask-chunk", type=count_arg, default=10_000_000,
                   help="elements per chunk for --dask (default 1e7)")
    p.add_argument("--dask-samples", type=int, default=5, help="timed runs per row for --dask")


def command(args: argparse.Namespace) -> int:
    """Run, then write results.json, results.md and results.png under --out."""
    if getattr(args, "device", "cpu") == "cuda":
        return _command_cuda(args)
    if getattr(args, "dask", False):
        return dask_suite.command(args)
    t0 = time.perf_counter()
    if getattr(args, "overhead", False):
        res = run_overhead(args)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "overhead.json").write_text(json.dumps(res, indent=1, default=str))
        (out / "overhead.md").write_text("\n".join(overhead_markdown(res["overhead"])))
        print(f"wrote {out / 'overhead.json'}, {out / 'overhead.md'} in "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
        return 0
    res = run(args)
    res["meta"]["wall_seconds"] = time.perf_counter() - t0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    res["chart"] = chart_series(res)  # what the chart shows; every row is in res["rows"]
    (out / "results.json").write_text(json.dumps(res, indent=1, default=str))
    (out / "results.md").write_text(markdown(res))
    drew = chart(res, out / "results.png")
    print(f"wrote {out / 'results.json'}, {out / 'results.md'}" + (f", {out / 'results.png'}" if drew else
          " (no chart: matplotlib missing)") + f" in {res['meta']['wall_seconds']:.0f} s", flush=True)
    return 0


def _command_cuda(args: argparse.Namespace) -> int:
    """`--device cuda`: benchmarks/bench_cuda.py's rows, as Markdown and JSON under --out."""
    suite = Path(args.suite) if args.suite else Path(__file__).resolve().parents[2] / "benchmarks" / "bench_expr.py"
    spec = importlib.util.spec_from_file_location("lazyk_bench_cuda", suite.with_name("bench_cuda.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    try:
        rows = mod.run(args.sizes, args.quick)
    except DeviceError as err:
        print(f"lazyk bench --device cuda: {err}", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results-cuda.json").write_text(json.dumps(rows, indent=1, default=str))
    (out / "results-cuda.md").write_text(mod.markdown(rows))
    print(mod.markdown(rows))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point for `python -m lazyk.bench` and benchmarks/bench_expr.py."""
    p = argparse.ArgumentParser(prog="lazyk bench", description=__doc__)
    add_arguments(p)
    return command(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

"""`lazyk bench`'s call-overhead rows: what one call of the lazy API costs next to a compiled
call, NumPy, numexpr and Numba, at sizes where the call, not the kernel, is the cost.

Cases (each row is one tool on one case; every tool's result is checked against NumPy's):
- O1 `2*a + 3*b`, n = 1e3, the expression built anew over new lazyk arrays on every call
  (`(2 * lazyk.array(a) + 3 * lazyk.array(b)).eval()`), next to `lazyk.evaluate` of the
  string, a compiled call and the peers;
- O2 the same expression built once, `.eval()` called again;
- O3 `(x*2 + y).sum(axis=-1)` over 100 rows of `N * var * float64`: a compiled call;
- O4 the same built anew from the lazyk arrays and `.eval()`-ed on every call;
- O5 O1 at n = 1e6, where the kernel is the cost.
Each row is the median of several batches, sampled round robin over the case's tools (load
that drifts hits every tool alike); `cpu` is the process CPU time per call (threads included),
the steadier figure on a loaded machine. The goals (`GOALS`) are checked in the report.
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import numpy as np

import lazyk
from lazyk.bench.measure import has

ROWS = 100  # rows of the ragged cases
# case -> (the lazyk row it speaks of, the goal as text, a check of (row, case rows))
GOALS: dict[str, tuple[str, str, Callable[[dict, dict], bool]]] = {
    "O1": ("lazyk .eval() new leaves", "at most numexpr's evaluate and 1.5x lazyk.evaluate",
           lambda r, g: r["seconds"] <= g["numexpr evaluate"]["seconds"] and
           r["seconds"] <= 1.5 * g["lazyk evaluate"]["seconds"]),
    "O2": ("lazyk .eval() same object", "at most 3 us", lambda r, g: r["seconds"] <= 3e-6),
    "O3": ("lazyk compiled", "at most 10 us", lambda r, g: r["seconds"] <= 10e-6),
    "O4": ("lazyk .eval() new expression", "at most 20 us", lambda r, g: r["seconds"] <= 20e-6),
    "O5": ("lazyk .eval() new leaves", "within 10% of the compiled call",
           lambda r, g: r["seconds"] <= 1.1 * g["lazyk compiled"]["seconds"]),
}

# NumPy's time on O1 where the goals above were set (the same machine class, quieter)
GOALS_NUMPY_O1 = 2.1e-6


def _dense(n: int, families: set) -> tuple[dict[str, Callable[[], Any]], np.ndarray, dict]:
    """Tools for `2*a + 3*b` at n: (tool -> call, NumPy's result, the expression kept for O2)."""
    rng = np.random.default_rng(0)
    a, b = rng.random(n), rng.random(n)
    fns: dict[str, Callable[[], Any]] = {"numpy": lambda: 2 * a + 3 * b}
    if "numexpr" in families and has("numexpr"):
        import numexpr as ne

        local = {"a": a, "b": b}
        fns["numexpr evaluate"] = lambda: ne.evaluate("2*a + 3*b", local_dict=local)
    if "numba" in families and has("numba"):
        import numba

        @numba.njit
        def nb(a, b):
            return 2 * a + 3 * b
        fns["numba"] = lambda: nb(a, b)
    kept = {}
    if "lazyk" in families:
        pa, pb = lazyk.placeholder("a", "N * float64"), lazyk.placeholder("b", "N * float64")
        k = lazyk.compile(2 * pa + 3 * pb)
        local = {"a": a, "b": b}
        fns["lazyk compiled"] = lambda: k(a, b)
        fns["lazyk evaluate"] = lambda: lazyk.evaluate("2*a + 3*b", local_dict=local)
        fns["lazyk .eval() new leaves"] = \
            lambda: (2 * lazyk.array(a) + 3 * lazyk.array(b)).eval()
        e = 2 * lazyk.array(a) + 3 * lazyk.array(b)
        kept["lazyk .eval() same object"] = e.eval
    return fns, 2 * a + 3 * b, kept


def _ragged(families: set) -> tuple[dict, dict, np.ndarray]:
    """Tools for `(x*2 + y).sum(axis=-1)` over ROWS rows: (O3's, O4's, NumPy's result)."""
    rng = np.random.default_rng(0)
    offsets = np.concatenate([[0], np.cumsum(rng.integers(0, 10, ROWS))])
    cx, cy = rng.random(offsets[-1]), rng.random(offsets[-1])
    starts = offsets[:-1]

    def numpy_rows():  # reduceat gives a row's first element for an empty row: zero those
        got = np.add.reduceat(2 * cx + cy, np.minimum(starts, len(cx) - 1)) if len(cx) else \
            np.zeros(ROWS)
        got[starts == offsets[1:]] = 0.0
        return got
    peers: dict[str, Callable[[], Any]] = {"numpy": numpy_rows}
    if "numexpr" in families and has("numexpr"):
        import numexpr as ne

        local = {"x": cx, "y": cy}

        def numexpr_rows():
            got = np.add.reduceat(ne.evaluate("x*2 + y", local_dict=local),
                                  np.minimum(starts, len(cx) - 1))
            got[starts == offsets[1:]] = 0.0
            return got
        peers["numexpr evaluate + reduceat"] = numexpr_rows
    if "numba" in families and has("numba"):
        import numba

        @numba.njit
        def nb(offsets, x, y):
            out = np.zeros(len(offsets) - 1)
            for i in range(len(offsets) - 1):
                s = 0.0
                for j in range(offsets[i], offsets[i + 1]):
                    s += x[j] * 2 + y[j]
                out[i] = s
            return out
        peers["numba"] = lambda: nb(offsets, cx, cy)
    o3, o4 = dict(peers), dict(peers)
    if "lazyk" in families:
        x, y = lazyk.from_offsets(offsets, cx), lazyk.from_offsets(offsets, cy)
        px = lazyk.placeholder("x", "N * var * float64")
        py = lazyk.placeholder("y", "N * var * float64")
        k = lazyk.compile((px * 2 + py).sum(axis=-1))
        o3["lazyk compiled"] = lambda: k(x, y)
        o4["lazyk .eval() new expression"] = lambda: (x * 2 + y).sum(axis=-1).eval()
    return o3, o4, numpy_rows()


def _time(fns: dict[str, Callable[[], Any]], samples: int, target_s: float) -> dict:
    """tool -> (median wall seconds, median CPU seconds) per call, sampled round robin."""
    reps = {}
    for name, fn in fns.items():
        fn()
        t0 = time.perf_counter()
        fn()
        reps[name] = max(1, min(100_000, int(target_s / max(time.perf_counter() - t0, 1e-7))))
    wall: dict[str, list] = {name: [] for name in fns}
    cpu: dict[str, list] = {name: [] for name in fns}
    names = list(fns)
    for s in range(samples):
        for name in names[s % len(names):] + names[:s % len(names)]:
            fn, n = fns[name], reps[name]
            fn()
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(n):
                fn()
            wall[name].append((time.perf_counter() - t0) / n)
            cpu[name].append((time.process_time() - c0) / n)
    return {name: (statistics.median(wall[name]), statistics.median(cpu[name]))
            for name in fns}


def _rows(case: str, what: str, n: int, fns: dict, ref: np.ndarray, samples: int,
          target_s: float) -> list[dict]:
    rows = []
    ok = {}
    for name, fn in fns.items():
        try:
            got = fn()
            got = got.to_numpy() if hasattr(got, "to_numpy") else np.asarray(got)
            ok[name] = got.shape == ref.shape and bool(np.allclose(got, ref, rtol=1e-9))
        except Exception as err:  # a tool that fails is reported, never left out silently
            rows.append({"case": case, "what": what, "n": n, "tool": name,
                         "error": f"{type(err).__name__}: {err}"[:200]})
    times = _time({k: v for k, v in fns.items() if k in ok}, samples, target_s)
    for name, (wall, cpu) in times.items():
        rows.append({"case": case, "what": what, "n": n, "tool": name, "seconds": wall,
                     "cpu_seconds": cpu, "correct": ok[name]})
    return rows


def overhead_rows(families: set, samples: int, target_s: float) -> list[dict]:
    """Every call-overhead row (see the module doc), with ratios to NumPy, numexpr and Numba
    (`vs_*`: the peer's time / the row's: above 1 the row is faster) and each case's goal."""
    rows = []
    fns, ref, kept = _dense(1000, families)
    rows += _rows("O1", "2*a + 3*b, new lazyk arrays each call", 1000, fns, ref, samples,
                  target_s)
    rows += _rows("O2", "2*a + 3*b built once, .eval() again", 1000, {**fns, **kept}, ref,
                  samples, target_s)
    o3, o4, ref = _ragged(families)
    rows += _rows("O3", f"(x*2 + y).sum(axis=-1), {ROWS} rows of N * var * float64", ROWS,
                  o3, ref, samples, target_s)
    rows += _rows("O4", f"(x*2 + y).sum(axis=-1) built each call, {ROWS} rows", ROWS, o4,
                  ref, samples, target_s)
    fns, ref, _ = _dense(1_000_000, families)
    rows += _rows("O5", "2*a + 3*b, new lazyk arrays each call", 1_000_000, fns, ref,
                  samples, target_s)
    _annotate(rows)
    return rows


def _annotate(rows: list[dict]) -> None:
    by: dict[str, dict] = {}
    for r in rows:
        if "seconds" in r and r["correct"]:
            by.setdefault(r["case"], {})[r["tool"]] = r
    for case, group in by.items():
        peers = {"numpy": group.get("numpy"),
                 "numexpr": next((r for t, r in group.items() if t.startswith("numexpr")),
                                 None),
                 "numba": group.get("numba")}
        for r in group.values():
            for key, peer in peers.items():
                r[f"vs_{key}"] = peer["seconds"] / r["seconds"] if peer else None
        goal = GOALS.get(case)
        if goal and goal[0] in group:
            r = group[goal[0]]
            r["goal"] = goal[1]
            try:
                r["goal_met"] = bool(goal[2](r, group))
            except KeyError:  # a peer the goal names is not installed
                r["goal_met"] = None


def markdown(rows: list[dict]) -> list[str]:
    """Markdown lines: one table of every call-overhead row."""
    if not rows:
        return []
    lines = ["## Call overhead", "",
             "Per call, median of batches sampled round robin over each case's tools; `cpu` "
             "is the process CPU time per call (threads included); `x np`, `x ne`, `x nb` = "
             "NumPy / numexpr / Numba time over the row's (above 1: the row is faster).", "",
             "| case | n | tool | time | cpu | x np | x ne | x nb | goal |",
             "|---|---:|---|---:|---:|---:|---:|---:|---|"]
    seen = set()
    for r in rows:
        if r["case"] not in seen:
            seen.add(r["case"])
            lines.append(f"| **{r['case']}** | | {r['what']} | | | | | | |")
        if "seconds" not in r:
            lines.append(f"| {r['case']} | {r['n']:.0e} | {r['tool']} | error: "
                         f"{r.get('error', '')[:60]} | | | | | |")
            continue
        wrong = "" if r["correct"] else " (WRONG)"
        goal = ""
        if "goal" in r:
            met = {True: "met", False: "missed", None: "n/a"}[r["goal_met"]]
            goal = f"{r['goal']}: {met}"
        lines.append(f"| {r['case']} | {r['n']:.0e} | {r['tool']}{wrong} | "
                     f"{_us(r['seconds'])} | {_us(r['cpu_seconds'])} | {_x(r.get('vs_numpy'))} | "
                     f"{_x(r.get('vs_numexpr'))} | {_x(r.get('vs_numba'))} | {goal} |")
    numpy = next((r for r in rows if r["case"] == "O1" and r["tool"] == "numpy"
                  and "seconds" in r), None)
    if numpy is not None:  # the goals are absolute: the machine's speed is part of them
        lines += ["", f"The goals in microseconds were set on a machine where NumPy's O1 took "
                      f"{_us(GOALS_NUMPY_O1)}; in this run it took {_us(numpy['seconds'])}."]
    return lines + [""]


def _us(s: float) -> str:
    return f"{s * 1e6:.1f} us" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def _x(v: float | None) -> str:
    return "" if v is None else f"{v:.2f}"

"""`lazyk bench` output: the Markdown report (bandwidth, a table per size, the summary, the
spellings, one-off costs) and the chart, from the results `lazyk.bench.suite.run` returns.
"""
from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from lazyk.bench.measure import BANDWIDTH_N
from lazyk.bench.overhead import markdown as overhead_markdown

PEERS = ("numpy", "numexpr", "numba")


def fmt_time(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.2f} us"
    if s < 1:
        return f"{s * 1e3:.3f} ms"
    return f"{s:.3f} s"


def short(v: Any) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k}={short(x)}" for k, x in v.items())
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def markdown(res: dict[str, Any]) -> str:
    """The whole result as Markdown: bandwidth, a table per size, one-off costs."""
    m, bw = res["meta"], res["bandwidth"]
    lines = [f"# lazyk bench ({m['date']})", "",
             f"{m['processor']}, {m['cores']} cores; Python {m['python']}, NumPy {m['numpy']}, "
             + ", ".join(f"{k} {v}" for k, v in m["versions"].items())
             + f". Median of {m['samples']} batches after a warm-up.", ""]
    for note in m["notes"]:
        lines.append(f"- note: {note}")
    lines += ["", "The cases (benchmarks/bench_expr.py; float64 arrays of n elements):", "",
              "| case | expression |", "|---|---|"]
    lines += [f"| {cid} | `{text}` |" for cid, text in _expressions(res).items()]
    lines += ["", f"Reference bandwidth, n = {m.get('bandwidth_n', BANDWIDTH_N):.0e} (bytes read + written, "
              "STREAM convention):", "",
              "| kernel | GB/s | tool |", "|---|---:|---|"]
    for kind, v in bw.items():
        lines.append(f"| {kind} | {v['gbps']:.1f} | {v['tool']} |")
    lines += ["", "`read` sums one array of 2n elements, the bytes E10 reads (a one-array read of n "
              "elements partly hits a last-level cache as large as this machine's"
              + (f", {m['llc_mb']:.0f} MB" if m.get("llc_mb") else "") + "); `read2` reads two arrays "
              "in one pass, as E10 does (for information; the goal uses `read`).",
              "", "GB/s counts the bytes each call must move (whole cache lines for E9); `% lim` is the "
              "fraction of the triad bandwidth (read bandwidth for E10); `x np` = NumPy time / row time; "
              "`x peer` = best peer time / row time (fresh rows against fresh peers, out= rows against all).",
              "", f"`(in cache)`: the bytes one call moves fit in the last-level cache ({_llc(m)}), so "
              "the call runs from cache, not main memory, and its `% lim` (a fraction of main-memory "
              "bandwidth) can pass 100%: a measure of compute and call overhead, not of bandwidth.", ""]
    lines += summary(res)
    lines += spellings(res)
    for n in m["sizes"]:
        lines += [f"## n = {n:,d}", "", "| case | tool | time | GB/s | % lim | x np | x peer | best peer |",
                  "|---|---|---:|---:|---:|---:|---:|---|"]
        for r in res["rows"]:
            if r["n"] != n:
                continue
            if "seconds" not in r:
                lines.append(f"| {_case(r)} | {r['tool']} | error: {r.get('error', '')[:60]} | | | | | |")
                continue
            wrong = "" if r.get("correct", True) else " (WRONG)"
            lines.append(f"| {_case(r)} | {r['tool']}{wrong} | {fmt_time(r['seconds'])} | {r['gbps']:.1f} | "
                         f"{_limit(r)} | {_ratio(r['vs_numpy'])} | {_ratio(r['vs_best_peer'])} | "
                         f"{r['best_peer'] or ''} |")
        lines.append("")
    once = res["once"]
    lines += ["## One-off costs", ""]
    lines.append(f"- `import lazyk`: {_num(once.get('import_ms'))} ms (median of 3 new processes)")
    for key, label in (("cold_compile_ms", "cold compile + first call, per kernel (ms)"),
                       ("disk_cache_load_ms", "same in a new process, from the disk cache (ms)"),
                       ("numba_compile_ms", "Numba compile + first call, per kernel (ms)")):
        v = once.get(key)
        if v:
            vals = [x for x in v.values() if x is not None]
            med = statistics.median(vals) if vals else math.nan
            lines.append(f"- {label}: median {med:.1f}; " + ", ".join(f"{k} {_num(x)}" for k, x in v.items()))
    lines.append("- call overhead at n = 1 (us): " + ", ".join(
        f"{k} {v:.2f}" for k, v in once.get("call_overhead_us", {}).items()))
    lines += [""] + overhead_markdown(res.get("overhead", []))
    return "\n".join(lines) + "\n"


def _expressions(res: dict[str, Any]) -> dict[str, str]:
    """Case id -> its expression text, in the order the rows ran."""
    return {r["case"]: r.get("expr", "") for r in res["rows"]}


def _case(r: dict) -> str:
    """A table's case cell: `E7 where(a > b, a - b, b - a)`."""
    return f"{r['case']} `{r['expr']}`" if r.get("expr") else r["case"]


def _limit(r: dict | None) -> str:
    """A `% lim` cell, marked where the call's data fit in the last-level cache."""
    if not r:
        return ""
    return f"{100 * r['frac_limit']:.0f}%" + (" (in cache)" if r.get("in_cache") else "")


def _llc(meta: dict) -> str:
    return f"{meta['llc_mb']:.0f} MB on this machine" if meta.get("llc_mb") else \
        "its size is unknown here, so no row is marked"


def _best(rows: list[dict]) -> dict | None:
    return min(rows, key=lambda r: r["seconds"]) if rows else None


def _cell(r: dict | None) -> str:
    return f"{r['tool']} {fmt_time(r['seconds'])}" if r else ""


def summary(res: dict[str, Any]) -> list[str]:
    """Markdown lines: per size and case, NumPy, the best peer and lazyk's best rows."""
    lines = ["## Summary", "", "Per case: NumPy; the fastest peer row with a fresh output and the fastest "
             "peer row of any kind; lazyk's fastest fresh-output row and fastest `out=` row, each with its "
             "ratio to the best peer (`x peer`), and `% lim` of the out= row.", "",
             "| n | case | numpy | best peer (fresh) | best peer (any) | lazyk fresh | % lim | x peer | lazyk out= "
             "| % lim | x peer |", "|---|---|---:|---|---|---|---:|---:|---|---:|---:|"]
    ok = [r for r in res["rows"] if "seconds" in r and r.get("correct", True)]
    for n in res["meta"]["sizes"]:
        for cid in dict.fromkeys(r["case"] for r in ok if r["n"] == n):
            g = [r for r in ok if r["n"] == n and r["case"] == cid]
            np_row = _best([r for r in g if r["family"] == "numpy"])
            pf = _best([r for r in g if r["family"] in PEERS and r["mode"] == "fresh"])
            pa = _best([r for r in g if r["family"] in PEERS])
            lf = _best([r for r in g if _compiled_row(r) and r["mode"] == "fresh"])
            lo = _best([r for r in g if _compiled_row(r) and r["mode"] == "out"])
            lines.append(f"| {n:.0e} | {_case(g[0])} | {fmt_time(np_row['seconds']) if np_row else ''} | "
                         f"{_cell(pf)} | {_cell(pa)} | {_cell(lf)} | {_limit(lf)} | "
                         f"{_ratio(lf['vs_best_peer'] if lf else None)} | {_cell(lo)} | {_limit(lo)} | "
                         f"{_ratio(lo['vs_best_peer'] if lo else None)} |")
    return lines + [""]


def _compiled_row(r: dict) -> bool:
    return r["family"] == "lazyk" and r.get("spelling", "compiled") == "compiled"


def spellings(res: dict[str, Any]) -> list[str]:
    """Markdown lines: each lazyk spelling next to the compiled call, and numexpr's `evaluate`
    against lazyk's `evaluate` (same string, same threads, fresh and out=)."""
    ok = [r for r in res["rows"] if "seconds" in r and r.get("correct", True)]
    if not any(r["family"] == "lazyk" and r.get("spelling") == "evaluate" for r in ok):
        return []
    intro = ("Same threads for every column. `compiled` is `f = lazyk.compile(...)` then "
             "`f(a, b)`; `evaluate` is `lazyk.evaluate(\"a + b\")` (parse, plan and kernel "
             "caches hit after the first call); `.eval()` builds the expression from lazyk "
             "arrays and calls `.eval()` each time. `x ne` = numexpr time / lazyk evaluate time "
             "(above 1: lazyk is faster).")
    head = ("| n | case | compiled | evaluate | .eval() | numexpr | x ne | compiled out= "
            "| evaluate out= | numexpr out= | x ne out= |")
    lines = ["## lazyk spellings, and numexpr.evaluate against lazyk.evaluate", "", intro, "",
             head, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    threads = max((r["threads"] for r in ok if r.get("spelling") == "evaluate"), default=1)

    def pick(g, family, spelling, mode):
        return _best([r for r in g if r["family"] == family and r["threads"] == threads
                      and r["mode"] == mode and r.get("spelling", "compiled") == spelling])

    def t(r):
        return fmt_time(r["seconds"]) if r else ""

    def x(peer, r):
        return _ratio(peer["seconds"] / r["seconds"]) if peer and r else ""

    for n in res["meta"]["sizes"]:
        for cid in dict.fromkeys(r["case"] for r in ok if r["n"] == n):
            g = [r for r in ok if r["n"] == n and r["case"] == cid]
            cf, ef, vf = (pick(g, "lazyk", s, "fresh") for s in ("compiled", "evaluate", "eval"))
            co, eo = (pick(g, "lazyk", s, "out") for s in ("compiled", "evaluate"))
            nf, no = pick(g, "numexpr", "compiled", "fresh"), pick(g, "numexpr", "compiled", "out")
            lines.append(f"| {n:.0e} | {_case(g[0])} | {t(cf)} | {t(ef)} | {t(vf)} | {t(nf)} | {x(nf, ef)} "
                         f"| {t(co)} | {t(eo)} | {t(no)} | {x(no, eo)} |")
    return lines + [""]


def _ratio(v: float | None) -> str:
    return "" if v is None else f"{v:.2f}"


def _num(v: Any) -> str:
    return "n/a" if v is None else f"{v:.1f}"


# The chart's series: NumPy is the baseline (1x); the others are the fastest row of their
# family per size and case (every row stays in results.json).
CHART_PEERS = ("numexpr", "numba")


def chart_series(res: dict[str, Any]) -> dict[str, Any]:
    """What the chart draws, per size and case: the expression, NumPy's time, the fastest
    peer row (numexpr or Numba), the fastest compiled lazyk row, their speed-ups over NumPy,
    and whether the call's data fit in the last-level cache. Stored in results.json too."""
    ok = [r for r in res["rows"] if "seconds" in r and r.get("correct", True)]
    cases = list(dict.fromkeys(r["case"] for r in res["rows"]))
    text = {r["case"]: r.get("expr", r["case"]) for r in res["rows"]}
    panels = []
    for n in res["meta"]["sizes"]:
        cells = []
        for cid in cases:
            g = [r for r in ok if r["n"] == n and r["case"] == cid]
            np_row = _best([r for r in g if r["family"] == "numpy"])
            peer = _best([r for r in g if r["family"] in CHART_PEERS])
            mine = _best([r for r in g if _compiled_row(r)])
            speed = (lambda r: np_row["seconds"] / r["seconds"]  # noqa: E731
                     if r and np_row else None)
            cells.append({"case": cid, "expr": text[cid],
                          "numpy_s": np_row["seconds"] if np_row else None,
                          "best_peer": peer["tool"] if peer else None,
                          "best_peer_x": speed(peer), "lazyk": mine["tool"] if mine else None,
                          "lazyk_x": speed(mine),
                          "in_cache": any(r.get("in_cache") for r in g)})
        panels.append({"n": n, "cells": cells})
    return {"series": ["NumPy (= 1)", "best peer: the fastest numexpr or Numba run",
                       "lazyk: the fastest lazyk.compile(...) call"],
            "llc_mb": res["meta"].get("llc_mb"), "panels": panels}


def _case_label(cell: dict) -> str:
    """`E7` over its expression, wrapped at a comma so ten labels fit side by side."""
    expr = cell["expr"]
    if len(expr) > 16 and ", " in expr:
        head, _, tail = expr.partition(", ")
        expr = f"{head},\n{tail}"
    return f"{cell['case']}\n{expr}"


def chart(res: dict[str, Any], path: Path) -> bool:
    """One panel per size: each case's speed-up over NumPy for the fastest peer row and the
    fastest lazyk row (log scale), data in cache hatched; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
        from matplotlib.ticker import FuncFormatter
    except ImportError:
        return False
    data = chart_series(res)
    panels = data["panels"]
    colors = {"peer": "#9a9a9a", "lazyk": "#1f6fb4"}
    values = [c[k] for p in panels for c in p["cells"] for k in ("best_peer_x", "lazyk_x")
              if c[k]]
    low = min([1.0] + values) / 1.8
    high = max([1.0] + values) * 2.5  # room for the value labels above the bars
    fig, axes = plt.subplots(len(panels), 1, figsize=(13, 2.9 * len(panels) + 1.3),
                             squeeze=False, sharey=True)
    width = 0.38

    def mixed(panel: dict) -> bool:  # cases in and out of cache: hatch those in cache
        return 0 < sum(c["in_cache"] for c in panel["cells"]) < len(panel["cells"])

    m = res["meta"]
    llc = f"{m['llc_mb']:.0f} MB" if m.get("llc_mb") else "size unknown"
    for ax, panel in zip(axes[:, 0], panels):
        cells = panel["cells"]
        for j, (key, color) in enumerate((("best_peer_x", colors["peer"]),
                                          ("lazyk_x", colors["lazyk"]))):
            xs = [i + (j - 0.5) * width for i in range(len(cells))]
            ys = [c[key] or math.nan for c in cells]  # no row: no bar
            bars = ax.bar(xs, ys, width, color=color, edgecolor="white", linewidth=0.5)
            for bar, c, y in zip(bars, cells, ys):
                if c["in_cache"] and mixed(panel):
                    bar.set_hatch("///")
                if not math.isnan(y):
                    ax.annotate(f"{y:.1f}" if y < 10 else f"{y:.0f}", (bar.get_x() +
                                width / 2, y), xytext=(0, 2), textcoords="offset points",
                                ha="center", va="bottom", fontsize=7, color="#333")
        ax.axhline(1.0, color="#d62728", lw=1.2, ls="--")
        ax.set_yscale("log")
        ax.set_ylim(low, high)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
        ax.set_xlim(-0.6, len(cells) - 0.4)
        ax.set_xticks(range(len(cells)), [_case_label(c) for c in cells], fontsize=8)
        ax.set_ylabel("speed-up over NumPy\n(x, log scale)")
        ax.grid(axis="y", which="major", color="#e5e5e5", lw=0.6)
        ax.set_axisbelow(True)
        cached = sum(c["in_cache"] for c in cells)
        where = f"all data fit in the {llc} last-level cache" if cached == len(cells) else \
            "data in main memory" if not cached else \
            "hatched: the data fit in the last-level cache"
        ax.set_title(f"n = {panel['n']:,d} elements per array ({where})", fontsize=10,
                     loc="left")
    axes[-1, 0].set_xlabel("expression (E1-E10: benchmarks/bench_expr.py)")
    handles = [Patch(color=colors["peer"], label=data["series"][1]),
               Patch(color=colors["lazyk"], label=data["series"][2]),
               plt.Line2D([], [], color="#d62728", ls="--", label="NumPy (= 1)")]
    if any(mixed(p) for p in panels):
        handles.append(Patch(facecolor="white", edgecolor="#555", hatch="///",
                             label=f"data fit in the last-level cache ({llc})"))
    h = fig.get_figheight()  # the header: title, one line on the run, the legend (inches)
    fig.text(0.01, 1 - 0.12 / h, "lazyk bench: how many times faster than NumPy (higher is "
             "better)", fontsize=12, ha="left", va="top")
    fig.text(0.01, 1 - 0.40 / h,
             f"{m.get('processor', '')}, {m.get('cores', '?')} cores. Each bar: a tool's fastest "
             f"thread count and output mode, median of {m.get('samples', '?')} timed batches; "
             "every run of every tool is in results.json and results.md",
             fontsize=8, color="#555", ha="left", va="top")
    fig.legend(handles=handles, loc="upper left", ncol=len(handles), fontsize=8,
               frameon=False, bbox_to_anchor=(0.005, 1 - 0.56 / h))
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.85 / h))
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True

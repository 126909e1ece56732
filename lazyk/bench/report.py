"""`lazyk bench` output: the Markdown report (bandwidth, a table per size, the summary, the
spellings, one-off costs) and the chart, from the results `lazyk.bench.suite.run` returns.
"""
from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from lazyk.bench.overhead import markdown as overhead_markdown

PEERS = ("numpy", "numexpr", "numba")
BANDWIDTH_N = 10_000_000  # elements of the reference bandwidth kernels, unless set


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
              "`x peer` = best peer time / row time (fresh rows against fresh peers, out= rows against all).", ""]
    lines += summary(res)
    lines += spellings(res)
    for n in m["sizes"]:
        lines += [f"## n = {n:,d}", "", "| case | tool | time | GB/s | % lim | x np | x peer | best peer |",
                  "|---|---|---:|---:|---:|---:|---:|---|"]
        for r in res["rows"]:
            if r["n"] != n:
                continue
            if "seconds" not in r:
                lines.append(f"| {r['case']} | {r['tool']} | error: {r.get('error', '')[:60]} | | | | | |")
                continue
            wrong = "" if r.get("correct", True) else " (WRONG)"
            lines.append(f"| {r['case']} | {r['tool']}{wrong} | {fmt_time(r['seconds'])} | {r['gbps']:.1f} | "
                         f"{100 * r['frac_limit']:.0f}% | {_ratio(r['vs_numpy'])} | {_ratio(r['vs_best_peer'])} | "
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
            lim = lambda r: f"{100 * r['frac_limit']:.0f}%" if r else ""  # noqa: E731
            lines.append(f"| {n:.0e} | {cid} | {fmt_time(np_row['seconds']) if np_row else ''} | {_cell(pf)} | "
                         f"{_cell(pa)} | {_cell(lf)} | {lim(lf)} | {_ratio(lf['vs_best_peer'] if lf else None)} | "
                         f"{_cell(lo)} | {lim(lo)} | {_ratio(lo['vs_best_peer'] if lo else None)} |")
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
            lines.append(f"| {n:.0e} | {cid} | {t(cf)} | {t(ef)} | {t(vf)} | {t(nf)} | {x(nf, ef)} "
                         f"| {t(co)} | {t(eo)} | {t(no)} | {x(no, eo)} |")
    return lines + [""]


def _ratio(v: float | None) -> str:
    return "" if v is None else f"{v:.2f}"


def _num(v: Any) -> str:
    return "n/a" if v is None else f"{v:.1f}"


def chart(res: dict[str, Any], path: Path) -> bool:
    """One panel per size: speed-up over NumPy per case and tool (log scale); False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    sizes = res["meta"]["sizes"]
    tools = list(dict.fromkeys(r["tool"] for r in res["rows"]))
    cases = list(dict.fromkeys(r["case"] for r in res["rows"]))
    fig, axes = plt.subplots(len(sizes), 1, figsize=(14, 3.2 * len(sizes)), squeeze=False)
    width = 0.8 / max(1, len(tools))
    for ax, n in zip(axes[:, 0], sizes):
        for j, tool in enumerate(tools):
            ys = []
            for c in cases:
                r = next((r for r in res["rows"] if r["n"] == n and r["case"] == c and r["tool"] == tool
                          and r.get("vs_numpy")), None)
                ys.append(r["vs_numpy"] if r else 0)
            ax.bar([i + j * width for i in range(len(cases))], ys, width, label=tool,
                   color=plt.cm.tab20(j % 20))  # 11 rows: more than the default 10 colours
        ax.set_yscale("log")
        ax.axhline(1.0, color="k", lw=0.5)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(cases))], cases)
        ax.set_title(f"n = {n:,d}: speed-up over NumPy (higher is better)")
    axes[0, 0].legend(ncol=6, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True

"""Per-call time of `numexpr.evaluate` vs `lazyk.evaluate` / `lazyk.re_evaluate` on strings.

    python benchmarks/bench_evaluate.py                  # 2*a + 3*b - c, sin(a) * exp(-b)
    python benchmarks/bench_evaluate.py --all --sizes 1e3 1e5   # the E1-E10 strings

Every figure is the median of `--samples` timed batches in this one process (tools rotated
per sample, a quarter batch of warm-up before each batch, the same arrays for every tool);
a batch is sized to take about `--batch-ms`. Ratios are numexpr / lazyk of the same run.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_expr import CASES, make_data

DEFAULT = ("2*a + 3*b - c", "sin(a) * exp(-b)")


def _batch(fn, target_s: float) -> int:
    fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    return max(1, min(100_000, int(target_s / one)))


def _time(fn, reps: int) -> float:
    for _ in range(max(1, reps // 4)):  # warm-up: the first calls after a switch run slower
        fn()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def run(texts, sizes, samples: int, batch_ms: float) -> list[tuple]:
    import numexpr as ne

    import lazyk

    rows = []
    for n in sizes:
        data = make_data(n)
        for text in texts:
            t = text.replace("x[::2]", "xs").replace("y[::2]", "ys")
            local = {k: v for k, v in data.items() if k in t}

            def lz_re(t=t, local=local):
                return lazyk.re_evaluate(local)
            tools = {
                "numexpr.evaluate": lambda t=t, local=local: ne.evaluate(t, local_dict=local),
                "lazyk.evaluate": lambda t=t, local=local: lazyk.evaluate(t, local_dict=local),
                "lazyk.re_evaluate": lz_re,
            }
            want = np.asarray(ne.evaluate(t, local_dict=local))
            got = np.asarray(lazyk.evaluate(t, local_dict=local))
            np.testing.assert_allclose(got, want, rtol=1e-12)  # never time a wrong answer
            reps = {k: _batch(f, batch_ms / 1e3) for k, f in tools.items()
                    if k != "lazyk.re_evaluate"}
            reps["lazyk.re_evaluate"] = reps["lazyk.evaluate"]
            times: dict = {k: [] for k in tools}
            names = list(tools)
            for s in range(samples):
                for k in names[s % len(names):] + names[:s % len(names)]:
                    if k == "lazyk.re_evaluate":
                        lazyk.evaluate(t, local_dict=local)  # re_evaluate runs the last string
                    times[k].append(_time(tools[k], reps[k]))
            med = {k: statistics.median(v) for k, v in times.items()}
            rows.append((text, n, med))
    return rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--all", action="store_true", help="the E1-E10 strings of `lazyk bench`")
    p.add_argument("--sizes", nargs="+", type=float, default=[1e3, 1e5, 1e6, 1e7])
    p.add_argument("--samples", type=int, default=7)
    p.add_argument("--batch-ms", type=float, default=40.0)
    args = p.parse_args(argv)
    texts = [c.text for c in CASES] if args.all else list(DEFAULT)
    rows = run(texts, [int(n) for n in args.sizes], args.samples, args.batch_ms)
    print("| expression | n | numexpr.evaluate (us) | lazyk.evaluate (us) | "
          "lazyk.re_evaluate (us) | numexpr / lazyk |")
    print("|---|---:|---:|---:|---:|---:|")
    for text, n, med in rows:
        ne_t, lz, re_t = (med[k] * 1e6 for k in ("numexpr.evaluate", "lazyk.evaluate",
                                                 "lazyk.re_evaluate"))
        print(f"| `{text}` | {n:.0e} | {ne_t:.1f} | {lz:.1f} | {re_t:.1f} | {ne_t / lz:.2f}x |")


if __name__ == "__main__":
    main()

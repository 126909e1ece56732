"""`lazyk bench --dask`: E2, E6 and E10 on a local Dask cluster, lazyk.dask.evaluate against
plain dask.array, map_blocks(numexpr.evaluate) and map_blocks(a compiled kernel).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from lazyk.frontend.exprparse import build

DASK_CASES = {"E2": "2*a + 3*b - c", "E6": "sin(a) * exp(-b)", "E10": "sum(a*b)"}


def dask_rows(case: str, text: str, arrays: dict) -> dict[str, Any]:
    """The four spellings of one case, each a Dask collection over the same persisted inputs."""
    import dask.array as da
    import numexpr as ne

    import lazyk.dask  # imports dask.array: only `lazyk bench --dask` pays for it

    a, b, c = arrays["a"], arrays["b"], arrays["c"]
    used = [x for x in (a, b, c) if x is not None]
    names = [n for n in "abc" if arrays[n] is not None]
    reduce = text.startswith("sum(")
    inner = text[4:-1] if reduce else text
    ph = {n: lazyk.placeholder(n, "N * float64") for n in names}
    k = lazyk.compile(build(text, ph))  # the same kernel, written by hand per block
    if case == "E2":
        plain = 2 * a + 3 * b - c
    elif case == "E6":
        plain = da.sin(a) * da.exp(-b)
    else:
        plain = (a * b).sum()

    def ne_block(*xs):
        return ne.evaluate(inner, local_dict=dict(zip(names, xs)))

    if reduce:
        one = ((1,) * a.numblocks[0],)
        numexpr_rows = da.map_blocks(lambda *xs: np.atleast_1d(ne_block(*xs).sum()), *used,
                                     chunks=one, dtype=float).sum()
        hand = da.map_blocks(lambda *xs: np.atleast_1d(k(*xs)), *used, chunks=one,
                             dtype=float).sum()
    else:
        numexpr_rows = da.map_blocks(ne_block, *used, dtype=float)
        hand = da.map_blocks(k, *used, dtype=float)
    spelled = lazyk.dask.evaluate(text, local_dict=arrays)
    return {"dask": plain, "numexpr map_blocks": numexpr_rows, "lazyk compiled map_blocks": hand,
            "lazyk.dask.evaluate": spelled}


def command(args: argparse.Namespace) -> int:
    """`--dask`: E2, E6, E10 at --dask-n on LocalCluster(2 processes x 1 thread, loopback)."""
    try:
        import dask.array as da
        import distributed
        import numexpr  # noqa: F401
    except ImportError as err:
        print(f"lazyk bench --dask needs dask, distributed and numexpr ({err})", file=sys.stderr)
        return 1
    n, chunk, samples = args.dask_n, args.dask_chunk, max(1, args.dask_samples)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address="127.0.0.1:0")
    client = distributed.Client(cluster)
    rows = []
    try:
        rng = da.random.default_rng(0)
        a, b, c = (rng.random(n, chunks=chunk) for _ in range(3))
        a, b, c = client.persist([a, b, c])
        distributed.wait([a, b, c])
        threads = client.run(lambda: __import__("lazyk").get_num_threads())
        for case, text in DASK_CASES.items():
            if args.cases and case not in args.cases:
                continue
            arrays = {"a": a, "b": b, "c": c if "c" in text else None}
            tools = dask_rows(case, text, arrays)
            times: dict[str, list[float]] = {t: [] for t in tools}
            # Two warm-up rounds: a reduction's combine step may land on the other worker
            # only in the second round, and each worker plans its kernels once.
            for k in range(samples + 2):
                order = list(tools)
                order = order[k % len(order):] + order[:k % len(order)]
                for tool in order:
                    t0 = time.perf_counter()
                    if text.startswith("sum("):
                        value = tools[tool].compute()
                    else:
                        value = client.persist(tools[tool])
                        distributed.wait(value)
                    dt = time.perf_counter() - t0
                    del value
                    if k >= 2:
                        times[tool].append(dt)
            med = {t: statistics.median(v) for t, v in times.items()}
            lz = med["lazyk.dask.evaluate"]
            for tool, m in med.items():
                rows.append({"case": case, "expr": text, "tool": tool, "seconds": m,
                             "lazyk_speedup": m / lz, "samples": times[tool]})
            print(f"{case} {text}: " + ", ".join(f"{t} {m:.3f} s" for t, m in med.items()),
                  flush=True)
    finally:
        client.close()
        cluster.close()
    md = [f"Dask: n = {n:.0e} float64, chunks of {chunk:.0e}, LocalCluster(2 processes x 1 "
          f"thread, 127.0.0.1), lazyk threads per worker {sorted(set(threads.values()))}; "
          f"median of {samples} (two warm-up rounds first, order rotated)", "",
          "| case | tool | median | lazyk.dask.evaluate speedup |", "|---|---|---|---|"]
    md += [f"| {r['case']} `{r['expr']}` | {r['tool']} | {r['seconds']:.3f} s | "
           f"{r['lazyk_speedup']:.2f}x |" for r in rows]
    text = "\n".join(md) + "\n"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results-dask.json").write_text(json.dumps(
        {"n": n, "chunk": chunk, "samples": samples, "rows": rows}, indent=1))
    (out / "results-dask.md").write_text(text)
    print(text)
    return 0

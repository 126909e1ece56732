"""What row selection and flatten cost on Dask: `x[lazyk.num(x) >= 2]` then work on the kept
rows (each partition keeps its own; counts known once computed), against one machine.
Jagged rows (Poisson(4) values each), synchronous scheduler, medians of 5 (ms).

    python benchmarks/bench_dask_selection.py [outer_rows] [rows_per_part]
"""
import statistics
import sys
import time

import dask
import numpy as np

import lazyk
import lazyk.dask as ld

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
per = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
rng = np.random.default_rng(0)
lengths = rng.poisson(4, n)
offsets = np.concatenate([[0], np.cumsum(lengths)])
x = lazyk.from_offsets(offsets, rng.random(offsets[-1]))
r = ld.from_ragged(x, per)


def work(v):
    return {
        "sum of the kept rows' sums": lazyk.sum(v[lazyk.num(v) >= 2].sum(axis=1), axis=0),
        "num at axis 0 of the kept rows": lazyk.num(v[lazyk.num(v) >= 2], axis=0),
        "histogram of the kept values": lazyk.histogram(lazyk.flatten(v[lazyk.num(v) >= 2]),
                                                        20, (0, 1)),
        "kept rows (a collection)": v[lazyk.num(v) >= 2] * 2,
    }


print(f"{n} rows, {offsets[-1]} values, partitions of {per} rows")
with dask.config.set(scheduler="sync"):
    for (name, one), many in zip(work(x).items(), work(r).values()):
        e = ld.evaluate(many)
        run = e.compute
        got, want = run(), one.eval()
        got = got.to_list() if hasattr(got, "to_list") else got.tolist()
        if isinstance(got, list) and got and isinstance(got[0], list):
            got, want = [v for row in got for v in row], lazyk.flatten(want).eval()
        np.testing.assert_allclose(got, want.to_list(), rtol=1e-9, err_msg=name)
        ts, ones = [], []
        for _ in range(5):
            t0 = time.perf_counter()
            run()
            t1 = time.perf_counter()
            one.eval()
            ones.append(time.perf_counter() - t1)
            ts.append(t1 - t0)
        d, o = statistics.median(ts) * 1e3, statistics.median(ones) * 1e3
        print(f"{name}: Dask {d:.0f} ms, one machine {o:.0f} ms ({d / o:.2f}x)")

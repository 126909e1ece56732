"""Per-task cost of `lazyk.dask` expressions over a RaggedArray of tiny partitions (1000
partitions of 4 rows), synchronous scheduler: CPU time (process_time) per task, median of 7.

    python benchmarks/bench_dask_rows.py       # add 0 or 1 to profile that case (cProfile)
"""
import statistics
import sys
import time

import dask
import numpy as np

import lazyk
import lazyk.dask as ld

rng = np.random.default_rng(0)
n, per = 4000, 4
lengths = rng.integers(0, 5, n)
offsets = np.concatenate([[0], np.cumsum(lengths)])
x = lazyk.from_offsets(offsets, rng.random(offsets[-1]))
r = ld.from_ragged(x, per)
cases = {
    "sum(sin(r)*2, axis=-1) -> dask.array": lambda: ld.evaluate((lazyk.sin(r) * 2).sum(axis=-1)),
    "r*2+1 -> RaggedArray": lambda: ld.evaluate(r * 2 + 1),
}
with dask.config.set(scheduler="sync"):
    for name, make in cases.items():
        make().compute()  # warm: kernels compiled
        build, run = [], []
        for _ in range(7):
            t0 = time.process_time()
            e = make()
            t1 = time.process_time()
            e.compute()
            t2 = time.process_time()
            build.append(t1 - t0)
            run.append(t2 - t1)
        print(f"{name}: {r.npartitions} tasks, build {statistics.median(build)*1e3:.1f} ms, "
              f"compute {statistics.median(run)*1e3:.1f} ms = "
              f"{statistics.median(run)/r.npartitions*1e6:.0f} us/task")
if len(sys.argv) > 1:
    import cProfile
    import pstats
    with dask.config.set(scheduler="sync"):
        e = cases[list(cases)[int(sys.argv[1])]]()
        cProfile.run("e.compute()", "/tmp/dask2/prof")
    pstats.Stats("/tmp/dask2/prof").sort_stats("cumulative").print_stats(45)

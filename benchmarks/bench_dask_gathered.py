"""What an axis-0 reduction over deeper missing rows (`N * var * ?var * T`) costs on Dask:
one task joins every partition's rows and folds them (a partial would hide the lengths of
the present rows it folded into a missing one). Against the same data without the missing
rows (`N * var * var * T`: partials per partition combined in a tree) and one machine.
Synchronous scheduler; wall time median of 5; peak Python-tracked memory (NumPy buffers,
tracemalloc) of one compute.

    python benchmarks/bench_dask_gathered.py [outer_rows] [rows_per_part]
"""
import statistics
import sys
import time
import tracemalloc

import dask
import numpy as np

import lazyk
import lazyk.dask as ld
from lazyk.arrays.buffers import offsets_array

n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
per = int(sys.argv[2]) if len(sys.argv) > 2 else 20_000
rng = np.random.default_rng(0)
inner, width = 3, 4  # every outer row: 3 inner rows of 4 values (rows line up)
values = rng.random(n * inner * width)
leaf = offsets_array(np.arange(0, n * inner * width + 1, width), lazyk.array(values))
present = rng.random(n * inner) > 0.1  # 10% of the inner rows missing
holes = offsets_array(np.arange(0, n * inner * width + 1, width), lazyk.array(values),
                      validity=present)
cases = {
    "N * var * ?var * float64 (gathered)": offsets_array(np.arange(0, n * inner + 1, inner),
                                                         holes),
    "N * var * var * float64 (tree)": offsets_array(np.arange(0, n * inner + 1, inner), leaf),
}
print(f"{n} outer rows, {n * inner * width} values ({values.nbytes / 1e6:.0f} MB), "
      f"partitions of {per} rows")
for name, x in cases.items():
    r = ld.from_ragged(x, per)
    e = ld.evaluate(r.sum(axis=0, skipna=True))
    with dask.config.set(scheduler="sync"):
        want = np.asarray(x.sum(axis=0, skipna=True).eval().to_list())
        np.testing.assert_allclose(np.asarray(e.compute().to_list()), want, rtol=1e-9)
        times, one = [], []
        for _ in range(5):
            t0 = time.perf_counter()
            e.compute()
            t1 = time.perf_counter()
            x.sum(axis=0, skipna=True).eval()
            one.append(time.perf_counter() - t1)
            times.append(t1 - t0)
        tracemalloc.start()
        e.compute()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        x.sum(axis=0, skipna=True).eval()
        peak_one = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    print(f"{name}: {r.npartitions} partitions, {len(e.__dask_graph__())} tasks, "
          f"Dask {statistics.median(times) * 1e3:.0f} ms, one machine "
          f"{statistics.median(one) * 1e3:.0f} ms; peak memory Dask {peak / 1e6:.0f} MB, one "
          f"machine {peak_one / 1e6:.0f} MB")

"""Forms over missing rows (`?var`) whose results are rebuilt after the loop nest: time per
call against the number of rows, to show they scale with the nest (no Python per row).

    python benchmarks/bench_ragged_qrows.py [--rows 10000 100000] [--repeat 5]

Rows of 2 float64 values, one row in five missing. Forms: a `?n` result (`x + ones(2)`, a
missing row against a fixed dim of 2), a fold over axes (0, 1) of `2 * 2 * N * ?var`
(result rows marked missing, or emptied under skipna), the same over `?n` rows, and a
fold over axes (0, 1) of `var * var * ?var` rows (var dims above the missing rows).
Prints the median time per call and the time per row.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import lazyk
from lazyk.arrays.buffers import offsets_array


def qrows(rows: int, outer: tuple, seed: int = 0):
    """`outer * ?var * float64` over `rows` rows of 2 values, one in five missing."""
    rng = np.random.default_rng(seed)
    off = np.arange(rows + 1, dtype=np.int64) * 2
    vals = rng.integers(-5, 5, 2 * rows).astype(np.float64)
    valid = rng.integers(0, 5, rows) != 0
    return offsets_array(off, lazyk.array(vals), valid, outer=outer, check=None)


def under_var(rows: int):
    """`var * var * ?var * float64`: 100 rows of rows // 100 rows of 2 values."""
    inner = qrows(rows, (rows,))
    mid = offsets_array(np.arange(101, dtype=np.int64) * (rows // 100), inner, check=None)
    return offsets_array(np.array([0, 100], np.int64), mid, outer=(), check=None)


def median(fn, repeat: int) -> float:
    fn()  # compile
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    for rows in args.rows:
        rows -= rows % 100
        x, x3, xv = qrows(rows, (rows,)), qrows(rows, (2, 2, rows // 4)), under_var(rows)
        forms = {
            "?n result: x + ones(2)": lambda: (x + np.ones(2)).eval(),
            "axes (0, 1): rows missing": lambda: x3.sum(axis=(0, 1)).eval(),
            "axes (0, 1) skipna: emptied": lambda: x3.sum(axis=(0, 1), skipna=True).eval(),
            "?n rows over axes (0, 1)": lambda: (x3 + np.ones(2)).sum(axis=(0, 1)).eval(),
            "var * var * ?var over (0, 1)": lambda: xv.sum(axis=(0, 1), skipna=True).eval(),
        }
        for name, fn in forms.items():
            try:
                t = median(fn, args.repeat)
            except lazyk.NotSupportedError:
                print(f"{rows:>8} rows  {name:<30} refused", flush=True)
                continue
            print(f"{rows:>8} rows  {name:<30} {t * 1e3:9.2f} ms  {t / rows * 1e9:7.1f} ns/row",
                  flush=True)


if __name__ == "__main__":
    main()

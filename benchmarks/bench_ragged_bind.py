"""A bound ragged call (`k.bind(out, a, b)()`) against a compiled call `k(a, b, out=o)`.

    python benchmarks/bench_ragged_bind.py [--rows 100 1000000] [--repeat 7]

Rows of 0..8 float64 values (mean 4). Two expressions: `x * 2 + y` into a `N * var *
float64` out, and `(x * y).sum(axis=-1)` into an `N * float64` NumPy out. Prints the
median time per call of each way and their ratio.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import lazyk


def _median_call(fn, repeat: int) -> float:
    fn()  # warm: kernels compiled / loaded, pages faulted in
    times = []
    for _ in range(repeat):
        n, t0 = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            dt = time.perf_counter() - t0
            if dt > 0.05:
                break
        times.append(dt / n)
    return float(np.median(times))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[100, 1_000_000])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    x = lazyk.placeholder("x", "N * var * float64")
    y = lazyk.placeholder("y", "N * var * float64")
    ew, red = lazyk.compile(x * 2 + y), lazyk.compile((x * y).sum(axis=-1))
    rng = np.random.default_rng(0)
    print(f"threads: {lazyk.get_num_threads()}")
    print(f"{'rows':>9} {'expression':<22} {'k(.., out=o)':>14} {'bound()':>12} {'ratio':>7}")
    for n in args.rows:
        off = np.zeros(n + 1, np.int64)
        np.cumsum(rng.integers(0, 9, n), out=off[1:])
        a = lazyk.from_offsets(off, rng.standard_normal(int(off[-1])))
        b = lazyk.from_offsets(off, rng.standard_normal(int(off[-1])))
        o = lazyk.from_offsets(off.copy(), np.zeros(int(off[-1])))
        sums = np.zeros(n)
        for name, k, out in (("x * 2 + y", ew, o), ("(x * y).sum(axis=-1)", red, sums)):
            call = _median_call(lambda: k(a, b, out=out), args.repeat)
            bound = k.bind(out, a, b)
            run = _median_call(bound, args.repeat)
            print(f"{n:>9} {name:<22} {call * 1e6:>11.1f} us {run * 1e6:>9.1f} us "
                  f"{call / run:>6.1f}x")


if __name__ == "__main__":
    main()

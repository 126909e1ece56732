"""A bound ragged call (`k.bind(out, a, b)()`) against a compiled call `k(a, b, out=o)`.

    python benchmarks/bench_ragged_bind.py [--rows 100 1000000] [--repeat 7]

Rows of 0..8 float64 values (mean 4); `q` has `?float64` values, one in eight missing.
Expressions: `x * 2 + y` into a `N * var * float64` out, `(x * y).sum(axis=-1)` into an
`N * float64` NumPy out, and the forms that bind as several kernel steps or combine
partial results: centering rows (`x - x.mean(axis=-1, keepdims=True)`, two steps), a
sum over every axis (a 0-d out), where() over missing values (one step) and a row sum
of it (two steps). Prints the median time per call of each way and their ratio.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import lazyk
from lazyk.arrays.array import masked


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
    q = lazyk.placeholder("q", "N * var * ?float64")
    forms = [("x * 2 + y", x * 2 + y, "x y", "var"),
             ("(x * y).sum(axis=-1)", (x * y).sum(axis=-1), "x y", "rows"),
             ("x - x.mean(-1, keepdims)", x - x.mean(axis=-1, keepdims=True), "x", "var"),
             ("x.sum()", x.sum(), "x", "one"),
             ("where(q > 0, q, y)", lazyk.where(q > 0, q, y), "q y", "?var"),
             ("where(..).sum(axis=-1)", lazyk.where(q > 0, q, y).sum(axis=-1), "q y",
              "?rows")]
    rng = np.random.default_rng(0)
    print(f"threads: {lazyk.get_num_threads()}")
    print(f"{'rows':>9} {'expression':<26} {'k(.., out=o)':>14} {'bound()':>12} {'ratio':>7}")
    for n in args.rows:
        off = np.zeros(n + 1, np.int64)
        np.cumsum(rng.integers(0, 9, n), out=off[1:])
        m = int(off[-1])
        data = {"x": lazyk.from_offsets(off, rng.standard_normal(m)),
                "y": lazyk.from_offsets(off, rng.standard_normal(m)),
                "q": lazyk.from_offsets(off, masked(rng.standard_normal(m),
                                                    rng.integers(0, 8, m) > 0))}
        outs = {"var": lambda: lazyk.from_offsets(off.copy(), np.zeros(m)),
                "rows": lambda: np.zeros(n), "one": lambda: np.zeros(()),
                "?var": lambda: lazyk.from_offsets(off.copy(), masked(np.zeros(m),
                                                                      np.ones(m, bool))),
                "?rows": lambda: masked(np.zeros(n), np.ones(n, bool))}
        for name, e, names, kind in forms:
            k, ins, out = lazyk.compile(e), [data[v] for v in names.split()], outs[kind]()
            call = _median_call(lambda: k(*ins, out=out), args.repeat)
            bound = k.bind(out, *ins)
            run = _median_call(bound, args.repeat)
            print(f"{n:>9} {name:<26} {call * 1e6:>11.1f} us {run * 1e6:>9.1f} us "
                  f"{call / run:>6.1f}x", flush=True)


if __name__ == "__main__":
    main()

"""Cost of making lazyk arrays: NumPy views (should be O(1)) and ragged Python lists.

Run: python benchmarks/bench_array.py   (compares against awkward.Array when installed)
"""
from __future__ import annotations

import random
import sys
import timeit

import numpy as np

import lazyk


def best(fn, number: int, repeat: int = 5) -> float:
    """Best time of one call, in seconds."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def bench_numpy_views() -> None:
    print("lazyk.array(ndarray): zero-copy view, time per call")
    for n in (10, 10_000, 10_000_000):
        x = np.arange(n, dtype=np.float64)
        strided = x[::-2]
        t = best(lambda: lazyk.array(x), 20_000)
        s = best(lambda: lazyk.array(strided), 20_000)
        a = lazyk.array(x)
        r = best(lambda: a.to_numpy(), 100_000)
        print(f"  n={n:>10,}  contiguous {t * 1e6:6.2f} us   reversed {s * 1e6:6.2f} us   "
              f"to_numpy {r * 1e6:5.2f} us")
    y = np.zeros((1000, 1000), order="F").astype(">f8")
    print(f"  1000x1000 Fortran byte-swapped: {best(lambda: lazyk.array(y), 20_000) * 1e6:.2f} us")
    a = lazyk.array(y)
    print(f"  .type + .meta on a fresh array: "
          f"{best(lambda: (lazyk.array(y).type, lazyk.array(y).meta), 20_000) * 1e6:.2f} us")


def ragged_rows(total: int, seed: int = 0) -> list[list[int]]:
    rng = random.Random(seed)
    rows, count = [], 0
    while count < total:
        k = rng.randint(0, 10)
        rows.append([rng.randint(-1000, 1000) for _ in range(k)])
        count += k
    return rows


def bench_ragged(total: int = 1_000_000) -> None:
    rows = ragged_rows(total)
    n = sum(map(len, rows))
    print(f"\nragged list -> array: {len(rows):,} rows, {n:,} int elements")
    t_inf = best(lambda: lazyk.array(rows), 1, 3)
    t_typ = best(lambda: lazyk.array(rows, type="var * var * int64"), 1, 3)
    a = lazyk.array(rows)
    t_back = best(a.to_list, 1, 3)
    print(f"  lazyk.array(rows)                      {t_inf * 1e3:8.1f} ms  ({a.type})")
    print(f"  lazyk.array(rows, type='var * var * int64') {t_typ * 1e3:5.1f} ms")
    print(f"  .to_list()                             {t_back * 1e3:8.1f} ms")
    try:
        import awkward as ak
    except ImportError:
        print("  awkward not installed: comparison skipped (pip install awkward)")
        return
    t_ak = best(lambda: ak.Array(rows), 1, 3)
    b = ak.Array(rows)
    t_ak_back = best(b.to_list, 1, 3)
    print(f"  awkward.Array(rows) {ak.__version__:<18} {t_ak * 1e3:8.1f} ms  ({b.type})")
    print(f"  awkward .to_list()                     {t_ak_back * 1e3:8.1f} ms")


def main() -> None:
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}")
    bench_numpy_views()
    bench_ragged()


if __name__ == "__main__":
    main()

"""String comparisons in a kernel against NumPy `U` / `S` arrays and plain Python.

Run: python benchmarks/bench_strings.py [n] [threads]   (n defaults to 1e6 strings)

Each row is the median of 15 calls (5 for the Python loop) after one warm-up call; the
ratio is NumPy `U == 'kiwi'`'s time over the row's time (above 1: faster than NumPy).
"""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np

import lazyk


def median_time(fn, reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(n: int = 1_000_000, threads: int | None = None) -> None:
    if threads:
        lazyk.set_num_threads(threads)
    rng = np.random.default_rng(0)
    words = ["kiwi", "apple", "banana", "fig", "kiwis", "cherry", "", "pear", "grape", "kiw",
             "caf\u00e9", "\u00e9clair"]
    py = [words[i] for i in rng.integers(0, len(words), n)]
    u = np.array(py)
    s = np.array([w.encode() for w in py])
    strings = lazyk.array(py, type=f"{n} * string")
    lu, ls = lazyk.array(u), lazyk.array(s)
    assert (lazyk.evaluate(strings == "kiwi") == (u == "kiwi")).all()
    rows = {
        "numpy U == 'kiwi'": lambda: u == "kiwi",
        "numpy S == b'kiwi'": lambda: s == b"kiwi",
        "python [x == 'kiwi' for x in list]": lambda: [x == "kiwi" for x in py],
        "lazyk string == 'kiwi'": lambda: lazyk.evaluate(strings == "kiwi"),
        "lazyk S == 'kiwi'": lambda: lazyk.evaluate(ls == "kiwi"),
        "lazyk U == 'kiwi'": lambda: lazyk.evaluate(lu == "kiwi"),
        "numpy U < 'kiwi'": lambda: u < "kiwi",
        "lazyk string < 'kiwi'": lambda: lazyk.evaluate(strings < "kiwi"),
        "lazyk U < 'kiwi'": lambda: lazyk.evaluate(lu < "kiwi"),
        "numpy strings.str_len(U)": lambda: np.strings.str_len(u),
        "lazyk str_len(string)": lambda: lazyk.evaluate(lazyk.str_len(strings)),
        "numpy strings.startswith(U, 'ki')": lambda: np.strings.startswith(u, "ki"),
        "lazyk startswith(string, 'ki')": lambda: lazyk.evaluate(lazyk.startswith(strings,
                                                                                  "ki")),
    }
    times = {k: median_time(f, 5 if k.startswith("python") else 15) for k, f in rows.items()}
    base = times["numpy U == 'kiwi'"]
    print(f"n = {n:,} strings, lazyk threads = {lazyk.get_num_threads()}")
    for k, t in times.items():
        print(f"  {k:36s} {t * 1e3:8.2f} ms   {base / t:6.2f}x numpy U ==")


if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000,
         int(sys.argv[2]) if len(sys.argv) > 2 else None)

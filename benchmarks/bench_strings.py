"""String comparisons in a kernel against NumPy `U` / `S` arrays and plain Python.

Run: python benchmarks/bench_strings.py [n] [threads]   (n defaults to 1e6 strings)

Each row is the median of 15 calls (5 for the Python loop) after one warm-up call; the
ratio is NumPy `U == 'kiwi'`'s time over the row's time (above 1: faster than NumPy).
A second table times ragged strings (n strings in n / 10 rows): lazyk's per-row
`(tags == 'x').any(axis=-1)` and `str_len(tags).sum(axis=-1)` against NumPy over flat
content and offsets and against Awkward Array; the ratio is the peer's time over lazyk's.
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
    ragged(rng, words, n)


def ragged(rng, words: list, n: int) -> None:
    """Ragged strings: n strings in about n / 10 rows (lengths 0-20), `(tags == 'x')` per
    row with `any`, against NumPy (flat `U` content, `np.logical_or.reduceat` over the
    offsets) and Awkward Array (when installed)."""
    lengths = rng.integers(0, 21, max(1, n // 10))
    flat = np.array(words + ["x"])[rng.integers(0, len(words) + 1, int(lengths.sum()))]
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    tags = lazyk.from_offsets(offsets, lazyk.array(flat.tolist(), type=f"{len(flat)} * string"))
    nonempty = lengths > 0

    def numpy_any():
        return np.logical_or.reduceat(np.append(flat == "x", False), offsets[:-1]) & nonempty

    def numpy_len():
        return np.add.reduceat(np.append(np.strings.str_len(flat), 0), offsets[:-1]) * nonempty

    rows = {
        "numpy (U == 'x') reduceat any": numpy_any,
        "lazyk (tags == 'x').any(axis=-1)": lambda: (tags == "x").any(axis=-1).eval(),
        "numpy str_len(U) reduceat sum": numpy_len,
        "lazyk str_len(tags).sum(axis=-1)": lambda: lazyk.str_len(tags).sum(axis=-1).eval(),
    }
    assert (rows["lazyk (tags == 'x').any(axis=-1)"]().to_numpy() == numpy_any()).all()
    try:
        import awkward as ak
        import pyarrow as pa
    except ImportError:
        ak = None
    if ak is not None:
        at = ak.from_arrow(pa.LargeListArray.from_arrays(pa.array(offsets),
                                                         pa.array(flat.tolist())))
        rows["awkward ak.any(tags == 'x', axis=-1)"] = lambda: ak.any(at == "x", axis=-1)
        rows["awkward ak.sum(ak.str.length(tags))"] = lambda: ak.sum(ak.str.length(at),
                                                                     axis=-1)
        assert (ak.to_numpy(ak.fill_none(rows["awkward ak.any(tags == 'x', axis=-1)"](),
                                         False)) == numpy_any()).all()
    times = {k: median_time(f, 15) for k, f in rows.items()}
    print(f"ragged: {len(flat):,} strings in {len(lengths):,} rows (lengths 0-20)")
    for k, t in times.items():
        peer = "lazyk (tags == 'x').any(axis=-1)" if "any" in k or "==" in k else \
            "lazyk str_len(tags).sum(axis=-1)"
        print(f"  {k:40s} {t * 1e3:8.2f} ms   {t / times[peer]:6.2f}x (time / lazyk's)")


if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000,
         int(sys.argv[2]) if len(sys.argv) > 2 else None)

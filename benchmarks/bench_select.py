"""Selection and gather against Awkward Array at 1e6 rows (not in CI).

    python benchmarks/bench_select.py [rows] [repeats]

Rows of Poisson(4) float64 values in [0, 1). Each case a median of `repeats` timed runs
after a warm-up (compile) run, both answers checked equal first:
- `x[x > 0.5].sum(axis=-1)`: lazyk fuses the selection into the fold (one loop nest, no
  count pass); Awkward builds the mask, the selected array, then sums.
- `x[x > 0.5]`: the selection itself (lazyk: a count pass, then the fill pass).
- `argmax(x, axis=1)`: one nest (Awkward: its reducer).
- `x[argmax(x, axis=1, keepdims=True)]`: lazyk's argmax nest, then the gather nest (the
  positions' fixed size-1 rows need no count pass); Awkward's argmax, then its jagged slice.
Prints medians (ms) and the ratio Awkward / lazyk (the machine may be shared: ratios of one
interleaved run are the figure, not the absolute times)."""
from __future__ import annotations

import statistics
import sys
import time

import awkward as ak
import numpy as np

import lazyk


def median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main(rows: int = 1_000_000, repeats: int = 5) -> None:
    rng = np.random.default_rng(7)
    counts = rng.poisson(4, rows)
    offsets = np.zeros(rows + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    values = rng.random(int(offsets[-1]))
    x = lazyk.from_offsets(offsets, values)
    a = ak.Array(ak.contents.ListOffsetArray(ak.index.Index64(offsets),
                                             ak.contents.NumpyArray(values)))
    cases = {
        "x[x > 0.5].sum(axis=-1)": (
            lambda: x[x > 0.5].sum(axis=-1).to_numpy(),
            lambda: ak.to_numpy(ak.sum(a[a > 0.5], axis=-1))),
        "x[x > 0.5]": (
            lambda: x[x > 0.5].eval(),
            lambda: a[a > 0.5]),
        "argmax(x, axis=1)": (
            lambda: lazyk.argmax(x, axis=1).eval(),
            lambda: ak.argmax(a, axis=1)),
        "x[argmax(x, axis=1, keepdims=True)]": (
            lambda: x[lazyk.argmax(x, axis=1, keepdims=True)].eval(),
            lambda: a[ak.argmax(a, axis=1, keepdims=True)]),
    }
    print(f"{rows:,} rows, {len(values):,} values; median of {repeats} (ms)")
    for name, (lz, aw) in cases.items():
        got, want = lz(), aw()  # warm-up: compiles; and the answers agree
        if isinstance(got, np.ndarray):
            assert np.allclose(got, want)
        elif name.startswith("argmax"):
            assert got.to_list() == ak.to_list(want)
        else:
            assert ak.to_list(ak.flatten(want, axis=None)) == \
                ak.to_list(ak.flatten(lazyk.to_awkward(got), axis=None))
        tl, ta = [], []
        for _ in range(repeats):  # interleaved: both see the same machine load
            tl.append(median_ms(lz, 1))
            ta.append(median_ms(aw, 1))
        ml, ma = statistics.median(tl), statistics.median(ta)
        print(f"{name:38s} lazyk {ml:7.1f}   awkward {ma:7.1f}   awkward/lazyk {ma / ml:5.1f}x")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))

"""Ragged (`var`) and missing-value (`?T`) workloads: lazyk against Awkward Array and NumPy.

Data: ~1e7 float64 values in ~1e6 rows of random lengths 0-20 (`--rows`), and `var * var`
data of about the same size. Workloads:

  a  (x*2 + y).sum(axis=-1)
  b  x - x.mean(axis=-1, keepdims=True)
  c  sqrt(x*x + y*y).max(axis=-1)          rows of length 1-20 (max of nothing has no value)
  d  x2.sum(axis=-1) on var * var data     ~1e5 outer rows, 0-20 rows of 0-20 values each
  e  xm.sum(axis=-1, skipna=True)          ?float64, 10 % missing
  f  building the array from NumPy offsets + content
  g  std(x, axis=-1)                       (ak.std; NumPy: two passes over reduceat)
  h  firsts(x)                             None for an empty row
  i  fill_none(xm, 0.0)                    ?float64, 10 % missing
  j  num(xq)                               ?var rows, 10 % missing (None for those)
  k  cumsum(x, axis=-1)                    Awkward has none: flatten, np.cumsum, unflatten
  l  sort(x, axis=-1)
  m  cos(x).sum(axis=-1)                   rows of 0-1 values (math calls in short rows)
  n  x[argmax(x, axis=1, keepdims=True)]
  o  sort(x, axis=-1)                      rows Poisson(4)
  p  (x * 2)[:, 1:]                        rows Poisson(4)
  q  xm*2 + 1                              ?float64, 10 % missing (elementwise)

Peers, on the same data: Awkward Array (ak.* on layouts built over the same NumPy buffers),
NumPy on flat content + offsets (np.add.reduceat and friends, empty rows patched), and lazyk
today. lazyk inputs are built with `lazyk.from_offsets` over the same NumPy offsets and
content (no copy, O(1): the rows are checked where kernels read them). Where lazyk refuses a
workload the row says `refused: <error>`.

Every tool's answer is checked against NumPy's on a small copy of the data first. Timing is
interleaved so that a noisy second on a shared machine falls on every tool alike: each of
`--repeat` rounds times one sample of every tool in turn (the order rotates from round to
round), and a tool's time is the median of its samples; one method for every tool, no
sample dropped. A sample is one call, or for calls under 1 ms a batch of calls (the same
number in every round, chosen at warm-up so that a batch takes about 1 ms) divided by its
count. `x ak` is Awkward's median / the tool's median over the same rounds (> 1: faster
than Awkward); GB/s counts the bytes each workload must read and write (content, offsets,
mask, result) against the copy bandwidth measured here with NumPy (read + write). `--json`
also holds every sample and, per round, Awkward's sample / the tool's.

    python benchmarks/bench_ragged.py --quick
    python benchmarks/bench_ragged.py --rows 1000000 --repeat 7 --json ragged.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

import lazyk

try:
    import awkward as ak
except ImportError:  # the Awkward column says "not installed"
    ak = None


# ---------------------------------------------------------------- data
def make_rows(rng, n_rows: int, lo: int, hi: int):
    """(offsets int64[n_rows + 1], content float64) with row lengths uniform in lo..hi."""
    lengths = rng.integers(lo, hi + 1, n_rows)
    offsets = np.zeros(n_rows + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets, rng.standard_normal(int(offsets[-1]))


def lazyk_var(offsets, content, mask=None):
    """`N * var * float64` (or `?float64` with `mask`, True = present) over the offsets and
    content in place (`lazyk.from_offsets`); a mask is copied into lazyk's mask form."""
    if mask is not None:
        content = lazyk.array(np.ma.masked_array(content, mask=~mask))
    return lazyk.from_offsets(offsets, content)


def lazyk_var_var(outer, inner, content):
    """`N * var * var * float64`: outer offsets into the inner rows, inner into content."""
    return lazyk.from_offsets(outer, lazyk.from_offsets(inner, content))


def ak_var(offsets, content, mask=None):
    if ak is None:
        return None
    c = ak.contents.NumpyArray(content)
    if mask is not None:
        c = ak.contents.ByteMaskedArray(ak.index.Index8(mask.view(np.int8)), c, valid_when=True)
    return ak.Array(ak.contents.ListOffsetArray(ak.index.Index64(offsets), c))


def ak_qvar(offsets, content, rowmask):
    """`?var * float64`: rows present where `rowmask` is True."""
    if ak is None:
        return None
    rows = ak.contents.ListOffsetArray(ak.index.Index64(offsets),
                                       ak.contents.NumpyArray(content))
    return ak.Array(ak.contents.ByteMaskedArray(ak.index.Index8(rowmask.view(np.int8)), rows,
                                                valid_when=True))


def ak_var_var(outer, inner, content):
    if ak is None:
        return None
    c = ak.contents.ListOffsetArray(ak.index.Index64(inner), ak.contents.NumpyArray(content))
    return ak.Array(ak.contents.ListOffsetArray(ak.index.Index64(outer), c))


# ---------------------------------------------------------------- NumPy on offsets + content
def np_row_reduce(ufunc, values, offsets, empty):
    """ufunc.reduceat over rows; empty rows (where reduceat returns a neighbour) get `empty`."""
    n = len(offsets) - 1
    if not len(values):
        return np.full(n, empty)
    starts = np.minimum(offsets[:-1], len(values) - 1)
    out = ufunc.reduceat(values, starts)
    out[offsets[1:] == offsets[:-1]] = empty
    return out


def build(rows: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    off, x = make_rows(rng, rows, 0, 20)
    y = rng.standard_normal(len(x))
    off1, x1 = make_rows(rng, rows, 1, 20)
    y1 = rng.standard_normal(len(x1))
    n_outer = max(rows // 10, 1)
    outer, _ = make_rows(rng, n_outer, 0, 20)
    inner, x2 = make_rows(rng, int(outer[-1]), 0, 20)
    mask = rng.random(len(x)) >= 0.10
    rowmask = rng.random(rows) >= 0.10
    off01 = np.concatenate([[0], np.cumsum(rng.integers(0, 2, rows))]).astype(np.int64)
    x01 = rng.standard_normal(int(off01[-1]))  # rows of 0 or 1 value
    # rows of Poisson(4) values, as the jets of collision events
    offp = np.concatenate([[0], np.cumsum(rng.poisson(4, rows))]).astype(np.int64)
    xp = rng.standard_normal(int(offp[-1]))
    return dict(off=off, x=x, y=y, off1=off1, x1=x1, y1=y1, outer=outer, inner=inner, x2=x2,
                mask=mask, rowmask=rowmask, off01=off01, x01=x01, offp=offp, xp=xp)


def workloads(d: dict) -> list:
    """(key, title, bytes moved, {tool: (setup, call)}): setup builds inputs once (untimed),
    call(inputs) runs the workload; results go to check()."""
    off, x, y, off1, x1, y1 = d["off"], d["x"], d["y"], d["off1"], d["x1"], d["y1"]
    outer, inner, x2, mask = d["outer"], d["inner"], d["x2"], d["mask"]
    n, n1, nv = len(off) - 1, len(off1) - 1, len(x)
    lens = np.diff(off)

    def np_a(_):
        return np_row_reduce(np.add, x * 2 + y, off, 0.0)

    def np_b(_):
        with np.errstate(invalid="ignore"):  # empty rows: 0 / 0, repeated zero times
            m = np_row_reduce(np.add, x, off, 0.0) / lens
        return x - np.repeat(m, lens)

    def np_c(_):
        return np_row_reduce(np.maximum, np.sqrt(x1 * x1 + y1 * y1), off1, np.nan)

    def np_d(_):
        return np_row_reduce(np.add, x2, inner, 0.0)

    def np_e(_):
        return np_row_reduce(np.add, np.where(mask, x, 0.0), off, 0.0)

    def np_f(_):  # NumPy's "array" is the two buffers: checking the offsets is all there is
        if off[0] != 0 or off[-1] != nv or np.any(off[1:] < off[:-1]):
            raise ValueError("bad offsets")
        return off

    rowmask = d["rowmask"]
    starts = np.minimum(off[:-1], max(nv - 1, 0))
    rowid = np.repeat(np.arange(n), lens)

    def np_g(_):
        with np.errstate(invalid="ignore", divide="ignore"):
            m = np_row_reduce(np.add, x, off, 0.0) / lens
            dev = x - np.repeat(m, lens)
            return np.sqrt(np_row_reduce(np.add, dev * dev, off, 0.0) / lens)

    def np_h(_):
        return np.where(lens > 0, x[starts] if nv else 0.0, np.nan)

    def np_i(_):
        return np.where(mask, x, 0.0)

    def np_j(_):
        return np.where(rowmask, lens, -1)

    def np_k(_):
        cs = np.concatenate([[0.0], np.cumsum(x)])
        return cs[1:] - np.repeat(cs[off[:-1]], lens)

    def np_l(_):
        return x[np.lexsort((x, rowid))]

    off01, x01 = d["off01"], d["x01"]

    def np_m(_):
        return np_row_reduce(np.add, np.cos(x01), off01, 0.0)

    offp, xp = d["offp"], d["xp"]
    lensp = np.diff(offp)

    def np_o(_):
        return xp[np.lexsort((xp, np.repeat(np.arange(len(lensp)), lensp)))]

    def np_p(_):  # every value but each row's first
        return (xp * 2)[np.arange(len(xp)) - np.repeat(offp[:-1], lensp) >= 1]

    def np_q(_):  # (NumPy's masked arrays keep the mask apart: the values, NaN if missing)
        return np.where(mask, x * 2 + 1, np.nan)

    def np_n(_):  # each row's largest value (its first position: a row's max is in it)
        best = np_row_reduce(np.maximum, x, off, np.nan)
        return best

    def ak_k(a):  # no ak.cumsum: a running sum over the flat values, each row's start taken off
        counts = ak.num(a[0])
        cs = np.cumsum(ak.to_numpy(ak.flatten(a[0])))
        before = np.concatenate([[0.0], cs])[np.asarray(a[0].layout.offsets)[:-1]]
        return ak.unflatten(cs - np.repeat(before, counts), counts)

    def lz(fn, *make):
        return (lambda: tuple(m() for m in make), lambda a: fn(*a).eval())

    lx, ly = (lambda: lazyk_var(off, x)), (lambda: lazyk_var(off, y))
    lx1, ly1 = (lambda: lazyk_var(off1, x1)), (lambda: lazyk_var(off1, y1))
    W = [
        ("a", "(x*2 + y).sum(axis=-1)", 8 * (2 * nv + n + 1 + n), {
            "numpy": (None, np_a),
            "awkward": (lambda: (ak_var(off, x), ak_var(off, y)),
                        lambda a: ak.sum(a[0] * 2 + a[1], axis=-1)),
            "lazyk": lz(lambda p, q: (p * 2 + q).sum(axis=-1), lx, ly)}),
        ("b", "x - x.mean(axis=-1, keepdims=True)", 8 * (2 * nv + n + 1), {
            "numpy": (None, np_b),
            "awkward": (lambda: (ak_var(off, x),),
                        lambda a: a[0] - ak.mean(a[0], axis=-1, keepdims=True)),
            "lazyk": lz(lambda p: p - p.mean(axis=-1, keepdims=True), lx)}),
        ("c", "sqrt(x*x + y*y).max(axis=-1), rows 1-20", 8 * (2 * len(x1) + n1 + 1 + n1), {
            "numpy": (None, np_c),
            "awkward": (lambda: (ak_var(off1, x1), ak_var(off1, y1)),
                        lambda a: ak.max(np.sqrt(a[0] * a[0] + a[1] * a[1]), axis=-1)),
            "lazyk": lz(lambda p, q: lazyk.sqrt(p * p + q * q).max(axis=-1), lx1, ly1)}),
        ("d", "var * var: x.sum(axis=-1)", 8 * (len(x2) + len(inner) + len(outer) + len(inner)), {
            "numpy": (None, np_d),
            "awkward": (lambda: (ak_var_var(outer, inner, x2),), lambda a: ak.sum(a[0], axis=-1)),
            "lazyk": lz(lambda p: p.sum(axis=-1), lambda: lazyk_var_var(outer, inner, x2))}),
        ("e", "?float64 10% missing: sum(skipna)", 9 * nv + 8 * (n + 1 + n), {
            "numpy": (None, np_e),
            "awkward": (lambda: (ak_var(off, x, mask),), lambda a: ak.sum(a[0], axis=-1)),
            "lazyk": lz(lambda p: p.sum(axis=-1, skipna=True), lambda: lazyk_var(off, x, mask))}),
        ("f", "construct from offsets + content", 8 * (nv + n + 1), {
            "numpy": (None, np_f),
            "awkward": (None, lambda _: ak_var(off, x)),
            "lazyk": (None, lambda _: lazyk_var(off, x))}),
        ("g", "std(x, axis=-1)", 8 * (nv + n + 1 + n), {
            "numpy": (None, np_g),
            "awkward": (lambda: (ak_var(off, x),), lambda a: ak.std(a[0], axis=-1)),
            "lazyk": lz(lambda p: lazyk.std(p, axis=-1), lx)}),
        ("h", "firsts(x)", 8 * (n + 1) + 9 * n, {
            "numpy": (None, np_h),
            "awkward": (lambda: (ak_var(off, x),), lambda a: ak.firsts(a[0])),
            "lazyk": lz(lazyk.firsts, lx)}),
        ("i", "?float64 10% missing: fill_none(x, 0)", 9 * nv + 8 * nv, {
            "numpy": (None, np_i),
            "awkward": (lambda: (ak_var(off, x, mask),), lambda a: ak.fill_none(a[0], 0.0)),
            "lazyk": lz(lambda p: lazyk.fill_none(p, 0.0), lambda: lazyk_var(off, x, mask))}),
        ("j", "?var rows 10% missing: num(x)", 8 * (n + 1) + n + 9 * n, {
            "numpy": (None, np_j),
            "awkward": (lambda: (ak_qvar(off, x, rowmask),), lambda a: ak.num(a[0])),
            "lazyk": lz(lazyk.num, lambda: lazyk.from_offsets(off, x, validity=rowmask))}),
        ("k", "cumsum(x, axis=-1)", 8 * (2 * nv + n + 1), {
            "numpy": (None, np_k),
            "awkward": (lambda: (ak_var(off, x),), ak_k),
            "lazyk": lz(lambda p: lazyk.cumsum(p, axis=-1), lx)}),
        ("l", "sort(x, axis=-1)", 8 * (2 * nv + n + 1), {
            "numpy": (None, np_l),
            "awkward": (lambda: (ak_var(off, x),), lambda a: ak.sort(a[0], axis=-1)),
            "lazyk": lz(lambda p: lazyk.sort(p, axis=-1), lx)}),
        ("m", "cos(x).sum(axis=-1), rows of 0-1", 8 * (len(x01) + 2 * (len(off01) - 1) + 1), {
            "numpy": (None, np_m),
            "awkward": (lambda: (ak_var(off01, x01),), lambda a: ak.sum(np.cos(a[0]), axis=-1)),
            "lazyk": lz(lambda p: lazyk.cos(p).sum(axis=-1), lambda: lazyk_var(off01, x01))}),
        ("n", "x[argmax(x, axis=1, keepdims=True)]", 8 * (2 * nv + 2 * n + 1), {
            "numpy": (None, np_n),
            "awkward": (lambda: (ak_var(off, x),),
                        lambda a: a[0][ak.argmax(a[0], axis=1, keepdims=True)]),
            "lazyk": lz(lambda p: p[lazyk.argmax(p, axis=1, keepdims=True)], lx)}),
        ("o", "sort(x, axis=-1), rows Poisson(4)", 8 * (2 * len(xp) + len(offp)), {
            "numpy": (None, np_o),
            "awkward": (lambda: (ak_var(offp, xp),), lambda a: ak.sort(a[0], axis=-1)),
            "lazyk": lz(lambda p: lazyk.sort(p, axis=-1), lambda: lazyk_var(offp, xp))}),
        ("p", "(x * 2)[:, 1:], rows Poisson(4)", 8 * (2 * len(xp) + len(offp)), {
            "numpy": (None, np_p),
            "awkward": (lambda: (ak_var(offp, xp),), lambda a: (a[0] * 2)[:, 1:]),
            "lazyk": lz(lambda p: (p * 2)[:, 1:], lambda: lazyk_var(offp, xp))}),
        ("q", "?float64 10% missing: x*2 + 1", 9 * nv + 9 * nv, {
            "numpy": (None, np_q),
            "awkward": (lambda: (ak_var(off, x, mask),), lambda a: a[0] * 2 + 1),
            "lazyk": lz(lambda p: p * 2 + 1, lambda: lazyk_var(off, x, mask))}),
    ]
    return W


def to_flat(tool, key, r):
    """A tool's result as one float64 NumPy array (NaN for missing), for checking."""
    flat = ("b", "d", "i", "k", "l", "n", "o", "p", "q")  # results with var dims: values in order
    if tool == "awkward":
        if key == "f":
            return np.asarray(r.layout.offsets)
        if key in flat:
            r = ak.flatten(r)
        if key == "j":
            r = ak.fill_none(r, -1)
        return np.asarray(ak.fill_none(r, np.nan), dtype=np.float64)
    if tool == "lazyk":
        if key == "f":
            return np.cumsum([0] + [len(row) for row in r.to_list()])
        v = r.to_list()
        v = [z for row in v for z in row] if key in flat else v
        missing = -1 if key == "j" else np.nan
        return np.array([missing if z is None else z for z in v], dtype=np.float64)
    return np.asarray(r, dtype=np.float64)


METHOD = "interleaved rounds, median per tool, calls under 1 ms timed in batches"
BATCH_SECONDS = 1e-3  # a timed sample lasts at least this long (short calls are batched)


def batch_size(fn) -> int:
    """Calls per timed sample: 1, or enough calls of a fast `fn` to last BATCH_SECONDS."""
    t0 = time.perf_counter()
    fn()
    t = time.perf_counter() - t0
    return 1 if t >= BATCH_SECONDS else min(1000, max(1, int(BATCH_SECONDS / max(t, 1e-7))))


def sample(fn, count: int) -> float:
    """Seconds per call of one timed sample: `count` calls back to back."""
    t0 = time.perf_counter()
    for _ in range(count):
        fn()
    return (time.perf_counter() - t0) / count


def interleaved(calls: dict, repeat: int) -> dict:
    """{tool: per-call seconds of each round}: every round times one sample of every tool,
    in an order that rotates from round to round, so load that comes and goes on the
    machine hits every tool alike."""
    counts = {tool: batch_size(fn) for tool, fn in calls.items()}
    tools, samples = list(calls), {tool: [] for tool in calls}
    for r in range(repeat):
        for tool in tools[r % len(tools):] + tools[:r % len(tools)]:
            samples[tool].append(sample(calls[tool], counts[tool]))
    return samples


def median_time(fn, repeat: int) -> float:
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def copy_bandwidth(nbytes: int, repeat: int) -> float:
    """GB/s of a NumPy copy (bytes read + written), the yardstick for the GB/s column."""
    src = np.ones(nbytes // 8)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    return 2 * src.nbytes / median_time(lambda: np.copyto(dst, src), repeat) / 1e9


def run(args) -> dict:
    tools = ("numpy", "awkward", "lazyk")
    # 1. answers on a small copy of the data
    def chosen(ws):
        return [w for w in ws if not getattr(args, "only", "") or w[0] in args.only]
    small = chosen(workloads(build(300, seed=1)))
    status = {}
    for key, _, _, impls in small:
        ref = None
        for tool in tools:
            setup, call = impls[tool]
            if tool == "awkward" and ak is None:
                status[key, tool] = "not installed"
                continue
            try:
                r = to_flat(tool, key, call(setup() if setup else None))
            except lazyk.NotSupportedError as e:
                status[key, tool] = f"refused: {type(e).__name__}: {str(e)[:90]}"
                continue
            except Exception as e:  # noqa: BLE001 - a failure is reported, not hidden
                status[key, tool] = f"error: {type(e).__name__}: {str(e)[:90]}"
                continue
            ref = r if ref is None else ref
            ok = r.shape == ref.shape and np.allclose(r, ref, equal_nan=True)
            status[key, tool] = "ok" if ok else "WRONG ANSWER"
    # 2. timings on the full data
    data = build(args.rows)
    bw = copy_bandwidth(len(data["x"]) * 8, args.repeat)
    print(f"lazyk {getattr(lazyk, '__version__', '?')}, threads {lazyk.get_num_threads()}; "
          f"awkward {ak.__version__ if ak else 'not installed'}; numpy {np.__version__}")
    print(f"rows {args.rows:,}, values {len(data['x']):,} (var * var: {len(data['x2']):,}); "
          f"{args.repeat} interleaved rounds (the tools take turns; each tool's median, "
          f"calls under 1 ms timed in batches); NumPy copy bandwidth {bw:.1f} GB/s "
          f"(read + write)")
    results = []
    for key, title, nbytes, impls in chosen(workloads(data)):
        row = {"key": key, "workload": title, "bytes": nbytes, "tools": {}}
        calls = {}
        for tool in tools:
            st = status[key, tool]
            if st != "ok":
                row["tools"][tool] = {"status": st}
                continue
            setup, call = impls[tool]
            inputs = setup() if setup else None
            call(inputs)  # warm-up: compiles and caches lazyk's kernel
            calls[tool] = lambda c=call, i=inputs: c(i)
        samples = interleaved(calls, args.repeat)
        calls = None  # frees every tool's inputs before the next workload
        for tool, ts in samples.items():
            t = statistics.median(ts)
            row["tools"][tool] = {"status": "ok", "seconds": t, "gbps": nbytes / t / 1e9,
                                  "samples": ts}
            if "awkward" in samples and tool != "awkward":
                row["tools"][tool]["x_ak_rounds"] = [a / b for a, b in
                                                     zip(samples["awkward"], ts)]
        results.append(row)
    print_table(results, bw)
    return {"rows": args.rows, "repeat": args.repeat, "copy_gbps": bw, "method": METHOD, "values": len(data["x"]),
            "threads": lazyk.get_num_threads(), "results": results,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def _fmt(s: float) -> str:
    return f"{s * 1e3:.1f} ms" if s >= 1e-3 else f"{s * 1e6:.0f} us"


def print_table(results, bw):
    head = ["workload", "numpy", "awkward", "lazyk", "np x ak", "lazyk x ak", "lazyk GB/s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    notes = []
    for r in results:
        t = {k: v.get("seconds") for k, v in r["tools"].items()}
        cells = [f"{r['key']}  {r['workload']}"]
        for tool in ("numpy", "awkward", "lazyk"):
            v = r["tools"][tool]
            cells.append(_fmt(v["seconds"]) if "seconds" in v else v["status"].split(":")[0])
            if "seconds" not in v:
                notes.append(f"{r['key']} {tool}: {v['status']}")
        ak_t = t.get("awkward")
        for tool in ("numpy", "lazyk"):
            cells.append(f"{ak_t / t[tool]:.3g}x" if ak_t and t.get(tool) else "-")
        lz = r["tools"]["lazyk"]
        # construction reads only both ends of the offsets: no bandwidth figure
        cells.append(f"{lz['gbps']:.1f} ({lz['gbps'] / bw:.0%})"
                     if "gbps" in lz and r["key"] != "f" else "-")
        lines.append("| " + " | ".join(cells) + " |")
    print("\n".join(lines))
    for n in notes:
        print("  " + n)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="rows of var data (1e6)")
    p.add_argument("--repeat", type=int, default=7,
                   help="interleaved rounds: timed samples per tool (median)")
    p.add_argument("--quick", action="store_true", help="1e5 rows, 3 repeats")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    p.add_argument("--only", metavar="KEYS", default="",
                   help="run only these workloads (their keys, e.g. 'gkl')")
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.repeat = 100_000, 3
    res = run(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

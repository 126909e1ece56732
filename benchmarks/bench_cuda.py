"""E1-E10 on an NVIDIA GPU: lazyk against CuPy (plain and `cupy.fuse`) and a device copy.

`run(sizes, quick)` returns one row per (case, n, tool); `python benchmarks/bench_cuda.py
--quick` prints them as Markdown. Without a GPU it raises lazyk.DeviceError saying why.
Results on an NVIDIA H200: benchmarks/results-cuda-2026-12-04.md.
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

SIZES = (10**6, 10**7, 10**8)
QUICK_SIZES = (10**6, 10**7)


def load_suite():
    """benchmarks/bench_expr.py, the one definition of E1-E10."""
    path = Path(__file__).with_name("bench_expr.py")
    spec = importlib.util.spec_from_file_location("lazyk_bench_expr", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def time_gpu(fn: Callable[[], Any], sync: Callable[[], None], samples: int) -> float:
    """Median seconds per call of fn, each batch ended by a device synchronize."""
    fn()
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    once = max(time.perf_counter() - t0, 1e-6)
    reps = max(1, int(0.02 / once))
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        times.append((time.perf_counter() - t0) / reps)
    return statistics.median(times)


def _device_inputs(data: dict[str, np.ndarray]) -> dict:
    from lazyk.runtime.device import DeviceArray
    dev = {}
    for name, arr in data.items():
        if arr.flags.c_contiguous:
            dev[name] = DeviceArray.from_numpy(arr)
        else:  # E9: a strided view of a full device array, as on the host
            base = DeviceArray.from_numpy(np.ascontiguousarray(arr.base if arr.base is not None
                                                               else arr))
            dev[name] = DeviceArray(arr.shape, arr.dtype, base.ptr, arr.strides, owner=base)
    return dev


def _cupy_inputs(cp, data: dict[str, np.ndarray]) -> dict:
    out = {}
    for name, arr in data.items():
        if arr.flags.c_contiguous:
            out[name] = cp.asarray(arr)
        else:
            out[name] = cp.asarray(arr.base)[::2]
    return out


def run(sizes=None, quick: bool = False) -> list[dict]:
    """Rows {case, n, tool, seconds, gbps, pct_copy, ok} plus copy and launch-overhead rows."""
    import lazyk
    from lazyk.backend import cuda
    from lazyk.frontend.expr import as_expr

    cuda.get_device(0)  # DeviceError here, with the reason, on a machine without a GPU
    suite = load_suite()
    sizes = tuple(int(float(s)) for s in (sizes or (QUICK_SIZES if quick else SIZES)))
    samples = 3 if quick else 5
    try:
        import cupy as cp
    except ImportError:
        cp = None
    rows: list[dict] = []
    one = as_expr(lazyk.DeviceArray.from_numpy(np.ones(1)))
    rows.append({"case": "launch", "n": 1, "tool": "lazyk-cuda",
                 "seconds": time_gpu(lambda: (one + one).eval(), cuda.synchronize, samples)})
    for n in sizes:
        src = lazyk.DeviceArray.from_numpy(np.ones(n))
        dst = lazyk.DeviceArray.empty((n,), np.float64)
        copy_s = time_gpu(lambda: cuda.copy_device(dst.ptr, src.ptr, 8 * n), cuda.synchronize,
                          samples)
        copy_bw = 16 * n / copy_s
        rows.append({"case": "copy", "n": n, "tool": "device-to-device", "seconds": copy_s,
                     "gbps": copy_bw / 1e9, "pct_copy": 100.0})
        data = suite.make_data(n)
        dev = _device_inputs(data)
        cpd = _cupy_inputs(cp, data) if cp is not None else None
        for case in suite.CASES:
            ref = case.numpy(*(data[k] for k in case.names))
            tools: dict[str, Callable[[], Any]] = {}
            expr = case.lazyk(lazyk, *(as_expr(dev[k]) for k in case.names))
            tools["lazyk-cuda"] = expr.eval
            if cpd is not None:
                args = [cpd[k] for k in case.names]
                tools["cupy"] = lambda args=args, case=case: case.numpy(*args)
                # CuPy's own functions (fuse traces them, not NumPy's), under a kernel name:
                # fuse names the kernel after the function, and '<lambda>' does not compile.
                fused = cp.fuse(kernel_name=f"bench_{case.id}")(
                    lambda *a, case=case: case.lazyk(cp, *a))
                tools["cupy.fuse"] = lambda args=args, fused=fused: fused(*args)
            sync = cuda.synchronize
            for tool, fn in tools.items():
                try:
                    secs = time_gpu(fn, sync, samples)
                    got = fn()
                    host = got.to("cpu") if hasattr(got, "to") and not hasattr(got, "get") \
                        else (got.get() if hasattr(got, "get") else np.asarray(got))
                    ok = bool(np.allclose(host, ref, rtol=1e-12 if not case.reduce else 1e-9))
                except Exception as err:  # noqa: BLE001 - a failing tool is a row, not a crash
                    rows.append({"case": case.id, "n": n, "tool": tool, "error": str(err)})
                    continue
                bw = case.traffic(n) / secs
                rows.append({"case": case.id, "n": n, "tool": tool, "seconds": secs,
                             "gbps": bw / 1e9, "pct_copy": 100 * bw / copy_bw, "ok": ok})
    return rows


def markdown(rows: list[dict]) -> str:
    """Rows as a Markdown table."""
    lines = ["| case | n | tool | time | GB/s | % copy | ok |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['case']} | {r['n']:.0e} | {r['tool']} | error: {r['error']} |||")
            continue
        lines.append(f"| {r['case']} | {r['n']:.0e} | {r['tool']} | {r['seconds'] * 1e6:.1f} us"
                     f" | {r.get('gbps', 0):.1f} | {r.get('pct_copy', 0):.0f} | "
                     f"{'' if r.get('ok', True) else 'WRONG'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--sizes", nargs="*")
    args = p.parse_args(argv)
    from lazyk.errors import DeviceError
    try:
        rows = run(args.sizes, args.quick)
    except DeviceError as err:
        print(f"lazyk bench --device cuda: {err}", file=sys.stderr)
        return 1
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

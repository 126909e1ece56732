"""What `lazyk bench` measures besides the case rows: timing (the median of batches), the
STREAM-style bandwidth each row is compared with, one-off costs (`import lazyk`, cold
compile, load from the disk cache), the call overhead at n = 1, and the machine."""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

import lazyk
from lazyk.frontend.operands import as_expr

BANDWIDTH_N = 10_000_000  # elements of the reference bandwidth kernels, unless set


def has(module: str) -> bool:
    """Whether `module` can be imported (a peer the suite compares with)."""
    return importlib.util.find_spec(module) is not None


def lazyk_ready() -> str | None:
    """None when `lazyk.compile` works on a tiny expression, else why not."""
    try:
        a = lazyk.placeholder("a", "N * float64")
        f = lazyk.compile(a + a)
        x = np.arange(3.0)
        if not np.array_equal(np.asarray(f(x)), x + x):
            return "lazyk.compile gave a wrong result on a + a"
    except Exception as err:  # the front end may not be there yet: report, never fake
        return f"lazyk.compile unavailable ({type(err).__name__}: {err})"
    return None


# --- timing --------------------------------------------------------------------------------------

def calibrate(fn: Callable[[], Any], target_s: float) -> int:
    """Calls per batch so a batch lasts about `target_s` (after a warm-up call)."""
    fn()
    t0 = time.perf_counter()
    fn()
    first = max(time.perf_counter() - t0, 1e-7)
    return max(1, min(100_000, int(target_s / first)))


def time_batch(fn: Callable[[], Any], reps: int) -> float:
    """Seconds per call over one batch of `reps` calls."""
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def time_call(fn: Callable[[], Any], target_s: float, samples: int) -> float:
    """Median seconds per call over `samples` batches of about `target_s` each, after a warm-up."""
    reps = calibrate(fn, target_s)
    return statistics.median(time_batch(fn, reps) for _ in range(samples))


# --- reference bandwidth ------------------------------------------------------------------------

def bandwidth(families: set, samples: int, target_s: float, n: int = BANDWIDTH_N) -> dict[str, dict]:
    """STREAM-style copy (16 B/elem), triad (24 B/elem) and read; fastest tool wins.

    `read` sums one array of 2n elements: the bytes E10 reads at this n. NOTE: with a large
    last-level cache (260 MB on the machines here) a one-array read of n elements (80 MB at
    1e7) partly hits the cache (measured 42-47 GB/s) while E10's 160 MB does not (21-27 GB/s
    for every tool, np.dot included): the limit must move the same bytes as the row.
    """
    rng = np.random.default_rng(1)
    a, b, c, o = rng.random(n), rng.random(n), rng.random(n), np.empty(n)
    r = np.concatenate([a, b])
    cand: dict[str, list[tuple[str, Callable[[], Any]]]] = {
        "copy": [("numpy", lambda: np.copyto(o, a))],
        "triad": [("numpy", lambda: np.add(b, np.multiply(c, 3.0, out=o), out=o))],
        "read": [("numpy", lambda: r.sum())],
        # two streams, as E10 reads: for information (the goal compares E10 with `read`)
        "read2": [("numpy", lambda: np.dot(a, b))],
    }
    ncores = os.cpu_count() or 1
    if "numexpr" in families:
        import numexpr as ne

        ne.set_num_threads(ncores)
        cand["copy"].append(("numexpr", lambda: ne.evaluate("a", local_dict={"a": a}, out=o)))
        cand["triad"].append(("numexpr", lambda: ne.evaluate("b + 3.0*c", local_dict={"b": b, "c": c}, out=o)))
    if "numba" in families:
        import numba

        @numba.njit(parallel=True)
        def nb_copy(a, o):
            for i in numba.prange(a.shape[0]):
                o[i] = a[i]

        @numba.njit(parallel=True)
        def nb_triad(b, c, o):
            for i in numba.prange(b.shape[0]):
                o[i] = b[i] + 3.0 * c[i]

        @numba.njit(parallel=True)
        def nb_read(a):
            s = 0.0
            for i in numba.prange(a.shape[0]):
                s += a[i]
            return s

        cand["copy"].append(("numba par", lambda: nb_copy(a, o)))
        cand["triad"].append(("numba par", lambda: nb_triad(b, c, o)))
        cand["read"].append(("numba par", lambda: nb_read(r)))

        @numba.njit(parallel=True)
        def nb_read2(a, b):
            s = 0.0
            for i in numba.prange(a.shape[0]):
                s += a[i] + b[i]
            return s

        cand["read2"].append(("numba par", lambda: nb_read2(a, b)))
    if "lazyk" in families:
        try:
            lazyk.set_num_threads(ncores)
            pa, pb, pc = (lazyk.placeholder(k, "N * float64") for k in "abc")
            f_copy, f_triad, f_read = lazyk.compile(pa + 0.0), lazyk.compile(pb + 3.0 * pc), lazyk.compile(lazyk.sum(pa))
            f_read2 = lazyk.compile(lazyk.sum(pa + pb))
            cand["copy"].append(("lazyk", lambda: f_copy(a, out=o)))
            cand["triad"].append(("lazyk", lambda: f_triad(b, c, out=o)))
            cand["read"].append(("lazyk", lambda: f_read(r)))
            cand["read2"].append(("lazyk", lambda: f_read2(a, b)))
        except Exception:
            pass
    nbytes = {"copy": 16 * n, "triad": 24 * n, "read": 16 * n, "read2": 16 * n}
    result = {}
    for kind, options in cand.items():
        best = None
        for name, fn in options:
            try:
                t = time_call(fn, target_s, samples)
            except Exception:
                continue
            if best is None or t < best[1]:
                best = (name, t)
        result[kind] = {"tool": best[0], "seconds": best[1], "gbps": nbytes[kind] / best[1] / 1e9}
        print(f"  bandwidth {kind:5s}: {result[kind]['gbps']:6.1f} GB/s ({best[0]})", flush=True)
    return result


# --- one-off costs -------------------------------------------------------------------------------

_COMPILE_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
import lazyk
t_import = time.perf_counter() - t0
sys.path.insert(0, {suite_dir!r})
import importlib.util
spec = importlib.util.spec_from_file_location("lazyk_bench_expr", {suite_path!r})
suite = importlib.util.module_from_spec(spec); sys.modules[spec.name] = suite; spec.loader.exec_module(suite)
data = suite.make_data(1000)
times = {{}}
for case in suite.CASES:
    try:
        t0 = time.perf_counter()
        f = suite.lazyk_compiled(case, data)
        f(*[data[k] for k in case.names])
        times[case.id] = (time.perf_counter() - t0) * 1e3
    except Exception as err:
        times[case.id] = None
print(json.dumps({{"import_ms": t_import * 1e3, "compile_ms": times}}))
"""


def one_off_costs(suite_path: str, lazyk_ok: bool) -> dict[str, Any]:
    """`import lazyk` time, cold compile per kernel, and load from the disk cache in a new process."""
    res: dict[str, Any] = {}
    code = "import time; t = time.perf_counter(); import lazyk; print((time.perf_counter() - t) * 1e3)"
    imports = []
    for _ in range(3):
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if p.returncode == 0:
            imports.append(float(p.stdout.strip().splitlines()[-1]))
    res["import_ms"] = statistics.median(imports) if imports else None
    if not lazyk_ok:
        return res
    script = _COMPILE_SCRIPT.format(suite_dir=str(Path(suite_path).parent), suite_path=suite_path)
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, LAZYK_CACHE_DIR=cache)
        runs = []
        for _ in range(2):  # first: empty cache (cold); second: a new process that loads from disk
            p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
            runs.append(json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else None)
    if runs[0]:
        res["cold_compile_ms"] = runs[0]["compile_ms"]
    if runs[1]:
        res["disk_cache_load_ms"] = runs[1]["compile_ms"]
    return res


def call_overhead(samples: int) -> dict[str, float]:
    """Microseconds per call of `a + b` at n = 1, per tool and path."""
    a, b, o = np.ones(1), np.ones(1), np.empty(1)
    rows: dict[str, Callable[[], Any]] = {"numpy a+b": lambda: a + b}
    if has("numexpr"):
        import numexpr as ne

        rows["numexpr evaluate"] = lambda: ne.evaluate("a + b", local_dict={"a": a, "b": b})
    if has("numba"):
        import numba

        add = numba.njit(lambda a, b: a + b)
        add(a, b)
        rows["numba njit"] = lambda: add(a, b)
    if lazyk_ready() is None:
        pa, pb = lazyk.placeholder("a", "N * float64"), lazyk.placeholder("b", "N * float64")
        f = lazyk.compile(pa + pb)
        rows["lazyk compiled f(a, b)"] = lambda: f(a, b)
        rows["lazyk compiled f(a, b, out=)"] = lambda: f(a, b, out=o)
        rows["lazyk graph built on the spot"] = lambda: lazyk.evaluate(as_expr(a) + as_expr(b))
        la, lb = lazyk.array(a), lazyk.array(b)
        local = {"a": a, "b": b}
        rows["lazyk evaluate('a + b')"] = lambda: lazyk.evaluate("a + b", local_dict=local)
        rows["lazyk (a + b).eval()"] = lambda: (la + lb).eval()
    res = {}
    for name, fn in rows.items():
        try:
            res[name] = time_call(fn, 0.01, samples) * 1e6
        except Exception as err:
            print(f"  overhead {name}: failed ({type(err).__name__}: {err})", flush=True)
    return res


# --- the machine --------------------------------------------------------------------------------

def versions() -> dict[str, str]:
    out = {}
    for mod in ("lazyk", "llvmlite", "numexpr", "numba"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:
            out[mod] = "not installed"
    return out


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def llc_mb() -> float | None:
    """The last-level cache size in MB (Linux sysfs), or None."""
    sizes = []
    for f in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = f.read_text().strip()
        unit = {"K": 1e-3, "M": 1.0, "G": 1e3}.get(text[-1:], 1e-6)
        try:
            sizes.append(float(text.rstrip("KMG")) * unit)
        except ValueError:
            pass
    return max(sizes) if sizes else None


def count_arg(text: str) -> int:
    """A positive element count ('1e6' too), or argparse's usage error."""
    try:
        n = int(float(text))
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return n

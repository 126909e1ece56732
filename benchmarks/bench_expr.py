"""The E1-E10 expression suite: one definition per case for every tool, on shared data.

`lazyk bench` (lazyk/bench.py) loads this file and times each case with each tool. A tool that is
not installed is skipped with a note; nothing here is stubbed. Run directly: `python
benchmarks/bench_expr.py --quick` is the same as `lazyk bench --quick`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

ROW = 1000  # E8: rows of 1000 elements


@dataclass(frozen=True)
class Case:
    """One benchmark expression, written once per tool."""

    id: str
    text: str                       # numexpr syntax, also the label
    names: tuple[str, ...]          # inputs, in call order
    numpy: Callable[..., Any]       # reference result, fresh output
    loop: str                       # element i in Python syntax for the Numba loop kernels
    lazyk: Callable[..., Any]       # (lazyk module, *lazy inputs) -> expression
    reduce: bool = False
    traffic: Callable[[int], int] = lambda n: 0  # bytes moved per call (whole cache lines)


def _ew(k: int) -> Callable[[int], int]:
    """k arrays of n float64 read or written once."""
    return lambda n: 8 * k * n


CASES: tuple[Case, ...] = (
    Case("E1", "a + b", ("a", "b"), lambda a, b: a + b, "a[i] + b[i]",
         lambda L, a, b: a + b, traffic=_ew(3)),
    Case("E2", "2*a + 3*b - c", ("a", "b", "c"), lambda a, b, c: 2 * a + 3 * b - c,
         "2.0 * a[i] + 3.0 * b[i] - c[i]", lambda L, a, b, c: 2 * a + 3 * b - c, traffic=_ew(4)),
    Case("E3", "a*b + c*d", ("a", "b", "c", "d"), lambda a, b, c, d: a * b + c * d,
         "a[i] * b[i] + c[i] * d[i]", lambda L, a, b, c, d: a * b + c * d, traffic=_ew(5)),
    Case("E4", "(a - b) / (a + b + 1.0)", ("a", "b"), lambda a, b: (a - b) / (a + b + 1.0),
         "(a[i] - b[i]) / (a[i] + b[i] + 1.0)", lambda L, a, b: (a - b) / (a + b + 1.0),
         traffic=_ew(3)),
    Case("E5", "sqrt(a*a + b*b)", ("a", "b"), lambda a, b: np.sqrt(a * a + b * b),
         "math.sqrt(a[i] * a[i] + b[i] * b[i])", lambda L, a, b: L.sqrt(a * a + b * b),
         traffic=_ew(3)),
    Case("E6", "sin(a) * exp(-b)", ("a", "b"), lambda a, b: np.sin(a) * np.exp(-b),
         "math.sin(a[i]) * math.exp(-b[i])", lambda L, a, b: L.sin(a) * L.exp(-b),
         traffic=_ew(3)),
    Case("E7", "where(a > b, a - b, b - a)", ("a", "b"), lambda a, b: np.where(a > b, a - b, b - a),
         "a[i] - b[i] if a[i] > b[i] else b[i] - a[i]",
         lambda L, a, b: L.where(a > b, a - b, b - a), traffic=_ew(3)),
    Case("E8", "a2*r + k", ("a2", "r", "k"), lambda a2, r, k: a2 * r + k,
         "a2[i, j] * r[j] + k[i, 0]", lambda L, a2, r, k: a2 * r + k,
         traffic=lambda n: 8 * (2 * n + n // ROW + ROW)),
    # x[::2] drags whole cache lines through memory: 2n elements read per operand.
    Case("E9", "x[::2] + y[::2]", ("xs", "ys"), lambda xs, ys: xs + ys, "xs[i] + ys[i]",
         lambda L, xs, ys: xs + ys, traffic=lambda n: 8 * (4 * n + n)),
    Case("E10", "sum(a*b)", ("a", "b"), lambda a, b: np.sum(a * b), "a[i] * b[i]",
         lambda L, a, b: L.sum(a * b), reduce=True, traffic=_ew(2)),
)


def make_data(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """The inputs every tool sees: a, b, c, d of n float64; E8's a2, r, k; E9's strided views."""
    rng = np.random.default_rng(seed)
    d = {name: rng.uniform(0.5, 2.0, n) for name in "abcd"}
    m = max(1, n // ROW)
    d["a2"] = rng.uniform(0.5, 2.0, (m, ROW))
    d["r"] = rng.uniform(0.5, 2.0, ROW)
    d["k"] = rng.uniform(0.5, 2.0, (m, 1))
    x, y = rng.uniform(0.5, 2.0, 2 * n), rng.uniform(0.5, 2.0, 2 * n)
    d["xs"], d["ys"] = x[::2], y[::2]
    return d


def out_for(case: Case, data: dict[str, np.ndarray]) -> np.ndarray | None:
    """A preallocated output of the case's result shape (None for reductions)."""
    if case.reduce:
        return None
    return np.empty(np.broadcast_shapes(*(data[k].shape for k in case.names)))


# --- peers -----------------------------------------------------------------------------------

def numexpr_fn(case: Case, data: dict[str, np.ndarray], out: np.ndarray | None) -> Callable[[], Any]:
    """numexpr evaluating the case's string (thread count is set by the caller)."""
    import numexpr as ne

    local = {k: data[k] for k in case.names}
    text = case.text.replace("x[::2]", "xs").replace("y[::2]", "ys")
    if out is None:
        return lambda: ne.evaluate(text, local_dict=local)
    return lambda: ne.evaluate(text, local_dict=local, out=out)


def _numba_source(case: Case, parallel: bool, fresh: bool) -> str:
    """Loop kernel text: prange over the outer dimension, fresh output allocated inside."""
    args = ", ".join(case.names)
    rng = "prange" if parallel else "range"
    if case.reduce:
        return (f"def kernel({args}):\n    s = 0.0\n    for i in {rng}({case.names[0]}.shape[0]):\n"
                f"        s += {case.loop}\n    return s\n")
    if case.id == "E8":
        head = "    out = np.empty(a2.shape)\n" if fresh else ""
        body = (f"    for i in {rng}(a2.shape[0]):\n        for j in range(a2.shape[1]):\n"
                f"            out[i, j] = {case.loop}\n")
    else:
        head = f"    out = np.empty({case.names[0]}.shape[0])\n" if fresh else ""
        body = f"    for i in {rng}({case.names[0]}.shape[0]):\n        out[i] = {case.loop}\n"
    sig = args if fresh else args + ", out"
    ret = "    return out\n"
    return f"def kernel({sig}):\n{head}{body}{ret}"


def numba_fn(case: Case, parallel: bool, fresh: bool) -> Callable[..., Any]:
    """A Numba @njit loop kernel for the case (compiled at its first call)."""
    import numba

    scope: dict[str, Any] = {"np": np, "math": math, "prange": numba.prange}
    exec(_numba_source(case, parallel, fresh), scope)
    return numba.njit(parallel=parallel, fastmath=False, cache=False)(scope["kernel"])


# --- lazyk ------------------------------------------------------------------------------------

def _type_text(arr: np.ndarray, name: str) -> str:
    """A placeholder type for `arr`: symbolic outer dim `N`, fixed inner dims (E8's rows)."""
    dims = [str(arr.shape[0])] if name == "r" else ["N"] + [str(s) for s in arr.shape[1:]]
    return " * ".join(dims + ["float64"])


def lazyk_compiled(case: Case, data: dict[str, np.ndarray]) -> Callable[..., Any]:
    """`lazyk.compile` of the case over typed placeholders; call as f(*inputs, out=...)."""
    import lazyk

    leaves = [lazyk.placeholder(k, _type_text(data[k], k)) for k in case.names]
    return lazyk.compile(case.lazyk(lazyk, *leaves))


def lazyk_evaluate_fn(case: Case, data: dict[str, np.ndarray],
                      out: np.ndarray | None) -> Callable[[], Any]:
    """`lazyk.evaluate` of the case's numexpr string, exactly as `numexpr_fn` calls numexpr."""
    import lazyk

    local = {k: data[k] for k in case.names}
    text = case.text.replace("x[::2]", "xs").replace("y[::2]", "ys")
    if out is None:
        return lambda: lazyk.evaluate(text, local_dict=local)
    return lambda: lazyk.evaluate(text, local_dict=local, out=out)


def lazyk_eval_fn(case: Case, data: dict[str, np.ndarray]) -> Callable[[], Any]:
    """The expression built from lazyk arrays and `.eval()`-ed on every call (a lazyk Array)."""
    import lazyk

    leaves = [lazyk.array(data[k]) for k in case.names]
    return lambda: case.lazyk(lazyk, *leaves).eval()


def lazyk_on_the_spot(case: Case, data: dict[str, np.ndarray]) -> Any:
    """Build the graph from the arrays and evaluate it at once (the uncompiled path)."""
    import lazyk
    from lazyk.frontend.expr import as_expr

    leaves = [as_expr(data[k]) for k in case.names]
    expr = case.lazyk(lazyk, *leaves)
    return lazyk.evaluate(expr)


if __name__ == "__main__":
    import sys

    from lazyk.bench.suite import main

    sys.exit(main(sys.argv[1:]))

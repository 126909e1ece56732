"""Statistics over lazy expressions: `std` / `var` (NumPy's and Awkward's), the weighted
`mean` (and the rule that weights broadcast to the values, the histograms' too), Awkward's
`ptp` and its nan-reductions (`nansum`, `nanmean`, `nanargmax`, ...: the reduction of the values
with NaN left out as missing values are).

Each is a graph of lazyk's own reductions and elementwise work: `std` / `var` two passes
(the mean, then the deviations), each fused into one kernel with the work before it.
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from lazyk import hooks
from lazyk import types as T
from lazyk.arrays import arrmeta as M
from lazyk.arrays.array import Array
from lazyk.arrays.operators import use_row_ops
from lazyk.errors import BindError, DTypeError, NotSupportedError, ShapeError
from lazyk.frontend import ops
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import toposort
from lazyk.frontend.masks import missing, nan_to_none, value_operand
from lazyk.frontend.numpy_rules import normalize_axes
from lazyk.frontend.operands import as_expr
from lazyk.frontend.ops import ELEMENTWISE
from lazyk.frontend.reductions import argmax, argmin, count, reduce
from lazyk.frontend.rowops import flags, num, row_operand, var_dims
from lazyk.frontend.ufuncs import apply, astype, imag, logical_and, maximum, real, sqrt, where


def var(x: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False,
        skipna: bool = False, dtype: Any = None, weight: Any = None) -> Expr:
    """Lazy variance over `axis` (int, tuple, None): the sum of squared deviations from
    the mean over `n - ddof` (n: the values folded; `max(n - ddof, 0)` as NumPy, so no
    values give NaN). Two passes (the mean, then the deviations), each fused into one
    kernel with the work before it. `skipna=True` leaves missing values out, as lazyk's
    other reductions (without it, a missing value makes the result missing).

    The dtype is NumPy's (float32 stays float32, integers give float64, complex its real
    dtype; over var dims the sums are in float64 first; Awkward's `ak.var` is float64);
    `dtype=` an integer sums in it and truncates the mean and the result, as NumPy does.

    `weight=`: Awkward's weighted variance, `sum(w * (x - m)**2) / sum(w)` with `m` the
    weighted mean (`ddof` scales it by `sum(w) / (sum(w) - ddof)`), in float64.

    Example: `lazyk.var(lazyk.array([[1.0, 2.0, 4.0], []]), axis=-1)` is
    `[1.5555555555555556, nan]`.
    """
    if weight is not None:
        return _weighted_spread("var", x, axis, ddof, keepdims, skipna, dtype, weight)
    return _spread("var", x, axis, ddof, keepdims, skipna, dtype)


def std(x: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False,
        skipna: bool = False, dtype: Any = None, weight: Any = None) -> Expr:
    """Lazy standard deviation: the square root of `var` (same arguments and dtypes; an
    integer `dtype=` is a TypeError, as in NumPy; `weight=` as `var`'s).

    Example: `lazyk.std(lazyk.array([[1.0, 3.0], [5.0]]), axis=-1)` is `[1.0, 0.0]`.
    """
    if weight is not None:
        return _weighted_spread("std", x, axis, ddof, keepdims, skipna, dtype, weight)
    return _spread("std", x, axis, ddof, keepdims, skipna, dtype)


def _weighted_spread(name: str, x: Any, axis: Any, ddof: Any, keepdims: bool,
                     skipna: bool, dtype: Any, weight: Any) -> Expr:
    """Awkward's weighted `var` / `std` (float64; a missing value or weight leaves its
    pair out with `skipna`)."""
    if dtype is not None:
        raise NotSupportedError(f"{name} with weight= and dtype=: convert the values first "
                                "(x.astype(...))")
    if isinstance(ddof, (bool, np.bool_)) or not isinstance(ddof, (int, np.integer, float)):
        raise TypeError(f"{name}: ddof must be a number, not {ddof!r}")
    e = astype(_numbers(name, x, "biuf"), np.float64)
    w = astype(_numbers(name, weight, "biuf"), np.float64)
    _weights_fit(e, w, name)
    axes = normalize_axes(axis, e.ndim, name)
    weights = apply("add", apply("multiply", e, 0.0), w)  # (missing where x or w is)
    sumw = reduce("sum", weights, axis=axes, keepdims=True, skipna=skipna)
    dev = e - reduce("sum", apply("multiply", e, w), axis=axes, keepdims=True,
                     skipna=skipna) / sumw
    sumw = reduce("sum", weights, axis=axes, keepdims=keepdims, skipna=skipna)
    got = reduce("sum", w * dev * dev, axis=axes, keepdims=keepdims, skipna=skipna) / sumw
    got = got * (sumw / (sumw - ddof)) if ddof else got
    return sqrt(got) if name == "std" else got


def _spread(name: str, x: Any, axis: Any, ddof: Any, keepdims: bool, skipna: bool,
            dtype: Any) -> Expr:
    e = row_operand(name, x)
    if isinstance(ddof, (bool, np.bool_)) or not isinstance(ddof, (int, np.integer, float)):
        raise TypeError(f"{name}: ddof must be a number, not {ddof!r}")
    axes = normalize_axes(axis, e.ndim, name)
    if e.dtype.kind not in "biufc":
        raise DTypeError(f"{name} of {e.dtype}: numbers only")
    complex_, ints = e.dtype.kind == "c", None  # ints: NumPy's integer dtype= (truncates)
    rows, option = flags(e)
    if dtype is not None:
        out = np.dtype(dtype)
        if out.kind == "b":
            raise TypeError(f"{name} with dtype=bool: pass a number dtype")
        ints = out if out.kind in "iu" else None
        work = out if out.kind in "fciu" else np.dtype(np.float64)
    elif var_dims(e) or builtins.any(rows):  # (in float64, given in NumPy's dtype
        out = np.var(np.ones(2, e.dtype)).dtype  # as `mean` is: Awkward's is float64)
        work = np.dtype(np.complex128 if complex_ else np.float64)
    else:
        out = np.var(np.ones(2, e.dtype)).dtype
        work = np.dtype(np.float32) if e.dtype == np.float16 else \
            np.dtype(np.float64) if e.dtype.kind in "biu" else e.dtype
    xf = astype(e, work) if e.dtype != work else e
    kw = {"axis": axes, "skipna": skipna}
    if ints is None:  # (a mean folds its count with its sum: one pass, no count of its own)
        mean = reduce("mean", xf, keepdims=True, **kw)
    else:
        mean = reduce("sum", xf, keepdims=True, dtype=ints, **kw) / _count(xf, axes, True)
    if complex_ and work.kind == "f":  # (NumPy's: a real mean, complex deviations from it)
        xf = astype(e, np.result_type(work, np.complex64))
    dev = xf - (mean if ints is None else astype(mean, ints))
    square = real(dev) * real(dev) + imag(dev) * imag(dev) if complex_ else dev * dev
    if ints is None and ddof == 0 and not option and not builtins.any(rows):
        # the mean square: sum / count in one pass (a mean of no values that may be
        # missing is missing, where NumPy's 0 / 0 is NaN: the count apart there)
        result = reduce("mean", square, keepdims=keepdims, **kw)
    else:
        ssd = reduce("sum", square, keepdims=keepdims, dtype=ints, **kw)
        n = _count(xf, axes, keepdims)
        left = builtins.max(n - ddof, 0) if type(n) is int else maximum(n - ddof, 0)
        result = ssd / left if ints is None else astype(ssd / left, ints)  # (NumPy truncates)
    result = sqrt(result) if name == "std" else result  # (then the root of that, truncated)
    return astype(result, out) if result.dtype != out else result


def _count(e: Expr, axes: tuple, keepdims: bool) -> Any:
    """How many values a fold of `e` over `axes` takes: an int where every slice holds them
    all (fixed sizes, values that cannot be missing; no kernel counts them), else `count`."""
    rows, option = flags(e)
    if option or builtins.any(rows) or not builtins.all(type(e.shape[a]) is int for a in axes):
        return count(e, axis=axes, keepdims=keepdims)
    return int(np.prod([e.shape[a] for a in axes], dtype=np.int64))


def mean(x: Any, axis: Any = None, keepdims: bool = False, skipna: bool = False,
         dtype: Any = None, initial: Any = None, skipnan: bool = False,
         weight: Any = None) -> Expr:
    """Lazy mean over `axis` (int, tuple, None, negative), `keepdims=`, `skipna=` (leave
    missing values out), `skipnan=` (leave NaN out). `weight=`: Awkward's weighted mean,
    `sum(x * weight) / sum(weight)` over the values (the weights broadcast against `x` as
    elementwise work does; a missing value or weight leaves its pair out with `skipna`).

    Example: `lazyk.mean(lazyk.array([[1.0, 3.0], []]), axis=1, weight=lazyk.array([[3.0,
    1.0], []]))` is `[1.5, nan]`.
    """
    if weight is None:
        return reduce("mean", x, axis=axis, keepdims=keepdims, skipna=skipna, dtype=dtype,
                      initial=initial, skipnan=skipnan)
    if skipnan or initial is not None or dtype is not None:
        raise NotSupportedError("mean with weight= and skipnan=, initial= or dtype=: weigh "
                                "the values first, lazyk.sum(x * w) / lazyk.sum(w)")
    e, w = _numbers("mean", x, "biufc"), _numbers("mean", weight, "biufc")
    _weights_fit(e, w)
    kw = {"axis": axis, "keepdims": keepdims, "skipna": skipna}
    both = apply("multiply", e, w)  # (missing where either is: the pair left out together)
    weights = apply("add", apply("multiply", e, 0), w)
    return apply("true_divide", reduce("sum", both, **kw), reduce("sum", weights, **kw))


def one_list_structure(x: Expr, weights: Expr) -> bool:
    """Whether values and weights are elementwise work over arrays of one list structure
    (`jets.pt` and `jets.eta`: one offsets array), so no row of the values can stretch to
    the weights' (a check that costs no pass)."""
    keys = set()
    for e in (x, weights):
        if any(n.op not in ELEMENTWISE and n.srcs for n in toposort(e.node)):
            return False  # (a selection, a fold, a row operation: rows of their own)
        for v in e.env.values():
            a = getattr(v, "array", v)
            if np.ndim(a) == 0 or isinstance(a, np.ndarray) and a.shape[1:] in ((), (1,)):
                continue  # (one value per row at most: broadcasts into the lists)
            t = getattr(a, "type", None)
            if not (isinstance(a, Array) and isinstance(t, T.FixedDim) and
                    type(t.elem) is T.VarDim and not isinstance(t.elem.elem, T.Dim)):
                return False  # (one level of plain var rows only)
            r = M.rows_at(a.meta, 2)
            keys.add((a.ptr, a.meta[:2], r.width, r.stop_delta, r.length))
    return len(keys) == 1


def histogram_weights(x: Expr, weights: Any) -> Expr:
    """A histogram's weights for values `x`, checked from the types (the rows' lengths are
    checked when it counts: `stretched_axis`)."""
    w = as_expr(weights)
    if w.dtype.kind not in "biuf":
        raise NotSupportedError(f"histogram weights of type {w.type}: real numbers only")
    if w.ndim > x.ndim:
        raise NotSupportedError(f"histogram: the weights ({w.type}) have more dims than "
                                f"the values ({x.type}): the weights broadcast to the "
                                "values, never the values to the weights")
    # (fixed sizes checked here, at once; the axes right-aligned, as they broadcast)
    for k, (nw, nx) in enumerate(zip(w.shape[::-1], x.shape[::-1])):
        if type(nw) is int and type(nx) is int and nw != nx and nw != 1:
            raise ShapeError(f"histogram: the weights ({w.type}) do not broadcast to the "
                             f"values ({x.type}): axis {x.ndim - 1 - k} has {nw} weights "
                             f"for {nx} values")
        if nx == 1 and nw is None:  # (one value against var rows of weights: refused from
            # the types, on one machine as on Dask, whatever the rows' lengths)
            raise NotSupportedError(
                f"histogram: values of a fixed size 1 at axis {x.ndim - 1 - k} ({x.type}) "
                f"with var rows of weights there ({w.type}): give values and weights of one "
                "structure (lazyk.flatten(values, axis=None) and lazyk.flatten(weights, "
                "axis=None), one weight per value)")
    return w


def stretched_axis(x: Expr, weights: Expr) -> int | None:
    """The first axis where a row of one value meets a row of another number of weights
    (the value would be counted once per weight), or None: weights broadcast to the values,
    never the reverse (numpy.average's and numpy.histogram's rule). Var rows are read from
    the offsets (one pass) unless both are fields of one collection."""
    if None not in x.shape + weights.shape or one_list_structure(x, weights):
        return None  # (fixed dims: checked from the shapes)
    both = where(True, x, weights)  # (the rows they pair in)
    for k in range(1, x.ndim):
        if x.shape[k] is None or x.shape[k] == 1:
            gone = logical_and(apply("equal", num(x, axis=k), 1),
                               apply("not_equal", num(both, axis=k), 1))
            got = hooks.evaluate(reduce("any", gone, skipna=True))
            if bool(np.asarray(got.to_numpy() if isinstance(got, Array) else got)):
                return k
    return None


def _weights_fit(e: Expr, w: Expr, name: str = "mean") -> None:
    """ShapeError / NotSupportedError where the values could stretch to the weights."""
    lead = e.ndim - w.ndim
    if lead < 0 or any(isinstance(n, int) and n == 1 and m != 1
                       for n, m in zip(e.shape[lead:], w.shape)):
        raise ShapeError(f"{name}: the weights ({w.type}) would stretch the values ({e.type}): "
                         "weights broadcast to the values, never the reverse")
    try:
        k = stretched_axis(e, w)
    except (BindError, NotSupportedError):  # (placeholders, collections: rows not known)
        raise NotSupportedError(
            f"{name} of {e.type} with weights of type {w.type}: rows of their own, which could "
            "stretch a value's row of length 1; weigh values and weights of one list "
            "structure" + (", or write lazyk.sum(x * w) / lazyk.sum(w)" if name == "mean" else
                           " (compute them first)")) from None
    if k is not None:
        raise ShapeError(f"{name}: the weights ({w.type}) would stretch rows of one value "
                         f"({e.type}) at axis {k} to their own rows: weights broadcast to the "
                         "values")


def ptp(array: Any, axis: int | None = None, keepdims: bool = False,
        mask_identity: bool = True) -> Expr:
    """Lazy `ak.ptp`: the range, max - min, of the present values along `axis` (NaN's rule
    as `lazyk.max`'s); a list with no value gives None (`mask_identity=False`: 0). Over
    fixed dims of values that cannot be missing it is NumPy's `ptp` (its type; an empty
    axis raises as `max`'s).

    Example: `lazyk.ptp(lazyk.array([[1, 5, 2], [], [4]]), axis=1)` is `[4, None, 0]`.
    """
    if not isinstance(mask_identity, (bool, np.bool_)):
        raise TypeError(f"ptp: mask_identity must be True or False, not {mask_identity!r}")
    e = _numbers("ptp", array, "biufc")
    rows, option = flags(e)
    if not option and not builtins.any(rows) and builtins.all(  # fixed dims, no None: NumPy's
            e.shape[a] is not None for a in normalize_axes(axis, e.ndim, "ptp")):
        return apply("subtract", reduce("max", e, axis=axis, keepdims=keepdims),
                     reduce("min", e, axis=axis, keepdims=keepdims))  # (empty: max's error)
    got = apply("subtract", _seeded("max", e, axis, keepdims), _seeded("min", e, axis, keepdims))
    return _none_where_empty(got, e, axis, keepdims, mask_identity)


def _numbers(name: str, x: Any, kinds: str) -> Expr:
    e = value_operand(x)
    if e.dtype.kind not in kinds:
        raise DTypeError(f"{name} of {e.type}: numbers only")
    return e


def _seeded(op: str, e: Expr, axis: Any, keepdims: bool) -> Expr:
    """min / max of the present values, seeded with the fold's identity: an empty list
    gives the identity (`_none_where_empty` masks it) instead of an error."""
    return reduce(op, e, axis=axis, keepdims=keepdims, skipna=True,
                  initial=ops.OPS[op].identity(e.dtype))


def _none_where_empty(got: Expr, e: Expr, axis: Any, keepdims: bool,
                      mask_identity: bool = True) -> Expr:
    """`got` with None (or 0) where `e` has no present value along `axis` (Awkward's
    `mask_identity`)."""
    empty = apply("equal", count(e, axis=axis, keepdims=keepdims), 0)
    return where(empty, missing(got.dtype) if mask_identity else got.dtype.type(0), got)


def _nan_reduction(op: str):
    def fn(array: Any, axis: Any = None, keepdims: bool = False) -> Expr:
        e = _numbers(f"nan{op}", array, "biufc")
        if op in ("sum", "prod", "min", "max", "mean") and not flags(e)[1] and \
                e.dtype.kind == "f" and axis != ():  # (no missing value: the fold skips NaN)
            return _skipping_nan(op, e, axis, keepdims)
        e = nan_to_none(e)
        if op in ("sum", "prod"):  # (an empty list: the identity, as Awkward's)
            return reduce(op, e, axis=axis, keepdims=keepdims, skipna=True)
        if op in ("argmin", "argmax"):  # (missing values skipped; nothing left: None)
            return (argmin if op == "argmin" else argmax)(e, axis=axis, keepdims=keepdims)
        got = _seeded(op, e, axis, keepdims) if op in ("min", "max") else \
            reduce(op, e, axis=axis, keepdims=keepdims, skipna=True) if op == "mean" else \
            (std if op == "std" else var)(e, axis=axis, keepdims=keepdims, skipna=True)
        return _none_where_empty(got, e, axis, keepdims)

    fn.__name__ = fn.__qualname__ = f"nan{op}"
    fn.__doc__ = (f"Lazy `ak.nan{op}`: `{op}` of the values "
                  "with NaN and missing values left out; a list with no value left gives " +
                  ("the fold's identity." if op in ("sum", "prod") else "None."))
    return fn


def _skipping_nan(op: str, e: Expr, axis: Any, keepdims: bool) -> Expr:
    """`nan{op}` of values none of which is missing: the fold skips NaN (one pass, no
    missing values made); a list of NaN only gives None (sum, prod: the identity)."""
    kw = {"axis": axis, "keepdims": keepdims, "skipna": True}  # (missing lists left out)
    if op in ("sum", "prod"):
        return reduce(op, e, skipnan=True, **kw)
    got = reduce(op, e, skipnan=True, **kw,
                 initial=ops.OPS[op].identity(e.dtype) if op != "mean" else None)
    kept = reduce("sum", apply("logical_not", apply("isnan", e)), **kw)
    return where(apply("equal", kept, 0), missing(got.dtype), got)


nansum, nanprod = _nan_reduction("sum"), _nan_reduction("prod")
nanmin, nanmax = _nan_reduction("min"), _nan_reduction("max")
nanstd, nanvar = _nan_reduction("std"), _nan_reduction("var")
nanargmin, nanargmax = _nan_reduction("argmin"), _nan_reduction("argmax")
_nanmean = _nan_reduction("mean")


def nanmean(array: Any, axis: Any = None, keepdims: bool = False, weight: Any = None) -> Expr:
    """Lazy `ak.nanmean`: the mean of the values with NaN and missing values left out
    (`weight=`: weighted, as `lazyk.mean`'s; NaN or missing weights leave their pair out);
    a list with no value left gives None."""
    if weight is None:
        return _nanmean(array, axis, keepdims)
    e = nan_to_none(_numbers("nanmean", array, "biufc"))
    got = mean(e, axis=axis, keepdims=keepdims, skipna=True,
               weight=nan_to_none(_numbers("nanmean", weight, "biufc")))
    return _none_where_empty(got, e, axis, keepdims)


use_row_ops(std=std, var=var)  # (x.std(), x.var())

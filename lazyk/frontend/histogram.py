"""`lazyk.histogram`: numpy.histogram's counts as a lazy reduction over every axis.

The bin of each value is an elementwise expression that follows NumPy's own computation
(`numpy/lib/_histograms_impl.py`) step by step, in the same dtypes: for `bins` equal bins,
values outside `range` are dropped, the index is estimated as ((v - first) / (last - first))
* bins and corrected by one against the edges, each edge computed as `np.linspace` computes
it (in the edges' dtype: float32 data and a range of Python floats give float32 edges); for
`bins` given as edges, the index counts the edges at or below the value (the last bin
closed). NaN and missing values (`?T`) land in no bin. The loop nest then adds each value
to its bin (`codegen.levels.Bins`): each thread fills counters of its own, added up at the
end, so no counter is shared and no atomic is needed. There, equal bins take a shorter
route to the same bins (`Histogram.estimate`): the estimate alone where the value lies
clearly inside a bin, the two corrections against the edges only for values near one.
"""
from __future__ import annotations

import functools
import math
import operator
from typing import Any

import numpy as np

from lazyk import hooks
from lazyk.arrays.array import Array
from lazyk.arrays.array import array as lazyk_array
from lazyk.errors import NotSupportedError
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import ROWS_OP, SELECT_OP
from lazyk.frontend.histogram_rows import lift_row_selection
from lazyk.frontend.leaves import is_text
from lazyk.frontend.missing import option_flags
from lazyk.frontend.operands import as_expr
from lazyk.frontend.reductions import count, folded_rows
from lazyk.frontend.reductions import max as lazy_max
from lazyk.frontend.reductions import min as lazy_min
from lazyk.frontend.statistics import histogram_weights
from lazyk.frontend.structure import renamed, structure_of
from lazyk.frontend.ufuncs import apply, where
from lazyk.lru import Memo

MAX_EDGES = 512  # the most edges of `bins` given as an array (one comparison per value each)


class Histogram:
    """A lazy histogram (`lazyk.histogram`): nothing runs until it is evaluated.

    `.eval()` gives the counts as a lazyk array, `.to_numpy()` (or `np.asarray(h)`) as a
    NumPy array, `.edges` the bin edges; unpacking evaluates both, as numpy.histogram
    returns them: `counts, edges = lazyk.histogram(x, 10, (0, 1))`. Several histograms
    (and expressions) given to `lazyk.evaluate(h1, h2, ...)` run in one pass over the data
    where they read the same rows.
    """

    __slots__ = ("x", "weights", "bins", "range", "density", "_edges", "_uniform", "_index",
                 "_estimate", "_kept_index", "_kept_estimate")

    def __getstate__(self):  # (slots pickle with every protocol, 0 and 1 too)
        return object.__getstate__(self)

    def __init__(self, x: Expr, bins: Any, range: Any, weights: Expr | None, density: bool):
        self.x, self.bins, self.range, self.weights = x, bins, range, weights
        self.density = density
        self._edges: np.ndarray | None = None
        self._uniform: tuple | None = None
        self._index: Expr | None = None
        self._estimate: tuple | None = None
        self._kept_index = self._kept_estimate = None  # (graph(s), the names they read)

    def __repr__(self) -> str:
        n = self.nbins
        return f"<lazyk.Histogram of {self.x.type}: {n} bins, {self.dtype} counts>"

    @property
    def nbins(self) -> int:
        """The number of bins."""
        return self.bins if isinstance(self.bins, int) else len(self.bins) - 1

    @property
    def dtype(self) -> np.dtype:
        """The counts' dtype: int64; the weights' dtype with weights; float64 for
        `density=True` (numpy.histogram's rules)."""
        plain = np.dtype(np.int64) if self.weights is None else self.weights.dtype
        return np.dtype(np.float64) if self.density else plain

    @property
    def shape(self) -> tuple:
        return (self.nbins,)

    @property
    def edges(self) -> np.ndarray:
        """The bin edges (n + 1 of them; `range=None`: from the data's min and max, as the
        last evaluation found them)."""
        self._bin_edges()
        return self._edges

    def reread(self) -> None:
        """Forget edges found from the data (`range=None`): an evaluation reads the data's
        min and max again (arrays may have changed in place since)."""
        if self._key() is None:
            self._edges = self._uniform = self._index = self._estimate = None
            self._kept_index = self._kept_estimate = None

    def _bin_edges(self) -> None:
        if self._edges is not None or not isinstance(self.bins, int):
            self._edges = np.asarray(self.bins) if self._edges is None else self._edges
            return
        if self.range is not None:
            first, last = self.range
        else:  # numpy: the present values' min and max, as scalars of the data's dtype
            dt = self.x.dtype
            top = np.inf if dt.kind == "f" else True if dt.kind == "b" else np.iinfo(dt).max
            low = -np.inf if dt.kind == "f" else False if dt.kind == "b" else np.iinfo(dt).min
            x = folded_rows(self.x)  # (an empty row's max counts nowhere)
            lo, hi, present = hooks.evaluate_many(lazy_min(x, skipna=True, initial=top),
                                                  lazy_max(x, skipna=True, initial=low), count(x))
            if not int(_scalar(present, np.int64)):
                first, last = 0, 1
            else:
                first, last = _scalar(lo, self.x.dtype), _scalar(hi, self.x.dtype)
                if not (np.isfinite(first) and np.isfinite(last)):
                    raise ValueError(f"autodetected range of [{first}, {last}] is not finite")
                if self.x.dtype == bool:  # numpy: bools are histogrammed as uint8
                    first, last = np.uint8(first), np.uint8(last)
        if first == last:  # numpy: an empty range is widened
            first, last = first - 0.5, last + 0.5
        bin_type = np.result_type(first, last, np.empty(0, self.x.dtype))
        if np.issubdtype(bin_type, np.integer):
            bin_type = np.result_type(bin_type, float)
        edges = np.linspace(first, last, self.bins + 1, endpoint=True, dtype=bin_type)
        if np.any(edges[:-1] >= edges[1:]):
            raise ValueError(f"Too many bins for data range. Cannot create {self.bins} "
                             "finite-sized bins.")
        self._edges, self._uniform = edges, (first, last)

    def index(self) -> Expr:
        """Each value's bin (int64; -1: in no bin), as numpy.histogram finds it."""
        if self._index is None:
            node, names = self.kept_index()
            if names != self.x.node.names:  # (over x's inputs, kept so)
                node = renamed(node, names, self.x.node.names)
                _built.put(self._key(), (node, self.x.node.names, self._edges, self._uniform))
            self._index = Expr(node, self.x.env)
        return self._index

    def kept_index(self) -> tuple:
        """(the bin index graph kept for x's structure, the input names it reads: those of
        the x it was built for; `index()` reads x's, a histogram pass renames by position)."""
        if self._kept_index is None:
            key = self._key()
            got = _built.get(key) if key is not None else None
            if got is None:
                self._index = self._bin_index()
                got = (self._index.node, self.x.node.names, self._edges, self._uniform)
                if key is not None:
                    _built.put(key, got)
            node, names, self._edges, self._uniform = got
            self._kept_index = (node, names)
        return self._kept_index

    def _key(self):
        """What the bin index graph depends on (None: not kept: the edges come from the
        data); weighted, a selection's values are binned as they are (rows gathered)."""
        if self.range is None and isinstance(self.bins, int):
            return None
        edges = self.bins if isinstance(self.bins, int) else (self.bins.dtype.str,
                                                              self.bins.tobytes())
        rng = None if self.range is None else tuple((type(v).__name__, repr(v))
                                                    for v in self.range)
        return (structure_of(self.x), edges, rng, self.weights is None)

    def _bin_index(self) -> Expr:
        self._bin_edges()
        x, keep = self._unselected()
        i = self._by_edges(x) if self._uniform is None or not self._linspace_edges() \
            else self._by_range(x)  # (edges the kernel cannot recompute exactly: by edges)
        return i if keep is None else where(keep, i, np.int64(-1))

    def _unselected(self) -> tuple:
        """(values, mask or None). The histogram of `y[mask]` (a bool mask without missing
        elements, no weights) counts y's values where the mask is true: their bins are
        computed in place, and the selection's rows are never gathered (nor the rows of
        a row selection that every array of y and the mask is read through)."""
        x = self.x
        if self.weights is not None:
            return x, None
        y, m = x.node, None
        if y.op == SELECT_OP:
            flags, missing = option_flags(y.srcs[1], x.env)
            if not (missing or any(flags)):  # (a missing mask element: a missing value)
                y, m = y.srcs
        masks = [] if m is None else [m]
        lifted = lift_row_selection((y, *masks), x.env)
        if lifted is not None:
            y, masks = lifted[0], [lifted[-1], *lifted[1:-1]]
        if not masks:
            return x, None
        keep = None
        for m in masks:  # a mask of fewer dims holds for every value of its rows
            k = Expr(m, x.env)
            k = k if m.ndim == y.ndim else k[(slice(None),) * m.ndim + (None,) * (y.ndim -
                                                                               m.ndim)]
            keep = k if keep is None else keep & k
        if not set(keep.env) <= set(x.env):  # (a fold under a new axis reads a new leaf:
            return x, None  # the index reads x's arrays only)
        return Expr(y, x.env), keep

    def estimate(self) -> tuple | None:
        """(estimate, value, edges) where the bins are equal, else None, for a histogram pass
        that finds numpy.histogram's bins without computing two edges per value
        (`codegen.nest_bins`). The estimate (int32 where 2n + 2 fits) is the bin where the
        value lies clearly inside one (further from its edges than any rounding reaches),
        -1 where it is in no bin, else the bin estimated within one of the right one plus
        n + 1: the pass corrects those few against the edges (float64) as numpy.histogram
        does. The value is float32 or float64 (in the edges' dtype), the edges float64; value
        and edges are None where nothing is corrected."""
        if self._estimate is None:
            got, names = self.kept_estimate()
            now = self.x.node.names
            if got and names != now:  # (over x's inputs, kept so)
                i, v, edges = got
                got = (renamed(i, names, now), None if v is None else renamed(v, names, now),
                       edges)
                _built.put(("estimate", self._key()), (got, now))
            self._estimate = got
        if not self._estimate:
            return None
        i, v, edges = self._estimate
        return Expr(i, self.x.env), None if v is None else Expr(v, self.x.env), edges

    def kept_estimate(self) -> tuple:
        """((estimate, value or None, edges), or () where the bins are not equal; the input
        names they read), kept for x's structure as `kept_index` is."""
        if self._kept_estimate is None:
            key = self._key()
            got = _built.get(("estimate", key)) if key is not None else None
            if got is None:
                got = (self._estimated(), self.x.node.names)
                if key is not None:
                    _built.put(("estimate", key), got)
            self._kept_estimate = got
        return self._kept_estimate

    def _estimated(self) -> tuple:
        self._bin_edges()
        if self._uniform is None or not self._linspace_edges() or \
                self._numpy_steps():  # (corrected as NumPy corrects: `_by_range`)
            return ()
        x, keep = self._unselected()
        i, v, inside, f = self._estimate_of(x)
        n = self.bins
        it = _index_type(2 * n + 2)  # (an estimate near an edge: n + 1 + e)
        i, keep = i.astype(it), inside if keep is None else inside & keep
        if self._exact():  # nothing to correct: no value, no edges
            return where(keep, i, it.type(-1)).node, None, None
        near = self._rounding()
        d = f - apply("floor", f)  # (where the value lies in its estimated bin, 0..1)
        i = where((d <= near) | (d >= 1 - near), i + it.type(n + 1), i)  # (1/2: every one)
        i = where(keep, i, it.type(-1))
        v = v if v.dtype == np.float32 else v.astype(np.float64)  # (float32: twice the
        # values per vector instruction; compared with float32 edges exactly as float64)
        return i.node, v.node, self._edges.astype(np.float64)

    def _exact(self) -> bool:
        """Whether every estimate is the bin itself: bins of a width w that is a power of
        two from 0, every edge k * w: the estimate, value * (1 / w), is then exact (a
        product by a power of two; a value too small for that lies far below edge 1). Not
        where NumPy's own steps are followed (`_numpy_steps`)."""
        if self._numpy_steps():
            return False
        first, last = (float(v) for v in self._uniform)
        w = (last - first) / self.bins
        if first != 0 or not w > 0 or math.frexp(w)[0] != 0.5 or w * self.bins != last:
            return False
        k = np.arange(self.bins + 1, dtype=np.float64)
        return bool(np.array_equal(self._edges, (k * w).astype(self._edges.dtype)))

    def _rounding(self) -> float:
        """How far (in bins) an estimate may lie from where the value lies among the
        edges, times four, at most 1/2 (then every estimate is corrected)."""
        return min(0.5, 4 * self._error(self._estimate_dtype()))

    def _error(self, ft: np.dtype) -> float:
        """How far (in bins) an estimate in `ft` may lie from where the value lies among
        the edges: each edge is off its exact place by up to half a unit in the last place
        of the coarser of the edges' dtype and linspace's (float32 range scalars: float32
        edges, stored as float64), the estimate by a few units of `ft` (inf: too far)."""
        first, last = (float(v) for v in self._uniform)
        big = max(abs(first), abs(last))
        width = (last - first) / self.bins
        bt = min(self._linspace_dtype(), self._edges.dtype, key=lambda d: d.itemsize)
        unit = float(np.spacing(bt.type(big))) if bt.kind == "f" else 0.0
        # (linspace's step rounded: edge k off by k times its error, which subnormal steps
        # of few significant bits make large)
        step = self.bins * float(np.spacing(bt.type(width))) if bt.kind == "f" else 0.0
        ulps = 2.0 ** -48 if ft == np.float64 else 2.0 ** -21
        error = (unit + step) / width + 2.0 ** -48 * (big / width) + \
            ulps * (big / width + self.bins)
        return error if math.isfinite(error) else math.inf

    def _numpy_steps(self) -> tuple | None:
        """(dtype of x - first, of the estimate) where NumPy subtracts in float16 (its
        estimate is then off by a bin or more, and its one correction each way is its
        answer) or the bins are too narrow for a multiply (n / width overflows): the
        estimate is then computed step by step as NumPy does. Else None."""
        first, last = self._uniform
        d1 = np.result_type(np.empty(0, self.x.dtype), first)
        with np.errstate(all="ignore"):
            narrow = not np.isfinite(np.float64(self.bins) / np.float64(_subtract(last, first)))
        return (d1, np.result_type(d1, np.result_type(last, first))) \
            if d1 == np.float16 or narrow else None

    def _estimate_dtype(self) -> np.dtype:
        """The float dtype the estimate is computed in: float32 for float32 edges (float32
        data: twice the values per vector instruction) where its error leaves most values
        clear of the corrections, else float64."""
        first, last = self._uniform
        with np.errstate(all="ignore"):  # (bins narrower than float32's n / max: float64)
            fits = np.isfinite(np.float32(np.float64(self.bins) / np.float64(_subtract(last,
                                                                                   first))))
        if self._edges.dtype == np.float32 and fits and \
                4 * self._error(np.dtype(np.float32)) < 0.125:
            return np.dtype(np.float32)
        return np.dtype(np.float64)

    def _estimate_of(self, x: Expr) -> tuple:
        """(estimate, value in the edges' dtype, inside the range, the estimate as a float)
        of each value of `x`: the estimate of the bin within one of the right one (0
        outside the range)."""
        first, last = self._uniform
        n, bin_type = self.bins, self._edges.dtype
        it = _index_type(n + 1)
        keep = (x >= first) & (x <= last)
        v = x.astype(bin_type)
        # NumPy's estimate, ((v - first) / (last - first)) * n, lands within one bin of
        # the right one, which the two corrections against the edges then find: so does
        # this estimate with a multiply (a divide costs more than the rest). A value
        # outside the range (or NaN) is counted nowhere, so it is estimated as `first`:
        # the estimate is then 0..n, clamped to n - 1 before its conversion, and the
        # conversion and the corrections run in int32 where n fits (AVX2 converts four
        # doubles to int32 at once, and to int64 one at a time).
        steps = self._numpy_steps()
        if steps is not None:  # ((x - first) / (last - first) * n, each step as NumPy types it)
            d1, ft = steps
            start = d1.type(first)
            f = (where(keep, x.astype(d1), start) - start).astype(ft) / _subtract(last, first)
            f = f * ft.type(n)
        else:
            ft = self._estimate_dtype()
            scale = ft.type(np.float64(n) / np.float64(_subtract(last, first)))
            start = ft.type(first)
            f = (where(keep, v.astype(ft), start) - start) * scale
        i = where(f < ft.type(n - 1), f, ft.type(n - 1)).astype(it)
        return i, v, keep, f

    def _by_range(self, x: Expr) -> Expr:
        """The bin of each value of `x` among equal bins, as numpy.histogram finds it."""
        n = self.bins
        i, v, keep, _ = self._estimate_of(x)
        it = i.dtype
        if self._exact():  # (the estimate is the bin)
            return where(keep, i, it.type(-1)).astype(np.int64)
        i = i - (v < self._edge(i, top=False)).astype(it)  # (i < n)
        # (edge i + 1 is read only where i < n - 1: never the last edge either)
        up = (v >= self._edge(i + it.type(1), top=False)) & (i != it.type(n - 1))
        return where(keep, i + up.astype(it), it.type(-1)).astype(np.int64)

    def _by_edges(self, x: Expr) -> Expr:
        """The bin as numpy.histogram's search of the edges finds it: the edges at or below
        the value, inside [edges[0], edges[-1]]."""
        edges = self._edges
        if len(edges) > MAX_EDGES:
            raise NotSupportedError(f"{len(edges)} bin edges found by comparisons: at most "
                                    f"{MAX_EDGES}")
        inside = (x >= edges[0]) & (x <= edges[-1])
        it = _index_type(len(edges))
        i = as_expr(it.type(0))
        for e in edges[1:-1]:  # (the last bin closed)
            i = i + apply("greater_equal", x, e).astype(it)
        return where(inside, i, it.type(-1)).astype(np.int64)

    def _linspace_edges(self) -> bool:
        """Whether `_edge` gives NumPy's edges bit for bit."""
        k = np.arange(self.bins + 1, dtype=np.int64)
        with np.errstate(all="ignore"):
            return bool(np.array_equal(self._edge(k), self._edges))

    def _linspace_dtype(self) -> np.dtype:
        """The dtype np.linspace computes the edges in (then stored in the edges' dtype)."""
        dt = np.result_type(*self._uniform)
        return dt if dt.kind == "f" else np.result_type(dt, 1.0)

    def _edge(self, k, top: bool = True):
        """Edge k (an integer expression, or a NumPy array of them) as np.linspace
        computes it: k * step in the linspace dtype, plus the start (in its own dtype's
        promotion, stored back), then in the edges' dtype; the last edge is `last` itself
        (`top=False`: an expression where k < n, or whose value is not read at n)."""
        first, last = self._uniform
        n, bin_type, dt = self.bins, self._edges.dtype, self._linspace_dtype()
        start = np.asarray(first)
        wide = np.result_type(dt, start.dtype)
        step = np.subtract(np.asarray(last, dt), np.asarray(first, dt), dtype=dt) / n
        step = np.asarray(step, dt)[()]
        if isinstance(k, np.ndarray):
            y = (k.astype(dt) * step).astype(wide) + start.astype(wide)
            return np.where(k == n, self._edges[-1], y.astype(dt).astype(bin_type))
        y = (k.astype(dt) * step).astype(wide) + start.astype(wide)[()]
        y = y.astype(dt).astype(bin_type)
        return where(k == n, bin_type.type(self._edges[-1]), y) if top else y

    def weight(self) -> Expr | None:
        """Each value's weight as the counters add it (float64), or None."""
        return None if self.weights is None else self.weights.astype(np.float64)

    def finish(self, counts: np.ndarray) -> np.ndarray:
        """The counts in numpy.histogram's dtype (and density) from the float64 or int64
        counters the kernel added up."""
        return self.finisher()(counts)

    def finisher(self):
        """`finish` as a function of the counts alone: it holds the counts' dtype (and the
        edges, for a density), never the data (a Dask task carries it)."""
        dtype = np.dtype(np.int64) if self.weights is None else self.weights.dtype
        return functools.partial(_finished, dtype, self.edges if self.density else None)

    # ---------------------------------------------------------------- evaluation
    def to_numpy(self) -> np.ndarray:
        """The counts (a NumPy array)."""
        return hooks.evaluate_many(self)[0]

    def explain(self, target: str = "cpu") -> str:
        """The kernels computing this runs (loop nests, specs, LLVM IR and assembly; with
        `target='cuda'` their NVVM IR and PTX), as `Expr.explain`."""
        return hooks.explain(self, target=target)

    def eval(self) -> Array:
        """The counts as a lazyk array."""
        return lazyk_array(self.to_numpy())

    def __array__(self, dtype=None, copy=None):
        out = self.to_numpy()
        return out if dtype is None else out.astype(dtype)

    def __iter__(self):
        return iter((self.to_numpy(), self.edges))

    def __getitem__(self, i):
        """`h[0]`: the counts, `h[1]`: the edges, as numpy.histogram's pair (computed)."""
        return (self.to_numpy(), self.edges)[i]

    def __len__(self) -> int:
        return 2

    def to_list(self) -> list:
        return self.to_numpy().tolist()


# (x node, bins, range) -> (bin index node, edges, uniform range): a histogram built again
# (each call of an analysis) reuses its graph; the nodes are interned, so the key's x node
# is the very node of the same expression over the same arrays
_built = Memo(256, "histogram graphs")


def _finite(v: Any) -> bool:
    """np.isfinite of a range end (a Python int or float without NumPy's call)."""
    return type(v) is int or (math.isfinite(v) if type(v) is float else bool(np.isfinite(v)))


def _index_type(n: int) -> np.dtype:
    """The integer dtype bin indices up to `n` are computed in: int32 where they fit."""
    return np.dtype(np.int32 if n < 2**31 - 1 else np.int64)


def _subtract(a: Any, b: Any):
    """numpy's `_unsigned_subtract`: the difference in the operands' common dtype, in the
    unsigned one for signed integers (an int16 range's width fits)."""
    if isinstance(a, Expr):
        return a - b
    dt = np.result_type(a, b)
    unsigned = {np.dtype(t): np.dtype(u) for t, u in (("i1", "u1"), ("i2", "u2"),
                                                     ("i4", "u4"), ("i8", "u8"))}
    if dt in unsigned:
        return np.subtract(np.asarray(a, dtype=dt), np.asarray(b, dtype=dt),
                           casting="unsafe", dtype=unsigned[dt])[()]
    return np.subtract(a, b, dtype=dt)[()]


def _scalar(value: Any, dtype: np.dtype):
    """A 0-d result as a NumPy scalar of `dtype` (None when missing)."""
    return np.asarray(value.to_numpy() if isinstance(value, Array) else value,
                      dtype).reshape(())[()]


def histogram(a: Any, bins: Any = 10, range: Any = None, density: bool | None = None,
              weights: Any = None) -> Histogram:
    """numpy.histogram of the values of `a` over every axis, as a lazy reduction fused into one
    loop nest with the work that computes `a` (`var` dims, `?T` values, combinations all fold
    in place; nothing is flattened or stored, not even a `lazyk.flatten(x)` given here).

    Counts are int64 (the weights' dtype with `weights`, float64 with `density=True`), with
    numpy.histogram's bin rules: `bins` equal bins over `range` (by default the min and max
    of the present values, a value whose weight is missing too), or `bins` as the edges; the last bin is closed; values outside the range,
    NaN and missing values (`?T`, or a missing weight) are not counted. The edges are
    NumPy's (`np.linspace` in the data's float type: float32 for float32 data). `weights`
    broadcast against `a` (a per-event weight `w[:, None]` against per-object values); they
    are added up in float64 (NumPy's sums where those are exact). A histogram of a selection
    (`lazyk.histogram(met[mask], ...)`) counts the values where the mask is true, without
    gathering the selected rows. An empty row's min or max (`lazyk.max(pt, axis=1)`, or a
    selection by it) counts nowhere, as Awkward's None (evaluated alone: a ValueError).

    Returns a lazy `Histogram`: `.to_numpy()` / `.eval()` give the counts, `.edges` the
    edges, and unpacking gives both as NumPy does
    (`counts, edges = lazyk.histogram(jets.pt, 100, (15, 60))`). Each evaluation reads the
    data as it is then (with `range=None`, its min and max too); edges given as an array
    are copied when the histogram is made.

    Raises:
        ValueError: bins < 1; `range` min > max or not finite; edges not increasing.
        NotSupportedError: string data; complex weights; more than 512 edges as an array.
    """
    x = as_expr(a)
    while weights is None and x.node.op == ROWS_OP and x.node.arg[0] == "flatten":
        x = Expr(x.node.srcs[0], x.env)  # (every axis counted: the lists where they are)
    if x.dtype.kind not in "biuf" and (is_text(x.dtype) or x.dtype.kind == "c"):
        what = "strings" if is_text(x.dtype) else "complex numbers"
        raise NotSupportedError(f"histogram of {x.type} ({what}): real numbers only")
    if x.ndim == 0:
        x = x[None]
    w = None if weights is None else histogram_weights(x, weights)
    if isinstance(bins, str):
        raise NotSupportedError(f"bins={bins!r}: give a number of bins or the edges")
    if type(bins) is int or np.ndim(bins) == 0:
        try:
            bins = operator.index(bins)
        except TypeError:
            raise TypeError("`bins` must be an integer, a string, or an array") from None
        if bins < 1:
            raise ValueError("`bins` must be positive, when an integer")
        if range is not None:
            if isinstance(range, (Expr, Array)) or np.ndim(range) != 1 or len(range) != 2:
                raise ValueError(f"range={range!r}: give a pair (min, max)")
            range = first, last = tuple(_bound(v) for v in range)
            if first > last:
                raise ValueError("max must be larger than min in range parameter.")
            if not (_finite(first) and _finite(last)):
                raise ValueError(f"supplied range of [{first}, {last}] is not finite")
    elif np.ndim(bins) == 1:
        bins = np.array(bins)  # (a copy: the edges as given now, as they count and show)
        if bins.dtype.kind in "fc" and np.isnan(bins).any():
            raise ValueError(f"`bins` holds NaN: {bins}")
        if np.any(bins[:-1] > bins[1:]):
            raise ValueError("`bins` must increase monotonically, when an array")
        if len(bins) < 2:
            raise ValueError("`bins` needs at least two edges")
        if len(bins) > MAX_EDGES:
            raise NotSupportedError(f"{len(bins)} bin edges: at most {MAX_EDGES} as an array "
                                    "(equal bins: give their number and range)")
    else:
        raise ValueError("`bins` must be 1d, when an array")
    return Histogram(x, bins, range, w, bool(density))


def _bound(v: Any) -> Any:
    """A `range` bound as a number: a 0-d array's value (as NumPy takes it); a lazy value
    is refused (the range is part of the histogram's plan)."""
    if isinstance(v, Expr):
        raise TypeError(f"histogram range: a lazy value ({v.type}) is not computed yet; give "
                        "numbers, or range=None (the data's own min and max, computed in the "
                        "same pass)")
    if isinstance(v, Array):
        v = v.to_numpy()
    if isinstance(v, np.ndarray):
        if v.ndim:
            raise ValueError(f"histogram range: a bound of shape {v.shape}; give numbers")
        v = v[()]  # (a NumPy scalar: its dtype counts, as in NumPy's edges)
    return v


def _finished(dtype: np.dtype, edges: np.ndarray | None, counts: np.ndarray) -> np.ndarray:
    """The counts in `dtype`; with the bin edges, numpy.histogram's density."""
    out = counts.astype(dtype, copy=False)
    if edges is None:
        return out
    return out / np.array(np.diff(edges), float) / out.sum()


__all__ = ["Histogram", "histogram"]

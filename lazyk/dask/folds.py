"""Ragged and missing-value data on Dask: reductions over the rows' axis, partition by
partition.

`Combine`: partial reductions joined and reduced again; `FoldRows`: the same for folds that
must know what each partition folded (missing rows under the outer rows, var rows kept
below two folded axes); `Raw`: a partition's rows that did not fold on their own (another
partition's empty row may stretch their level to nothing, or an earlier partition's rows
may not fold with them first), folded by a later step, so that the answer, or the error
and the row it names, never depends on where the partitions are cut nor on the order the
scheduler runs them; `NoRows`: a partition left
without rows by a selection, which adds nothing; `nonempty`: min / max of nothing raise.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from lazyk import types as T
from lazyk.arrays.array import Array, array
from lazyk.arrays.trees import Column, Lists, Masked, Regular
from lazyk.dask.partitions import (
    Part,
    build,
    cat,
    columns,
    concat,
    cut,
    renumbered,
    span_of,
    union,
    unwrap,
    widen,
)
from lazyk.errors import NotSupportedError, ShapeError
from lazyk.frontend import expr as lx
from lazyk.frontend.graph import arg_key
from lazyk.frontend.histogram import histogram as hist


class Combine:
    """Joins partial reductions (each with the reduced axes kept) and reduces them again.
    A partition's rows that did not fold on their own (`Raw`) join as rows; rows that
    do not fold together go on as rows, unless this step is `final` (it sees every
    partition's rows: their error is the whole fold's)."""

    __slots__ = ("arg", "dtype", "keepdims", "final")

    def __init__(self, arg: tuple, dtype: str, keepdims: bool, final: bool = True):
        self.arg, self.dtype, self.keepdims, self.final = arg, dtype, keepdims, final

    def __call__(self, *parts: Any) -> Any:
        live = tuple(p for p in parts if not isinstance(p, NoRows))
        if not live:  # no partition holds a row: the fold of no rows
            if not self.final:
                return parts[0]
            live = (parts[0].fold(),)
        parts = live
        if any(isinstance(p, Raw) for p in parts):
            return self._rows(parts)
        try:
            return self._fold(parts)
        except ShapeError:
            if self.final or not (numbered(*parts) or may_hide(*[unwrap(p) for p in parts])):
                raise
            return self._rows(parts)  # for the last step, which sees every partition

    def _rows(self, parts: tuple) -> Any:
        """Partials and rows (`Raw`) folded as rows: rows again where they do not fold
        (unless this is the last step, which sees every partition's rows)."""
        pieces = [q for p in parts for q in (p.parts if isinstance(p, Raw) else
                                             [_as_rows(p, self.arg, self.dtype)])]
        try:
            return self._fold((joined([q.array for q in pieces]),))
        except ShapeError as err:
            if self.final:
                raise renumbered(err, pieces) from None
            return Raw(pieces)

    def _fold(self, parts: tuple) -> Part:
        op, axes = self.arg[0], self.arg[1]
        skipna = len(self.arg) > 3 and bool(self.arg[3])
        initial = self.arg[4] if len(self.arg) > 4 else None
        dt = None if op in ("any", "all") else np.dtype(self.dtype)
        given = parts
        parts = [unwrap(p) for p in parts]
        x = concat(parts) if len(parts) > 1 else parts[0]
        inner = _ones(x, axes)
        if inner:  # e.g. `k * ?var * 1 * T` over (0, 2) folds as `k * ?var * T` over 0
            x = build(_squeeze(columns(x), inner))
            axes = (0,)
        try:
            out = lx.reduce(op, x, axis=axes, keepdims=self.keepdims, skipna=skipna,
                            dtype=dt, initial=initial).eval()
        except ValueError as err:  # ShapeError: the collection's rows, not the partials'
            raise renumbered(err, given) from None
        if inner and self.keepdims:
            out = build(_unsqueeze(columns(out), inner))
        spans = [(p.start, p.stop) for p in given if isinstance(p, Part)]
        if len(spans) == len(given) and all(a is not None for a, _ in spans):
            return Part(out, spans[0][0], spans[-1][1])
        return Part(out)

    def __reduce__(self):
        return (Combine, (self.arg, self.dtype, self.keepdims, self.final))

    def __dask_tokenize__(self):
        return ("lazyk.runtime.rows-combine", arg_key(self.arg), self.dtype, self.keepdims,
                self.final)


class NoRows:
    """A partition without rows (rows selected or flattened: how many is known only when
    computed) in a fold over the rows' axis: it adds nothing (its partial's empty rows
    would not line up with the others'), unless no partition holds a row; then its
    partial (`fold()`) is the fold of no rows."""

    __slots__ = ("task", "rows")

    def __init__(self, task: Any, rows: Any):
        self.task, self.rows = task, rows

    def fold(self) -> Any:
        return self.task(self.rows)

    def __reduce__(self):
        return (NoRows, (self.task, self.rows))


def unless_empty(task: Any, rows: Any) -> Any:
    """The partial fold `task(rows)` of one partition, or `NoRows` when it holds none."""
    a = unwrap(rows)
    if isinstance(a, Array) and isinstance(a.type, T.FixedDim) and a.type.size == 0 or \
            isinstance(a, np.ndarray) and a.ndim and not len(a):  # (plain values: NumPy)
        return NoRows(task, rows)
    return task(rows)


class Raw:
    """Partitions' rows (and partials made rows: `raw_form`) that did not fold on their
    own: the rows they pair with may never meet in the whole fold, since another
    partition's empty row can empty their level, and where they do, the first row that
    does not fold may lie in an earlier partition. Later steps fold them with the rest,
    in the partitions' order. `parts`: `Part`s naming the collection's rows they hold (or
    folded), for errors."""

    __slots__ = ("parts",)

    def __init__(self, parts: list):
        self.parts = parts

    def __reduce__(self):
        return (Raw, (self.parts,))


def numbered(*parts: Any) -> bool:
    """Whether every part names the collection's rows it holds or folded: rows that do not
    fold there then go on as rows (`Raw`), so that the step seeing every partition in
    order names the first row that does not fold, as one machine does. (Rows a selection
    made are numbered only within their partition: there only `may_hide` rows go on.)"""
    return all(all(q.start is not None for q in p.parts) if isinstance(p, Raw) else
               getattr(p, "start", None) is not None for p in parts)


def may_hide(*arrays: Array) -> bool:
    """Whether rows that do not pair in `arrays` might never meet in a whole fold: only
    below a var row of length 1 (which another partition's empty row stretches to
    nothing) above the last var level; elsewhere their error is the whole fold's."""
    for a in arrays:
        col = columns(a) if isinstance(a, Array) and isinstance(a.type, T.FixedDim) \
            else None
        while isinstance(col, (Masked, Lists, Regular)):
            below = col.child
            if isinstance(col, Lists) and _has_lists(below) and \
                    bool((np.diff(col.offsets) == 1).any()):
                return True
            col = below
    return False


def _has_lists(col: Column) -> bool:
    """Whether `Lists` lie among the options and lists at the top of `col`."""
    while isinstance(col, (Masked, Lists, Regular)):
        if isinstance(col, Lists):
            return True
        col = col.child
    return False


def _as_rows(p: Any, arg: tuple, dtype: Any) -> Part:
    """A partial (`Part`) as rows that fold with a partition's rows."""
    return Part(raw_form(unwrap(p), arg, dtype), getattr(p, "start", None),
                getattr(p, "stop", None))


def raw_form(a: Array, arg: tuple, dtype: Any) -> Array:
    """Rows or a partial of a fold `arg` as rows that fold with each other: values in
    the fold's dtype, the folded inner fixed dims made var (a partial's 1 and the rows'
    n fold alike)."""
    dt = np.dtype(bool) if arg[0] in ("any", "all") else np.dtype(dtype)
    if a.dtype != dt:
        a = lx.astype(a, dt).eval()
    inner = sorted(d for d in arg[1] if d)
    t, fixed = a.type, []
    for d in range(1, max(inner, default=0) + 1):
        t = t.elem
        t = t.elem if isinstance(t, T.Option) else t
        if d in inner and isinstance(t, T.FixedDim):
            fixed.append(d)
    if not fixed:
        return a
    col = columns(a)
    for d in fixed:
        col = _var_at(col, d)
    return build(col)


def _var_at(col: Column, axis: int) -> Column:
    """A column tree whose fixed dim `axis` (>= 1) is a var one (rows of its size)."""
    if isinstance(col, Masked):
        return Masked(col.present, _var_at(col.child, axis))
    if isinstance(col, Lists):
        return col if axis == 1 else Lists(col.offsets, _var_at(col.child, axis - 1))
    if axis > 1:
        return Regular(col.size, _var_at(col.child, axis - 1), col.count)
    return Lists(np.arange(col.length() + 1, dtype=np.int64) * col.size, col.child)


def joined(arrays: list) -> Array:
    """Arrays of rows joined along axis 0, with options wherever one has them."""
    if len(arrays) == 1:
        return arrays[0]
    elem = arrays[0].type.elem
    for a in arrays[1:]:
        elem = union(elem, a.type.elem)
    return build(cat([widen(columns(a), elem) for a in arrays]))


def _ones(x: Any, axes: tuple) -> tuple:
    """The axes other than 0 to squeeze before folding partials of `x` over `axes`: all of
    them when each is a fixed dim of 1 (the partials' kept axes) below missing rows
    (`?var`), whose loop nest folds `k * ?var * T` over axis 0 but not `k * ?var * 1 * T`
    over (0, 2); else ()."""
    inner = tuple(sorted(a for a in axes if a))
    if 0 not in axes or not inner or not isinstance(x, Array) or \
            not x.type.missing_var_rows:
        return ()
    t = x.type
    for d in range(1, max(inner) + 1):
        t = t.elem
        if isinstance(t, T.Option):
            if d in inner:
                return ()
            t = t.elem
        if d in inner and not (isinstance(t, T.FixedDim) and t.size == 1):
            return ()
    return inner


def _squeeze(col: Column, axes: tuple) -> Column:
    """The fixed dims of 1 at `axes` (>= 1) taken out of a column tree."""
    for a in sorted(axes, reverse=True):
        col = col.at(a - 1, lambda c: c.child)
    return col


def _unsqueeze(col: Column, axes: tuple) -> Column:
    """Fixed dims of 1 put in at `axes` (>= 1, of the result)."""
    for a in sorted(axes):
        col = col.at(a - 1, lambda c: Regular(1, c))
    return col


class Folded:
    """A partial reduction over the rows' axis that knows what it folded: `value` folds the
    partition's present rows, `rows` says whether anything reached the kept levels (a
    partial of nothing is an empty row that must not pair with other partitions' rows),
    `missing` is one missing row or its fold (None without one): the result unless
    `skipna`."""

    __slots__ = ("value", "rows", "missing")

    def __init__(self, value: Part, rows: bool, missing: Any):
        # `value` stays a Part: the rows it folded name the rows in errors
        self.value, self.rows, self.missing = value, rows, unwrap(missing)

    def __reduce__(self):
        return (Folded, (self.value, self.rows,
                         None if self.missing is None else Part(self.missing)))


class FoldRows(Combine):
    """Partial (`first`), combining or final step of a reduction over the rows' axis of
    data with missing rows right under the outer rows (`N * ?var * ...`) or with var rows
    kept below two folded axes: folds what is present and keeps `Folded` bookkeeping, so
    that partitions folding nothing add nothing and a missing row makes the result
    missing without hiding a row-length mismatch."""

    __slots__ = ("depth", "stage", "elem")

    def __init__(self, arg: tuple, dtype: str, keepdims: bool, depth: int, stage: str,
                 elem: str | None = None):
        super().__init__(arg, dtype, keepdims)
        self.depth, self.stage = depth, stage  # levels above the first kept one; step
        # NOTE: over missing rows under the outer rows (`elem`: the rows' type), partials
        # fold the present rows as plain var rows (a fold over `?var` rows can give `?n`
        # rows, which are results, not operands) and carry one missing row as it is; the
        # last step folds them again as rows of `elem`, for one machine's result type.
        self.elem = elem

    def __call__(self, *parts: Any) -> Any:
        final = self.stage == "final"
        if self.stage == "first":
            x, span = unwrap(parts[0]), span_of(parts)
            try:
                return self._partial(x, span)
            except ShapeError:  # as rows, for the step that sees every partition
                if span[0] is None and not may_hide(x):
                    raise
                return Raw([Part(raw_form(x, self.arg, self.dtype), *span)])
        parts = [unwrap(p) for p in parts]
        if any(isinstance(p, Raw) for p in parts):
            pieces = self._rows(parts)
            try:
                parts = [self._partial(joined([q.array for q in pieces]), (None, None))]
            except ShapeError as err:
                if final:
                    raise renumbered(err, pieces) from None
                return Raw(pieces)
        live = [f.value for f in parts if f.rows] or \
            [f.value for f in parts[:1] if f.value is not None]
        missing = next((f.missing for f in parts if f.missing is not None), None)
        again = self if not final or self.elem is None else \
            Combine(self.arg[:2] + (True,) + self.arg[3:], self.dtype, True)
        try:
            value = Combine.__call__(again, *live) if live else None  # lengths checked
        except ShapeError:
            if final or not (numbered(*live) or may_hide(*[unwrap(v) for v in live])):
                raise
            return Raw(self._rows(parts))
        if not final:
            return Folded(value, any(f.rows for f in parts), missing)
        if self.elem is not None:
            # what the partials folded, a missing row, and no rows of `elem`: a fold of
            # nothing (no partial folded a row) is the fold of no rows of `elem`
            rows = [raw_form(unwrap(value), self.arg, self.dtype)] \
                if any(f.rows for f in parts) else []
            rows += [] if missing is None else [raw_form(missing, self.arg, self.dtype)]
            none = array([], f"0 * {self.elem}")  # no rows: the type of the rows
            rows.append(raw_form(none, self.arg, self.dtype))
            return Combine.__call__(self, joined(rows))
        skipna = len(self.arg) > 3 and bool(self.arg[3])
        if missing is not None and not skipna:
            return Combine.__call__(self, missing)
        if value is None:  # no partition folded a value: NumPy's error, as one machine's
            raise ValueError(f"zero-size array to reduction operation {self.arg[0]} which "
                             "has no identity")
        return Part(value.array)

    def _rows(self, parts: list) -> list:
        """Partials (`Folded`: what they folded, their missing row) and rows as rows."""
        rows = []
        for p in parts:
            if isinstance(p, Raw):
                rows += p.parts
                continue
            if p.rows:
                rows.append(_as_rows(p.value, self.arg, self.dtype))
            if p.missing is not None:  # (one row: it never fails to fold, but an error
                # past it counts it, and the rows of the partition it came from name it)
                span = (p.value.start, p.value.stop) if p.value is not None else (0, 0)
                rows.append(Part(raw_form(p.missing, self.arg, self.dtype), *span))
        return rows

    def _partial(self, x: Array, span: tuple) -> Folded:
        start = span[0]
        col, missing, rows = columns(x), None, start
        if isinstance(col, Masked):  # missing rows: fold the present ones
            mask = np.asarray(col.present, bool)
            if not mask.all():
                rows = np.flatnonzero(mask) + (start or 0)  # the present rows' numbers
                gone = int(np.argmin(mask))
                missing = build(cut(col, gone, gone + 1))
                edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.view(np.int8),
                                                               [0]])))
                runs = list(zip(edges[::2], edges[1::2])) or [(0, 0)]
                col = cat([Masked(np.ones(b - a, bool), cut(col.child, a, b))
                           for a, b in runs])
                x = build(col)
            if self.elem is not None:  # the present rows as var rows
                col = col.child
                x = build(col)
        lo, hi = 0, col.length()  # the entries of these rows at each level down
        for _ in range(self.depth):
            while isinstance(col, Masked):
                col = col.child
            if isinstance(col, Lists):
                lo, hi = int(col.offsets[lo]), int(col.offsets[hi])
            else:
                lo, hi = lo * col.size, hi * col.size
            col = col.child
        n = hi - lo
        keep = Combine(self.arg, self.dtype, True)
        try:
            value = Part(keep(x).array, *span)
        except ValueError as err:  # ShapeError: the collection's row, not the part's
            if n:
                raise renumbered(err, rows) from None
            value = None  # a fold of nothing (a min of no values): the last step's
        if missing is not None and self.elem is None:
            missing = keep(missing)
        return Folded(value, n > 0, missing)

    def __reduce__(self):
        return (FoldRows, (self.arg, self.dtype, self.keepdims, self.depth, self.stage,
                           self.elem))

    def __dask_tokenize__(self):
        return ("lazyk.runtime.rows-fold", arg_key(self.arg), self.dtype, self.keepdims, self.depth,
                self.stage, self.elem)



def nonempty(op: str, value: Any, count: Any) -> Any:
    """`value`, unless some result of the reduction folded nothing (NumPy's ValueError)."""
    n = unwrap(count)
    try:
        flat = n.to_numpy() if isinstance(n, Array) else np.asarray(n)
    except NotSupportedError:  # ragged counts (a reduction's result: small) as lists
        flat, stack = [], [n.to_list()]
        while stack:
            v = stack.pop()
            if isinstance(v, list):
                stack.extend(v)
            else:
                flat.append(v)
    if (np.asarray(flat) == 0).any():
        raise ValueError(f"zero-size array in reduction {op}, which has no identity: pass "
                         "initial=, or keep the rows that have items")
    return value


# ---------------------------------------------------------------- histograms
def histogram_counts(h: Any, split_every: Any, evaluate: Any) -> Any:
    """A `lazyk.histogram` over Dask data: each partition's (or block's) bin of every value
    computed by one blockwise layer (`evaluate`: lazyk.dask's), counted there by lazyk, and
    the counts summed in a tree: a Dask array of numpy.histogram's counts."""
    import dask
    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

    if h.range is None and isinstance(h.bins, int):
        raise NotSupportedError(
            "lazyk.dask: a histogram over Dask data needs range=(lo, hi) or the bin edges "
            "(an automatic range reads the data twice: compute its min and max first)")
    index = h.index()
    parts = [evaluate(index, split_every)]
    if h.weights is not None:  # the weights broadcast to the values, 0 out of the bins
        w = lx.where(index >= 0, h.weight(), 0.0)
        if w.ndim != index.ndim or (None in w.shape) != (None in index.shape):
            raise NotSupportedError(f"histogram of {h.x.type} with weights of type "
                                    f"{h.weights.type}: the weights broadcast to the values, "
                                    "not the values to the weights")
        parts.append(evaluate(w, split_every))
        if isinstance(parts[0], da.Array) and isinstance(parts[1], da.Array):
            parts[1] = parts[1].rechunk(parts[0].chunks)
    keys = [list(dask.core.flatten(p.__dask_keys__())) for p in parts]
    n = h.nbins
    name = f"lazyk-histogram-{tokenize(*parts, n)}"
    what = None if h.weights is None else f"values ({h.x.type}) with weights ({h.weights.type})"
    layer = {(name, i, 0): (_bin_counts, n, what) + tuple(ks)
             for i, ks in enumerate(zip(*keys))}
    dsk = HighLevelGraph.from_collections(name, MaterializedLayer(layer), dependencies=parts)
    dt = np.dtype(np.int64 if h.weights is None else np.float64)
    counts = da.Array(dsk, name, ((1,) * len(layer), (n,)), meta=np.empty((0, 0), dt))
    total = counts.sum(axis=0, split_every=split_every)
    # (a function of the counts alone: Dask tokenizes and ships it, never the data)
    return total.map_blocks(h.finisher(), dtype=h.dtype, meta=np.empty(0, h.dtype))


def _bin_counts(n: int, what: str | None, index: Any, weights: Any = None) -> np.ndarray:
    """Counts (or weights) of bins 0 .. n - 1 in one partition's bin indices (-1 and
    missing ones in no bin), as a (1, n) block. `what`: the values' and weights' types, as
    the errors name them."""
    index = unwrap(index)
    w = None if weights is None else unwrap(weights)
    try:
        got = hist(index, n, (0, n), weights=w).to_numpy()
    except ShapeError as e:  # (named by the partition's bin indices: by the user's values)
        if what is None:
            raise
        raise ShapeError(f"histogram of {what}: {str(e).split('): ', 1)[-1]}") from None
    return got.astype(np.float64 if weights is not None else np.int64).reshape(1, n)

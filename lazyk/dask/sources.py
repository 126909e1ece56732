"""Ragged and missing-value collections made: `from_ragged` (a lazyk array split into row
slices, a list of lazyk arrays, a `pyarrow.ChunkedArray`, a Dask array) and `from_delayed`
(partitions that Dask tasks make, each checked against its type and row count when
computed)."""
from __future__ import annotations

import numbers
import operator
import uuid
from typing import Any

import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

from lazyk import types as T
from lazyk.arrays.array import Array, array, masked
from lazyk.arrays.formats.arrow import from_arrow
from lazyk.dask.collection import RaggedArray, TypeOnly, collection, describe
from lazyk.dask.partitions import Part, build, union, widen
from lazyk.dask.partitions import columns as _columns
from lazyk.errors import NotSupportedError, ShapeError, TypeMatchError
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import rewrite, toposort
from lazyk.frontend.leaves import DaskLeaf, describe_ragged, leaf_data
from lazyk.types.parse import dshape

__all__ = ["block_data", "fixed_type", "from_delayed", "from_ragged", "split_dask_leaves"]


def from_ragged(x: Any, rows_per_part: int | None = None) -> RaggedArray:
    """A Dask collection of lazyk arrays split by outer rows, for `lazyk.dask.evaluate`.

    Example:
        >>> x = lazyk.from_offsets(np.array([0, 2, 2, 5]), np.arange(5.0))
        >>> r = lazyk.dask.from_ragged(x, 2)             # partitions of 2 and 1 rows
        >>> lazyk.dask.evaluate(r.sum(axis=-1)).compute()
        array([1., 0., 9.])

    Args:
        x: a lazyk array with a leading fixed dim (`N * var * T`, `N * ?var * ?T`, ...),
            split into row slices (views: nothing is copied); or a list of lazyk arrays of
            one type but their row count (one per Parquet row group or Arrow chunk; parts
            without missing values where others have them get all-present masks), or a
            `pyarrow.ChunkedArray` (one partition per chunk, through `lazyk.from_arrow`),
            or a Dask array (one partition per chunk along axis 0, sizes unknown too, as
            after boolean indexing: `nan` row counts; NumPy masked-array chunks become
            `?T`: masked = missing, also after boolean indexing of masked chunks, whose
            Dask metadata no longer says so).
        rows_per_part: outer rows per partition when `x` is one array (the last may be
            shorter); not used with a list or a ChunkedArray (ValueError).
    Raises:
        TypeError: an object that is not a lazyk array (naming its type).
        NotSupportedError: element types the collections do not hold (tuples, fixed-size
            strings and bytes; numbers, strings, bytes, dates, times and records are
            taken).
        ValueError: a missing or non-positive `rows_per_part`; parts of different types.
    """
    if type(x).__module__.startswith("dask.array") and hasattr(x, "chunks"):
        return _from_dask(x)
    if isinstance(x, Array):
        if isinstance(rows_per_part, bool) or not isinstance(rows_per_part, numbers.Integral) \
                or rows_per_part < 1:
            raise ValueError(f"from_ragged(x, rows_per_part): rows_per_part must be a positive "
                             f"int, not {rows_per_part!r}")
        _elem(x)
        n, step = x.type.size, int(rows_per_part)
        parts = [x[i:i + step] for i in range(0, n, step)] or [x]
    else:
        chunks = getattr(x, "chunks", None)
        arrow = type(x).__module__.startswith("pyarrow") and chunks is not None
        if rows_per_part is not None and (isinstance(x, (list, tuple)) or arrow):
            raise ValueError("rows_per_part applies to one lazyk array; the elements of a list "
                             "and the chunks of a ChunkedArray are the partitions")
        if arrow:  # (no chunks: one empty partition of the chunked array's type)
            x = [from_arrow(c) for c in chunks] or [from_arrow(x.combine_chunks())]
        if not isinstance(x, (list, tuple)) or not x:
            raise TypeError(f"from_ragged takes a lazyk Array, a non-empty list of them, a "
                            f"pyarrow.ChunkedArray or a Dask array, not "
                            f"{type(x).__module__}.{type(x).__qualname__}")
        parts = list(x)
        for p in parts:
            if not isinstance(p, Array):
                raise TypeError(f"from_ragged: partitions must be lazyk arrays, not "
                                f"{type(p).__module__}.{type(p).__qualname__}")
        elem = _elem(parts[0])
        for i, p in enumerate(parts):
            try:
                elem = union(elem, _elem(p))
            except ValueError:
                raise ValueError(f"from_ragged: partition {i} has type {p.type}, partition 0 "
                                 f"{parts[0].type}: the rows must be of one type") from None
        # Parts without missing values where others have them (an Arrow chunk or Parquet
        # row group without nulls) get all-present masks: one type for every partition.
        parts = [p if p.type.elem == elem else _widened(p, elem) for p in parts]
    name = f"lazyk-rows-{uuid.uuid4().hex}"
    counts = tuple(p.type.size for p in parts)
    starts = np.concatenate([[0], np.cumsum(counts)]).tolist()
    layer = MaterializedLayer({(name, i): Part(p, starts[i]) for i, p in enumerate(parts)})
    t = T.FixedDim(sum(counts), parts[0].type.elem)
    return collection(HighLevelGraph({name: layer}, {name: set()}), name, counts, t)


def from_delayed(parts: list, type: Any, row_counts: list) -> RaggedArray:
    """A collection whose partitions are made by Dask tasks (e.g. one Parquet row group read
    on a worker): each `dask.delayed` part gives a lazyk array (or an Arrow array, read with
    `lazyk.from_arrow`) of the given type and row count.

    Example:
        >>> load = dask.delayed(lambda i: lazyk.array([[float(i)], []]))
        >>> r = lazyk.dask.from_delayed([load(0), load(1)], "N * var * float64", [2, 2])
        >>> lazyk.dask.evaluate(r.sum(axis=-1)).compute()
        array([0., 0., 1., 0.])

    Args:
        parts: `dask.delayed` objects (or other single-key Dask collections).
        type: the rows' type, e.g. `"N * var * ?float64"` (the leading dim is the rows).
        row_counts: the rows of each part (known up front: results of reductions over
            inner axes are `dask.array`s with these chunks).
    Raises:
        ShapeError / TypeMatchError (when computed): a part of another row count or type,
            naming the part.
    """
    t = dshape(type)
    if not isinstance(t, (T.FixedDim, T.SymbolicDim)):
        raise NotSupportedError(f"from_delayed: type {t} has no outer rows (it needs a leading "
                                "fixed or symbolic dimension)")
    if not len(parts):
        raise ValueError("from_delayed: no parts (a collection needs at least one; "
                         "lazyk.dask.from_ragged(lazyk.array([], type=...)) makes an empty "
                         "one)")
    try:  # (2.0 is 2; NaN, Dask's unknown size, 2.5 and "2" are no counts)
        counts = tuple(int(c) if isinstance(c, float) and c.is_integer() else
                       operator.index(c) for c in row_counts)
    except TypeError:
        counts = None
    if counts is None or len(counts) != len(parts) or any(c < 0 for c in counts):
        raise ValueError(f"from_delayed: {len(parts)} parts need as many row counts (known "
                         f"integers >= 0), not {list(row_counts)}")
    whole = T.FixedDim(sum(counts), t.elem)
    _check_elem(whole, "from_delayed")
    name = f"lazyk-rows-{tokenize([p.__dask_keys__() for p in parts], str(whole), counts)}"
    layer, start = {}, 0
    for i, p in enumerate(parts):
        key = p.__dask_keys__()
        key = key[0] if isinstance(key, list) else key
        layer[(name, i)] = (_checked_part, i, counts[i], str(t.elem), key, start)
        start += counts[i]
    dsk = HighLevelGraph.from_collections(name, MaterializedLayer(layer), dependencies=parts)
    return collection(dsk, name, counts, whole)


def _checked_part(i: int, count: int, elem: str, part: Any, start: int = 0) -> Part:
    if not isinstance(part, Array):
        if type(part).__module__.startswith("pyarrow"):
            part = from_arrow(part)
        else:
            raise TypeError(f"from_delayed: part {i} is a {type(part).__module__}."
                            f"{type(part).__qualname__}, not a lazyk array")
    want = dshape(elem)
    t = part.type
    if not isinstance(t, T.FixedDim) or t.size != count:
        raise ShapeError(f"from_delayed: part {i} has type {t}, not {count} rows")
    if t.elem != want:
        try:
            if union(want, t.elem) != want:
                raise ValueError
        except ValueError:
            raise TypeMatchError(f"from_delayed: part {i} has type {t}, not {count} * "
                                 f"{want}") from None
        part = _widened(part, want)  # all-present masks
    return Part(part, start)


def _widened(a: Array, elem: T.Type) -> Array:
    """`a` as rows of `elem` (its type with more options): all-present masks added to its
    buffers; strings, bytes and dates, which have no buffers here, as Python values."""
    try:
        return build(widen(_columns(a), elem))
    except NotSupportedError:
        return array(a.to_list(), T.FixedDim(a.type.size, elem))


def _from_dask(x: Any) -> RaggedArray:
    """A Dask array as a collection: its chunks along axis 0 (of sizes known, or known once
    computed: `nan`, e.g. after boolean indexing); masked chunks give `?T`."""
    if x.ndim == 0 or any(n != n for n in x.shape[1:]):
        raise NotSupportedError(f"from_ragged: a Dask array of shape {x.shape} (it needs an "
                                "axis 0 to split, and inner dims of known size)")
    known = not any(c != c for c in x.chunks[0])
    # (boolean indexing gives plain metadata over masked chunks: an input's says so)
    option = isinstance(x._meta, np.ma.MaskedArray) or not known and any(
        getattr(layer, "collection_annotations", None) and str(layer.collection_annotations.get(
            "chunk_type", "")).startswith("numpy.ma.") for layer in x.dask.layers.values())
    if x.ndim > 1:
        x = x.rechunk({d: -1 for d in range(1, x.ndim)})
    name = f"lazyk-rows-{tokenize(x.name)}"
    rest = (0,) * (x.ndim - 1)
    starts = np.concatenate([[0], np.cumsum(x.chunks[0])]).astype(int).tolist() if known \
        else [None] * len(x.chunks[0])
    layer = {(name, i): (_from_block, option, (x.name, i) + rest, starts[i])
             for i in range(len(x.chunks[0]))}
    t = fixed_type((x.shape[0] if known else 0,) + x.shape[1:], x.dtype)
    dims = []
    while isinstance(t, T.FixedDim):
        dims.append(t.size)
        t = t.elem
    t = T.Option(t) if option else t
    for n in reversed(dims[1:]):
        t = T.FixedDim(n, t)
    t = T.FixedDim(dims[0], t) if known else T.VarDim(t)
    describe_ragged(TypeOnly(t))  # numeric element types only
    dsk = HighLevelGraph.from_collections(name, MaterializedLayer(layer), dependencies=[x])
    return RaggedArray(dsk, name, x.chunks[0], t)


def _from_block(option: bool, block: Any, start: int | None = 0) -> Part:
    if not option:
        return Part(array(block_data(block)), start)
    values = np.ascontiguousarray(np.ma.getdata(block))
    return Part(masked(values, ~np.ma.getmaskarray(block)), start)


def _elem(a: Array) -> T.Type:
    t = a.type
    if not isinstance(t, T.FixedDim):
        raise NotSupportedError(f"from_ragged: an array of type {t} has no outer rows to "
                                "split (it needs a leading fixed dimension)")
    _check_elem(t, "from_ragged")
    return t.elem


def _check_elem(t: T.Type, what: str) -> None:
    """NotSupportedError unless rows of type `t` hold numbers, strings or records."""
    u = t
    while isinstance(u, (T.FixedDim, T.VarDim)) or \
            isinstance(u, T.Option) and isinstance(u.elem, T.VarDim):  # (?var rows too)
        u = u.elem
    if isinstance(u, T.Record):
        return
    if isinstance(u, T.Option) and isinstance(u.elem, (T.Record, T.Tuple)):
        raise NotSupportedError(f"{what}: rows of type {t}: records that may be missing "
                                "(?{...}) are not split into partitions; records that are "
                                "never missing are, under fixed, var and ?var dims")
    try:
        describe(t, held=True)
    except (NotSupportedError, ValueError, TypeError):
        raise NotSupportedError(f"{what}: rows of type {t} are not supported (fixed, var and "
                                "?var dims over numbers, strings, bytes, dates, times or ?T; "
                                "records under fixed and var dims)") from None


def block_data(x: Any) -> np.ndarray:
    if isinstance(x, np.ma.MaskedArray):
        raise NotSupportedError("a Dask array of NumPy masked arrays in a lazyk expression: "
                                "make its data a lazyk ?T collection (lazyk.dask.from_ragged "
                                "of lazyk arrays with missing values)")
    return np.asarray(x)


def fixed_type(shape: tuple, dtype: Any) -> T.Type:
    return array(np.empty(tuple(shape), dtype)).type if not shape or not shape[0] else \
        T.FixedDim(shape[0], array(np.empty((0,) + tuple(shape[1:]), dtype)).type.elem)


def split_dask_leaves(e: Expr) -> Expr:
    """`e` with its Dask array leaves of the longest axis 0 made collections split by that
    axis's chunks (the first leaf's; the others rechunked to match): row work over Dask
    arrays runs on their chunks as partitions of rows. Shorter leaves stay as they are
    (passed whole to every task)."""
    sized = {k: leaf_data(v).array for k, v in e.env.items()
             if isinstance(leaf_data(v), DaskLeaf) and leaf_data(v).array.ndim}
    if not sized:
        return e
    n = max(x.shape[0] for x in sized.values())
    chunks, nodes, env = None, {}, dict(e.env)
    for name, x in sized.items():
        if x.shape[0] != n:
            continue
        if chunks is None:
            chunks = x.chunks[0]
        elif x.chunks[0] != chunks:
            x = x.rechunk({0: chunks})
        r = _from_dask(x)
        nodes[name] = r.node
        del env[name]
        env[r.name] = r.env[r.name]
    root = rewrite(e.node, lambda node, srcs: nodes.get(node.arg, node) if node.op == "input"
                   else node.replace(srcs=srcs) if srcs != node.srcs else node)
    used = {node.arg for node in toposort(root) if node.op == "input"}
    return Expr(root, {k: v for k, v in env.items() if k in used})

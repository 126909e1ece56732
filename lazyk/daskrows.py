"""Ragged and missing-value data on Dask: lazyk arrays split by outer rows.

`lazyk.dask.from_ragged(x, rows_per_part)` (or a list of lazyk arrays, one per Parquet row
group / Arrow chunk; a `pyarrow.ChunkedArray`; a Dask array, masked chunks giving `?T`) and
`lazyk.dask.from_delayed(parts, type, row_counts)` (partitions made by Dask tasks) give a
`RaggedArray`: a Dask collection whose partitions are lazyk arrays holding consecutive
outer rows (row slices of `x` are views, nothing is copied).
It is also a lazyk operand: `lazyk.sin(r) * 2`, `r.sum(axis=-1)`, `r - r.mean(axis=0)` build
lazy expressions, and `lazyk.dask.evaluate(expr)` turns one into Dask layers:

- the work that keeps the rows (elementwise, reductions over inner axes) is ONE blockwise
  layer whose tasks run lazyk's kernels on one partition each. A result with var dims or
  missing values is a `RaggedArray` with the same partitioning (`compute()` concatenates the
  partitions: contents joined, offsets shifted); a plain result is a `dask.array` whose
  chunks along axis 0 are the partitions' row counts;
- a reduction over axis 0 (or all axes) runs per partition (keepdims), then lazyk combines
  the partial results in a tree (`sum prod min max any all count mean`, `skipna`,
  `skipnan`, `initial`): a single-partition `RaggedArray`, or a `dask.array` when plain.
  Over data with missing rows (`?var`) such a reduction is refused (NotSupportedError).
  A larger expression may use it (`r - r.mean(axis=0)`): every partition task receives it.

Operands: collections with the same row counts per partition (else ShapeError naming the
operands and the counts); NumPy, fixed lazyk and Dask arrays join, split by the same rows
when their axis 0 is the rows' axis, else passed whole to every task; Python scalars.
`expr.eval()` over a collection raises NotSupportedError (nothing computes behind your back).
"""
from __future__ import annotations

import hashlib
import uuid
from typing import Any

import dask
import numpy as np
from dask.base import tokenize
from dask.blockwise import blockwise
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
from dask.threaded import get as threaded_get

from lazyk import arrmeta as M
from lazyk import expr as lx
from lazyk import types as T
from lazyk.array import Array, array
from lazyk.errors import BindError, NotSupportedError, ShapeError, TypeMatchError
from lazyk.expr import DaskLeaf, Expr, as_expr, broadcast_shapes, leaf_data
from lazyk.graph import REDUCE_OP, Node, arg_key, rewrite, toposort
from lazyk.interchange import columns as _columns
from lazyk.interchange import from_arrow, masked, offsets_array, regular
from lazyk.leaves import Placeholder, RaggedLeaf, describe_ragged
from lazyk.typeparse import dshape

_HINT = ("this expression has partitioned lazyk leaves (lazyk.dask.from_ragged): "
         "lazyk.dask.evaluate(expr) gives a Dask collection (then .compute() it)")
_COMBINE_OPS = ("sum", "prod", "min", "max", "any", "all")


class _TypeOnly:
    """Stands for a partitioned array in an expression: its type, and no data to run on."""

    __slots__ = ("type",)

    def __init__(self, t: T.Type):
        self.type = t

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotSupportedError(_HINT)

    def __reduce__(self):
        return (_TypeOnly, (self.type,))


class RowsLeaf(RaggedLeaf):
    """Env entry of a `RaggedArray` in an expression (`array` is a type-only stand-in)."""

    __slots__ = ("rows",)

    def __init__(self, rows: RaggedArray, t: T.Type, option: bool):
        super().__init__(_TypeOnly(t), option)
        self.rows = rows


# ---------------------------------------------------------------- the collection
class RaggedArray(Expr):
    """A Dask collection of lazyk arrays split by outer rows; also a lazyk operand.

    `row_counts` holds the rows of each partition (None for a single result that is not
    split by rows, e.g. a reduction over axis 0). `compute()` gives one lazyk array.
    Build one with `lazyk.dask.from_ragged`; `lazyk.dask.evaluate(expr)` over it gives
    another (or a `dask.array` for plain results).
    """

    __slots__ = ("_dsk", "_name", "_counts", "_ltype")

    def __init__(self, dsk: HighLevelGraph, name: str, counts: tuple | None, t: T.Type):
        self._dsk, self._name, self._ltype = dsk, name, t
        self._counts = None if counts is None else tuple(int(c) for c in counts)
        shape, dtype, option = describe_ragged(_TypeOnly(t))
        super().__init__(Node("input", dtype, shape, (), name), {name: RowsLeaf(self, t, option)})

    # --- what it is
    @property
    def npartitions(self) -> int:
        """Number of partitions (tasks)."""
        return 1 if self._counts is None else len(self._counts)

    @property
    def row_counts(self) -> tuple | None:
        """Outer rows per partition, or None for a single result not split by rows."""
        return self._counts

    @property
    def name(self) -> str:
        """The Dask key name of the partitions."""
        return self._name

    def __repr__(self) -> str:
        return f"lazyk.dask.RaggedArray<{self.type}, npartitions={self.npartitions}>"

    # --- Dask collection protocol
    def __dask_graph__(self) -> HighLevelGraph:
        return self._dsk

    def __dask_keys__(self) -> list:
        return [(self._name, i) for i in range(self.npartitions)]

    def __dask_layers__(self) -> tuple:
        return (self._name,)

    def __dask_tokenize__(self) -> str:
        return self._name

    def __dask_postcompute__(self):
        return _finalize, ()

    def __dask_postpersist__(self):
        return self._rebuild, ()

    def _rebuild(self, dsk: Any, rename: dict | None = None) -> RaggedArray:
        name = (rename or {}).get(self._name, self._name)
        if not isinstance(dsk, HighLevelGraph):
            dsk = HighLevelGraph.from_collections(name, dsk, dependencies=())
        return RaggedArray(dsk, name, self._counts, self._ltype)

    __dask_scheduler__ = staticmethod(threaded_get)

    @staticmethod
    def __dask_optimize__(dsk: Any, keys: Any, **kwargs: Any) -> Any:
        return dsk

    def compute(self, **kwargs: Any) -> Array:
        """The whole array (partitions concatenated along axis 0) as one lazyk array."""
        return _plain_array(dask.compute(self, **kwargs)[0])

    def persist(self, **kwargs: Any) -> RaggedArray:
        """The same collection with its partitions computed and kept (in the cluster)."""
        return dask.persist(self, **kwargs)[0]

    def to_dask_array(self) -> Any:
        """A `dask.array` of the same partitions, for fixed dims over `T` or `?T`: chunks
        along axis 0 are the partitions' rows; `?T` chunks are NumPy masked arrays
        (missing = masked). NotSupportedError for var dims."""
        import dask.array as da

        t, shape = self.type, []
        while isinstance(t, T.FixedDim):
            shape.append(t.size)
            t = t.elem
        if not isinstance(t, (T.Scalar, T.Option)) or isinstance(t, T.Option) and \
                not isinstance(t.elem, T.Scalar):
            raise NotSupportedError(f"to_dask_array of {self.type}: only fixed dimensions "
                                    "over T or ?T have a dask.array form")
        option = isinstance(t, T.Option)
        dtype = self.dtype
        name = f"lazyk-to-dask-{tokenize(self._name)}"
        rest = (0,) * max(len(shape) - 1, 0)
        keys = self.__dask_keys__()
        layer = {(name,) + ((i,) + rest if shape else ()): (_to_block, option, k)
            for i, k in enumerate(keys)}
        dsk = HighLevelGraph.from_collections(name, MaterializedLayer(layer), dependencies=[self])
        first = self._counts if self._counts is not None else tuple(shape[:1])
        chunks = ((first,) + tuple((n,) for n in shape[1:])) if shape else ()
        meta = np.ma.masked_array(np.empty((0,) * len(shape), dtype)) if option else \
            np.empty((0,) * len(shape), dtype)
        return da.Array(dsk, name, chunks, meta=meta)

    # --- no eager evaluation: the collection is computed by Dask
    def eval(self, out: Any = None, casting: str = "same_kind"):
        raise NotSupportedError("a lazyk.dask.RaggedArray is computed by Dask: .compute() "
                                "gives a lazyk array")

    def to_numpy(self):
        self.eval()

    def to_list(self):
        self.eval()

    def __array__(self, dtype=None, copy=None):
        self.eval()


def _to_block(option: bool, part: Any) -> np.ndarray:
    """One partition as NumPy data (a masked array for `?T`)."""
    part = _unwrap(part)
    if not isinstance(part, Array):
        return np.asarray(part)
    if not option:
        return part.to_numpy()
    if not isinstance(part.type, T.FixedDim):  # 0-d
        v = part.to_list()
        return np.ma.masked_array(np.zeros((), part.dtype) if v is None else
                                  np.asarray(v, part.dtype), mask=v is None)
    col, sizes = _columns(part), [part.type.size]
    while col[0] == "regular":
        sizes.append(col[1])
        col = col[2]
    values = col[2][1].reshape(sizes)
    return np.ma.masked_array(values, mask=~col[1].reshape(sizes))


def _finalize(parts: Any) -> Array:
    parts = [_unwrap(p) for p in parts]
    out = parts[0] if len(parts) == 1 else concat(parts)
    if isinstance(out, Array) and not M.is_plain(out.type):
        # NOTE: distributed runs this step on a worker and sends the result to the client.
        out = _Joined._from_parts(out.type, out.meta, out.ptr, out.owner, out.readonly)
    return out


class _Joined(Array):
    """A computed collection: a lazyk array that pickles as its buffers and unpickles as a
    plain `lazyk.Array` (a ragged `Array` alone pickles as Python lists)."""

    __slots__ = ()

    def __reduce__(self):
        col = _buffers(self)
        return (_build, (col,)) if col is not None else super().__reduce__()


def _plain_array(x: Any) -> Any:
    if type(x) is _Joined:
        return Array._from_parts(x.type, x.meta, x.ptr, x.owner, x.readonly)
    return x


class _Part:
    """A partition between tasks: a lazyk array that pickles as the buffers of the rows it
    holds (offsets rebased, masks, values), never as Python lists or the whole content
    that a row slice points into."""

    __slots__ = ("array",)

    def __init__(self, a: Array):
        self.array = a

    def __reduce__(self):
        col = _buffers(self.array)
        return (_unpack, (col,)) if col is not None else (_Part, (self.array,))


def _buffers(a: Array) -> tuple | None:
    """The column tree of `a`'s own rows (`_build` makes it again), or None."""
    if not isinstance(a.type, T.FixedDim) or M.is_plain(a.type):
        return None
    try:
        col = _trim(_columns(a))
    except NotSupportedError:
        return None
    return col if _buildable(col) else None


def _unpack(col: tuple) -> _Part:
    return _Part(_build(col))


def _unwrap(x: Any) -> Any:
    return x.array if isinstance(x, _Part) else x


def _trim(col: tuple) -> tuple:
    """A column tree cut to the entries its rows reach, offsets starting at 0."""
    kind = col[0]
    if kind == "list":
        o = col[1]
        lo, hi = int(o[0]), int(o[-1])
        return ("list", o - o[0] if lo else o, _trim(_cut(col[2], lo, hi)))
    if kind in ("option", "regular"):
        return (kind, col[1], _trim(col[2]))
    return col


def _buildable(col: tuple) -> bool:
    if col[0] == "numpy":
        return True
    if col[0] == "option" and col[2][0] not in ("numpy", "list"):
        return False
    return _buildable(col[2])


# ---------------------------------------------------------------- making collections
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
            or a Dask array (one partition per chunk along axis 0; NumPy masked-array
            chunks become `?T`: masked = missing).
        rows_per_part: outer rows per partition when `x` is one array (the last may be
            shorter); not used with a list.
    Raises:
        TypeError: an object that is not a lazyk array (naming its type).
        NotSupportedError: element types expressions do not take (strings, records).
        ValueError: a missing or non-positive `rows_per_part`; parts of different types.
    """
    if type(x).__module__.startswith("dask.array") and hasattr(x, "chunks"):
        return _from_dask(x)
    if isinstance(x, Array):
        if rows_per_part is None or int(rows_per_part) < 1:
            raise ValueError(f"from_ragged(x, rows_per_part): rows_per_part must be a positive "
                             f"int, not {rows_per_part!r}")
        _elem(x)
        n, step = x.type.size, int(rows_per_part)
        parts = [x[i:i + step] for i in range(0, n, step)] or [x]
    else:
        if rows_per_part is not None and isinstance(x, (list, tuple)):
            raise ValueError("rows_per_part applies to one lazyk array; a list's elements "
                             "are the partitions")
        chunks = getattr(x, "chunks", None)
        if type(x).__module__.startswith("pyarrow") and chunks is not None:
            x = [from_arrow(c) for c in chunks]
        if not isinstance(x, (list, tuple)) or not x:
            raise TypeError(f"from_ragged takes a lazyk Array, a non-empty list of them or a "
                            f"pyarrow.ChunkedArray, not {type(x).__module__}."
                            f"{type(x).__qualname__}")
        parts = list(x)
        for p in parts:
            if not isinstance(p, Array):
                raise TypeError(f"from_ragged: partitions must be lazyk arrays, not "
                                f"{type(p).__module__}.{type(p).__qualname__}")
        elem = _elem(parts[0])
        for i, p in enumerate(parts):
            try:
                elem = _union(elem, _elem(p))
            except ValueError:
                raise ValueError(f"from_ragged: partition {i} has type {p.type}, partition 0 "
                                 f"{parts[0].type}: the rows must be of one type") from None
        # Parts without missing values where others have them (an Arrow chunk or Parquet
        # row group without nulls) get all-present masks: one type for every partition.
        parts = [p if p.type.elem == elem else _build(_widen(_columns(p), elem))
                 for p in parts]
    name = f"lazyk-rows-{uuid.uuid4().hex}"
    layer = MaterializedLayer({(name, i): _Part(p) for i, p in enumerate(parts)})
    counts = tuple(p.type.size for p in parts)
    t = T.FixedDim(sum(counts), parts[0].type.elem)
    return RaggedArray(HighLevelGraph({name: layer}, {name: set()}), name, counts, t)


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
    counts = tuple(int(c) for c in row_counts)
    if len(counts) != len(parts) or any(c < 0 for c in counts):
        raise ValueError(f"from_delayed: {len(parts)} parts need as many row counts >= 0, "
                         f"not {counts}")
    whole = T.FixedDim(sum(counts), t.elem)
    describe_ragged(_TypeOnly(whole))  # numeric element types only
    name = f"lazyk-rows-{tokenize([p.__dask_keys__() for p in parts], str(whole), counts)}"
    layer = {}
    for i, p in enumerate(parts):
        key = p.__dask_keys__()
        key = key[0] if isinstance(key, list) else key
        layer[(name, i)] = (_checked_part, i, counts[i], str(t.elem), key)
    dsk = HighLevelGraph.from_collections(name, MaterializedLayer(layer), dependencies=parts)
    return RaggedArray(dsk, name, counts, whole)


def _checked_part(i: int, count: int, elem: str, part: Any) -> Array:
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
            if _union(want, t.elem) != want:
                raise ValueError
        except ValueError:
            raise TypeMatchError(f"from_delayed: part {i} has type {t}, not {count} * "
                                 f"{want}") from None
        part = _build(_widen(_columns(part), want))  # all-present masks
    return _Part(part)


def _from_dask(x: Any) -> RaggedArray:
    """A Dask array as a collection: its chunks along axis 0; masked chunks give `?T`."""
    if x.ndim == 0 or any(not isinstance(c, int) or c != c for c in x.chunks[0]):
        raise NotSupportedError(f"from_ragged: a Dask array of shape {x.shape} (it needs an "
                                "axis 0 of known chunk sizes)")
    option = isinstance(x._meta, np.ma.MaskedArray)
    if x.ndim > 1:
        x = x.rechunk({d: -1 for d in range(1, x.ndim)})
    name = f"lazyk-rows-{tokenize(x.name)}"
    rest = (0,) * (x.ndim - 1)
    layer = {(name, i): (_from_block, option, (x.name, i) + rest)
             for i in range(len(x.chunks[0]))}
    t = _fixed_type(x.shape, x.dtype)
    if option:
        dims = []
        while isinstance(t, T.FixedDim):
            dims.append(t.size)
            t = t.elem
        t = T.Option(t)
        for n in reversed(dims):
            t = T.FixedDim(n, t)
    describe_ragged(_TypeOnly(t))  # numeric element types only
    dsk = HighLevelGraph.from_collections(name, MaterializedLayer(layer), dependencies=[x])
    return RaggedArray(dsk, name, x.chunks[0], t)


def _from_block(option: bool, block: Any) -> Array:
    if not option:
        return _Part(array(_block(block)))
    values = np.ascontiguousarray(np.ma.getdata(block))
    return _Part(masked(values, ~np.ma.getmaskarray(block)))


def _elem(a: Array) -> T.Type:
    t = a.type
    if not isinstance(t, T.FixedDim):
        raise NotSupportedError(f"from_ragged: an array of type {t} has no outer rows to "
                                "split (it needs a leading fixed dimension)")
    try:
        describe_ragged(a)
    except (NotSupportedError, ValueError, TypeError):
        raise NotSupportedError(f"from_ragged: expressions over {t} are not supported (fixed "
                                "and var dims over numeric T or ?T only)") from None
    return t.elem


def _union(a: T.Type, b: T.Type) -> T.Type:
    """The type of both with options wherever either has one (ValueError otherwise)."""
    oa, ob = isinstance(a, T.Option), isinstance(b, T.Option)
    a, b = (a.elem if oa else a), (b.elem if ob else b)
    if isinstance(a, T.VarDim) and isinstance(b, T.VarDim):
        u: T.Type = T.VarDim(_union(a.elem, b.elem))
    elif isinstance(a, T.FixedDim) and isinstance(b, T.FixedDim) and a.size == b.size:
        u = T.FixedDim(a.size, _union(a.elem, b.elem))
    elif a == b:
        u = a
    else:
        raise ValueError(f"{a} and {b}")
    return T.Option(u) if oa or ob else u


def _widen(col: tuple, elem: T.Type) -> tuple:
    """A column tree (entries of type `elem` but for options) with all-present masks where
    `elem` has options."""
    if isinstance(elem, T.Option):
        if col[0] != "option":
            col = ("option", np.ones(_entries(col), bool), col)
        return ("option", col[1], _widen(col[2], elem.elem))
    if col[0] == "list":
        return ("list", col[1], _widen(col[2], elem.elem))
    if col[0] == "regular":
        return ("regular", col[1], _widen(col[2], elem.elem))
    return col


def _entries(col: tuple) -> int:
    kind = col[0]
    if kind == "numpy":
        return len(col[1])
    if kind == "list":
        return len(col[1]) - 1
    if kind == "option":
        return len(col[1])
    return _entries(col[2]) // max(col[1], 1)


# ---------------------------------------------------------------- concatenation
def concat(parts: list) -> Array:
    """Lazyk arrays (or NumPy arrays) of one type joined along axis 0: contents joined,
    offsets shifted (NumPy; offsets-form views are read in place)."""
    arrays = [p if isinstance(p, Array) else array(np.asarray(p)) for p in parts]
    if all(a.type.elem == arrays[0].type.elem for a in arrays) and \
            all(_plain(a) for a in arrays):
        return array(np.concatenate([a.to_numpy() for a in arrays]))
    return _build(_cat([_columns(a) for a in arrays]))


def _plain(a: Array) -> bool:
    try:
        a.to_numpy()
        return True
    except NotSupportedError:
        return False


def _cut(col: tuple, lo: int, hi: int) -> tuple:
    """Entries lo..hi of a column tree (`interchange._columns`)."""
    kind = col[0]
    if kind == "numpy":
        return ("numpy", col[1][lo:hi])
    if kind == "option":
        return ("option", col[1][lo:hi], _cut(col[2], lo, hi))
    if kind == "list":
        return ("list", col[1][lo:hi + 1], col[2])
    size = col[1]
    return ("regular", size, _cut(col[2], lo * size, hi * size))


def _cat(cols: list) -> tuple:
    kinds = {c[0] for c in cols}
    if len(kinds) != 1 or kinds == {"regular"} and len({c[1] for c in cols}) != 1:
        raise ShapeError("partitions of different types cannot be joined")
    kind = cols[0][0]
    if kind == "numpy":
        return ("numpy", np.concatenate([c[1] for c in cols]))
    if kind == "option":
        return ("option", np.concatenate([c[1] for c in cols]), _cat([c[2] for c in cols]))
    if kind == "regular":
        return ("regular", cols[0][1], _cat([c[2] for c in cols]))
    offsets, children, base = [np.zeros(1, np.int64)], [], 0
    for c in cols:
        o = c[1].astype(np.int64)
        offsets.append(o[1:] - o[0] + base)
        base += int(o[-1] - o[0])
        children.append(_cut(c[2], int(o[0]), int(o[-1])))
    return ("list", np.concatenate(offsets), _cat(children))


def _build(col: tuple) -> Array:
    kind = col[0]
    if kind == "numpy":
        return array(np.ascontiguousarray(col[1]))
    if kind == "regular":
        return regular(_build(col[2]), col[1])
    if kind == "list":
        return offsets_array(col[1], _build(col[2]), check=None)
    mask, child = col[1], col[2]
    if child[0] == "numpy":
        return masked(child[1], mask)
    if child[0] == "list":
        return offsets_array(child[1], _build(child[2]), validity=mask, check=None)
    raise NotSupportedError("joining partitions with missing fixed-size rows (?N * T)")


# ---------------------------------------------------------------- one partition's task
def _shape_of(node: Node, srcs: tuple) -> Node:
    """`node` over new sources, with its shape computed again from theirs."""
    if node.op == REDUCE_OP:
        axes, keep = node.arg[1], node.arg[2]
        shape = tuple((1 if d in axes else n) for d, n in enumerate(srcs[0].shape)
                      if keep or d not in axes)
        return node.replace(shape=shape, srcs=srcs)
    if not srcs:
        return node
    return node.replace(shape=broadcast_shapes(node.op, [s.shape for s in srcs]), srcs=srcs)


def _graph_key(root: Node) -> str:
    order = toposort(root)
    index = {id(n): k for k, n in enumerate(order)}
    nodes = [(n.op, n.dtype.str, n.shape, tuple(index[id(s)] for s in n.srcs), arg_key(n.arg))
             for n in order]
    return hashlib.sha256(repr(nodes).encode()).hexdigest()


class _Task:
    """Runs the expression `root` (leaves named x0, x1, ...) on one partition's operands."""

    __slots__ = ("root", "numpy")

    def __init__(self, root: Node, numpy: bool):
        self.root, self.numpy = root, numpy

    def __call__(self, *values: Any) -> Any:
        leaves = {f"x{i}": as_expr(_unwrap(v)) for i, v in enumerate(values)}
        env: dict = {}
        for e in leaves.values():
            env.update(e.env)

        def concrete(node: Node, srcs: tuple) -> Node:
            return leaves[node.arg].node if node.op == "input" else _shape_of(node, srcs)

        out = Expr(rewrite(self.root, concrete), env).eval()
        return out.to_numpy() if self.numpy else _Part(out)

    def __reduce__(self):
        return (_Task, (self.root, self.numpy))

    def __dask_tokenize__(self):
        return ("lazyk.rows-task", _graph_key(self.root), self.numpy)


class _Combine:
    """Joins partial reductions (each with the reduced axes kept) and reduces them again."""

    __slots__ = ("arg", "dtype", "keepdims")

    def __init__(self, arg: tuple, dtype: str, keepdims: bool):
        self.arg, self.dtype, self.keepdims = arg, dtype, keepdims

    def __call__(self, *parts: Any) -> Array:
        op, axes = self.arg[0], self.arg[1]
        skipna = len(self.arg) > 3 and bool(self.arg[3])
        initial = self.arg[4] if len(self.arg) > 4 else None
        dt = None if op in ("any", "all") else np.dtype(self.dtype)
        parts = [_unwrap(p) for p in parts]
        x = concat(parts) if len(parts) > 1 else parts[0]
        return _Part(lx.reduce(op, x, axis=axes, keepdims=self.keepdims, skipna=skipna,
                               dtype=dt, initial=initial).eval())

    def __reduce__(self):
        return (_Combine, (self.arg, self.dtype, self.keepdims))

    def __dask_tokenize__(self):
        return ("lazyk.rows-combine", arg_key(self.arg), self.dtype, self.keepdims)


# ---------------------------------------------------------------- expression -> layers
def evaluate_rows(e: Expr, split_every: Any = None) -> Any:
    """`lazyk.dask.evaluate` for an expression with `RaggedArray` leaves (see module doc)."""
    return _Planner(e, split_every).run()


class _Planner:
    """Turns one expression over collections into Dask layers (`run`)."""

    def __init__(self, e: Expr, split_every: Any):
        # Dask array leaves are typed like placeholders here (the array is kept aside).
        self.dask = {k: leaf_data(v) for k, v in e.env.items()
                     if isinstance(leaf_data(v), DaskLeaf)}
        self.env = {k: Placeholder(k, v.shape, v.dtype) if k in self.dask else v
                    for k, v in e.env.items()}
        self.root = e.node
        if isinstance(split_every, dict):  # per axis, as dask.array: the rows' axis
            split_every = split_every.get(0)
        self.split_every = max(2, int(split_every or 8))
        self.rows: dict = {}  # leaf name -> RaggedArray (partitioned or whole)
        self.split: dict = {}  # nodes whose axis 0 is the partitioned rows' axis, by id
        self.counts = self._counts()

    # --- operands
    def _counts(self) -> tuple:
        seen = []
        for name, v in self.env.items():
            if isinstance(v, RowsLeaf) and v.rows.row_counts is not None:
                seen.append((name, v.rows))
        if not seen:
            return None
        counts = seen[0][1].row_counts
        for name, r in seen[1:]:
            if r.row_counts != counts:
                a = seen[0][1]
                raise ShapeError(
                    f"the partitioned operands are split differently: {a.type} in "
                    f"{a.npartitions} partitions of {_show(counts)} rows and {r.type} in "
                    f"{r.npartitions} partitions of {_show(r.row_counts)} rows; build them "
                    "with the same rows per partition")
        return counts

    def _operand(self, name: str) -> RaggedArray:
        """Leaf `name` as a collection: split by the rows when its axis 0 is theirs."""
        got = self.rows.get(name)
        if got is not None:
            return got
        v = self.env[name]
        if isinstance(v, RowsLeaf):
            r = v.rows
        else:
            data = self.dask.get(name) or leaf_data(v)
            if isinstance(data, DaskLeaf):
                r = _dask_rows(data.array, self._split_here(data.array.shape))
            elif isinstance(data, Placeholder):
                raise BindError(f"placeholder {name!r} has no data: lazyk.compile the "
                                "expression and call it on each partition")
            elif isinstance(data, RaggedLeaf):
                raise NotSupportedError(
                    f"a lazyk array of type {data.array.type} in an expression over "
                    "partitioned rows: make it a collection too, lazyk.dask.from_ragged(x, "
                    "rows_per_part), with the same rows per partition")
            else:
                data = np.asarray(data)
                r = _numpy_rows(data, self._split_here(data.shape))
        self.rows[name] = r
        return r

    def _split_here(self, shape: tuple) -> tuple | None:
        """The row counts when an operand of this shape is split by the rows (its axis 0
        is as long as theirs), else None (it goes whole to every task)."""
        n = sum(self.counts) if self.counts else None
        if self.counts and len(shape) >= 1 and shape[0] == n and n != 1:
            return self.counts
        return None

    # --- the graph
    def run(self) -> Any:
        root = rewrite(self.root, self._visit)
        if root.op == "input":
            r = self._operand(root.arg)
            if isinstance(self.env[root.arg], RowsLeaf) and not _is_plain(Expr(root, self.env)):
                return r
        return self._layer(root, whole=not self._is_split(root), prefix="lazyk-rows")

    def _is_split(self, node: Node) -> bool:
        return id(node) in self.split

    def _visit(self, node: Node, srcs: tuple) -> Node:
        if srcs != node.srcs:
            node = node.replace(srcs=srcs)
        if node.op == "input":
            v = self.env[node.arg]
            if isinstance(v, RowsLeaf):
                if v.rows.row_counts is not None:
                    self.split[id(node)] = node
                return node
            shape = getattr(leaf_data(v), "shape", None)
            if shape is not None and self._split_here(tuple(shape)):
                self.split[id(node)] = node
            return node
        if not any(self._is_split(s) for s in srcs):
            return node
        for s in srcs:
            if self._is_split(s) and s.ndim != node.ndim and node.op != REDUCE_OP:
                raise ShapeError(
                    f"{node.op}: an operand split by rows ({s.type_text()}) must have as many "
                    f"dims as the result ({node.type_text()}): its axis 0 holds the rows")
        if node.op == REDUCE_OP and 0 in node.arg[1]:
            return self._global(node)
        self.split[id(node)] = node
        return node

    def _global(self, node: Node) -> Node:
        """A reduction over the rows' axis: one partial per partition (the reduced axes
        kept), combined by lazyk in a tree of `split_every` fan-in."""
        op, axes = node.arg[:2]
        if op == "mean":
            return rewrite(self._mean(node).node, self._visit)
        if op not in _COMBINE_OPS:
            raise NotSupportedError(f"{op} over axis 0 of partitioned rows")
        src_type = Expr(node.srcs[0], self.env).type
        if "?var" in str(src_type):
            # NOTE: a partition of only missing rows folds to a missing (or, with skipna,
            # empty) row that would hide or fake a row-length mismatch between partitions.
            raise NotSupportedError(
                f"{op} over axis 0 of partitioned {src_type} on Dask: missing rows (?var) "
                "fold only within one partition; reduce the inner axes first, or compute")
        kept = [d for d in range(len(node.srcs[0].shape)) if d not in axes]
        if kept and kept[0] >= 2 and " var " in f" {Expr(node, self.env).type} ":
            # NOTE: a partition whose folded levels above the first kept one hold nothing
            # folds to nothing, which its partial (an empty row) cannot tell from a real
            # empty row: combined, it would pair with other partitions' rows.
            raise NotSupportedError(
                f"{op} over axes {list(axes)} of partitioned {src_type} on Dask: the result "
                "keeps var rows below two folded axes, which fold only within one "
                "partition; reduce over the inner axes first, or compute")
        src = Expr(node.srcs[0], self.env)
        if op in ("min", "max") and len(node.arg) <= 4 and not lx.has_options(src) and \
                node.dtype.kind in "biuf":
            return self._seeded(node, src)
        arg = (op, axes, True) + node.arg[3:]
        src = node.srcs[0]
        shape = tuple(1 if d in axes else n for d, n in enumerate(src.shape))
        parts = self._layer(Node(REDUCE_OP, node.dtype, shape, (src,), arg), whole=False,
                            prefix="lazyk-rows-partial", lazy=True)
        # Partitions without rows add nothing (and their rows would not line up).
        keys = [(parts.name, i) for i, c in enumerate(self.counts) if c] or [(parts.name, 0)]
        name = f"lazyk-rows-{op}-{tokenize(parts.name, arg_key(node.arg))}"
        tasks: dict = {}
        level = 0
        while len(keys) > self.split_every:
            nxt = []
            for j in range(0, len(keys), self.split_every):
                key = (f"{name}-{level}", j // self.split_every)
                tasks[key] = (_Combine(arg, node.dtype.str, True),
                              *keys[j:j + self.split_every])
                nxt.append(key)
            keys, level = nxt, level + 1
        final = (name, 0)
        tasks[final] = (_Combine(node.arg, node.dtype.str, bool(node.arg[2])), *keys)
        dsk = HighLevelGraph.from_collections(name, MaterializedLayer(tasks),
                                              dependencies=[parts])
        whole = RaggedArray(dsk, name, None, Expr(node, self.env).type)
        self.env[name] = whole.env[name]
        self.rows[name] = whole
        return whole.node

    def _seeded(self, node: Node, src: Expr) -> Node:
        """min / max of plain values without `initial`: a partition (or a part of one) with
        nothing to fold must not raise, so every partial is seeded with the dtype's
        extreme; a count over the same axes then raises NumPy's ValueError where the
        whole data has nothing to fold."""
        op, axes, keep = node.arg[:3]
        dt = node.dtype
        if dt.kind == "b":
            seed: Any = op == "min"
        elif dt.kind == "f":
            seed = float("inf") if op == "min" else float("-inf")
        else:
            info = np.iinfo(dt)
            seed = int(info.max if op == "min" else info.min)
        value = rewrite(lx.reduce(op, src, axis=axes, keepdims=keep, initial=seed).node,
                        self._visit)
        count = rewrite(lx.count(src, axis=axes, keepdims=keep).node, self._visit)
        v, c = self.rows[value.arg], self.rows[count.arg]
        name = f"lazyk-rows-{op}-checked-{tokenize(v.name, c.name)}"
        task = (_nonempty, op, (v.name, 0), (c.name, 0))
        dsk = HighLevelGraph.from_collections(name, MaterializedLayer({(name, 0): task}),
                                              dependencies=[v, c])
        whole = RaggedArray(dsk, name, None, Expr(node, self.env).type)
        self.env[name] = whole.env[name]
        self.rows[name] = whole
        return whole.node

    def _mean(self, node: Node) -> Expr:
        """mean = sum / count over the same axes; over ?T data an empty fold is missing."""
        axes, keep = node.arg[1], node.arg[2]
        skipna = len(node.arg) > 3 and bool(node.arg[3])
        src = Expr(node.srcs[0], self.env)
        total = lx.reduce("sum", src, axis=axes, keepdims=keep, skipna=skipna,
                          dtype=node.dtype)
        n = lx.count(src, axis=axes, keepdims=keep)
        value = lx.astype(lx.true_divide(total, n), node.dtype)
        if not lx.has_options(src):
            return value  # 0 / 0: NaN, as NumPy's mean of nothing
        nothing = lx.astype(lx.reduce("min", src, axis=axes, keepdims=keep, skipna=True),
                            node.dtype)  # missing exactly where nothing is present
        return lx.where(lx.equal(n, 0), nothing, value)

    def _layer(self, root: Node, whole: bool, prefix: str, lazy: bool = False) -> Any:
        """ONE blockwise layer running `root` on each partition (or once, `whole`): a
        `RaggedArray`, or a `dask.array` for a plain result (unless `lazy`)."""
        names = [n.arg for n in toposort(root) if n.op == "input"]
        params = {name: f"x{i}" for i, name in enumerate(names)}
        task_root = rewrite(root, lambda n, s: n.replace(arg=params[n.arg]) if n.op == "input"
                            else n.replace(srcs=s))
        out = Expr(root, self.env)
        plain = not lazy and _is_plain(out)
        ndim = root.ndim
        deps = [self._operand(name) for name in names]
        args: list = []
        for r in deps:
            args += [r.name, "i"]
        task = _Task(task_root, plain)
        name = f"{prefix}-{tokenize(task, [r.name for r in deps], whole)}"
        numblocks = {r.name: (1 if whole else r.npartitions,) for r in deps}
        if plain and ndim == 0:
            layer = MaterializedLayer({(name,): (task, *[(r.name, 0) for r in deps])})
        else:
            extra = "".join(chr(ord("j") + k) for k in range(ndim - 1)) if plain else ""
            layer = blockwise(task, name, "i" + extra, *args, numblocks=numblocks,
                              new_axes={c: 1 for c in extra}, concatenate=True)
        dsk = HighLevelGraph.from_collections(name, layer, dependencies=deps)
        if not plain:
            return RaggedArray(dsk, name, None if whole else self.counts, out.type)
        import dask.array as da

        shape = tuple(root.shape)
        chunks = ((shape[0],) if whole else self.counts,) + tuple((n,) for n in shape[1:]) \
            if ndim else ()
        return da.Array(dsk, name, chunks, meta=np.empty((0,) * ndim, root.dtype))


def _nonempty(op: str, value: Any, count: Any) -> Any:
    """`value`, unless some result of the reduction folded nothing (NumPy's ValueError)."""
    n = _unwrap(count)
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
        raise ValueError(f"zero-size array to reduction operation {op}imum which has no "
                         "identity")
    return value


def _show(counts: tuple) -> str:
    text = ", ".join(map(str, counts[:6]))
    return f"({text}{', ...' if len(counts) > 6 else ''})"


def _is_plain(e: Expr) -> bool:
    t = e.type
    while isinstance(t, T.FixedDim):
        t = t.elem
    return isinstance(t, T.Scalar)


def _numpy_rows(a: np.ndarray, counts: tuple | None) -> RaggedArray:
    """A NumPy operand as a collection: row slices (views) or the whole array once."""
    name = f"lazyk-operand-{tokenize(a, counts)}"
    if counts is None:
        layer = {(name, 0): a}
    else:
        bounds = np.concatenate([[0], np.cumsum(counts)])
        layer = {(name, i): a[bounds[i]:bounds[i + 1]]
                 for i in range(len(counts))}
    dsk = HighLevelGraph({name: MaterializedLayer(layer)}, {name: set()})
    return RaggedArray(dsk, name, counts, _fixed_type(a.shape, a.dtype))


def _dask_rows(x: Any, counts: tuple | None) -> RaggedArray:
    """A Dask array operand as a collection: rechunked to the rows' partitions, or whole."""
    x = x.rechunk(((counts,) + (-1,) * (x.ndim - 1)) if counts else -1)
    name = f"lazyk-operand-{tokenize(x.name, counts)}"
    rest = (0,) * max(x.ndim - 1, 0)
    if counts is None:
        keys = [(x.name,) + (0,) * x.ndim]
    else:
        keys = [(x.name, i) + rest for i in range(len(counts))]
    layer = {(name, i): (_block, k) for i, k in enumerate(keys)}
    dsk = HighLevelGraph.from_collections(name, MaterializedLayer(layer), dependencies=[x])
    return RaggedArray(dsk, name, counts, _fixed_type(x.shape, x.dtype))


def _block(x: Any) -> np.ndarray:
    if isinstance(x, np.ma.MaskedArray):
        raise NotSupportedError("a Dask array of NumPy masked arrays in a lazyk expression: "
                                "make its data a lazyk ?T collection (lazyk.dask.from_ragged "
                                "of lazyk arrays with missing values)")
    return np.asarray(x)


def _fixed_type(shape: tuple, dtype: Any) -> T.Type:
    return array(np.empty(tuple(shape), dtype)).type if not shape or not shape[0] else \
        T.FixedDim(shape[0], array(np.empty((0,) + tuple(shape[1:]), dtype)).type.elem)

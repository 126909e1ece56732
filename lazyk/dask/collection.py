"""Ragged and missing-value data on Dask: the collections.

A `RaggedArray` is a Dask collection whose partitions are lazyk arrays holding consecutive
outer rows (row slices are views, nothing is copied); it is also a lazyk operand, so
`lazyk.sin(r) * 2`, `r.sum(axis=-1)` build lazy expressions over it. Its elements are
numbers, `?T`, strings or bytes; records are a `RaggedRecords`, whose fields (`r.x`) are
`RaggedArray`s. Date and time elements are held (split, persisted, computed), not
computed with: `lazyk.dask.evaluate` refuses expressions over them, as on one machine.
`compute()` concatenates the partitions (contents joined, offsets shifted). Indexing
(`r[10:20]`, `r[:, 1:]`, `r[i]`) gives what one machine gives: slices are collections of
the partitions' row views (cut accordingly), an outer int one row.
After a row selection or flatten the partitions' row counts are known only once computed
(`row_counts` holds `nan`, as Dask's unknown chunk sizes); `compute_row_counts()` brings
them back, and until then slices of outer rows are refused.
`lazyk.dask.partitions` holds the partitions' data; `lazyk.dask.sources` makes collections
(`from_ragged`, `from_delayed`); `lazyk.dask.layers` turns expressions over them into Dask
layers.

`expr.eval()` over a collection raises NotSupportedError (nothing computes behind your back).
"""
from __future__ import annotations

from typing import Any

import dask
import dask.array
import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
from dask.threaded import get as threaded_get

from lazyk import types as T
from lazyk.arrays import arrmeta as M
from lazyk.arrays.array import Array, array
from lazyk.arrays.operators import Operators
from lazyk.arrays.trees import Regular
from lazyk.dask.partitions import Part, buffers, build, concat, renumbered, unwrap
from lazyk.dask.partitions import columns as _columns
from lazyk.errors import NotSupportedError
from lazyk.frontend import ops
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import Node
from lazyk.frontend.indexing import index_by, is_index_operand
from lazyk.frontend.leaves import RaggedLeaf, RaggedPlaceholder, describe_ragged, is_dask_array
from lazyk.frontend.records import record_fields
from lazyk.runtime.call_inputs import rows_of

_HINT = ("this expression has partitioned lazyk leaves (lazyk.dask.from_ragged): "
         "lazyk.dask.evaluate(expr) gives a Dask collection (then .compute() it)")


class TypeOnly:
    """Stands for a partitioned array in an expression: its type, and no data to run on;
    indexed (a new axis, `(r * 2)[:, None]`) it gives the collection `rows` indexed."""

    __slots__ = ("type", "rows")

    def __init__(self, t: T.Type, rows: Any = None):
        self.type, self.rows = t, rows

    def __getitem__(self, key: Any) -> Any:
        if self.rows is None:
            raise NotSupportedError(_HINT)
        return self.rows[key]

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotSupportedError(_HINT)

    def __reduce__(self):
        return (TypeOnly, (self.type,))


class RowsLeaf(RaggedLeaf):
    """Env entry of a `RaggedArray` in an expression (`array` is a type-only stand-in)."""

    __slots__ = ("rows",)

    def __init__(self, rows: RaggedArray, t: T.Type, option: bool):
        super().__init__(TypeOnly(t, rows), option)
        self.rows = rows

    def stand_in(self, name: str) -> RaggedPlaceholder:
        """A parameter of the partitions' type: `explain` shows the kernels each partition
        runs (on sample data)."""
        t = self.array.type
        shape, dtype, option = describe(t)
        return RaggedPlaceholder(name, ("N",) + shape[1:], dtype, option, rows_of(t))


# ---------------------------------------------------------------- the collection
_TEXT = {"string": ops.STRING, "bytes": ops.BYTES}


def describe(t: T.Type, held: bool = False) -> tuple[tuple, np.dtype, bool]:
    """(shape with None for var, dtype, option?) of rows of type `t` in expressions: fixed, var and
    `?var` dims over numeric `T` / `?T` or over `string` / `bytes` (`?string`, `?bytes`;
    dtype `ops.STRING` / `ops.BYTES`); NotSupportedError for other element types. With
    `held`, date / time elements too (dtype their NumPy one): collections hold them, and
    expressions refuse them as on one machine."""
    u = t
    while isinstance(u, (T.FixedDim, T.VarDim)) or \
            isinstance(u, T.Option) and isinstance(u.elem, T.VarDim):
        u = u.elem
    inner = u.elem if isinstance(u, T.Option) else u
    name = inner.name if isinstance(inner, T.Scalar) and inner.name in _TEXT else None
    if name is None and not (held and temporal(inner)):
        return describe_ragged(TypeOnly(t))
    # text is typed as its `{begin, size}` elements read as complex128 numbers, dates and
    # times as their int64 storage (the collection's `type` names them)
    proxy = T.with_value(t, T.Scalar("complex128" if name else "int64"))
    shape, _, option = describe_ragged(TypeOnly(proxy))
    return shape, _TEXT[name] if name else np.dtype(np.int64), option


def _var_options(t: T.Type) -> T.Type:
    """`t` with its `?n` dims as `?var` dims."""
    if isinstance(t, T.Option):
        e = t.elem
        if isinstance(e, T.FixedDim):
            return T.Option(T.VarDim(_var_options(e.elem)))
        return T.Option(_var_options(e))
    if isinstance(t, (T.FixedDim, T.VarDim)):
        return type(t)(t.size, _var_options(t.elem)) if isinstance(t, T.FixedDim) else \
            T.VarDim(_var_options(t.elem))
    return t


def temporal(t: T.Type) -> bool:
    """Whether `t` is a date, time, datetime or timedelta element."""
    try:
        return t.to_numpy().kind in "mM"
    except (NotSupportedError, AttributeError, TypeError):
        return False


def computable(t: T.Type) -> None:
    """NotSupportedError (an UnsupportedOperandError, as on one machine) unless expressions
    take rows of type `t`: dates and times are held by collections but not computed."""
    describe(t)


class _Collection:
    """The Dask collection protocol of partitions `(name, i)` joined along axis 0."""

    __slots__ = ()

    @property
    def npartitions(self) -> int:
        """Number of partitions (tasks)."""
        return 1 if self._counts is None else len(self._counts)

    @property
    def row_counts(self) -> tuple | None:
        """Outer rows per partition (`nan` where they are known only once computed: rows
        selected or flattened, as Dask's unknown chunk sizes), or None for a single result
        not split by rows."""
        return self._counts

    @property
    def rows_known(self) -> bool:
        """Whether every partition's number of rows is known before computing."""
        return self._counts is None or not any(c != c for c in self._counts)

    def compute_row_counts(self) -> Any:
        """The same collection with its partitions' row counts known (as Dask's
        `compute_chunk_sizes()`): it computes the partitions (persist the collection first
        to keep them) and brings back only their sizes."""
        if self.rows_known:
            return self
        name = f"lazyk-row-counts-{tokenize(self._name)}"
        layer = {(name, i): (_row_count, k) for i, k in enumerate(self.__dask_keys__())}
        dsk = HighLevelGraph.from_collections(name, MaterializedLayer(layer),
                                              dependencies=[self])
        import dask.array as da

        sizes = da.Array(dsk, name, ((1,) * len(layer),), dtype=np.int64,
                         meta=np.empty(0, np.int64))
        counts = tuple(int(c) for c in sizes.compute())
        t = T.FixedDim(sum(counts), self._ltype.elem)
        return type(self)(self._dsk, self._name, counts, t)

    @property
    def name(self) -> str:
        """The Dask key name of the partitions."""
        return self._name

    def __repr__(self) -> str:
        return f"lazyk.dask.{type(self).__name__}<{self._ltype}, " \
            f"npartitions={self.npartitions}>"

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

    def _rebuild(self, dsk: Any, rename: dict | None = None) -> Any:
        name = (rename or {}).get(self._name, self._name)
        if not isinstance(dsk, HighLevelGraph):
            dsk = HighLevelGraph.from_collections(name, dsk, dependencies=())
        return type(self)(dsk, name, self._counts, self._ltype)

    __dask_scheduler__ = staticmethod(threaded_get)

    # dask.array's optimizer: `dask.compute` groups collections by their optimizer and
    # returns the groups' results in group order, so lazyk's ragged results computed with
    # dask.array results (a fold's plain result) would come back out of place
    __dask_optimize__ = staticmethod(dask.array.Array.__dask_optimize__)

    def compute(self, **kwargs: Any) -> Array:
        """The whole array (partitions concatenated along axis 0) as one lazyk array."""
        return _plain_array(dask.compute(self, **kwargs)[0])

    def persist(self, **kwargs: Any) -> Any:
        """The same collection with its partitions computed and kept (in the cluster)."""
        return dask.persist(self, **kwargs)[0]


class RaggedArray(_Collection, Expr):
    """A Dask collection of lazyk arrays split by outer rows; also a lazyk operand.

    `row_counts` holds the rows of each partition (None for a single result that is not
    split by rows, e.g. a reduction over axis 0). `compute()` gives one lazyk array.
    Build one with `lazyk.dask.from_ragged`; `lazyk.dask.evaluate(expr)` over it gives
    another (or a `dask.array` for plain results). Elements are numbers, strings or bytes
    (`(r == "kiwi").sum(axis=-1)`), or dates and times (held only); records are
    `RaggedRecords`.
    """

    __slots__ = ("_dsk", "_name", "_counts", "_ltype")

    def __init__(self, dsk: HighLevelGraph, name: str, counts: tuple | None, t: T.Type):
        self._dsk, self._name, self._ltype = dsk, name, t
        self._counts = None if counts is None else \
            tuple(c if c != c else int(c) for c in counts)  # nan: known once computed
        try:
            shape, dtype, option = describe(t, held=True)
        except NotSupportedError:
            # `?n` rows (a fold over missing rows against a fixed dim) are results, not
            # operands (as on one machine): typed here as `?var` rows, refused in
            # expressions by their own type
            u = _var_options(t)
            if u == t:
                raise
            shape, dtype, option = describe(u, held=True)
        super().__init__(Node("input", dtype, shape, (), name), {name: RowsLeaf(self, t, option)})

    @property
    def type(self) -> T.Type:
        """The lazyk type of the whole collection."""
        return self._ltype

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of the elements (`datetime64` / `timedelta64` for dates and
        times, the `{begin, size}` element for strings and bytes)."""
        t = self._ltype.dtype
        t = t.elem if isinstance(t, T.Option) else t
        return t.to_numpy() if temporal(t) else self.node.dtype

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

    def __getitem__(self, key: Any) -> Any:
        """Rows and views as on one machine (`r[10:20]`, `r[::2]`, `r[:, 1:]`, `r[i]`,
        `r[i, 0]`): a slice of outer rows is a collection of the partitions' row views
        it reaches (partitions cut accordingly); an outer int is the one partition's
        row (a single result). Indices into inner dims apply to every partition."""
        if is_index_operand(key) or is_dask_array(key) and key.dtype.kind in "biu":
            return index_by(self, key)  # a mask or positions: lazy, as on one machine
        key = key if isinstance(key, tuple) else (key,)
        outer, rest = (key[0], key[1:]) if key else (slice(None), ())
        if outer is Ellipsis or outer is None or not \
                isinstance(outer, (slice, int, np.integer)) or isinstance(outer, bool):
            lead = " (a new leading axis: the outer dim is the partitions' rows; a per-row " \
                "value meets lists as v[:, None], zip's fields too)" if outer is None else ""
            raise NotSupportedError(f"indexing a lazyk.dask.RaggedArray with {key!r}: "
                                    "an int or a slice of outer rows, then ints, slices and "
                                    f"new axes (None){lead}")
        if outer == slice(None) and self._counts is not None:  # every row: each partition's
            name = f"lazyk-rows-index-{tokenize(self._name, repr(key))}"
            layer = {(name, i): (_take_all, key, k) for i, k in enumerate(self.__dask_keys__())}
            return self._derived(name, layer, self._counts, _typed(self._ltype, outer, rest))
        if not self.rows_known:
            raise NotSupportedError(
                "indexing the outer rows of a lazyk.dask.RaggedArray: how many rows each "
                "partition holds is known only once computed (rows selected or flattened); "
                "r.compute_row_counts() gives the collection with its row counts known, or "
                "compute it first")
        none = _typed(self._ltype, outer, rest)  # the result's type
        name = f"lazyk-rows-index-{tokenize(self._name, repr(key))}"
        if self._counts is None:  # a single result: the key as it is
            layer = {(name, 0): (_take, key, (self._name, 0), None)}
            return self._derived(name, layer, None, none)
        n = sum(self._counts)
        starts = np.concatenate([[0], np.cumsum(self._counts)]).tolist()
        if not isinstance(outer, slice):
            i = int(outer) + (n if outer < 0 else 0)
            if not 0 <= i < n:
                raise IndexError(f"index {int(outer)} is out of bounds for axis 0 with size "
                                 f"{n}")
            j = int(np.searchsorted(starts, i, side="right")) - 1
            layer = {(name, 0): (_take, (i - starts[j],) + rest, (self._name, j), None)}
            return self._derived(name, layer, None, none)
        lo, hi, step = outer.indices(n)
        if step < 0:
            raise NotSupportedError(f"indexing a lazyk.dask.RaggedArray with {key!r}: "
                                    "negative steps (the partitions hold rows in order)")
        layer, counts = {}, []
        for j, c in enumerate(self._counts):
            a, b = max(lo, starts[j]), min(hi, starts[j] + c)
            if a >= b:
                continue
            a += (lo - a) % step  # the first row of the slice in this partition
            if a >= b:
                continue
            k = (slice(a - starts[j], b - starts[j], step),) + rest
            layer[(name, len(counts))] = (_take, k, (self._name, j), len(range(lo, a, step)))
            counts.append(len(range(a, b, step)))
        if not counts:  # no rows: an empty view of the first partition
            layer[(name, 0)] = (_take, (slice(0, 0),) + rest, (self._name, 0), 0)
            counts.append(0)
        return self._derived(name, layer, tuple(counts), none)

    def _derived(self, name: str, layer: dict, counts: tuple | None, t: T.Type) -> Any:
        dsk = HighLevelGraph.from_collections(name, MaterializedLayer(layer),
                                              dependencies=[self])
        return collection(dsk, name, counts, t)

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



class RaggedRecords(_Collection, Operators):
    """A Dask collection of lazyk record arrays split by outer rows (`N * {x: var * float64,
    y: int64}`): `r.x` / `r["x"]` is the field as a collection (views of each partition),
    an operand of expressions; the records themselves are not, as on one machine (`r + 1`,
    `lazyk.sin(r)`, `r == r` raise UnsupportedOperandError naming the type)."""

    __slots__ = ("_dsk", "_name", "_counts", "_ltype", "_fields")

    def __init__(self, dsk: HighLevelGraph, name: str, counts: tuple | None, t: T.Type):
        self._dsk, self._name, self._ltype = dsk, name, t
        self._counts = None if counts is None else \
            tuple(c if c != c else int(c) for c in counts)
        self._fields: dict = {}  # one collection per field: one leaf name in expressions

    @property
    def type(self) -> T.Type:
        """The lazyk type of the whole collection."""
        return self._ltype

    @property
    def name(self) -> Any:  # type: ignore[override]
        """The field `name` where the records have one (as `r.name` reads on one machine),
        else the Dask key name of the partitions."""
        try:
            return self["name"]
        except KeyError:
            return self._name

    def __getitem__(self, field: str) -> Any:
        got = self._fields.get(field) if isinstance(field, str) else None
        if got is not None:
            return got
        if is_index_operand(field):  # r[mask], r[positions]: field by field, lazily
            return record_fields(self)[field]
        if not isinstance(field, str):
            raise NotSupportedError(
                f"indexing the rows of a lazyk.dask.RaggedRecords with {field!r}: index its "
                "fields (r.x[1:3]), or compute the records first (r.compute()[1:3])")
        t = _element(self._ltype)
        missing = isinstance(t, T.Option)  # ?{...}: a field of a missing record is missing
        t = t.elem if missing else t
        names = [str(k) for k in range(len(t.types))] if isinstance(t, T.Tuple) else \
            list(getattr(t, "names", ()))  # (a tuple's fields: "0", "1", ...)
        if not isinstance(field, str) or field not in names:
            raise KeyError(f"{field!r}: the records {self._ltype} have fields "
                           f"{', '.join(names)}")
        ft = t.types[names.index(field)]
        ft = T.Option(ft) if missing and not isinstance(ft, T.Option) else ft
        ft = T.with_element(self._ltype, ft)  # (under the records' dims)
        name = f"lazyk-field-{tokenize(self._name, field)}"
        layer = {(name, i): (_field, field, k) for i, k in enumerate(self.__dask_keys__())}
        dsk = HighLevelGraph.from_collections(name, MaterializedLayer(layer),
                                              dependencies=[self])
        got = self._fields[field] = collection(dsk, name, self._counts, ft)
        return got

    def __getattr__(self, field: str) -> Any:
        if field.startswith("_"):
            raise AttributeError(field)
        try:
            return self[field]
        except KeyError as err:
            raise AttributeError(str(err)) from None

    def __setitem__(self, field: Any, value: Any) -> None:
        raise TypeError(f"r[{field!r}] = value: a lazyk.dask.RaggedRecords is not changed in "
                        f"place; lazyk.with_field(r, value, {field!r}) gives the records with "
                        "that field (lazy, on Dask)")

    def __setattr__(self, name: str, value: Any) -> None:  # (`r.x = v`, as `r["x"] = v`)
        if name[:1] == "_" or hasattr(type(self), name):
            object.__setattr__(self, name, value)
        else:
            self[name] = value

    def __array__(self, dtype=None, copy=None):
        raise NotSupportedError("a lazyk.dask.RaggedRecords is computed by Dask: .compute() "
                                "gives a lazyk array")

    def __lazyk_expr__(self) -> Expr:
        # the refusal of records on one machine (`lazyk.frontend.leaves.describe_ragged`)
        raise NotSupportedError(f"expressions over {self._ltype}: only fixed and var dims "
                                "over numeric T or ?T (records are not operands: use their "
                                "fields, r.x or r['x'])")


def _element(t: T.Type) -> T.Type:
    """The element under the fixed, var and `?var` dims of `t` (`?T` included)."""
    while isinstance(t, (T.FixedDim, T.VarDim)) or isinstance(t, T.Option) and \
            isinstance(t.elem, (T.FixedDim, T.VarDim)):
        t = t.elem
    return t


def collection(dsk: HighLevelGraph, name: str, counts: tuple | None, t: T.Type) -> Any:
    """A `RaggedRecords` for records under the dims, else a `RaggedArray`."""
    u = _element(t)
    u = u.elem if isinstance(u, T.Option) else u
    cls = RaggedRecords if isinstance(u, (T.Record, T.Tuple)) else RaggedArray
    return cls(dsk, name, counts, t)


def _typed(t: T.Type, outer: Any, rest: tuple) -> T.Type:
    """The type of a collection of type `t` indexed by `outer` then `rest` (the key
    applied to no rows of `t`: an inner index out of bounds raises when computed)."""
    if not isinstance(t, (T.FixedDim, T.VarDim)):
        raise NotSupportedError(f"indexing a lazyk.dask result of type {t}: compute it, "
                                "then index the lazyk array")
    got = array([], T.FixedDim(0, t.elem))[(slice(None),) + rest].type
    if isinstance(t, T.VarDim):  # rows selected: every row (their count known once computed)
        return T.VarDim(got.elem)
    if isinstance(outer, slice):
        lo, hi, step = outer.indices(t.size)
        return T.FixedDim(len(range(lo, hi, step)), got.elem)
    return got.elem


def _take(key: tuple, part: Any, start: int | None) -> Part:
    """A partition's rows (views) for `key`; `start`: the first row's number in the
    result (None for a single row or result)."""
    return Part(unwrap(part)[key], start)


def _take_all(key: tuple, part: Any) -> Part:
    """A partition's rows (views) for `key` over every row: the rows keep their numbers."""
    start = getattr(part, "start", None)
    try:
        return Part(unwrap(part)[key], start)
    except IndexError as err:  # (an item a row does not have: the collection's row named)
        raise renumbered(err, start) from None


def _row_count(part: Any) -> np.ndarray:
    a = unwrap(part)
    return np.array([a.type.size if isinstance(a.type, T.FixedDim) else 1], np.int64)


def _field(field: str, part: Any) -> Part:
    return Part(unwrap(part)[field], getattr(part, "start", None))

def _to_block(option: bool, part: Any) -> np.ndarray:
    """One partition as NumPy data (a masked array for `?T`)."""
    part = unwrap(part)
    if not isinstance(part, Array):
        return np.asarray(part)
    if not option:
        return part.to_numpy()
    if not isinstance(part.type, T.FixedDim):  # 0-d: a `?T` value
        v, dtype = part.to_list(), part.type.elem.to_numpy()
        return np.ma.masked_array(np.zeros((), dtype) if v is None else
                                  np.asarray(v, dtype), mask=v is None)
    col, sizes = _columns(part), [part.type.size]
    while isinstance(col, Regular):
        sizes.append(col.size)
        col = col.child
    values = col.child.values.reshape(sizes)
    return np.ma.masked_array(values, mask=~col.present.reshape(sizes))


def _finalize(parts: Any) -> Array:
    parts = [unwrap(p) for p in parts]
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
        col = buffers(self)
        return (build, (col,)) if col is not None else super().__reduce__()


def _plain_array(x: Any) -> Any:
    if type(x) is _Joined:
        return Array._from_parts(x.type, x.meta, x.ptr, x.owner, x.readonly)
    return x

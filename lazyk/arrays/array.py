"""Concrete typed arrays: a type, arrmeta and a data pointer into memory an owner keeps alive.
Arrays NumPy can hold (fixed dims over numbers, records, fixed strings) keep a NumPy view as
their source of truth, so `lazyk.array(ndarray)` and `to_numpy()` cost a few microseconds and
share memory. Arrays with var dims, options or strings live in `MemoryBlock`s and are read
through their arrmeta (docs/layout.md)."""
from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np

from lazyk import hooks
from lazyk import types as T
from lazyk.arrays import arrmeta as M
from lazyk.arrays import memory, operators, views
from lazyk.arrays.assign import assign, assign_rows
from lazyk.arrays.conversions import Conversions
from lazyk.arrays.display import format_values, html_view
from lazyk.arrays.foreign import as_readable, from_foreign, is_foreign
from lazyk.arrays.infer import infer_type, masked_records, pack, with_dtype
from lazyk.arrays.operators import InPlace, Operators
from lazyk.arrays.views import bool_items, index_type, index_values, normalize_index, strided_view
from lazyk.errors import ArrayConstructionError, NotSupportedError, TypeParseError

_ELEM_CACHE: dict[np.dtype, T.Type] = {}


def _elem_type(dt: np.dtype) -> T.Type:
    t = _ELEM_CACHE.get(dt)
    return t if t is not None else _ELEM_CACHE.setdefault(dt, M.type_from_numpy(dt))


class Array(Operators, InPlace, Conversions):
    """A concrete lazyk array: `type`, `arrmeta`, a data pointer and an owner of the memory."""

    # `_columns`: for records read from columns (`lazyk.from_awkward`), each field as an array
    # of its own over those columns (field name -> Array), else None: a field reads there,
    # contiguous, rather than as a strided view of the records
    __slots__ = ("_np", "_type", "_meta", "_ptr", "_owner", "_readonly", "_columns",
                 "__weakref__")

    # ------------------------------------------------------------ construction
    @classmethod
    def _wrap(cls, arr: np.ndarray, readonly: bool | None = None) -> Array:
        """Zero-copy view of a NumPy array (kept alive by the result)."""
        self = object.__new__(_Building if cls is Array else cls)
        self._np, self._type, self._meta, self._ptr, self._owner = arr, None, None, None, arr
        self._readonly = readonly  # (None: as the NumPy array says, read when asked)
        self._columns, self.__class__ = None, cls
        return self

    @classmethod
    def _from_parts(cls, t: T.Type, meta: tuple, ptr: int, owner: Any,
                    readonly: bool = False) -> Array:
        """An array over memory `owner` keeps alive (a MemoryBlock for var/option/string)."""
        if M.is_plain(t):
            shape, strides = M.fixed_shape(t, meta)
            inner = t
            while isinstance(inner, T.FixedDim):
                inner = inner.elem
            dt = M.meta_np_dtype(inner, meta[2 * len(shape):])
            if isinstance(owner, memory.MemoryBlock) and 0 not in shape:  # (none: no read)
                # NumPy will not bounds-check a raw pointer; a forged arrmeta must not segfault.
                lo, hi = memory.extent(shape, strides, dt.itemsize)
                if ptr + lo < owner.address or ptr + hi > owner.address + owner.size:
                    raise ValueError("the data lies outside the owner's memory block")
            arr = memory.view(ptr, shape, strides, dt, owner, readonly)
            self = cls._wrap(arr, readonly)
            self._type, self._owner = t, owner
            return self
        self = object.__new__(_Building if cls is Array else cls)
        self._np, self._type, self._meta, self._ptr = None, t, tuple(meta), ptr
        self._owner, self._readonly = owner, readonly
        self._columns, self.__class__ = None, cls
        return self

    @classmethod
    def from_parts(cls, type: Any, arrmeta: Any, ptr: int, owner: Any,
                   readonly: bool = False, *, check_strings: bool = True) -> Array:
        """An array over existing memory, e.g. a kernel's output (inverse of type/arrmeta/ptr).

        `type` (string or lazyk type), `arrmeta` (raw native int64 bytes or a tuple of ints),
        `ptr` (address of the first element), `owner` (keeps that memory alive: a
        `lazyk.arrays.memory.MemoryBlock`, bounds-checked, or any object); `check_strings`
        False skips reading every string's {begin, size} (lazyk's views). ValueError:
        arrmeta of the wrong length, or data (strings) outside a MemoryBlock owner."""
        t = as_type(type)
        meta = tuple(np.frombuffer(bytes(arrmeta), np.int64).tolist()) if isinstance(
            arrmeta, (bytes, bytearray, memoryview, np.ndarray)) else tuple(map(int, arrmeta))
        if len(meta) != M.meta_len(t):
            raise ValueError(f"type '{t}' needs {M.meta_len(t)} arrmeta fields, got {len(meta)}")
        if isinstance(owner, memory.MemoryBlock) and not M.is_plain(t):
            shape, strides = M.fixed_shape(t, meta)
            inner = t
            while isinstance(inner, T.FixedDim):
                inner = inner.elem
            size, first = inner.itemsize, 0
            at = 2 * len(shape)
            if isinstance(inner, T.VarDim):  # a start index; the stop stop_delta bytes on
                first = min(0, meta[at + 2])
                size = max(meta[at + 1], meta[at + 2] + meta[at + 1])
            elif isinstance(inner, T.Option) and isinstance(inner.elem, T.VarDim):
                # ?var: {mask_offset} then the var arrmeta: the indices and the mask byte
                moff, width, delta = meta[at], meta[at + 2], meta[at + 3]
                first, size = min(0, delta, moff), max(width, delta + width, moff + 1)
            lo, hi = memory.extent(shape, strides, size)
            if hi > lo and (ptr + lo + first < owner.address or
                            ptr + hi > owner.address + owner.size):
                raise ValueError("the data lies outside the owner's memory block")
            if check_strings and M.has_strings(t):  # kernels read text through {begin, size}
                M.check_strings(t, meta, 0, owner.buffer, np.array([int(ptr) - owner.address]))
        return cls._from_parts(t, meta, int(ptr), owner, readonly)

    # ------------------------------------------------------------ properties
    @property
    def type(self) -> T.Type:
        """The lazyk type, e.g. `2 * var * int32`."""
        if self._type is None:
            if self._np is None:
                raise ValueError("this lazyk array was closed")
            self._type = _np_type(self._np)
        return self._type

    @property
    def meta(self) -> tuple[int, ...]:
        """Arrmeta as a tuple of ints (see docs/layout.md)."""
        if self._meta is None:
            self._memory()
            a = self._np
            self._meta = M.meta_from_numpy(a.dtype, a.shape, a.strides)
        return self._meta

    @property
    def arrmeta(self) -> np.ndarray:
        """Raw arrmeta as a read-only structured 0-d array; `bytes(a.arrmeta)` gives the bytes."""
        raw = np.frombuffer(M.encode(self.meta), dtype=M.meta_dtype(self.type))
        return raw.reshape(())

    @property
    def ptr(self) -> int:
        """Address of the first element (a var dim's start index, a scalar, ...)."""
        self._memory()
        if self._ptr is None:
            self._ptr = self._np.__array_interface__["data"][0]
        return self._ptr

    @property
    def owner(self) -> Any:
        """The object that keeps this array's memory alive (ValueError once `close()` has
        dropped it: no kernel reads freed memory)."""
        return self._memory()

    def _memory(self) -> Any:
        if self._owner is None:
            raise ValueError("this lazyk array was closed: close() dropped its memory")
        return self._owner

    @property
    def shape(self) -> tuple:
        """Sizes of the dimensions; `None` for a var dim."""
        if self._np is not None:
            return self._np.shape + (self._np.dtype.shape or ())
        return self.type.shape

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return self.type.ndim

    @property
    def dtype(self) -> np.dtype | T.Type:
        """The NumPy dtype, so array consumers (`np.asarray`, `dask.array.from_array`, ...)
        work: for fixed dims over numbers, records and fixed-size strings. Arrays with no
        NumPy equivalent (var dims, options, variable-length strings) give the lazyk
        element type, which `a.type.dtype` gives for every array."""
        if self._np is not None:
            return self._np.dtype
        return self.type.dtype

    @property
    def readonly(self) -> bool:
        """True for arrays over read-only memory (writing raises ValueError)."""
        got = self._readonly
        return (not self._np.flags.writeable) if got is None else bool(got)

    @property
    def aligned(self) -> bool:
        """False when the data pointer or a stride breaks the element's natural alignment."""
        if self._np is not None:
            return bool(self._np.flags.aligned)
        return True  # lazyk lays out its own blocks aligned

    def to_list(self) -> Any:
        """Nested Python lists, dicts for records, None for missing values."""
        if self._np is not None:
            a = self._np
            if a.dtype.fields is None and a.dtype.kind in "biufc":
                return a.tolist()
        buf, offs = _region(self)
        return M.read(self.type, self.meta, 0, buf, offs)[0]

    def eval(self, out: Any = None, casting: str = "same_kind") -> Any:
        """The array itself (it holds its values): code that takes arrays and lazy
        expressions alike calls `.eval()`; with `out`, its values stored there, as
        `lazyk.evaluate(a, out=out)`."""
        return self if out is None else hooks.evaluate(self, out=out, casting=casting)

    def explain(self, target: str = "cpu") -> str:
        """`lazyk.explain(a)`: what evaluating this array runs (a copy, or no kernel)."""
        return hooks.explain(self, target=target)

    def __repr__(self) -> str:
        if self._owner is None:  # (close() dropped its memory: no values to show)
            return "array(<closed>)" if self._type is None else \
                f"array(<closed>, type={str(self._type)!r})"
        return f"array({format_values(self)}, type={str(self.type)!r})"

    def _repr_html_(self) -> str:
        """A notebook's view: type, shape and the first and last rows (missing values
        shown as missing)."""
        return html_view(self)

    def __iter__(self):
        if not self.ndim:
            raise TypeError("iteration over a 0-d lazyk array")
        return (self[i] for i in range(len(self)))

    def __len__(self) -> int:
        t = self.type
        if isinstance(t, T.FixedDim):
            return t.size
        if isinstance(t, T.VarDim):
            buf, offs = _region(self)
            starts, stops = M.read_rows(buf, offs, *self.meta[1:3])
            return int(stops[0] - starts[0])
        raise TypeError("len() of a 0-d lazyk array")

    def __reduce__(self) -> tuple:
        # Pickles and deep copies carry buffers (cut to what rows reach) or values, no pointers
        got = _pickle_form[0](self) if _pickle_form else None
        if got is not None:
            return got
        data = self._np if self._np is not None else self.to_list()
        if isinstance(data, np.ndarray) and data.dtype.fields is not None:  # (records as lazyk
            data = data.astype(M.np_dtype(self.type.dtype))  # lays them out, padding and all)
        return (array, (data, self.type))

    def __copy__(self) -> Array:
        """`copy.copy(a)`: a copy in memory of its own, as NumPy's (`a.copy()`)."""
        return self.copy()

    def copy(self) -> Array:
        """A writable copy in memory of its own, of read-only arrays too (`from_awkward`)."""
        got = _pickle_form[0](self) if _pickle_form else None  # (buffers, built writable)
        return got[0](copy.deepcopy(got[1][0]), False) if got else copy.deepcopy(self)

    def close(self) -> None:
        """Drop this array's reference to its memory (other views keep it alive)."""
        self._np = self._owner = None

    def __enter__(self) -> Array:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ indexing
    def __getitem__(self, index: Any) -> Array:
        """A view for ints, slices, `...`, `None` and field names (a copy where no view exists);
        a tuple's fields are named by position, "0", "1", ... (as in Awkward Array); a list
        of field names, the records of those fields. An int or a partial slice on a var dim
        under a kept (sliced) dim has no strided view: a copy, and an int past a row's end
        raises IndexError naming the row. A bool or integer array (or expression) selects or
        gathers lazily, as Awkward Array does: `x[x > 0]`, `x[lazyk.argmax(x, axis=1,
        keepdims=True)]` are expressions (`lazyk.frontend.expr.index_by`)."""
        if self._columns is not None and isinstance(index, str) and index in self._columns:
            return self._columns[index]
        if operators.front_end().is_index_operand(index):  # x[mask], x[positions]: lazy
            return operators.front_end().index_by(self, index)
        if type(index) is list and index and all(isinstance(k, str) for k in index) and \
                (fields := operators.front_end().record_fields(self)) is not None:
            return fields[index].eval()  # (Awkward's projection: r[["pt", "q"]])
        if type(index) is tuple and len(index) > 1 and all(type(k) is str for k in index):
            return self[index[0]][index[1:] if len(index) > 2 else index[1]]  # (a field path)
        items = index if isinstance(index, tuple) else (index,)
        if self._np is None and any(isinstance(i, (bool, np.bool_)) for i in items):
            items = bool_items(items)
        try:
            view = _view(self, items)
        except NotSupportedError:
            if not any(isinstance(i, str) for i in items):
                raise
            return _option_fields(self, items)
        if view is None:
            return _copy_index(self, items)
        if self._columns is not None and isinstance(index, slice):  # (rows of the records:
            # their columns' rows too, so the fields of a slice read columns in place)
            view._columns = {k: c[index] for k, c in self._columns.items()}
        return view

    def __setitem__(self, index: Any, value: Any) -> None:
        """Assign with broadcasting: a var row of length 1 broadcasts, equal lengths copy."""
        _writable(self)
        items = index if isinstance(index, tuple) else (index,)
        if any(isinstance(i, (list, np.ndarray)) or hasattr(i, "node") for i in items):
            raise NotSupportedError("a[mask] = v and a[positions] = v are not supported: "
                                    "lazyk.where(mask, v, a) computes the new values")
        if any(isinstance(i, (bool, np.bool_)) for i in items):  # (NumPy's: True a new axis)
            if self._np is not None:  # (a NumPy bool index gives no view: NumPy assigns)
                self._np[items] = np.asarray(value.eval() if hasattr(value, "node") else value)
                return
            items = bool_items(items)
        try:
            dst = _view(self, items)
        except NotSupportedError:
            if not any(isinstance(i, str) for i in items):
                raise
            raise NotSupportedError(f"assignment to a field of '{self.type}' through {items!r}"
                                    ": a field that may be missing of a record that may be "
                                    "missing has no view; assign whole records, r[i] = {...}"
                                    ) from None
        if hasattr(value, "eval") and not isinstance(value, Array) and (
                dst is None or dst._np is None):  # (computed, then as arrays: rows of 1
            value = value.eval()  # broadcast, and rows with no view take it row by row)
        if dst is None:  # one assignment per row of the first slice (`assign_rows`)
            want = index_type(self.type, normalize_index(self.type, items)[0])
            assign_rows(self, items, value if isinstance(value, Array) else
                        _source(value, want))
            return
        _writable(dst)  # (a field of records that may be missing: read-only)
        if hasattr(value, "eval") and not isinstance(value, Array):
            hooks.evaluate(value, out=dst)
            return
        src = value if isinstance(value, Array) else _source(value, dst.type)
        if dst._np is not None and src._np is not None:
            np.copyto(dst._np, src._np, casting="unsafe")
            return
        assign(dst.type, dst.meta, 0, *_region(dst, writable=True), src.type, src.meta, 0,
               *_region(src))

    def __getattr__(self, name: str) -> Array:
        if name.startswith("_") or name in _OWN_ATTRIBUTES:  # no recursion through properties
            raise AttributeError(name)
        t = self.type.dtype if self.type.ndim else self.type
        while isinstance(t, T.Option):
            t = t.elem
        if isinstance(t, T.Record) and name in t.names:
            return self[name]
        raise AttributeError(f"lazyk array of type '{self.type}' has no attribute {name!r}")


def _writable(a: Array) -> None:
    if a.readonly:
        raise ValueError("assignment destination is read-only: a.copy() is writable" if
                         a._readonly != "record" else "a field of records that may be "
                         "missing is read-only: assign whole records, r[i] = {...}")


def _np_type(arr: np.ndarray) -> T.Type:
    """The lazyk type NumPy's dtype and shape spell (utf8 strings and tuples need arrmeta)."""
    t = _elem_type(arr.dtype.base if arr.dtype.subdtype else arr.dtype)
    for n in reversed(arr.shape + (arr.dtype.shape or ())):
        t = T.FixedDim(n, t)
    return t


def _source(value: Any, dst: T.Type) -> Array:
    """The right-hand side of an assignment in the destination's element type: Python data
    packed into it (ints that overflow it refused), NumPy arrays viewed (cast as copied)."""
    if isinstance(value, np.ndarray) or not isinstance(value, _PYTHON_DATA):
        return array(value)
    return array(value, with_dtype(infer_type(value), dst.dtype))


_OWN_ATTRIBUTES = frozenset(n for n in dir(Array) if not n.startswith("_"))


class _Building(Array):  # an Array while it is built: plain stores (no field to look for)
    __slots__ = ()
    __setattr__ = object.__setattr__


def _region(a: Array, writable: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(uint8 buffer, [offset of the array's first element]) for the arrmeta readers."""
    owner = a._memory()
    if isinstance(owner, memory.MemoryBlock):
        return owner.buffer, np.array([a.ptr - owner.address], np.int64)
    arr = a._np
    lo, hi = memory.extent(arr.shape, arr.strides, arr.dtype.itemsize)
    buf = memory.view(a.ptr + lo, (hi - lo,), (1,), np.uint8, arr, readonly=not writable)
    return buf, np.array([-lo], np.int64)


# ---------------------------------------------------------------- indexing
LIST_ROWS = 1024  # rows up to which an index with no view copies through Python lists


def _view(a: Array, items: tuple) -> Array | None:
    """The view `a[items]` over the same memory, or None when no strided view exists."""
    t = a.type
    dims, names = normalize_index(t, items)
    if a._np is not None and (a._type is None or _np_type(a._np) == t):
        res = a._np[tuple(dims) + (Ellipsis,)]
        for n in names:
            if res.dtype.names is None or n not in res.dtype.names:
                raise KeyError(f"type '{t}' has no field {n!r}" + (
                    views.NEW_FIELD if res.dtype.names else views.NO_FIELDS))
            res = res[n]
        return Array._wrap(res, a._readonly)
    buf, offs = _region(a)
    parts = strided_view(t, a.meta, buf, int(offs[0]), a.ptr, a._owner, dims, names)
    # (a field of records that may be missing reads the records' present flags: writing it
    # would make a missing record present, its other fields stale)
    flags = "record" if names and isinstance(t.dtype, T.Option) else a.readonly
    return None if parts is None else Array._from_parts(*parts, flags)


# The copy that reads a field of `?{name: ?T}` (`lazyk.arrays.columns.option_field` registers)
_field_copy: list = []
_pickle_form: list = []


def use_pickle_form(fn) -> None:
    """Register `fn(array)`: the `__reduce__` value that pickles `array` as its buffers."""
    _pickle_form[:] = [fn]


def use_field_copy(fn) -> None:
    """Register `fn(array, name)`, which reads field `name` of `... * ?{name: ?T}`."""
    _field_copy[:] = [fn]


def _option_fields(a: Array, items: tuple) -> Array:
    """`a[items]` whose field crosses `?{name: ?T}`: a read-only copy (`use_field_copy`)."""
    if not _field_copy:
        raise RuntimeError("`import lazyk` (lazyk.arrays.columns) reads fields of ?{x: ?T}")
    dims, names = normalize_index(a.type, items)
    out = a[tuple(dims)] if dims else a
    for n in names:
        try:
            out = _view(out, (n,))
        except NotSupportedError:
            out = _field_copy[0](out, n)
    return out


def _copy_index(a: Array, items: tuple) -> Array:
    """`a[items]` as a new array, for indices that no strided view can express (an int or
    a partial slice of var rows: `jets[:, 0]`): computed by a loop nest, or through Python
    lists for up to LIST_ROWS rows (no kernel to compile) or where no loop nest takes it."""
    dims, names = normalize_index(a.type, items)
    if names:  # the field first (a view), then its rows
        return _copy_index(a[tuple(names)], tuple(dims))
    t, fe, out = index_type(a.type, dims), operators.front_end(), None
    if not isinstance(a.type, T.FixedDim) or a.type.size > LIST_ROWS:
        try:
            out = fe.index_expr(fe.as_expr(a), tuple(dims)).eval()
        except (NotSupportedError, TypeError):  # (an index the expressions do not take)
            pass
    return out if isinstance(out, Array) and out.type == t else \
        array(index_values(a.to_list(), a.type, dims, []), t)


# ---------------------------------------------------------------- constructors
builtins_type = type
_NATIVE_NUMBERS = frozenset(np.dtype(c) for c in "?bhilqBHILQefdFD")
_PYTHON_DATA = (list, tuple, dict, str, bytes, bool, int, float, complex, builtins_type(None),
                np.generic)


def as_type(type: Any) -> T.Type:
    if isinstance(type, T.Type):
        return type
    if isinstance(type, str):
        return T.dshape(type)
    try:
        return M.type_from_numpy(np.dtype(type))
    except TypeError:
        raise TypeError(f"type must be a type string, lazyk type or NumPy dtype, "
                        f"got {type!r}") from None


def array(obj: Any, type: Any = None, device: Any = None) -> Array:
    """A lazyk array from a NumPy array (zero-copy view), a buffer, a scalar or nested lists.

    Args:
        obj: ndarray (any strides, byte order, alignment, structured), NumPy masked array
            (masked entries missing: `?T`), buffer, scalar, nested lists/tuples/dicts, a
            pandas Series (nullable `Int64`, `boolean`, ... columns give `?T`), or a pyarrow
            / Awkward array (as `lazyk.from_arrow` / `lazyk.from_awkward` read it).
        type: optional type string such as `'3 * var * ?int32'`; the data must fit it.
        device: `'cuda'` copies the (fixed-dim numeric) result to the GPU.

    Raises:
        ArrayConstructionError: data that does not fit the type (names the index path).
        TypeParseError: a `type` that does not parse.
        NotSupportedError: NumPy object arrays and other data with no lazyk type.
    """
    if builtins_type(obj) is np.ndarray and type is None and device is None and \
            obj.dtype in _NATIVE_NUMBERS:  # (the common case first: a view, nothing to check)
        return Array._wrap(obj)
    if device is not None and str(device) != "cpu":
        return array(obj, type).to(device)
    if isinstance(obj, np.void):  # a NumPy record (or raw bytes) scalar: a 0-d array of it
        obj = np.array(obj, obj.dtype)
    if isinstance(obj, np.ndarray) and obj.dtype.kind in "UVmM":
        native = M.orderless_native(obj.dtype)
        if native != obj.dtype:  # strings, dates and times have no byte order: a copy
            obj = obj.astype(native)
    if builtins_type(obj) is np.ndarray and type is None:
        dt = obj.dtype
        if dt not in _ELEM_CACHE:
            _elem_type(dt.base if dt.subdtype else dt)  # validates (object dtype -> error)
        return Array._wrap(obj)
    if isinstance(obj, Array):
        if type is None or as_type(type) == obj.type:
            return obj
        return array(obj.to_list(), type)
    if is_foreign(obj):  # pyarrow / Awkward: their nulls become `?T`, lists var dims
        return array(from_foreign(obj), type)
    if not isinstance(obj, (_PYTHON_DATA, np.ndarray)):
        obj = as_readable(obj)  # (pandas columns with missing values: masked arrays)
    if isinstance(obj, np.ma.MaskedArray) and type is None and obj.dtype.kind in "biufc":
        # `?T` of the same dtype whether or not an entry is masked (vectorized)
        values = np.asarray(obj.data)
        return masked(values.astype(values.dtype.newbyteorder("="), copy=False),
                      ~np.ma.getmaskarray(obj))
    if isinstance(obj, np.ma.MaskedArray) and type is None and obj.dtype.names:
        obj, type = masked_records(obj)
    elif isinstance(obj, np.ma.MaskedArray):
        obj = obj.tolist()  # masked entries become None, so they land in an option mask
    elif type is None and isinstance(obj, np.ndarray):
        return array(obj.view(np.ndarray))
    elif type is None and not isinstance(obj, _PYTHON_DATA):
        try:
            memoryview(obj)
        except TypeError:
            pass
        else:  # any buffer-protocol object: a zero-copy view that keeps `obj` alive
            return array(np.asarray(obj))
    if not isinstance(obj, (_PYTHON_DATA, np.ndarray)) and hasattr(obj, "__iter__"):
        obj = list(obj)  # range, generators, ...: read once, as NumPy does
    t = as_type(type) if type is not None else infer_type(obj)
    if isinstance(obj, np.ndarray):
        if M.is_plain(t) and T.from_numpy(obj.dtype, obj.shape) == t:
            return Array._wrap(obj)
        obj = obj.tolist()
    if isinstance(t, T.Function):
        raise ArrayConstructionError(f"type '{t}' is a function signature (a kernel's), not an "
                                     "array's type such as '3 * int32'")
    if t.is_symbolic:
        raise ArrayConstructionError(f"type '{t}' is symbolic; give concrete sizes")
    if isinstance(t, T.Scalar) and isinstance(obj, (list, tuple)):
        raise ArrayConstructionError(f"the data is a list of {len(obj)} items and the type "
                                     f"'{t}' has no dimension: give the whole array's type, "
                                     f"'{len(obj)} * {t}' (or 'var * ...' dims for rows)")
    block, meta = pack(t, obj)
    return Array._from_parts(t, meta, block.address, block)


def masked(values: np.ndarray, mask: np.ndarray) -> Array:
    """`shape * ?T` from values and a bool mask (True = present): one copy into lazyk's form
    (the values, then one shadow byte slot per value; docs/layout.md)."""
    values = np.asarray(values, order="C")  # (ascontiguousarray would make 0-d 1-d)
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != values.shape:
        raise ArrayConstructionError(f"the mask's shape {mask.shape} differs from the values' "
                                     f"{values.shape}")
    out, into, present = masked_empty(values.shape, values.dtype, filled=True)
    into[...] = values
    present[...] = mask
    return out


def masked_empty(shape: tuple, dtype: np.dtype,
                 filled: bool = False) -> tuple[Array, np.ndarray, np.ndarray]:
    """A new `shape * ?T` array, every value missing (zero bytes), and writable views of its
    values and of its present bytes (bool, one per value): filled in place, it is `masked`
    without the copy. `filled=True`: the caller writes every value and present byte (the
    bytes are not zeroed first)."""
    dtype = np.dtype(dtype)
    raw = dtype.kind == "V" and dtype.names is None  # fixed_bytes[n]
    if dtype.kind not in "biufcmM" and not raw:
        raise NotSupportedError(f"missing values over {dtype} data")
    size = math.prod(shape) * dtype.itemsize
    block = memory.MemoryBlock(2 * size, zeroed=not filled)
    values = block.buffer[:size].view(dtype).reshape(shape)
    present = np.ndarray(values.shape, bool, block.buffer, size, values.strides)
    t: T.Type = T.Option(M.type_from_numpy(dtype))
    meta: list[int] = []
    for n, s in reversed(list(zip(values.shape, values.strides))):
        t = T.FixedDim(n, t)
        meta[:0] = [n, s]
    return Array._from_parts(t, tuple(meta) + (size,), block.address, block), values, present


__all__ = ["Array", "array", "TypeParseError"]

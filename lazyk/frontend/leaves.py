"""The inputs of an expression: what `Expr.env` maps each input leaf's name to.

A NumPy view (an `OwnedView` when a lazyk Array owns its memory), a `Placeholder` (a typed
parameter), a `DaskLeaf` (a Dask array, run by `lazyk.dask`) or a `RaggedLeaf` (a lazyk
Array with var dims or missing values, run by `lazyk.runtime.ragged`).
"""
from __future__ import annotations

import builtins
import ctypes
import itertools
from typing import Any

import numpy as np

from lazyk.errors import NotSupportedError, UnsupportedOperandError
from lazyk.frontend import ops
from lazyk.frontend.graph import build_type, type_text
from lazyk.types import EllipsisDim, FixedDim, Option, Scalar, SymbolicDim, VarDim, with_value
from lazyk.types.parse import dshape


class Placeholder:
    """Marker for a named parameter of a given type: `placeholder('a', 'N * float64')`."""

    __slots__ = ("name", "shape", "dtype")

    def __getstate__(self):  # (slots pickle with every protocol, 0 and 1 too)
        return object.__getstate__(self)

    def __init__(self, name: str, shape: tuple, dtype: np.dtype):
        self.name, self.shape, self.dtype = name, tuple(shape), np.dtype(dtype)

    def __repr__(self) -> str:
        return f"{self.name}: {self.type_text()}"

    def type_text(self) -> str:
        """The declared type, as text."""
        return type_text(self.shape, self.dtype)


class RaggedPlaceholder(Placeholder):
    """A parameter with var dims or missing values: `placeholder('x', 'N * var * ?float64')`.
    `shape` holds None for a var dim; `option` marks `?T` elements, `rows` (one flag per
    dim) `?var` dims (missing rows). Only `lazyk.compile` runs it (on lazyk arrays of that
    type)."""

    __slots__ = ("option", "rows")

    def __init__(self, name: str, shape: tuple, dtype: np.dtype, option: bool,
                 rows: tuple = ()):
        super().__init__(name, shape, dtype)
        self.option = bool(option)
        self.rows = tuple(bool(r) for r in rows) or (False,) * len(shape)

    def type_text(self) -> str:
        return str(build_type(self.shape, self.dtype, self.rows, self.option))


def is_dask_array(x: Any) -> bool:
    """A `dask.array.Array`, recognised without importing Dask."""
    cls = type(x)
    return cls.__name__ == "Array" and cls.__module__.startswith("dask.array")


class DaskLeaf(Placeholder):
    """A Dask array in an expression: typed like a placeholder, run by `lazyk.dask.evaluate`."""

    __slots__ = ("array",)

    def __init__(self, name: str, array: Any):
        shape = tuple(array.shape)
        if builtins.any(not isinstance(n, int) for n in shape):  # NaN sizes: chunks not known yet
            raise NotSupportedError(f"a dask array of unknown shape {shape} cannot be used in "
                                    "a lazyk expression: make it a collection of rows, "
                                    "lazyk.dask.from_ragged(a) (nothing is computed), or "
                                    "call .compute_chunk_sizes() first")
        dtype = np.dtype(array.dtype)
        check_dtype(dtype, "Dask array")  # long double & co. would be garbage in a kernel
        super().__init__(name, shape, dtype.newbyteorder("="))
        self.array = array


def is_text(dtype: np.dtype) -> bool:
    """Whether `dtype` is a text dtype of the op table (lazyk string, NumPy S / U)."""
    return bool(ops.text_unit(dtype))


def text_element(t) -> np.dtype | None:
    """The `{begin, size}` dtype of a `string` (`ops.STRING`) or `bytes` (`ops.BYTES`)
    element type; None for any other type."""
    if isinstance(t, Scalar) and t.name in ("string", "bytes"):
        return ops.STRING if t.name == "string" else ops.BYTES
    return None


def check_dtype(dtype: np.dtype, what: str = "operand", text: bool = False) -> None:
    """UnsupportedOperandError unless `dtype` is a numeric dtype the op table computes with
    (bool, int8-64, uint8-64, float16/32/64, complex64/128, either byte order), or with
    `text=True` a NumPy `S<n>` / native `U<n>` string dtype."""
    if dtype.kind == "T":  # (NumPy 2's variable-width StringDType: no byte order, no size)
        raise UnsupportedOperandError(f"unsupported {what} dtype {dtype!r} (NumPy "
                                      "StringDType): convert with .astype('U<n>') first, n "
                                      "the longest string's length")
    if text and dtype.kind in "SU":
        if dtype.kind == "U" and not dtype.isnative:
            raise UnsupportedOperandError(
                f"unsupported {what} dtype {dtype}: non-native UTF-32 strings; convert "
                "with .astype(dtype.newbyteorder('='))")
        return
    if dtype.newbyteorder("=") not in ops.NUMERIC or dtype.fields is not None \
            or dtype.subdtype is not None:
        raise UnsupportedOperandError(
            f"unsupported {what} dtype {dtype} ({_dtype_name(dtype)}); lazyk computes with "
            "bool, int8-int64, uint8-uint64, float16, float32, float64, complex64 and "
            "complex128 only")


def _dtype_name(dtype: np.dtype) -> str:
    if dtype.kind in "fc" and dtype.itemsize > 8 * (2 if dtype.kind == "c" else 1):
        return "long double" if dtype.kind == "f" else "complex long double"
    return {"O": "Python objects", "M": "datetime64", "m": "timedelta64", "U": "str",
            "S": "bytes", "V": "void / structured"}.get(dtype.kind, dtype.name)


_names = itertools.count()


def fresh_name() -> str:
    """A new input name (`_0`, `_1`, ...), never given out before in this process."""
    return f"_{next(_names)}"


class OwnedView:
    """A NumPy view plus the lazyk Array that owns its memory (kept alive together)."""

    __slots__ = ("view", "owner")

    def __init__(self, view: np.ndarray, owner: Any):
        self.view, self.owner = view, owner

    def __reduce__(self):
        if self.view.dtype in (ops.STRING, ops.BYTES):
            # (`{begin, size}` elements point into the owner's memory: made again from the
            # owner where it is unpickled, never pickled as this process's addresses)
            return _text_view_of, (self.owner,)
        return OwnedView, (self.view, self.owner)


def _text_view_of(owner: Any) -> OwnedView:
    return OwnedView(text_view(owner), owner)


def leaf_data(value) -> np.ndarray | Placeholder:
    """The NumPy view (or Placeholder) behind an env entry."""
    return value.view if isinstance(value, OwnedView) else value


class RaggedLeaf:
    """Env entry for a var / option lazyk Array leaf."""

    __slots__ = ("array", "option")

    def __init__(self, array, option: bool):
        self.array, self.option = array, option


class PickLeaf(RaggedLeaf):
    """Env entry of an array read at tuple levels (combinations, cartesian; the loop nest
    walks the tuples): `picks` holds per tuple level (the array's dim, tuples, slot).
    `position`: the value is the item's index at the last pick (argcombinations: int64).
    `witness`: read only for its rows (a cartesian slot no value reads, a record field's
    broadcast), never its values or missing values. Either reads only the array's first
    `cut` dims, then `pad` dims of 1 (it lines up with the value it joins)."""

    __slots__ = ("picks", "position", "witness", "cut", "pad")

    def __init__(self, array, option: bool, picks: tuple, position: bool = False,
                 witness: bool = False, cut: int | None = None, pad: int = 0):
        super().__init__(array, option and not (position or witness))
        self.picks, self.position, self.witness = tuple(picks), position, witness
        self.cut, self.pad = cut, pad

    def key(self) -> tuple:
        """What makes two entries one operand of a loop nest."""
        return (id(self.array), self.option, self.picks, self.position, self.witness,
                self.cut, self.pad)


def most_rows(envs) -> int:
    """The longest outer dim of the arrays the env entries of `envs` (env dicts) hold."""
    most = 0
    for env in envs:
        for v in env.values():
            a = v.array if isinstance(v, RaggedLeaf) else leaf_data(v)
            shape = getattr(a, "shape", ())
            if shape and isinstance(shape[0], int):
                most = max(most, shape[0])
    return most


def leaf_key(value) -> tuple:
    """What makes two ragged env entries one operand of a loop nest (`PickLeaf.key`)."""
    if isinstance(value, PickLeaf):
        return value.key()
    return (id(value.array), value.option)


def is_ragged(value) -> bool:
    """Whether an env entry is a lazyk Array with var dims or options (`lazyk.runtime.ragged` runs it)."""
    return isinstance(value, RaggedLeaf)


def describe_ragged(array) -> tuple[tuple, np.dtype, bool]:
    """(shape with None for var, NumPy dtype, option?) of a lazyk Array of a supported form: fixed
    and var dims in any order over numeric `T` or `?T` (the evaluation step says which
    forms and operations it runs); a `?var` dim (missing rows) is None in the shape and
    counts as an option."""
    t = array.type
    dims = []
    rows_missing = False
    while isinstance(t, (FixedDim, VarDim)) or \
            isinstance(t, Option) and isinstance(t.elem, VarDim):
        if isinstance(t, Option):
            rows_missing, t = True, t.elem
        dims.append(t.size if isinstance(t, FixedDim) else None)
        t = t.elem
    option = isinstance(t, Option)
    if option:
        t = t.elem
    if not isinstance(t, Scalar):
        raise NotSupportedError(f"expressions over {array.type}: only fixed and var dims "
                                "over numeric T or ?T")
    dt = t.to_numpy()
    if dt.kind not in "biufc":
        raise NotSupportedError(f"expressions over {array.type}: numeric element types only")
    return tuple(dims), dt.newbyteorder("="), option or rows_missing


def text_view(array) -> np.ndarray:
    """A zero-copy NumPy view of the `{begin, size}` elements of a lazyk `string` or `bytes`
    array with fixed dims (dtype `ops.STRING` / `ops.BYTES`); the caller keeps `array` alive
    with the view.

    NotSupportedError for var dims and missing strings (`?string`, `?bytes`).
    """
    t, shape, strides, at = array.type, [], [], 0
    meta = array.meta
    while isinstance(t, FixedDim):
        shape.append(meta[at])
        strides.append(meta[at + 1])
        t, at = t.elem, at + 2
    dt = text_element(t)
    if dt is None:
        what = "missing strings (?string)" if isinstance(t, Option) else \
            "var dimensions" if isinstance(t, VarDim) else f"element type {t}"
        raise NotSupportedError(f"string operations on {array.type}: {what} are not "
                                "supported in expressions yet (fixed dims over string, "
                                "bytes or fixed_string[n] only)")
    if 0 in shape:
        return np.empty(shape, dt)
    ptr = array.ptr
    lo = ptr + builtins.sum(builtins.min(0, (n - 1) * s) for n, s in zip(shape, strides))
    hi = ptr + builtins.sum(builtins.max(0, (n - 1) * s) for n, s in zip(shape, strides)) + 16
    raw = np.frombuffer((ctypes.c_char * (hi - lo)).from_address(lo), np.uint8)
    view = np.ndarray(shape, dt, raw, ptr - lo, strides)
    view.flags.writeable = False
    return view


def parse_placeholder_type(type: Any, with_rows: bool = False) -> tuple:
    """(dims, native dtype, option) of a placeholder type: fixed, symbolic and `var` dims
    (a var dim is None in dims) over a numeric `T` or `?T`, or over `string` / `?string`
    (dtype `ops.STRING`) or `bytes` / `?bytes` (`ops.BYTES`); `with_rows` adds a flag per dim for `?var` dims (missing rows;
    refused without it). TypeParseError for malformed text; NotSupportedError, naming the
    type, for ellipsis dims, records and other element types."""
    t = dshape(type)
    dims: list = []
    rows: list = []
    node = t
    while isinstance(node, (FixedDim, SymbolicDim, VarDim)) or (
            with_rows and isinstance(node, Option) and isinstance(node.elem, VarDim)):
        rows.append(isinstance(node, Option))
        node = node.elem if rows[-1] else node
        dims.append(node.size if isinstance(node, FixedDim) else
                    None if isinstance(node, VarDim) else node.name)
        node = node.elem
    if isinstance(node, Option) and isinstance(node.elem, (FixedDim, SymbolicDim)):
        dim = node.elem.size if isinstance(node.elem, FixedDim) else node.elem.name
        raise NotSupportedError(f"placeholder type {t}: `?{dim}` would mark missing rows "
                                "of a fixed dimension, which placeholders cannot hold: "
                                "only var dims have missing rows (`?var`), and "
                                "`?` before the element type marks missing values "
                                "(e.g. 'N * var * ?float64')")
    option = isinstance(node, Option)
    if option:
        node = node.elem
    if text_element(node) is not None:  # `{begin, size}` elements
        return (tuple(dims), text_element(node), option) + ((tuple(rows),) if with_rows else ())
    if not isinstance(node, Scalar) or node.kind not in "biufc":
        what = "ellipsis dimensions" if isinstance(node, EllipsisDim) else \
            "missing rows (?var)" if isinstance(node, VarDim) else \
            "nested options" if isinstance(node, Option) else f"element type {node}"
        raise NotSupportedError(f"placeholder type {t}: placeholders cannot hold {what} "
                                "yet (fixed, symbolic, var and ?var dims over a bool / "
                                "integer / float / complex / string / bytes element type T "
                                "or ?T only)")
    if with_rows:
        return tuple(dims), node.to_numpy().newbyteorder("="), option, tuple(rows)
    return tuple(dims), node.to_numpy().newbyteorder("="), option


def parse_fixed_type(type: Any) -> tuple[tuple, np.dtype]:
    """Split a type (text, np.dtype or lazyk type) into (dims, native dtype) via `dshape`.

    Dims are ints (fixed) or names (symbolic). TypeParseError for malformed text;
    NotSupportedError, naming the type, for var / ellipsis dims, options and
    non-numeric element types.
    """
    t = dshape(type)
    dims: list = []
    node = t
    while isinstance(node, (FixedDim, SymbolicDim)):
        dims.append(node.size if isinstance(node, FixedDim) else node.name)
        node = node.elem
    if not isinstance(node, Scalar) or node.kind not in "biufc":
        what = "var dimensions" if isinstance(node, VarDim) else \
            "ellipsis dimensions" if isinstance(node, EllipsisDim) else \
            "option types (?T)" if isinstance(node, Option) else f"element type {node}"
        raise NotSupportedError(f"placeholder type {t}: placeholders cannot hold {what} "
                                "yet (fixed and symbolic dims over a bool / integer / "
                                "float / complex element type only)")
    dtype = node.to_numpy()
    return tuple(dims), dtype.newbyteorder("=")


def text_rows(array, nested: bool = False):
    """`array` (var dims and / or `?string` over `string` or `bytes` elements) with each
    16-byte `{begin, size}` element read as a complex128 number: the same arrmeta but the
    string's trailing `{blockref}`, so the ragged row readers (`lazyk.runtime.rows`) gather the
    elements, zero-copy up to that gather; `lazyk.runtime.text_steps` views the values as
    `ops.STRING` / `ops.BYTES` again (`text_element`).

    NotSupportedError for forms the ragged rows cannot hold (var dims below the last,
    `?var` rows, records); `nested=True` takes fixed, var and `?var` dims in any order
    (`var * var * string`: `lazyk.runtime.text_steps` reads those itself).
    """
    t, dims = array.type, []
    while isinstance(t, (FixedDim, VarDim)) or \
            nested and isinstance(t, Option) and isinstance(t.elem, VarDim):
        dims.append(t)
        t = t.elem if not isinstance(t, Option) else t.elem.elem
    option = isinstance(t, Option)
    inner = t.elem if option else t
    if text_element(inner) is None or not nested and any(
            not isinstance(d, FixedDim) for d in dims[:-1]):
        raise NotSupportedError(f"string operations on {array.type}: only fixed, var and "
                                "?var dims over string, ?string, bytes or ?bytes")
    # (a `{begin, size}` element read as one complex number)
    proxy = with_value(array.type, Scalar("complex128"))
    return type(array).from_parts(proxy, array.meta[:-1], array.ptr, array.owner,
                                  readonly=True, check_strings=False)

"""A compiled expression's call inputs: read, converted and checked against the parameter types.

NumPy, lazyk, masked, pandas, Arrow and Awkward inputs, nested lists and scalars; strings as
lazyk string arrays; `T` data for `?T` parameters and fixed rows for var ones (`CallInputs`,
the part of `CompiledExpr` that binds a call's inputs).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from lazyk import types as _T
from lazyk.arrays.array import Array, masked
from lazyk.arrays.array import array as _array
from lazyk.arrays.buffers import offsets_array, regular, text_array
from lazyk.arrays.columns import build_columns, columns, text_input
from lazyk.arrays.foreign import is_foreign, is_pandas
from lazyk.arrays.trees import Column, Leaf, Lists, Masked, Regular, Text, without_options
from lazyk.errors import (
    BindError,
    CastingError,
    NotSupportedError,
    ShapeError,
    TypeMatchError,
    UnsupportedOperandError,
)
from lazyk.frontend.expression import Expr, summary
from lazyk.frontend.graph import Node, build_type, toposort, type_text
from lazyk.frontend.indexing import check_index_sizes, index_pairs
from lazyk.frontend.leaves import (
    OwnedView,
    Placeholder,
    RaggedLeaf,
    RaggedPlaceholder,
    check_dtype,
    is_dask_array,
    is_text,
    leaf_data,
    text_element,
    text_view,
)
from lazyk.frontend.ops import BYTES, STRING
from lazyk.runtime.device import as_device_array
from lazyk.runtime.launch import as_out
from lazyk.types.parse import dshape


def _present_values(x: Any, rows: tuple | None = ()) -> Any:
    """A masked / pyarrow / Awkward / pandas / lazyk input as a lazyk Array (read as
    lazyk.array reads it) or, for `?T` elements of which none is missing, their values; None
    where a value is missing. Missing rows (`?var`) are kept at the dims where `rows` (a
    flag per dim) says the parameter has them, else dropped where none is missing; with
    `rows` None, the options of 1-d values only are dropped (no copy)."""
    if isinstance(x, np.ma.MaskedArray):
        if not np.ma.getmaskarray(x).any():
            return np.asarray(x.data)
        x = _array(x)
    elif not isinstance(x, Array):
        x = _array(x)  # as lazyk.from_arrow / lazyk.from_awkward read it
    if not x.type.missing_values:
        return x
    if not isinstance(x.type, _T.FixedDim):
        return None  # (columns need a leading fixed dim)
    tree = columns(x)
    if isinstance(tree, Masked) and isinstance(tree.child, Leaf) and tree.present.all():
        return tree.child.values  # `?T` type, every value present
    if rows is None:  # (only 1-d values)
        return None
    plain = without_options(tree, 0, tree.length(), tuple(rows)[1:])
    return None if plain is None else build_columns(plain)


def _refuse_expression(label: str, x: Any) -> None:
    """TypeError for a lazy expression given as an input (a call takes data)."""
    if isinstance(x, Expr) and not hasattr(x, "__dask_graph__"):
        raise TypeError(f"input {label!r} is a lazy expression ({summary(x)}): a compiled "
                        "expression takes arrays; evaluate it first (expr.eval()), or "
                        "compile the whole expression")


def _refuse_lazy(x: Any) -> None:
    """A lazy Dask collection other than a Dask array (lazyk.dask's RaggedArray): TypeError
    saying how to run it."""
    if hasattr(x, "__dask_graph__") and not is_dask_array(x):
        cls = type(x)
        raise TypeError(f"a compiled expression cannot take a {cls.__module__}."
                        f"{cls.__qualname__} (a lazy Dask collection): build the expression "
                        "on it and run lazyk.dask.evaluate(expr), or call .compute() on it "
                        "first")


def _as_input(x: Any) -> np.ndarray:
    _refuse_lazy(x)
    if isinstance(x, np.ndarray) and x.dtype.kind == "T":
        check_dtype(x.dtype, "input")  # (StringDType: refused by name)
    if is_pandas(x) or isinstance(x, (str, bytes)):  # as lazyk.array reads it
        x = _array(x)
    if isinstance(x, (int, float, complex, np.generic)):
        return np.asarray(x)
    if hasattr(x, "__cuda_array_interface__"):  # stays on the GPU, no host copy
        return as_device_array(x)
    if isinstance(x, (list, tuple)):
        return np.asarray(x)
    if isinstance(x, Array) and x.type.dtype in (_STRING, _BYTES):  # {begin, size} elements
        return text_view(x)  # the caller holds `x` for the call
    if isinstance(x, np.ndarray) and x.dtype in TEXT_ELEMENTS:  # pointers: never trusted
        raise UnsupportedOperandError(f"inputs must be NumPy or lazyk arrays: {x.dtype} "
                                      "NumPy records are not string arrays")
    if isinstance(x, (np.ndarray, Array)):
        return as_out(x, None)
    raise TypeError(f"inputs must be NumPy or lazyk arrays, lists, scalars or strings, "
                    f"not {type(x).__name__}")


def _exact_ints(x: Any, a: np.ndarray) -> np.ndarray | None:
    """Nested lists of Python ints (of `a`'s shape) as an object array, else None (NumPy
    makes float64 or object arrays of ints past int64)."""
    exact = np.array(x, dtype=object)
    if exact.shape == a.shape and all(type(v) is int for v in exact.reshape(-1)):
        return exact
    return None


def check_fits(label: str, x: Any, dtype: np.dtype) -> Any:
    """`x` (a NumPy or lazyk array, or a holder of one as `.array`) once its integers where
    its rows reach fit `dtype` (no wrapping): CastingError naming input `label` otherwise."""
    a, info = _leaf_values(x), np.iinfo(dtype)
    if a.size and (a.min() < info.min or a.max() > info.max):
        bad = a.min() if a.min() < info.min else a.max()
        raise CastingError(f"input {label!r}: the value {int(bad)} does not fit the "
                           f"parameter's {dtype} ({info.min} to {info.max})")
    return x


def narrows(got: np.dtype, dtype: np.dtype, casting: str) -> bool:
    """Whether integers of `got` may wrap around as `dtype` (checked unless 'unsafe')."""
    return casting != "unsafe" and got.kind in "iu" and dtype.kind in "iu" and \
        not np.can_cast(got, dtype, "safe")


def _no_numbers(x: Any) -> bool:
    """Whether Python lists hold no numbers: only lists and None."""
    return all(v is None or isinstance(v, (list, tuple)) and _no_numbers(v) for v in x)


def _leaf_values(value: Any, present: bool = False) -> np.ndarray:
    """The numbers of an input (as `check_fits`; missing ones read as 0, or left out)."""
    if isinstance(value, np.ndarray):
        return value.reshape(-1)
    tree = columns(getattr(value, "array", value))  # (a leaf's, a partition's: held)
    lo, hi = 0, tree.length()  # (the items the rows reach: a slice's lie between)
    while isinstance(tree, (Lists, Regular)) or (isinstance(tree, Masked) and
                                                 not isinstance(tree.child, Leaf)):
        lo, hi = (int(tree.offsets[lo]), int(tree.offsets[hi])) if isinstance(tree, Lists) \
            else (lo * tree.size, hi * tree.size) if isinstance(tree, Regular) else (lo, hi)
        tree = tree.child
    if isinstance(tree, Masked):
        values = tree.child.values.reshape(-1)[lo:hi]
        return values[np.asarray(tree.present, bool)[lo:hi]] if present else values
    return tree.values.reshape(-1)[lo:hi] if isinstance(tree, Leaf) else np.zeros(0)


def text_for(x: Any, element: np.dtype, label: str) -> Any:
    """`text_input(x)` for a string (or bytes) parameter: NumPy `S` bytes read as UTF-8
    text for a string parameter, as `lazyk.array` reads them."""
    if element == STRING and isinstance(x, np.ndarray) and x.dtype.kind == "S":
        try:
            x = np.char.decode(x, "utf-8")
        except UnicodeDecodeError:
            raise TypeMatchError(f"input {label!r}: a string parameter takes text; these "
                                 f"NumPy bytes ({x.dtype}) are not UTF-8") from None
    return text_input(x)


_STRING, _BYTES = dshape("string"), dshape("bytes")


# string / bytes element types and their `{begin, size}` dtypes (string parameters)
TEXT_TYPES = (_STRING, dshape("?string"), _BYTES, dshape("?bytes"))


TEXT_ELEMENTS = (STRING, BYTES)


def _is_parameter(v: Any) -> bool:
    """Whether an env entry is a parameter of a compiled expression (a placeholder, or a
    Dask array's leaf); anything else is an array the expression captured."""
    return isinstance(leaf_data(v), Placeholder)


def _constant_value(v: Any) -> Any:
    """A captured array as the user gave it: the NumPy array, or the lazyk array."""
    if isinstance(v, OwnedView):
        return v.owner
    return v.array if isinstance(v, RaggedLeaf) else v


def _constant_input(v: Any) -> Any:
    """A captured array in the form a call passes it on: a NumPy view (numeric data keeps
    the fast path), else the lazyk array it comes from (strings, var / option data)."""
    if isinstance(v, OwnedView):
        return v.view if v.view.dtype not in TEXT_ELEMENTS else v.owner
    return v.array if isinstance(v, RaggedLeaf) else v


def ragged_param(v: Any) -> bool:
    """Whether an env entry is a var / option parameter (placeholder or lazyk array)."""
    return isinstance(v, (RaggedPlaceholder, RaggedLeaf))


def typed_text(shape: tuple, dtype: np.dtype, option: bool, rows: tuple = ()) -> str:
    return str(build_type(shape, dtype, rows, option))


def rows_of(t: Any) -> tuple:
    """A flag per dim of a lazyk type: whether it is `?var` (missing rows)."""
    rows = []
    while isinstance(t, (_T.FixedDim, _T.VarDim)) or (
            isinstance(t, _T.Option) and isinstance(t.elem, _T.VarDim)):
        rows.append(isinstance(t, _T.Option))
        t = t.elem.elem if rows[-1] else t.elem
    return tuple(rows)


def input_type(x: Any) -> tuple[tuple, np.dtype, bool, Any, str, tuple]:
    """(dims with None for var, dtype, option, env value, type text, `?var` flag per dim) of a
    call's input: a lazyk Array (var / option ones become ragged leaves), a NumPy array,
    nested lists or a scalar."""
    _refuse_lazy(x)
    if isinstance(x, (list, tuple)) or is_pandas(x) or is_foreign(x) or \
            isinstance(x, np.ma.MaskedArray):
        x = _array(x)  # nested lists: lazyk infers var dims; masked / null entries `?T`
    x = text_input(x)  # NumPy `U` strings: a string array
    if isinstance(x, Array):
        t, dims, rows = x.type, [], rows_of(x.type)
        while isinstance(t, (_T.FixedDim, _T.VarDim)) or len(dims) < len(rows):
            t = t.elem if isinstance(t, _T.Option) else t
            dims.append(t.size if isinstance(t, _T.FixedDim) else None)
            t = t.elem
        option = isinstance(t, _T.Option)
        elem = t.elem if option else t
        if text_element(elem) is not None:  # string / bytes elements: rows, or a view
            value = RaggedLeaf(x, option or any(rows)) if option or None in dims else \
                OwnedView(text_view(x), x)
            return tuple(dims), text_element(elem), option, value, str(x.type), rows
        if not isinstance(elem, _T.Scalar) or elem.kind not in "biufc":
            return tuple(dims), np.dtype("V8"), option, None, str(x.type), rows
        dtype = elem.to_numpy()
        if option or None in dims:
            return tuple(dims), dtype, option, RaggedLeaf(x, option or any(rows)), \
                str(x.type), rows
        x = x.to_numpy()
    if isinstance(x, (int, float, complex, np.generic)):
        x = np.asarray(x)
    if not isinstance(x, np.ndarray):
        raise TypeError(f"inputs must be lazyk arrays, NumPy arrays, lists or scalars, not "
                        f"{type(x).__name__} (Arrow and Awkward data: lazyk.from_arrow, "
                        "lazyk.from_awkward)")
    return x.shape, x.dtype, False, x, type_text(x.shape, x.dtype), (False,) * np.ndim(x)


def _var_rows(x: np.ndarray) -> RaggedLeaf:
    """A NumPy array as `outer * var * T` rows of its last dim's length (no copy of a
    C-contiguous array; O(1) offsets work beyond one arange)."""
    flat = np.ascontiguousarray(x).reshape(-1)
    nrows = int(np.prod(x.shape[:-1], dtype=np.int64))
    offsets = np.arange(nrows + 1, dtype=np.int64) * x.shape[-1]
    return RaggedLeaf(offsets_array(offsets, _array(flat), outer=x.shape[:-1], check=None),
                      False)


def _text_var_rows(value: OwnedView) -> RaggedLeaf:
    """A fixed lazyk string array as `outer * var * string` rows of its last dim's length
    (its `{begin, size}` elements are not copied when they lie in C order)."""
    x, v = value.owner, value.view
    if not v.flags.c_contiguous:  # a strided view: its strings packed again
        x = _array(x.to_list(), type=str(x.type))
        v = text_view(x)
    flat = Array.from_parts(f"{v.size} * {x.type.dtype}", (v.size, 16, x.meta[-1]),
                            v.__array_interface__["data"][0], x.owner, readonly=True)
    nrows = int(np.prod(v.shape[:-1], dtype=np.int64))
    offsets = np.arange(nrows + 1, dtype=np.int64) * v.shape[-1]
    return RaggedLeaf(offsets_array(offsets, flat, outer=v.shape[:-1], check=None), False)


def _all_present(x: Any, option: bool, rows: tuple, var: tuple) -> Any:
    """Input `x` (a lazyk Array) in its parameter's form: `?T` values when `option`, `?var`
    rows where `rows` says (every value and row present), fixed dims as var rows of one
    length where `var` says. The values and masks are new (vectorized, no Python per row);
    offsets and characters are reused."""
    return _present(columns(x), option, rows[1:], var[1:], len(x))


def _present(tree: Column, option: bool, rows: tuple, var: tuple, count: int) -> Array:
    """`count`: the number of elements `tree` holds (rows of size 0 hold no values)."""
    mask, tree = tree.unwrap()
    if isinstance(tree, (Lists, Regular)):
        lists = isinstance(tree, Lists)
        inner = int(tree.offsets[-1]) if lists else count * tree.size
        child = _present(tree.child, option, rows[1:], var[1:], inner)
        if not lists and var[:1] != (True,):
            return regular(child, tree.size, count)
        offsets = tree.offsets if lists else np.arange(count + 1, dtype=np.int64) * tree.size
        if rows[:1] == (True,) and mask is None:
            mask = np.ones(len(offsets) - 1, bool)
        return offsets_array(offsets, child, validity=mask, check=None)
    if option and mask is None:
        mask = np.ones(tree.length(), bool)
    if isinstance(tree, Text):
        return text_array(tree.offsets, tree.chars, mask, kind=tree.type_name)
    if isinstance(tree, Leaf):
        return _array(tree.values) if mask is None else masked(tree.values, mask)
    raise NotSupportedError(f"missing values added to {tree.kind} data")


def leaf_order(root: Node) -> list[str]:
    return [n.arg for n in toposort(root) if n.op == "input"]


class CallInputs:
    """Binding a call's inputs to the parameters (CompiledExpr's part): by position or name,
    with the captured constants, converted under `casting=`, checked against the types."""

    def _capture(self, expr: Expr) -> None:
        """Parameters (placeholders, by name) and constants (the arrays the expression
        captured), each in order of first appearance in the graph the user wrote."""
        names = tuple(dict.fromkeys(leaf_order(expr.node)))
        self.params = tuple(n for n in names if _is_parameter(expr.env[n]))
        captured = tuple(n for n in names if not _is_parameter(expr.env[n]))
        # Calls run over the parameters, then the constants: `_slots` is that order.
        self._slots = self.params + captured
        self.constants = {n: _constant_value(expr.env[n]) for n in captured}
        self._captured = tuple(_constant_input(expr.env[n]) for n in captured)

    def _with_constants(self, inputs: tuple) -> tuple:
        """The call's inputs followed by the constants (bound once, at compile time)."""
        if len(inputs) != len(self.params):
            raise TypeError(f"expected {len(self.params)} input{'s' * (len(self.params) != 1)}"
                            f" {self.signature}, got {len(inputs)} (the arrays the expression "
                            "captured are constants, not inputs)")
        return tuple(inputs) + self._captured

    def _bind_inputs(self, inputs: tuple, casting: str = "same_kind",
                     hint: str = "pass casting='unsafe' to convert anyway") -> dict:
        if len(inputs) != len(self._slots):
            raise TypeError(f"expected {len(self._slots)} inputs {self.signature}, got "
                            f"{len(inputs)}")
        data = {}
        for i, (name, x) in enumerate(zip(self._slots, inputs)):
            _refuse_expression(self._names[i], x)
            shape, dtype = self._types[i]
            if type(x) is not np.ndarray and (isinstance(x, (np.ma.MaskedArray, Array)) or
                                              is_foreign(x) or is_pandas(x)):
                x = self._present_input(i, x)  # missing values never dropped
            if isinstance(x, Array) and not is_text(dtype) and (
                    x.type.dtype in (_STRING, _BYTES) or any(isinstance(
                        d.elem if isinstance(d, _T.Option) else d, _T.VarDim)
                        for d in x.type.dims)):  # (var rows or strings: no NumPy form)
                raise TypeMatchError(f"input {self._names[i]!r}: expected "
                                     f"{type_text(shape, dtype)}, got {x.type}: "
                                     f"{self.signature}")
            try:
                a = x if isinstance(x, np.ndarray) and x.dtype not in TEXT_ELEMENTS \
                    else _as_input(x)
            except ValueError:  # NumPy's "inhomogeneous shape": lists of other lengths
                if not isinstance(x, (list, tuple)):
                    raise
                raise TypeMatchError(f"input {self._names[i]!r}: expected "
                                     f"{type_text(shape, dtype)}, got lists of different "
                                     f"lengths (var rows): {self.signature}") from None
            if a.dtype.kind == "T":  # (NumPy's StringDType: refused by name)
                check_dtype(a.dtype, f"input {self._names[i]!r}")
            if (type(x) is int or isinstance(x, (list, tuple)) and all(
                    type(v) in (int, float) for v in a.flat)) and a.dtype == object and \
                    dtype.kind in "fc":
                a = np.asarray(x, dtype)  # (ints past int64 for a float: NumPy's rounding)
            elif type(x) is int and a.dtype == object and dtype.kind in "iu":
                raise OverflowError(f"input {self._names[i]!r}: Python integer {x} out of "
                                    f"bounds for {dtype}: {self.signature}")
            exact = _exact_ints(x, a) if isinstance(x, (list, tuple)) and \
                a.dtype.kind in "fO" and dtype.kind in "iu" else None  # ints past int64
            if a.dtype == object and isinstance(x, (list, tuple)) and exact is None:
                # None in a list: missing values, named as such (or a value lazyk refuses)
                x = self._present_input(i, _array(x))
                a = _as_input(x)
            if exact is not None:
                a = exact
            if isinstance(x, (list, tuple, int)) and (a.dtype.kind in "iu" or exact is not None) \
                    and a.size and dtype.kind in "iu":
                check_fits(self.labels[i], a, dtype)
                if casting != "no":  # Python integers that fit: their values exactly
                    a = a.astype(dtype)
            if a.ndim != len(shape):
                raise TypeMatchError(f"input {self._names[i]!r}: expected "
                                     f"{type_text(shape, dtype)}, got "
                                     f"{type_text(a.shape, a.dtype)}")
            if isinstance(x, (list, tuple)) and not a.size and a.dtype != dtype:
                a = a.astype(dtype)  # `[]`: no numbers, no element type to refuse
            if a.dtype.newbyteorder("=") != dtype:  # either byte order runs as it is
                a = self._cast_input(i, a, dtype, casting, hint)
            data[name] = a
        self._check_shapes([data[name].shape for name in self._slots])
        return data

    def _present_input(self, i: int, x: Any) -> Any:
        """A masked / pyarrow / Awkward / lazyk input for a parameter without `?`: its
        values when none is missing, else TypeMatchError (never a silent fill)."""
        got = _present_values(x)
        if got is not None:
            return got
        x = _array(x) if not isinstance(x, Array) else x
        shape, dtype = self._types[i][:2]
        raise TypeMatchError(f"input {self.labels[i]!r}: the input ({x.type}) has missing "
                             f"values; the parameter {type_text(shape, dtype)} has none: "
                             f"fill them first, or declare the parameter "
                             f"?{type_text((), dtype)} (lazyk.placeholder({self._names[i]!r}, "
                             f"{typed_text(shape, dtype, True)!r})): {self.signature}")

    def _cast_input(self, i: int, a: np.ndarray, dtype: np.dtype, casting: str,
                    hint: str = "pass casting='unsafe' to convert anyway") -> np.ndarray:
        """`a` converted to its parameter's dtype if `casting` allows (numexpr's rule)."""
        if is_text(dtype):  # a string parameter: never converted
            raise TypeMatchError(f"input {self._names[i]!r}: expected "
                                 f"{type_text(self._types[i][0], dtype)}, got "
                                 f"{type_text(a.shape, a.dtype)}: {self.signature}")
        try:
            check_dtype(a.dtype, "input")
        except UnsupportedOperandError as err:
            raise UnsupportedOperandError(f"input {self._names[i]!r}: {err}") from None
        if not np.can_cast(a.dtype, dtype, casting):
            raise CastingError(f"input {self._names[i]!r}: cannot cast {a.dtype} to the "
                               f"parameter's {dtype} under casting={casting!r} ({hint}): "
                               f"{self.signature}")
        if narrows(a.dtype, dtype, casting):
            check_fits(self.labels[i], a, dtype)
        return a.astype(dtype)

    def _by_name(self, inputs: tuple, named: dict) -> tuple:
        """Positional and keyword arguments to one tuple in parameter order, as Python
        binds a call: TypeError naming unknown, repeated or missing parameters."""
        labels = self.labels
        if len(inputs) > len(labels):
            raise TypeError(f"expected at most {len(labels)} inputs {self.signature}, got "
                            f"{len(inputs)}")
        unknown = [k for k in named if k not in labels]
        if unknown:
            raise TypeError(f"unexpected keyword argument(s) {', '.join(map(repr, unknown))}; "
                            f"the parameters are {self.signature}")
        twice = [k for k in labels[:len(inputs)] if k in named]
        if twice:
            raise TypeError(f"got multiple values for parameter(s) "
                            f"{', '.join(map(repr, twice))} (positional and by name)")
        missing = [k for k in labels[len(inputs):] if k not in named]
        if missing:
            raise TypeError(f"missing input(s) {', '.join(map(repr, missing))}: "
                            f"{self.signature}")
        return tuple(inputs) + tuple(named[k] for k in labels[len(inputs):])

    def _check_shapes(self, shapes: list) -> None:
        """Every input's shape against its parameter: fixed sizes equal, symbols agree."""
        sizes: dict[str, tuple[str, int, int]] = {}
        for i, shape in enumerate(shapes):
            for ax, (want, n) in enumerate(zip(self._types[i][0], shape)):
                self._check_size(sizes, i, ax, want, n)
        self._check_picks(sizes)

    def _check_picks(self, sizes: dict) -> None:
        """`x[mask]` / `x[positions]` pairing a symbol with a size: equal sizes once the
        inputs give the symbols theirs (`sizes`: symbol -> (input, axis, size))."""
        if "_index_pairs" not in self.__dict__:
            self._index_pairs = index_pairs(self.expr.node)
        if self._index_pairs:  # (most expressions have none: no work per call)
            check_index_sizes(self._index_pairs, {k: v[2] for k, v in sizes.items()},
                              self.signature)

    def _check_size(self, sizes: dict, i: int, ax: int, want: Any, n: int) -> None:
        """Axis `ax` of input `i` against its parameter's: a fixed size equal, a symbol the
        same size in every input (`sizes`: each symbol's first size, and where)."""
        if isinstance(want, str):
            seen = sizes.setdefault(want, (self._names[i], ax, n))
            if seen[2] != n:
                raise ShapeError(
                    f"dimension {want} is {seen[2]} in {seen[0]!r} (axis {seen[1]}) "
                    f"but {n} in {self._names[i]!r} (axis {ax}); signature {self.signature}")
        elif want != n:
            raise ShapeError(f"input {self._names[i]!r}: axis {ax} has size {n}, the "
                             f"signature says {want}: {self.signature}")

    def _bind_ragged(self, inputs: tuple, casting: str, copies: bool = True) -> dict:
        if self._captured:
            inputs = self._with_constants(inputs)
        elif len(inputs) != len(self.params):
            raise TypeError(f"expected {len(self.params)} inputs {self.signature}, got "
                            f"{len(inputs)}")
        env, sizes = {}, {}
        for i, (name, x) in enumerate(zip(self._slots, inputs)):
            want, dtype, option, want_rows = self._types[i]
            label = self._names[i]
            _refuse_expression(label, x)
            if not option and type(x) is not np.ndarray and (isinstance(
                    x, (np.ma.MaskedArray, Array)) or is_foreign(x) or is_pandas(x)):
                # `?T` data, none missing: its values (a call; bind reads the arrays given)
                present = _present_values(x, want_rows if copies else None)
                x = x if present is None else present
            if isinstance(x, (list, tuple)) and len(want) > 1 and _no_numbers(x):
                # `[]`, `[None, [None]]`: of the parameter's type (Awkward's empty array)
                try:
                    x = _array(x, typed_text((len(x),) + tuple(want[1:]), dtype, option,
                                             want_rows))
                except (TypeError, ValueError):
                    pass  # (refused below, naming the parameter)
            if dtype in TEXT_ELEMENTS:
                x = text_for(x, dtype, label)
            if type(x) is int and dtype.kind in "fc" and not -2**63 <= x < 2**64:
                x = np.asarray(x, dtype)  # (an int past 64 bits for a float: NumPy's rounding)
            dims, got, got_option, value, text, qrows = input_type(x)
            expected = typed_text(want, dtype, option, want_rows)

            fixed_rows = isinstance(value, RaggedLeaf) and 0 not in dims and any(
                w is None and n is not None for w, n in zip(want, dims))
            if value is not None and len(dims) == len(want) and not any(
                    q and not w for q, w in zip(qrows, want_rows)) and (
                    (option and not got_option) or tuple(qrows) != tuple(want_rows) or
                    fixed_rows) and not (got_option and not option):
                # `T` data for a `?T` parameter (`var` rows for `?var`, fixed rows for var):
                # a copy in the parameter's form, every value and row present
                a = value.array if isinstance(value, RaggedLeaf) else \
                    value.owner if isinstance(value, OwnedView) else _array(value)
                if not copies and (option and not got_option or
                                   tuple(qrows) != tuple(want_rows)):
                    raise BindError(f"input {label!r}: {text} has no missing values where "
                                    f"the parameter {expected} has them: bind() reads the "
                                    "very arrays bound, and this input would be a copy "
                                    "(every value present) whose later changes the bound "
                                    "call never sees; pass data of the parameter's type, "
                                    "or call the compiled expression")
                if isinstance(a.type, _T.FixedDim):
                    dims, got, got_option, value, _, qrows = input_type(_all_present(
                        a, option, want_rows, tuple(w is None for w in want)))

            def mismatch(why: str):
                return TypeMatchError(f"input {label!r}: expected {expected}, got {text} "
                                      f"({why}): {self.signature}")
            if value is None:
                raise mismatch("numeric elements only")
            if got_option and not option:
                elem = typed_text((), got, False)
                raise mismatch(f"missing values (?T): the input's elements are ?{elem}, "
                               f"the parameter's {elem}, never missing; fill or drop them, "
                               f"or declare the parameter ?{elem}")
            if len(dims) != len(want):
                raise mismatch(f"{len(dims)} dimensions, not {len(want)}")
            # fixed rows (NumPy, rectangular lists) are var rows of one length
            rows = want[-1:] == (None,) and isinstance(value, (np.ndarray, OwnedView)) and \
                len(dims) > 0
            if rows:
                dims = tuple(dims[:-1]) + (None,)
            for ax, (w, n) in enumerate(zip(want, dims)):
                if (w is None) != (n is None):
                    raise mismatch(f"axis {ax} is {'a var' if n is None else 'a fixed'} "
                                   f"dimension, the parameter's is "
                                   f"{'var' if w is None else 'fixed'}")
                if w is not None:
                    self._check_size(sizes, i, ax, w, n)
            if (dtype in TEXT_ELEMENTS or got in TEXT_ELEMENTS) and got != dtype:
                raise mismatch("string parameters take lazyk string arrays (lazyk.array("
                               "list_of_str)), bytes parameters bytes arrays (lazyk.array("
                               "list_of_bytes)), other parameters neither")
            if tuple(qrows) != tuple(want_rows):
                raise mismatch("missing rows (?var) in one but not the other: "
                               "the result's type follows the parameter's")
            if got_option != option:
                raise mismatch("missing values (?T) in one but not the other: "
                               "the result's type follows the parameter's")
            if type(x) is int and got.kind == "O" and dtype.kind in "iu":  # past 64 bits
                raise OverflowError(f"input {label!r}: Python integer {x} out of bounds for "
                                    f"{dtype}: {self.signature}")
            if got.newbyteorder("=") != dtype:
                python_ints = isinstance(x, (list, tuple, int)) and got.kind in "iu" and \
                    dtype.kind in "iu"
                if python_ints or narrows(got, dtype, casting):  # never wrap around
                    check_fits(label, value, dtype)
                if isinstance(x, (list, tuple)) and not _leaf_values(value, present=True).size:
                    # no numbers (`[]`, `[[None], None]`): no element type to refuse; the
                    # lists in the parameter's type
                    if isinstance(value, RaggedLeaf):
                        value = input_type(_array(x, typed_text(
                            (len(x),) + tuple(want[1:]), dtype, option, want_rows)))[3]
                elif not np.can_cast(got, dtype, casting) and not (python_ints and
                                                                  casting != "no"):
                    raise CastingError(
                        f"input {label!r}: expected {expected}, got {text}: cannot cast "
                        f"{got} to {dtype} under casting={casting!r}: {self.signature}")
                if isinstance(value, np.ndarray):
                    value = value.astype(dtype)
            env[name] = (_text_var_rows(value) if isinstance(value, OwnedView) else
                         _var_rows(value)) if rows else value
        self._check_picks(sizes)
        return env

"""Mixin that gives lazy values Python operators, NumPy ufunc protocol and reduction methods.

Every method only builds a lazy node through the front end (`lazyk.frontend.expr`); nothing is
computed here. Arrays inherit this mixin and come before the front end in the import
order, so the front end registers itself with `use_front_end` when it is imported, and
`out=` on a reduction computes through `lazyk.hooks.evaluate`.
"""
from __future__ import annotations

from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np

from lazyk import hooks
from lazyk import types as T
from lazyk.errors import NotSupportedError, ShapeError, UnsupportedOperandError

_front_end: list[ModuleType] = []


def use_front_end(module: ModuleType) -> None:
    """Build expressions with `module` (`lazyk.frontend.expr` calls this once when imported)."""
    _front_end[:] = [module]


_row_ops = SimpleNamespace()  # name -> row operation (std, var, cumsum, is_none, ...)


def use_row_ops(**functions: Any) -> None:
    """Register row operations by name (`lazyk.frontend.rowops` and
    `lazyk.frontend.statistics` register theirs when imported)."""
    vars(_row_ops).update(functions)


def row_ops() -> SimpleNamespace:
    """The registered row operations; RuntimeError if none are (`import lazyk`)."""
    if not vars(_row_ops):
        raise RuntimeError("no lazyk row operations are registered: `import lazyk`")
    return _row_ops


def store_reduced(result: Any, out: Any, name: str) -> Any:
    """`result` (reduction or running fold `name`) written into `out` under NumPy's rules
    for it: `out` has the result's shape exactly (a reduction does not broadcast into it);
    values go in unsafely (a float sum into int out), but a standard deviation (a square
    root) only under same_kind, and positions (argmin / argmax) only into integer outs."""
    if out is None:
        return result
    shape = getattr(out, "shape", None)
    want = tuple(result.shape)
    if isinstance(shape, tuple) and None not in want and tuple(shape) != want:
        raise ShapeError(f"{name}: out= of shape {tuple(shape)} for a result of shape "
                         f"{want}: a reduction's output has the result's shape exactly")
    dtype = getattr(out, "dtype", None)
    if name in ("argmin", "argmax") and isinstance(dtype, np.dtype) and \
            not np.can_cast(dtype, np.intp, "safe"):
        raise TypeError(f"{name}: out= of dtype {dtype} cannot hold positions: pass an "
                        "integer array (int64)")
    return hooks.evaluate(result, out=out, casting="same_kind" if name == "std" else "unsafe")


def _spread(name: str):
    """`x.std(...)` / `x.var(...)`, with NumPy's spellings (`np.std(lazy)` stays lazy)."""

    def method(self, axis=None, dtype=None, out=None, ddof=0, keepdims: bool = False,
               skipna: bool = False, **kwargs):
        correction = kwargs.pop("correction", None)
        if kwargs.pop("where", True) is not True or kwargs.pop("mean", None) is not None:
            raise TypeError(f"{name}: 'where' and 'mean' are not supported")
        if kwargs:
            raise TypeError(f"{name}() got unexpected keyword arguments {sorted(kwargs)}")
        if correction is not None:
            ddof = correction
        result = getattr(row_ops(), name)(self, axis=axis, ddof=ddof, keepdims=keepdims,
                                          skipna=skipna, dtype=dtype)
        return store_reduced(result, out, name)

    method.__name__ = name
    method.__doc__ = f"Lazy `{name}` over `axis` (see lazyk.{name}); NumPy's keywords."
    return method


def _running(name: str):
    """`x.cumsum(axis=None)` / `x.cumprod(...)`: NumPy's method (axis None: flattened)."""

    def method(self, axis=None, dtype=None, out=None):
        result = getattr(row_ops(), name)(self, axis=axis, dtype=dtype)
        return store_reduced(result, out, name)

    method.__name__ = name
    method.__doc__ = f"Lazy `{name}` along `axis` (None: the flattened values; see lazyk.{name})."
    return method


def front_end() -> ModuleType:
    """The registered front end; RuntimeError if none is (`import lazyk` registers it)."""
    if not _front_end:
        raise RuntimeError("no lazyk front end is registered: `import lazyk` (lazyk.frontend.expr "
                           "registers itself) before using operators on lazyk values")
    return _front_end[0]


def _binary(name: str, reflected: bool = False):
    """Make a binary dunder that calls `lazyk.frontend.expr.<name>`, or returns NotImplemented."""

    def method(self, other):
        expr = _front_end[0] if _front_end else front_end()
        got = expr.apply_built(name, other, self) if reflected else \
            expr.apply_built(name, self, other)
        if got is not None:  # (a structure built before: the operands were checked then)
            return got
        t = type(other)
        if t is not int and t is not float and not expr.is_operand(other):
            if isinstance(other, (str, bytes)):
                # Never NotImplemented here: Python would answer `arr == "x"` with False.
                return expr.text_operand(name, self, other, reflected)
            if name in ("equal", "not_equal") and (
                    other is None or isinstance(other, (list, tuple, dict, set)) or
                    type(other).__eq__ is object.__eq__):
                # Nor here: Python would answer `arr == None` by identity, a silent False.
                hint = " (missing values are not compared with None: reductions take " \
                    "skipna=, lazyk.count counts the present values)" if other is None else \
                    " (wrap a sequence with lazyk.array or np.asarray)" if isinstance(
                        other, (list, tuple)) else ""
                sym = "==" if name == "equal" else "!="
                raise UnsupportedOperandError(
                    f"{name} ({sym}): unsupported operand type(s) {self.type} and "
                    f"{type(other).__name__}{hint}")
            if other is None or isinstance(other, (list, tuple, dict, set)):
                expr.refuse_container(name, self, other, reflected)
            return NotImplemented
        # (every name here is a binary ufunc of the front end: `apply` is its builder)
        return expr.apply(name, other, self) if reflected else expr.apply(name, self, other)

    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    method.__doc__ = f"Lazy `{name}` (see lazyk.frontend.expr.{name})."
    return method


def in_place(name: str):
    """`a += b` (and the other augmented operators) on a lazyk array: NumPy's in-place
    operator, `lazyk.evaluate(a + b, out=a)` under casting 'same_kind'."""
    binary = _binary(name)

    def method(self, other):
        result = binary(self, other)
        if result is NotImplemented:
            return NotImplemented
        if self.readonly and self._readonly == "record":
            raise ValueError(f"this {self.type} array is a field of records that may be "
                             "missing, which is read-only: assign whole records, r[i] = {...}")
        if self.readonly:
            raise ValueError(f"this {self.type} array is read-only (another library's memory, "
                             "or a view of read-only data): a.copy() gives a writable one")
        hooks.evaluate(result, out=self)
        return self

    method.__name__ = f"__i{name}__"
    method.__doc__ = f"In-place `{name}` into this array's memory (NumPy's augmented operator)."
    return method


class InPlace:
    """NumPy's augmented operators, which write into the array (a lazy expression has none)."""

    __slots__ = ()
    __iadd__ = in_place("add")
    __isub__ = in_place("subtract")
    __imul__ = in_place("multiply")
    __itruediv__ = in_place("true_divide")
    __ifloordiv__ = in_place("floor_divide")
    __imod__ = in_place("remainder")
    __ipow__ = in_place("power")
    __iand__ = in_place("bitwise_and")
    __ior__ = in_place("bitwise_or")
    __ixor__ = in_place("bitwise_xor")
    __ilshift__ = in_place("left_shift")
    __irshift__ = in_place("right_shift")

    def __setattr__(self, name: str, value: Any) -> None:
        """`r.x = v` (and `r.x += 1`) writes the field x of records, as `r["x"] = v`."""
        if name[:1] == "_" or hasattr(type(self), name):  # (slots, properties)
            object.__setattr__(self, name, value)
            return
        t = self.type.dtype if self.type.ndim else self.type
        while isinstance(t, T.Option):
            t = t.elem
        if not isinstance(t, T.Record) or name not in t.names:
            raise AttributeError(f"lazyk array of type '{self.type}' has no field {name!r} "
                                 "to set" + (": lazyk.with_field(r, value, name) adds one"
                                             if isinstance(t, T.Record) else ""))
        self[name] = value


def _unary(name: str):
    """Make a unary dunder that calls `lazyk.frontend.expr.<name>`."""

    def method(self):
        expr = front_end()
        return getattr(expr, name)(self)

    method.__doc__ = f"Lazy `{name}` (see lazyk.frontend.expr.{name})."
    return method


def _reduction(name: str):
    """Make a reduction method (`x.sum(axis=..., keepdims=..., skipna=...)`)."""

    def method(self, axis=None, dtype=None, out=None, keepdims: bool = False,
               skipna: bool = False, skipnan: bool = False, initial=None, **kwargs):
        expr = front_end()
        # NOTE: np.sum(x) on a non-ndarray calls x.sum(axis=, out=, ...); accept NumPy's
        # spellings so `np.sum(lazy)` stays lazy (or writes into `out`).
        if kwargs.pop("where", True) is not True:
            raise NotSupportedError(f"{name}: where= is not supported (x[mask].{name}() "
                                    "reduces the values the mask keeps)")
        if kwargs:
            raise TypeError(f"{name}() got unexpected keyword arguments {sorted(kwargs)}")
        result = getattr(expr, name)(self, axis=axis, keepdims=keepdims, skipna=skipna,
                                     dtype=dtype, initial=initial, skipnan=skipnan)
        return store_reduced(result, out, name)

    method.__name__ = name
    method.__doc__ = f"Lazy reduction `{name}` over `axis` (int, tuple, None, negative)."
    return method


def _arg(x, name: str, axis, out, keepdims: bool):
    return store_reduced(getattr(front_end(), name)(x, axis=axis, keepdims=keepdims), out, name)


class Operators:
    """Python operators and NumPy protocols that build lazy expressions (`lazyk.frontend.expr.Expr`)."""

    __slots__ = ()
    # NumPy defers to us in `ndarray + lazy` when this is higher than ndarray's (0.0).
    __array_priority__ = 100.0
    # pandas defers to us in `Series + lazy` when this is higher than its own (DataFrame 4000).
    __pandas_priority__ = 5000

    __add__ = _binary("add")
    __radd__ = _binary("add", True)
    __sub__ = _binary("subtract")
    __rsub__ = _binary("subtract", True)
    __mul__ = _binary("multiply")
    __rmul__ = _binary("multiply", True)
    __truediv__ = _binary("true_divide")
    __rtruediv__ = _binary("true_divide", True)
    __floordiv__ = _binary("floor_divide")
    __rfloordiv__ = _binary("floor_divide", True)
    __mod__ = _binary("remainder")
    __rmod__ = _binary("remainder", True)
    _power = _binary("power")

    def __pow__(self, other):
        # NumPy's `x ** 2` and `x ** -1` are square and reciprocal, not np.power
        t = type(other)
        if (t is int or t is float) and (other == 2 or other == -1):
            return (_front_end[0] if _front_end else front_end()).power_operator(self, other)
        return self._power(other)

    __rpow__ = _binary("power", True)

    def __matmul__(self, other):  # (NumPy's for arrays of fixed dims, else refused by name)
        return np.matmul(self, other)

    def __rmatmul__(self, other):
        return np.matmul(other, self)

    __and__ = _binary("bitwise_and")
    __rand__ = _binary("bitwise_and", True)
    __or__ = _binary("bitwise_or")
    __ror__ = _binary("bitwise_or", True)
    __xor__ = _binary("bitwise_xor")
    __rxor__ = _binary("bitwise_xor", True)
    __lshift__ = _binary("left_shift")
    __rlshift__ = _binary("left_shift", True)
    __rshift__ = _binary("right_shift")
    __rrshift__ = _binary("right_shift", True)
    __lt__ = _binary("less")
    __le__ = _binary("less_equal")
    __gt__ = _binary("greater")
    __ge__ = _binary("greater_equal")
    __eq__ = _binary("equal")  # type: ignore[assignment]
    __ne__ = _binary("not_equal")  # type: ignore[assignment]
    __neg__ = _unary("negative")
    __pos__ = _unary("positive")
    __abs__ = _unary("absolute")
    __invert__ = _unary("invert")
    # Defining __eq__ makes instances unhashable, as NumPy arrays are.
    __hash__ = None  # type: ignore[assignment]

    sum = _reduction("sum")
    prod = _reduction("prod")
    min = _reduction("min")
    max = _reduction("max")
    mean = _reduction("mean")
    any = _reduction("any")
    all = _reduction("all")

    std = _spread("std")
    var = _spread("var")
    cumsum = _running("cumsum")
    cumprod = _running("cumprod")

    def argsort(self, axis: int = -1, kind=None, order=None, stable=None,
                ascending: bool = True):
        """Lazy stable `argsort` along `axis` (see lazyk.argsort); NumPy's keywords (every
        sort is stable)."""
        if order is not None:
            raise TypeError("argsort: 'order' (record fields) is not supported")
        return row_ops().argsort(self, axis=axis, ascending=ascending)

    def argmax(self, axis=None, out=None, keepdims: bool = False):
        """Lazy position of the largest value along `axis` (`lazyk.argmax`; `np.argmax(x)`
        calls this)."""
        return _arg(self, "argmax", axis, out, keepdims)

    def argmin(self, axis=None, out=None, keepdims: bool = False):
        """Lazy position of the smallest value along `axis` (`lazyk.argmin`; `np.argmin(x)`
        calls this)."""
        return _arg(self, "argmin", axis, out, keepdims)

    def tolist(self):
        """Nested Python lists, NumPy's spelling of `to_list()` (computes an expression)."""
        return self.to_list()

    def astype(self, dtype: Any, casting: str = "unsafe", copy: bool = True):
        """Lazy conversion to `dtype` (a NumPy dtype, type string or lazyk type)."""
        expr = front_end()
        return expr.astype(self, dtype, casting=casting)

    @property
    def real(self):
        """Lazy real part."""
        expr = front_end()
        return expr.real(self)

    @property
    def imag(self):
        """Lazy imaginary part."""
        expr = front_end()
        return expr.imag(self)

    def conj(self):
        """Lazy complex conjugate."""
        expr = front_end()
        return expr.conj(self)

    def __array_ufunc__(self, ufunc, method: str, *inputs, **kwargs):
        """Keep NumPy ufuncs on lazy values lazy: `np.sin(x) * y` builds one graph (a ufunc
        lazyk lacks raises NotSupportedError naming it)."""
        front_end()  # RuntimeError when none is registered, as for the operators
        return hooks.array_ufunc(ufunc, method, inputs, kwargs)

"""Conversions of lazyk arrays: to NumPy (views, __array__, DLPack), to Python scalars, to a device."""
from __future__ import annotations

from typing import Any

import numpy as np

from lazyk import hooks
from lazyk import types as T
from lazyk.arrays import arrmeta as M
from lazyk.arrays.operators import Operators
from lazyk.errors import NotSupportedError


def _fixed_text(a: Any, missing: bool = False) -> str | None:
    """"string" / "bytes" for fixed dims of text elements (`?string` too where `missing`),
    else None."""
    t = a.type
    while isinstance(t, T.FixedDim):
        t = t.elem
    if missing and isinstance(t, T.Option):
        t = t.elem
    return t.name if M.is_varlen(t) and t.name in ("string", "bytes") else None


def text_numpy(a: Any, missing: bool = False) -> np.ndarray | None:
    """A fixed-dim `string` / `bytes` array as a new NumPy `U` / `S` array; None for other
    types (var dims and missing values have no ndarray form). With `missing`, `?string` /
    `?bytes` values too, as a masked array (as `ak.to_numpy`)."""
    kind = _fixed_text(a, missing)
    if kind is None:
        return None
    items = np.array(a.to_list(), dtype=object).reshape(a.shape)
    gone = np.equal(items, None)
    if gone.any():
        items[gone] = "" if kind == "string" else b""
    got = items.astype(str if kind == "string" else bytes)
    return np.ma.MaskedArray(got, gone) if a.type.missing_values else got


def _has_numpy_form(args: tuple, kwargs: dict) -> bool:
    """Whether every lazyk value among a NumPy function's arguments (and in their lists) is
    an array with an ndarray form: fixed dims of numbers, or of text without missing values."""
    for v in (*args, *kwargs.values()):
        for w in (v if isinstance(v, (list, tuple)) else (v,)):
            if isinstance(w, Conversions):
                if w._np is None and _fixed_text(w) is None:
                    return False
            elif isinstance(w, Operators):
                return False  # (a lazy expression)
    return True


class Conversions:
    """Array's conversions: NumPy views and protocols, DLPack, Python scalars, devices."""

    __slots__ = ()

    def to(self, device: Any):
        """Copy to `'cuda'` (a `lazyk.runtime.device.DeviceArray`); `'cpu'` returns self."""
        if device is None:
            return self
        return hooks.to_device(self, device)

    def to_numpy(self) -> np.ndarray:
        """Zero-copy NumPy view (fixed dims only).

        Raises:
            NotSupportedError: for var dims, options or strings (pad, or use `to_list`;
                `np.asarray` copies fixed strings / bytes into a `U` / `S` array).
        """
        if self._np is None:
            if isinstance(self.type, T.VarDim) and M.is_plain(self.type.elem):
                raise NotSupportedError(  # (a row has no outer dim to read its length from)
                    f"one row of type '{self.type}' has no NumPy view: x[i:i + 1] keeps the "
                    "outer dim (then lazyk.flatten, or .to_list())")
            raise NotSupportedError(
                f"an array of type '{self.type}' has no NumPy equivalent (var dims and options "
                "do not map to an ndarray, and strings live in lazyk's own form: "
                "np.asarray(a) copies fixed strings into a NumPy U array); pad it to a "
                "fixed type, or for Awkward or Arrow use lazyk.to_awkward(a) / "
                "lazyk.to_arrow(a), or to_list()")
        return self._np

    @property
    def T(self):
        """The array with its dims in reverse order, as NumPy's `a.T`: a view (fixed dims)."""
        if self._np is None:
            raise NotSupportedError(f"transpose of an array of type '{self.type}': only fixed "
                                    "dims of numbers have one (var rows are not a grid)")
        return self._wrap(self._np.T, self._readonly)

    def numpy_view(self) -> np.ndarray | None:
        """The zero-copy NumPy view `to_numpy` gives, or None where there is none (var dims,
        options, strings)."""
        return self._np

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """`np.asarray(a)`: a view of fixed numeric arrays; fixed dims of `string` /
        `bytes` (no missing values) give a new NumPy `U` / `S` array (NumPy drops trailing
        NUL characters)."""
        arr = text_numpy(self)
        if arr is not None:
            return arr if dtype is None else arr.astype(dtype)
        arr = self.to_numpy()
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            if copy is False:
                raise ValueError(f"converting '{self.type}' to {np.dtype(dtype)} needs a copy")
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def __array_function__(self, func, types, args, kwargs):
        """NumPy functions on lazyk arrays: NumPy's own where every array has an ndarray form
        (it reads `np.asarray` of them, as before); over var dims, missing values or
        expressions lazyk's lazy function where it has one (`np.sort`, `np.cumsum`,
        `np.std`, `np.histogram`, ...), else NotSupportedError naming the function."""
        if _has_numpy_form(args, kwargs):
            if func is getattr(np, "astype", None):  # (NumPy's takes an ndarray only)
                args = (args[0].to_numpy(),) + args[1:]
            return func._implementation(*args, **kwargs)
        return hooks.array_function(func, types, args, kwargs)

    def __arrow_array__(self, type: Any = None) -> Any:
        """`pyarrow.array(a)`, `pyarrow.table({"x": a})`: `lazyk.to_arrow(a)` (cast to
        `type` when given)."""
        got = hooks.to_arrow(self)
        return got if type is None else got.cast(type)

    def __dlpack__(self, **kwargs: Any) -> Any:
        """DLPack capsule for fixed-dim numeric arrays (native byte order)."""
        return self.to_numpy().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)  # kDLCPU, device 0

    def __bool__(self) -> bool:
        if self.ndim and None not in self.shape and int(np.prod(self.shape)) == 1:
            return bool(self[(0,) * self.ndim])  # (one value, as NumPy's)
        if self.ndim:
            raise ValueError(f"the truth value of an array of type '{self.type}' is ambiguous "
                             "(it is not one value): use lazyk.any(a) or lazyk.all(a)")
        return bool(self._scalar("the truth value"))

    def __int__(self) -> int:
        return int(self._scalar())

    def __float__(self) -> float:
        return float(self._scalar())

    def __complex__(self) -> complex:
        return complex(self._scalar())

    def __index__(self) -> int:
        return int(self._scalar())

    def _scalar(self, what: str = "the Python value") -> Any:
        if self.ndim:
            raise TypeError(f"only 0-d arrays convert to Python scalars (type '{self.type}')")
        value = self.to_list()
        if value is None:  # a `?T` value that is missing: never a silent False / error later
            raise ValueError(f"{what} of a missing value is unknown (type '{self.type}')")
        return value

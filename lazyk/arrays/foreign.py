"""Other libraries' arrays as `lazyk.array` reads them: pandas columns, pyarrow and Awkward
arrays, recognized by their classes (none of these libraries is imported here)."""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from lazyk import hooks


def as_readable(obj: Any) -> Any:
    """A foreign object as something `array` reads, or a TypeError naming its type.

    Never iterates a large array-like element by element: lazy collections (Dask) are
    refused at once, objects with `__array__` (pandas, xarray, ...) convert through NumPy.
    """
    if is_scalar(obj):
        return obj
    cls = type(obj)
    what = f"{cls.__module__}.{cls.__qualname__}"
    if is_pandas(obj):
        return from_pandas(obj)
    if hasattr(obj, "__dask_graph__"):
        raise TypeError(f"lazyk.array() got a {what}: a lazy Dask collection is not read "
                        "into memory implicitly; use it in a lazyk expression and call "
                        "lazyk.dask.evaluate(expr), or call .compute() on it first")
    if hasattr(obj, "__array__") and not isinstance(obj, np.ma.MaskedArray):
        return np.asarray(obj)
    if isinstance(obj, (set, frozenset)):  # (NumPy makes a 0-d object array of one)
        raise TypeError(f"lazyk.array() cannot read a {cls.__qualname__}: its items have no "
                        "order; give a list (sorted(...), say)")
    if not (hasattr(obj, "__iter__") or hasattr(obj, "__len__")):
        raise TypeError(f"lazyk.array() cannot read a {what}: give a NumPy array, a buffer, "
                        "a scalar or nested lists")
    return obj


def is_foreign(obj: Any) -> bool:
    """Whether `obj` is a pyarrow or Awkward array (Array, ChunkedArray, Table, layout);
    recognised by its class's module, so neither library is imported here."""
    if _arrow_class(obj) is not None:  # not Buffer (a buffer: read as bytes), Scalar, Schema
        return True
    cls = type(obj)
    mod, name = cls.__module__, cls.__name__
    return mod.startswith("awkward") and (name == "Array" or mod.startswith("awkward.contents"))


def _arrow_class(obj: Any) -> type | None:
    """The pyarrow array class `obj` is (or derives from: extension arrays of other
    libraries, such as what `ak.to_arrow` gives), or None."""
    if type(obj).__module__.startswith(("builtins", "numpy", "lazyk")):
        return None  # (the common operands: no walk of their classes)
    for cls in type(obj).__mro__:
        if cls.__module__.startswith("pyarrow") and (
                cls.__name__.endswith("Array") or cls.__name__ in ("Table", "RecordBatch")):
            return cls
    return None


def from_foreign(obj: Any) -> Any:
    """A pyarrow or Awkward array as `lazyk.from_arrow` / `lazyk.from_awkward` read it."""
    if _arrow_class(obj) is not None:
        return hooks.from_arrow(obj)
    return hooks.from_awkward(obj)


def is_pandas(obj: Any) -> bool:
    """Whether `obj` is a one-dimensional pandas column (Series, Index, extension array);
    recognised by its class and methods, so pandas is never imported here."""
    return type(obj).__module__.startswith("pandas") and getattr(obj, "ndim", 0) == 1 \
        and all(hasattr(obj, n) for n in ("dtype", "isna", "to_numpy", "array"))


def from_pandas(obj: Any) -> np.ndarray | list:
    """A pandas column as lazyk reads it: NumPy-backed ones as `np.asarray` gives them
    (a view where pandas allows), nullable numbers and booleans (Int64, UInt8, Float32,
    boolean, Arrow-backed ones) as a NumPy masked array (missing ones masked: `?T`), strings and
    object columns as their Python values (missing ones None: `?string`)."""
    dt = obj.dtype
    if isinstance(dt, np.dtype) and dt.kind != "O":
        return np.asarray(obj)
    npdt = getattr(dt, "numpy_dtype", None)
    if isinstance(npdt, np.dtype) and npdt.kind in "biuf" and getattr(dt, "kind", "") in "biuf":
        return np.ma.MaskedArray(obj.to_numpy(dtype=npdt, na_value=npdt.type(0)),
                                 mask=np.asarray(obj.isna(), dtype=bool))
    if getattr(dt, "kind", "") == "O":  # object / string columns: their Python values
        # a copy: pandas may hand out a read-only view of its own values
        values = np.array(obj.to_numpy(dtype=object), dtype=object, copy=True)
        values[np.asarray(obj.isna(), dtype=bool)] = None
        return values.tolist()
    return np.asarray(obj)


def is_scalar(obj: Any) -> bool:
    return isinstance(obj, (np.generic, numbers.Number, str, bytes)) or obj is None

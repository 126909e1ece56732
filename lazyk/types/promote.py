"""NumPy 2 type promotion (NEP 50) for lazyk scalars; the table is in docs/types.md."""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from lazyk.errors import DTypeError
from lazyk.types.base import Option, Scalar, Type
from lazyk.types.elements import Timedelta, from_numpy
from lazyk.types.parse import dshape

# Python scalar classes are "weak" (NEP 50): they take the other operand's precision
# within their kind. A zero of each stands in for them in np.result_type.
_WEAK = {bool: False, int: 0, float: 0.0, complex: 0j}
# Default dtypes of weak scalars meeting only each other (NumPy's defaults).
_WEAK_DEFAULT = {bool: "bool", int: "int64", float: "float64", complex: "complex128"}
_WEAK_ORDER = (bool, int, float, complex)


def _operand(x: Any) -> Any:
    """A Type or np.dtype for a strong operand, or the Python class for a weak one."""
    # NOTE: `np.dtype('f8') == float` is True, so test for the classes by identity.
    if x is bool or x is int or x is float or x is complex:
        return x
    return dshape(x)  # a type, a type string or a NumPy dtype; anything else is refused


def promote(a: Any, b: Any) -> Type:
    """The common type of `a` and `b` under NumPy 2 rules; the result is native byte order.

    Args:
        a, b: lazyk types (or anything `dshape` takes), or the classes `bool`, `int`,
            `float`, `complex` for weak Python scalars.
    Raises:
        DTypeError: when the two types have no common type.

    Example: `promote(dshape('int8'), dshape('uint8'))` is `int16`; `promote(dshape('float32'),
    float)` is `float32` (a weak Python float keeps float32).
    """
    return _promote(_operand(a), _operand(b))


@lru_cache(maxsize=4096)
def _promote(a: Any, b: Any) -> Type:
    # A missing value stays missing: ?T op U -> ?promote(T, U).
    if isinstance(a, Option) or isinstance(b, Option):
        inner = _promote(a.elem if isinstance(a, Option) else a,
                         b.elem if isinstance(b, Option) else b)
        return Option(inner)
    if a in _WEAK and b in _WEAK:
        return Scalar(_WEAK_DEFAULT[max(a, b, key=_WEAK_ORDER.index)])
    if a in _WEAK:
        a, b = b, a
    if isinstance(a, Scalar) and (b in _WEAK or isinstance(b, Scalar)) and a.is_numeric:
        if b in _WEAK:
            other = _WEAK[b]
        elif b.is_numeric:
            other = b.to_numpy()
        else:
            raise DTypeError(f"no common type for {a} and {b}")
        if b is a:
            return a.native
        return from_numpy(np.result_type(a.to_numpy(), other)).native
    if b in _WEAK:
        raise DTypeError(f"no common type for {a} and Python {b.__name__}")
    if isinstance(a, Scalar) and isinstance(b, Scalar) and a.native is b.native:
        return a.native
    if isinstance(a, Timedelta) and isinstance(b, Timedelta):
        return from_numpy(np.result_type(a.to_numpy(), b.to_numpy()))
    if a is b:
        return a
    raise DTypeError(f"no common type for {a} and {b}")

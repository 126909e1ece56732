"""Awkward's functions that make values missing or drop them: `mask`, `nan_to_none`,
`drop_none`, `singletons`.

Each is written with lazyk's own lazy operations, so it fuses as they do: a mask is a
selection by a `?bool` mask that keeps every element and makes the masked ones missing
(the selection's count pass and fill pass, in the kernel of the work around it), and
NaN becomes a missing value inside the kernel that reads it.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from lazyk.arrays import arrmeta as M
from lazyk.arrays.array import array
from lazyk.errors import DTypeError
from lazyk.frontend.expression import Expr
from lazyk.frontend.operands import as_expr
from lazyk.frontend.records import lined_up_fields
from lazyk.frontend.rowops import fill_none, flags, is_none
from lazyk.frontend.ufuncs import apply, where
from lazyk.types import base as T


def missing(dtype: np.dtype) -> Any:
    """A missing 0-d value of `dtype` (`where(c, x, it)` makes x missing where c is False)."""
    return array(None, type=T.Option(M.type_from_numpy(np.dtype(dtype))))


def _operand(x: Any):
    """Records (zip's, an array's) as they are; anything else as a lazy expression."""
    return x if lined_up_fields(x) is not None else as_expr(x)


def mask(array: Any, mask: Any, valid_when: bool = True) -> Any:
    """Lazy `ak.mask`: `array` with its elements missing where `mask` is not `valid_when`
    (a missing mask element gives a missing element too). A mask of the array's own
    structure masks values (or records); a mask with fewer dims masks the rows at its
    depth (`lazyk.mask(jets, lazyk.num(jets, axis=1) > 2)` makes the events' lists of jets
    missing). Records stay records: their fields read missing where they are.

    Example: `lazyk.mask(lazyk.array([[1, 2], [], [3]]), lazyk.array([True, False, True]))`
    is `[[1, 2], None, [3]]`; with `[[False, True], [], [True]]`, `[[None, 2], [], [3]]`.
    """
    if not isinstance(valid_when, (bool, np.bool_)):
        raise TypeError(f"mask: valid_when must be True or False, not {valid_when!r}")
    m = as_expr(mask)
    if m.dtype != np.bool_:
        raise DTypeError(f"mask: the mask must be booleans, not {m.dtype} (type {m.type})")
    keep = m if valid_when else ~m
    x = _operand(array)
    return x[where(keep, True, missing(np.bool_))]


def nan_to_none(array: Any) -> Expr:
    """Lazy `ak.nan_to_none`: NaN values become missing (`?T`); other values, missing
    values and the structure stay. Fuses into the kernel that reads the values.

    Example: `lazyk.nan_to_none(lazyk.array([[1.5, np.nan], []]))` is `[[1.5, None], []]`.
    """
    e = as_expr(array)
    if e.dtype.kind not in "fc":
        return e  # (no NaN to find: integers, booleans)
    return where(apply("isnan", e), missing(e.dtype), e)


def drop_none(array: Any, axis: int | None = None) -> Any:
    """Lazy `ak.drop_none`: the missing elements at `axis` left out (None: at every depth,
    innermost first); a list whose items are dropped gets shorter, the outer dim becomes
    the count of kept rows at axis 0. Missing values dropped leave the values' type without
    its `?`; dropped missing lists leave `?var` in the type (no list is missing any more).

    Example: `lazyk.drop_none(lazyk.array([[1, None, 3], None, [None]]))` is
    `[[1, 3], []]`; with `axis=1`, `[[1, 3], None, []]`.
    """
    x = _operand(array)
    rec = lined_up_fields(x)
    ndim = len(rec.shape) if rec is not None else x.ndim
    if axis is not None and (isinstance(axis, bool) or not isinstance(axis, (int, np.integer))):
        raise TypeError(f"drop_none: axis must be an int or None, not {axis!r}")
    if axis is not None and not -ndim <= axis < max(ndim, 1):
        raise np.exceptions.AxisError(f"drop_none: axis {axis} is out of bounds for type "
                                      f"{x.type} ({ndim} dims)")
    axes = range(ndim - 1, -1, -1) if axis is None else [axis % max(ndim, 1)]
    for a in axes:  # (a mask of a + 1 dims keeps or drops the items at axis a)
        x = x[~is_none(x, axis=a)]
    if rec is None and (axis is None or axis % max(ndim, 1) == ndim - 1) and flags(x)[1]:
        x = fill_none(x, 0)  # (no value is missing now: the type says so)
    return x


def singletons(array: Any, axis: int = 0) -> Any:
    """Lazy `ak.singletons`: each element at `axis` in a list of its own, `[v]`, and a
    missing one as an empty list, `[]` (the inverse of `lazyk.firsts`).

    Example: `lazyk.singletons(lazyk.array([1.5, None, 3.0]))` is `[[1.5], [], [3.0]]`.
    """
    x = _operand(array)
    rec = lined_up_fields(x)
    ndim = len(rec.shape) if rec is not None else x.ndim
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"singletons: axis must be an int, not {axis!r}")
    if not ndim or not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(f"singletons: axis {axis} is out of bounds for type "
                                      f"{x.type} ({ndim} dims)")
    a = axis % ndim
    lift = (slice(None),) * (a + 1) + (None,)
    x = x[lift][~is_none(x, axis=a)[lift]]
    if rec is None and a == ndim - 1 and flags(x)[1]:
        x = fill_none(x, 0)  # (no value is missing now: the type says so)
    return x

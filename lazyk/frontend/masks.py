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
from lazyk.errors import DTypeError, NotSupportedError, ShapeError
from lazyk.frontend.expression import Expr
from lazyk.frontend.operands import as_expr
from lazyk.frontend.records import Records, lined_up_fields
from lazyk.frontend.rowops import fill_none, flags, is_none
from lazyk.frontend.ufuncs import apply, where
from lazyk.types import base as T


def missing(dtype: np.dtype) -> Any:
    """A missing 0-d value of `dtype` (`where(c, x, it)` makes x missing where c is False)."""
    return array(None, type=T.Option(M.type_from_numpy(np.dtype(dtype))))


def value_operand(x: Any) -> Expr:
    """`x` as a lazy expression; a Python or NumPy scalar as a 0-d array, so that conditions
    on it are computed, never folded to a constant (a constant `where` condition spells a
    shape: it takes every branch's missing values)."""
    e = as_expr(x)
    if e.node.op not in ("const", "scalar") or e.dtype.kind not in "biufc":
        return e
    return as_expr(array(np.asarray(e.node.arg, e.dtype)))


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
        raise DTypeError(f"mask: the mask must be booleans, not {m.type}")
    keep = m if valid_when else ~m
    x = _operand(array)
    rec = lined_up_fields(x)
    ndim = len(rec.shape) if rec is not None else x.ndim
    if not ndim:
        raise ShapeError(f"mask: a value of type {x.type} has no dims to mask along")
    if not 1 <= m.ndim <= ndim:
        raise ShapeError(f"mask: a mask of {m.ndim} dims ({m.type}) for {x.type}: its dims "
                         f"line up with the array's first dims (1 to {ndim} of them)")
    shape = rec.shape if rec is not None else x.shape
    for k, (nm, nx) in enumerate(zip(m.shape, shape)):
        if type(nm) is int and type(nx) is int and nm not in (nx, 1):
            raise ShapeError(f"mask: dim {k} has size {nx} in the array ({x.type}) and {nm} "
                             f"in the mask ({m.type})")
    if rec is None and m.ndim == ndim:  # (values: elementwise, fixed dims stay fixed)
        return where(keep, x, missing(x.dtype))
    return x[where(keep, True, missing(np.bool_))]  # (a selection that keeps every element)


def _axis_of(name: str, x: Any, axis: Any, none: bool = False) -> tuple:
    """(the records of x or None, its number of dims, `axis` as a dim index or None)."""
    rec = lined_up_fields(x)
    ndim = len(rec.shape) if rec is not None else x.ndim
    if axis is None and none:
        return rec, ndim, None
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{name}: axis must be an int{' or None' if none else ''}, not "
                        f"{axis!r}")
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(f"{name}: axis {axis} is out of bounds for type "
                                      f"{x.type} ({ndim} dims)")
    return rec, ndim, int(axis) % ndim


def _all_present(x: Any) -> Any:
    """Numbers none of which is missing any more, typed so (the `?` off the values)."""
    if lined_up_fields(x) is None and flags(x)[1] and x.dtype.kind in "biufc":
        return fill_none(x, np.zeros((), x.dtype)[()])  # (a value of x's own dtype)
    return x


def _dropped(x: Any, a: int) -> Any:
    """The items at axis `a` of x that are not missing (x itself where none can be)."""
    if isinstance(x, Expr):
        rows, values = flags(x)
        if not (values if a == x.ndim - 1 else rows[a + 1]):
            return x  # (the type says none is missing: nothing to select)
    gone = is_none(x, axis=a)
    return x if isinstance(gone, Records) else x[~gone]  # (zip's records: never missing)


def nan_to_none(array: Any) -> Expr:
    """Lazy `ak.nan_to_none`: NaN values become missing (`?T`); other values, missing
    values and the structure stay. Fuses into the kernel that reads the values.

    Example: `lazyk.nan_to_none(lazyk.array([[1.5, np.nan], []]))` is `[[1.5, None], []]`.
    """
    e = value_operand(array)
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
    rec, ndim, a = _axis_of("drop_none", x, axis, none=True)
    for at in range(ndim - 1, -1, -1) if a is None else [a]:
        x = _dropped(x, at)
    return _all_present(x) if a is None or a == ndim - 1 else x


def singletons(array: Any, axis: int = 0) -> Any:
    """Lazy `ak.singletons`: each element at `axis` in a list of its own, `[v]`, and a
    missing one as an empty list, `[]` (the inverse of `lazyk.firsts`).

    Example: `lazyk.singletons(lazyk.array([1.5, None, 3.0]))` is `[[1.5], [], [3.0]]`.
    """
    x = _operand(array)
    rec, ndim, a = _axis_of("singletons", x, axis)
    if rec is not None and any(f.ndim > rec.depth for f in rec.leaves()):
        raise NotSupportedError(f"singletons of records with list fields ({x.type}): take "
                                "it of each field (lazyk.singletons(r.name)) and zip them")
    lift = (slice(None),) * (a + 1) + (None,)
    gone = is_none(x, axis=a)
    x = x[lift] if isinstance(gone, Records) else x[lift][~gone[lift]]
    return _all_present(x) if a == ndim - 1 else x

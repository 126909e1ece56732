"""Frozen, interned datashape type objects; `str(t)` is canonical and parses back to `t`.

Every constructor interns: equal arguments give the very same object, so `==` is `is`
and hashing is identity-cheap. Dimension types nest DyND-style through `.elem`.

This module gathers the types stage in one place, in stage order: the base class,
dimensions, options, scalars and signatures (`lazyk.types.base`), the other element types and
`from_numpy` (`lazyk.types.elements`), `dshape` (`lazyk.types.parse`), `promote` (`lazyk.types.promote`)
and `match`, `solve`, `broadcast` (`lazyk.types.unify`).
"""
from __future__ import annotations

from lazyk.types.base import (
    MAX_DEPTH,
    SCALAR_NAMES,
    Dim,
    EllipsisDim,
    FixedDim,
    Function,
    Option,
    Scalar,
    SymbolicDim,
    Type,
    VarDim,
    with_element,
    with_value,
)
from lazyk.types.elements import (
    Datetime,
    FixedBytes,
    FixedString,
    Pointer,
    Record,
    Timedelta,
    Tuple,
    TypeVar,
    from_numpy,
)
from lazyk.types.parse import dshape
from lazyk.types.promote import promote
from lazyk.types.unify import broadcast, match, solve

__all__ = [
    "Type", "Dim", "FixedDim", "VarDim", "SymbolicDim", "EllipsisDim", "Option", "Scalar",
    "Timedelta", "Datetime", "FixedString", "FixedBytes", "Pointer", "TypeVar", "Tuple",
    "Record", "Function", "from_numpy", "promote", "dshape", "match", "solve", "broadcast",
    "MAX_DEPTH", "SCALAR_NAMES", "with_element", "with_value",
]

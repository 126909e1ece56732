"""The front end's names in one place: `Expr` and every builder by its NumPy name.

The arrays' operator mixin (`lazyk.arrays.operators`) and numexpr strings
(`lazyk.frontend.exprparse`) call builders by name here; this module registers itself
with the mixin when imported. The builders live in `expression` (the `Expr` class),
`operands` (leaves), `ufuncs`, `strings`, `reductions` and `indexing`.
"""
from __future__ import annotations

import sys

from lazyk.arrays import operators
from lazyk.arrays.array import Array
from lazyk.frontend import indexing
from lazyk.frontend import ufuncs as ufuncs
from lazyk.frontend.expression import (
    SYMBOLS,
    Expr,
    has_options,
    infix,
    summary,
)
from lazyk.frontend.indexing import (
    index_expr,
    index_like,
    is_index_operand,
)
from lazyk.frontend.operands import (
    as_expr,
    is_operand,
    operands,
    placeholder,
    refuse_container,
    refuse_text,
    wrap_array,
)
from lazyk.frontend.records import record_fields
from lazyk.frontend.reductions import (
    REDUCTIONS,
    all,
    any,
    argmax,
    argmin,
    count,
    count_nonzero,
    max,
    mean,
    min,
    prod,
    reduce,
    sum,
)
from lazyk.frontend.strings import (
    endswith,
    startswith,
    str_len,
)
from lazyk.frontend.ufuncs import (
    ALIASES,
    BINARY,
    COMPARISONS,
    NEGATIVE_INT_POWER,
    UNARY,
    apply,
    apply_built,
    astype,
    clip,
    imag,
    isclose,
    nan_to_num,
    positive,
    power_operator,
    real,
    text_operand,
    where,
)


def index_by(x, key):
    """Lazy `x[mask]` / `x[positions]` (`lazyk.frontend.indexing.index_by`); a lazyk array of
    records is indexed field by field, as lazy records are (`lazyk.Records`): each field
    selected or gathered, as Awkward Array indexes an array of records."""
    rec = record_fields(x) if isinstance(x, Array) else None
    return indexing.index_by(x, key) if rec is None else rec[key]


# every ufunc of the op table and its aliases (`lazyk.frontend.ufuncs.UFUNCS`), by NumPy's
# name: a new ufunc is one row of the table
globals().update({name: getattr(ufuncs, name) for name in ufuncs.UFUNCS})

__all__ = [
    "ALIASES",
    "BINARY",
    "COMPARISONS",
    "Expr",
    "NEGATIVE_INT_POWER",
    "REDUCTIONS",
    "SYMBOLS",
    "UNARY",
    "all",
    "any",
    "apply",
    "apply_built",
    "argmax",
    "argmin",
    "as_expr",
    "astype",
    "clip",
    "count",
    "count_nonzero",
    "endswith",
    "has_options",
    "imag",
    "index_by",
    "index_expr",
    "index_like",
    "infix",
    "is_index_operand",
    "is_operand",
    "isclose",
    "max",
    "mean",
    "min",
    "nan_to_num",
    "operands",
    "placeholder",
    "positive",
    "power_operator",
    "prod",
    "real",
    "reduce",
    "refuse_container",
    "refuse_text",
    "startswith",
    "str_len",
    "sum",
    "summary",
    "text_operand",
    "where",
    "wrap_array",
]
__all__ += ufuncs.UFUNCS

# Arrays and devices build expressions through this module (their operator mixin).
operators.use_front_end(sys.modules[__name__])

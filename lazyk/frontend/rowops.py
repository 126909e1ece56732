"""Awkward Array's row vocabulary on lazy expressions: `num`, `flatten`, `firsts`,
`local_index`, `concatenate`, `is_none`, `fill_none`, `pad_none`, `sort`, `argsort`,
`cumsum` and `cumprod`.

Each builder types its result at once (dims, `?var` rows, `?T` values, dtype: Awkward 2's
rules, NumPy's for fixed data) and adds one `ROWS_OP` node; nothing runs until evaluation (`lazyk.runtime.row_steps`): the
running folds (cumsum, cumprod) are a scan of the loop nest fused with the elementwise work
that feeds them, `is_none` / `fill_none` of values fuse into the kernel that reads them,
and what only restructures (num, flatten, firsts, local_index, concatenate, pad_none,
sort, argsort) is computed with NumPy over the offsets, without a Python loop per row.

An `axis` counts the outer dim as 0 and a negative one from the innermost (-1); an axis out
of range raises `numpy.exceptions.AxisError` (a ValueError) naming the function, the axis
and the operand's type.
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from lazyk.arrays.array import Array
from lazyk.arrays.columns import build_columns, columns
from lazyk.arrays.operators import use_row_ops
from lazyk.arrays.restructure import missing_records
from lazyk.errors import DTypeError, NotSupportedError, ShapeError, UnsupportedOperandError
from lazyk.frontend.expression import Expr, type_flags
from lazyk.frontend.graph import ROWS_OP, Node
from lazyk.frontend.leaves import is_text
from lazyk.frontend.numpy_rules import broadcast_shapes, cast
from lazyk.frontend.operands import operands, refuse_text
from lazyk.frontend.ops import BYTES
from lazyk.frontend.record_layout import everywhere
from lazyk.frontend.records import lined_up_fields, record_fields
from lazyk.frontend.reductions import count
from lazyk.frontend.ufuncs import where

__all__ = ["argsort", "concatenate", "cumprod", "cumsum", "fill_none", "firsts", "flatten",
           "is_none", "local_index", "num", "pad_none", "sort"]


# ---------------------------------------------------------------- helpers
def flags(e: Expr) -> tuple[list, bool]:
    """(missing-row flag per dim, missing values?) of an expression, as its type has them."""
    rows, option = type_flags(e)
    return [bool(r) for r in rows[:e.ndim]] + [False] * (e.ndim - len(rows)), bool(option)


def row_operand(name: str, x: Any) -> Expr:
    """The lazy operand of row function `name` (strings only where it takes them)."""
    e = operands(name, (x,))[0]
    if is_text(e.dtype) and name not in ("num", "flatten", "firsts", "local_index",
                                            "pad_none", "is_none", "concatenate"):
        refuse_text(name, [e])
    return e


def _axis(name: str, e: Expr, axis: Any, lo: int = 0, last: bool = False) -> int:
    """`axis` as a dim index of `e` in [lo, the last dim] (`last`: the last dim only)."""
    nd, hi = e.ndim, e.ndim - 1
    lo = hi if last else lo
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{name}: axis must be an int, not {type(axis).__name__}")
    a = int(axis) + nd if axis < 0 else int(axis)
    if not lo <= a <= hi:
        what = f"axis {axis} is out of bounds for an operand of type {e.type} ({nd} dims)"
        if last and 0 <= a < nd:
            what = f"axis {axis} of an operand of type {e.type}: only the last axis over var dims"
        elif 0 <= a < lo:
            what = f"axis {axis} of an operand of type {e.type}: the axis must be >= {lo}"
        raise np.exceptions.AxisError(f"{name}: {what}")
    return a


def _node(name: str, dtype, shape: tuple, srcs: list, params: tuple, rows, option: bool,
          env: dict) -> Expr:
    node = Node(ROWS_OP, np.dtype(dtype), tuple(shape), tuple(s.node for s in srcs),
                (name, tuple(params), tuple(bool(r) for r in rows), bool(option)))
    return Expr(node, env)


def var_dims(e: Expr) -> bool:
    """Whether the expression has var dims."""
    return None in e.shape


# ---------------------------------------------------------------- structure
def num(x: Any, axis: int = 1) -> Expr:
    """Lazy `ak.num`: the length of every list at `axis` (int64); a missing list (`?var`)
    gives None; axis 0 gives the array's length (a 0-d result).

    Example: `lazyk.num(lazyk.array([[1, 2, 3], [], None]))` is `[3, 0, None]` of type
    `3 * ?int64`.

    Raises:
        numpy.exceptions.AxisError: `axis` is not a dim of `x` (a ValueError).
    """
    rec = lined_up_fields(x)
    if rec is not None:  # each field's (Awkward's), else the lists the fields share
        return _in_fields("num", rec, axis, lambda f: num(f, axis),
                          lambda: num(next(iter(rec.items()))[1], axis))
    e = row_operand("num", x)
    if not e.ndim:
        raise np.exceptions.AxisError(f"num: axis {axis} of a 0-d operand ({e.type}): "
                                      "it has no lists")
    a = _axis("num", e, axis)
    rows, option = flags(e)
    if a == e.ndim - 1 and e.shape[a] is None and e.node.op != "input" and not option and \
            not any(rows) and e.dtype.kind in "biufc":
        # computed lists (a selection, combinations): counted in the kernel that computes
        # them, never stored
        return count(e, axis=a)
    return _node("num", np.int64, e.shape[:a], [e], (a,), rows[:a], a > 0 and rows[a], e.env)


def _in_fields(name: str, rec, axis: int, fn, other):
    """`fn` of each field where `axis` lies inside the fields' own lists (the records stay
    as they are, Awkward's), else `other()`; AxisError where it is inside some only."""
    inner = {(axis if axis >= 0 else f.ndim + axis) >= rec.depth for _, f in rec.items()}
    if inner == {True, False}:
        raise np.exceptions.AxisError(f"{name}: axis {axis} is inside some fields' lists and "
                                      "above others' (fields of different depths): pass a "
                                      f"positive axis, or take {name} of a field")
    if inner == {True} and fn is None:  # (Awkward refuses them too)
        raise ValueError(f"{name}: axis {axis} is inside the records' fields: {name} a field")
    return rec.map(fn, 0, flags=False) if inner == {True} else other()


def flatten(x: Any, axis: int | None = 1) -> Expr:
    """Lazy `ak.flatten`: the lists at `axis` joined into their parent lists (a missing
    list among them is dropped, missing values inside stay); `axis=0` drops the missing
    items at the top; `axis=None` gives every present value in order as one `M * T`
    (missing values dropped).

    The result's outer length is known once computed (its lazy type: `var`). Of records,
    `axis=None` gives every field's values, one field after the other (Awkward's).
    Example: `lazyk.flatten(lazyk.array([[1, 2], [], [3]]))` is `[1, 2, 3]`.
    """
    rec = lined_up_fields(x)
    if rec is not None and axis is None:  # every field's values, field after field (Awkward)
        return concatenate([flatten(f, None) for f in rec.leaves()], axis=0)
    if rec is not None:  # (inside the fields, or fewer lists above the records)
        return _in_fields("flatten", rec, axis, None,
                          lambda: rec.map(lambda f: flatten(f, axis), -1, same=True))
    e = row_operand("flatten", x)
    rows, option = flags(e)
    if axis is None:
        return _node("flatten", e.dtype, (None,), [e], (None,), [False], False, e.env)
    if not e.ndim:
        raise np.exceptions.AxisError(f"flatten: axis {axis} of a 0-d operand ({e.type})")
    a = _axis("flatten", e, axis)
    if a == 0:
        drops = (e.ndim > 1 and rows[1]) or (e.ndim == 1 and option)
        if not drops:
            return e  # Awkward's rule: nothing missing at the top, nothing to drop
        shape = (None,) + e.shape[1:]
        new = [False] + [False] + rows[2:] if e.ndim > 1 else [False]
        return _node("flatten", e.dtype, shape, [e], (0,), new[:e.ndim], option and e.ndim > 1,
                     e.env)
    outer, inner = e.shape[a - 1], e.shape[a]
    size = outer * inner if isinstance(outer, int) and isinstance(inner, int) and \
        not rows[a] else None
    shape = e.shape[:a - 1] + (size,) + e.shape[a + 1:]
    new = rows[:a - 1] + [rows[a - 1]] + rows[a + 1:]
    return _node("flatten", e.dtype, shape, [e], (a,), new, option, e.env)


def firsts(x: Any, axis: int = 1) -> Expr:
    """Lazy `ak.firsts`: the first item of every list at `axis` (>= 1); None for an empty
    or missing list (the items become optional: `?T`, or `?var` lists).

    Example: `lazyk.firsts(lazyk.array([[1, 2], [], [3]]))` is `[1, None, 3]` of type
    `3 * ?int64`.
    """
    rec = lined_up_fields(x)
    if rec is not None:  # each field's first item (a missing record where a list is empty)
        return _in_fields("firsts", rec, axis, lambda f: firsts(f, axis),
                          lambda: rec.map(lambda f: firsts(f, axis), -1))
    e = row_operand("firsts", x)
    if e.ndim < 2:
        raise np.exceptions.AxisError(f"firsts: axis {axis} of an operand of type {e.type}: "
                                      "it needs lists at axis 1 or deeper (2 dims or more)")
    a = _axis("firsts", e, axis, lo=1)
    rows, option = flags(e)
    shape = e.shape[:a] + e.shape[a + 1:]
    new = rows[:a] + rows[a + 1:]
    if a < len(new):
        new[a] = True
    return _node("firsts", e.dtype, shape, [e], (a,), new, option or a == len(new), e.env)


def local_index(x: Any, axis: int = -1) -> Expr:
    """Lazy `ak.local_index`: every item's position in its list at `axis` (int64; what
    lies below that axis is dropped); a missing list stays missing.

    Example: `lazyk.local_index(lazyk.array([[5, 6], [], [7]]))` is `[[0, 1], [], [0]]`.
    """
    rec = lined_up_fields(x)
    if rec is not None:  # each field's (Awkward's), else the lists the fields share
        return _in_fields("local_index", rec, axis, lambda f: local_index(f, axis),
                          lambda: local_index(next(iter(rec.items()))[1], axis))
    e = row_operand("local_index", x)
    if not e.ndim:
        raise np.exceptions.AxisError(f"local_index: axis {axis} of a 0-d operand "
                                      f"({e.type})")
    a = _axis("local_index", e, axis)
    rows, _ = flags(e)
    return _node("local_index", np.int64, e.shape[:a + 1], [e], (a,), rows[:a + 1], False,
                 e.env)


def concatenate(arrays: Any, axis: int = 0) -> Expr:
    """Lazy `ak.concatenate`: the lists at `axis` of every operand joined, in order, with
    NumPy's result dtype; `axis=0` (Awkward's and NumPy's default) joins the operands one
    after the other, `axis=1` each row's lists (an event's muons and electrons). Above `axis`
    the operands walk together: their lengths must agree (else ShapeError naming the row
    and the lengths); a missing row there gives a missing row; a missing list at `axis`
    counts as empty (Awkward's rule).

    Example: `lazyk.concatenate([x, y], axis=1)` of `[[1], []]` and `[[2], [3]]` is
    `[[1, 2], [3]]`. `axis=None` joins the operands' values, each flattened (NumPy's).

    Raises:
        ValueError: no operands, or operands of different numbers of dims.
        ShapeError: fixed dims above `axis` of different sizes (now), rows of different
            lengths there (when evaluated).
    """
    if isinstance(arrays, dict) or not isinstance(arrays, (list, tuple)):
        raise TypeError(f"concatenate takes a list or tuple of arrays, not {type(arrays).__name__}")
    if axis is None:  # (NumPy's ravel of each: missing values kept, as numpy.ma's)
        return concatenate([ravel(a) for a in arrays], axis=0)
    recs = [lined_up_fields(a) for a in arrays]
    if any(r is not None for r in recs):
        if any(r is None or sorted(r.fields) != sorted(recs[0].fields) for r in recs):
            names = [None if r is None else r.fields for r in recs]
            raise TypeError("concatenate: records join with records of the same fields (in "
                            f"any order), got fields {names}")
        present = None if all(r.present is None for r in recs) else concatenate(
            [everywhere(r) if r.present is None else r.present for r in recs], axis)
        return recs[0].with_fields({k: concatenate([r[k] for r in recs], axis)
                                    for k, _ in recs[0].items()}, present)
    es = [row_operand("concatenate", a) for a in arrays]
    if not es:
        raise ValueError("concatenate needs at least one array")
    nds = sorted({e.ndim for e in es})
    if len(nds) != 1 or not nds[0]:
        raise ValueError("concatenate: the operands need one number of dims (1 or more), "
                         f"got {', '.join(str(e.type) for e in es)}")
    nd = nds[0]
    a = _axis("concatenate", es[0], axis)
    texts = {is_text(e.dtype) for e in es}
    if texts == {True} and len({e.dtype.kind == "S" or e.dtype == BYTES for e in es}) > 1:
        raise TypeError(f"concatenate: strings with bytes ({', '.join(str(e.type) for e in es)})")
    if texts == {True}:
        dtype = es[0].dtype
    elif len(texts) > 1:
        raise NotSupportedError("concatenate: strings with numbers")
    else:
        dtype = np.result_type(*[e.dtype for e in es])
    fl = [flags(e) for e in es]
    shape, rows = [], []
    for k in range(nd):
        sizes = [e.shape[k] for e in es]
        if k == a:
            fixed = builtins.all(isinstance(n, int) for n in sizes) and \
                not builtins.any(f[0][k] for f in fl)
            shape.append(builtins.sum(sizes) if fixed else None)
            rows.append(False if k else builtins.any(f[0][k] for f in fl))
            continue
        ints = {n for n in sizes if isinstance(n, int)}
        if len(ints) > 1 and k:
            types = " and ".join(str(e.type) for e in es)
            raise ShapeError(f"concatenate at axis {axis}: operands of types {types} have "
                             f"fixed dims of sizes {sorted(ints)} at axis {k}")
        shape.append(sizes[0] if len(set(sizes)) == 1 else None)
        rows.append(builtins.any(f[0][k] for f in fl))
    return _node("concatenate", dtype, tuple(shape), es, (a,), rows,
                 builtins.any(f[1] for f in fl), _merged(es))


def _merged(es) -> dict:
    env: dict = {}
    for e in es:
        env.update(e.env)
    return env


# ---------------------------------------------------------------- missing values
def is_none(x: Any, axis: int = 0) -> Expr:
    """Lazy `ak.is_none`: True where an item of the lists at `axis` is missing (bool);
    a missing list above stays missing. At the innermost axis it fuses into the kernel that
    reads the values.

    Example: `lazyk.is_none(lazyk.array([[1, None], None]), axis=1)` is
    `[[False, True], None]`; with `axis=0`, `[False, True]`.
    """
    rec = lined_up_fields(x)
    if rec is not None:  # lists above the records, missing as the fields' are
        if axis >= rec.depth or axis < -len(rec.shape):
            raise NotSupportedError(f"is_none of records of type {rec.type} at axis {axis}: "
                                    f"at an axis above the records (< {rec.depth})")
        if axis % rec.depth < rec.depth - 1:
            return is_none(next(iter(rec.items()))[1], axis)
        # the records themselves: an array's missing records (`?{...}`), or those a gather,
        # firsts or a mask made missing
        missing = missing_records(columns(x)) if isinstance(x, Array) else None
        if missing is not None or rec.present is not None:
            return build_columns(missing) if missing is not None else ~rec.present
        # records never missing: zip's, combinations' and an array's give each field's (a
        # records field's: whether its records are missing), others False, as Awkward's
        return rec.with_fields({k: is_none(f, axis) for k, f in rec.items()}) \
            if rec.own_fields or isinstance(x, Array) else ~everywhere(rec)
    e = row_operand("is_none", x)
    if not e.ndim:
        return _node("is_none", np.bool_, (), [e], (0,), [], False, e.env)
    a = _axis("is_none", e, axis)
    rows, _ = flags(e)
    new = rows[:a + 1]
    new[a] = rows[a] if a else False
    return _node("is_none", np.bool_, e.shape[:a + 1], [e], (a,), new, False, e.env)


def fill_none(x: Any, value: Any) -> Expr:
    """Lazy `ak.fill_none` (Awkward's default axis=-1): missing values replaced by `value`
    (a scalar, or an array that broadcasts against `x`); missing rows stay missing. The
    dtype is NumPy's promotion of `x`'s dtype and `value` (a Python scalar is weak: int32
    filled with 0 stays int32). An operand without missing values is returned as it is.
    Fuses into the kernel that reads the values.

    Example: `lazyk.fill_none(lazyk.array([[1.5, None], []]), 0)` is `[[1.5, 0.0], []]`.
    """
    e = row_operand("fill_none", x)
    rows, option = flags(e)
    if value is None:
        raise TypeError("fill_none: the value must not be None (it replaces the missing "
                        "values)")
    v = operands("fill_none", (value,))[0]  # (a foreign object: TypeError, missing or not)
    if not option:
        return e
    try:
        dtype = where(True, e, v).dtype  # NumPy's promotion, weak Python scalars
    except UnsupportedOperandError:
        raise UnsupportedOperandError(f"fill_none: a value of type {v.type} does not fill "
                                      f"missing values of {e.type} (no common type)") from None
    if v.node.op in ("scalar", "const"):
        # the typed fill value: range checked as NumPy converts it
        fill = cast(v.node, dtype).arg
        return _node("fill_none", dtype, e.shape, [e], (fill,), rows, False, e.env)
    shape = broadcast_shapes("fill_none", [e.shape, v.shape])
    vr, vo = flags(v)
    lead = len(shape) - len(rows)
    new = [False] * lead + rows
    for k in range(1, len(vr) + 1):
        new[-k] = new[-k] or vr[-k]
    return _node("fill_none", dtype, shape, [e, v], (), new, vo, _merged([e, v]))


def full_like(x: Any, fill_value: Any, dtype: Any = None) -> Expr:
    """Lazy `ak.full_like`: `x`'s structure (rows, missing rows and missing values) with
    every present value `fill_value`, in `dtype` (default: `x`'s dtype; the value converted
    as NumPy converts it, range checked). Fuses into the kernel that reads `x`.

    Example: `lazyk.full_like(lazyk.array([[1.5, None], []]), 7)` is `[[7.0, None], []]`.
    """
    if record_fields(x) is not None:
        raise NotSupportedError("full_like of records: take it of a field (r.name)")
    e = row_operand("full_like", x)
    if fill_value is None:
        raise TypeError("full_like: the fill value must not be None")
    dt = e.dtype if dtype is None else np.dtype(dtype)
    try:
        v = np.array(fill_value, dtype=dt)
    except (OverflowError, ValueError, TypeError) as err:
        raise TypeError(f"full_like: fill value {fill_value!r} does not fit {dt}: {err}") \
            from None
    # (x == x is False at NaN: both branches are the value; a missing x stays missing)
    return where(e == e, v, v)


def zeros_like(x: Any, dtype: Any = None) -> Expr:
    """Lazy `ak.zeros_like`: `full_like(x, 0, dtype)`."""
    return full_like(x, 0, dtype)


def ones_like(x: Any, dtype: Any = None) -> Expr:
    """Lazy `ak.ones_like`: `full_like(x, 1, dtype)`."""
    return full_like(x, 1, dtype)


def pad_none(x: Any, target: int, axis: int = 1, clip: bool = False) -> Expr:
    """Lazy `ak.pad_none`: every list at `axis` padded with None to `target` items
    (`clip=True`: also cut to `target`, giving a fixed dim of `target`); a missing list
    stays missing; the items become optional.

    Example: `lazyk.pad_none(lazyk.array([[1], [2, 3, 4]]), 2)` is
    `[[1, None], [2, 3, 4]]`; with `clip=True`, `[[1, None], [2, 3]]` of type `2 * 2 * ?int64`.
    """
    rec = lined_up_fields(x)
    if rec is not None:  # (inside the fields: the records stay present where they were)
        return _in_fields("pad_none", rec, axis, lambda f: pad_none(f, target, axis, clip),
                          lambda: rec.map(lambda f: pad_none(f, target, axis, clip), 0))
    e = row_operand("pad_none", x)
    if isinstance(target, (bool, np.bool_)) or not isinstance(target, (int, np.integer)) \
            or target < 0:
        raise ValueError(f"pad_none: target must be a non-negative int, not {target!r}")
    if not isinstance(clip, (bool, np.bool_)):
        raise TypeError(f"pad_none: clip must be True or False, not {clip!r}")
    if not e.ndim:
        raise np.exceptions.AxisError(f"pad_none: axis {axis} of a 0-d operand ({e.type})")
    a = _axis("pad_none", e, axis)
    rows, option = flags(e)
    target = int(target)
    n = e.shape[a]
    size = target if clip else builtins.max(n, target) if isinstance(n, int) else None
    if clip and rows[a] and is_text(e.dtype):  # (missing lists of strings: `?var`, not `?n`)
        size = None
    shape = e.shape[:a] + (size,) + e.shape[a + 1:]
    new = list(rows)
    if a + 1 < e.ndim:
        if clip and rows[a] and isinstance(e.shape[a + 1], int):
            raise NotSupportedError(
                f"pad_none(..., clip=True) at axis {axis} of {e.type}: rows that may be "
                "missing, of fixed-size lists, would give missing fixed-size lists in "
                "missing fixed-size rows, which lazyk does not build; pad without clip, "
                "or fill_none the rows first")
        new[a + 1] = True
    return _node("pad_none", e.dtype, shape, [e], (a, target, bool(clip)), new,
                 option or a + 1 == e.ndim, e.env)


# ---------------------------------------------------------------- order
def _order(name: str, x: Any, axis: int | None, ascending: bool, stable: bool) -> tuple:
    if record_fields(x) is not None:
        raise NotSupportedError(f"{name} of records: order them by a field, e.g. "
                                "r[lazyk.argsort(r.pt, axis=1)]")
    e = row_operand(name, x)
    if not isinstance(ascending, (bool, np.bool_)):
        raise TypeError(f"{name}: ascending must be True or False, not {ascending!r}")
    if not isinstance(stable, (bool, np.bool_)):  # (False: a stable order is one too)
        raise TypeError(f"{name}: stable must be True or False, not {stable!r}")
    if not e.ndim and (axis is None or axis == -1 and name == "argsort"):  # (NumPy's)
        e, axis = e[None], -1
    elif axis is None:  # NumPy's: the flattened values (missing ones kept in place)
        e, axis = ravel(e), -1
    if not e.ndim:
        raise np.exceptions.AxisError(f"{name}: axis {axis} of a 0-d operand ({e.type})")
    if e.dtype.kind == "c":
        raise NotSupportedError(f"{name} of complex values ({e.type})")
    ragged = var_dims(e) or builtins.any(flags(e)[0])
    a = _axis(name, e, axis, last=ragged)
    return e, a


def sort(x: Any, axis: int | None = -1, ascending: bool = True, stable: bool = True) -> Expr:
    """Lazy `ak.sort` (stable) along the last axis, per list: missing values last in either
    order; NaN above every number (NumPy's place: last ascending, first descending). Fixed
    data (no var dims) sorts along any axis; `axis=None` sorts the flattened values, as
    NumPy's. NumPy does the sorting (one stable sort over all lists at once, no Python
    loop per list).

    Example: `lazyk.sort(lazyk.array([[3, 1, None, 2], []]))` is `[[1, 2, 3, None], []]`.
    """
    e, a = _order("sort", x, axis, ascending, stable)
    rows, option = flags(e)
    return _node("sort", e.dtype, e.shape, [e], (a, bool(ascending)), rows, option, e.env)


def argsort(x: Any, axis: int | None = -1, ascending: bool = True, stable: bool = True) -> Expr:
    """Lazy `ak.argsort` (stable): the positions in each list that `sort` takes its items
    from (int64, never missing; a missing list stays missing).

    Example: `lazyk.argsort(lazyk.array([[3, 1, None, 2], []]))` is `[[1, 3, 0, 2], []]`.
    """
    e, a = _order("argsort", x, axis, ascending, stable)
    rows, _ = flags(e)
    return _node("argsort", np.int64, e.shape, [e], (a, bool(ascending)), rows, False, e.env)


def ravel(x: Any) -> Expr:
    """Lazy values of `x` in order as one dim, as NumPy's `axis=None` takes them: missing
    values kept in place (missing rows hold none). Unlike `flatten(x, axis=None)`, which
    drops missing values (Awkward's rule)."""
    e = row_operand("ravel", x)
    while e.ndim > 1:
        e = flatten(e, axis=1)
    return e if e.ndim else e[None]


# ---------------------------------------------------------------- running folds
def _scan(name: str, x: Any, axis: Any, dtype: Any) -> Expr:
    e = row_operand(name, x)
    if axis is None or (axis in (0, -1) and not e.ndim):  # NumPy's rule: the flattened
        e, axis = ravel(e), -1  # values (missing ones kept in place)
    if not e.ndim:
        raise np.exceptions.AxisError(f"{name}: axis {axis} of a 0-d operand ({e.type})")
    ragged = var_dims(e) or builtins.any(flags(e)[0])
    a = _axis(name, e, axis)
    if ragged and a != e.ndim - 1:
        raise NotSupportedError(f"{name} along axis {axis} of {e.type}: a running fold over "
                                "var dims runs along the last axis (per list)")
    if dtype is not None:
        out = np.dtype(dtype)
    else:
        try:
            out = getattr(np, name)(np.ones(1, e.dtype)).dtype
        except TypeError as err:
            raise DTypeError(f"{name} of {e.dtype}: {err}") from None
    e = Expr(cast(e.node, out), e.env)
    rows, option = flags(e)
    return _node(name, out, e.shape, [e], (a,), rows, option, e.env)


def cumsum(x: Any, axis: int | None = -1, dtype: Any = None) -> Expr:
    """Lazy running sums along `axis` (the last by default; per list for var dims), with
    NumPy's cumsum dtype (int32 and bool give int64) and order of additions; a missing
    value stays missing and adds nothing. `axis=None` runs over the flattened values, as
    NumPy's. Runs as a scan of the loop nest, fused with the elementwise work before it;
    threads split the lists, never one list.

    Example: `lazyk.cumsum(lazyk.array([[1, 2, 3], [], [4, None, 5]]))` is
    `[[1, 3, 6], [], [4, None, 9]]`.
    """
    return _scan("cumsum", x, axis, dtype)


def cumprod(x: Any, axis: int | None = -1, dtype: Any = None) -> Expr:
    """Lazy running products along `axis`, as `cumsum`.

    Example: `lazyk.cumprod(lazyk.array([[1, 2, 3], [4]]))` is `[[1, 2, 6], [4]]`.
    """
    return _scan("cumprod", x, axis, dtype)


# x.cumsum(), x.argsort(), and what lazy records read of their rows
use_row_ops(cumsum=cumsum, cumprod=cumprod, argsort=argsort, is_none=is_none,
            fill_none=fill_none, local_index=local_index)

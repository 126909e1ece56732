"""Reductions: `reduce` and the NumPy-named `sum`, `prod`, `min`, `max`, `mean`, `any`,
`all`; `count`, `argmax`, `argmin`; NaN-skipping and `initial=` folds.
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from lazyk.errors import DTypeError, NotSupportedError
from lazyk.frontend import ops
from lazyk.frontend.expression import Expr, has_options
from lazyk.frontend.graph import (
    REDUCE_OP,
    ROWS_OP,
    SELECT_OP,
    Node,
    arg_key,
    has_rows,
    input_names,
    rewrite,
    toposort,
)
from lazyk.frontend.leaves import RaggedLeaf, RaggedPlaceholder, check_dtype, is_text
from lazyk.frontend.missing import option_flags
from lazyk.frontend.numpy_rules import cast, describe_node, normalize_axes, reduce_dtype
from lazyk.frontend.operands import operands, refuse_text
from lazyk.frontend.structure import build_key, built, deferred, remember
from lazyk.frontend.ufuncs import apply, astype, text_operand, where

# the reductions that fold values (not positions), in the op table
REDUCTIONS = tuple(n for n in ops.REDUCTIONS if n not in ops.ARG_REDUCTIONS)


def reduce(op: str, x: Any, axis: Any = None, keepdims: bool = False, skipna: bool = False,
           dtype: Any = None, initial: Any = None, skipnan: bool = False) -> Expr:
    """Lazy reduction node; its elementwise inputs fuse into the same kernel.

    `skipna=True` leaves missing values (`?T`) out of the fold; `skipnan=True` leaves NaN
    out (NumPy's `nansum`, `nanprod`, `nanmin`, `nanmax`, `nanmean`); both together skip
    both, as pandas' `skipna` does. `initial` (sum, prod, min and max) is folded into every
    result, so a slice with nothing to fold gives `initial`.
    """
    if initial is not None and (not isinstance(initial, (int, float, complex, np.number)) or
                                isinstance(initial, np.ndarray)):
        raise TypeError(f"{op}: initial must be a number, not {type(initial).__name__} "
                        f"{initial!r:.40}")
    kw = {"axis": axis, "keepdims": keepdims, "skipna": skipna, "dtype": dtype,
          "initial": initial, "skipnan": skipnan}
    # by exact type: `keepdims=1`, `axis=True` are refused by the builder, never keyed
    if keepdims.__class__ is not bool or skipna.__class__ is not bool or \
            skipnan.__class__ is not bool or not (
                axis is None or axis.__class__ is int or axis.__class__ is tuple and
                builtins.all(a.__class__ is int for a in axis)):
        return _reduce(op, x, **kw)
    head = (REDUCE_OP, op, axis, keepdims, skipna, dtype,
            initial if initial is None else arg_key(initial), skipnan)
    if dtype is not None:
        try:  # (an unhashable dtype: built at once)
            hash(dtype)
        except TypeError:
            return _reduce(op, x, **kw)
    got = build_key(head, (x,))
    if got is not None:
        entry = built.get(got[0])
        if entry is not None:
            return deferred(entry, got[1], (_reduce, (op, x), kw))
        return remember(got, _reduce(op, x, **kw))
    return _reduce(op, x, **kw)


_UFUNC_REDUCTIONS = ("sum", "prod", "min", "max", "any", "all")


def _reduce(op: str, x: Any, axis: Any = None, keepdims: bool = False, skipna: bool = False,
            dtype: Any = None, initial: Any = None, skipnan: bool = False) -> Expr:
    for name, flag in (("keepdims", keepdims), ("skipna", skipna), ("skipnan", skipnan)):
        if not isinstance(flag, (bool, np.bool_)):  # "yes" or "no" would both be true
            raise TypeError(f"{op}: {name} must be True or False, not {flag!r}")
    e = operands(op, (x,))[0]
    refuse_text(op, [e])
    if skipna and not has_options(e):
        skipna = False  # only ?T values can be missing; NaN is a value, as in NumPy
    if initial is not None and op in ("sum", "prod"):  # NumPy's: folded in with the values
        red = reduce(op, e, axis, keepdims, skipna, dtype, skipnan=skipnan)
        seed = Expr(Node("const", red.dtype, (), (), _initial_value(op, initial, red.dtype)), {})
        return apply("add" if op == "sum" else "multiply", red, seed)
    if initial is not None and not ops.OPS[op].no_empty_fold:
        raise NotSupportedError(f"{op}: initial= is supported for sum, prod, min and max only")
    if skipnan and e.dtype.kind in "fc":
        return _skip_nan(op, e, axis, keepdims, skipna, dtype, initial)
    if not e.ndim and op in _UFUNC_REDUCTIONS and isinstance(axis, (int, np.integer)) and \
            not isinstance(axis, (bool, np.bool_)) and axis in (0, -1):
        axis = ()  # (NumPy's ufunc reductions take axis 0 / -1 of a 0-d array as no axis)
    axes = normalize_axes(axis, e.ndim, op)
    node = e.node
    if op in ("any", "all"):
        acc = np.dtype(bool)
    elif dtype is not None:
        acc = np.dtype(dtype)
        check_dtype(acc, f"{op}(dtype=...)")
    else:
        acc = reduce_dtype(op, node.dtype)
    if op == "mean" and dtype is None:
        # NumPy accumulates float16 in float32 and ints in float64, then divides.
        acc = np.dtype(np.float32) if node.dtype == np.float16 else \
            np.dtype(np.float64) if node.dtype.kind in "biu" else node.dtype
    shape = tuple((1 if d in axes else n) for d, n in enumerate(node.shape) if keepdims
                  or d not in axes)
    if not axes and (not node.shape or None in node.shape or has_rows(node) or has_options(e)):
        # a fold over no axis (a 0-d value's too): each value alone (NumPy's axis=())
        value = Expr(cast(node, acc), e.env)
        if skipna and has_options(e) and ops.OPS[op].folds_to_identity:
            # a missing value alone folds nothing: the fold of nothing (0, 1, False, True)
            fill = np.asarray(ops.OPS[op].empty_value(acc)).astype(acc).item()
            value = Expr(Node(ROWS_OP, acc, node.shape, (value.node,),
                              ("fill_none", (fill,), tuple(option_flags(node, e.env)[0]),
                               False)), e.env)
        if initial is not None:
            value = apply("minimum" if op == "min" else "maximum", value,
                          Expr(Node("const", acc, (), (), _initial_value(op, initial, acc)),
                               {}))
        return astype(value, np.float16) if op == "mean" and dtype is None and \
            node.dtype == np.float16 else value
    if initial is not None:
        initial = _initial_value(op, initial, acc)
        # var / option data (or parameters of those types) fold `initial` into each row
        if not builtins.any(isinstance(v, (RaggedLeaf, RaggedPlaceholder))
                            for v in e.env.values()) and not has_rows(e.node) and \
                None not in [node.shape[d] for d in axes]:  # (a selection's rows: as var)
            return _seeded_fixed(op, e, axes, keepdims, acc, initial)
    arg = (op, axes, bool(keepdims)) + ((True,) if skipna else ())
    if initial is not None:  # the ragged path folds `initial` into each row's result
        arg = (op, axes, bool(keepdims), bool(skipna), initial)
    red = Node(REDUCE_OP, acc, shape, (cast(node, acc),), arg)
    if op == "mean" and dtype is None and node.dtype == np.float16:
        red = cast(red, np.dtype(np.float16))
    return Expr(red, e.env)


def _initial_value(op: str, initial: Any, acc: np.dtype) -> Any:
    """`initial` in the accumulator dtype, converted as NumPy converts it: an integer
    accumulator takes `int(initial)` and refuses a value out of its range (OverflowError),
    where a plain cast would wrap it around into a wrong result."""
    if isinstance(initial, (complex, np.complexfloating)) and acc.kind != "c":
        raise TypeError(f"{op}: initial={initial!r} is complex, the {acc} data are not")
    if acc.kind not in "iu":
        return np.asarray(initial).astype(acc).item()
    if isinstance(initial, (complex, np.complexfloating)) or \
            getattr(initial, "ndim", 0) or not isinstance(initial, (int, float, np.number)):
        raise TypeError(f"{op}: initial must be a real scalar for {acc} data, not "
                        f"{initial!r}")
    try:
        value = int(initial)
    except (OverflowError, ValueError):  # inf, NaN
        raise OverflowError(f"{op}: initial={initial!r} does not fit {acc}") from None
    try:  # the range check of Python scalar operands (`int8 array + 200`)
        return cast(Node("scalar", np.dtype(np.int64), (), (), value), acc).arg
    except OverflowError as err:
        raise OverflowError(f"{op}: initial={initial!r}: {err}") from None


def _seeded_fixed(op: str, e: Expr, axes: tuple, keepdims: bool, acc: np.dtype,
                  initial: Any) -> Expr:
    """min/max with `initial` over fixed dims: minimum(min(x), initial); a reduction over
    an empty axis (known from the shape) is `initial` itself."""
    seed = Node("const", acc, (), (), initial)
    extent = [e.shape[d] for d in axes]
    if builtins.all(isinstance(n, int) for n in extent) and 0 in extent:
        # nothing to fold: `initial` in the result's shape (the sum only supplies the shape)
        shaped = reduce("sum", e, axis=axes, keepdims=keepdims)
        true = Node("const", np.dtype(bool), (), (), True)
        return Expr(Node("where", acc, shaped.shape, (true, seed, cast(shaped.node, acc))),
                    e.env)
    red = reduce(op, e, axis=axes, keepdims=keepdims, dtype=acc)
    if not builtins.all(isinstance(n, int) for n in extent):
        # a placeholder's dim, empty or not at run time: the fold keeps `initial` in its
        # arguments, so that one over nothing gives its identity (`passes.fuse.Step.seeded`)
        red = Expr(red.node.replace(arg=red.node.arg[:3] + (False, initial)), red.env)
    return apply("minimum" if op == "min" else "maximum", red, Expr(seed, {}))


def seeded_fixed_folds(root: Node) -> Node:
    """`root` with every min / max that folds `initial` over sized fixed dims (a fold built
    over var data, whose operands were computed since) as `_seeded_fixed` builds it: the
    kernels of fixed dims fold no `initial` themselves (the loop nest's over symbolic
    dims, `R * L`, do)."""
    def seeded(node: Node) -> bool:
        return node.op == REDUCE_OP and len(node.arg) > 4 and node.arg[4] is not None and \
            builtins.all(type(n) is int for n in node.srcs[0].shape)

    def visit(node: Node, srcs: tuple) -> Node:
        node = node.replace(srcs=srcs) if srcs != node.srcs else node
        if not seeded(node):
            return node
        op, axes, keepdims, _, initial = node.arg[:5]
        return _seeded_fixed(op, Expr(node.srcs[0], {}), axes, keepdims, node.dtype,
                             initial).node
    # (a look first: every plan of a new graph passes here, nearly all without such folds)
    return rewrite(root, visit) if builtins.any(map(seeded, toposort(root))) else root


def _skip_nan(op: str, e: Expr, axis: Any, keepdims: bool, skipna: bool, dtype: Any,
              initial: Any) -> Expr:
    """A reduction of float / complex data that leaves NaN out (NumPy's nan-functions):
    NaN becomes the fold's identity; min/max of a slice of only NaN is NaN, a mean is
    the sum of the other values over their count."""
    kw = {"axis": axis, "keepdims": keepdims, "skipna": skipna}
    nan = apply("isnan", e)
    if ops.OPS[op].empty is not None:  # (sum, prod, any, all, mean)
        kept = where(nan, ops.OPS[op].identity(e.dtype), e)
        if op != "mean":
            return reduce(op, kept, dtype=dtype, **kw)
        want = reduce("mean", e, dtype=dtype, **kw).dtype
        total = reduce("sum", kept, dtype=dtype, **kw)
        value = astype(apply("true_divide", total, count(e, axis, keepdims, skipnan=True)),
                       want)
        if not has_options(e):
            return value  # an empty slice gives 0 / 0 = NaN, as np.nanmean
        # nothing present: missing, as the mean of nothing over ?T data is
        return where(apply("equal", count(e, axis, keepdims), 0),
                     reduce("mean", kept, dtype=dtype, **kw).astype(want), value)
    if not ops.OPS[op].no_empty_fold or e.dtype.kind == "c":
        raise NotSupportedError(f"{op} with skipnan=True of {e.dtype} data")
    red = reduce(op, where(nan, ops.OPS[op].identity(e.dtype), e), initial=initial, **kw)
    if initial is not None:
        return red
    # a slice of only NaN gives NaN (np.nanmin); `red + nan` keeps a missing result missing
    return where(apply("equal", count(e, axis, keepdims, skipnan=True), 0),
                 apply("add", red, float("nan")), red)


def count(x: Any, axis: Any = None, keepdims: bool = False, skipnan: bool = False) -> Expr:
    """Lazy number of present values over `axis` (int64): missing values (`?T`) are never
    counted; `skipnan=True` leaves NaN out too.

    Example: `lazyk.count(lazyk.array([[1, None, 3], [4]]), axis=-1)` gives `[2, 1]`.
    """
    e = operands("count", (x,))[0]
    axes = normalize_axes(axis, e.ndim, "count")  # (the error names count, not its sum)
    node = e.node
    if node.op == SELECT_OP and not skipnan and axes == (e.ndim - 1,) and \
            node.srcs[1].ndim == e.ndim and not has_options(e) and _same_rows(*node.srcs):
        # the items a mask keeps (num(x[x > c])): its true values, x never read
        return reduce("sum", Expr(node.srcs[1], e.env), axis=axes, keepdims=keepdims,
                      dtype=np.dtype(np.int64))
    if skipnan and e.dtype.kind in "fc":
        present = apply("logical_not", apply("isnan", e))
    else:  # true for every value, NaN included; missing wherever x is
        present = apply("logical_or", apply("equal", e, e), apply("not_equal", e, e))
    return reduce("sum", present, axis=axis, keepdims=keepdims, skipna=True,
                  dtype=np.dtype(np.int64))


def _same_rows(x: Node, mask: Node) -> bool:
    """Whether `x` and `mask` have the same rows by construction: elementwise work over
    the same arrays (then the mask's count is the selection's, its rows never checked)."""
    nodes = toposort(x) + toposort(mask)
    return input_names(x) == input_names(mask) and \
        builtins.all(n.is_leaf or n.op in ops.ELEMENTWISE for n in nodes)


def count_nonzero(x: Any, axis: Any = None, keepdims: bool = False) -> Expr:
    """Lazy number of values that are not zero (not False) over `axis` (int64), as
    `np.count_nonzero` and Awkward's `ak.count_nonzero`: NaN counts (it is not zero), a
    string counts where it is not empty, missing values (`?T`) never do.

    Example: `lazyk.count_nonzero(lazyk.array([[1, 0, 3], [], [0]]), axis=1)` gives
    `[2, 0, 0]`.
    """
    e = operands("count_nonzero", (x,))[0]
    normalize_axes(axis, e.ndim, "count_nonzero")
    if is_text(e.dtype):  # (as NumPy: the strings that are not empty)
        empty = b"" if e.dtype == ops.BYTES or e.dtype.kind == "S" else ""
        nonzero = text_operand("not_equal", e, empty)
    else:
        nonzero = apply("not_equal", e, np.zeros((), e.dtype))
    return reduce("sum", nonzero, axis=axis, keepdims=keepdims, skipna=True,
                  dtype=np.dtype(np.int64))


def argmax(x: Any, axis: Any = None, keepdims: bool = False) -> Expr:
    """Lazy position of the largest value along `axis` (Awkward's `ak.argmax`, NumPy's
    `np.argmax`): int64, the first of equal values; a NaN wins over every number (the
    first NaN, as NumPy). Missing values (`?T`) are skipped (their positions still
    count); a row with nothing to point at (empty, or only missing values) gives a missing
    result, so over var rows the result is `?int64`. `axis=None` points into the
    flattened values (missing rows hold none). Over a middle axis, rows below it line up
    as elementwise work lines them up (a row of length 1 stretches).

    Example: `lazyk.argmax(lazyk.array([[1, 5, 5], [], [2]]), axis=1)` gives
    `[1, None, 0]` (type `3 * ?int64`); `x[lazyk.argmax(x, axis=1, keepdims=True)]` takes
    each row's largest value back (`[[5], [None], [2]]`).

    Args:
        x: an array or expression of bool, integer or float values.
        axis: an int (negative counts from the last axis) or None (every axis).
        keepdims: keep the reduced axis as a fixed dim of size 1 (the positions then
            gather: `x[positions]`).

    Raises:
        TypeError: a tuple of axes, or keepdims not a bool.
        ValueError: a fixed axis of length 0 (NumPy's error).
        DTypeError: string values (no order to take a position from).
        NotSupportedError: complex values.
    """
    return _arg_reduce("argmax", x, axis, keepdims)


def argmin(x: Any, axis: Any = None, keepdims: bool = False) -> Expr:
    """Lazy position of the smallest value along `axis` (`ak.argmin`, `np.argmin`); the
    rules of `argmax`.

    Example: `lazyk.argmin(lazyk.array([[3, 1, 1], [], [2]]), axis=-1)` gives
    `[1, None, 0]`.
    """
    return _arg_reduce("argmin", x, axis, keepdims)


def _arg_reduce(op: str, x: Any, axis: Any, keepdims: bool) -> Expr:
    if not isinstance(keepdims, (bool, np.bool_)):
        raise TypeError(f"{op}: keepdims must be True or False, not {keepdims!r}")
    if axis is not None and not isinstance(axis, (int, np.integer)) or \
            isinstance(axis, (bool, np.bool_)):
        raise TypeError(f"{op}: axis must be an int or None (one axis to point along), not "
                        f"{axis!r}")
    e = operands(op, (x,))[0]
    refuse_text(op, [e])
    if not e.ndim and axis in (None, 0, -1):  # a 0-d value: NumPy's position 0 of itself
        return _arg_reduce(op, e[None], 0, False)
    try:
        ops.get(op).resolve(e.dtype)
    except DTypeError:
        if e.dtype.kind == "c":  # (NumPy orders them by real, then imaginary part)
            raise NotSupportedError(f"{op}: positions of complex values ({e.dtype}) are not "
                                    "supported yet (NumPy orders them by real part, then "
                                    f"imaginary part; min and max do); {op} of x.real gives "
                                    "the real parts' order") from None
        raise DTypeError(f"{op}: {describe_node(e.node)} values have no order to take a "
                         "position from (bool, integer and float values do)") from None
    axes = normalize_axes(axis, e.ndim, op)
    shape = tuple((1 if d in axes else n) for d, n in enumerate(e.shape) if keepdims
                  or d not in axes)
    if None not in e.shape and 0 in shape and 0 in (e.shape[d] for d in axes) and \
            not has_options(e):
        # NumPy's error with no result to fold into (else the kernel names the row); a
        # `?T` value's empty row gives None (Awkward's), so an empty result is empty
        raise ValueError(f"attempt to get {op} of an empty sequence ({e.type}, axis {axis})")
    # missing values are skipped (as Awkward); the nest folds `?T` data under skipna
    arg = (op, axes, bool(keepdims)) + ((True,) if has_options(e) else ())
    return Expr(Node(REDUCE_OP, np.dtype(np.int64), shape, (e.node,), arg), e.env)



def folded_rows(x: Expr) -> Expr:
    """`x`, a min / max of rows without `initial`, with the rows that fold nothing (an
    empty row: a ValueError when computed) left out (`x[count > 0]`); `x` itself for
    anything else."""
    got = seeded_fold(x)
    return x if got is None else got[0][got[1] > 0]


def seeded_fold(x: Expr) -> tuple | None:
    """(x with an `initial`, how many values each result folds) of `x`, a min / max without
    `initial` over values that are never missing (a result that folds nothing is a
    ValueError), else None. The seed stands in for results that fold nothing."""
    node = x.node
    if node.op != REDUCE_OP or node.arg[0] not in ("min", "max") or len(node.arg) > 4 or \
            has_options(x):
        return None
    op, axes, keep = node.arg[:3]
    src = Expr(node.srcs[0], x.env)
    seed = ops.OPS[op].identity(node.dtype)
    return (reduce(op, src, axis=axes, keepdims=keep, initial=seed),
            count(src, axis=axes, keepdims=keep))


def _make_reduction(op: str):
    def fn(x, axis=None, keepdims: bool = False, skipna: bool = False, dtype=None,
           initial=None, skipnan: bool = False):
        return reduce(op, x, axis=axis, keepdims=keepdims, skipna=skipna, dtype=dtype,
                      initial=initial, skipnan=skipnan)

    fn.__name__ = fn.__qualname__ = op  # errors name sum(), not the factory
    fn.__doc__ = (f"Lazy `{op}` over `axis` (int, tuple, None, negative), `keepdims=`, "
                  "`skipna=` (leave missing values out), `skipnan=` (leave NaN out)" +
                  (", `initial=`" if ops.OPS[op].no_empty_fold else "") + ".")
    return fn


for _name in REDUCTIONS:
    globals()[_name] = _make_reduction(_name)

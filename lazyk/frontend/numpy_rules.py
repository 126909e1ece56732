"""NumPy's rules for typing graph nodes: ufunc loops, casts, broadcasting, reductions.

The expression builders (`lazyk.frontend.expr`) type every node with these when it is built
(NEP 50 weak Python scalars included), so the kernels never guess about promotion.
"""
from __future__ import annotations

import builtins
import functools
from typing import Any

import numpy as np

from lazyk.errors import DTypeError, NotSupportedError, ShapeError
from lazyk.frontend import ops
from lazyk.frontend.graph import Node
from lazyk.lru import Memo

# --- shapes -------------------------------------------------------------------------------

def broadcast_shapes(op: str, shapes: list[tuple]) -> tuple:
    """NumPy broadcasting over ints and symbolic names; ShapeError names operands and sizes."""
    if len(shapes) == 2:  # the common cases: equal shapes, or one 0-d operand
        a, b = shapes
        if a == b or not b:
            return a
        if not a:
            return b
    elif shapes and type(shapes[0]) is tuple and 1 not in shapes[0] and \
            all(s == shapes[0] for s in shapes):
        return shapes[0]  # (one shape, or equal ones: a records' fields, their dims)
    ndim = builtins.max((len(s) for s in shapes), default=0)
    out = []
    for ax in range(ndim):
        dims = [(k, s[len(s) - ndim + ax]) for k, s in enumerate(shapes)
                if len(s) - ndim + ax >= 0]
        sizes = {d for _, d in dims if d != 1}
        if len(sizes) > 1:
            ints = {d for d in sizes if isinstance(d, int)}
            syms = sizes - ints - {None}  # var rows take the size of the dim (or 1)
            if len(ints) > 1 or len(syms) > 1:
                detail = ", ".join(f"operand {k} has {d}" for k, d in dims)
                raise ShapeError(f"{op}: shapes {' and '.join(str(tuple(s)) for s in shapes)} "
                                 f"do not broadcast at axis {ax - ndim} ({detail})")
            # a symbol next to a concrete size must equal it (checked at bind)
            sizes = ints or syms
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def keep_ones(shape: tuple, like: tuple) -> tuple:
    """`shape` with the fixed 1 of `like` (as many dims) where `shape` has var rows: the
    dims of `?1` rows, var rows of one element that their pairing types as a fixed 1 (a
    graph built again over their leaves broadcasts them as var rows)."""
    if len(shape) != len(like):
        return shape
    return tuple(1 if n is None and m == 1 else n for n, m in zip(shape, like))


# --- typing ---------------------------------------------------------------------------------

def describe_node(node: Node) -> str:
    """An operand as error messages name it: `Python int` or its type text."""
    return f"Python {type(node.arg).__name__}" if node.weak else node.type_text()


def resolve(name: str, srcs: tuple[Node, ...]) -> tuple[tuple[np.dtype, ...], np.dtype]:
    """Loop input dtypes and result dtype of ufunc `name`, NumPy-exact; DTypeError if none."""
    key, weak = [], 0
    for s in srcs:
        if s.op == "scalar":
            key.append(type(s.arg))
            weak += 1
        else:
            key.append(s.dtype)
    # all weak: nothing to yield to, Python defaults
    key = tuple([s.dtype for s in srcs]) if weak == len(srcs) else tuple(key)
    got = _resolved.get((name, key))
    if got is not None:
        return got
    return _resolved.put((name, key), _resolve(name, srcs, key))


_resolved = Memo(4096, "NumPy type rules")  # (op, operand dtypes or weak classes) -> `resolve`'s answer


def _resolve(name: str, srcs: tuple[Node, ...], key: tuple) -> tuple:
    row = ops.get(name)
    try:
        sig = row.resolve(*key)
    except DTypeError:
        types = " and ".join(describe_node(s) for s in srcs)
        hint = " (as in NumPy: use ~ for the logical not of bools)" if name == "negative" \
            and key == (np.dtype(bool),) else ""
        raise DTypeError(f"{name}: unsupported operand type(s) {types}{hint}") from None
    if not row.supported(sig):
        types = " and ".join(describe_node(s) for s in srcs)
        raise NotSupportedError(f"{name} on {types} (complex lowering not implemented)")
    return tuple(sig[:len(srcs)]), sig[len(srcs)]


def cast(node: Node, dtype: np.dtype, wrap: bool = False) -> Node:
    """`node` converted to `dtype` (weak scalars become typed constants; NEP 50 range check).

    `wrap=True` converts an out-of-range weak scalar C-style, as `np.where` does.
    """
    if node.op not in _LEAF_VALUES:
        if node.dtype == dtype:
            return node
        return Node("astype", np.dtype(dtype), node.shape, (node,))
    dtype = np.dtype(dtype)
    key = (node, dtype, wrap)
    got = _consts.get(key)
    if got is not None:
        return got
    try:
        # (a Python int becomes a float directly, or an integer of the dtype it fits: 2**63
        # as uint64; wrapping applies to integer dtypes only)
        fits = node.weak and type(node.arg) is int and dtype.kind in "iu" and \
            np.iinfo(dtype).min <= node.arg <= np.iinfo(dtype).max
        value = np.asarray(node.arg, dtype=dtype) if node.weak and (
            not wrap or dtype.kind in "fc" or fits) else \
            np.asarray(node.arg, dtype=node.dtype).astype(dtype)
    except OverflowError as err:
        if isinstance(node.arg, int):  # name the value and the dtype, as NumPy does
            raise OverflowError(f"Python integer {node.arg} out of bounds for "
                                f"{dtype}") from None
        raise OverflowError(f"{err}") from None
    got = Node("const", dtype, (), (), value.item())
    return _consts.put(key, got)  # (held: a rebuilt expression finds it interned)

_LEAF_VALUES = ("scalar", "const")
_consts = Memo(1024, "cast constants")  # (scalar or const node, dtype, wrap) -> its `cast`


def clip_key(srcs: tuple[Node, ...]) -> tuple[Node, ...]:
    """NumPy drops an integer clip bound beyond the array's range on the side it cannot
    matter (`np.clip(int8, 0, 1000)`); one on the other side still overflows."""
    x, lo, hi = srcs
    if x.weak:
        return srcs
    loop = np.result_type(*(s.dtype for s in srcs if not s.weak))  # (the weak bounds' loop)
    if loop.kind not in "iu":
        return srcs
    info = np.iinfo(loop)

    def saturated(bound: Node, edge: int, beyond: bool) -> Node:
        if bound.weak and isinstance(bound.arg, int) and beyond:
            return Node("const", loop, (), (), edge)
        return bound
    return (x, saturated(lo, info.min, isinstance(lo.arg, int) and lo.arg < info.min),
            saturated(hi, info.max, isinstance(hi.arg, int) and hi.arg > info.max))


_BEYOND = {  # op -> (x OP s where s is above every x, where s is below every x)
    "equal": (False, False), "not_equal": (True, True), "less": (True, False),
    "less_equal": (True, False), "greater": (False, True), "greater_equal": (False, True)}
_FLIPPED = {"less": "greater", "less_equal": "greater_equal", "greater": "less",
            "greater_equal": "less_equal"}


def comparison_beyond(name: str, srcs: tuple[Node, ...]) -> tuple[Node, bool] | None:
    """NumPy compares an integer array with a Python int outside its dtype's range exactly:
    (the array, the answer for every element), or None for an int within range."""
    if len(srcs) != 2:
        return None
    for k, (x, s) in enumerate((srcs, srcs[::-1])):
        if s.weak and isinstance(s.arg, int) and not x.weak and x.dtype.kind in "iu":
            info = np.iinfo(x.dtype)
            if info.min <= s.arg <= info.max:
                return None
            op = _FLIPPED.get(name, name) if k else name  # (s OP x is x OP' s)
            return x, _BEYOND[op][s.arg < info.min]
    return None


# --- reductions -----------------------------------------------------------------------------

def normalize_axes(axis: Any, ndim: int, op: str = "reduce") -> tuple[int, ...]:
    """Axis (int, tuple, None, negative) to a sorted tuple of non-negative ints; AxisError."""
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for a in axes:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
            # NumPy's rule: True is not axis 1, 1.0 is not axis 1
            raise TypeError(f"{op}: axis must be an int, a tuple of ints or None, not "
                            f"{type(a).__name__}")
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim, f"{op}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: duplicate value in 'axis' {axis!r}")
    return tuple(sorted(out))


def partial_dtype(op: str, dtype: np.dtype) -> np.dtype:
    """The dtype a split reduction's partial results keep (Dask's partitions): a float16 /
    float32 (complex64) sum or product adds in float64 (complex128), as one kernel does,
    and rounds once at the end."""
    if op in ("sum", "prod") and dtype.kind in "fc" and \
            dtype.itemsize < (16 if dtype.kind == "c" else 8):
        return np.dtype(np.complex128 if dtype.kind == "c" else np.float64)
    return dtype


@functools.lru_cache(maxsize=256)
def reduce_dtype(op: str, dtype: np.dtype) -> np.dtype:
    """NumPy's result dtype for reduction `op` of `dtype` (sum of int8 is int64, ...)."""
    sample = np.ones(1, dtype)
    if op == "mean":
        return np.mean(sample).dtype
    return getattr(np, op)(sample).dtype

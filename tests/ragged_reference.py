"""A plain-Python reference for ragged (`var`) and missing-value (`?T`) arrays.

Values are nested Python lists; `None` is a missing value or a missing row. Every rule the
fused kernels must follow is written here once, as small functions over lists, so tests can
compare any implementation against it (values, dtypes and missing positions).

The rules (each function below restates its own in its docstring):

- Types: `N * var * 4 * ?int32` style strings; fixed `n`, symbolic `N`, `var`, `?var`, `?n`
  dims over a numeric `T` or `?T` leaf.
- Broadcasting lines dims up from the right (NumPy). A fixed 1 stretches; a `var` row of
  length 1 stretches to any length; a fixed `n` against `var` needs every row of length `n`
  or 1 and gives fixed `n`; anything else raises `lazyk.ShapeError` naming the row's index
  path and both lengths. A missing row (`?var`) lines up with any row (its length is not
  compared) and, combined with anything, gives a missing row.
- Elementwise: NumPy's ufunc on each leaf (NumPy 2 promotion, Python scalars weak); a
  missing input gives a missing output.
- `where(c, x, y)`: missing where `c` is missing, else the missing state of the branch taken;
  rows alike: a row is missing where `c`'s row is, or where one of its elements selects a
  branch whose row is missing (a row of `c` with no element selects nothing).
- Reductions `sum prod min max any all mean count` over any axis or tuple of axes: the
  elements along the axis fold one into the next with the broadcasting rule (so rows of
  different lengths, other than 1, raise ShapeError); `fold="left"` instead lines rows up
  on the left and folds what is there (Awkward Array's rule). A missing row reduced along
  its own axis gives a missing result, with `skipna` too (as Awkward's `ak.sum(x, axis=-1)`
  gives None for a None row); folded into other rows it is skipped under `skipna`, else it
  makes the result missing (the present rows must still line up). See `reduce`.

Arithmetic on leaves runs through NumPy 0-d arrays, so overflow, rounding and NaN follow
NumPy exactly; everything else is plain Python.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass

import numpy as np

from lazyk.errors import ShapeError

__all__ = ["Dim", "RType", "RArray", "parse_type", "typeof", "array", "broadcast_types",
           "elementwise", "where", "reduce", "REDUCERS"]

REDUCERS = ("sum", "prod", "min", "max", "any", "all", "mean", "count")


# ---------------------------------------------------------------- types
@dataclass(frozen=True)
class Dim:
    """One dimension: `size` is an int (fixed), a name (symbolic) or None (var)."""

    size: int | str | None
    option: bool = False

    @property
    def var(self) -> bool:
        return self.size is None

    def __str__(self):
        return ("?" if self.option else "") + ("var" if self.size is None else str(self.size))


@dataclass(frozen=True)
class RType:
    """A ragged array type: dims (outermost first), a NumPy dtype, and a leaf option flag."""

    dims: tuple
    dtype: np.dtype
    option: bool = False

    @property
    def ndim(self) -> int:
        return len(self.dims)

    def __str__(self):
        leaf = ("?" if self.option else "") + self.dtype.name
        return " * ".join([str(d) for d in self.dims] + [leaf])


_DIM = re.compile(r"^(\?)?(var|\d+|[A-Z]\w*)$")
_LEAF = re.compile(r"^(\?)?(bool|u?int(8|16|32|64)|float(16|32|64)|complex(64|128))$")


def parse_type(s: str) -> RType:
    """`"N * ?var * 4 * ?int32"` -> RType; raises ValueError on anything else."""
    parts = [p.strip() for p in s.split("*")]
    leaf = _LEAF.match(parts[-1])
    if not leaf:
        raise ValueError(f"not a numeric leaf type: {parts[-1]!r}")
    dims = []
    for p in parts[:-1]:
        m = _DIM.match(p)
        if not m:
            raise ValueError(f"not a dimension: {p!r}")
        size = None if m[2] == "var" else int(m[2]) if m[2].isdigit() else m[2]
        dims.append(Dim(size, bool(m[1])))
    return RType(tuple(dims), np.dtype(leaf[2]), bool(leaf[1]))


def _leaf(v, dtype: np.dtype):
    """A Python value of `dtype` (NumPy's conversion, so float32 rounds and ints wrap)."""
    return np.asarray(v).astype(dtype).item()


def _check(value, t: RType, level: int, path: tuple, sizes: dict):
    """Validate `value` against dims[level:] of `t`, converting leaves; returns the copy."""
    if level == t.ndim:
        if value is None:
            if not t.option:
                raise ValueError(f"missing value at {list(path)} in non-option type {t}")
            return None
        if isinstance(value, (list, tuple)):
            raise ValueError(f"a list at {list(path)} where {t} has a scalar")
        return _leaf(value, t.dtype)
    d = t.dims[level]
    if value is None:
        if not d.option:
            raise ValueError(f"missing row at {list(path)} in non-option dim {d} of {t}")
        return None
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"a scalar at {list(path)} where {t} has a dimension")
    if isinstance(d.size, int) and len(value) != d.size:
        raise ValueError(f"row {list(path)} has length {len(value)}, the type says {d.size}")
    if isinstance(d.size, str) and sizes.setdefault(d.size, len(value)) != len(value):
        raise ValueError(f"row {list(path)} has length {len(value)}, "
                         f"{d.size} is {sizes[d.size]} elsewhere")
    return [_check(v, t, level + 1, path + (i,), sizes) for i, v in enumerate(value)]


@dataclass
class RArray:
    """A reference array: its concrete type (no symbolic dims) and its nested-list data."""

    type: RType
    data: object

    def to_list(self):
        return self.data

    def __repr__(self):
        return f"RArray({self.data!r}, type='{self.type}')"


def array(data, type: str | RType) -> RArray:
    """Check `data` against `type` (symbolic dims become the lengths found) and convert leaves."""
    t = parse_type(type) if isinstance(type, str) else type
    sizes: dict = {}
    data = _check(data, t, 0, (), sizes)
    if t.dims and isinstance(t.dims[0].size, str) and data is not None:
        sizes.setdefault(t.dims[0].size, len(data))
    dims = tuple(Dim(sizes.get(d.size, 0) if isinstance(d.size, str) else d.size, d.option)
                 for d in t.dims)
    return RArray(RType(dims, t.dtype, t.option), data)


def typeof(data, dtype=None) -> RType:
    """The most specific type of a nested list: fixed where every row at a depth has one
    length, `var` otherwise, `?` where a None sits; the deepest list sets the depth, and a
    None counts as a missing value rather than a missing row where both would fit."""
    def depth(v):
        if isinstance(v, (list, tuple)):
            return 1 + max((depth(x) for x in v), default=0)
        return 0
    nd = depth(data)
    dims, leaves, level = [], [], [data]
    for _ in range(nd):
        rows = [r for r in level if r is not None]
        lengths = {len(r) for r in rows}
        option = any(r is None for r in level)
        dims.append(Dim(lengths.pop() if len(lengths) == 1 and not option else None, option))
        level = [x for r in rows for x in r]
    leaves = [x for x in level if x is not None]
    if dtype is None:
        dtype = (np.dtype(bool) if leaves and all(isinstance(x, bool) for x in leaves) else
                 np.dtype("int64") if all(isinstance(x, (bool, int)) for x in leaves) and leaves
                 else np.dtype("float64"))
    if dims:
        dims[0] = Dim(len(data), False)  # the outermost dim always has a length
    return RType(tuple(dims), np.dtype(dtype), any(x is None for x in level))


# ---------------------------------------------------------------- broadcasting
def broadcast_types(*types: RType) -> tuple:
    """Result dims of broadcasting `types` (right-aligned): a fixed n other than 1 wins over
    var and fixed 1; var wins over fixed 1; a dim is ?-marked if any operand's is."""
    nd = max((t.ndim for t in types), default=0)
    out = []
    for k in range(nd):
        ds = [t.dims[k - nd + t.ndim] for t in types if k - nd + t.ndim >= 0]
        fixed = {d.size for d in ds if not d.var and d.size != 1}
        if len(fixed) > 1:
            raise ShapeError(f"axis {k}: fixed sizes {sorted(fixed)} do not broadcast")
        size = fixed.pop() if fixed else (None if any(d.var for d in ds) else 1)
        out.append(Dim(size, any(d.option for d in ds)))
    return tuple(out)


def _where(path) -> str:
    return f"row {list(path)}" if path else "the outermost dim"


def _zip(fn, items, ranks, nd, level=0, path=()):
    """Walk operands together (right-aligned ranks) calling `fn(*leaves)` at the leaves;
    a length-1 row stretches, a missing row (None) gives a missing row (the present rows
    beside it must still line up)."""
    if level == nd:
        return fn(*items)
    live = [j for j, r in enumerate(ranks) if level >= nd - r]
    lengths = {j: len(items[j]) for j in live if items[j] is not None}
    long = [j for j in lengths if lengths[j] != 1]
    for j in long[1:]:
        if lengths[j] != lengths[long[0]]:
            raise ShapeError(f"{_where(path)}: operand {long[0]} has length {lengths[long[0]]} "
                             f"and operand {j} has length {lengths[j]}")
    if len(lengths) < len(live):
        return None
    n = lengths[long[0]] if long else 1
    out = []
    for i in range(n):
        sub = [items[j][i if lengths[j] != 1 else 0] if j in lengths else items[j]
               for j in range(len(items))]
        out.append(_zip(fn, sub, ranks, nd, level + 1, path + (i,)))
    return out


def _operand(x):
    """(data, rank, type-or-None, value for dtype resolution) of an RArray or a scalar."""
    if isinstance(x, RArray):
        return x.data, x.type.ndim, x.type, np.empty(0, x.type.dtype)
    return x, 0, None, x  # Python / NumPy scalars stay weak (NEP 50)


def elementwise(op: str, *operands) -> RArray:
    """NumPy ufunc `op` on every leaf after broadcasting; missing in -> missing out."""
    ufunc = getattr(np, op)
    ops = [_operand(x) for x in operands]
    types = [t for _, _, t, _ in ops if t is not None]
    with np.errstate(all="ignore"):
        dtype = ufunc(*[p for *_, p in ops]).dtype
    dims = broadcast_types(*types)

    def leaf(*vs):
        if any(v is None for v in vs):
            return None
        with np.errstate(all="ignore"):
            args = [np.asarray(v, t.dtype) if t is not None else v
                    for v, (_, _, t, _) in zip(vs, ops)]
            return np.asarray(ufunc(*args)).astype(dtype).item()
    data = _zip(leaf, [d for d, *_ in ops], [r for _, r, *_ in ops], len(dims))
    return RArray(RType(dims, np.dtype(dtype), any(t.option for t in types)), data)


@dataclass(frozen=True)
class _Taken:
    """where(): an element taken from a branch whose row, at depth `level`, is missing."""

    level: int


def _zip_where(leaf, items, ranks, nd, level=0, path=()):
    """`_zip` for where(c, x, y): c's missing row gives a missing row; a branch's missing
    row lines up with anything and makes the row missing only where an element of it is
    taken (so a row of c with no element stays present)."""
    if level == nd:
        c, a, b = items
        v = None if c is None else a if c else b
        return v if isinstance(v, _Taken) else leaf(v)
    live = [j for j, r in enumerate(ranks) if level >= nd - r]
    cond_gone = 0 in live and items[0] is None
    items = [_Taken(level) if j in live and items[j] is None else items[j]
             for j in range(len(items))]
    lengths = {j: len(items[j]) for j in live if not isinstance(items[j], _Taken)}
    long = [j for j in lengths if lengths[j] != 1]
    for j in long[1:]:
        if lengths[j] != lengths[long[0]]:
            raise ShapeError(f"{_where(path)}: operand {long[0]} has length {lengths[long[0]]} "
                             f"and operand {j} has length {lengths[j]}")
    if cond_gone:
        return None
    n = lengths[long[0]] if long else 1
    out = []
    for i in range(n):
        sub = [items[j][i if lengths[j] != 1 else 0] if j in lengths else items[j]
               for j in range(len(items))]
        out.append(_zip_where(leaf, sub, ranks, nd, level + 1, path + (i,)))
    taken = [x.level for x in out if isinstance(x, _Taken)]
    if taken and min(taken) < level:
        return _Taken(min(taken))  # a row further out is missing anyway
    return None if taken else out


def where(cond, x, y) -> RArray:
    """x where cond is true, else y (NumPy's result dtype); missing where cond is missing,
    else missing exactly where the branch taken is missing (as Awkward and numpy.ma). Rows
    alike: missing where cond's row is, or where an element of the row is taken from a
    branch whose row is missing."""
    ops = [_operand(v) for v in (cond, x, y)]
    types = [t for _, _, t, _ in ops if t is not None]
    dtype = np.result_type(ops[1][3], ops[2][3])
    dims = broadcast_types(*types)

    def leaf(v):
        return None if v is None else _leaf(v, dtype)
    data = _zip_where(leaf, [d for d, *_ in ops], [r for _, r, *_ in ops], len(dims))
    if isinstance(data, _Taken):
        data = None
    return RArray(RType(dims, np.dtype(dtype), any(t.option for t in types)), data)


# ---------------------------------------------------------------- reductions
class _Empty:
    """The fold of nothing (an empty row along the axis, or only skipped values)."""

    def __repr__(self):
        return "EMPTY"


EMPTY = _Empty()


@dataclass
class _Gone:
    """A missing result that rows still fold into: the rows folded with a missing one must
    line up all the same (so the outcome does not depend on where the missing row sits)."""

    rows: list


def _present(x):
    """What a missing element leaves to fold: nothing (EMPTY), or the rows under _Gone."""
    return EMPTY if x is None else x.rows if isinstance(x, _Gone) else x


def _ungone(data):
    """_Gone results become None (missing) once every axis is folded."""
    if isinstance(data, _Gone):
        return None
    if isinstance(data, list):
        return [_ungone(x) for x in data]
    return data


@dataclass
class _Acc:
    """A partial reduction: how many values were folded and their running result."""

    n: int
    acc: object


def _result_dtype(op: str, dtype: np.dtype) -> np.dtype:
    """NumPy's result dtype of reduction `op` over `dtype` elements."""
    if op in ("any", "all"):
        return np.dtype(bool)
    if op == "count":
        return np.dtype("int64")
    if op in ("min", "max"):
        return dtype
    fn = {"sum": np.sum, "prod": np.prod, "mean": np.mean}[op]
    with np.errstate(all="ignore"):
        return np.asarray(fn(np.ones(1, dtype))).dtype


def _combine(op: str, a: _Acc, b: _Acc, dtype: np.dtype) -> _Acc:
    """Fold two partial results (NumPy arithmetic in the accumulator dtype; NaN propagates
    through min and max as in np.min / np.max)."""
    x, y = np.asarray(a.acc, dtype), np.asarray(b.acc, dtype)
    with np.errstate(all="ignore"):
        if op in ("sum", "mean", "count"):
            r = x + y
        elif op == "prod":
            r = x * y
        elif op == "min":
            r = np.minimum(x, y)
        elif op == "max":
            r = np.maximum(x, y)
        elif op == "any":
            r = x | y
        else:
            r = x & y
    return _Acc(a.n + b.n, np.asarray(r).astype(dtype).item())


def _fold2(op, a, b, dtype, skipna, mode, path):
    """Fold two elements along the reduced axis: states combine, rows pair up by the
    broadcasting rule (mode "broadcast") or line up on the left (mode "left"); a missing
    value or row is skipped under `skipna`, else it makes the result missing."""
    if skipna:
        a, b = (EMPTY if a is None else a), (EMPTY if b is None else b)
    if a is EMPTY:
        return b
    if b is EMPTY:
        return a
    if a is None or b is None or isinstance(a, _Gone) or isinstance(b, _Gone):
        # missing: a value gives None; rows keep folding (they must line up) under _Gone
        x, y = _present(a), _present(b)
        rows = x if y is EMPTY else y if x is EMPTY else _fold2(op, x, y, dtype, skipna,
                                                                  mode, path)
        return _Gone(rows) if isinstance(rows, list) else None
    if isinstance(a, _Acc):
        return _combine(op, a, b, dtype)
    if mode == "left":
        return [_fold2(op, a[i], b[i], dtype, skipna, mode, path + (i,))
                if i < len(a) and i < len(b) else (a[i] if i < len(a) else b[i])
                for i in range(max(len(a), len(b)))]
    if len(a) != len(b) and 1 not in (len(a), len(b)):
        raise ShapeError(f"{_where(path)}: rows of length {len(a)} and {len(b)} "
                         "do not fold together")
    n = len(b) if len(a) == 1 else len(a)  # a length-1 row stretches (to 0 as well)
    return [_fold2(op, a[0 if len(a) == 1 else i], b[0 if len(b) == 1 else i], dtype,
                   skipna, mode, path + (i,)) for i in range(n)]


def _scrub(data):
    """Under skipna, a missing row left inside a folded element counts as nothing folded."""
    if data is None:
        return EMPTY
    if isinstance(data, list):
        return [_scrub(x) for x in data]
    return data


def _lift(op, data, level, nd, dtype):
    """Turn every present leaf into a one-value partial result (`count` counts 1)."""
    if data is None:
        return None
    if level == nd:
        if op == "count":
            return _Acc(1, 1)
        if op in ("any", "all"):
            return _Acc(1, bool(data))
        return _Acc(1, _leaf(data, dtype))
    return [_lift(op, x, level + 1, nd, dtype) for x in data]


def _reduce_axis(op, data, level, axis, dtype, skipna, mode, path=()):
    """Fold the elements along `axis` (depth `level` walks down to it)."""
    if data is None or data is EMPTY:
        return data  # a missing row above or at the axis stays missing
    if isinstance(data, _Gone):
        rows = _reduce_axis(op, data.rows, level, axis, dtype, skipna, mode, path)
        return _Gone(rows) if isinstance(rows, list) else None
    if level < axis:
        return [_reduce_axis(op, x, level + 1, axis, dtype, skipna, mode, path + (i,))
                for i, x in enumerate(data)]
    out = _fold_many(op, list(data), dtype, skipna, mode, path)
    return _scrub(out) if skipna else out


def _fold_many(op, xs, dtype, skipna, mode, path):
    """Fold the elements `xs` along the reduced axis. Rows (no missing ones) pair up by the
    broadcasting rule over all of them at once: their common length comes first, so a
    length-1 row stretched to length 0 contributes nothing and is never looked into,
    wherever the empty row sits; otherwise fold two at a time (`_fold2`). A group that
    folded to nothing (EMPTY) adds nothing, wherever it sits. A missing row (None, or
    _Gone rows) pairs with any row: the present rows pair among themselves all the same,
    then the result is missing (skipped under skipna), whatever the order of the rows."""
    xs = [x for x in xs if x is not EMPTY and not (skipna and x is None)]
    rows = [_present(x) for x in xs]
    lists = [(j, r) for j, r in enumerate(rows) if isinstance(r, list)]
    if mode == "broadcast" and len(xs) > 1 and lists and \
            all(isinstance(r, list) or r is EMPTY for r in rows):
        n = 1
        for j, x in lists:
            if len(x) != 1 and n not in (1, len(x)):
                raise ShapeError(f"{_where(path + (j,))}: rows of length {n} and {len(x)} "
                                 "do not fold together")
            n = len(x) if len(x) != 1 else n
        out = [_fold_many(op, [x[0 if len(x) == 1 else i] for _, x in lists], dtype, skipna,
                          mode, path + (i,)) for i in range(n)]
        return out if all(isinstance(x, list) for x in xs) else _Gone(out)
    out = EMPTY
    for i, x in enumerate(xs):
        out = _fold2(op, out, x, dtype, skipna, mode, path + (i,))
    return out


def _unreached(group, level, axes, nd):
    """Empty the rows a fold over several axes never looks into (in place): the folded
    axes together pair the rows of each kept dim below them by the broadcasting rule, so
    where those rows have a common length of 0, a length-1 row among them stretches to
    nothing and what it holds reaches no result, whatever the order the axes fold in.
    A length-1 row that stretches is replaced by copies of its element, one per pairing
    (none for length 0), so each pairing drops only what it does not reach."""
    if level == nd:
        return
    rows = [x for x in group if isinstance(x, list)]  # a missing row pairs with any
    if level in axes:
        _unreached([y for x in rows for y in x], level + 1, axes, nd)
        return
    lens = {len(x) for x in rows} - {1}
    if len(lens) > 1:
        return  # rows that do not pair: the fold raises ShapeError
    n = lens.pop() if lens else 1
    for x in rows:
        if len(x) == 1 and n != 1:  # stretched: a copy for each pairing (or none)
            x[:] = [copy.deepcopy(x[0]) for _ in range(n)]
    for i in range(n):
        _unreached([x[0 if len(x) == 1 else i] for x in rows], level + 1, axes, nd)


def _finish(op, data, dims, rtype, has_initial, initial, option_input):
    """Final values: identities for empty folds (expanded to the fixed dims below), NaN or
    missing for an empty mean, `initial` or missing or ValueError for an empty min/max."""
    if data is None:
        return None
    if dims:
        d = dims[0]
        if data is EMPTY:
            data = [EMPTY] * (d.size if not d.var else 0)
        return [_finish(op, x, dims[1:], rtype, has_initial, initial, option_input)
                for x in data]
    if data is EMPTY:
        data = _Acc(0, None)
    if op in ("min", "max") and has_initial:
        seed = _Acc(1, _leaf(initial, rtype))
        data = seed if data.n == 0 else _combine(op, data, seed, rtype)
    if data.n == 0:
        if op == "count":
            return 0
        if op in ("sum", "prod", "any", "all"):
            return _leaf({"sum": 0, "prod": 1, "any": False, "all": True}[op], rtype)
        if op == "mean":
            return None if option_input else float("nan")
        if option_input:
            return None
        raise ValueError(f"zero-size {op} reduction has no identity; pass initial=")
    if op == "mean":
        with np.errstate(all="ignore"):
            return np.asarray(np.asarray(data.acc, rtype) / data.n).astype(rtype).item()
    return _leaf(data.acc, rtype)


def reduce(op: str, x: RArray, axis=None, keepdims=False, skipna=False, initial=None,
           fold="broadcast") -> RArray:
    """Reduction `op` of REDUCERS over `axis` (None = all, an int, or a tuple folded
    innermost axis first so that every element counts once; negative counts from the end),
    the elements along each axis folding by the broadcasting rule (`fold="left"`: Awkward's
    left-aligned rule). A tuple of axes pairs the rows of each kept dim below a folded one
    across all of them first: content that a length-1 row stretched to length 0 holds is
    never looked into (`_unreached`), as in elementwise broadcasting. Missing values make the result missing unless
    `skipna` skips them (`count` always skips: it counts present values); a missing list at
    the reduced axis gives a missing result. NaN is a value (it propagates through sum, min,
    max, ...). Empty folds give 0, 1, False, True, 0 for sum, prod, any, all, count; mean
    gives NaN (missing for input with options); min/max give `initial`, else missing for
    input with options, else ValueError. `keepdims` keeps each reduced axis as a fixed 1."""
    if op not in REDUCERS:
        raise ValueError(f"unknown reduction {op!r}")
    t, nd = x.type, x.type.ndim
    if nd == 0:  # a scalar reduces as a one-element array
        if axis not in (None, 0, -1, (), (0,), (-1,)):
            raise np.exceptions.AxisError(axis, 0)
        one = RArray(RType((Dim(1),), t.dtype, t.option), [x.data])
        return reduce(op, one, 0, False, skipna, initial, fold)
    axes = tuple(range(nd)) if axis is None else (axis,) if isinstance(axis, int) else axis
    for a in axes:
        if not -nd <= a < nd:
            raise np.exceptions.AxisError(a, nd)
    axes = sorted(a % nd for a in axes)
    if len(set(axes)) != len(axes) or not axes:
        raise ValueError(f"repeated or no axis in {axis}")
    skipna = skipna or op == "count"
    rtype = _result_dtype(op, t.dtype)
    acc = np.dtype(bool) if op in ("any", "all") else rtype
    data = _lift(op, x.data, 0, nd, acc)
    if len(axes) > 1 and fold == "broadcast":
        _unreached([data], 0, set(axes), nd)
    for a in reversed(axes):
        data = _reduce_axis(op, data, 0, a, acc, skipna, fold)
    data = _ungone(data)
    # types: a missing list at a reduced axis marks the next kept dim (or the leaf)
    marks = set()
    for a in axes:
        if t.dims[a].option and (not skipna or a == axes[0]):
            marks.add(next((i for i in range(a + 1, nd) if i not in axes), nd))
    dims = [Dim(d.size, (d.option and (i < axes[0] or not skipna)) or i in marks)
            for i, d in enumerate(t.dims) if i not in axes]
    option_input = t.option or any(d.option for d in t.dims)
    data = _finish(op, data, dims, rtype, initial is not None, initial, option_input)
    if op == "count":
        option = False
    elif op == "mean" or (op in ("min", "max") and initial is None):
        option = option_input
    else:
        option = option_input and not skipna
    if keepdims:
        for a in axes:
            data = _wrap(data, a)
            dims.insert(a, Dim(1))
    return RArray(RType(tuple(dims), rtype, option or nd in marks), data)


def _wrap(data, level):
    """Insert a length-1 dim at depth `level`."""
    if level == 0 or data is None:
        return [data] if level == 0 else None
    return [_wrap(x, level - 1) for x in data]

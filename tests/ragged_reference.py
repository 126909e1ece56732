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
- Awkward Array's vocabulary (`num`, `flatten`, `firsts`, `local_index`, `concatenate`,
  `is_none`, `fill_none`, `pad_none`, `argmin` / `argmax`, `std` / `var`, `cumsum` /
  `cumprod`, `sort` / `argsort`, `select`, `gather`, `combinations`, `argcombinations`,
  `cartesian`, `histogram`): Awkward 2's results, in the last section of this file.

Arithmetic on leaves runs through NumPy 0-d arrays, so overflow, rounding and NaN follow
NumPy exactly; everything else is plain Python.
"""
from __future__ import annotations

import bisect
import copy
import itertools
import re
from dataclasses import dataclass

import numpy as np

from lazyk.errors import ShapeError

__all__ = ["Dim", "RType", "RArray", "parse_type", "typeof", "array", "broadcast_types",
           "elementwise", "where", "reduce", "REDUCERS",
           "num", "flatten", "firsts", "local_index", "concatenate", "is_none", "fill_none",
           "pad_none", "argmin", "argmax", "var", "std", "cumsum", "cumprod", "sort",
           "argsort", "select", "gather", "records", "combinations", "argcombinations",
           "cartesian", "histogram_bin_edges", "histogram"]

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


# ---------------------------------------------------------------- Awkward Array's vocabulary
# The functions below follow Awkward Array 2's names, signatures and results (checked against
# Awkward 2.14 in tests/test_reference_vs_awkward.py); where Awkward's own results disagree
# with each other, the rule chosen is stated in the docstring. They take RArrays and return
# RArrays; a function that makes records (combinations, argcombinations, cartesian) returns
# one RArray per field (a tuple, or a dict with `fields=` or dict input), and `records`
# zips them into the tuples / dicts that `ak.to_list` shows. An `axis` counts the outer dim
# as 0; a negative axis counts from the leaf (-1: the innermost dim).

def _axis(axis: int, nd: int, lo: int = 0) -> int:
    a = axis + nd if axis < 0 else axis
    if not lo <= a < nd:
        raise np.exceptions.AxisError(axis, nd)
    return a


def _rows(data, depth: int, fn):
    """`fn` applied to every list at `depth` (0: `data` itself; the items of `data` are at
    depth 1, ...); a missing row above `depth` stays missing, a missing list at `depth` is
    passed to `fn` as None."""
    if depth == 0:
        return fn(data)
    if data is None:
        return None
    return [_rows(x, depth - 1, fn) for x in data]


def _typed(data, dims, dtype, option=False) -> RArray:
    """An RArray of `data` with `dims` (the outer one gets the length of `data`)."""
    dims = list(dims)
    if dims:
        dims[0] = Dim(len(data))
    return RArray(RType(tuple(dims), np.dtype(dtype), bool(option)), data)


def _opt(dims: tuple, level: int, option: bool):
    """(dims, leaf option) with the items at depth `level` marked missing-able (a dim's flag,
    or the leaf's where `level` is past the dims)."""
    dims = list(dims)
    if level < len(dims):
        dims[level] = Dim(dims[level].size, dims[level].option or option)
        return dims, False
    return dims, option


def _convert(data, dtype):
    """Every leaf of `data` converted to `dtype` (missing stays missing)."""
    if isinstance(data, list):
        return [_convert(x, dtype) for x in data]
    return None if data is None else _leaf(data, dtype)


def _leaves(data, depth: int, keep_missing: bool) -> list:
    """The leaves under `data` (depth levels of lists), in order; missing rows hold none."""
    if depth == 0:
        return [data] if keep_missing or data is not None else []
    if data is None:
        return []
    return [v for x in data for v in _leaves(x, depth - 1, keep_missing)]


def num(x: RArray, axis: int = 1) -> RArray:
    """ak.num: the length of every list at `axis` (axis 0: the array's length, an int);
    a missing list gives None."""
    t = x.type
    a = _axis(axis, t.ndim)
    if a == 0:
        return RArray(RType((), np.dtype("int64")), len(x.data))
    data = _rows(x.data, a, lambda r: None if r is None else len(r))
    return _typed(data, t.dims[:a], "int64", t.dims[a].option)


def flatten(x: RArray, axis: int | None = 1) -> RArray:
    """ak.flatten: the lists at `axis` joined into their parent list (a missing list among
    them is dropped, missing values inside them stay); axis 0 drops missing rows at the top;
    axis None gives every present leaf, missing values dropped."""
    t = x.type
    if axis is None:
        return _typed(_leaves(x.data, t.ndim, False), (Dim(None),), t.dtype)
    a = _axis(axis, t.ndim)
    if a == 0:
        dims = list(t.dims)
        if t.ndim > 1:
            dims[1] = Dim(dims[1].size)
        return _typed([r for r in x.data if r is not None], dims, t.dtype,
                      t.option and t.ndim > 1)
    data = _rows(x.data, a - 1, lambda r: None if r is None else
                 [v for row in r if row is not None for v in row])
    outer, inner = t.dims[a - 1], t.dims[a]
    size = (outer.size * inner.size if isinstance(outer.size, int) and
            isinstance(inner.size, int) and not inner.option else None)
    dims = t.dims[:a - 1] + (Dim(size, outer.option),) + t.dims[a + 1:]
    return _typed(data, dims, t.dtype, t.option)


def firsts(x: RArray, axis: int = 1) -> RArray:
    """ak.firsts: the first item of every list at `axis` (>= 1), None for an empty or
    missing list."""
    t = x.type
    a = _axis(axis, t.ndim, lo=1)
    data = _rows(x.data, a, lambda r: r[0] if r else None)
    dims, leaf = _opt(t.dims[:a] + t.dims[a + 1:], a, True)
    return _typed(data, dims, t.dtype, leaf or t.option)


def local_index(x: RArray, axis: int = -1) -> RArray:
    """ak.local_index: every item's position in its list at `axis` (int64; what is below
    that axis is dropped); a missing list stays missing."""
    t = x.type
    a = _axis(axis, t.ndim)
    data = _rows(x.data, a, lambda r: None if r is None else list(range(len(r))))
    return _typed(data, t.dims[:a + 1], "int64")


def concatenate(arrays, axis: int = 1) -> RArray:
    """ak.concatenate: the lists at `axis` of every array joined, in order (NumPy's result
    dtype). The arrays walk together above `axis` (lengths must agree, else ShapeError; a
    missing row there gives a missing row); a missing list at `axis` counts as empty
    (Awkward's rule: the joined list is present)."""
    arrays = list(arrays)
    nds = {x.type.ndim for x in arrays}
    if len(nds) != 1:
        raise ValueError(f"concatenate needs arrays of one depth, got depths {sorted(nds)}")
    nd = nds.pop()
    a = _axis(axis, nd)
    dtype = np.result_type(*[x.type.dtype for x in arrays])

    def walk(items, level, path):
        if level == a:
            return [v for it in items if it is not None for v in it]
        if any(it is None for it in items):
            return None
        lengths = [len(it) for it in items]
        if len(set(lengths)) > 1:
            raise ShapeError(f"{_where(path)}: the arrays have lengths {lengths}")
        return [walk([it[i] for it in items], level + 1, path + (i,))
                for i in range(lengths[0])]
    data = _convert(walk([x.data for x in arrays], 0, ()), dtype)
    dims = []
    for k in range(nd):
        ds = [x.type.dims[k] for x in arrays]
        sizes = {d.size for d in ds}
        if k == a:
            size = (sum(d.size for d in ds) if all(isinstance(d.size, int) and not d.option
                                                    for d in ds) else None)
            dims.append(Dim(size))
        else:
            dims.append(Dim(sizes.pop() if len(sizes) == 1 else None,
                            any(d.option for d in ds)))
    return _typed(data, dims, dtype, any(x.type.option for x in arrays))


def is_none(x: RArray, axis: int = 0) -> RArray:
    """ak.is_none: True where an item of the lists at `axis` is missing (bool); a missing
    list above stays missing."""
    t = x.type
    a = _axis(axis, t.ndim)
    data = _rows(x.data, a, lambda r: None if r is None else [v is None for v in r])
    return _typed(data, t.dims[:a + 1], bool)


def fill_none(x: RArray, value) -> RArray:
    """ak.fill_none (axis=-1): missing values replaced by `value`; missing rows stay. The
    dtype is NumPy's promotion of the array's dtype and `value` with Python scalars weak
    (Awkward treats a Python scalar as a NumPy array: int32 filled with 0 gives int64
    there, int32 here; the values are equal). A type without missing values is returned
    as it is (Awkward's rule: nothing to fill, no promotion)."""
    t = x.type
    if not t.option:
        return x
    dtype = np.result_type(t.dtype, value)
    fill = _leaf(value, dtype)
    data = _rows(x.data, t.ndim - 1, lambda r: None if r is None else
                 [fill if v is None else _leaf(v, dtype) for v in r])
    return _typed(data, t.dims, dtype)


def pad_none(x: RArray, target: int, axis: int = 1, clip: bool = False) -> RArray:
    """ak.pad_none: every list at `axis` padded with None to `target` items (`clip=True`:
    also cut to `target`); a missing list stays missing."""
    t = x.type
    a = _axis(axis, t.ndim)
    data = _rows(x.data, a, lambda r: None if r is None else
                 (list(r) + [None] * (target - len(r)))[:target if clip else None])
    d = t.dims[a]
    size = target if clip else max(d.size, target) if isinstance(d.size, int) else None
    dims, leaf = _opt(t.dims[:a] + (Dim(size, d.option),) + t.dims[a + 1:], a + 1, True)
    return _typed(data, dims, t.dtype, leaf or t.option)


# -- reductions that line lists up on the left (Awkward's rule) and skip missing values
class _Group(list):
    """The (position along the axis, value) pairs that fold into one result."""


def _group(pairs, below: tuple):
    """Fold the items (pos, subtree) of one list along the axis, with dims `below` under it:
    the subtrees line up on the left (a fixed dim keeps its size even when nothing folds
    into it); missing values and rows are skipped (their positions still count, so a
    position takes the item back)."""
    if not below:
        return _Group((i, v) for i, v in pairs if v is not None)
    rows = [(i, s) for i, s in pairs if s is not None]
    n = below[0].size if isinstance(below[0].size, int) else \
        max((len(s) for _, s in rows), default=0)
    return [_group([(i, s[p]) for i, s in rows if p < len(s)], below[1:]) for p in range(n)]


def _fold_left(x: RArray, axis, fn, keepdims: bool):
    """`fn(group)` for every result of a left-aligned reduction over `axis` (None: all).
    Returns (data, the result's dims, whether a missing list made a result missing)."""
    t = x.type
    if axis is None:
        data = fn(_group(list(enumerate(_leaves(x.data, t.ndim, True))), ()))
        dims = ()
        for _ in range(t.ndim if keepdims else 0):
            data, dims = [data], (Dim(1),) + dims
        return data, dims, False
    a = _axis(axis, t.ndim)

    def finish(g):
        return fn(g) if isinstance(g, _Group) else [finish(v) for v in g]

    def one(row):
        if row is None:
            return None
        out = finish(_group(list(enumerate(row)), t.dims[a + 1:]))
        return [out] if keepdims else out
    dims = t.dims[:a] + ((Dim(1),) if keepdims else ()) + tuple(
        Dim(d.size) if isinstance(d.size, int) else Dim(None) for d in t.dims[a + 1:])
    dims, leaf = _opt(dims, a, t.dims[a].option)  # a missing list: a missing result
    return _rows(x.data, a, one), dims, leaf


def _arg_best(better):
    """Awkward's arg-reduction: the first present value, replaced by a later one only where
    `better(later, best)` (a strict comparison: NaN wins only if it comes first)."""
    def fn(group):
        best = None
        for i, v in group:
            if best is None or better(v, best[1]):
                best = (i, v)
        return None if best is None else best[0]
    return fn


def argmax(x: RArray, axis: int | None = None, keepdims: bool = False) -> RArray:
    """ak.argmax: the position of the largest present value along `axis` (None: in the
    array's leaves, missing values counted, missing rows holding none); None where there is
    none. Lists above a folded axis line up on the left. The first largest wins; NaN wins
    only if it comes first (Awkward's strict comparison; NumPy's NaN always wins).
    A position counts missing rows along the axis (so that `gather` takes the item back;
    Awkward 2.14 counts only present rows when the folded axis is not the innermost one)."""
    data, dims, _ = _fold_left(x, axis, _arg_best(lambda v, b: v > b), keepdims)
    return _typed(data, dims, "int64", True) if dims else \
        RArray(RType((), np.dtype("int64"), True), data)


def argmin(x: RArray, axis: int | None = None, keepdims: bool = False) -> RArray:
    """ak.argmin: as `argmax`, for the smallest value."""
    data, dims, _ = _fold_left(x, axis, _arg_best(lambda v, b: v < b), keepdims)
    return _typed(data, dims, "int64", True) if dims else \
        RArray(RType((), np.dtype("int64"), True), data)


def _var64(x: RArray, axis: int | None, ddof: int, root: bool) -> RArray:
    """sum((v - mean)^2) / (n - ddof) in float64 (its square root with `root`), NaN where
    n - ddof <= 0; then in NumPy's dtype of the result (float32 stays float32)."""
    def fn(group):
        vs = [np.float64(v) for _, v in group]
        if len(vs) - ddof <= 0:
            return float("nan")
        with np.errstate(all="ignore"):
            mean = sum(vs, np.float64(0)) / np.float64(len(vs))
            got = sum(((v - mean) ** 2 for v in vs), np.float64(0)) / np.float64(len(vs) - ddof)
            return float(out.type(np.sqrt(got) if root else got))
    out = np.var(np.ones(2, x.type.dtype)).dtype
    data, dims, option = _fold_left(x, axis, fn, False)
    return _typed(data, dims, out, option) if dims else RArray(RType((), out), data)


def var(x: RArray, axis: int | None = None, ddof: int = 0) -> RArray:
    """ak.var in NumPy's dtype (float32 values give float32; Awkward's is float64): the
    present values along `axis`, summed in float64; a missing list at `axis` gives None.
    Lists above a folded axis line up on the left."""
    return _var64(x, axis, ddof, False)


def std(x: RArray, axis: int | None = None, ddof: int = 0) -> RArray:
    """ak.std in NumPy's dtype: the square root of `var`, taken in float64."""
    return _var64(x, axis, ddof, True)


# -- along the last axis
def _scan(x: RArray, op: str) -> RArray:
    t = x.type
    dtype = getattr(np, op)(np.ones(1, t.dtype)).dtype
    ufunc = np.add if op == "cumsum" else np.multiply

    def row(r):
        if r is None:
            return None
        out, acc = [], None
        for v in r:
            if v is None:
                out.append(None)
                continue
            with np.errstate(all="ignore"):
                acc = np.asarray(v, dtype) if acc is None else ufunc(acc, np.asarray(v, dtype))
            out.append(np.asarray(acc).astype(dtype).item())
        return out
    return _typed(_rows(x.data, t.ndim - 1, row), t.dims, dtype, t.option)


def cumsum(x: RArray) -> RArray:
    """Running sums along the last axis, per list (NumPy's cumsum dtype: int32 and bool give
    int64); a missing value stays missing and adds nothing (numpy.ma's and pandas' rule)."""
    return _scan(x, "cumsum")


def cumprod(x: RArray) -> RArray:
    """Running products along the last axis, as `cumsum`."""
    return _scan(x, "cumprod")


def _order(r, ascending: bool) -> list:
    """Stable order of a list's positions: present values sorted (NaN after every number, as
    NumPy), then the missing ones in their order; descending keeps equal values in order."""
    def key(i):
        v = r[i]
        return (1, 0.0) if isinstance(v, float) and v != v else (0, v)
    present = [i for i, v in enumerate(r) if v is not None]
    return (sorted(present, key=key, reverse=not ascending)
            + [i for i, v in enumerate(r) if v is None])


def sort(x: RArray, axis: int = -1, ascending: bool = True) -> RArray:
    """ak.sort (stable) along the last axis: missing values last in either order; NaN sorts
    above every number (last ascending, first descending; Awkward's NaN placement is
    not an order)."""
    t = x.type
    _axis(axis, t.ndim, lo=t.ndim - 1)
    data = _rows(x.data, t.ndim - 1, lambda r: None if r is None else
                 [r[i] for i in _order(r, ascending)])
    return RArray(t, data)


def argsort(x: RArray, axis: int = -1, ascending: bool = True) -> RArray:
    """ak.argsort (stable): the positions `sort` takes the items from (int64)."""
    t = x.type
    _axis(axis, t.ndim, lo=t.ndim - 1)
    data = _rows(x.data, t.ndim - 1, lambda r: None if r is None else _order(r, ascending))
    return _typed(data, t.dims, "int64")


# -- selection and gather
def select(x: RArray, mask: RArray) -> RArray:
    """x[mask] with a boolean mask of k <= x's dims: the mask walks with x (lengths must
    agree, else ShapeError); at its last dim the items where it is True are kept, where it
    is missing the item becomes None. A mask of one dim selects rows; a missing row of x or
    of the mask gives a missing row."""
    k, t = mask.type.ndim, x.type
    if mask.type.dtype != np.bool_ or not 1 <= k <= t.ndim:
        raise TypeError(f"a mask is bool with 1 to {t.ndim} dims, got {mask.type}")

    def walk(xd, md, level, path):
        if xd is None or md is None:
            return None
        if len(xd) != len(md):
            raise ShapeError(f"{_where(path)}: the mask has length {len(md)} and the array "
                             f"{len(xd)}")
        if level == k - 1:
            return [None if m is None else v for v, m in zip(xd, md) if m is None or m]
        return [walk(a, b, level + 1, path + (i,)) for i, (a, b) in enumerate(zip(xd, md))]
    data = walk(x.data, mask.data, 0, ())
    d = t.dims[k - 1]
    dims = t.dims[:k - 1] + (Dim(None, d.option or mask.type.dims[k - 1].option),) + t.dims[k:]
    dims, leaf = _opt(dims, k, mask.type.option)
    return _typed(data, dims, t.dtype, leaf or t.option)


def gather(x: RArray, index: RArray) -> RArray:
    """x[index] with an integer index of k <= x's dims: the index walks with x (lengths must
    agree above its last dim, else ShapeError); at its last dim each index picks an item of
    x's list there (negative counts from the end; out of the list: IndexError naming the
    row and the index); a missing index gives None, a missing row of either a missing row.
    The index's last dim may be var or fixed (`argmax(..., keepdims=True)` gives a fixed 1
    holding None for an empty list)."""
    k, t = index.type.ndim, x.type
    if index.type.dtype.kind not in "iu" or not 1 <= k <= t.ndim:
        raise TypeError(f"an index is integer with 1 to {t.ndim} dims, got {index.type}")

    def pick(xd, i, path):
        j = i + len(xd) if i < 0 else i
        if not 0 <= j < len(xd):
            raise IndexError(f"index {i} is out of bounds for {_where(path)} of length "
                             f"{len(xd)}")
        return xd[j]

    def walk(xd, idx, level, path):
        if xd is None or idx is None:
            return None
        if level == k - 1:
            return [None if i is None else pick(xd, i, path) for i in idx]
        if len(xd) != len(idx):
            raise ShapeError(f"{_where(path)}: the index has length {len(idx)} and the array "
                             f"{len(xd)}")
        return [walk(a, b, level + 1, path + (i,)) for i, (a, b) in enumerate(zip(xd, idx))]
    data = walk(x.data, index.data, 0, ())
    d = index.type.dims[k - 1]
    dims = t.dims[:k - 1] + (Dim(d.size, d.option or t.dims[k - 1].option),) + t.dims[k:]
    dims, leaf = _opt(dims, k, index.type.option)
    return _typed(data, dims, t.dtype, leaf or t.option)


# -- records
def records(fields, depth: int):
    """Zip field arrays (a tuple / list, or a dict of names) into Python tuples / dicts at
    `depth` (the depth of the lists holding the records, plus one), as ak.to_list shows."""
    names = list(fields) if isinstance(fields, dict) else None
    parts = [f.data if isinstance(f, RArray) else f
             for f in (fields.values() if names else fields)]

    def z(items, level):
        if level == depth:
            return dict(zip(names, items)) if names else tuple(items)
        if items[0] is None:
            return None
        return [z([it[i] for it in items], level + 1) for i in range(len(items[0]))]
    return z(parts, 0)


def _split(data, depth: int, n: int, fields, dims_of, dtypes, options):
    """The record tuples at `depth` of `data` split into one RArray per field."""
    out = []
    for j in range(n):
        part = _rows(data, depth - 1, lambda r, j=j: None if r is None else [t[j] for t in r])
        out.append(_typed(part, dims_of(j), dtypes[j], options[j]))
    return dict(zip(fields, out)) if fields else tuple(out)


def _combos(x: RArray, n: int, axis: int, fields, of_positions: bool):
    t = x.type
    if n < 1:
        raise ValueError(f"combinations of n >= 1 items, got n={n}")
    if fields is not None and len(fields) != n:
        raise ValueError(f"{len(fields)} field names for combinations of {n}")
    a = _axis(axis, t.ndim)
    data = _rows(x.data, a, lambda r: None if r is None else
                 list(itertools.combinations(range(len(r)) if of_positions else r, n)))
    new = (Dim(None, t.dims[a].option),)
    if of_positions:
        return _split(data, a + 1, n, fields, lambda j: t.dims[:a] + new, ["int64"] * n,
                      [False] * n)
    return _split(data, a + 1, n, fields, lambda j: t.dims[:a] + new + t.dims[a + 1:],
                  [t.dtype] * n, [t.option] * n)


def combinations(x: RArray, n: int, axis: int = 1, fields=None):
    """ak.combinations: the n-tuples i < j (< k ...) of the items of every list at `axis`,
    in lexicographic order of positions; a missing list stays missing. One RArray per field
    (a tuple; a dict with `fields`): `records(result, axis + 1)` is what ak.to_list shows."""
    return _combos(x, n, axis, fields, False)


def argcombinations(x: RArray, n: int, axis: int = 1, fields=None):
    """ak.argcombinations: the positions (int64) of `combinations`' items."""
    return _combos(x, n, axis, fields, True)


def cartesian(arrays, axis: int = 1, nested=None):
    """ak.cartesian: every tuple of one item from each array's list at `axis` (the first
    array's item varying slowest); `nested=True` (or a list of array positions, or of names
    for dict input) opens a new list after those arrays. The arrays walk together above `axis` (lengths must agree, else
    ShapeError); a missing row of any array there, or a missing list at `axis`, gives a
    missing list (Awkward gives None for the first array's missing list but an empty list
    for a later array's). One RArray per array (a tuple, or a dict for dict input), the
    records at depth axis + 1 + the number of nested lists."""
    names = list(arrays) if isinstance(arrays, dict) else None
    xs = list(arrays.values()) if names else list(arrays)
    nd = {x.type.ndim for x in xs}
    if len(nd) != 1:
        raise ValueError(f"cartesian needs arrays of one depth, got depths {sorted(nd)}")
    a = _axis(axis, nd.pop())
    m = len(xs)
    opened = (list(range(m - 1)) if nested is True else [] if nested in (None, False)
              else sorted(names.index(j) if names and j in names else j for j in nested))
    if any(not 0 <= j < m - 1 for j in opened):
        raise ValueError(f"nested positions must be in 0..{m - 2}, got {nested}")

    def product(rows, j, prefix):
        if j == m:
            return [tuple(prefix)]
        out = []
        for v in rows[j]:
            sub = product(rows, j + 1, prefix + [v])
            if j in opened:
                out.append(sub)
            else:
                out.extend(sub)
        return out

    def walk(items, level, path):
        if any(it is None for it in items):
            return None
        if level == a:
            return product(items, 0, [])
        lengths = [len(it) for it in items]
        if len(set(lengths)) > 1:
            raise ShapeError(f"{_where(path)}: the arrays have lengths {lengths}")
        return [walk([it[i] for it in items], level + 1, path + (i,))
                for i in range(lengths[0])]
    data = walk([x.data for x in xs], 0, ())
    above = tuple(Dim(None, any(x.type.dims[k].option for x in xs)) for k in range(a + 1))
    above = (Dim(len(data)),) + above[1:]
    new = (Dim(None),) * len(opened)
    return _split(data, a + 1 + len(opened), m, names,
                  lambda j: above + new + xs[j].type.dims[a + 1:],
                  [x.type.dtype for x in xs], [x.type.option for x in xs])


# -- histogram
def histogram_bin_edges(x: RArray, bins, range=None) -> list:
    """numpy.histogram_bin_edges of the present values: `bins` edges as given, or `bins`
    equal bins over `range` (default: the values' min and max; 0..1 without values; an
    empty range widened by 0.5 on each side) computed by np.linspace in the values' float type (float32 data:
    float32 edges)."""
    values = np.array(_leaves(x.data, x.type.ndim, False), x.type.dtype)
    if not isinstance(bins, int):
        return [float(e) for e in bins]
    if range is not None:
        lo, hi = range
        if lo > hi:
            raise ValueError(f"max must be larger than min in range=({lo}, {hi})")
    elif values.size:  # NumPy scalars of the data's dtype: the arithmetic below is NumPy's
        lo, hi = values.min(), values.max()
    else:
        lo, hi = 0, 1
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"the range ({lo}, {hi}) is not finite: pass a finite range=")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    dtype = np.result_type(lo, hi, x.type.dtype)
    if dtype.kind in "biu":
        dtype = np.result_type(dtype, float)
    return [float(e) for e in np.linspace(lo, hi, bins + 1, dtype=dtype)]


def histogram(x: RArray, bins, range=None, weights: RArray | None = None) -> RArray:
    """numpy.histogram's counts over every axis: a present value v counts in bin i where
    edges[i] <= v < edges[i + 1], the last bin closed (`histogram_bin_edges`); values outside
    the edges, NaN and missing values are not counted. Counts are int64; with `weights`
    (an array of x's structure) each value adds its weight (missing weight: not counted) in
    float64, then cast to the weights' dtype as NumPy does."""
    edges = histogram_bin_edges(x, bins, range)
    n = len(edges) - 1
    values = _leaves(x.data, x.type.ndim, True)
    if weights is None:
        ws, dtype = [1] * len(values), np.dtype("int64")
    else:
        ws, dtype = _leaves(weights.data, weights.type.ndim, True), weights.type.dtype
        if len(ws) != len(values):
            raise ShapeError(f"weights hold {len(ws)} values and x {len(values)}")
    acc = [0.0 if weights is not None else 0] * n
    for v, w in zip(values, ws):
        if v is None or w is None or (isinstance(v, float) and v != v):
            continue
        if not edges[0] <= v <= edges[-1]:
            continue
        i = min(bisect.bisect_right(edges, v) - 1, n - 1)
        acc[i] += float(w) if weights is not None else 1
    return _typed([_leaf(c, dtype) for c in acc], (Dim(n),), dtype)

"""Ragged and missing-value data on Dask: the partitions' data.

- `Part`: a partition between tasks, pickled as the buffers of its own rows (offsets
  rebased, masks, values), never as Python lists or the content a row slice points into
  (strings, bytes, dates and records travel as Python values);
- `concat` / `build`: partitions joined along axis 0, column trees made into lazyk arrays;
  `union` / `widen`: parts with and without missing values made one type; `cut` / `cat`:
  column trees cut and joined;
- `renumbered` / `within`: errors raised in a partition naming the collection's rows.

What tasks run on partitions: `lazyk.dask.tasks` (one expression per partition) and
`lazyk.dask.folds` (partial reductions combined).
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from lazyk import types as T
from lazyk.arrays import arrmeta as M
from lazyk.arrays.array import Array, array
from lazyk.arrays.columns import build_columns as build
from lazyk.arrays.columns import columns as _tree
from lazyk.arrays.trees import length
from lazyk.errors import NotSupportedError, ShapeError

__all__ = ["Part", "build", "buffers", "cat", "columns", "concat", "cut",
           "renumbered", "span_of", "union", "unwrap", "widen", "within"]


def columns(a: Array) -> tuple:
    """`columns.columns` of `a` with the count of rows of size 0 on their nodes
    (`("regular", 0, child, rows)`), which `build` needs and their child cannot tell."""
    return _counted(_tree(a), a.type.size)


_columns = columns


def _counted(col: tuple, n: int) -> tuple:
    kind = col[0]
    if kind == "option":
        return ("option", col[1], _counted(col[2], n))
    if kind == "list":
        return ("list", col[1], _counted(col[2], int(col[1][-1])))  # the content's rows
    if kind == "regular":
        return ("regular", col[1], _counted(col[2], n * col[1])) + (() if col[1] else (n,))
    if kind == "record":
        return ("record", col[1], [_counted(f, n) for f in col[2]])
    return col


class Part:
    """A partition between tasks: a lazyk array that pickles as the buffers of the rows it
    holds (offsets rebased, masks, values), never as Python lists or the whole content
    that a row slice points into. `start`, `stop`: the collection's rows it holds, or
    folded for a partial reduction (None for results of no rows): errors name them."""

    __slots__ = ("array", "start", "stop")

    def __init__(self, a: Array, start: int | None = None, stop: int | None = None):
        self.array, self.start, self.stop = a, start, stop
        if stop is None and start is not None:
            self.stop = start + (a.type.size if isinstance(a.type, T.FixedDim) else 1)

    def __reduce__(self):
        col = buffers(self.array)
        return (_unpack, (col, self.start, self.stop)) if col is not None else \
            (Part, (self.array, self.start, self.stop))


def buffers(a: Array) -> tuple | None:
    """The column tree of `a`'s own rows (`build` makes it again), or None."""
    if not isinstance(a.type, T.FixedDim) or M.is_plain(a.type):
        return None
    try:
        col = _trim(_columns(a))
    except NotSupportedError:
        return None
    return col if _buildable(col) else None


def _unpack(col: tuple, start: int | None = None, stop: int | None = None) -> Part:
    return Part(build(col), start, stop)


def unwrap(x: Any) -> Any:
    return x.array if isinstance(x, Part) else x


def span_of(values: Any) -> tuple:
    """The rows (start, stop) that a partition among `values` holds, or (None, None)."""
    return next(((v.start, v.stop) for v in values if isinstance(v, Part) and
                 v.start is not None), (None, None))


# "row 3: ...", "row [3, 1]: ...", "var row 3 of ...", "zero-size row 3 in ...": the first
# index is the outer row of the partition a task ran on
_ROW = re.compile(r"^((?:var |zero-size )?row \[?)(\d+)")


def renumbered(err: Exception, rows: Any) -> Exception:
    """`err` naming the collection's rows where it names a partition's row: `rows` is the
    first row's number, the numbers of the partition's rows (an array), or the parts
    joined (`Part`s with their rows; a partial reduction stands for the rows it folded)."""
    msg = err.args[0] if len(err.args) == 1 and isinstance(err.args[0], str) else None
    m = _ROW.match(msg) if msg is not None else None
    if m is None or rows is None:
        return err
    local, head = int(m.group(2)), m.group(1)
    if isinstance(rows, (int, np.integer)):
        row = str(int(rows) + local)
    elif isinstance(rows, np.ndarray):
        if local >= len(rows):
            return err
        row = str(int(rows[local]))
    else:  # parts joined along axis 0
        for p in rows:
            n = p.array.type.size if isinstance(p, Part) and \
                isinstance(p.array.type, T.FixedDim) else None
            if n is None or p.start is None:
                return err
            if local < n:
                break
            local -= n
        else:
            return err
        if p.stop - p.start == n:
            row = str(p.start + local)
        else:  # a partial result: the rows it folded
            row, head = f"{p.start}..{p.stop - 1}", head.replace("row", "rows", 1)
    if row == m.group(2):
        return err
    try:
        new = type(err)(f"{head}{row}{msg[m.end():]}")
    except TypeError:  # an error type of other arguments: as it is
        return err
    new.__traceback__ = err.__traceback__
    return new


def within(err: Exception, start: int | None, stop: int | None) -> Exception:
    """`err`, naming a row of rows selected or flattened in one partition, with the rows
    of the collection that partition holds (the row's number counts within them)."""
    msg = err.args[0] if len(err.args) == 1 and isinstance(err.args[0], str) else None
    if msg is None or start is None or _ROW.match(msg) is None:
        return err
    rows = f"row {start}" if stop == start + 1 else f"rows {start}..{stop - 1}"
    try:
        new = type(err)(f"{msg} (the row counts within what was selected or flattened from "
                        f"{rows})")
    except TypeError:
        return err
    new.__traceback__ = err.__traceback__
    return new


def _trim(col: tuple) -> tuple:
    """A column tree cut to the entries its rows reach, offsets starting at 0."""
    kind = col[0]
    if kind == "list":
        o = col[1]
        lo, hi = int(o[0]), int(o[-1])
        return ("list", o - o[0] if lo else o, _trim(cut(col[2], lo, hi)))
    if kind == "text":  # only the characters its strings reach
        o = col[2]
        return ("text", col[1], o - o[0], col[3][int(o[0]):int(o[-1])])
    if kind == "record":
        return ("record", col[1], [_trim(f) for f in col[2]])
    if kind in ("option", "regular"):
        return (kind, col[1], _trim(col[2])) + col[3:]
    return col


def _buildable(col: tuple) -> bool:
    if col[0] in ("numpy", "text"):
        return True
    if col[0] == "record":
        return all(map(_buildable, col[2]))
    if col[0] == "option" and col[2][0] not in ("numpy", "list", "text", "record"):
        return False
    return _buildable(col[2])


def union(a: T.Type, b: T.Type) -> T.Type:
    """The type of both with options wherever either has one (ValueError otherwise)."""
    oa, ob = isinstance(a, T.Option), isinstance(b, T.Option)
    a, b = (a.elem if oa else a), (b.elem if ob else b)
    if isinstance(a, T.VarDim) and isinstance(b, T.VarDim):
        u: T.Type = T.VarDim(union(a.elem, b.elem))
    elif isinstance(a, T.FixedDim) and isinstance(b, T.FixedDim) and a.size == b.size:
        u = T.FixedDim(a.size, union(a.elem, b.elem))
    elif isinstance(a, T.Record) and isinstance(b, T.Record) and a.names == b.names:
        u = T.Record(tuple((n, union(x, y)) for n, x, y in zip(a.names, a.types, b.types)))
    elif a == b:
        u = a
    else:
        raise ValueError(f"{a} and {b}")
    return T.Option(u) if oa or ob else u


def widen(col: tuple, elem: T.Type) -> tuple:
    """A column tree (entries of type `elem` but for options) with all-present masks where
    `elem` has options."""
    if isinstance(elem, T.Option):
        if col[0] != "option":
            col = ("option", np.ones(length(col), bool), col)
        return ("option", col[1], widen(col[2], elem.elem))
    if col[0] == "list":
        return ("list", col[1], widen(col[2], elem.elem))
    if col[0] == "regular":
        return ("regular", col[1], widen(col[2], elem.elem)) + col[3:]
    if col[0] == "record":
        return ("record", col[1], [widen(f, elem.field(n)) for n, f in zip(col[1], col[2])])
    return col


# ---------------------------------------------------------------- concatenation
def concat(parts: list) -> Array:
    """Lazyk arrays (or NumPy arrays) of one type joined along axis 0: contents joined,
    offsets shifted (NumPy; offsets-form views are read in place)."""
    arrays = [p if isinstance(p, Array) else array(np.asarray(p)) for p in parts]
    if all(a.type.elem == arrays[0].type.elem for a in arrays) and \
            all(_plain(a) for a in arrays):
        return array(np.concatenate([a.to_numpy() for a in arrays]))
    try:
        return build(cat([_columns(a) for a in arrays]))
    except NotSupportedError:  # strings, records, `?n` rows: joined as Python values
        rows = [v for a in arrays for v in a.to_list()]
        return array(rows, T.FixedDim(len(rows), arrays[0].type.elem))


def _plain(a: Array) -> bool:
    try:
        a.to_numpy()
        return True
    except NotSupportedError:
        return False


def cut(col: tuple, lo: int, hi: int) -> tuple:
    """Entries lo..hi of a column tree (`columns.columns`)."""
    kind = col[0]
    if kind == "numpy":
        return ("numpy", col[1][lo:hi])
    if kind == "option":
        return ("option", col[1][lo:hi], cut(col[2], lo, hi))
    if kind == "list":
        return ("list", col[1][lo:hi + 1], col[2])
    if kind == "text":
        return ("text", col[1], col[2][lo:hi + 1], col[3])
    if kind == "record":
        return ("record", col[1], [cut(f, lo, hi) for f in col[2]])
    size = col[1]
    return ("regular", size, cut(col[2], lo * size, hi * size)) + \
        (() if size else (hi - lo,))  # rows of size 0 carry their count


def cat(cols: list) -> tuple:
    kinds = {c[0] for c in cols}
    if len(kinds) != 1 or kinds == {"regular"} and len({c[1] for c in cols}) != 1:
        raise ShapeError("partitions of different types cannot be joined")
    kind = cols[0][0]
    if kind == "numpy":
        return ("numpy", np.concatenate([c[1] for c in cols]))
    if kind == "option":
        return ("option", np.concatenate([c[1] for c in cols]), cat([c[2] for c in cols]))
    if kind == "regular":
        return ("regular", cols[0][1], cat([c[2] for c in cols])) + \
            (() if cols[0][1] else (sum(c[3] for c in cols),))
    if kind == "record":
        if len({tuple(c[1]) for c in cols}) != 1:
            raise ShapeError("partitions of records with other fields cannot be joined")
        return ("record", cols[0][1], [cat(list(f)) for f in zip(*(c[2] for c in cols))])
    if kind == "text":  # offsets shifted, the characters their strings reach joined
        offsets, chars, base = [np.zeros(1, np.int64)], [], 0
        for c in cols:
            o = c[2].astype(np.int64)
            offsets.append(o[1:] - o[0] + base)
            base += int(o[-1] - o[0])
            chars.append(c[3][int(o[0]):int(o[-1])])
        return ("text", cols[0][1], np.concatenate(offsets), np.concatenate(chars))
    offsets, children, base = [np.zeros(1, np.int64)], [], 0
    for c in cols:
        o = c[1].astype(np.int64)
        offsets.append(o[1:] - o[0] + base)
        base += int(o[-1] - o[0])
        children.append(cut(c[2], int(o[0]), int(o[-1])))
    return ("list", np.concatenate(offsets), cat(children))

"""Ragged and missing-value data on Dask: the partitions' data.

- `Part`: a partition between tasks, pickled as the buffers of its own rows (offsets
  rebased, masks, values, characters, record fields: `lazyk.arrays.columns.column_buffers`),
  never as Python lists or the content a row slice points into; rebuilt read-only, its
  records read their fields from those buffers;
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
from lazyk.arrays.array import Array, array
from lazyk.arrays.columns import build_columns as build
from lazyk.arrays.columns import column_buffers as buffers
from lazyk.arrays.columns import counted_columns, cut
from lazyk.arrays.trees import Column, Leaf, Lists, Masked, Record, Regular, Text
from lazyk.errors import NotSupportedError, ShapeError

__all__ = ["Part", "build", "buffers", "cat", "columns", "concat", "cut",
           "renumbered", "span_of", "union", "unwrap", "widen", "within"]


columns = counted_columns


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


def _unpack(col: Column, start: int | None = None, stop: int | None = None) -> Part:
    # (a partition is only read: its records' fields read their columns in place)
    return Part(build(col, read_only=True), start, stop)


def unwrap(x: Any) -> Any:
    return x.array if isinstance(x, Part) else x


def span_of(values: Any) -> tuple:
    """The rows (start, stop) that a partition among `values` holds, or (None, None)."""
    return next(((v.start, v.stop) for v in values if isinstance(v, Part) and
                 v.start is not None), (None, None))


# "row 3: ...", "row [3, 1]: ...", "var row 3 of ...", "zero-size row 3 in ...": the first
# index is the outer row of the partition a task ran on
_ROW = re.compile(r"((?:var |zero-size )?row \[?)(\d+)")


def renumbered(err: Exception, rows: Any) -> Exception:
    """`err` naming the collection's rows where it names a partition's row: `rows` is the
    first row's number, the numbers of the partition's rows (an array), or the parts
    joined (`Part`s with their rows; a partial reduction stands for the rows it folded)."""
    msg = err.args[0] if len(err.args) == 1 and isinstance(err.args[0], str) else None
    m = _ROW.search(msg) if msg is not None else None
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
    # (a path that names the row again, `(at [2, 0])`, names the collection's row too)
    at = re.compile(rf"\bat \[{m.group(2)}\b")
    lead, rest = (at.sub(f"at [{row}", t) for t in (msg[:m.start()], msg[m.end():]))
    try:
        new = type(err)(f"{lead}{head}{row}{rest}")
    except TypeError:  # an error type of other arguments: as it is
        return err
    new.__traceback__ = err.__traceback__
    return new


def within(err: Exception, start: int | None, stop: int | None) -> Exception:
    """`err`, naming a row of rows selected or flattened in one partition, with the rows
    of the collection that partition holds (the row's number counts within them)."""
    msg = err.args[0] if len(err.args) == 1 and isinstance(err.args[0], str) else None
    if msg is None or start is None or _ROW.search(msg) is None:
        return err
    rows = f"row {start}" if stop == start + 1 else f"rows {start}..{stop - 1}"
    try:
        new = type(err)(f"{msg} (the row counts within what was selected or flattened from "
                        f"{rows})")
    except TypeError:
        return err
    new.__traceback__ = err.__traceback__
    return new


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


def widen(col: Column, elem: T.Type) -> Column:
    """A column tree (entries of type `elem` but for options) with all-present masks where
    `elem` has options."""
    if isinstance(elem, T.Option):
        if not isinstance(col, Masked):
            col = Masked(np.ones(col.length(), bool), col)
        return Masked(col.present, widen(col.child, elem.elem))
    if isinstance(col, Lists):
        return Lists(col.offsets, widen(col.child, elem.elem))
    if isinstance(col, Regular):
        return Regular(col.size, widen(col.child, elem.elem), col.count)
    if isinstance(col, Record):
        return Record(col.names, [widen(f, elem.field(n))
                                  for n, f in zip(col.names, col.children)])
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
        return build(cat([columns(a) for a in arrays]))
    except NotSupportedError:  # strings, records, `?n` rows: joined as Python values
        rows = [v for a in arrays for v in a.to_list()]
        return array(rows, T.FixedDim(len(rows), arrays[0].type.elem))


def _plain(a: Array) -> bool:
    try:  # (records and tuples are joined as columns: NumPy would make them f0, f1 fields)
        return a.to_numpy().dtype.names is None
    except NotSupportedError:
        return False


def cat(cols: list) -> Column:
    kinds = {Masked if isinstance(c, Masked) else type(c) for c in cols}
    if len(kinds) != 1 or kinds == {Regular} and len({c.size for c in cols}) != 1:
        raise ShapeError("partitions of different types cannot be joined")
    first = cols[0]
    if isinstance(first, Leaf):
        return Leaf(np.concatenate([c.values for c in cols]))
    if isinstance(first, Masked):
        return Masked(np.concatenate([c.present for c in cols]), cat([c.child for c in cols]))
    if isinstance(first, Regular):
        return Regular(first.size, cat([c.child for c in cols]),
                       None if first.size else sum(c.count for c in cols))
    if isinstance(first, Record):
        if len({tuple(c.names) for c in cols}) != 1:
            raise ShapeError("partitions of records with other fields cannot be joined")
        return Record(first.names, [cat(list(f)) for f in zip(*(c.children for c in cols))])
    if isinstance(first, Text):  # offsets shifted, the characters their strings reach joined
        offsets, chars, base = [np.zeros(1, np.int64)], [], 0
        for c in cols:
            o = c.offsets.astype(np.int64)
            offsets.append(o[1:] - o[0] + base)
            base += int(o[-1] - o[0])
            chars.append(c.chars[int(o[0]):int(o[-1])])
        return Text(first.type_name, np.concatenate(offsets), np.concatenate(chars))
    offsets, children, base = [np.zeros(1, np.int64)], [], 0
    for c in cols:
        o = c.offsets.astype(np.int64)
        offsets.append(o[1:] - o[0] + base)
        base += int(o[-1] - o[0])
        children.append(cut(c.child, int(o[0]), int(o[-1])))
    return Lists(np.concatenate(offsets), cat(children))

"""Ragged and missing-value data on Dask: partitions, and what tasks run on them.

- `Part`: a partition between tasks, pickled as the buffers of its own rows (offsets
  rebased, masks, values), never as Python lists or the content a row slice points into
  (strings, bytes, dates and records travel as Python values);
- `concat` / `build`: partitions joined along axis 0, column trees made into lazyk arrays;
  `union` / `widen`: parts with and without missing values made one type;
- `Task`: one expression run on one partition's operands; `Combine`: partial reductions
  joined and reduced again; `FoldRows`: the same for folds that must know what each
  partition folded (missing rows under the outer rows, var rows kept below two folded
  axes); `Raw`: a partition's rows that did not fold on their own (another partition's
  empty row may stretch their level to nothing), folded by a later step, so that the
  answer never depends on where the partitions are cut.
"""
from __future__ import annotations

import hashlib
import re
from typing import Any

import numpy as np

from lazyk import types as T
from lazyk.arrays import arrmeta as M
from lazyk.arrays.array import Array, array
from lazyk.arrays.interchange import build_columns as build
from lazyk.arrays.interchange import columns as _tree
from lazyk.errors import NotSupportedError, ShapeError
from lazyk.frontend import expr as lx
from lazyk.frontend.expr import Expr, as_expr, broadcast_shapes
from lazyk.frontend.graph import (
    REDUCE_OP,
    ROWS_OP,
    SELECT_OP,
    TAKE_OP,
    Node,
    arg_key,
    picked_shape,
    rewrite,
    toposort,
)


def columns(a: Array) -> tuple:
    """`interchange.columns` of `a` with the count of rows of size 0 on their nodes
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
        return ("list", o - o[0] if lo else o, _trim(_cut(col[2], lo, hi)))
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
            col = ("option", np.ones(_entries(col), bool), col)
        return ("option", col[1], widen(col[2], elem.elem))
    if col[0] == "list":
        return ("list", col[1], widen(col[2], elem.elem))
    if col[0] == "regular":
        return ("regular", col[1], widen(col[2], elem.elem)) + col[3:]
    if col[0] == "record":
        return ("record", col[1], [widen(f, elem.field(n)) for n, f in zip(col[1], col[2])])
    return col


def _entries(col: tuple) -> int:
    kind = col[0]
    if kind == "numpy":
        return len(col[1])
    if kind == "list":
        return len(col[1]) - 1
    if kind == "option":
        return len(col[1])
    if kind == "text":
        return len(col[2]) - 1
    if kind == "record":
        return _entries(col[2][0]) if col[2] else 0
    return col[3] if len(col) > 3 else _entries(col[2]) // max(col[1], 1)


# ---------------------------------------------------------------- concatenation
def concat(parts: list) -> Array:
    """Lazyk arrays (or NumPy arrays) of one type joined along axis 0: contents joined,
    offsets shifted (NumPy; offsets-form views are read in place)."""
    arrays = [p if isinstance(p, Array) else array(np.asarray(p)) for p in parts]
    if all(a.type.elem == arrays[0].type.elem for a in arrays) and \
            all(_plain(a) for a in arrays):
        return array(np.concatenate([a.to_numpy() for a in arrays]))
    try:
        return build(_cat([_columns(a) for a in arrays]))
    except NotSupportedError:  # strings, records, `?n` rows: joined as Python values
        rows = [v for a in arrays for v in a.to_list()]
        return array(rows, T.FixedDim(len(rows), arrays[0].type.elem))


def _plain(a: Array) -> bool:
    try:
        a.to_numpy()
        return True
    except NotSupportedError:
        return False


def _cut(col: tuple, lo: int, hi: int) -> tuple:
    """Entries lo..hi of a column tree (`interchange._columns`)."""
    kind = col[0]
    if kind == "numpy":
        return ("numpy", col[1][lo:hi])
    if kind == "option":
        return ("option", col[1][lo:hi], _cut(col[2], lo, hi))
    if kind == "list":
        return ("list", col[1][lo:hi + 1], col[2])
    if kind == "text":
        return ("text", col[1], col[2][lo:hi + 1], col[3])
    if kind == "record":
        return ("record", col[1], [_cut(f, lo, hi) for f in col[2]])
    size = col[1]
    return ("regular", size, _cut(col[2], lo * size, hi * size)) + \
        (() if size else (hi - lo,))  # rows of size 0 carry their count


def _cat(cols: list) -> tuple:
    kinds = {c[0] for c in cols}
    if len(kinds) != 1 or kinds == {"regular"} and len({c[1] for c in cols}) != 1:
        raise ShapeError("partitions of different types cannot be joined")
    kind = cols[0][0]
    if kind == "numpy":
        return ("numpy", np.concatenate([c[1] for c in cols]))
    if kind == "option":
        return ("option", np.concatenate([c[1] for c in cols]), _cat([c[2] for c in cols]))
    if kind == "regular":
        return ("regular", cols[0][1], _cat([c[2] for c in cols])) + \
            (() if cols[0][1] else (sum(c[3] for c in cols),))
    if kind == "record":
        if len({tuple(c[1]) for c in cols}) != 1:
            raise ShapeError("partitions of records with other fields cannot be joined")
        return ("record", cols[0][1], [_cat(list(f)) for f in zip(*(c[2] for c in cols))])
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
        children.append(_cut(c[2], int(o[0]), int(o[-1])))
    return ("list", np.concatenate(offsets), _cat(children))


# ---------------------------------------------------------------- one partition's task
def reshaped(node: Node, srcs: tuple) -> Node:
    """`node` over new sources, with its shape computed again from theirs."""
    if node.op == REDUCE_OP:
        axes, keep = node.arg[1], node.arg[2]
        shape = tuple((1 if d in axes else n) for d, n in enumerate(srcs[0].shape)
                      if keep or d not in axes)
        return node.replace(shape=shape, srcs=srcs)
    if not srcs:
        return node
    if node.op in (SELECT_OP, TAKE_OP):
        return node.replace(shape=picked_shape(node.op, srcs[0].shape, srcs[1].shape,
                                               node.arg), srcs=srcs)
    if node.op == ROWS_OP:  # its builder typed it: only a kept outer dim follows the rows
        old, shape = node.srcs[0].shape[:1], node.shape
        if old and shape[:1] == old and srcs[0].shape[:1] != old:
            shape = srcs[0].shape[:1] + shape[1:]
        return node.replace(shape=shape, srcs=srcs)
    return node.replace(shape=broadcast_shapes(node.op, [s.shape for s in srcs]), srcs=srcs)


def _graph_key(root: Node) -> str:
    order = toposort(root)
    index = {id(n): k for k, n in enumerate(order)}
    nodes = [(n.op, n.dtype.str, n.shape, tuple(index[id(s)] for s in n.srcs), arg_key(n.arg))
             for n in order]
    return hashlib.sha256(repr(nodes).encode()).hexdigest()


class Task:
    """Runs the expression `root` (leaves named x0, x1, ...) on one partition's operands.
    `rows`: whether the result's outer rows are the operands' (errors then name the
    collection's rows); a row selection or flatten makes new rows, numbered within their
    partition (their place in the collection is known only once every partition ran)."""

    __slots__ = ("root", "numpy", "rows", "_graphs")

    def __init__(self, root: Node, numpy: bool, rows: bool = True):
        self.root, self.numpy, self.rows = root, numpy, rows
        self._graphs: dict = {}  # leaf shapes and dtypes -> the graph at those shapes

    def __call__(self, *values: Any) -> Any:
        start, stop = span_of(values)
        if not self.rows:  # new rows: errors name their place in the partition's source
            try:
                return self._run(values, None, None)
            except ValueError as err:
                raise within(err, start, stop) from None
        return self._run(values, start, stop)

    def _run(self, values: tuple, start: int | None, stop: int | None) -> Any:
        leaves = [as_expr(unwrap(v)) for v in values]
        if all(e.node.op == "input" for e in leaves):
            # NOTE: partitions of one size share the graph rebuilt at their shapes (most
            # of the per-task cost of our own on small partitions); leaves keep names x<i>.
            key = tuple((e.node.dtype, e.node.shape) for e in leaves)
            root = self._graphs.get(key)
            if root is None:
                nodes = {f"x{i}": e.node.replace(arg=f"x{i}") for i, e in enumerate(leaves)}
                root = rewrite(self.root, lambda n, s: nodes[n.arg] if n.op == "input"
                               else reshaped(n, s))
                if len(self._graphs) > 64:
                    self._graphs.clear()
                self._graphs[key] = root
            env = {f"x{i}": e.env[e.node.arg] for i, e in enumerate(leaves)}
        else:  # constants: their own nodes
            env = {}
            for e in leaves:
                env.update(e.env)
            by_name = {f"x{i}": e.node for i, e in enumerate(leaves)}
            root = rewrite(self.root, lambda n, s: by_name[n.arg] if n.op == "input"
                           else reshaped(n, s))
        folds_rows = self.root.op == REDUCE_OP and 0 in self.root.arg[1]
        try:
            out = Expr(root, env).eval()
        except ShapeError as err:
            if not folds_rows:
                raise renumbered(err, start) from None
            # NOTE: rows that do not pair here may never meet in the whole fold (another
            # partition's empty row empties their level): they go on as rows, and the
            # fold that sees every partition's rows decides.
            try:
                rows = Expr(root.srcs[0], env).eval()
            except ValueError:  # not the fold's: the error of one machine
                raise renumbered(err, start) from None
            if not may_hide(rows):
                raise renumbered(err, start) from None
            return Raw([Part(raw_form(rows, root.arg, root.dtype), start, stop)])
        except ValueError as err:  # the collection's row, not the part's
            raise renumbered(err, start) from None
        if self.numpy:
            return out.to_numpy()
        return Part(out, start, stop if folds_rows else None)

    def __reduce__(self):
        return (Task, (self.root, self.numpy, self.rows))

    def __dask_tokenize__(self):
        return ("lazyk.runtime.rows-task", _graph_key(self.root), self.numpy, self.rows)


class Combine:
    """Joins partial reductions (each with the reduced axes kept) and reduces them again.
    A partition's rows that did not fold on their own (`Raw`) join as rows; rows that
    do not fold together go on as rows, unless this step is `final` (it sees every
    partition's rows: their error is the whole fold's)."""

    __slots__ = ("arg", "dtype", "keepdims", "final")

    def __init__(self, arg: tuple, dtype: str, keepdims: bool, final: bool = True):
        self.arg, self.dtype, self.keepdims, self.final = arg, dtype, keepdims, final

    def __call__(self, *parts: Any) -> Any:
        live = tuple(p for p in parts if not isinstance(p, NoRows))
        if not live:  # no partition holds a row: the fold of no rows
            if not self.final:
                return parts[0]
            live = (parts[0].fold(),)
        parts = live
        if any(isinstance(p, Raw) for p in parts):
            return self._rows(parts)
        try:
            return self._fold(parts)
        except ShapeError:
            if self.final or not may_hide(*[unwrap(p) for p in parts]):
                raise
            return self._rows(parts)  # rows that may never meet in the whole fold

    def _rows(self, parts: tuple) -> Any:
        """Partials and rows (`Raw`) folded as rows: rows again where they do not fold
        (unless this is the last step, which sees every partition's rows)."""
        pieces = [q for p in parts for q in (p.parts if isinstance(p, Raw) else
                                             [_as_rows(p, self.arg, self.dtype)])]
        try:
            return self._fold((joined([q.array for q in pieces]),))
        except ShapeError as err:
            if self.final:
                raise renumbered(err, pieces) from None
            return Raw(pieces)

    def _fold(self, parts: tuple) -> Part:
        op, axes = self.arg[0], self.arg[1]
        skipna = len(self.arg) > 3 and bool(self.arg[3])
        initial = self.arg[4] if len(self.arg) > 4 else None
        dt = None if op in ("any", "all") else np.dtype(self.dtype)
        given = parts
        parts = [unwrap(p) for p in parts]
        x = concat(parts) if len(parts) > 1 else parts[0]
        inner = _ones(x, axes)
        if inner:  # e.g. `k * ?var * 1 * T` over (0, 2) folds as `k * ?var * T` over 0
            x = build(_squeeze(_columns(x), inner))
            axes = (0,)
        try:
            out = lx.reduce(op, x, axis=axes, keepdims=self.keepdims, skipna=skipna,
                            dtype=dt, initial=initial).eval()
        except ValueError as err:  # ShapeError: the collection's rows, not the partials'
            raise renumbered(err, given) from None
        if inner and self.keepdims:
            out = build(_unsqueeze(_columns(out), inner))
        spans = [(p.start, p.stop) for p in given if isinstance(p, Part)]
        if len(spans) == len(given) and all(a is not None for a, _ in spans):
            return Part(out, spans[0][0], spans[-1][1])
        return Part(out)

    def __reduce__(self):
        return (Combine, (self.arg, self.dtype, self.keepdims, self.final))

    def __dask_tokenize__(self):
        return ("lazyk.runtime.rows-combine", arg_key(self.arg), self.dtype, self.keepdims,
                self.final)


class NoRows:
    """A partition without rows (rows selected or flattened: how many is known only when
    computed) in a fold over the rows' axis: it adds nothing (its partial's empty rows
    would not line up with the others'), unless no partition holds a row; then its
    partial (`fold()`) is the fold of no rows."""

    __slots__ = ("task", "rows")

    def __init__(self, task: Any, rows: Any):
        self.task, self.rows = task, rows

    def fold(self) -> Any:
        return self.task(self.rows)

    def __reduce__(self):
        return (NoRows, (self.task, self.rows))


def unless_empty(task: Any, rows: Any) -> Any:
    """The partial fold `task(rows)` of one partition, or `NoRows` when it holds none."""
    a = unwrap(rows)
    if isinstance(a, Array) and isinstance(a.type, T.FixedDim) and a.type.size == 0:
        return NoRows(task, rows)
    return task(rows)


class Raw:
    """Partitions' rows (and partials made rows: `raw_form`) that did not fold on their
    own: the rows they pair with may never meet in the whole fold, since another
    partition's empty row can empty their level. Later steps fold them with the rest.
    `parts`: `Part`s naming the collection's rows they hold (or folded), for errors."""

    __slots__ = ("parts",)

    def __init__(self, parts: list):
        self.parts = parts

    def __reduce__(self):
        return (Raw, (self.parts,))


def may_hide(*arrays: Array) -> bool:
    """Whether rows that do not pair in `arrays` might never meet in a whole fold: only
    below a var row of length 1 (which another partition's empty row stretches to
    nothing) above the last var level; elsewhere their error is the whole fold's."""
    for a in arrays:
        col = _columns(a) if isinstance(a, Array) and isinstance(a.type, T.FixedDim) \
            else None
        while col is not None and col[0] in ("option", "list", "regular"):
            below = col[2]
            if col[0] == "list" and "list" in _kinds(below) and \
                    bool((np.diff(col[1]) == 1).any()):
                return True
            col = below
    return False


def _kinds(col: tuple) -> list:
    out = []
    while col[0] in ("option", "list", "regular"):
        out.append(col[0])
        col = col[2]
    return out


def _as_rows(p: Any, arg: tuple, dtype: Any) -> Part:
    """A partial (`Part`) as rows that fold with a partition's rows."""
    return Part(raw_form(unwrap(p), arg, dtype), getattr(p, "start", None),
                getattr(p, "stop", None))


def raw_form(a: Array, arg: tuple, dtype: Any) -> Array:
    """Rows or a partial of a fold `arg` as rows that fold with each other: values in
    the fold's dtype, the folded inner fixed dims made var (a partial's 1 and the rows'
    n fold alike)."""
    dt = np.dtype(bool) if arg[0] in ("any", "all") else np.dtype(dtype)
    if a.dtype != dt:
        a = lx.astype(a, dt).eval()
    inner = sorted(d for d in arg[1] if d)
    t, fixed = a.type, []
    for d in range(1, max(inner, default=0) + 1):
        t = t.elem
        t = t.elem if isinstance(t, T.Option) else t
        if d in inner and isinstance(t, T.FixedDim):
            fixed.append(d)
    if not fixed:
        return a
    col = _columns(a)
    for d in fixed:
        col = _var_at(col, d)
    return build(col)


def _var_at(col: tuple, axis: int) -> tuple:
    """A column tree whose fixed dim `axis` (>= 1) is a var one (rows of its size)."""
    kind = col[0]
    if kind == "option":
        return ("option", col[1], _var_at(col[2], axis))
    if kind == "list":
        return col if axis == 1 else ("list", col[1], _var_at(col[2], axis - 1))
    if axis > 1:
        return ("regular", col[1], _var_at(col[2], axis - 1)) + col[3:]
    return ("list", np.arange(_entries(col) + 1, dtype=np.int64) * col[1], col[2])


def joined(arrays: list) -> Array:
    """Arrays of rows joined along axis 0, with options wherever one has them."""
    if len(arrays) == 1:
        return arrays[0]
    elem = arrays[0].type.elem
    for a in arrays[1:]:
        elem = union(elem, a.type.elem)
    return build(_cat([widen(_columns(a), elem) for a in arrays]))


def _ones(x: Any, axes: tuple) -> tuple:
    """The axes other than 0 to squeeze before folding partials of `x` over `axes`: all of
    them when each is a fixed dim of 1 (the partials' kept axes) below missing rows
    (`?var`), whose loop nest folds `k * ?var * T` over axis 0 but not `k * ?var * 1 * T`
    over (0, 2); else ()."""
    inner = tuple(sorted(a for a in axes if a))
    if 0 not in axes or not inner or not isinstance(x, Array) or \
            not x.type.missing_var_rows:
        return ()
    t = x.type
    for d in range(1, max(inner) + 1):
        t = t.elem
        if isinstance(t, T.Option):
            if d in inner:
                return ()
            t = t.elem
        if d in inner and not (isinstance(t, T.FixedDim) and t.size == 1):
            return ()
    return inner


def _at(col: tuple, axis: int, fn: Any) -> tuple:
    """A column tree with `fn` applied to the node of dim `axis` (1: the first below the
    outer rows; an option above a dim's node belongs to it)."""
    if axis == 1:
        return fn(col)
    kind = col[0]
    if kind == "option":
        return ("option", col[1], _at(col[2], axis, fn))
    if kind in ("list", "regular"):
        return (kind, col[1], _at(col[2], axis - 1, fn)) + col[3:]
    raise ShapeError(f"no dimension {axis} in a column of {kind}")


def _squeeze(col: tuple, axes: tuple) -> tuple:
    """The fixed dims of 1 at `axes` (>= 1) taken out of a column tree."""
    for a in sorted(axes, reverse=True):
        col = _at(col, a, lambda c: c[2])
    return col


def _unsqueeze(col: tuple, axes: tuple) -> tuple:
    """Fixed dims of 1 put in at `axes` (>= 1, of the result)."""
    for a in sorted(axes):
        col = _at(col, a, lambda c: ("regular", 1, c))
    return col


class Folded:
    """A partial reduction over the rows' axis that knows what it folded: `value` folds the
    partition's present rows, `rows` says whether anything reached the kept levels (a
    partial of nothing is an empty row that must not pair with other partitions' rows),
    `missing` is one missing row or its fold (None without one): the result unless
    `skipna`."""

    __slots__ = ("value", "rows", "missing")

    def __init__(self, value: Part, rows: bool, missing: Any):
        # `value` stays a Part: the rows it folded name the rows in errors
        self.value, self.rows, self.missing = value, rows, unwrap(missing)

    def __reduce__(self):
        return (Folded, (self.value, self.rows,
                         None if self.missing is None else Part(self.missing)))


class FoldRows(Combine):
    """Partial (`first`), combining or final step of a reduction over the rows' axis of
    data with missing rows right under the outer rows (`N * ?var * ...`) or with var rows
    kept below two folded axes: folds what is present and keeps `Folded` bookkeeping, so
    that partitions folding nothing add nothing and a missing row makes the result
    missing without hiding a row-length mismatch."""

    __slots__ = ("depth", "stage", "elem")

    def __init__(self, arg: tuple, dtype: str, keepdims: bool, depth: int, stage: str,
                 elem: str | None = None):
        super().__init__(arg, dtype, keepdims)
        self.depth, self.stage = depth, stage  # levels above the first kept one; step
        # NOTE: over missing rows under the outer rows (`elem`: the rows' type), partials
        # fold the present rows as plain var rows (a fold over `?var` rows can give `?n`
        # rows, which are results, not operands) and carry one missing row as it is; the
        # last step folds them again as rows of `elem`, for one machine's result type.
        self.elem = elem

    def __call__(self, *parts: Any) -> Any:
        final = self.stage == "final"
        if self.stage == "first":
            x, span = unwrap(parts[0]), span_of(parts)
            try:
                return self._partial(x, span)
            except ShapeError:  # rows that may never meet in the whole fold: as rows
                if not may_hide(x):
                    raise
                return Raw([Part(raw_form(x, self.arg, self.dtype), *span)])
        parts = [unwrap(p) for p in parts]
        if any(isinstance(p, Raw) for p in parts):
            pieces = self._rows(parts)
            try:
                parts = [self._partial(joined([q.array for q in pieces]), (None, None))]
            except ShapeError as err:
                if final:
                    raise renumbered(err, pieces) from None
                return Raw(pieces)
        live = [f.value for f in parts if f.rows] or \
            [f.value for f in parts[:1] if f.value is not None]
        missing = next((f.missing for f in parts if f.missing is not None), None)
        again = self if not final or self.elem is None else \
            Combine(self.arg[:2] + (True,) + self.arg[3:], self.dtype, True)
        try:
            value = Combine.__call__(again, *live) if live else None  # lengths checked
        except ShapeError:
            if final or not may_hide(*[unwrap(v) for v in live]):
                raise
            return Raw(self._rows(parts))
        if not final:
            return Folded(value, any(f.rows for f in parts), missing)
        if self.elem is not None:
            # what the partials folded, a missing row, and no rows of `elem`: a fold of
            # nothing (no partial folded a row) is the fold of no rows of `elem`
            rows = [raw_form(unwrap(value), self.arg, self.dtype)] \
                if any(f.rows for f in parts) else []
            rows += [] if missing is None else [raw_form(missing, self.arg, self.dtype)]
            none = array([], f"0 * {self.elem}")  # no rows: the type of the rows
            rows.append(raw_form(none, self.arg, self.dtype))
            return Combine.__call__(self, joined(rows))
        skipna = len(self.arg) > 3 and bool(self.arg[3])
        return Combine.__call__(self, missing) if missing is not None and not skipna \
            else Part(value.array)

    def _rows(self, parts: list) -> list:
        """Partials (`Folded`: what they folded, their missing row) and rows as rows."""
        rows = []
        for p in parts:
            if isinstance(p, Raw):
                rows += p.parts
                continue
            if p.rows:
                rows.append(_as_rows(p.value, self.arg, self.dtype))
            if p.missing is not None:
                rows.append(Part(raw_form(p.missing, self.arg, self.dtype)))
        return rows

    def _partial(self, x: Array, span: tuple) -> Folded:
        start = span[0]
        col, missing, rows = _columns(x), None, start
        if col[0] == "option":  # missing rows: fold the present ones
            mask = np.asarray(col[1], bool)
            if not mask.all():
                rows = np.flatnonzero(mask) + (start or 0)  # the present rows' numbers
                gone = int(np.argmin(mask))
                missing = build(_cut(col, gone, gone + 1))
                edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.view(np.int8),
                                                               [0]])))
                runs = list(zip(edges[::2], edges[1::2])) or [(0, 0)]
                col = _cat([("option", np.ones(b - a, bool), _cut(col[2], a, b))
                            for a, b in runs])
                x = build(col)
            if self.elem is not None:  # the present rows as var rows
                col = col[2]
                x = build(col)
        lo, hi = 0, _entries(col)  # the entries of these rows at each level down
        for _ in range(self.depth):
            while col[0] == "option":
                col = col[2]
            if col[0] == "list":
                lo, hi = int(col[1][lo]), int(col[1][hi])
            else:
                lo, hi = lo * col[1], hi * col[1]
            col = col[2]
        n = hi - lo
        keep = Combine(self.arg, self.dtype, True)
        try:
            value = Part(keep(x).array, *span)
        except ValueError as err:  # ShapeError: the collection's row, not the part's
            if self.elem is None or n:
                raise renumbered(err, rows) from None
            value = None  # a fold of nothing (a min of no values): the last step's
        if missing is not None and self.elem is None:
            missing = keep(missing)
        return Folded(value, n > 0, missing)

    def __reduce__(self):
        return (FoldRows, (self.arg, self.dtype, self.keepdims, self.depth, self.stage,
                           self.elem))

    def __dask_tokenize__(self):
        return ("lazyk.runtime.rows-fold", arg_key(self.arg), self.dtype, self.keepdims, self.depth,
                self.stage, self.elem)



def nonempty(op: str, value: Any, count: Any) -> Any:
    """`value`, unless some result of the reduction folded nothing (NumPy's ValueError)."""
    n = unwrap(count)
    try:
        flat = n.to_numpy() if isinstance(n, Array) else np.asarray(n)
    except NotSupportedError:  # ragged counts (a reduction's result: small) as lists
        flat, stack = [], [n.to_list()]
        while stack:
            v = stack.pop()
            if isinstance(v, list):
                stack.extend(v)
            else:
                flat.append(v)
    if (np.asarray(flat) == 0).any():
        raise ValueError(f"zero-size array to reduction operation {op}imum which has no "
                         "identity")
    return value

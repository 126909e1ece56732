"""Ragged and missing-value data on Dask: one expression run on one partition (`Task`).

The expression's graph is rebuilt at the partition's shapes (`reshaped`; partitions of one
size share it); errors name the collection's rows. A fold over the rows' axis whose rows do
not pair within the partition hands them on as rows (`folds.Raw`), for the step that sees
every partition to decide.
"""
from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from lazyk.dask.folds import Raw, may_hide, raw_form
from lazyk.dask.partitions import Part, renumbered, span_of, unwrap, within
from lazyk.errors import NotSupportedError, ShapeError
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import (
    REDUCE_OP,
    Node,
    arg_key,
    graph_ops,
    rewrite,
    toposort,
)
from lazyk.frontend.operands import as_expr
from lazyk.frontend.records import Records
from lazyk.frontend.rowops import fill_none
from lazyk.frontend.tuples import reshaped
from lazyk.lru import Memo
from lazyk.runtime.ragged_rules import inline_reductions


def _graph_key(root: Node) -> str:
    order = toposort(root)
    index = {id(n): k for k, n in enumerate(order)}
    nodes = [(n.op, n.dtype.str, n.shape, tuple(index[id(s)] for s in n.srcs), arg_key(n.arg))
             for n in order]
    return hashlib.sha256(repr(nodes).encode()).hexdigest()


def plain(out: Any, root: Any) -> np.ndarray:
    """`out` as the NumPy array of `root`'s fixed shape: rows of 1 that one machine gives
    as var rows (a fold over rows of 1 that may be missing) fit it."""
    try:
        return out.to_numpy()
    except NotSupportedError:
        if out.type.missing_values:
            raise
        got = np.asarray(out.to_list(), root.dtype)
        if got.ndim != root.ndim or any(isinstance(n, int) and n != m
                                        for n, m in zip(root.shape, got.shape)):
            raise
        return got


class Task:
    """Runs the expression `root` (leaves named x0, x1, ...) on one partition's operands.
    `rows`: whether the result's outer rows are the operands' (errors then name the
    collection's rows); a row selection or flatten makes new rows, numbered within their
    partition (their place in the collection is known only once every partition ran)."""

    __slots__ = ("root", "numpy", "rows", "bins", "_graphs")

    def __init__(self, root: Node, numpy: bool, rows: bool = True, bins: bool = False):
        # `bins`: a histogram's bins or weights, where a min / max that folds nothing
        # counts nowhere (bin -1, weight 0), as on one machine, not a ValueError
        self.root, self.numpy, self.rows = root, numpy, rows
        self.bins = bins
        # leaf shapes and dtypes -> the graph rebuilt at those shapes
        self._graphs = Memo(64, "task graphs")

    def __call__(self, *values: Any) -> Any:
        start, stop = span_of(values)
        if not self.rows:  # new rows: errors name their place in the partition's source
            try:
                return self._run(values, None, None)
            except (ValueError, IndexError) as err:
                raise within(err, start, stop) from None
        return self._run(values, start, stop)

    def _run(self, values: tuple, start: int | None, stop: int | None) -> Any:
        leaves = [as_expr(unwrap(v)) for v in values]
        if all(e.node.op == "input" for e in leaves):
            # NOTE: partitions of one size share the graph rebuilt at their shapes (most
            # of the per-task cost of our own on small partitions); leaves keep names x<i>.
            env = {f"x{i}": e.env[e.node.arg] for i, e in enumerate(leaves)}
            # (a leaf's kind too: a min / max with `initial` is built for its leaves)
            key = tuple((e.node.dtype, e.node.shape, type(v)) for e, v in
                        zip(leaves, env.values()))
            root = self._graphs.get(key)
            if root is None:
                nodes = {f"x{i}": e.node.replace(arg=f"x{i}") for i, e in enumerate(leaves)}
                root = rewrite(self.root, lambda n, s: nodes[n.arg] if n.op == "input"
                               else reshaped(n, s, env))
                self._graphs.put(key, root)
        else:  # constants: their own nodes
            env = {}
            for e in leaves:
                env.update(e.env)
            by_name = {f"x{i}": e.node for i, e in enumerate(leaves)}
            root = rewrite(self.root, lambda n, s: by_name[n.arg] if n.op == "input"
                           else reshaped(n, s, env))
        folds_rows = self.root.op == REDUCE_OP and 0 in self.root.arg[1]
        try:
            e = Expr(root, env)
            if self.bins and REDUCE_OP in graph_ops(root):
                e = inline_reductions(root, e, empty_missing=True)[1]
                e = fill_none(e, -1 if root.dtype.kind in "iu" else 0) if \
                    e.type.missing_values else e
            out = e.eval()
        except ShapeError as err:
            if not folds_rows:
                raise renumbered(err, start) from None
            # NOTE: rows that do not pair here may never meet in the whole fold (another
            # partition's empty row empties their level), and where they do, an earlier
            # partition's rows may not fold with them first: they go on as rows, and the
            # fold that sees every partition's rows in order decides (one machine's error,
            # whichever partition the scheduler runs first).
            try:
                rows = Expr(root.srcs[0], env).eval()
            except ValueError:  # not the fold's: the error of one machine
                raise renumbered(err, start) from None
            if start is None and not may_hide(rows):  # (rows a selection numbered)
                raise renumbered(err, start) from None
            return Raw([Part(raw_form(rows, root.arg, root.dtype), start, stop)])
        except (ValueError, IndexError) as err:  # the collection's row, not the part's
            raise renumbered(err, start) from None
        if self.numpy:
            return plain(out, self.root)
        return Part(out, start, stop if folds_rows else None)

    def __reduce__(self):
        return (Task, (self.root, self.numpy, self.rows, self.bins))

    def __dask_tokenize__(self):
        return ("lazyk.runtime.rows-task", _graph_key(self.root), self.numpy, self.rows,
                self.bins)


def records_shape(rec: Records) -> tuple:
    """(depth, tuple?, [(name, records_shape or None for an expression field)], present
    flags?): what `zip_part` rebuilds the records from (no expression travels with the
    tasks)."""
    return (rec._depth, rec.is_tuple, tuple((k, records_shape(f) if isinstance(f, Records)
                                             else None) for k, f in rec.items()),
            rec.present is not None)


def zip_part(shape: tuple, *parts: Any) -> Part:
    """One partition of records: the partitions of their fields and present flags
    (`record_layout.with_flags` order) laid out as one array of records, as `Records.eval`
    does on one machine."""
    values = iter(unwrap(p) for p in parts)

    def rebuilt(s):
        depth, is_tuple, fields, flags = s
        got = {k: rebuilt(f) if f is not None else as_expr(next(values)) for k, f in fields}
        return Records(got, depth, is_tuple, present=as_expr(next(values)) if flags else None)
    start, _ = span_of(parts)
    return Part(rebuilt(shape).eval(), start)

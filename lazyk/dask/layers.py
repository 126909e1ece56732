"""Ragged and missing-value data on Dask: expressions over collections turned into layers.

`lazyk.dask.evaluate(expr)` over `RaggedArray`s (`lazyk.dask.collection`, made by
`lazyk.dask.sources`) turns the expression into Dask layers:

- the work that keeps the rows (elementwise, reductions over inner axes) is ONE blockwise
  layer whose tasks run lazyk's kernels on one partition each. A result with var dims or
  missing values is a `RaggedArray` with the same partitioning; a plain result is a
  `dask.array` whose chunks along axis 0 are the partitions' row counts;
- a reduction over axis 0 (or all axes) runs per partition (keepdims), then lazyk combines
  the partial results in a tree (`sum prod min max any all count mean`, `skipna`,
  `skipnan`, `initial`; `lazyk.dask.folds`): a single-partition `RaggedArray`, or a
  `dask.array` when plain.
  Over missing rows right under the outer rows (`N * ?var * ...`), or keeping var rows
  below two folded axes, each partial says what it folded (`folds.FoldRows`): a
  partition folding nothing adds nothing, a missing row makes the result missing (unless
  `skipna`) while the present rows must still line up. Over missing rows deeper down
  (`N * var * ?var * T`) one task joins the partitions' rows and folds them (a partial
  would hide the lengths of the present rows it folded into a missing one, and a `skipna`
  partial of only missing rows is an empty row: docs/dask.md says what it costs).
  A larger expression may use it (`r - r.mean(axis=0)`): every partition task receives it.
  Rows that do not pair within a partition go on as rows (`folds.Raw`; below a var row
  of length 1, another partition's empty row may stretch them to nothing): the step
  that sees every partition in order decides, so the answer (or error, and the row it
  names) is one machine's whatever the cuts and the scheduler's order. Folds over
  `N * ?var * ...` rows against a fixed dim give `?n` results: a collection that
  computes, not an operand (as on one machine).
- a row selection (`x[mask]`, a mask of one dim) or `flatten` at axis 0, 1 or None runs in
  each partition too, which keeps its kept rows: their counts are known once computed
  (`nan` row counts and chunk sizes, as Dask's boolean indexing; `compute_row_counts()`).
  Work after it fuses into the same tasks; reductions over the rows' axis fold each
  partition's computed rows (a partition left with none adds nothing); `num` at axis 0
  sums the partitions' row counts. Work that needs the whole collection's rows (positions,
  order or running folds along axis 0, gathers of rows, `pad_none` / `concatenate` at axis
  0) is refused by name (`lazyk.dask.rowwork`), and so are selected rows meeting rows not
  selected alike (they need not line up partition by partition).

Elements are numbers, `?T`, strings or bytes (`(r == "kiwi").sum(axis=-1)`,
`lazyk.str_len(b)`; their partitions travel between processes and join as Python values)
or records (`RaggedRecords`: `r.x` is a field collection, an operand; the records
themselves are not). Collections hold date and time elements too; expressions over them
raise UnsupportedOperandError, as on one machine.

Operands: collections with the same row counts per partition (else ShapeError naming the
operands and the counts); NumPy, fixed lazyk and Dask arrays join, split by the same rows
when their axis 0 is the rows' axis, else passed whole to every task; Python scalars.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from dask.base import tokenize
from dask.blockwise import blockwise
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

from lazyk import types as T
from lazyk.arrays.array import Array
from lazyk.dask.collection import (
    RaggedArray,
    RowsLeaf,
    computable,
    temporal,
)
from lazyk.dask.folds import Combine, FoldRows, nonempty, unless_empty
from lazyk.dask.rowwork import COUNTS, KEEPS, mixed, row_effect, unsplit
from lazyk.dask.sources import block_data, fixed_type
from lazyk.dask.tasks import Task
from lazyk.errors import (
    BindError,
    NotSupportedError,
    ShapeError,
    UnsupportedOperandError,
)
from lazyk.frontend import expr as lx
from lazyk.frontend import ops, rowops
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import (
    PICK_OP,
    REDUCE_OP,
    ROWS_OP,
    SELECT_OP,
    TAKE_OP,
    Node,
    arg_key,
    rewrite,
    toposort,
)
from lazyk.frontend.leaves import DaskLeaf, OwnedView, Placeholder, RaggedLeaf, is_text, leaf_data
from lazyk.frontend.numpy_rules import cast, partial_dtype


# ---------------------------------------------------------------- expression -> layers
def evaluate_rows(e: Expr, split_every: Any = None, bins: bool = False) -> Any:
    """`lazyk.dask.evaluate` for an expression with `RaggedArray` leaves (see module doc);
    `bins`: a histogram's bins or weights (a min / max that folds nothing counts nowhere)."""
    return _Planner(e, split_every, bins).run()


_NOT_ELEMENTWISE = (REDUCE_OP, ROWS_OP, SELECT_OP, TAKE_OP, PICK_OP)


class _Planner:
    """Turns one expression over collections into Dask layers (`run`)."""

    def __init__(self, e: Expr, split_every: Any, bins: bool = False):
        self.bins = bins
        # Dask array leaves are typed like placeholders here (the array is kept aside).
        self.dask = {k: leaf_data(v) for k, v in e.env.items()
                     if isinstance(leaf_data(v), DaskLeaf)}
        self.env = {k: Placeholder(k, v.shape, v.dtype) if k in self.dask else v
                    for k, v in e.env.items()}
        self.root = e.node
        self._computable()
        if isinstance(split_every, dict):  # per axis, as dask.array: the rows' axis
            split_every = split_every.get(0)
        self.split_every = max(2, int(split_every or 8))
        self.rows: dict = {}  # leaf name -> RaggedArray (partitioned or whole)
        # nodes whose axis 0 is the partitioned rows' axis, by id: (node, whether they are
        # the collections' own rows, of known counts, or rows a selection / flatten made)
        self.split: dict = {}
        self.made: dict = {}  # split nodes by id -> what made their rows (None: their own)
        self.nparts = 1
        self.counts = self._counts()  # the known rows per partition (None: no such leaf)
        # leaves that elementwise work reads with fewer dims than it has: they broadcast
        # from the right, so their axis 0 is not the rows' (`x * w`, w one weight per item)
        self.trailing = {s.arg for n in toposort(self.root) if n.op not in _NOT_ELEMENTWISE
                         for s in n.srcs if s.op == "input" and 0 < s.ndim < n.ndim}
        self.trailing |= self._apart()

    def _apart(self) -> set:
        """Leaves that never meet the collections' rows along their axis 0 (`sum(x, axis=0)
        + w`: w pairs with the fold, not with the rows), whatever their length."""
        nodes = toposort(self.root)
        rows: set = set()  # nodes whose axis 0 is the collections' rows
        for n in nodes:
            if n.op == "input":
                if isinstance(self.env.get(n.arg), RowsLeaf):
                    rows.add(id(n))
            elif any(id(s) in rows for s in n.srcs) and not (
                    n.op == REDUCE_OP and 0 in n.arg[1]):
                rows.add(id(n))
        for n in reversed(nodes):  # (each node before its operands)
            if id(n) in rows and not (n.op == REDUCE_OP and 0 in n.arg[1]):
                rows.update(id(s) for s in n.srcs  # (right-aligned: the same ndim)
                            if n.op in (SELECT_OP, TAKE_OP, ROWS_OP) or s.ndim == n.ndim)
        return {n.arg for n in nodes if n.op == "input" and id(n) not in rows}

    # --- operands
    def _computable(self) -> None:
        """UnsupportedOperandError, as on one machine, for work on collections whose
        elements expressions do not take (dates, times: collections only hold them)."""
        for node in toposort(self.root):
            for s in node.srcs:
                v = self.env.get(s.arg) if s.op == "input" else None
                if isinstance(v, RowsLeaf):
                    try:
                        computable(v.rows.type)
                    except NotSupportedError as err:
                        what = node.arg[0] if node.op == REDUCE_OP else node.op
                        held = "; collections hold date and time elements, " \
                            "expressions do not" if "?" not in str(err) else ""
                        raise UnsupportedOperandError(
                            f"{what}: unsupported operand type {v.rows.type} ({err}"
                            f"{held})") from None

    def _counts(self) -> tuple | None:
        seen = [v.rows for v in self.env.values()
                if isinstance(v, RowsLeaf) and v.rows.row_counts is not None]
        if not seen:
            return None
        parts = {r.npartitions for r in seen}
        if len(parts) > 1:
            raise ShapeError(
                "the partitioned operands are split differently: "
                f"{' and '.join(f'{r.type} in {r.npartitions} partitions' for r in seen)}; "
                "build them with the same rows per partition")
        self.nparts = parts.pop()
        known = [r for r in seen if r.rows_known]  # (rows selected: known once computed)
        if not known:
            return None
        a, counts = known[0], known[0].row_counts
        for r in known[1:]:
            if r.row_counts != counts:
                raise ShapeError(
                    f"the partitioned operands are split differently: {a.type} in "
                    f"{a.npartitions} partitions of {_show(counts)} rows and {r.type} in "
                    f"{r.npartitions} partitions of {_show(r.row_counts)} rows; build them "
                    "with the same rows per partition")
        return counts

    def _operand(self, name: str) -> RaggedArray:
        """Leaf `name` as a collection: split by the rows when its axis 0 is theirs."""
        got = self.rows.get(name)
        if got is not None:
            return got
        v = self.env[name]
        if isinstance(v, RowsLeaf):
            r = v.rows
        else:
            data = self.dask.get(name) or leaf_data(v)
            if isinstance(data, DaskLeaf):
                r = _dask_rows(data.array, self._split_here(data.array.shape, name))
            elif isinstance(data, Placeholder):
                raise BindError(f"placeholder {name!r} has no data: lazyk.compile the "
                                "expression and call it on each partition")
            elif isinstance(data, RaggedLeaf) and not data.array.type.ndim:
                # a lazyk scalar (a missing one too: `lazyk.mask`'s): whole to every partition
                r = _numpy_rows(data.array if data.option else
                                np.asarray(data.array.to_numpy()), None)
            elif _fixed_shape(data) is not None:  # fixed dims of `?T`: views, as NumPy's
                r = _numpy_rows(data.array, self._split_here(_fixed_shape(data), name))
            elif isinstance(data, RaggedLeaf):
                raise NotSupportedError(
                    f"a lazyk array of type {data.array.type} in an expression over "
                    "partitioned rows: make it a collection too, lazyk.dask.from_ragged(x, "
                    "rows_per_part), with the same rows per partition")
            elif isinstance(v, OwnedView) and is_text(np.asarray(data).dtype):  # strings
                r = _numpy_rows(v.owner, self._split_here(v.owner.type.shape, name))
            else:
                data = np.asarray(data)
                r = _numpy_rows(data, self._split_here(data.shape, name))
        self.rows[name] = r
        return r

    def _split_here(self, shape: tuple, name: str) -> tuple | None:
        """The row counts when operand `name` of this shape is split by the rows (its axis
        0 is as long as theirs and lines up with them), else None (it goes whole to every
        task)."""
        n = sum(self.counts) if self.counts else None
        if self.counts and len(shape) >= 1 and shape[0] == n and name not in self.trailing:
            return self.counts
        return None

    # --- the graph
    def run(self) -> Any:
        root = rewrite(self.root, self._visit)
        if root.op == "input":
            r = self._operand(root.arg)
            v = self.env[root.arg]
            if isinstance(v, RowsLeaf) and (not _is_plain(Expr(root, self.env)) or
                                            temporal(v.rows.type.dtype)):
                return r
        split = self._is_split(root)
        return self._layer(root, whole=not split, prefix="lazyk-rows",
                           known=not split or self._known(root))

    def _is_split(self, node: Node) -> bool:
        return id(node) in self.split

    def _known(self, node: Node) -> bool:
        """Whether split `node`'s rows are the collections' own (row counts known), not
        rows that a selection or flatten made (known only once computed)."""
        return self.split[id(node)][1]

    def _row_counts(self, known: bool) -> tuple:
        return self.counts if known else (math.nan,) * self.nparts

    def _visit(self, node: Node, srcs: tuple) -> Node:
        if srcs != node.srcs:
            node = node.replace(srcs=srcs)
        if node.op == "input":
            v = self.env[node.arg]
            if isinstance(v, RowsLeaf):
                if v.rows.row_counts is not None:
                    self.split[id(node)] = (node, v.rows.rows_known)
                return node
            data = leaf_data(v)
            shape = getattr(data, "shape", None) or _fixed_shape(data)
            if shape is not None and self._split_here(tuple(shape), node.arg):
                self.split[id(node)] = (node, True)
            return node
        lines = {self._known(s) for s in srcs if self._is_split(s)}
        if not lines:
            return node
        effect = row_effect(node, srcs)
        if effect == COUNTS:  # the rows of every partition counted, then summed
            rows = Expr(node.srcs[0], self.env)
            return rewrite(lx.count(rowops.is_none(rows, axis=0), axis=0).node, self._visit)
        if len(lines) > 1:
            raise mixed(node)
        made = {self.made.get(id(s)) for s in srcs if self._is_split(s)}
        if len(made) > 1:  # (rows two masks made: a partition's counts may differ)
            raise mixed(node, "rows selected by different masks (or flattened from "
                              "different arrays) meet")
        known = lines.pop()
        picks = node.op in (SELECT_OP, TAKE_OP, ROWS_OP, PICK_OP)  # operands line up from axis 0
        for s in srcs:
            if not self._is_split(s) and not known and s.ndim and s.shape[0] != 1 and \
                    (picks or s.ndim == node.ndim):
                raise unsplit(node, s)
            if self._is_split(s) and s.ndim != node.ndim and not picks and node.op != REDUCE_OP:
                raise ShapeError(
                    f"{node.op}: an operand split by rows ({s.type_text()}) must have as many "
                    f"dims as the result ({node.type_text()}): its axis 0 holds the rows")
        if node.op == REDUCE_OP and 0 in node.arg[1]:
            return self._global(node)
        self.split[id(node)] = (node, known and effect == KEEPS)
        self.made[id(node)] = made.pop() if effect == KEEPS else \
            node.srcs[1] if node.op == SELECT_OP else node  # (what made its rows)
        return node

    def _global(self, node: Node) -> Node:
        """A reduction over the rows' axis: one partial per partition (the reduced axes
        kept), combined by lazyk in a tree of `split_every` fan-in."""
        op, axes = node.arg[:2]
        if op == "mean":
            return rewrite(self._mean(node).node, self._visit)
        wide = partial_dtype(op, node.dtype)
        if wide != node.dtype and not Expr(node, self.env).type.missing_fixed_rows:
            # float32 partials add in float64, rounded once at the end (not where the
            # result has `?n` rows: results, not operands of that rounding)
            src = self._visit(cast(node.srcs[0], wide), node.srcs)
            got = self._global(Node(REDUCE_OP, wide, node.shape, (src,), node.arg))
            return self._visit(cast(got, node.dtype), (got,))
        row = ops.OPS.get(op)
        if row is None or row.combine is None:
            raise NotSupportedError(f"{op} over axis 0 of partitioned rows")
        src_type = Expr(node.srcs[0], self.env).type
        if _missing_ones(src_type):
            # NOTE: rows of 1 that may be missing (a take-back at argmax(keepdims=True) of
            # `?var` rows) fold as rows of 1 that stretch: a partition of missing rows only
            # would give an empty row that wins: the partitions' rows joined, then folded
            return self._gathered(node)
        under = src_type.elem if isinstance(src_type, (T.FixedDim, T.VarDim)) else None
        outer_missing = isinstance(under, T.Option) and isinstance(under.elem, T.VarDim)
        if (under.elem.elem if outer_missing else src_type).missing_var_rows:
            # NOTE: a fold of deeper missing rows is one missing row in its partial, which
            # no longer tells the present rows' lengths that must line up with the others:
            # the partitions' rows are joined and folded in one task instead.
            return self._gathered(node)
        kept = [d for d in range(len(node.srcs[0].shape)) if d not in axes]
        deep = bool(kept) and kept[0] >= 2 and any(
            _is_var(d) for d in Expr(node, self.env).type.dims)
        dims = src_type.dims
        folds_var = [a for a in axes if a > 1 and _is_var(dims[a])]
        if kept and kept[0] == 1 and folds_var and (
                any(_is_var(dims[j]) and j > min(folds_var) for j in kept) or
                ops.OPS[op].no_empty_fold and (len(node.arg) <= 4 or node.arg[4] is None)):
            # NOTE: a partial that folds no row along a var axis (under a kept row) has no
            # length for the var rows kept below it, which must line up with the others',
            # and a min / max of nothing there is a missing value that would poison them:
            # one task joins the partitions' rows and folds them.
            return self._gathered(node)
        if outer_missing and kept and ops.OPS[op].no_empty_fold and (
                len(node.arg) <= 4 or node.arg[4] is None) and \
                any(_is_var(dims[a]) for a in axes if a > kept[0]):
            # NOTE: a min / max over var rows below a kept dim folds nothing where a
            # partition's rows there are empty, which others may fill: joined, then folded
            return self._gathered(node)
        src = Expr(node.srcs[0], self.env)
        if ops.OPS[op].no_empty_fold and len(node.arg) <= 4 and not lx.has_options(src) and \
                node.dtype.kind in "biuf":
            return self._seeded(node, src)
        arg = (op, axes, True) + node.arg[3:]
        # NOTE: min / max of ?T data without `initial` fold nothing to a missing value that
        # would poison the others: where a partition may fold nothing (every axis above
        # the first kept one folded), partials say whether they folded anything.
        unseeded = ops.OPS[op].no_empty_fold and (len(node.arg) <= 4 or node.arg[4] is None) \
            and lx.has_options(src) and (not kept or kept[0] >= 2)
        if outer_missing or deep or unseeded:
            return self._fold_rows(node, arg, kept[0] - 1 if kept else len(src.shape) - 1,
                                   str(under) if outer_missing else None)
        src = node.srcs[0]
        shape = tuple(1 if d in axes else n for d, n in enumerate(src.shape))
        if self._known(src):
            parts = self._layer(Node(REDUCE_OP, node.dtype, shape, (src,), arg), whole=False,
                                prefix="lazyk-rows-partial", lazy=True)
            # Partitions without rows add nothing (and their rows would not line up).
            keys = [(parts.name, i) for i, c in enumerate(self.counts) if c] or \
                [(parts.name, 0)]
        else:  # rows a selection made, per partition: each folded unless it holds none
            rows = self._source(src)
            leaf = Node("input", src.dtype, src.shape, (), "x0")
            task = Task(Node(REDUCE_OP, node.dtype, shape, (leaf,), arg), False, False)
            name = f"lazyk-rows-partial-{tokenize(task, rows.name)}"
            layer = {(name, i): (unless_empty, task, (rows.name, i))
                     for i in range(self.nparts)}
            parts = RaggedArray(HighLevelGraph.from_collections(
                name, MaterializedLayer(layer), dependencies=[rows]), name, None, rows.type)
            keys = list(layer)
        return self._tree(node, keys, parts, Combine(arg, node.dtype.str, True, False),
                          Combine(node.arg, node.dtype.str, bool(node.arg[2])))

    def _gathered(self, node: Node) -> Node:
        """A reduction over the rows' axis of data with missing rows below the first var
        dim: the source per partition, then ONE task joins every partition's rows and
        folds them (as in memory: every present row checked against the others)."""
        src = self._source(node.srcs[0])
        fold = Combine(node.arg, node.dtype.str, bool(node.arg[2]))
        name = f"lazyk-rows-{node.arg[0]}-gathered-{tokenize(src.name, fold)}"
        task = (fold, *[(src.name, i) for i in range(src.npartitions)])
        dsk = HighLevelGraph.from_collections(name, MaterializedLayer({(name, 0): task}),
                                              dependencies=[src])
        return self._leaf(RaggedArray(dsk, name, None, Expr(node, self.env).type))

    def _leaf(self, r: RaggedArray) -> Node:
        """Collection `r` (a layer made here) as a leaf of the expression."""
        self.env[r.name] = r.env[r.name]
        self.rows[r.name] = r
        return r.node

    def _source(self, src: Node) -> RaggedArray:
        """The partitions of `src`: a collection itself (its partitions, no copy), else a
        layer computing it per partition."""
        v = self.env.get(src.arg) if src.op == "input" else None
        if isinstance(v, RowsLeaf) and self._is_split(src):
            return v.rows
        return self._layer(src, whole=False, prefix="lazyk-rows-source", lazy=True,
                           known=self._known(src))

    def _fold_rows(self, node: Node, arg: tuple, depth: int, elem: str | None) -> Node:
        """A reduction over the rows' axis of data with missing rows right under the outer
        rows, or keeping var rows below two folded axes: the source per partition, then
        partials that know what they folded (`FoldRows`), combined in a tree."""
        src = self._source(node.srcs[0])
        dt, keep = node.dtype.str, bool(node.arg[2])
        first = FoldRows(arg, dt, True, depth, "first", elem)
        name = f"lazyk-rows-folded-{tokenize(src.name, first)}"
        layer = {(name, i): (first, (src.name, i)) for i in range(src.npartitions)}
        parts = RaggedArray(HighLevelGraph.from_collections(name, MaterializedLayer(layer),
                                                            dependencies=[src]),
                            name, None, src.type)
        keys = list(layer)
        return self._tree(node, keys, parts, FoldRows(arg, dt, True, depth, "combine", elem),
                          FoldRows(node.arg, dt, keep, depth, "final", elem))

    def _tree(self, node: Node, keys: list, parts: Any, combine: Any, final: Any) -> Node:
        """`keys` (partials) combined `split_every` at a time, then `final`: one result."""
        op = node.arg[0]
        name = f"lazyk-rows-{op}-{tokenize(parts.name, arg_key(node.arg))}"
        tasks: dict = {}
        level = 0
        while len(keys) > self.split_every:
            nxt = []
            for j in range(0, len(keys), self.split_every):
                key = (f"{name}-{level}", j // self.split_every)
                tasks[key] = (combine, *keys[j:j + self.split_every])
                nxt.append(key)
            keys, level = nxt, level + 1
        tasks[(name, 0)] = (final, *keys)
        dsk = HighLevelGraph.from_collections(name, MaterializedLayer(tasks),
                                              dependencies=[parts])
        return self._leaf(RaggedArray(dsk, name, None, Expr(node, self.env).type))

    def _seeded(self, node: Node, src: Expr) -> Node:
        """min / max of plain values without `initial`: a partition (or a part of one) with
        nothing to fold must not raise, so every partial is seeded with the dtype's
        extreme; a count over the same axes then raises NumPy's ValueError where the
        whole data has nothing to fold."""
        op, axes, keep = node.arg[:3]
        seed = ops.OPS[op].identity(node.dtype)  # (the most extreme value of the dtype)
        value = rewrite(lx.reduce(op, src, axis=axes, keepdims=keep, initial=seed).node,
                        self._visit)
        count = rewrite(lx.count(src, axis=axes, keepdims=keep).node, self._visit)
        v, c = self.rows[value.arg], self.rows[count.arg]
        name = f"lazyk-rows-{op}-checked-{tokenize(v.name, c.name)}"
        task = (nonempty, op, (v.name, 0), (c.name, 0))
        dsk = HighLevelGraph.from_collections(name, MaterializedLayer({(name, 0): task}),
                                              dependencies=[v, c])
        return self._leaf(RaggedArray(dsk, name, None, Expr(node, self.env).type))

    def _mean(self, node: Node) -> Expr:
        """mean = sum / count over the same axes; over ?T data an empty fold is missing."""
        axes, keep = node.arg[1], node.arg[2]
        skipna = len(node.arg) > 3 and bool(node.arg[3])
        src = Expr(node.srcs[0], self.env)
        total = lx.reduce("sum", src, axis=axes, keepdims=keep, skipna=skipna,
                          dtype=node.dtype)
        n = lx.count(src, axis=axes, keepdims=keep)
        value = lx.astype(lx.true_divide(total, n), node.dtype)
        if not src.type.missing_values:  # (its type: `num` of `?T` values has none)
            return value  # 0 / 0: NaN, as NumPy's mean of nothing
        nothing = lx.astype(lx.reduce("min", src, axis=axes, keepdims=keep, skipna=True),
                            node.dtype)  # missing exactly where nothing is present
        mean = lx.where(lx.equal(n, 0), nothing, value)
        if skipna:
            return mean
        # NOTE: a missing row folded in (`?var`) makes `total` a missing row, which the
        # `where` above drops where `n`'s row is empty: a `where` on `total`'s own missing
        # state (either branch the same) puts it back.
        return lx.where(lx.equal(total, total), mean, mean)

    def _layer(self, root: Node, whole: bool, prefix: str, lazy: bool = False,
               known: bool = True) -> Any:
        """ONE blockwise layer running `root` on each partition (or once, `whole`): a
        `RaggedArray`, or a `dask.array` for a plain result (unless `lazy`). `known`:
        whether the result's rows are the collections' own (else rows per partition are
        known only once computed: `nan` counts, as Dask's unknown chunk sizes)."""
        names = [n.arg for n in toposort(root) if n.op == "input"]
        params = {name: f"x{i}" for i, name in enumerate(names)}
        task_root = rewrite(root, lambda n, s: n.replace(arg=params[n.arg]) if n.op == "input"
                            else n.replace(srcs=s))
        out = Expr(root, self.env)
        plain = not lazy and _is_plain(out, not whole)
        ndim = root.ndim
        deps = [self._operand(name) for name in names]
        args: list = []
        for r in deps:
            args += [r.name, "i"]
        task = Task(task_root, plain, known, self.bins)
        name = f"{prefix}-{tokenize(task, [r.name for r in deps], whole)}"
        numblocks = {r.name: (1 if whole else r.npartitions,) for r in deps}
        if plain and ndim == 0:
            layer = MaterializedLayer({(name,): (task, *[(r.name, 0) for r in deps])})
        else:
            extra = "".join(chr(ord("j") + k) for k in range(ndim - 1)) if plain else ""
            layer = blockwise(task, name, "i" + extra, *args, numblocks=numblocks,
                              new_axes={c: 1 for c in extra}, concatenate=True)
        dsk = HighLevelGraph.from_collections(name, layer, dependencies=deps)
        if not plain:
            return RaggedArray(dsk, name, None if whole else self._row_counts(known), out.type)
        import dask.array as da

        shape = tuple(root.shape)
        chunks = ((shape[0],) if whole else self._row_counts(known),) + tuple((n,) for n in shape[1:]) \
            if ndim else ()
        return da.Array(dsk, name, chunks, meta=np.empty((0,) * ndim, root.dtype))


def _show(counts: tuple) -> str:
    text = ", ".join(map(str, counts[:6]))
    return f"({text}{', ...' if len(counts) > 6 else ''})"


def _is_plain(e: Expr, split: bool = False) -> bool:
    """Whether `e` is fixed dims over plain values (`split`: its outer dim holds the
    partitions' rows, var after a selection or flatten)."""
    t = e.type
    if split and isinstance(t, T.VarDim):
        t = t.elem
    while isinstance(t, T.FixedDim):
        t = t.elem
    return isinstance(t, T.Scalar) and t.name not in ("string", "bytes")  # (lazyk arrays)


def _missing_ones(t: T.Type) -> bool:
    """Whether type `t` has rows of 1 that may be missing (`N * ?1 * T`)."""
    while isinstance(t, (T.Dim, T.Option)):
        if isinstance(t, T.Option) and isinstance(t.elem, T.FixedDim) and t.elem.size == 1:
            return True
        t = t.elem
    return False


def _fixed_shape(data: Any) -> tuple | None:
    """The shape of a lazyk array of fixed dims (`3 * ?bool`) read as a leaf, else None."""
    t = getattr(getattr(data, "array", None), "type", None) if isinstance(data, RaggedLeaf) \
        else None
    if t is None or not t.ndim or t.missing_rows or \
            not all(isinstance(n, int) for n in t.shape):
        return None
    return tuple(t.shape)


def _numpy_rows(a: Any, counts: tuple | None) -> RaggedArray:
    """A NumPy (or fixed lazyk) operand as a collection: row slices (views) or the whole
    array once."""
    name = f"lazyk-operand-{tokenize(a, counts)}"
    if counts is None:
        layer = {(name, 0): a}
    else:
        bounds = np.concatenate([[0], np.cumsum(counts)])
        layer = {(name, i): a[bounds[i]:bounds[i + 1]]
                 for i in range(len(counts))}
    dsk = HighLevelGraph({name: MaterializedLayer(layer)}, {name: set()})
    t = a.type if isinstance(a, Array) else fixed_type(a.shape, a.dtype)
    return RaggedArray(dsk, name, counts, t)


def _dask_rows(x: Any, counts: tuple | None) -> RaggedArray:
    """A Dask array operand as a collection: rechunked to the rows' partitions, or whole."""
    x = x.rechunk(((counts,) + (-1,) * (x.ndim - 1)) if counts else -1)
    name = f"lazyk-operand-{tokenize(x.name, counts)}"
    rest = (0,) * max(x.ndim - 1, 0)
    if counts is None:
        keys = [(x.name,) + (0,) * x.ndim]
    else:
        keys = [(x.name, i) + rest for i in range(len(counts))]
    layer = {(name, i): (block_data, k) for i, k in enumerate(keys)}
    dsk = HighLevelGraph.from_collections(name, MaterializedLayer(layer), dependencies=[x])
    return RaggedArray(dsk, name, counts, fixed_type(x.shape, x.dtype))


def _is_var(dim) -> bool:
    """Whether a dim (`Type.dims` entry) is var rows, missing or not."""
    return isinstance(dim.elem if isinstance(dim, T.Option) else dim, T.VarDim)

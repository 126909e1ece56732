"""The results of the two-step forms of `lazyk.runtime.nest_steps` rebuilt with NumPy over
their offsets and present flags, never per row in Python: rows emptied or marked missing
(`drop_rows`, `rebuild`), `?n` rows as marks (`marked_tree_array`), missing rows as
elements of missing values (`missing_as_values`) or left out (`present_slots`), and the
element counts per level of a nest result (`level_counts`)."""
from __future__ import annotations

import numpy as np

from lazyk.arrays.array import array, masked
from lazyk.arrays.buffers import offsets_array
from lazyk.arrays.columns import columns
from lazyk.arrays.trees import Leaf, Lists, Masked, Regular, offsets_of, ranges
from lazyk.codegen.levels import FIXED, VAR
from lazyk.runtime.nest_plan import positions
from lazyk.runtime.nest_results import rows_of, tree_array
from lazyk.types import FixedDim


def drop_rows(result, p: int, drop, mark: bool):
    """`result` with its rows at var level p emptied where `drop` is True, and missing
    there when `mark` (a `?var` dim): NumPy over the offsets, no Python per row."""
    top = isinstance(result.type, FixedDim)
    tree = columns(result if top else result[None])
    p += not top

    def walk(node, level):
        if isinstance(node, Masked) and not isinstance(node.child, Leaf):
            valid, lst = node.present, node.child
        else:
            valid, lst = None, node
        if level < p:
            inner = Lists(lst.offsets, walk(lst.child, level + 1)) if isinstance(lst, Lists) \
                else Regular(lst.size, walk(lst.child, level + 1), lst.count)
            return inner if valid is None else Masked(valid, inner)
        off = lst.offsets
        lens = np.where(drop, 0, np.diff(off))
        inner = Lists(offsets_of(lens), lst.child.take(ranges(off[:-1], lens)))
        if mark:
            valid = ~drop if valid is None else valid & ~drop
        return inner if valid is None else Masked(valid, inner)
    return marked_tree_array(walk(tree, 1), result.type.size if top else 1, None if top else ())


def marked_tree_array(tree, count: int, outer):
    """`tree_array` of a columns tree that may hold `?n` rows (an option over fixed rows):
    those become its marks."""
    marks = {}

    def strip(node, level):
        if isinstance(node, Leaf) or isinstance(node, Masked) and isinstance(node.child, Leaf):
            return node
        if isinstance(node, Masked) and isinstance(node.child, Regular):
            marks[level] = node.present
            return strip(node.child, level)
        if isinstance(node, Masked):
            return Masked(node.present, strip(node.child, level))
        if isinstance(node, Regular):
            return Regular(node.size, strip(node.child, level + 1), node.count)
        return Lists(node.offsets, strip(node.child, level + 1))
    return tree_array(strip(tree, 1), count, outer, marks)


def missing_as_values(values, flags, rows, starts, blk: int = 1) -> tuple:
    """Each missing row (`rows` False) of a level with row offsets `starts` as one element
    of missing values (`blk` values under each element): (the new offsets, values, present
    flags), gathered with NumPy."""
    lens = np.where(rows, np.diff(starts), 1)
    off = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(lens, out=off[1:])
    seg = np.repeat(np.arange(len(lens)), lens)
    old = starts[seg] + np.arange(int(off[-1])) - off[seg]
    old = (old[:, None] * blk + np.arange(blk)).reshape(-1)
    ok = np.repeat(rows[seg], blk)
    vals = np.zeros(len(ok), values.dtype)
    vals[ok] = values[old[ok]]
    if flags is not None:
        ok[ok] = flags[old[ok]]
    return off, vals, ok


def level_counts(dims, offsets) -> list:
    """How many elements each level of a nest result over `dims` has (`nest_result`'s xs)."""
    lv = [VAR if d is VAR else FIXED for d in dims]
    sz = [0 if d is VAR else int(d) for d in dims]
    return positions(sz[0] if lv[0] is FIXED else 1, lv, sz, offsets, len(dims))


def leaf_values(result) -> np.ndarray:
    """The values of a nest result without missing values, in order (no copy of rows)."""
    if not result.type.dims:
        return np.asarray(result.to_numpy()).reshape(1)
    tree = columns(result if isinstance(result.type, FixedDim) else result[None])
    while not isinstance(tree, Leaf):
        tree = tree.child
    return tree.values


def rebuild(result, rows=None, leaf=None):
    """`result` rebuilt with NumPy over its offsets (no Python per row): `rows(offsets)`
    gives (drop, mark) for the rows of its last dim when that is var over values (those
    rows emptied, and missing when `mark`); `leaf(values, mask)` builds its values."""
    top = isinstance(result.type, FixedDim)
    tree = columns(result if top else result[None])

    def values(node):
        mask, x = node.unwrap()
        return leaf(x.values, mask) if leaf else array(x.values) if mask is None else \
            masked(x.values, mask)

    def build(node, count, outer=None):  # count: the elements `node` describes
        if isinstance(node.unwrap()[1], Leaf):
            return values(node)
        if isinstance(node, Regular):
            return rows_of(build(node.child, count * node.size), count, node.size)
        valid, lists = node.unwrap()
        off, child = lists.offsets, lists.child
        if rows is None or not isinstance(child.unwrap()[1], Leaf):
            return offsets_array(off, build(child, int(off[-1])), valid, outer=outer,
                                 check=None)
        # the last dim: drop its rows' values where `rows` says
        drop, mark = rows(off)
        lens = np.where(drop, 0, np.diff(off))
        new, idx = offsets_of(lens), ranges(off[:-1], lens)
        kept = Masked(child.present[idx], Leaf(child.child.values[idx])) \
            if isinstance(child, Masked) else Leaf(np.ascontiguousarray(child.values[idx]))
        if mark:
            valid = ~drop if valid is None else valid & ~drop
        return offsets_array(new, values(kept), valid, outer=outer, check=None)
    return build(tree, result.type.size if top else 1, None if top else ())


def present_slots(dims, offsets, validity, present) -> np.ndarray:
    """The positions, in order, of the values of a nest result (over `dims`, with the row
    `offsets` of its var levels) that lie under no missing row: `validity` the present rows
    of its `?var` levels, `present` the present bytes of its `?n` levels (the n slots of a
    missing `?n` row hold no value of the flattened array)."""
    src = np.zeros(1, np.int64)  # the rows of the level, by their index in the result
    for k, d in enumerate(dims):
        real = np.ones(len(src), bool)
        if k in validity:
            real &= np.asarray(validity[k], bool)[src]
        if k in present:
            real &= np.asarray(present[k])[src] != 0
        src = src[real]
        if d is VAR:
            o = offsets[k]
            src = ranges(o[src], o[src + 1] - o[src])
        else:
            n = int(d)
            src = (src[:, None] * n + np.arange(n)).reshape(-1)
    return src

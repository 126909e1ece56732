"""Gathers the loop nest does not take as they are (`nest_select`).

One tuple per row taken back from combinations: `f(fields)[positions]` where the fields are
those of one `lazyk.combinations` and the positions one tuple number per row (Awkward's
`f(pairs)[ak.argmin(g(pairs), axis=1, keepdims=True)]`). `picked_fields` finds that form in
a graph over `PickLeaf`s; `slot_positions` turns the tuple numbers into each slot's item
positions (natively, `backend.rowcopy.tuple_slots`), so the fields are gathered there and
f runs on one tuple per row (`nest_select._picked_tuples`), never on every tuple.

Positions within rows that may be missing (`gather_in_missing_rows`): gathered from the
rows with the missing ones as empty rows, then made missing again.
"""
from __future__ import annotations

import numpy as np

from lazyk.arrays.array import Array, array, masked_empty
from lazyk.arrays.columns import build_columns, columns
from lazyk.arrays.trees import (
    Column,
    Leaf,
    Lists,
    Masked,
    Regular,
    memory_key,
    offsets_of,
    ranges,
    rows_at,
)
from lazyk.backend.rowcopy import tuple_slots
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import Node, toposort
from lazyk.frontend.indexing import index_by
from lazyk.frontend.leaves import PickLeaf, is_ragged, leaf_data
from lazyk.frontend.tuples import Combos
from lazyk.frontend.ufuncs import astype
from lazyk.lru import LRU
from lazyk.runtime import launch
from lazyk.runtime.nest_results import tree_array

# (tuples, most items in a row) -> `Combos.listed`: the tuples of rows of up to that many
# items, listed once
_tables = LRU(16, "tuple tables")
MAX_TUPLES = 1 << 20


def picked_fields(x: Node, env: dict) -> tuple | None:
    """({leaf: its PickLeaf}, the Combos, the rows' offsets) of `x` (`N * var`, taken back
    at its tuples' level) where every leaf that moves along that level is a field of one
    `combinations` of `N * var * T` arrays over one offsets array, or a position of one
    `argcombinations` (`PickLeaf.position`); None for other forms."""
    if x.ndim != 2:
        return None
    picks, tuples = {}, None
    for n in toposort(x):
        if n.op != "input":
            continue
        entry = env[n.arg]
        if type(entry) is not PickLeaf:
            if n.ndim == 2 and n.shape[1] != 1:
                return None  # (it moves along the tuples' level)
            continue
        # (a position reads only its rows: the dims up to them, `cut`)
        cut = entry.cut is not None and not (entry.position and entry.cut == 2)
        if len(entry.picks) != 1 or entry.witness or cut \
                or entry.pad or n.ndim != 2 or entry.picks[0][0] != 1 or \
                type(entry.picks[0][1]) is not Combos or \
                tuples not in (None, entry.picks[0][1]):
            return None
        tuples = entry.picks[0][1]
        picks[n] = entry
    trees = [columns(e.array) for e in picks.values()]
    if not picks or any(not isinstance(t, Lists) or not isinstance(t.child, Leaf)
                        for t in trees):
        return None
    off = trees[0].offsets
    same = memory_key(off)  # (a collection's fields: one offsets array)
    if any(not (memory_key(t.offsets) == same or np.array_equal(t.offsets, off))
           for t in trees[1:]):
        return None
    return picks, tuples, off


def slot_positions(positions: Array, off: np.ndarray, tuples: Combos) -> list | None:
    """Per slot of `tuples`, the item positions of the tuples that `positions` (`N * 1 *
    ?int64`: a tuple number in each row of offsets `off`, a negative one from the row's
    end) name, as `N * 1 * ?int64` Arrays (views of one `N * slots` block), missing where
    the position is. None where a position lies outside its row's tuples (the gather
    raises its IndexError), for other layouts, and where the rows hold more than
    MAX_TUPLES tuples in all lengths up to the longest."""
    tree = columns(positions)
    if not isinstance(tree, Regular) or tree.size != 1 or len(off) - 1 != len(positions):
        return None
    valid, child = tree.child.unwrap()
    if not isinstance(child, Leaf) or child.values.dtype.kind not in "iu" or \
            child.values.dtype.itemsize > 8 or child.values.dtype == np.uint64:
        return None
    longest = int(np.diff(off).max()) if len(off) > 1 else 0
    table = _tables.get((tuples, longest))
    if table is None:
        if sum(tuples.count([m] * tuples.slots) for m in range(longest + 1)) > MAX_TUPLES:
            return None
        table = _tables.put((tuples, longest), tuples.listed(longest))
    # (`tuple_slots` writes every value and present byte: nothing to zero first)
    got, into, present = masked_empty((len(positions), tuples.n), np.int64, filled=True)
    if not tuple_slots(off, child.values, valid, *table, into, present):
        return None
    return [got[:, s:s + 1] for s in range(tuples.n)]


def gather_in_missing_rows(node: Node, env: dict) -> Array | None:
    """`x[positions]` within the rows of `N * ?var * T` (Awkward's
    `x[ak.argmax(x, axis=1, keepdims=True)]` over rows that may be missing): gathered from
    x's rows with the missing ones as empty rows, then the result's rows missing where x's
    are (`N * ?n * ?T` for positions of a fixed dim). None for other forms."""
    x, key = node.srcs
    data = leaf_data(env[x.arg])
    if node.arg not in (1, 2) or x.ndim <= node.arg or not is_ragged(data):
        return None
    tree, pos = columns(data.array), columns(_evaluated(Expr(key, env)))
    outer = None
    if node.arg == 2:  # `N * var * ?var * T`: the rows of every list, one after the other
        if not isinstance(tree, Lists) or not isinstance(pos, Lists) or \
                not np.array_equal(tree.spans()[1], pos.spans()[1]):
            return None
        outer, tree, pos = tree, _flat_rows(tree), _flat_rows(pos)
    if not isinstance(tree, Masked) or not isinstance(tree.child, Lists):
        return None
    valid, child = tree.present, tree.child.child
    starts, lens = tree.child.spans()
    lens = np.where(valid, lens, 0)  # (a missing row: an empty one, its rows never read)
    rows = rows_at(child, starts, lens)
    positions = _unread_in(pos, valid)
    if positions is None:
        return None
    values = build_columns(rows)
    if values.dtype != x.dtype:  # (a compiled call's input of another dtype: the parameter's)
        values = astype(values, x.dtype)
    gathered = columns(_evaluated(index_by(values, positions)))
    level = 1
    if outer is not None:  # (back under the outer lists)
        gathered, level = Lists(offsets_of(outer.spans()[1]), gathered), 2
    if isinstance(columns_at(gathered, level), Lists):
        return build_columns(gathered.at(level - 1, lambda c: Masked(valid, c)))
    return tree_array(gathered, len(outer.spans()[1]) if outer is not None else len(valid),
                      None, {level: valid})


def _flat_rows(lists: Lists) -> Column:
    """The items of every list, one after the other (a list's rows, from its start)."""
    starts, lens = lists.spans()
    return lists.child.take(ranges(starts, lens))


def columns_at(tree: Column, level: int) -> Column:
    """The node at `level` (1: the tree itself) down a chain of lists."""
    return tree if level == 1 else columns_at(tree.child, level - 1)


def _unread_in(tree: Column, valid: np.ndarray) -> Array | None:
    """Positions (a columns tree of `N * k * int64` or `N * var * int64`) with those in the
    missing rows of the array they index left out: missing (fixed k) or none (var)."""
    if isinstance(tree, Regular):
        k, child = tree.size, tree.child
        keep = np.repeat(valid, k)
        child = Masked(child.present & keep, child.child) if isinstance(child, Masked) else \
            Masked(keep, child)
        return tree_array(Regular(k, child), len(valid))
    if isinstance(tree, Lists):
        starts, lens = tree.spans()
        lens = np.where(valid, lens, 0)
        return build_columns(rows_at(tree.child, starts, lens))
    return None


def _evaluated(expr: Expr) -> Array:
    value = launch.evaluate(expr)
    return value if isinstance(value, Array) else array(value)

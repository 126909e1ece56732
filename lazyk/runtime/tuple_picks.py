"""One tuple per row taken back from combinations: `f(fields)[positions]` where the fields are
those of one `lazyk.combinations` and the positions one tuple number per row (Awkward's
`f(pairs)[ak.argmin(g(pairs), axis=1, keepdims=True)]`). `picked_fields` finds that form in
a graph over `PickLeaf`s; `slot_positions` turns the tuple numbers into each slot's item
positions (natively, `backend.rowcopy.tuple_slots`), so the fields are gathered there and
f runs on one tuple per row (`nest_select._picked_tuples`), never on every tuple.
"""
from __future__ import annotations

import numpy as np

from lazyk.arrays.array import Array, masked_empty
from lazyk.arrays.columns import columns
from lazyk.arrays.trees import Leaf, Lists, Regular, memory_key
from lazyk.backend.rowcopy import tuple_slots
from lazyk.frontend.graph import Node, toposort
from lazyk.frontend.leaves import PickLeaf
from lazyk.frontend.tuples import Combos
from lazyk.lru import LRU

# (tuples, most items in a row) -> `Combos.listed`: the tuples of rows of up to that many
# items, listed once
_tables = LRU(16, "tuple tables")
MAX_TUPLES = 1 << 20


def picked_fields(x: Node, env: dict) -> tuple | None:
    """({leaf: its PickLeaf}, the Combos, the rows' offsets) of `x` (`N * var`, taken back
    at its tuples' level) where every leaf that moves along that level is a field of one
    `combinations` of `N * var * T` arrays over one offsets array; None for other forms."""
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
        if len(entry.picks) != 1 or entry.position or entry.witness or entry.cut is not None \
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
    got, into, present = masked_empty((len(positions), tuples.n), np.int64)
    if not tuple_slots(off, child.values, valid, *table, into, present):
        return None
    return [got[:, s:s + 1] for s in range(tuples.n)]

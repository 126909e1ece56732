"""The split of a loop nest's level-0 rows across threads, by content: the parts of a fill
pass (`nest_parts`) and of a count pass (`count_parts`), weighed by the rows and values
they hold (offsets are content prefix sums: a bisection, no pass over the rows), or by the
start indices of the first var operand (`index_weight`); `one_part` where one thread does
it all. Nothing here runs a kernel."""
from __future__ import annotations

import numpy as np

from lazyk.arrays.memory import view
from lazyk.backend.threads import parts_for
from lazyk.codegen.levels import FIXED, VAR, Fold, Pick, Reduce, Scan
from lazyk.kernel import nest as nest_kernel
from lazyk.kernel.nest import split as nest_split
from lazyk.runtime.nest_plan import STRIDED, plain_rows, positions


def _weighing_rows(level) -> bool:
    """Var rows of plain indices, read as rows or at a tuple level (the split weighs the
    items: the work of a row's tuples grows with them)."""
    return plain_rows(level.inner if isinstance(level, Pick) else level)


def nest_parts(levels, sizes, offsets, rvar, sel, kinds, mode, res, n0):
    """(lo, hi, first output, {var level: first row}) per thread, level-0 rows split by
    content (offsets are content prefix sums: a bisection, no pass over the rows). `offsets`
    and `rvar` count result levels; `res` gives their levels in the nest."""
    nres = len(res)
    if isinstance(mode, Fold) and mode.splits_columns(levels, kinds):
        # parts: ranges of columns, one per thread (each folds every row: a narrow range
        # reads short runs of each row)
        bounds = nest_split(sizes[-1], sizes[-1], None, int(np.prod(sizes[:-1])) * len(sel), 1)
        return [(lo, hi, 0, {}) for lo, hi in zip(bounds[:-1], bounds[1:])]
    if levels[0] is not FIXED or not nres or res[0] != 0 or \
            (isinstance(mode, (Reduce, Scan)) and len(levels) < 2):
        # level 0 is not split (a scan of one level runs along it)
        return [(0, n0, 0, {res[p]: 0 for p in rvar})]
    rl, rs = [levels[k] for k in res], [sizes[k] for k in res]
    if isinstance(mode, Reduce) and not rvar and len(levels) == 2:
        if one_part(sel, kinds, n0):
            return [(0, n0, 0, {})]
        before = index_weight(sel, kinds, n0)  # one result per row: weigh by content
        if before is not None:  # (result position = row)
            bounds = nest_split(n0, before(n0), before, len(sel))
            return [(lo, hi, lo, {}) for lo, hi in zip(bounds[:-1], bounds[1:])]
    before = _weight(rl, rs, offsets, nres)
    tail = res[-1] + 1  # (a result element folds fixed rows: the split weighs their values)
    each = int(np.prod(sizes[tail:])) if all(lv is FIXED for lv in levels[tail:]) else 1
    bounds = nest_split(n0, before(n0), before, len(sel) * max(each, 1))
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        xs = positions(lo, rl, rs, offsets, nres)
        parts.append((lo, hi, xs[-1], {res[p]: (xs[p - 1] if p else 0) for p in rvar}))
    return parts


def count_parts(levels, sizes, offsets, rvar, res, p, n0, sel, kinds):
    """Parts of the count pass of result var level `p`, level-0 rows split by how many
    level-`p` rows they hold (known from the fixed sizes and the levels counted before), or
    for the first level by the content of the first var operand (the items the pass reads)."""
    counted = [q for q in rvar if q <= p]
    if levels[0] is not FIXED or not p or res[0] != 0:
        return [(0, n0, 0, {res[q]: 0 for q in counted})]  # level 0 is not split
    rl, rs = [levels[k] for k in res], [sizes[k] for k in res]
    before = _weight(rl, rs, offsets, p)  # level-p rows before level-0 row r
    if getattr(before, "rows", False) and not one_part(sel, kinds, n0):
        before = index_weight(sel, kinds, n0) or before
    bounds = nest_split(n0, before(n0), before, len(sel))
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        xs = positions(lo, rl, rs, offsets, p)
        parts.append((lo, hi, 0, {res[q]: (xs[q - 1] if q else 0) for q in counted}))
    return parts


def _weight(rl, rs, offsets: dict, upto: int):
    """`before(r)` for `nest_kernel.split`: level-(upto - 1) iterations before level-0 row r
    (`positions`). Where that is the row itself or one offsets entry, the split searches
    in NumPy (`starts`, `rows`) instead of bisecting in Python."""
    def before(r):
        return positions(r, rl, rs, offsets, upto)[-1]
    if rl[0] is FIXED and upto == 1:
        before.rows = True
    elif rl[0] is FIXED and upto == 2 and rl[1] is VAR:
        before.starts, before.base = offsets[1][:-1], 0
    return before


def one_part(sel, kinds, n0) -> bool:
    """Whether `nest_kernel.split` would give one part over `index_weight`: one thread, or
    the operand it weighs holds too few values to split (its arrmeta's `length` bounds the
    content of its valid rows, and the kernel refuses others); no index is read."""
    if nest_kernel.get_num_threads() == 1:  # (what `split` reads, at call time)
        return True
    for o, kind in zip(sel, kinds):
        if kind[0] == STRIDED and _weighing_rows(kind[1]) and o.dims[0].size == n0:
            return n0 > 0 and o.dims[0].stride > 0 and parts_for(
                o.dims[1].length * len(sel), nest_kernel.MIN_PART, 2) == 1
    return False


def index_weight(sel, kinds, n0):
    """Content before level-0 row r of the first var operand at level 1 (its start index;
    a bad index only unbalances the split: the kernel checks every row)."""
    for o, kind in zip(sel, kinds):
        # (an operand of its own level-0 size: a broadcast one has fewer index entries)
        if kind[0] == STRIDED and _weighing_rows(kind[1]) and o.dims[0].size == n0:
            width, delta = o.dims[1].width, o.dims[1].stop_delta
            stride = o.dims[0].stride
            if n0 == 0 or stride <= 0:  # (reversed views: split by rows)
                return None
            # the start indices and the last stop: bytes the nest reads too
            dt = np.int32 if width == 4 else np.int64
            starts = view(o.ptr, (n0,), (stride,), dt, None, True)
            s0 = int(starts[0])
            last = o.ptr + (n0 - 1) * stride + delta
            end = int(view(last, (), (), dt, None, True))

            def before(r):
                return (int(starts[r]) if r < n0 else end) - s0
            if stride == width:  # contiguous: `nest_kernel.split` searches them in NumPy
                before.starts, before.base = starts, s0
            return before
    return None

"""Reductions over every axis in the loop nest (`levels.Total`): level-0 rows split into
parts by content, each part folding its rows into one partial result (`fold_parts`), the
partials combined by the reference's rules for the total (`all_total`); `nest_all` runs
it."""
from __future__ import annotations

import numpy as np

from lazyk.codegen.levels import FIXED, Fill, Total
from lazyk.frontend import ops
from lazyk.frontend.ops import ARG_REDUCTIONS
from lazyk.kernel.flat import data_pointer
from lazyk.kernel.nest import get_num_threads, nest_kernel
from lazyk.kernel.nest import split as nest_split
from lazyk.runtime.nest_plan import nest_words
from lazyk.runtime.nest_results import nest_reduced, nest_result
from lazyk.runtime.nest_threads import index_weight, one_part
from lazyk.runtime.ragged_rules import RECORDERS


def nest_all(spec, step, levels, sizes, sel, kinds, maskd, skipna, labels, leaves,
             reduce_arg, red_node, qrows=False, mode=Total(), optional=False):
    """A reduction over every axis: each part folds its level-0 rows into one partial
    result; the partials combine here (the reference's rules for the total). `qrows`:
    missing rows (`?var`), skipped under skipna, else the result is missing. An
    arg-reduction runs one part (its position counts every value before it)."""
    words, _ = nest_words(levels, sizes, sel, kinds)
    arg = reduce_arg[0] in ARG_REDUCTIONS
    n0 = sizes[0] if levels[0] is FIXED else 1
    parts = [(0, n0, 0, {})] if arg else fold_parts(levels, sizes, sel, kinds)
    acc = np.dtype(np.int64) if arg else np.dtype(spec.outputs[0][1])
    out, flags = np.empty(len(parts), acc), np.zeros(len(parts), np.uint8)
    words[3], words[4] = data_pointer(out), data_pointer(flags)
    kern = nest_kernel(spec, levels, kinds, maskd, mode, Fill(), skipna, step.mean)
    statuses = kern.run(words, step.consts, parts, (leaves, out, flags), labels)
    for rec in RECORDERS:
        rec.append(("nest", kern, len(parts)))
    count = sum(int(st[6]) for st in statuses)
    if arg:  # the one part's position; none when nothing was folded
        values, mask = nest_reduced(out, np.array([int(count > 0)], np.uint8), reduce_arg,
                                     optional, skipna, whole=True)
        dims = [1] * len(levels) if reduce_arg[2] else []
        return nest_result(values, mask, dims, {}, [])
    values, mask = all_total(out, flags, count, reduce_arg, step.mean, any(maskd) or qrows,
                              skipna)
    dims = [1] * len(levels) if reduce_arg[2] else []
    return nest_result(values.astype(red_node.dtype, copy=False), mask, dims, {}, [])


def fold_parts(levels, sizes, sel, kinds) -> list:
    """Parts of a fold over every level into one result per part (a reduction over every
    axis, histograms): level-0 rows split by content (the first var operand's), or by rows
    times the fixed dims below them; part t writes result t."""
    n0 = sizes[0] if levels[0] is FIXED else 1
    bounds = [0, n0]
    deep = len(levels) > 1
    if levels[0] is FIXED and n0 > 1 and get_num_threads() > 1 and \
            not (deep and one_part(sel, kinds, n0)):
        before = index_weight(sel, kinds, n0) if deep else None
        if before is None:
            inner = 1
            for lv, n in zip(levels[1:], sizes[1:]):
                inner *= n if lv is FIXED else 1

            def before(r, inner=inner):
                return r * inner
            before.rows = inner == 1
        bounds = nest_split(n0, before(n0), before, len(sel))
    return [(lo, hi, t, {}) for t, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:]))]


def all_total(out, flags, count: int, reduce_arg, mean: bool, anym: bool, skipna: bool):
    """(value, present mask or None) of a reduction over every axis from the parts'
    partial results, flag bytes and element count (the reference's rules for the total)."""
    op, acc = reduce_arg[0], out.dtype
    bad, seen = bool((flags & 1).any()), bool((flags & 2).any())
    with np.errstate(all="ignore"):
        value = ops.get(op).combine_ufunc().reduce(out).astype(acc)
        valid = not bad if anym and not skipna else True
        if ops.get(op).no_empty_fold or (mean and (skipna or anym)):
            valid = valid and count > 0
        if mean:  # as NumPy: in float64, truncated back for an integer dtype
            value = (value / (max(count, 1) if acc.kind in "iu" else count)).astype(acc)
    return nest_reduced(np.array([value], acc),
                         np.array([int(valid) | (int(seen) << 1)], np.uint8),
                         reduce_arg, anym, skipna, whole=True)

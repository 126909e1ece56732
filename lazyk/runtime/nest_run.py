"""Expressions over var / option arrays in one generated loop nest (`codegen.nest`,
`lazyk.kernel.nest`): fixed and var dims in any order and at any depth (`var * var * T`,
`N * var * 4 * T`, `var * var * var * T`) over `T` or `?T` (or strings, their
`{begin, size}` elements read in place for the string operations), missing rows (`?var`)
at any level; elementwise work with the seed broadcasting rules (`where` too) and
reductions over any axis or tuple of axes, in one pass (with missing rows: one axis,
every axis, or several axes below every `?var` dim; `lazyk.runtime.nest_steps` runs the
others it takes in two). Rows (of stepping views too) are read in place from the arrmeta
(every byte it lets the kernel address is checked inside its memory block first) and
checked and paired inside the kernel; leaves in another numeric dtype than the body's are
converted where loaded; ragged results are written by the kernel after a pass that counts
their row lengths (none where the result has an operand's offsets; a last-axis reduction
of `N * var * var` rows that follow each other runs over the inner rows as `M * var`,
`nest_plan.flat_rows`).

This module runs the passes (count, check, fill) and plans the bound call's fill pass
(`plan_fill`, for `lazyk.runtime.ragged_bind`). What the nest decides from the structure
alone is `lazyk.runtime.nest_structure` (cached per structure); the result arrays are built
by `lazyk.runtime.nest_results`; reductions over every axis run in
`lazyk.runtime.nest_totals`. The forms that run in two steps and the entry,
`evaluate_nest`, are in `lazyk.runtime.nest_steps`. `nest_run` returns None where the nest
does not take the form; the caller names the types and the operation in a
NotSupportedError."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lazyk.arrays.array import masked_empty
from lazyk.arrays.buffers import offsets_array
from lazyk.arrays.outputs import empty as fresh
from lazyk.codegen.levels import (
    FIXED,
    VAR,
    Check,
    Count,
    Fill,
    FixedDimData,
    Fold,
    Map,
    Mark,
    Reduce,
    Total,
)
from lazyk.errors import ArrayConstructionError, ShapeError
from lazyk.frontend.graph import PICK_OP, REDUCE_OP, SELECT_OP, TAKE_OP, toposort
from lazyk.frontend.leaves import leaf_data
from lazyk.frontend.ops import ARG_REDUCTIONS, OPS
from lazyk.frontend.spec import format_spec
from lazyk.kernel.flat import data_pointer
from lazyk.runtime.nest_plan import (
    NestOperand,
    flat_items,
    flat_rows,
    nest_operand,
    nest_plan,
    nest_words,
    offsets_rows,
    positions,
)
from lazyk.runtime.nest_results import fixed_rows, nest_reduced, nest_result, row_path
from lazyk.runtime.nest_structure import prepared_plan
from lazyk.runtime.nest_threads import count_parts, nest_parts
from lazyk.runtime.nest_totals import all_total, fold_parts, nest_all
from lazyk.runtime.ragged_rules import RECORDERS, branch_masks

I64, U8 = np.dtype(np.int64), np.dtype(np.uint8)

# Any nesting of fixed and var dims runs in one generated loop nest (`codegen.nest`): rows
# read in place from the arrmeta, checked and paired inside the kernel, results written by
# the kernel (a count pass first gives the lengths of result var rows).
# A result of this many bytes or more is allocated only after a Check pass walked the rows
# (not the elements): rows against a fixed dim that cannot pair raise first.
CHECK_FIRST = 1 << 26


class NestFill:
    """The fill pass of a loop nest planned for one set of arrays (its count passes run):
    kernel, kernel data words, parts, and the result's structure (`plan_fill`).
    `npartial`: a reduction over every axis, one partial result per part (else 0).
    `present`: the present bytes of the result's `?n` rows by result level (bind's; the
    fill pass writes them again at the kernel data words `present_words`).
    `recount`: where() over missing rows (the result's rows follow the values), a call that
    runs the count passes again and gives the result's (offsets, validity) now; else None."""

    items = None  # a fold over every item of rows of one offsets array, read as one run:
    # (those offsets, their first and last at bind), which each bound call checks again

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def finish(self, values, flags, count: int = 0):
        """(values in the result dtype, present mask or None) from the fill pass's values
        and flag bytes: the rules `evaluate_nest` applies. A reduction over every axis
        combines its parts' partial results (`count`: the elements they folded)."""
        if isinstance(self.mode, Total):
            values, mask = all_total(values, flags, count, self.reduce_arg, self.mean,
                                      self.option or self.qrows, self.skipna)
            return values.astype(self.dtype, copy=False), mask
        if self.reduce_arg is None:
            mask = flags.view(bool) if self.option else None
            return values.astype(self.dtype, copy=False), mask
        values, mask = nest_reduced(values, flags, self.reduce_arg,
                                     self.option or self.qrows, self.skipna)
        if self.last_q:  # a missing row reduced along its axis
            mask = (flags & 4) == 0 if mask is None else mask & ((flags & 4) == 0)
        if self.qrows and self.mean and mask is not None:
            mask = mask & ((flags & 2) != 0)
        return values.astype(self.dtype, copy=False), mask

    def skeleton(self, dims, all_present: bool = False):
        """The result's structure over `dims` with each element its position in the
        values the fill pass writes (int64); `?n` rows missing where `present` says (or
        none missing: `all_present`)."""
        present = {p: np.ones_like(v) for p, v in self.present.items()} if all_present \
            else self.present
        return fixed_rows(nest_result(np.arange(self.nvals, dtype=np.int64), None, dims,
                                      self.offsets, self.xs_end, self.validity), present)


def plan_fill(expr):
    """A `NestFill` for `expr` over its leaves (the count passes run now), or a text
    saying why its fill pass cannot be planned ahead of the values."""
    root, red_node, reduce_arg = expr.node, expr.node, None
    if root.op == REDUCE_OP:
        reduce_arg, root = root.arg, root.srcs[0]
    if any(n.op == REDUCE_OP for n in toposort(root)):
        return "a reduction feeding further work is computed first, from the values"
    if any(n.op in (SELECT_OP, TAKE_OP) for n in toposort(root)):
        return "a selection or gather (x[mask], x[positions]) has rows that follow the values"
    if any(n.op == PICK_OP for n in toposort(root)):
        return "the tuples of combinations and cartesian products are walked when called"
    used = {n.arg for n in toposort(root) if n.op == "input"}
    names = [n for n in expr.env if n in used]
    leaves = [leaf_data(expr.env[n]) for n in names]
    if not leaves:
        return "no array operands"
    where_masks = branch_masks(root, names, leaves)
    if where_masks and reduce_arg is not None:
        return "where() over missing values takes each element's missing state from " \
            "the branch it selects, in two steps"
    got = nest_run(root, red_node, reduce_arg, names, leaves, where_masks=where_masks,
                    plan=True)
    return "the loop nest does not take it in one pass" if got is None else got


@dataclass(frozen=True)
class Picks:
    """What a nest computes at some levels besides its value (`x[mask]`, `x[positions]`,
    lowered by `nest_select`): `keep`, the nest level that keeps only the elements where
    `roots[0]` (a bool graph) is true or missing (None: none), and `taken`: (leaf name,
    level, index into `roots`) of each operand read at the positions that root (int64)
    gives at that level. Spec output 1 + i computes `roots[i]`; `array` names the leaves
    of the selected array; `every_position`: an arg-reduction gives the kept elements'
    positions among all the row's elements (`Keep.every_position`)."""

    keep: int | None
    roots: tuple
    taken: tuple
    array: frozenset = frozenset()  # the leaves the selected array reads (`keep`)
    every_position: bool = False
    # (leaf name, level, index into `roots`) of the other leaves of a gathered array: a
    # fixed 1 there, they stretch along it, yet their rows above are the array's
    beside: tuple = ()

    def outputs(self, names) -> list:
        """Per leaf of `names`: None, or (level, spec output) where it is taken, or (level,
        spec output, True) where it lies beside the operands taken there (`beside`)."""
        at = {n: (k, 1 + i, True) for n, k, i in self.beside}
        at.update({n: (k, 1 + i) for n, k, i in self.taken})
        return [at.get(n) for n in names]


def _typed_shape(root, picks) -> tuple:
    """The shape `nest_plan` reads (its fixed 1 over var rows: `?1` rows) of a nest whose
    value is `root`: with `picks`, the dims above the first level kept or gathered where
    the value and each graph of the picks say 1 (the others are var: any length)."""
    if picks is None:
        return root.shape
    nd = len(root.shape)
    at = [k for _, k, _ in picks.taken + picks.beside] + (
        [] if picks.keep is None else [picks.keep])
    return tuple(n if k < min(at, default=nd) and all(
        k < nd - r.ndim or r.shape[k - nd + r.ndim] == 1 for r in picks.roots) else None
        for k, n in enumerate(root.shape))


def nest_run(root, red_node, reduce_arg, names, leaves, where_masks=False, parts_only=False,
              flat=None, plan=False, scan=None, picks=None):
    """The nest's result, or None where it does not take the form. `parts_only` (elementwise
    work only): (values, present flags, result dims, offsets, present rows of var levels,
    present bytes of `?n` levels) instead of the Array. `flat`: (operands, offsets, plan) from
    `flat_rows`: the rows of the last two levels as one `M * var` level; the result gets
    the offsets above it. `plan`: a `NestFill` after the count passes. `scan` ("add" or
    "multiply"; elementwise work only): the running fold of each innermost row instead of
    the values (`levels.Scan`). `picks`: elements kept and operands taken at positions
    (`Picks`)."""
    ops_ = flat[0] if flat else [nest_operand(v) for v in leaves]
    if any(o is None for o in ops_):
        return None
    scalar = not any(o.dims for o in ops_)  # 0-d leaves (`?T` ones): one level of size 1
    if scalar:
        if reduce_arg is not None or scan:
            return None
        ops_ = [NestOperand([FixedDimData(1, 0)], o.ptr, o.dtype, o.mask_offset, o.aligned)
                for o in ops_]
    if picks is not None and (scalar or plan or where_masks):
        return None
    levels, sizes, kinds = flat[2] if flat else \
        nest_plan(ops_, picks.outputs(names) if picks else None, _typed_shape(root, picks))
    nlev = len(levels)
    if len(root.shape) != nlev - scalar + bool(flat):
        return None
    mode = Map() if reduce_arg is None else Reduce()
    axes = () if reduce_arg is None else (nlev - 1,) if flat else tuple(reduce_arg[1])
    if isinstance(mode, Reduce) and not (flat or where_masks or plan or picks) and \
            axes == (nlev - 1,):
        rows = flat_rows(ops_, levels, kinds, sizes)
        if rows is not None:
            try:
                return nest_run(root, red_node, reduce_arg, names, leaves, flat=rows)
            except (ArrayConstructionError, ShapeError):
                pass  # the full nest names the row [i, j] of the error
    # (not for a scan: its running fold starts again at every row)
    if reduce_arg is None and not (flat or where_masks or plan or parts_only or scan or picks):
        items = flat_items(ops_, levels, kinds, sizes)
        if items is not None:  # one loop over the items of rows of one offsets array
            return nest_run(root, red_node, reduce_arg, names, leaves, flat=items)
    items = reduce_arg is not None and not (flat or where_masks or picks) and \
        not reduce_arg[2] and reduce_arg[0] not in ARG_REDUCTIONS and \
        tuple(reduce_arg[1]) == tuple(range(nlev)) and \
        flat_items(ops_, levels, kinds, sizes, offsets=False)
    if items:  # a fold over every item of rows of one offsets array: one run of the items
        ops_, (levels, sizes, kinds) = items[0], items[2]
        nlev = 1
    prep = prepared_plan(root, red_node, reduce_arg, names, ops_, levels, kinds, where_masks,
                         bool(flat), scan, picks, every_item=bool(items))
    if prep is None:
        return None
    mode, step, spec, acc, labels, sel_kinds, maskd = (
        prep.mode, prep.step, prep.spec, prep.acc, prep.labels, prep.sel_kinds, prep.maskd)
    qlev, qfix, wq, skipna = prep.qlev, prep.qfix, prep.wq, prep.skipna
    sel = [ops_[j] for j in labels]
    if prep.declined:
        return None
    if isinstance(mode, Total) and plan:  # partial results per part, combined by `NestFill.finish`
        words, _ = nest_words(levels, sizes, sel, sel_kinds)
        parts = fold_parts(levels, sizes, sel, sel_kinds)
        return NestFill(
            kern=prep.kernel(Fill()), parts=parts, words=words, consts=step.consts,
            labels=labels, leaves=leaves,
            names=names, nvals=1, npartial=len(parts), acc=acc, dtype=red_node.dtype,
            flagged=True, option=any(maskd), qrows=bool(qlev), last_q=False, mean=step.mean,
            skipna=skipna, reduce_arg=reduce_arg,
            keep_axes=tuple(range(nlev)) if reduce_arg[2] else (), mode=mode, dims=[],
            offsets={}, xs_end=[], validity={}, recount=None, present={}, present_words={},
            items=items[1] if items else None)
    if isinstance(mode, Total):
        return nest_all(spec, step, levels, sizes, sel, sel_kinds, maskd, skipna, labels,
                        leaves, reduce_arg, red_node, bool(qlev), mode, prep.optional)
    # the result's levels (their level numbers in the nest), their kinds and sizes; a level
    # keeping elements has var rows in the result (their lengths counted)
    res = list(range(nlev)) if isinstance(mode, Map) else list(range(nlev - 1)) if \
        isinstance(mode, Reduce) else [k for k in range(nlev) if k not in axes]
    nres = len(res)
    words, lay = nest_words(levels, sizes, sel, sel_kinds)  # (the source's fixed sizes)
    # an arg-reduction of values that cannot be missing along a fixed axis of length 0
    empty_axis = reduce_arg is not None and reduce_arg[0] in ARG_REDUCTIONS and not (
        any(maskd) or qlev or prep.optional) and any(
        levels[k] is FIXED and not sizes[k] and (mode.keep is None or mode.keep.level != k)
        for k in axes)
    if mode.keep is not None:
        at = mode.keep.level
        levels = tuple(VAR if k == at else lv for k, lv in enumerate(levels))
        sizes = [0 if k == at else n for k, n in enumerate(sizes)]
    rl, rs = [levels[k] for k in res], [sizes[k] for k in res]
    rvar = [p for p in range(nres) if rl[p] is VAR]
    n0 = sizes[0] if levels[0] is FIXED else 1
    r_end = (rs[0] if rl[0] is FIXED else 1) if nres else 1
    offsets: dict = {}  # result level -> offsets of its rows
    validity: dict = {}  # result ?var level -> which of its rows are present
    # the result's ?var levels: a missing row stays missing above a folded axis, makes the
    # row below it missing at the axis, and below it is skipped under skipna
    if isinstance(mode, Fold):
        qres = {k for k in qlev if k < axes[0] or (k > axes[0] and not skipna)}
        qres |= {axes[0] + 1} if axes[0] in qlev else set()
    else:
        qres = qlev
    keep = [leaves]
    raw: dict = {}  # where() over missing rows: each level's marked lengths
    passes = []  # (level, kernel, parts, rows, kernel data, lengths) of each count pass
    # elementwise over `N * var` rows of one offsets array, or a reduction of the last axis
    # of `N * var * var` whose operands' outer rows are those of one offsets array: the
    # result has those rows
    same = offsets_rows(sel, sel_kinds, levels[:nres], sizes) if not qlev and \
        mode.keep is None and (isinstance(mode, Map) or (
            isinstance(mode, Reduce) and nlev == 3 and levels[2] is VAR)) else None
    if same is not None:
        offsets[1] = same
    # count passes: result var rows' lengths, one var level at a time (rows of a level are
    # the iterations of the level above, known once the levels above are counted); the
    # fill pass's kernel compiles meanwhile
    if rvar and same is None:
        prep.kernel_ahead(Fill(), where_masks and (any(maskd) or wq))
    for p in rvar:
        if same is not None:
            break
        nrows = positions(r_end, rl, rs, offsets, p)[-1] if p else 1
        lens = fresh(nrows, I64)
        w = words.copy()
        # earlier levels are written again with the same lengths: give them scratch copies
        scratch = {q: fresh(len(offsets[q]) - 1, I64) for q in rvar if q < p}
        for q in rvar:
            if q <= p:
                w[lay["lens"] + 2 * res[q]] = data_pointer(lens if q == p else scratch[q])
        npass = (Mark if wq and p == rvar[-1] else Count)(res[p])
        kern = prep.kernel(npass, wq)
        parts = count_parts(levels, sizes, offsets, rvar, res, p, n0, sel, sel_kinds)
        kern.run(w, step.consts, parts, (keep, lens, scratch), labels)
        if wq and plan:
            passes.append((p, kern, parts, nrows, w, lens.copy()))
        if wq and p == rvar[-1]:
            raw = {**scratch, p: lens}
        for rec in RECORDERS:
            rec.append(("nest", kern, len(parts)))
        off = fresh(nrows + 1, I64)
        off[0] = 0
        np.cumsum(np.maximum(lens, 0), out=off[1:])  # -1: a missing row, no elements
        offsets[p] = off
        if res[p] in qres:
            validity[p] = lens >= 0
    offsets_counted = dict(offsets)  # (before where() over missing rows prunes them)
    if wq:
        offsets, validity = _pruned(raw, rl, rs, rvar, {p for p in rvar if res[p] in qres})
    xs_end = positions(r_end, rl, rs, offsets, nres) if nres else []
    nvals = xs_end[-1] if xs_end else 1
    if empty_axis and not nvals:  # (no result to name: a result's row names one, below)
        raise ValueError(f"attempt to get {reduce_arg[0]} of an empty sequence (axis "
                         f"{reduce_arg[1][0]} has length 0)")
    if plan:  # `lazyk.runtime.ragged_bind`: the fill pass planned, run later on the same arrays
        for p in rvar:
            words[lay["lens"] + 2 * res[p]] = data_pointer(offsets[p])
        dims = [] if scalar else [(VAR if rl[p] is VAR else rs[p]) for p in range(nres)]
        kern = prep.kernel(Fill(), where_masks and (any(maskd) or wq))
        # (`?n` rows under where() over missing rows: which are missing follows the
        # values; the bound call stores this call's present bytes, lazyk.runtime.ragged_bind; var
        # rows below them would have no storage under a row missing at bind)
        rfix = [p for p in range(nres) if res[p] in qfix]
        if wq and rfix and VAR in rl[min(rfix):]:
            return "where() over missing rows with `?n` result rows over var dims (missing " \
                "rows against a fixed dim)"
        parts = nest_parts(levels, sizes, offsets, rvar + rfix, sel, sel_kinds, mode, res, n0)
        # `?n` levels of the result: the fill pass writes each row's present byte (from
        # the inputs' missing rows, which each bound call checks): run it once now
        present = {p: fresh(positions(r_end, rl, rs, offsets, p)[-1] if p else 1, U8)
                   for p in rfix}
        if rfix:
            w, vals = words.copy(), fresh(nvals, acc)
            flags = fresh(nvals, U8) if any(maskd) or not isinstance(mode, Map) else None
            w[3], w[4] = data_pointer(vals), 0 if flags is None else data_pointer(flags)
            for p in rfix:
                w[lay["lens"] + 2 * res[p]] = data_pointer(present[p])
            kern.run(w, step.consts, parts, (keep, vals, flags, offsets, present), labels)
        return NestFill(
            kern=kern, parts=parts, present=present,
            present_words={p: lay["lens"] + 2 * res[p] for p in rfix},
            words=words, consts=step.consts, labels=labels, leaves=leaves, names=names,
            nvals=nvals, npartial=0,
            acc=acc, dtype=(root if reduce_arg is None else red_node).dtype,
            flagged=any(maskd) or not isinstance(mode, Map), option=any(maskd), qrows=bool(qlev),
            last_q=nlev - 1 in qlev and isinstance(mode, Reduce), mean=step.mean, skipna=skipna,
            reduce_arg=reduce_arg, keep_axes=axes if reduce_arg and reduce_arg[2] else (),
            mode=mode, dims=dims, offsets=offsets, xs_end=xs_end, validity=validity,
            recount=_recounter(passes, step.consts, labels, keep, dict(offsets_counted), res,
                               rvar, (rl, rs, {p for p in rvar if res[p] in qres}), lay)
            if wq else None)
    if nvals * acc.itemsize >= CHECK_FIRST and isinstance(mode, (Map, Reduce)):
        # rows against a fixed dim are paired by the fill pass, which writes into the
        # result: walk them first, so rows that cannot pair raise the ShapeError naming
        # the row before the result is allocated (not a MemoryError for n x n elements)
        w = words.copy()
        w[3] = w[4] = 0
        for p in rvar:
            w[lay["lens"] + 2 * res[p]] = data_pointer(offsets[p])
        parts = nest_parts(levels, sizes, offsets, rvar, sel, sel_kinds, mode, res, n0)
        prep.kernel(Check(), where_masks and (any(maskd) or wq)).run(
            w, step.consts, parts, (keep, offsets), labels)
    option = any(maskd)
    packed = None
    if reduce_arg is None and not parts_only and prep.value_option and option and \
            acc == root.dtype:  # `?T` values: written in place in the result's layout
        packed = masked_empty((nvals,), acc, filled=True)  # (the kernel writes each value)
        out = packed[1]
    elif reduce_arg is not None and reduce_arg[0] in ARG_REDUCTIONS and not parts_only and \
            (option or qlev or prep.optional) and acc == red_node.dtype:
        # (positions that may be missing, in place: the kernel writes each one, -1 for none)
        packed = masked_empty((nvals,), acc, filled=True)
        out = packed[1]
    else:
        out = fresh((nvals,), acc)  # large outputs reuse faulted-in blocks
    flags = fresh(nvals, U8) if option or not isinstance(mode, Map) else None
    fill = Fill()
    if packed is not None and reduce_arg is None:  # the kernel writes the present bytes
        flags, fill = packed[2].view(U8), Fill(acc.itemsize)  # into the result's mask
    if isinstance(mode, Reduce) and not (option or qlev) and (
            OPS[reduce_arg[0]].folds_to_identity or
            (reduce_arg[0] == "mean" and acc.kind not in "iu")):
        flags = None  # every row has a value (`nest_reduced` reads no flags)
    words[3] = data_pointer(out)
    words[4] = 0 if flags is None else data_pointer(flags)
    for p in rvar:  # the fill pass checks every result row against these
        words[lay["lens"] + 2 * res[p]] = data_pointer(offsets[p])
    # `?n` levels of the result: the fill pass writes each row's present byte
    rfix = [p for p in range(nres) if res[p] in qfix]
    present = {p: fresh(positions(r_end, rl, rs, offsets, p)[-1] if p else 1, U8)
               for p in rfix}
    for p in rfix:
        words[lay["lens"] + 2 * res[p]] = data_pointer(present[p])
    kern = prep.kernel(fill, where_masks and (any(maskd) or wq))
    parts = nest_parts(levels, sizes, offsets, rvar + rfix, sel, sel_kinds, mode, res, n0)
    kern.run(words, step.consts, parts, (keep, out, flags, offsets, present), labels)
    for rec in RECORDERS:
        rec.append(("nest", kern, len(parts)))
    dims = [] if scalar else [(VAR if rl[p] is VAR else rs[p]) for p in range(nres)]
    if parts_only:
        return (out.astype(root.dtype, copy=False), None if flags is None else
                flags.view(bool), dims, offsets, validity, present)
    if reduce_arg is None:
        mask = flags.view(bool) if prep.value_option else None
        got = fixed_rows(nest_result(out.astype(root.dtype, copy=False), mask, dims,
                                     offsets, xs_end, validity, packed), present)
        return offsets_array(flat[1], got, check=None) if flat else got
    shape = ([None, VAR], {1: flat[1]}) if flat else (dims, offsets)
    values, mask = nest_reduced(out, flags, reduce_arg, option or bool(qlev) or
                                prep.optional, skipna,
                                row_name=lambda k: row_path(k, *shape))
    if nlev - 1 in qlev and isinstance(mode, Reduce):  # a missing row reduced along its axis
        mask = (flags & 4) == 0 if mask is None else mask & ((flags & 4) == 0)
    if qlev and step.mean and mask is not None:  # an empty mean of ?var input: missing
        mask = mask & ((flags & 2) != 0)
    if flat and mask is None and not reduce_arg[2]:  # `N * var * T` over the values
        return offsets_array(flat[1], values.astype(red_node.dtype, copy=False), check=None)
    if reduce_arg[2] and isinstance(mode, Reduce):
        dims.append(1)
    elif reduce_arg[2]:  # keepdims: a fixed 1 where each axis was (kept levels stay put)
        dims = [1 if k in axes else dims[res.index(k)] for k in range(nlev)]
        offsets, validity, present = ({res[p]: v for p, v in d.items()}
                                      for d in (offsets, validity, present))
        xs_end = positions(dims[0] if dims[0] is not VAR else 1,
                           [VAR if d is VAR else FIXED for d in dims],
                           [0 if d is VAR else d for d in dims], offsets, nlev)
    got = fixed_rows(nest_result(values.astype(red_node.dtype, copy=False), mask, dims,
                                   offsets, xs_end, validity, packed), present)
    if flat:
        got = offsets_array(flat[1], got, check=None)
    return got


def _recounter(passes, consts, labels, keep, counted, res, rvar, shape, lay):
    """`NestFill.recount` of where() over missing rows: the count passes bind ran (their
    kernels, parts and kernel data) run again on fresh lengths; the result's (offsets,
    validity) now, or None when the rows the passes count changed (not only the marks)."""
    def recount():
        raw = {}
        for p, kern, parts, nrows, w0, was in passes:
            lens = fresh(nrows, I64)
            scratch = {q: fresh(len(counted[q]) - 1, I64) for q in rvar if q < p}
            w = w0.copy()
            for q in rvar:
                if q <= p:
                    w[lay["lens"] + 2 * res[q]] = data_pointer(lens if q == p else scratch[q])
            kern.run(w, consts, parts, (keep, lens, scratch), labels)
            if p == rvar[-1]:
                raw = {**scratch, p: lens}
            elif not np.array_equal(lens, was):
                return None
        return _pruned(raw, *shape[:2], rvar, shape[2])
    return recount


def _pruned(raw, rl, rs, rvar, qres):
    """Offsets and present rows of every result var level from the mark pass's lengths
    (n, -1 missing, -2 - n missing after a where() took a missing row): the rows under a
    missing row are dropped."""
    offsets, validity, alive = {}, {}, None
    prev = None
    for p in rvar:
        lens = raw[p]
        n = np.where(lens >= 0, lens, np.where(lens == -1, 0, -2 - lens))
        if prev is None:
            alive = np.ones(len(lens), bool)
        else:
            pn, pok, palive, pp = prev
            mult = int(np.prod([rs[q] for q in range(pp + 1, p)], dtype=np.int64))
            alive = np.repeat(palive & pok, pn * mult)
            if len(alive) != len(lens):
                raise ShapeError("rows changed length while they were read")
        ok = lens >= 0
        prev = (n, ok, alive, p)
        kept = np.where(ok, n, 0)[alive]
        off = fresh(len(kept) + 1, I64)
        off[0] = 0
        np.cumsum(kept, out=off[1:])
        offsets[p] = off
        if p in qres:
            validity[p] = ok[alive]
    return offsets, validity


def explain_nests(nests, ir: bool = True, asm: bool = True) -> str:
    """explain() text of the loop-nest kernels that ran: levels, operands, IR, assembly
    (each left out when `ir` / `asm` is False)."""
    many = "" if len(nests) < 2 else "; a part computed first (a keepdims reduction, say) " \
        "runs its own nest, and count passes size new var rows before the fill pass"
    out = [f"== loop-nest kernels: {len(nests)} (the loop nest follows the result type; "
           f"elementwise body and reduction fused{many})"]
    for k, (kern, nparts) in enumerate(nests):
        levels = " * ".join(lv.value for lv in kern.levels)
        out.append(f"== nest {k + 1}: {kern.mode}, pass {kern.npass}, levels {levels}, "
                   f"{nparts} part(s) over threads")
        for j, kinds in enumerate(kern.kinds):
            out.append(f"   input {j}{' (?T)' if kern.masked[j] else ''}: " +
                       ", ".join(map(str, kinds)))
        out.append(format_spec(kern.spec))
        after = getattr(kern.mode, "after", None)
        if after is not None:
            reads = ", ".join(f"in{q} = input {j}" for q, j in enumerate(kern.mode.after_inputs, 1))
            out.append(f"-- at each row's end, from its fold (in0){', ' + reads if reads else ''}:")
            out.append(format_spec(after))
        if ir:
            out.append(f"== LLVM IR\n{kern.ir}")
        if asm:
            out.append(f"== assembly\n{kern.jit.asm}")
    return "\n".join(out)

"""Expressions over var / option arrays in one generated loop nest (`codegen.nest`,
`lazyk.kernel.nest`): fixed and var dims in any order and at any depth (`var * var * T`,
`N * var * 4 * T`, `var * var * var * T`) over `T` or `?T` (or strings, their
`{begin, size}` elements read in place for the string operations), missing rows (`?var`)
at any level; elementwise work with the seed broadcasting rules (`where` too) and
reductions over any axis or tuple of axes, in one pass (with missing rows: one axis,
every axis, or several axes below every `?var` dim; `lazyk.runtime.nest_steps` runs the others it
takes in two). Rows (of stepping views too) are read
in place from the arrmeta (every byte it lets the kernel address is checked inside its
memory block first) and checked and paired inside the kernel; leaves in another numeric
dtype than the body's are converted where loaded; ragged results are written by the kernel
after a pass that counts their row lengths (none where the result has an operand's offsets;
a last-axis reduction of `N * var * var` rows that follow each other runs over the inner
rows as `M * var`, `nest_plan.flat_rows`). What `nest_run` decides from the structure alone
is cached per structure (`_prepared`). The forms that run in two steps and the
entry, `evaluate_nest`, are in `lazyk.runtime.nest_steps`; the bound call (`lazyk.runtime.ragged_bind`) plans
its fill pass here (`plan_fill`). `nest_run` returns None where the nest does not take the
form; the caller names the types and the operation in a NotSupportedError."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from lazyk.arrays import arrmeta as M
from lazyk.arrays.array import Array, array, masked
from lazyk.arrays.buffers import offsets_array, regular
from lazyk.arrays.columns import columns
from lazyk.arrays.memory import MemoryBlock, foreign
from lazyk.backend.outputs import empty as fresh
from lazyk.codegen.levels import (
    FIXED,
    VAR,
    Check,
    Count,
    Fill,
    FixedDimData,
    Fold,
    Keep,
    Map,
    Mark,
    Pick,
    Reduce,
    Scan,
    Total,
)
from lazyk.codegen.nest_selection import inputs_of
from lazyk.errors import ArrayConstructionError, NotSupportedError, ShapeError
from lazyk.frontend import ops
from lazyk.frontend.expr import leaf_data
from lazyk.frontend.graph import REDUCE_OP, SELECT_OP, TAKE_OP, arg_key, toposort
from lazyk.frontend.ops import ARG_REDUCTIONS
from lazyk.frontend.spec import format_spec
from lazyk.kernel.nest import kernel_for, nest_kernel, nest_stats
from lazyk.kernel.nest import split as nest_split
from lazyk.lru import LRU
from lazyk.runtime.nest_plan import (
    NestOperand,
    count_parts,
    flat_items,
    flat_rows,
    index_weight,
    nest_operand,
    nest_parts,
    nest_plan,
    nest_words,
    offsets_rows,
    one_part,
    positions,
)
from lazyk.runtime.ragged_rules import (
    RECORDERS,
    branch_masks,
    fused_step,
    seed,
)
from lazyk.types import FixedDim, Option, VarDim

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

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def finish(self, values, flags, count: int = 0):
        """(values in the result dtype, present mask or None) from the fill pass's values
        and flag bytes: the rules `evaluate_nest` applies. A reduction over every axis
        combines its parts' partial results (`count`: the elements they folded)."""
        if isinstance(self.mode, Total):
            values, mask = _all_total(values, flags, count, self.reduce_arg, self.mean,
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
    gives at that level. Spec output 1 + i computes `roots[i]`."""

    keep: int | None
    roots: tuple
    taken: tuple

    def outputs(self, names) -> list:
        """Per leaf of `names`: None, or (level, spec output) where it is taken."""
        at = {n: (k, 1 + i) for n, k, i in self.taken}
        return [at.get(n) for n in names]


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
        nest_plan(ops_, picks.outputs(names) if picks else None)
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
    prep = _prepared(root, red_node, reduce_arg, names, ops_, levels, kinds, where_masks,
                     bool(flat), scan, picks)
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
        parts = _all_parts(levels, sizes, sel, sel_kinds)
        return NestFill(
            kern=prep.kernel(Fill()), parts=parts, words=words, consts=step.consts,
            labels=labels, leaves=leaves,
            names=names, nvals=1, npartial=len(parts), acc=acc, dtype=red_node.dtype,
            flagged=True, option=any(maskd), qrows=bool(qlev), last_q=False, mean=step.mean,
            skipna=skipna, reduce_arg=reduce_arg,
            keep_axes=tuple(range(nlev)) if reduce_arg[2] else (), mode=mode, dims=[],
            offsets={}, xs_end=[], validity={}, recount=None, present={}, present_words={})
    if isinstance(mode, Total):
        return _nest_all(spec, step, levels, sizes, sel, sel_kinds, maskd, skipna, labels,
                         leaves, reduce_arg, red_node, bool(qlev), mode, prep.optional)
    # the result's levels (their level numbers in the nest), their kinds and sizes; a level
    # keeping elements has var rows in the result (their lengths counted)
    res = list(range(nlev)) if isinstance(mode, Map) else list(range(nlev - 1)) if \
        isinstance(mode, Reduce) else [k for k in range(nlev) if k not in axes]
    nres = len(res)
    words, lay = nest_words(levels, sizes, sel, sel_kinds)  # (the source's fixed sizes)
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
    # elementwise over `N * var` rows of one offsets array: the result has its rows
    same = offsets_rows(sel, sel_kinds, levels, sizes) if isinstance(mode, Map) and not qlev \
        and mode.keep is None else None
    if same is not None:
        offsets[1] = same
    # count passes: result var rows' lengths, one var level at a time (rows of a level are
    # the iterations of the level above, known once the levels above are counted)
    for p in rvar:
        if same is not None:
            break
        nrows = positions(r_end, rl, rs, offsets, p)[-1] if p else 1
        lens = np.empty(nrows, np.int64)
        w = words.copy()
        # earlier levels are written again with the same lengths: give them scratch copies
        scratch = {q: np.empty(len(offsets[q]) - 1, np.int64) for q in rvar if q < p}
        for q in rvar:
            if q <= p:
                w[lay["lens"] + 2 * res[q]] = (lens if q == p else scratch[q]).ctypes.data
        npass = (Mark if wq and p == rvar[-1] else Count)(res[p])
        kern = prep.kernel(npass, wq)
        parts = count_parts(levels, sizes, offsets, rvar, res, p, n0)
        kern.run(w, step.consts, parts, (keep, lens, scratch), labels)
        if wq and plan:
            passes.append((p, kern, parts, nrows, w, lens.copy()))
        if wq and p == rvar[-1]:
            raw = {**scratch, p: lens}
        for rec in RECORDERS:
            rec.append(("nest", kern, len(parts)))
        off = np.zeros(nrows + 1, np.int64)
        np.cumsum(np.maximum(lens, 0), out=off[1:])  # -1: a missing row, no elements
        offsets[p] = off
        if res[p] in qres:
            validity[p] = lens >= 0
    offsets_counted = dict(offsets)  # (before where() over missing rows prunes them)
    if wq:
        offsets, validity = _pruned(raw, rl, rs, rvar, {p for p in rvar if res[p] in qres})
    xs_end = positions(r_end, rl, rs, offsets, nres) if nres else []
    nvals = xs_end[-1] if xs_end else 1
    if plan:  # `lazyk.runtime.ragged_bind`: the fill pass planned, run later on the same arrays
        for p in rvar:
            words[lay["lens"] + 2 * res[p]] = offsets[p].ctypes.data
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
        present = {p: np.empty(positions(r_end, rl, rs, offsets, p)[-1] if p else 1,
                               np.uint8) for p in rfix}
        if rfix:
            w, vals = words.copy(), np.empty(nvals, acc)
            flags = np.empty(nvals, np.uint8) if any(maskd) or not isinstance(mode, Map) else None
            w[3], w[4] = vals.ctypes.data, 0 if flags is None else flags.ctypes.data
            for p in rfix:
                w[lay["lens"] + 2 * res[p]] = present[p].ctypes.data
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
            w[lay["lens"] + 2 * res[p]] = offsets[p].ctypes.data
        parts = nest_parts(levels, sizes, offsets, rvar, sel, sel_kinds, mode, res, n0)
        prep.kernel(Check(), where_masks and (any(maskd) or wq)).run(
            w, step.consts, parts, (keep, offsets), labels)
    out = fresh((nvals,), acc)  # large outputs reuse faulted-in blocks
    option = any(maskd)
    flags = np.empty(nvals, np.uint8) if option or not isinstance(mode, Map) else None
    if isinstance(mode, Reduce) and not (option or qlev) and (
            reduce_arg[0] in ("sum", "prod", "any", "all") or
            (reduce_arg[0] == "mean" and acc.kind not in "iu")):
        flags = None  # every row has a value (`nest_reduced` reads no flags)
    words[3] = out.ctypes.data
    words[4] = 0 if flags is None else flags.ctypes.data
    for p in rvar:  # the fill pass checks every result row against these
        words[lay["lens"] + 2 * res[p]] = offsets[p].ctypes.data
    # `?n` levels of the result: the fill pass writes each row's present byte
    rfix = [p for p in range(nres) if res[p] in qfix]
    present = {p: np.empty(positions(r_end, rl, rs, offsets, p)[-1] if p else 1, np.uint8)
               for p in rfix}
    for p in rfix:
        words[lay["lens"] + 2 * res[p]] = present[p].ctypes.data
    kern = prep.kernel(Fill(), where_masks and (any(maskd) or wq))
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
                                     offsets, xs_end, validity), present)
        return offsets_array(flat[1], got, check=None) if flat else got
    values, mask = nest_reduced(out, flags, reduce_arg, option or bool(qlev) or
                                prep.optional, skipna)
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
                                   offsets, xs_end, validity), present)
    if flat:
        got = offsets_array(flat[1], got, check=None)
    return got


class _Prep:
    """What `nest_run` decides from the structure alone (`_prepared`)."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def kernel(self, npass, where_masks: bool = False):
        """The nest kernel of this plan for pass `npass` (looked up by its ready key: a
        cleared kernel cache compiles again)."""
        return kernel_for(self.kkey + (npass, self.skipna, bool(self.step.mean),
                                       bool(where_masks)))


plans = LRU(256, "nest plans")  # structure -> `_Prep` (or _NO_PLAN)
_NO_PLAN = object()
# graph -> its `_structure` (the nodes are held here, so their ids stay theirs)
structures = LRU(256, "nest structures")


def _structure(root, red_node, reduce_arg, names) -> tuple:
    """The graph as the plan sees it: ops, dtypes, ranks, edges, args; inputs by their
    position in `names` (never their names or sizes: the step runs over the row space)."""
    order = toposort(root)
    at = {id(n): i for i, n in enumerate(order)}
    pos = {n: i for i, n in enumerate(names)}
    key = tuple((n.op, n.dtype, len(n.shape), tuple(at[id(s)] for s in n.srcs),
                 pos.get(n.arg, -1) if n.op == "input" else arg_key(n.arg)) for n in order)
    if reduce_arg is None:
        return key
    return key + ((red_node.op, red_node.dtype, len(red_node.shape), arg_key(reduce_arg)),)


def prepared_plan(root, red_node, reduce_arg, names, ops_, levels, kinds):
    """The structural plan `nest_run` makes for one nest over these operands (no where()
    masks, no flattened rows), or None where the nest does not take the form: its `mode`,
    `step`, `labels`, `sel_kinds`, `maskd`, `qlev`, `declined` and `kernel(npass)`."""
    return _prepared(root, red_node, reduce_arg, names, ops_, levels, kinds, False, False)


def _prepared(root, red_node, reduce_arg, names, ops_, levels, kinds, where_masks, flat,
              scan=None, picks=None):
    """The structural plan of `nest_run` (mode, fused step, spec, operand selection, missing
    row levels), or None where the nest does not take the form. Cached per structure (the
    graph, the leaves' dtypes, alignment and masks, the nest levels and operand kinds,
    options), never per data: a hit skips the canonical form, the fused step planning and
    the kernel key building; sizes, addresses and rows are read on every call."""
    # interned nodes: the same graph is one object
    graph = (root, red_node, reduce_arg is None, tuple(names))
    shape = structures.get_or_build(graph, lambda: _structure(root, red_node, reduce_arg,
                                                              names))
    if picks is not None:  # the level values' graphs, where they act, whom they take
        shape = (shape, picks.keep, tuple(_structure(r, r, None, names) for r in picks.roots),
                 tuple((names.index(n), k, i) for n, k, i in picks.taken))
    key = (shape, flat, bool(where_masks), levels, tuple(kinds),
           tuple((o.dtype, o.mask_offset is not None, bool(o.aligned)) for o in ops_), scan)
    got = plans.get(key)
    if got is not None:
        nest_stats["plan_hits"] += 1
        return None if got is _NO_PLAN else got
    got = _plan(root, red_node, reduce_arg, names, ops_, levels, kinds, where_masks, flat,
                scan, picks)
    plans.put(key, _NO_PLAN if got is None else got)
    nest_stats["plans"] += 1
    return got


def _plan(root, red_node, reduce_arg, names, ops_, levels, kinds, where_masks, flat,
          scan=None, picks=None):
    """`_prepared` without the cache."""
    nlev = len(levels)
    mode = (Scan(combine=scan) if scan else Map()) if reduce_arg is None else Reduce()
    axes = () if reduce_arg is None else (nlev - 1,) if flat else tuple(reduce_arg[1])
    if isinstance(mode, Reduce) and axes == tuple(range(nlev)) and nlev > 1:
        mode = Total()  # every axis: one partial fold per thread
    elif isinstance(mode, Reduce) and axes != (nlev - 1,):
        # any other axes: each result element folds its group (every element of the
        # folded levels; rows of the kept levels below the first one fold element by
        # element, rows of length 1 stretching)
        mode = Fold(axes)
    if picks is not None and (isinstance(mode, Fold) or where_masks or picks.keep == 0):
        return None  # (a fold's group walk reads no positions; level 0 is no counted row)
    if picks is not None and picks.keep is not None:
        mode = replace(mode, keep=Keep(picks.keep, 1))
    node = root if reduce_arg is None else red_node.replace(srcs=(root,))
    got = fused_step(node, dict(zip(names, range(len(names)))), reduce=not isinstance(mode, Map),
                     int_mean=True, extra=picks.roots if picks is not None else ())
    if got is None:
        return None
    step, by_name = got
    spec = step.spec
    arg = reduce_arg is not None and reduce_arg[0] in ARG_REDUCTIONS
    acc = np.dtype(np.int64) if arg else np.dtype(spec.outputs[0][1])  # (positions)
    sel = [ops_[by_name[n]] for n in step.inputs]
    sel_kinds = [kinds[by_name[n]] for n in step.inputs]
    labels = [by_name[n] for n in step.inputs]  # errors name the user's operand numbers
    # leaves stored in another dtype than the body computes in are converted where loaded
    spec = replace(spec, inputs=tuple(o.dtype for o in sel),
                   aligned=tuple(bool(o.aligned) for o in sel))
    maskd = tuple(o.mask_offset is not None for o in sel)
    # ?var levels: missing rows at any level; a missing row folded along a middle axis
    # makes the result row below it missing (a var one; a fixed one, `?n`, and folds over
    # several axes at or above them: `nest_steps._rows_first`, their group walk does not track
    # missing rows)
    qlev = {k for kd in sel_kinds for k in range(nlev) if kd[k].missing}
    # against a fixed dim of n: `?n` rows (elementwise work and last-axis reductions;
    # rows of `?0` have no room for their present byte)
    qfix = frozenset(k for k in qlev if levels[k] is FIXED)
    # folds over `?n` rows: `nest_steps._rows_first` (after the check of `?0` rows)
    declined = bool(qfix and not isinstance(mode, (Map, Reduce))) or bool(
        qlev and len(axes) > 1 and isinstance(mode, Fold) and max(qlev) >= axes[0]) or bool(
        qlev and ((isinstance(mode, Total) and 0 in qlev) or
                  (isinstance(mode, Fold) and axes[0] in qlev and levels[axes[0] + 1] is not VAR)))
    # a fold over a middle level walks each group with its own row reads: tuple levels
    # (combinations, cartesian) at or below it run the elementwise part first
    tuples = {k for kd in sel_kinds for k in range(nlev) if isinstance(kd[k], Pick)}
    declined = declined or bool(isinstance(mode, Fold) and tuples and max(tuples) >= axes[0])
    # where() over missing rows: a row is missing where an element takes a branch's
    # missing row; the last count pass marks those rows ("mark"), then they are pruned
    wq = bool(where_masks and qlev)
    skipna = bool(reduce_arg is not None and len(reduce_arg) > 3 and reduce_arg[3])
    if picks is not None:
        # a missing mask element or position above the last level: a missing row (`?var`)
        # of the result below it (a var level: a fixed one would be `?n` rows); `?n` rows
        # take no positions
        lv = {1 + i: k for _, k, i in picks.taken}
        if picks.keep is not None:
            lv[1] = picks.keep
        lost = {k + 1 for out, k in lv.items()
                if k < nlev - 1 and any(maskd[j] for j in inputs_of(spec, out))}
        declined = declined or bool(qfix) or any(levels[k] is not VAR for k in lost)
        qlev = qlev | lost
    # missing values (`?T`) in the result: where an input the value reads may be missing,
    # or a mask element or position of the last level (those above it: missing rows)
    value_option = any(maskd[j] for j in inputs_of(spec, 0)) or picks is not None and any(
        maskd[j] for out, k in lv.items() if k == nlev - 1 for j in inputs_of(spec, out))
    # an arg-reduction has no position for an empty row: a missing result where rows can be
    # empty or values missing (NumPy's fixed dims: an empty one raises ValueError)
    optional = arg and (VAR in levels or any(maskd) or bool(qlev) or picks is not None and
                        picks.keep is not None)
    return _Prep(mode=mode, axes=axes, step=step, spec=spec, acc=acc, labels=tuple(labels),
                 sel_kinds=tuple(sel_kinds), maskd=maskd, qlev=frozenset(qlev), qfix=qfix,
                 wq=wq, skipna=skipna, declined=declined, optional=optional,
                 value_option=value_option,
                 kkey=(spec, tuple(levels), tuple(tuple(k) for k in sel_kinds), maskd, mode))


def fixed_rows(result, present: dict):
    """`result` with the rows of result level p missing where `present[p]` is 0 (rows in
    nest order: every row of a level counted, also under a missing fixed row): `?n` dims,
    at any number of levels, over any dims. Laid out with NumPy, no Python per row: rows
    over fixed dims and values get the values then one shadow for the rows' present
    bytes (`_option_rows`); others a copy of their index block with that shadow after it
    (`_option_fixed`)."""
    if not present:
        return result
    top = isinstance(result.type, FixedDim)
    tree = columns(result if top else result[None])
    marks = {p + (not top): np.asarray(v) != 0 for p, v in present.items()}

    if 0 in marks:  # the whole result is one row
        got = tree_array(("regular", result.type.size, tree), 1, None, marks, 0) if top \
            else None
        got = None if got is None else got[0]
    else:
        got = tree_array(tree, result.type.size if top else 1, None if top else (), marks)
    if got is None:
        raise NotSupportedError(f"missing rows against a fixed dim (`?n` rows) in a result "
                                f"of type {result.type}: its layout has no room for them")
    return got


def var_rows(arr) -> tuple:
    """`arr` (`N * ?n * T`: missing rows against a fixed dim) with each `?n` dim as a
    `?var` dim whose rows all have n elements (offsets 0, n, 2n, ...; a missing row keeps
    its n slots, which nothing reads), and {dim: n}: the nest reads that, with a fixed n
    to pair (`lazyk.frontend.expr`). (arr, {}) for an array without `?n` dims. The values stay in
    place; only the offsets are new (NumPy, no Python per row)."""
    sizes, t, j = {}, arr.type, 0
    while isinstance(t, (FixedDim, VarDim, Option)):
        if isinstance(t, Option):
            t = t.elem
            if not isinstance(t, (FixedDim, VarDim)):
                break
            if isinstance(t, FixedDim):
                sizes[j] = t.size
        t, j = t.elem, j + 1
    if not sizes:
        return arr, {}
    if 0 in sizes or 1 in sizes.values():  # (a fixed 1 would stretch against var rows)
        raise NotSupportedError(f"expressions over {arr.type}: missing rows against a "
                                "fixed dim of 1 (`?1`), or an outermost `?n` dim")
    top = isinstance(arr.type, FixedDim)
    levels = {d + (not top) for d in sizes}

    def walk(node, count, level):
        kind = node[0]
        if kind == "numpy":
            return node
        if kind == "option" and node[2][0] == "numpy":
            return node
        if kind == "option":
            return ("option", node[1], walk(node[2], count, level))
        if kind == "regular":
            n = node[1]
            inner = walk(node[2], count * n, level + 1)
            if level in levels:
                return ("list", np.arange(count + 1, dtype=np.int64) * n, inner)
            return ("regular", n, inner)
        return ("list", node[1], walk(node[2], int(node[1][-1]), level + 1))
    count = arr.type.size if top else 1
    got = tree_array(walk(columns(arr if top else arr[None]), count, 1), count,
                     None if top else ())
    if got is None:
        raise NotSupportedError(f"expressions over {arr.type}: its layout of missing rows "
                                "against a fixed dim")
    return got, sizes


def tree_array(node, count: int, outer=None, marks=None, level: int = 1):
    """The lazyk Array of a columns node describing `count` elements (`outer`: the fixed
    dims of an outermost var dim, as `offsets_array`), with the rows at the levels of
    `marks` missing where it is False (`?n`); None for a form it does not build."""
    marks = marks or {}
    kind = node[0]
    if level in marks:
        if kind != "regular":
            return None
        got = _option_rows(node, marks[level])
        if got is None:
            inner = tree_array(node[2], count * node[1], None, marks, level + 1)
            got = None if inner is None else _option_fixed(inner, count, node[1],
                                                           marks[level])
        return got
    if kind == "numpy" or (kind == "option" and node[2][0] == "numpy"):
        return array(node[1]) if kind == "numpy" else masked(node[2][1], node[1])
    if kind == "regular":
        got = tree_array(node[2], count * node[1], None, marks, level + 1)
        return None if got is None else rows_of(got, count, node[1])
    if kind not in ("list", "option") or (kind == "option" and node[2][0] != "list"):
        return None
    valid = node[1] if kind == "option" else None
    off, child = (node[2][1], node[2][2]) if kind == "option" else (node[1], node[2])
    got = tree_array(child, int(off[-1]), None, marks, level + 1)
    return None if got is None else offsets_array(off, got, valid, outer=outer, check=None)


def rows_of(inner, count: int, n: int):
    """`count * n * X` over `inner` (`count * n` elements of X; `regular`, which cannot
    tell the count when n is 0)."""
    if n:
        return regular(inner, n)
    owner = inner.owner if isinstance(inner.owner, MemoryBlock) else inner.to_numpy()
    return Array.from_parts(FixedDim(count, FixedDim(0, inner.type.elem)),
                            (count, 0, 0, inner.meta[1]) + tuple(inner.meta[2:]), inner.ptr,
                            owner)


def _option_fixed(inner, rows: int, n: int, valid):
    """`rows * ?n * Y` from `inner` (`rows * n` elements of Y, a leading fixed dim) and
    each row's present flag: the block `inner` addresses copied, then a shadow where row
    i's present byte sits at the row's address + mask_offset (a `?0` row takes one
    alignment unit, so each row has an address of its own)."""
    owner = inner.owner
    if isinstance(owner, np.ndarray) and owner.flags.c_contiguous:
        owner = foreign(owner)  # NumPy values: the bytes `inner` addresses lie in it
    if not isinstance(owner, MemoryBlock):
        return None
    elem = FixedDim(n, inner.type.elem)
    step = n * inner.meta[1] if n else Option(elem).itemsize
    base = inner.ptr - owner.address
    at = -(-max(owner.size, base + rows * step) // 8) * 8
    block = MemoryBlock(at + rows * step, keep=[owner])
    block.buffer[:owner.size] = owner.buffer[:owner.size]
    if rows * step:
        block.buffer[at:].reshape(rows, step)[:, 0] = valid
    meta = (rows, step, at - base, n, inner.meta[1]) + tuple(inner.meta[2:])
    return Array.from_parts(FixedDim(rows, Option(elem)), meta, block.address + base, block)


def _option_rows(node, valid):
    """`L * ?n * X` from a columns node of `L * n * X` (X fixed dims over values) and each
    row's present flag, or None for other forms."""
    if node[0] != "regular":
        return None
    shape, x = [node[1]], node[2]
    while x[0] == "regular":
        shape.append(x[1])
        x = x[2]
    mask = None
    if x[0] == "option":
        mask, x = x[1], x[2]
    if x[0] != "numpy" or not shape[0] or not len(valid):
        return None
    values = np.ascontiguousarray(x[1])
    rows = len(valid)
    if values.size != rows * int(np.prod(shape)):
        return None
    size = values.nbytes
    block = MemoryBlock((2 + (mask is not None)) * size)
    block.buffer[:size] = values.view(np.uint8)
    item = values.dtype.itemsize
    rowbytes = size // rows if rows else item * int(np.prod(shape))
    block.buffer[size:2 * size].reshape(-1)[np.arange(rows) * rowbytes] = valid
    elem = M.type_from_numpy(values.dtype)
    meta = []
    if mask is not None:
        block.buffer[2 * size:].reshape(-1, item)[:, 0] = mask
        elem, meta = Option(elem), [2 * size]
    step = item
    for n in reversed(shape):
        meta[:0] = [n, step]
        elem = FixedDim(n, elem)
        step *= n
    t = FixedDim(rows, Option(elem))
    return Array.from_parts(t, (rows, rowbytes, size) + tuple(meta), block.address, block)


def _recounter(passes, consts, labels, keep, counted, res, rvar, shape, lay):
    """`NestFill.recount` of where() over missing rows: the count passes bind ran (their
    kernels, parts and kernel data) run again on fresh lengths; the result's (offsets,
    validity) now, or None when the rows the passes count changed (not only the marks)."""
    def recount():
        raw = {}
        for p, kern, parts, nrows, w0, was in passes:
            lens = np.empty(nrows, np.int64)
            scratch = {q: np.empty(len(counted[q]) - 1, np.int64) for q in rvar if q < p}
            w = w0.copy()
            for q in rvar:
                if q <= p:
                    w[lay["lens"] + 2 * res[q]] = (lens if q == p else scratch[q]).ctypes.data
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
        off = np.zeros(len(kept) + 1, np.int64)
        np.cumsum(kept, out=off[1:])
        offsets[p] = off
        if p in qres:
            validity[p] = ok[alive]
    return offsets, validity


def nest_reduced(out, flags, reduce_arg, any_mask: bool, skipna: bool, whole=False):
    """Values and present flags of a reduction (the rules of `tests/ragged_reference.py`)."""
    op = reduce_arg[0]
    if op in ARG_REDUCTIONS:  # a position where something was folded (flag bit 0)
        valid = (flags & 1).view(bool)
        if any_mask:
            return out, valid
        if not valid.all():  # fixed dims only: NumPy's error
            where = "array" if whole else f"row {int(np.argmin(valid))}"
            raise ValueError(f"attempt to get {op} of an empty sequence ({where})")
        return out, None
    extremum = op in ("min", "max")
    seeded = extremum and len(reduce_arg) > 4
    if not (any_mask or extremum or (op == "mean" and out.dtype.kind in "iu")):
        return out, None  # a sum over plain values: every row has one (no pass over flags)
    valid = (flags & 1).view(bool)  # (0 / 1 bytes: one pass, no copy to bool)
    int_mean = op == "mean" and out.dtype.kind in "iu"
    nonempty = (flags & 2) != 0 if seeded or int_mean else None
    values = out
    if seeded:
        values, valid = seed(values, valid, reduce_arg, ~nonempty, any_mask and not skipna)
    if not any_mask:
        if extremum and not valid.all():
            where = "array" if whole else f"row {int(np.argmin(valid))}"
            raise ValueError(f"zero-size {where} in reduction {op}, which has no identity")
        if int_mean and not nonempty.all():
            where = "array" if whole else f"row {int(np.argmin(nonempty))}"
            raise ValueError(f"zero-size {where} in a mean of dtype {out.dtype}: an "
                             "integer has no NaN")
        return values, None
    if skipna:
        return values, (valid if (extremum and not seeded) or op == "mean" else None)
    return values, valid


def nest_result(values, mask, dims, offsets, xs, validity=None):
    """The lazyk Array of a nest's result: fixed dims, var dims over their offsets (`?var`
    where `validity` has the level's present rows)."""
    var_at = [k for k, d in enumerate(dims) if d is VAR]
    if not var_at:
        shape = tuple(int(d) for d in dims)
        values = np.asarray(values, order="C").reshape(shape)
        return array(values) if mask is None else \
            masked(values, mask.reshape(shape))
    d = var_at[-1]
    tail = tuple(int(n) for n in dims[d + 1:])
    shape = (xs[d] if d < len(xs) else len(values),) + tail
    values = values.reshape(shape)
    cur = array(np.ascontiguousarray(values)) if mask is None else \
        masked(values, mask.reshape(shape))
    for k in range(d, -1, -1):
        if dims[k] is VAR:
            outer = None if k != var_at[0] else tuple(int(n) for n in dims[:k])
            cur = offsets_array(offsets[k], cur, (validity or {}).get(k), outer=outer,
                                check=False)
        elif k > var_at[0] and dims[k]:
            cur = regular(cur, int(dims[k]))
        elif k > var_at[0]:  # `m * 0 * X`: m (the elements of the level above) from xs
            t = FixedDim(xs[k - 1], FixedDim(0, cur.type.elem))
            owner = cur.owner if isinstance(cur.owner, MemoryBlock) else cur.to_numpy()
            cur = Array.from_parts(t, (xs[k - 1], 0, 0, cur.meta[1]) + tuple(cur.meta[2:]),
                                   cur.ptr, owner)
    return cur


def explain_nests(nests) -> str:
    """explain() text of the loop-nest kernels that ran: levels, operands, IR, assembly."""
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
        out.append(f"== LLVM IR\n{kern.ir}")
        out.append(f"== assembly\n{kern.jit.asm}")
    return "\n".join(out)



def _nest_all(spec, step, levels, sizes, sel, kinds, maskd, skipna, labels, leaves,
              reduce_arg, red_node, qrows=False, mode=Total(), optional=False):
    """A reduction over every axis: each part folds its level-0 rows into one partial
    result; the partials combine here (the reference's rules for the total). `qrows`:
    missing rows (`?var`), skipped under skipna, else the result is missing. An
    arg-reduction runs one part (its position counts every value before it)."""
    words, _ = nest_words(levels, sizes, sel, kinds)
    arg = reduce_arg[0] in ARG_REDUCTIONS
    n0 = sizes[0] if levels[0] is FIXED else 1
    parts = [(0, n0, 0, {})] if arg else _all_parts(levels, sizes, sel, kinds)
    acc = np.dtype(np.int64) if arg else np.dtype(spec.outputs[0][1])
    out, flags = np.empty(len(parts), acc), np.zeros(len(parts), np.uint8)
    words[3], words[4] = out.ctypes.data, flags.ctypes.data
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
    values, mask = _all_total(out, flags, count, reduce_arg, step.mean, any(maskd) or qrows,
                              skipna)
    dims = [1] * len(levels) if reduce_arg[2] else []
    return nest_result(values.astype(red_node.dtype, copy=False), mask, dims, {}, [])


def _all_parts(levels, sizes, sel, kinds) -> list:
    """Parts of a reduction over every axis: level-0 rows split by content, part t
    writing partial result t."""
    n0 = sizes[0] if levels[0] is FIXED else 1
    bounds = [0, n0]
    if levels[0] is FIXED and not one_part(sel, kinds, n0):
        before = index_weight(sel, kinds, n0)
        if before is not None:
            bounds = nest_split(n0, before(n0), before)
    return [(lo, hi, t, {}) for t, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:]))]


def _all_total(out, flags, count: int, reduce_arg, mean: bool, anym: bool, skipna: bool):
    """(value, present mask or None) of a reduction over every axis from the parts'
    partial results, flag bytes and element count (the reference's rules for the total)."""
    op, acc = reduce_arg[0], out.dtype
    bad, seen = bool((flags & 1).any()), bool((flags & 2).any())
    with np.errstate(all="ignore"):
        value = ops.get(op).combine_ufunc().reduce(out).astype(acc)
        valid = not bad if anym and not skipna else True
        if op in ("min", "max") or (mean and (skipna or anym)):
            valid = valid and count > 0
        if mean:  # as NumPy: in float64, truncated back for an integer dtype
            value = (value / (max(count, 1) if acc.kind in "iu" else count)).astype(acc)
    return nest_reduced(np.array([value], acc),
                         np.array([int(valid) | (int(seen) << 1)], np.uint8),
                         reduce_arg, anym, skipna, whole=True)

"""What the loop nest (`lazyk.runtime.nest_run`) decides from an expression's structure
alone: its mode (elementwise, scan, reduction over the last axis, fold over other axes, or
over every axis), the fused step and its spec, which operands it reads, where rows can be
missing and whether the nest declines the form; with the kernel key of each pass. Cached
per structure (`plans`, `structures`), never per data."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from lazyk.codegen.levels import FIXED, VAR, Fold, Keep, Map, Pick, Reduce, Scan, Total
from lazyk.codegen.nest_selection import inputs_of
from lazyk.frontend.graph import arg_key, toposort
from lazyk.frontend.ops import ARG_REDUCTIONS
from lazyk.kernel.nest import kernel_ahead, kernel_for, nest_stats
from lazyk.lru import LRU
from lazyk.runtime.nest_plan import kinds_of
from lazyk.runtime.ragged_rules import fused_step


class _Prep:
    """What `nest_run` decides from the structure alone (`prepared_plan`)."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def kernel(self, npass, where_masks: bool = False):
        """The nest kernel of this plan for pass `npass` (looked up by its ready key: a
        cleared kernel cache compiles again)."""
        return kernel_for(self._key(npass, where_masks))

    def kernel_ahead(self, npass, where_masks: bool = False) -> None:
        """Start compiling `kernel(npass, where_masks)` beside this process's work."""
        kernel_ahead(self._key(npass, where_masks))

    def _key(self, npass, where_masks: bool) -> tuple:
        return self.kkey + (npass, self.skipna, bool(self.step.mean), bool(where_masks))


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


def prepared_plan(root, red_node, reduce_arg, names, ops_, levels, kinds, where_masks=False,
                  flat=False, scan=None, picks=None, every_item=False):
    """The structural plan `nest_run` makes for one nest over these operands (mode, fused
    step, spec, operand selection, missing row levels: its `mode`, `step`, `labels`,
    `sel_kinds`, `maskd`, `qlev`, `declined` and `kernel(npass)`), or None where the nest
    does not take the form. `where_masks`: where() over missing values; `flat`: the rows of
    the last two levels as one (`nest_plan.flat_rows`); `every_item`: a fold over every
    axis of rows read as one run of their items (`nest_plan.flat_items`, one level). Cached
    per structure (the
    graph, the leaves' dtypes, alignment and masks, the nest levels and operand kinds,
    options), never per data: a hit skips the canonical form, the fused step planning and
    the kernel key building; sizes, addresses and rows are read on every call."""
    # interned nodes: the same graph is one object
    graph = (root, red_node, reduce_arg is None, tuple(names))
    shape = structures.get_or_build(graph, lambda: _structure(root, red_node, reduce_arg,
                                                              names))
    if picks is not None:  # the level values' graphs, where they act, whom they take
        shape = (shape, picks.keep, tuple(_structure(r, r, None, names) for r in picks.roots),
                 tuple((names.index(n), k, i) for n, k, i in picks.taken),
                 picks.every_position)
    key = (shape, flat, every_item, bool(where_masks), levels, tuple(kinds),
           tuple((o.dtype, o.mask_offset is not None, bool(o.aligned)) for o in ops_), scan)
    got = plans.get(key)
    if got is not None:
        nest_stats["plan_hits"] += 1
        return None if got is _NO_PLAN else got
    got = _plan(root, red_node, reduce_arg, names, ops_, levels, kinds, where_masks, flat,
                scan, picks, every_item)
    plans.put(key, _NO_PLAN if got is None else got)
    nest_stats["plans"] += 1
    return got


def _plan(root, red_node, reduce_arg, names, ops_, levels, kinds, where_masks, flat,
          scan=None, picks=None, every_item=False):
    """`prepared_plan` without the cache."""
    nlev = len(levels)
    mode = (Scan(combine=scan) if scan else Map()) if reduce_arg is None else Reduce()
    axes = () if reduce_arg is None else (nlev - 1,) if flat or every_item else \
        tuple(reduce_arg[1])
    if isinstance(mode, Reduce) and axes == tuple(range(nlev)) and (
            nlev > 1 or every_item or levels[0] is FIXED and reduce_arg[0] not in ARG_REDUCTIONS):
        mode = Total()  # every axis: one partial fold per thread (one fixed dim too)
    elif isinstance(mode, Reduce) and axes != (nlev - 1,):
        # any other axes: each result element folds its group (every element of the
        # folded levels; rows of the kept levels below the first one fold element by
        # element, rows of length 1 stretching)
        mode = Fold(axes)
    if picks is not None and (isinstance(mode, Fold) or where_masks or picks.keep == 0):
        return None  # (a fold's group walk reads no positions; level 0 is no counted row)
    node = root if reduce_arg is None else red_node.replace(srcs=(root,))
    got = fused_step(node, dict(zip(names, range(len(names)))), reduce=not isinstance(mode, Map),
                     int_mean=True, extra=picks.roots if picks is not None else ())
    if got is None:
        return None
    step, by_name = got
    if picks is not None and picks.keep is not None:  # (the array's inputs: `step.inputs`)
        mode = replace(mode, keep=Keep(picks.keep, 1, tuple(
            j for j, n in enumerate(step.inputs) if names[by_name[n]] in picks.array),
            picks.every_position))
    spec = step.spec
    arg = reduce_arg is not None and reduce_arg[0] in ARG_REDUCTIONS
    acc = np.dtype(np.int64) if arg else np.dtype(spec.outputs[0][1])  # (positions)
    sel = [ops_[by_name[n]] for n in step.inputs]
    sel_kinds = kinds_of(kinds, [by_name[n] for n in step.inputs])
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

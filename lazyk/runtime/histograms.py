"""Histograms in the loop nest (`lazyk.histogram`): each value's bin index (and weight) is
computed by the fused elementwise body, and a `Bins` nest adds it to counters of the
thread's own part (`codegen.levels.Bins`); the parts' counters are added up here. Several
histograms that read the same rows fill in one pass (one body with an index per
histogram). Forms the one pass does not take (where() over missing values, missing rows
against a fixed dim) compute the indices first, then bin those. What a pass decides from
its graph and its operands' layout is kept (`_forms`, `_graphs`, `_plans`): evaluating a
histogram again reads its arrays' rows and runs the kernel."""
from __future__ import annotations

import weakref
from dataclasses import replace

import numpy as np

from lazyk.arrays.array import Array
from lazyk.codegen.levels import FIXED, VAR, Bins, Fill, Reduce
from lazyk.errors import NotSupportedError, ShapeError
from lazyk.frontend.graph import (
    PICK_OP,
    REDUCE_OP,
    ROWS_OP,
    SELECT_OP,
    TAKE_OP,
    Node,
    graph_ops,
    has_rows,
    rewrite,
    toposort,
)
from lazyk.frontend.leaves import is_ragged, leaf_data, leaf_key
from lazyk.frontend.operands import as_expr
from lazyk.frontend.ops import ELEMENTWISE
from lazyk.frontend.rowops import flatten
from lazyk.frontend.spec import KernelSpec, pack_params
from lazyk.frontend.structure import renamed
from lazyk.kernel.flat import data_pointer
from lazyk.kernel.nest import kernel_for
from lazyk.lru import Memo
from lazyk.passes.fuse import fuse_outputs
from lazyk.runtime.bin_counts import BoundBins, bound_counts, keep_bound
from lazyk.runtime.nest_plan import (
    flat_items,
    kinds_of,
    nest_operand,
    nest_plan,
    row_signature,
)
from lazyk.runtime.nest_structure import prepared_plan
from lazyk.runtime.picks import lower_picks
from lazyk.runtime.ragged_rules import (
    branch_masks,
    inline_reductions,
    one_leaf_per_array,
    rows_graph,
)
from lazyk.runtime.row_steps import lower as lower_rows

# what a histogram's one pass reads besides elementwise work (inner reductions and row
# operations, `num` say, are computed first and read as leaves)
_READ = ("input", "const", "scalar", REDUCE_OP)
_FIRST = (SELECT_OP, TAKE_OP)  # (their values computed before the one pass)
_LOWER = (PICK_OP, "with_rows", REDUCE_OP, ROWS_OP)  # (lowered into leaves on every call)
_ELEMENTWISE = frozenset(ELEMENTWISE)
_TAKEN = _ELEMENTWISE | frozenset(_READ)  # (what a lowered graph may hold)


def bound_histograms(hists: list) -> list | None:
    """The counts of `hists` where a pass over the very same NumPy arrays ran before (kept
    bound: `runtime.bin_counts`), else None."""
    got = bound_counts(hists)
    if got is not None:
        stats["hits"] += 1
    return got


def fill_histograms(hists: list, computed: list | None = None) -> list | None:
    """The counts of each histogram (NumPy arrays in its dtype) in one pass over their rows,
    or None where the one pass does not take them. `computed`: each histogram's bin
    indices and weights (or None) already computed (then each counts in a pass of its own
    where they cannot share one)."""
    try:
        return _filled(hists, computed)
    except ShapeError as e:
        weighed = [h for h in hists if h.weights is not None]
        if len(weighed) != 1:
            raise
        h = weighed[0]
        raise ShapeError(f"histogram of values ({h.x.type}) with weights ({h.weights.type}): "
                         f"{e}") from None


def _filled(hists: list, computed: list | None) -> list | None:
    """`fill_histograms` without the operands named in its errors."""
    if computed is None:
        return _one_pass(hists)
    given = [(as_expr(_present(i) if w is None else i), None,
              None if w is None else as_expr(w)) for i, w in computed]
    # (one pass over indices of one shape: a selection's may have fewer rows than another's)
    got = _one_pass(hists, given) if len(hists) > 1 and \
        len({e[0].node.shape for e in given}) == 1 else None
    if got is None:
        got = [_one_pass([h], [p]) for h, p in zip(hists, given)]
    for h, c, (i, _) in zip(hists, got, computed):
        if c is None and h.weights is not None and getattr(i, "type", None) is not None \
                and i.type.missing_fixed_rows:
            raise NotSupportedError(f"histogram of {h.x.type} with weights: missing rows of a "
                                    "fixed size (?n) are counted without weights only; "
                                    "flatten the values and the weights first "
                                    "(lazyk.flatten(x, axis=None))")
        if c is None:
            raise NotSupportedError(f"histogram of {h.x.type}" + (
                "" if h.weights is None else f" with weights of type {h.weights.type}: "
                "the weights broadcast to the values, not the values to the weights"))
    return [c[0] if isinstance(c, list) else c for c in got]


def _present(index):
    """Computed bin indices with `?n` rows (no pass reads them) as their present values."""
    if isinstance(index, Array) and index.type.missing_fixed_rows:
        return flatten(index, axis=None).eval()
    return index


def _one_pass(hists: list, exprs: list | None = None):
    """One Bins nest over every histogram of `hists`, or None where it does not take
    them (then each runs on its own, or its bins are computed first). The graph work and
    the kernel plan are kept per structure (`_forms`, `_graphs`, `_plans`): a repeated
    pass reads the operands' layout, checks their rows and runs. `exprs`: per histogram
    (its bin index, None, its weight or None); by default, where the bins are equal, (the
    estimate of its bin, the value, the weight or None), the estimate corrected in the
    pass against the edges (`Histogram.estimate`)."""
    # The roots named by position: new arrays of a structure seen before find its form,
    # graph and plan. By default from the graphs kept for each x's structure; by the
    # expressions' own names where the pass lowers them.
    edges = [None] * len(hists)
    got = _by_position(*(_kept_roots(hists, edges) if exprs is None else _roots(exprs)))
    if got is None or _form_of(got[0]).lower:
        if exprs is None:
            exprs = [(h.index(), None, h.weight()) if e is None else (e[0], e[1], h.weight())
                     for h, e in [(h, h.estimate()) for h in hists]]
        got = _roots(exprs)
    key, env = got
    form = _form_of(key)
    if form.first:
        return None  # (selections, gathers: the bins computed first)
    roots, names = list(key), form.names
    if form.lower:  # tuples' items and inner reductions: new leaves (named alike each call)
        low = _lowered(exprs)
        if low is None:
            return None
        if any(REDUCE_OP in graph_ops(e.node) for e in low if e is not None):
            got = _row_folds(hists, edges, low, form.names)
            if got is not None:
                return got
            low = [None if e is None else inline_reductions(e.node, e, empty_missing=True)[1]
                   for e in low]
        canon, env = _canonical(low, form.names)
        roots, names = list(canon.roots), canon.inputs
    gkey = (tuple(roots), _arrays(names, env))
    graph = _graphs.get(gkey)
    if graph is None:
        graph = _graphs.put(gkey, _Graph(roots, env))
    if graph.declined or not graph.names:
        return None
    leaves = [leaf_data(env[n]) for n in graph.names]
    ops_ = [nest_operand(v) for v in leaves]
    if None in ops_:
        return None
    levels, sizes, kinds = _layout(leaves, ops_)
    if not _counted_once(graph.shapes, levels, sizes):
        return None
    if any(kd[k].missing and levels[k] is FIXED for kd in kinds for k in range(len(levels))):
        return None  # `?n` rows
    if len(hists) > 1 and not _same_rows(ops_, kinds, len(levels)):
        return None
    items = flat_items(ops_, levels, kinds, sizes, offsets=False)
    if items is not None:  # one loop over the items of rows of one offsets array
        ops_, (levels, sizes, kinds) = items[0], items[2]
    pkey = (graph, levels, tuple(kinds),
            tuple((o.dtype, bool(o.aligned), o.mask_offset is not None) for o in ops_))
    plan = _plans.get(pkey)
    if plan is None:
        plan = _plans.put(pkey, _Plan(graph, levels, kinds, ops_))
    else:
        stats["hits"] += 1
    sel = [ops_[j] for j in plan.labels]
    bound = BoundBins(hists, edges, [w is not None for w in key[2::3]], kernel_for(plan.kkey),
                      levels, sizes, sel, plan.kinds, plan.params, plan.labels)
    if exprs is None and not form.lower and all(lv is FIXED for lv in levels) and \
            all(o.mask_offset is None for o in ops_):  # (dense: its words never go stale)
        keep_bound(hists, bound)
    return bound.run(hists, leaves)


def _row_folds(hists: list, edges: list, low: list, names: tuple):
    """The counts of histograms whose values are one per row of a fold over the last level
    of rows (`met[sum(pt > 40, axis=1) >= 2]`), in one pass that folds each row and counts
    its fold with the row's other values (`Bins.after`): the folds are never stored. None
    where they do not take that form (then the folds are computed first)."""
    canon, env = _canonical(low, names)
    got = _by_position(canon.roots, env)
    if got is not None:  # (new arrays of a structure seen before: its graph and plan)
        key = (got[0], tuple(got[1]))
        canon, env = _canonicals.get(key) or _canonicals.put(key, _Canonical(*key)), got[1]
    if len(canon.reductions) != 1:
        return None
    gkey = (canon.roots, _arrays(canon.inputs, env))
    graph = _fold_graphs.get(gkey)
    if graph is None:
        graph = _fold_graphs.put(gkey, _FoldGraph(list(canon.roots), canon.reductions[0], env))
    if graph.declined:
        return None
    leaves = [leaf_data(env[n]) for n in graph.names]
    ops_ = [_per_row(v) if j in graph.per_row else nest_operand(v)
            for j, v in enumerate(leaves)]
    if None in ops_ or any(o.mask_offset is not None for o in ops_):
        return None
    levels, sizes, kinds = nest_plan(ops_)
    if tuple(levels) != (FIXED, VAR) or any(lv.missing for kd in kinds for lv in kd):
        return None
    pkey = (graph, levels, tuple(kinds), tuple((o.dtype, bool(o.aligned)) for o in ops_))
    plan = _fold_plans.get(pkey)
    if plan is None:
        plan = _fold_plans.put(pkey, _FoldPlan(graph, levels, kinds, ops_))
    else:
        stats["hits"] += 1
    if plan.kkey is None:
        return None
    sel = [ops_[j] for j in plan.labels]
    return BoundBins(hists, edges, graph.weighted, kernel_for(plan.kkey), levels, sizes, sel,
                     plan.kinds, plan.params, plan.labels).run(hists, leaves)


def _per_row(v):
    """The nest operand of a 1-d NumPy array read once per row (a fixed dim of 1 against
    the rows), or None. Kept per array, so that a pass over the same arrays is the same
    operands and finds its nest plan again (`nest_plan`)."""
    if type(v) is not np.ndarray or v.ndim != 1:
        return None
    key = (id(v), data_pointer(v), v.shape, v.strides, v.dtype)
    got = _per_row_operands.get(key)
    if got is None or got[0]() is not v:
        got = _per_row_operands.put(key, (weakref.ref(v), nest_operand(v[:, None])))
    return got[1]


# (a 1-d array's id, address, shape, strides, dtype) -> (a weak reference to it, its
# operand read once per row)
_per_row_operands = Memo(64, "histogram per-row operands")


class _FoldGraph:
    """A pass over row folds: the fold `red` (its input names first in `names`), the
    graph `after` computes from the fold (`~fold`) and the names read once per row
    (`per_row`: their positions in `names`); `declined` where the roots are not one value
    per row, a value may be missing, or the fold is not a plain one over the last axis."""

    def __init__(self, roots: list, red, env: dict):
        self.red, self.declined = red, True
        self.corrected = tuple(v is not None for v in roots[1::3])
        self.weighted = tuple(w is not None for w in roots[2::3])
        src = red.srcs[0]
        if len(red.arg) != 3 or red.arg[0] not in _ROW_FOLDS or tuple(red.arg[1]) != (1,) \
                or red.arg[2] or len(src.shape) != 2 or red.dtype.kind not in "biuf":
            return
        fold = Node("input", red.dtype, red.shape, (), "~fold")
        after = [None if r is None else rewrite(
            r, lambda n, srcs: fold if n is red else
            n.replace(srcs=srcs) if srcs != n.srcs else n) for r in roots]
        after = [r for r in after if r is not None]
        if any(len(n.shape) > 1 for n in toposort(after)) or \
                any(len(r.shape) != 1 for r in after):
            return
        folded = list(dict.fromkeys(n.arg for n in toposort(src) if n.op == "input"))
        reads = list(dict.fromkeys(n.arg for n in toposort(after) if n.op == "input"))
        self.names = tuple(folded + [n for n in reads if n != "~fold" and n not in folded])
        if any(getattr(env[n], "option", False) for n in self.names):
            return
        self.per_row = frozenset(j for j, n in enumerate(self.names) if n not in folded)
        body, inputs, outs, self.consts = fuse_outputs([rows_graph(r) for r in after])
        # (`after` reads the fold as its input 0, then the others in their order)
        order = ["~fold"] + [n for n in inputs if n != "~fold"]
        at = {n: q for q, n in enumerate(order)}
        self.body = tuple(replace(i, attr=at[inputs[i.attr]]) if i.op == "load" else i
                          for i in body)
        self.after_names = order
        self.outs = tuple((i, _stored(r) if real else _index_dtype(r))
                          for i, r, real in zip(outs, after,
                                                _kinds(self.corrected, self.weighted)))
        self.declined = False
        stats["graphs"] += 1


class _FoldPlan:
    """The kernel of a pass over row folds for operands of this layout (`kkey`: None where
    the fold does not take the one-pass form), the operands it reads (`labels`: the fold's,
    then those read once per row) and their kinds, the parameter bytes."""

    def __init__(self, graph: _FoldGraph, levels, kinds, ops_):
        self.kkey, red = None, graph.red
        prep = prepared_plan(red.srcs[0], red, red.arg, graph.names, ops_, levels, kinds)
        if prep is None or not isinstance(prep.mode, Reduce) or prep.mode.keep is not None \
                or prep.declined or prep.qlev or any(prep.maskd) or prep.skipna or \
                prep.step.mean or prep.optional:
            return
        extra = [j for j in range(len(graph.names)) if j not in prep.labels]
        self.labels = list(prep.labels) + extra
        self.kinds = kinds_of(kinds, self.labels)
        place = {graph.names[j]: q for q, j in enumerate(self.labels)}
        spec = replace(prep.spec, inputs=prep.spec.inputs + tuple(ops_[j].dtype for j in extra),
                       aligned=prep.spec.aligned + tuple(bool(ops_[j].aligned) for j in extra))
        read = [ops_[graph.names.index(n)] for n in graph.after_names[1:]]  # (after the fold)
        after = KernelSpec(inputs=(red.dtype, *(o.dtype for o in read)),
                           aligned=(True, *(bool(o.aligned) for o in read)),
                           body=graph.body, outputs=graph.outs)
        mode = Bins(graph.weighted, graph.corrected, after=after,
                    after_inputs=tuple(place[n] for n in graph.after_names[1:]))
        self.kkey = (spec, tuple(levels), tuple(tuple(k) for k in self.kinds),
                     (False,) * len(self.labels), mode, Fill(), False, False, False)
        self.params = prep.step.consts + pack_params(after.params, graph.consts)
        stats["plans"] += 1


# the reductions a histogram of row folds folds in its pass
_ROW_FOLDS = ("sum", "prod", "any", "all", "min", "max")
# (roots, which inputs read one array, which are `?T`) -> its `_FoldGraph`
_fold_graphs = Memo(512, "histogram row-fold graphs")
# (`_FoldGraph`, nest levels, operand kinds, dtypes and alignment) -> `_FoldPlan`
_fold_plans = Memo(512, "histogram row-fold plans")


# an expression root tuple of a pass (per histogram its index node, then its weight node
# if any, else None) -> its `_Form`: what the pass reads, from the graph alone
_forms = Memo(512, "histogram pass forms")
# (root tuple, which inputs read one array, which are `?T`) -> its `_Graph`
_graphs = Memo(512, "histogram pass graphs")
# (`_Graph`, nest levels, operand kinds, operand dtypes / alignment / masks) -> `_Plan`
_plans = Memo(512, "histogram pass plans")
# NumPy operands' shapes and strides -> their `nest_plan`
_dense = Memo(256, "histogram dense layouts")
# "graphs" / "plans": graph work and kernel plans made; "hits": passes that made neither
stats = {"graphs": 0, "plans": 0, "hits": 0}


class _Form:
    """What a pass's expressions read: `first` (a selection or gather, or an op the pass
    does not take: the bins computed first), `lower` (tuples' items, inner reductions or
    row operations: lowered on every call, the graph then holds new leaves) or neither;
    `names`: the input names in order."""

    __slots__ = ("first", "lower", "names")

    def __init__(self, roots: tuple):
        nodes = toposort([r for r in roots if r is not None])
        self.lower = any(n.op in _LOWER for n in nodes)
        # (a lowered graph is checked again once lowered)
        self.first = any(n.op in _FIRST or not self.lower and n.op not in _ELEMENTWISE
                         and n.op not in _READ for n in nodes)
        self.names = tuple(dict.fromkeys(n.arg for n in nodes if n.op == "input"))


class _Graph:
    """A pass's fused body over its roots (each array read through one input name), the
    roots' shapes, and `declined`: where() takes the missing state of a branch (the bins
    computed first)."""

    def __init__(self, roots: list, env: dict):
        # roots: per histogram its index, then its value or None, then its weight or None
        self.corrected = tuple(v is not None for v in roots[1::3])
        self.weighted = tuple(w is not None for w in roots[2::3])
        self.kinds = _kinds(self.corrected, self.weighted)
        roots, self.names = one_leaf_per_array([r for r in roots if r is not None], env)
        self.shapes = [r.shape for r, w in zip(roots, self.kinds) if not w]
        self.declined = branch_masks(_joined(roots), self.names,
                                     [leaf_data(env[n]) for n in self.names])
        self.body, self.inputs, self.outs, self.consts = fuse_outputs(
            [rows_graph(r) for r in roots])
        # each output's dtype: a bin index `_index_dtype`, a value or a weight `_stored`
        self.dtypes = tuple(_stored(r) if real else _index_dtype(r)
                            for r, real in zip(roots, self.kinds))
        stats["graphs"] += 1


class _Plan:
    """The kernel of a pass over operands of this layout: its key, the operands it reads
    (`labels`, by position in the graph's names) and their kinds, the parameter bytes."""

    def __init__(self, graph: _Graph, levels, kinds, ops_):
        by_name = {n: j for j, n in enumerate(graph.names)}
        self.labels = [by_name[n] for n in graph.inputs]
        sel = [ops_[j] for j in self.labels]
        self.kinds = kinds_of(kinds, self.labels)
        spec = KernelSpec(inputs=tuple(o.dtype for o in sel),
                          aligned=tuple(bool(o.aligned) for o in sel), body=graph.body,
                          outputs=tuple(zip(graph.outs, graph.dtypes)))
        maskd = tuple(o.mask_offset is not None for o in sel)
        self.kkey = (spec, tuple(levels), tuple(tuple(k) for k in self.kinds), maskd,
                     Bins(graph.weighted, graph.corrected), Fill(), False, False, False)
        self.params = pack_params(spec.params, graph.consts)
        stats["plans"] += 1


def _form_of(key: tuple) -> _Form:
    form = _forms.get(key)
    return form if form is not None else _forms.put(key, _Form(key))


def _roots(exprs: list) -> tuple:
    """(the roots of a pass over `exprs`, their env)."""
    env: dict = {}
    for trio in exprs:
        for e in trio:
            if e is not None:
                env.update(e.env)
    return tuple(e.node if e is not None else None for trio in exprs for e in trio), env


def _kept_roots(hists: list, edges: list) -> tuple:
    """(the roots of a pass over `hists` as their graphs were kept for their x's structure,
    their env, per root a map from the names it reads to the inputs it reads now); fills
    `edges` where the bins are equal (`Histogram.kept_index`, `kept_estimate`)."""
    roots, env, maps = [], {}, []
    for k, h in enumerate(hists):
        est, names = h.kept_estimate()
        if not est:
            i, names = h.kept_index()
            est = (i, None, None)
        edges[k], w, now = est[2], h.weight(), dict(zip(names, h.x.node.names))
        roots += [est[0], est[1], None if w is None else w.node]
        maps += [now, now, None]
        env.update(h.x.env)
        if w is not None:
            env.update(w.env)
    return tuple(roots), env, maps


# per root (None, or its structure key and its inputs' positions among the pass's inputs)
# -> the roots over inputs named by position
_positional = Memo(512, "histogram roots by position")


def _by_position(key: tuple, env: dict, maps: list | None = None) -> tuple | None:
    """(the roots `key` over inputs named `~0, ~1, ...` in their order, the env by those
    names), or None where a root has no structure key. `maps`: per root, where its names
    stand for other inputs of `env`, the map to them. Histograms of new arrays (the next
    chunk, the next partition) then have the roots of the last ones."""
    order: dict = {}
    parts = []
    for k, r in enumerate(key):
        if r is None:
            parts.append(None)
            continue
        if r.skey is None or r.names is None:
            return None
        now = [maps[k].get(n, n) for n in r.names] if maps and maps[k] else r.names
        parts.append((r.skey, tuple([order.setdefault(n, len(order)) for n in now])))
    pkey = tuple(parts)
    roots = _positional.get(pkey)
    if roots is None:
        roots = _positional.put(pkey, tuple(
            None if r is None else renamed(r, r.names, tuple(f"~{p}" for p in part[1]))
            for r, part in zip(key, parts)))
    return roots, {f"~{k}": env[n] for n, k in order.items()}


def _layout(leaves: list, ops_: list) -> tuple:
    """`nest_plan` of the operands; of NumPy arrays (their plan is a function of their
    shapes and strides) kept per shapes and strides."""
    if not all(type(v) is np.ndarray for v in leaves):
        return nest_plan(ops_)
    key = tuple((v.shape, v.strides) for v in leaves)
    got = _dense.get(key)
    if got is None:
        got = _dense.put(key, nest_plan(ops_))
    levels, sizes, kinds = got
    return levels, list(sizes), list(kinds)


def _lowered(exprs: list):
    """The expressions (flat: per histogram its index, value, weight; None where absent)
    with row operations computed or fused into the graph and tuples' items read at their
    slots, or None where the pass does not take them."""
    got = []
    for trio in exprs:
        for e in trio:
            if e is not None:
                if has_rows(e.node):  # (row operations: computed, or fused into the graph)
                    e = lower_rows(e)
                e = lower_picks(e)  # (tuples' items: computed, or read at the tuples' slots)
                if not graph_ops(e.node) <= _TAKEN:
                    return None
            got.append(e)
    return got


def _canonical(low: list, names: tuple):
    """(`_Canonical` form of the roots of the lowered expressions `low`, their env with the
    leaves the lowering made renamed as the form names them)."""
    key = (tuple(None if e is None else e.node for e in low), names)
    form = _canonicals.get(key)
    if form is None:
        form = _canonicals.put(key, _Canonical(*key))
    env: dict = {}
    for e in low:
        if e is not None:
            env.update(e.env)
    return form, {form.rename.get(k, k): v for k, v in env.items()}


class _Canonical:
    """Roots of lowered expressions whose leaves made by the lowering are named by their
    order in the roots (not `names`, the inputs before it), so that a pass of the same
    structure has the same roots and finds its graph and plan again: `roots`, `rename`
    (old leaf name -> new), `inputs` (the input names in order), `reductions` (the
    reduction nodes, in order)."""

    __slots__ = ("roots", "rename", "inputs", "reductions")

    def __init__(self, roots: tuple, names: tuple):
        nodes = toposort([r for r in roots if r is not None])
        made = dict.fromkeys(n.arg for n in nodes if n.op == "input" and n.arg not in names)
        self.rename = rename = {old: f"~lowered{k}" for k, old in enumerate(made)}

        def canonical(n, srcs):
            if n.op == "input" and n.arg in rename:
                return n.replace(arg=rename[n.arg])
            return n.replace(srcs=srcs) if srcs != n.srcs else n
        self.roots = tuple(None if r is None else rewrite(r, canonical) for r in roots)
        nodes = toposort([r for r in self.roots if r is not None])
        self.inputs = tuple(dict.fromkeys(n.arg for n in nodes if n.op == "input"))
        self.reductions = [n for n in nodes if n.op == REDUCE_OP]


# (lowered roots, input names before the lowering) -> their `_Canonical` form
_canonicals = Memo(512, "histogram canonical roots")


def _arrays(names: tuple, env: dict) -> tuple:
    """Per input name the first name that reads the same array, and whether it is `?T`
    (what a pass's graph depends on besides the graph)."""
    first: dict = {}
    got = []
    for j, n in enumerate(names):
        v = env[n]
        key = leaf_key(v) if is_ragged(v) else ("data", id(leaf_data(v)))
        got.append((first.setdefault(key, j), bool(getattr(v, "option", False))))
    return tuple(got)


def _counted_once(shapes: list, levels, sizes) -> bool:
    """Whether every histogram counts each value once: its index over every level."""
    for shape in shapes:
        if len(shape) != len(levels) or any(
                (lv is FIXED and shape[k] != n) or (lv is not FIXED and shape[k] is not None)
                for k, (lv, n) in enumerate(zip(levels, sizes))):
            return False
    return True


def _kinds(corrected: tuple, weighted: tuple) -> list:
    """Per body output whether it is a float64 (a value or a weight), not a bin index: per
    histogram an index, then its value if corrected, then its weight if any."""
    return [x for v, w in zip(corrected, weighted)
            for x in (False,) + (True,) * (bool(v) + bool(w))]


def _index_dtype(root: Node) -> np.dtype:
    """The dtype a pass keeps a bin index in: int32 as it is (the pass computes its
    counter words in int32, eight to a vector instruction), any other int64."""
    return np.dtype(np.int32 if root.dtype == np.int32 else np.int64)


def _stored(root: Node) -> np.dtype:
    """The dtype a pass keeps a value or a weight in: float32 as it is (twice the values
    per vector instruction), any other float64."""
    return np.dtype(np.float32 if root.dtype == np.float32 else np.float64)


def _joined(roots: list) -> Node:
    """One node over every root (for the graph walks that take one)."""
    node = roots[0]
    for r in roots[1:]:
        node = Node("with_rows", node.dtype, node.shape if node.ndim >= r.ndim else r.shape,
                    (node, r))
    return node


def _same_rows(ops_, kinds, nlev: int) -> bool:
    """Whether every operand that reads rows at a level reads the same rows there (then no
    histogram's row stretches to another's length)."""
    for k in range(nlev):
        sigs = {row_signature(o, kd[k], k, nlev) for o, kd in zip(ops_, kinds)}
        sigs.discard(None)
        if len(sigs) > 1:
            return False
    return True


__all__ = ["fill_histograms"]

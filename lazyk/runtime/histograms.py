"""Histograms in the loop nest (`lazyk.histogram`): each value's bin index (and weight) is
computed by the fused elementwise body, and a `Bins` nest adds it to counters of the
thread's own part (`codegen.levels.Bins`); the parts' counters are added up here. Several
histograms that read the same rows fill in one pass (one body with an index per
histogram). Forms the one pass does not take (where() over missing values, missing rows
against a fixed dim) compute the indices first, then bin those."""
from __future__ import annotations

import numpy as np

from lazyk.codegen.levels import FIXED, Bins, Fill
from lazyk.errors import NotSupportedError
from lazyk.frontend.graph import REDUCE_OP, ROWS_OP, SELECT_OP, TAKE_OP, Node, toposort
from lazyk.frontend.leaves import leaf_data
from lazyk.frontend.operands import as_expr
from lazyk.frontend.ops import ELEMENTWISE
from lazyk.frontend.spec import KernelSpec, pack_params
from lazyk.kernel.nest import kernel_for
from lazyk.passes.fuse import fuse_outputs
from lazyk.runtime.nest_plan import (
    flat_items,
    fold_parts,
    nest_operand,
    nest_plan,
    nest_words,
    row_signature,
)
from lazyk.runtime.picks import lower_picks
from lazyk.runtime.ragged_rules import (
    RECORDERS,
    branch_masks,
    inline_reductions,
    one_leaf_per_array,
    rows_graph,
)

# what a histogram's one pass reads besides elementwise work (inner reductions are computed
# first and read as leaves)
_READ = ("input", "const", "scalar", REDUCE_OP)
_FIRST = (SELECT_OP, TAKE_OP, ROWS_OP)  # (their values computed before the one pass)


def fill_histograms(hists: list, computed: list | None = None) -> list | None:
    """The counts of each histogram (NumPy arrays in its dtype) in one pass over their rows,
    or None where the one pass does not take them. `computed`: each histogram's bin
    indices and weights (or None) already computed (then each counts in a pass of its own
    where they cannot share one)."""
    if computed is None:
        return _one_pass(hists)
    pairs = [(as_expr(i), None if w is None else as_expr(w)) for i, w in computed]
    got = _one_pass(hists, pairs) if len(hists) > 1 else None
    if got is None:
        got = [_one_pass([h], [p]) for h, p in zip(hists, pairs)]
    for h, c in zip(hists, got):
        if c is None:
            raise NotSupportedError(f"histogram of {h.x.type}" + (
                "" if h.weights is None else f" with weights of type {h.weights.type}: "
                "the weights broadcast to the values, not the values to the weights"))
    return [c[0] if isinstance(c, list) else c for c in got]


def _one_pass(hists: list, exprs: list | None = None):
    """One Bins nest over every histogram of `hists`, or None where it does not take
    them (then each runs on its own, or its bins are computed first)."""
    exprs = exprs or [(h.index(), h.weight()) for h in hists]
    env: dict = {}
    roots, weighted = [], []
    for idx, w in exprs:
        for e in (idx, w) if w is not None else (idx,):
            if any(n.op in _FIRST for n in toposort(e.node)):
                return None  # (selections, gathers, row operations: the bins computed first)
            e = lower_picks(e)  # (tuples' items: computed, or read at the tuples' slots)
            root = e.node
            if any(n.op not in ELEMENTWISE and n.op not in _READ for n in toposort(root)):
                return None
            if any(n.op == REDUCE_OP for n in toposort(root)):
                root, e = inline_reductions(root, e)
            env.update(e.env)
            roots.append(root)
        weighted.append(w is not None)
    roots, names = one_leaf_per_array(roots, env)
    leaves = [leaf_data(env[n]) for n in names]
    if not leaves:
        return None
    if branch_masks(_joined(roots), names, leaves):
        return None  # where() takes the missing state of the branch: bins first
    ops_ = [nest_operand(v) for v in leaves]
    if any(o is None for o in ops_):
        return None
    levels, sizes, kinds = nest_plan(ops_)
    nlev = len(levels)
    for r, w in zip(roots, _kinds(weighted)):  # every histogram counts each value once
        if not w and r.ndim != nlev or not w and any(
                (lv is FIXED and r.shape[k] != n) or (lv is not FIXED and r.shape[k] != "var")
                for k, (lv, n) in enumerate(zip(levels, sizes))):
            return None
    if any(kd[k].missing and levels[k] is FIXED for kd in kinds for k in range(nlev)):
        return None  # `?n` rows
    if len(hists) > 1 and not _same_rows(ops_, kinds, nlev):
        return None
    items = flat_items(ops_, levels, kinds, sizes)
    if items is not None:  # one loop over the items of rows of one offsets array
        ops_, (levels, sizes, kinds) = items[0], items[2]
    body, inputs, outs, consts = fuse_outputs([rows_graph(r) for r in roots])
    by_name = {n: j for j, n in enumerate(names)}
    sel = [ops_[by_name[n]] for n in inputs]
    sel_kinds = [kinds[by_name[n]] for n in inputs]
    spec = KernelSpec(inputs=tuple(o.dtype for o in sel),
                      aligned=tuple(bool(o.aligned) for o in sel), body=body,
                      outputs=tuple((i, np.dtype(np.float64 if wt else np.int64))
                                    for i, wt in zip(outs, _kinds(weighted))))
    maskd = tuple(o.mask_offset is not None for o in sel)
    mode = Bins(tuple(weighted))
    kern = kernel_for((spec, tuple(levels), tuple(tuple(k) for k in sel_kinds), maskd, mode,
                       Fill(), False, False, False))
    words, _ = nest_words(levels, sizes, sel, sel_kinds)
    parts = fold_parts(levels, sizes, sel, sel_kinds)
    nbins = [h.nbins for h in hists]
    firsts = np.concatenate([[0], np.cumsum(nbins)]).astype(np.int64)
    total = int(firsts[-1])
    table = np.array([total] + [x for n, f in zip(nbins, firsts) for x in (n, f)], np.int64)
    out = np.zeros(len(parts) * total, np.int64)  # (float64 counters: 0.0 is all zero bits)
    words[3], words[4] = out.ctypes.data, table.ctypes.data
    labels = [by_name[n] for n in inputs]
    kern.run(words, pack_params(spec.params, consts), parts, (leaves, out, table), labels)
    for rec in RECORDERS:
        rec.append(("nest", kern, len(parts)))
    got = out.reshape(len(parts), total)
    counts = []
    for h, wt, f, n in zip(hists, weighted, firsts, nbins):
        block = got[:, f:f + n]
        c = block.view(np.float64).sum(axis=0) if wt else block.sum(axis=0)
        counts.append(h.finish(c))
    return counts


def _kinds(weighted: list) -> list:
    """Per body output whether it is a weight: an index, then its weight if any."""
    return [x for w in weighted for x in ((False, True) if w else (False,))]


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

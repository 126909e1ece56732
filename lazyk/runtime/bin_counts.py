"""The counts of a histogram pass (`lazyk.runtime.histograms`): one buffer holds the bins
table the `Bins` nest reads (`codegen.levels.Bins`) and each part's counters; the nest runs
over its parts, then the parts' counters and each bin's lanes are added up. A pass is bound
once (`BoundBins`: kernel data words, parts, the table) and run per call; a pass over
NumPy data is kept bound to its arrays (`bound_counts`), so evaluating it again, or a
histogram built again over the same arrays, runs the kernel at once."""
from __future__ import annotations

import weakref

import numpy as np

from lazyk.backend.threads import get_num_threads
from lazyk.codegen.nest_bins import BIN_LANES
from lazyk.errors import NotSupportedError
from lazyk.frontend.leaves import leaf_data
from lazyk.kernel.flat import data_pointer
from lazyk.kernel.nest import line_zeros, whole_lines
from lazyk.lru import Memo
from lazyk.runtime.nest_plan import nest_words
from lazyk.runtime.nest_totals import fold_parts
from lazyk.runtime.ragged_rules import RECORDERS


class BoundBins:
    """A histogram pass bound to its operands: the Bins nest `kern`, its kernel data words
    (the counters' addresses filled per call), parameters, parts and bins table. `run`
    computes the counts; nothing in it is written by a call (calls may overlap)."""

    __slots__ = ("kern", "words", "params", "parts", "labels", "weighted", "table", "nt",
                 "stride", "total", "firsts")

    def __init__(self, hists, edges, weighted, kern, levels, sizes, sel, kinds, params,
                 labels):
        self.kern, self.params, self.labels, self.weighted = kern, params, labels, weighted
        self.words, _ = nest_words(levels, sizes, sel, kinds)
        self.parts = fold_parts(levels, sizes, sel, kinds)
        # the bins table: the counters of one part, then per histogram its bin count, first
        # counter and where its edges start; then the edges (one more counter than bins:
        # the values in no bin)
        table, self.firsts, at_edges = [0], [], 1 + 3 * len(hists)
        for h, e in zip(hists, edges):
            self.firsts.append(table[0])
            table += [h.nbins, table[0], 0 if e is None else at_edges]
            table[0] += h.nbins + 1
            at_edges += 0 if e is None else len(e)
        self.total = total = table[0]
        if total * BIN_LANES >= 2**31 and any(d == np.int32 for _, d in kern.spec.outputs):
            raise NotSupportedError(f"{total:,} bins counted in one pass: at most "
                                    f"{2**31 // BIN_LANES:,}")
        # each bin's lanes (`codegen.nest_bins`); a part's counters in whole cache lines
        # from a line's start: two threads never write one line
        table[0] = self.stride = whole_lines(total * BIN_LANES)
        self.nt = whole_lines(at_edges)
        self.table = np.zeros(self.nt, np.int64)
        self.table[:len(table)] = table
        for h, e in enumerate(edges):
            if e is not None:
                self.table[table[3 + 3 * h]:][:len(e)] = e.view(np.int64)

    def run(self, hists, leaves) -> list:
        """The counts of each histogram (`leaves`: the arrays the words point into, held
        alive while the kernel runs)."""
        nt, nparts = self.nt, len(self.parts)
        buf = line_zeros(nt + nparts * self.stride)  # (float64 counters: 0.0 is zero bits)
        buf[:nt] = self.table
        at, words = data_pointer(buf), self.words.copy()
        words[3], words[4] = at + 8 * nt, at
        self.kern.run(words, self.params, self.parts, (leaves, buf), self.labels)
        for rec in RECORDERS:
            rec.append(("nest", self.kern, nparts))
        got = buf[nt:].reshape(nparts, self.stride)[:, :self.total * BIN_LANES]
        got = got.reshape(nparts, self.total, BIN_LANES)
        counts, lanes = [], None
        for h, w, f in zip(hists, self.weighted, self.firsts):
            if w:  # weights: lane 0 only, the parts added in order
                block = got[:, f:f + h.nbins, 0].view(np.float64)
                counts.append(h.finish(block[0].copy() if nparts == 1 else block.sum(axis=0)))
                continue
            if lanes is None:  # every counter: the parts added (whole rows), then the lanes
                lanes = (got[0] if nparts == 1 else got.sum(axis=0)) @ _ONE_PER_LANE
            counts.append(h.finish(lanes[f:f + h.nbins]))
        return counts


_ONE_PER_LANE = np.ones(BIN_LANES, np.int64)  # (a product adds a bin's lanes: NumPy's sum
# over a short last axis costs several times more)

# (each histogram's expression, weights and bins; the NumPy arrays read, by identity; the
# threads) -> (BoundBins, weak references to those arrays): a pass over dense NumPy data
# seen before runs without planning (the arrays checked to be the very same objects)
_bound = Memo(64, "bound histogram passes")


def pass_key(hists: list) -> tuple | None:
    """(the key of a pass over `hists` in `_bound`, the NumPy arrays it reads), or None
    where a pass is not kept bound (edges from the data, or arrays not NumPy's)."""
    key, arrays = [], []
    for h in hists:
        if h.range is None and isinstance(h.bins, int):
            return None  # (edges from the data: read on every evaluation)
        w = h.weights
        bins = h.bins if isinstance(h.bins, int) else (h.bins.dtype.str, h.bins.tobytes())
        rng = None if h.range is None else tuple((type(v), v) for v in h.range)
        key.append((h.x.node, None if w is None else w.node, bins, rng, h.density))
        for env in (h.x.env, {} if w is None else w.env):
            for v in env.values():
                d = leaf_data(v)
                if type(d) is not np.ndarray:
                    return None
                arrays.append(d)
    return (tuple(key), tuple(map(id, arrays)), get_num_threads()), arrays


def bound_counts(hists: list) -> list | None:
    """The counts of a pass over `hists` kept bound to the very arrays they read, or None."""
    got = pass_key(hists)
    if got is None:
        return None
    entry = _bound.get(got[0])
    if entry is None:
        return None
    bound, refs = entry
    if any(r() is not a for r, a in zip(refs, got[1])):
        return None
    return bound.run(hists, got[1])


def keep_bound(hists: list, bound: BoundBins) -> None:
    """Keep `bound` for its histograms' arrays (a pass over dense NumPy data only)."""
    got = pass_key(hists)
    if got is not None:
        _bound.put(got[0], (bound, [weakref.ref(a) for a in got[1]]))


__all__ = ["BoundBins", "bound_counts", "keep_bound"]

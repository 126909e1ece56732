"""The counts of a histogram pass (`lazyk.runtime.histograms`): one buffer holds the bins
table the `Bins` nest reads (`codegen.levels.Bins`) and each part's counters; the nest runs
over its parts, then the parts' counters and each bin's lanes are added up."""
from __future__ import annotations

import numpy as np

from lazyk.codegen.nest_bins import BIN_LANES
from lazyk.errors import NotSupportedError
from lazyk.kernel.flat import data_pointer
from lazyk.kernel.nest import line_zeros, whole_lines
from lazyk.runtime.nest_plan import nest_words
from lazyk.runtime.nest_totals import fold_parts
from lazyk.runtime.ragged_rules import RECORDERS


def count_bins(hists, edges, weighted, kern, levels, sizes, sel, kinds, params, leaves,
               labels) -> list:
    """Run the Bins nest `kern` over the operands `sel` (of kinds `kinds`; `labels`: their
    numbers in `leaves`, as errors name them) and add its parts' counters up: the counts of
    each histogram."""
    words, _ = nest_words(levels, sizes, sel, kinds)
    parts = fold_parts(levels, sizes, sel, kinds)
    # one buffer: the bins table (the counters of one part, then per histogram its bin
    # count, first counter and where its edges start; then the edges), then each part's
    # counters (float64 ones: 0.0 is all zero bits)
    table, firsts, at_edges = [0], [], 1 + 3 * len(hists)
    for h, e in zip(hists, edges):  # (one more counter than bins: the values in no bin)
        firsts.append(table[0])
        table += [h.nbins, table[0], 0 if e is None else at_edges]
        table[0] += h.nbins + 1
        at_edges += 0 if e is None else len(e)
    total, nt = table[0], at_edges
    if total * BIN_LANES >= 2**31 and any(d == np.int32 for _, d in kern.spec.outputs):
        raise NotSupportedError(f"{total:,} bins counted in one pass: at most "
                                f"{2**31 // BIN_LANES:,}")
    # each bin's lanes (`codegen.nest_bins`); a part's counters in whole cache lines from a
    # line's start: two threads never write one line
    table[0] = whole_lines(total * BIN_LANES)
    nt = whole_lines(nt)
    buf = line_zeros(nt + len(parts) * table[0])
    buf[:len(table)] = table
    for h, e in enumerate(edges):
        if e is not None:
            buf[table[3 + 3 * h]:][:len(e)] = e.view(np.int64)
    at = data_pointer(buf)
    words[3], words[4] = at + 8 * nt, at
    kern.run(words, params, parts, (leaves, buf), labels)
    for rec in RECORDERS:
        rec.append(("nest", kern, len(parts)))
    got = buf[nt:].reshape(len(parts), table[0])[:, :total * BIN_LANES]
    got = got.reshape(len(parts), total, BIN_LANES)
    counts, lanes = [], None
    for h, w, f in zip(hists, weighted, firsts):
        if w:  # weights: lane 0 only, the parts added in order
            block = got[:, f:f + h.nbins, 0].view(np.float64)
            counts.append(h.finish(block[0].copy() if len(parts) == 1 else block.sum(axis=0)))
            continue
        if lanes is None:  # every counter: the parts added (whole rows), then each bin's lanes
            lanes = (got[0] if len(parts) == 1 else got.sum(axis=0)) @ _ONE_PER_LANE
        counts.append(h.finish(lanes[f:f + h.nbins]))
    return counts


_ONE_PER_LANE = np.ones(BIN_LANES, np.int64)  # (a product adds a bin's lanes: NumPy's sum
# over a short last axis costs several times more)


__all__ = ["count_bins"]

"""Histograms in the loop-nest generator (`codegen.nest`, mode `Bins`): each value's counter
in the part's counters, by the bin index the body gives; a contiguous row by blocks, its
bins first (a loop that vectorizes), then the counters. `NestBins` is a mixin of the
generator (`codegen.nest._NestGen`)."""
from __future__ import annotations

from llvmlite import ir

from lazyk.codegen.emit import I64
from lazyk.codegen.llvm import for_loop
from lazyk.codegen.nest_window import NO_VECTOR, hinted_loop

# Histograms fold a contiguous row by blocks of this many values: their bins first (a loop
# that vectorizes), then the counters.
BIN_BLOCK = 256
# Counters per bin in a part: value i of a block adds to counter i % BIN_LANES of its bin
# (adjacent words), so runs of one bin are BIN_LANES chains of increments, not one chain
# that waits for each store; the caller adds the lanes up. Weights go to lane 0 only: their
# float sums keep the order of the values. Each histogram has one more counter than bins,
# for the values in no bin.
BIN_LANES = 4


class NestBins:
    """The histogram counters of the loop-nest generator."""

    def _bin(self, addr, masks):
        """Histograms (`Bins`): each value's counter in this part's counters, by the bin
        index the body gives (+1, or + its weight); nothing where an input is missing."""
        b = self.b

        def add():
            vals = self._values(addr)
            for h, (i, v, w) in enumerate(self.mode.slots()):
                self._count_bin(h, vals[i], None if w is None else vals[w],
                                None if v is None else lambda v=v: vals[v])
        if not masks:
            add()
            return
        with b.if_then(self._present(masks)):
            add()

    def _count_bin(self, h, i, w=None, value=None):
        """Counter i (lane 0) of histogram h += 1 (or w); an i outside 0..n-1 adds to
        counter n, which counts nowhere (no branch on where the value lands). With the
        value (`Bins.corrected`; a function that loads it), an i of n + 1 + e is the
        estimate e of a value near an edge, corrected (`_corrected`)."""
        b, c = self.b, self.c
        n = self.bin_n[h]
        clamped = b.select(b.icmp_unsigned("<", i, n), i, n)  # (negatives too)
        if value is not None:  # (the clamp first: the branch is taken by few values)
            e = b.sub(i, b.add(n, c(1)))
            before = b.block
            with b.if_then(b.icmp_unsigned("<", e, n), likely=False):
                fixed = self._corrected(h, e, value())
                near = b.block
            got = b.phi(I64)
            got.add_incoming(clamped, before)
            got.add_incoming(fixed, near)
            clamped = got
        at = b.add(self.bin_base, b.mul(b.add(self.bin_first[h], clamped), c(BIN_LANES)))
        if w is not None:
            p = b.gep(b.bitcast(self.out, ir.DoubleType().as_pointer()), [at])
            b.store(b.fadd(b.load(p, align=8), w), p, align=8)
        else:
            self._add_one(at)

    def _corrected(self, h, e, v):
        """The bin of a value v whose estimate e (0..n-1) lies near an edge, corrected as
        numpy.histogram corrects its estimate: down one where v is below edge e, else up
        one where it is at or above edge e + 1 (not past the last bin)."""
        b, c = self.b, self.c
        n, edges = self.bin_n[h], self.bin_edges[h]
        below = b.fcmp_ordered("<", v, b.load(b.gep(edges, [e]), align=8))
        above = b.fcmp_ordered(">=", v, b.load(b.gep(edges, [b.add(e, c(1))]), align=8))
        up = b.and_(above, b.icmp_unsigned("<", e, b.sub(n, c(1))))
        return b.add(b.sub(e, b.zext(below, I64)), b.zext(up, I64))

    def _add_one(self, at):
        """Counter word `at` of this part's counters += 1."""
        b = self.b
        p = b.gep(b.bitcast(self.out, I64.as_pointer()), [at])
        b.store(b.add(b.load(p, align=8), self.c(1)), p, align=8)

    def _counter_word(self, h, i, at):
        """The block pass's form of bin index i (of the value at block position `at`) of
        an unweighted histogram h: its counter word in the part's counters (lane at %
        BIN_LANES; an i outside 0..n-1: counter n), or -1 - e for an estimate e near an
        edge, which the count pass corrects (`Bins.corrected`). Computed there, with
        the bins: the count pass only loads a word and adds one."""
        b, c = self.b, self.c
        n = self.bin_n[h]
        clamped = b.select(b.icmp_unsigned("<", i, n), i, n)  # (negatives too)
        word = b.add(b.mul(b.add(self.bin_first[h], clamped), c(BIN_LANES)),
                     b.and_(at, c(BIN_LANES - 1)))
        if not self._is_corrected(h):
            return word
        e = b.sub(i, b.add(n, c(1)))
        return b.select(b.icmp_unsigned("<", e, n), b.sub(c(-1), e), word)

    def _is_corrected(self, h) -> bool:
        return self.mode.slots()[h][1] is not None

    def _bin_blocks(self, k, bases, n, lo, isz):
        """Histograms over a contiguous row: per block of BIN_BLOCK elements, first every
        value's bins (and weights) into arrays on the stack (no store to the counters in
        that loop: it vectorizes), then the counters (a missing value: bin -1). An
        unweighted histogram's block pass stores counter words (`_counter_word`)."""
        b, c = self.b, self.c
        masked = [j for j in range(self.nin) if self.masked[j]]
        slots_of = self.mode.slots()
        words = {q: h for h, (q, _, w) in enumerate(slots_of) if w is None}
        with b.goto_entry_block():
            slots = [b.alloca(ir.ArrayType(I64 if not real else ir.DoubleType(), BIN_BLOCK),
                              name=f"bins{q}")
                     for q, real in enumerate(self._bin_outputs())]

        def block(blk):
            first = b.mul(blk, c(BIN_BLOCK))
            m = b.sub(n, first)
            m = b.select(b.icmp_signed("<", m, c(BIN_BLOCK)), m, c(BIN_BLOCK))

            def values(i):
                at = b.add(b.add(first, i), lo)
                addr = [p if not self.kinds[j][k].moves else
                        b.gep(p, [b.mul(at, c(sz), flags=("nuw", "nsw"))])
                        for j, (p, sz) in enumerate(zip(bases, isz))]
                vals = self._values(addr)
                ok = self._present([b.gep(addr[j], [self.moff[j]]) for j in masked]) \
                    if masked else None
                for q, (v, real) in enumerate(zip(vals, self._bin_outputs())):
                    if ok is not None and not real:
                        v = b.select(ok, v, c(-1))
                    if q in words:
                        v = self._counter_word(words[q], v, i)
                    b.store(v, b.gep(slots[q], [c(0), i]))
            for_loop(b, m, values, name="bv")

            def count(i):
                def slot(q):
                    return b.load(b.gep(slots[q], [c(0), i]))
                for h, (q, v, w) in enumerate(slots_of):
                    if w is not None:  # weights: lane 0, in the values' order
                        self._count_bin(h, slot(q), slot(w),
                                        None if v is None else lambda v=v: slot(v))
                        continue
                    word = slot(q)
                    if v is not None:  # an estimate near an edge: -1 - e (few values)
                        before = b.block
                        with b.if_then(b.icmp_signed("<", word, c(0)), likely=False):
                            fixed = self._corrected(h, b.sub(c(-1), word), slot(v))
                            fixed = b.add(b.mul(b.add(self.bin_first[h], fixed),
                                                c(BIN_LANES)), b.and_(i, c(BIN_LANES - 1)))
                            near = b.block
                        got = b.phi(I64)
                        got.add_incoming(word, before)
                        got.add_incoming(fixed, near)
                        word = got
                    self._add_one(b.add(self.bin_base, word))
            hinted_loop(b, m, count, "bq", NO_VECTOR)
        blocks = b.sdiv(b.add(n, c(BIN_BLOCK - 1)), c(BIN_BLOCK))
        for_loop(b, blocks, block, name="bb")

    def _bin_outputs(self) -> list:
        """Per body output of the histograms whether it is a float64 (a value or a
        weight), not a bin index."""
        real = [False] * self.mode.outputs
        for _, v, w in self.mode.slots():
            for q in (v, w):
                if q is not None:
                    real[q] = True
        return real

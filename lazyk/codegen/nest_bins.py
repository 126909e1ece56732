"""Histograms in the loop-nest generator (`codegen.nest`, mode `Bins`): each value's counter
in the part's counters, by the bin index the body gives; a contiguous row by blocks, its
bins first (a loop that vectorizes), then the counters. Histograms of row folds
(`Bins.after`) fold each row of a block of rows, then bin the block's folds the same way.
`NestBins` is a mixin of the generator (`codegen.nest._NestGen`)."""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from lazyk.codegen.emit import I1, I8, I32, I64, emit_body, lltype, load_value
from lazyk.codegen.llvm import NO_VECTOR, for_loop, hinted_loop
from lazyk.codegen.nest_selection import inputs_of

# Histograms fold a contiguous row by blocks of this many values: their bins first (a loop
# that vectorizes), then the counters.
BIN_BLOCK = 256
# Counters per bin in a part: value i of a block adds to counter i % BIN_LANES of its bin
# (adjacent words), so runs of one bin are BIN_LANES chains of increments, not one chain
# that waits for each store; the caller adds the lanes up. Weights go to lane 0 only: their
# float sums keep the order of the values. Each histogram has one more counter than bins,
# for the values in no bin.
BIN_LANES = 4
# The counters of a block: a load and an increment per value, four values per round (the
# loop's own compare and branch were a third of its instructions; 1e6 float32 values in
# 240-320 us against 360-490 us on 2 threads). Not for histograms of row folds: their
# kernel (ADL Q4) took 2.4-2.6 ms unrolled against 1.7-2.0 ms.
COUNT_HINTS = NO_VECTOR + (("llvm.loop.unroll.count", 4),)


class NestBins:
    """The histogram counters of the loop-nest generator."""

    def _bin(self, addr, masks):
        """Histograms (`Bins`): each value's counter in this part's counters, by the bin
        index the body gives (+1, or + its weight); nothing in a histogram where an input
        it reads is missing (`masks`: the present bytes of the masked inputs, in order)."""
        b = self.b
        vals = self._values(addr)
        for h, ((i, v, w), reads) in enumerate(zip(self.mode.slots(), self._masks_read())):
            def add(h=h, i=i, v=v, w=w):
                self._count_bin(h, vals[i], None if w is None else vals[w],
                                None if v is None else lambda: vals[v])
            if not reads:
                add()
                continue
            with b.if_then(self._present([masks[k] for k in reads])):
                add()

    def _masks_read(self) -> list:
        """Per histogram, the masked inputs its outputs read (their places among the masked
        inputs): a missing value leaves out only the histograms that read it."""
        masked = [j for j in range(self.nin) if self.masked[j]]
        got = []
        for slot in self.mode.slots():
            reads = set().union(*(inputs_of(self.spec, q) for q in slot if q is not None)) \
                if masked else ()
            got.append([k for k, j in enumerate(masked) if j in reads])
        return got

    def _folds_read(self) -> list:
        """Per histogram of row folds, whether its outputs read the row's fold (`after`'s
        input 0): a row whose fold has no value leaves out only those histograms."""
        return [any(0 in inputs_of(self.mode.after, q) for q in slot if q is not None)
                for slot in self.mode.slots()]

    def _fold_blocks(self, bases, steps, lo, n, child):
        """Histograms of row folds (`Bins.after`), level 0 by blocks of BIN_BLOCK rows:
        each row of the block folded (`child`; `_finish` keeps the fold in the block's
        buffer), then `after` for the whole block in one loop that vectorizes (each row's
        fold and its operands' values at the row), then the counters (`_bin_blocks`)."""
        b, c = self.b, self.c
        dt = self.out_dts[0]
        isz = [np.dtype(d).itemsize for d in self.spec.inputs]
        t = I8 if dt.kind == "b" else lltype(dt)
        with b.goto_entry_block():
            self.fold_buf = b.alloca(ir.ArrayType(t, BIN_BLOCK), name="folds")
            self.fold_ok = b.alloca(ir.ArrayType(I8, BIN_BLOCK), name="fold_ok") \
                if self._fold_may_fail() else None
        read = self.mode.after_inputs
        folds = self._folds_read()

        def rows(first, m):
            b.store(c(0), self.pos)  # (`_finish`: the row's place in the block)
            for_loop(b, m, lambda i: child(b.add(first, i)), name="fr")

        def values(first, m, store):
            def at_row(contiguous):
                def one(i):
                    row = b.add(b.add(first, i), lo)
                    addr = {j: b.gep(bases[j], [b.mul(row, c(isz[j]) if contiguous else
                                                      steps[j])]) for j in read}
                    v = b.load(b.gep(self.fold_buf, [c(0), i]))
                    if dt.kind == "b":
                        v = b.icmp_unsigned("!=", v, ir.Constant(I8, 0))
                    ok = None if self.fold_ok is None else b.icmp_unsigned(
                        "!=", b.load(b.gep(self.fold_ok, [c(0), i])), ir.Constant(I8, 0))
                    store(i, self._after_values(v, addr), None if ok is None else {
                        slot[0]: ok for slot, reads in zip(self.mode.slots(), folds) if reads})
                return one
            fast = ir.Constant(I1, 1)
            for j in read:
                if self.kinds[j][0].moves:
                    fast = b.and_(fast, b.icmp_signed("==", steps[j], c(isz[j])))
            with b.if_else(fast) as (then, otherwise):
                with then:
                    for_loop(b, m, at_row(True), name="bv")
                with otherwise:
                    hinted_loop(b, m, at_row(False), "bs", NO_VECTOR)
        self._blocks(n, values, rows)

    def _fold_may_fail(self) -> bool:
        """Whether a row's fold may have no value (min / max of an empty row): it then
        counts nowhere."""
        return self.red.combine in ("minimum", "maximum")

    def _keep_fold(self, v, valid, at):
        """`_finish` of a histogram of row folds: the row's fold v (and whether it has a
        value) at place `at` of the block's buffers (`_fold_blocks`)."""
        b = self.b
        if self.out_dts[0].kind == "b":
            v = b.zext(v, I8)
        b.store(v, b.gep(self.fold_buf, [self.c(0), at]))
        if self.fold_ok is not None:
            b.store(b.zext(valid, I8), b.gep(self.fold_ok, [self.c(0), at]))

    def _after_values(self, v, addr):
        """The outputs of `after` (`Bins.after`) from a row's fold v (of the body's output
        dtype, compute form) and the operands it reads at `addr` ({operand: address})."""
        b, after = self.b, self.mode.after
        want = {ins.attr: ins.dtype for ins in after.body if ins.op == "load"}
        dt = self.out_dts[0]
        loads = [self.em.cast(v, dt, want.get(0, dt))]
        for q, j in enumerate(self.mode.after_inputs, 1):
            d = after.inputs[q]
            loads.append(self.em.cast(load_value(b, addr[j], d, after.aligned[q]),
                                      np.dtype(d).newbyteorder("="), want.get(q, d)))
        return emit_body(b, after, loads, self.target, self._pv_after)

    def _count_bin(self, h, i, w=None, value=None):
        """Counter i (lane 0) of histogram h += 1 (or w); an i outside 0..n-1 adds to
        counter n, which counts nowhere (no branch on where the value lands). With the
        value (`Bins.corrected`; a function that loads it), an i of n + 1 + e is the
        estimate e of a value near an edge, corrected (`_corrected`)."""
        b, c = self.b, self.c
        if i.type == I32:  # (an index computed in int32: `_counter_word`)
            i = b.sext(i, I64)
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
            w = _double(b, w)
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
        v = _double(b, v)  # (a float32 value in float32 edges: compared alike as float64)
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
        the bins: the count pass only loads a word and adds one. An int32 index gives an
        int32 word (the runtime keeps the counters below 2**31): twice the words to a
        vector instruction."""
        b = self.b
        t = i.type
        n, first = self.bin_n[h], self.bin_first[h]
        if t != I64:
            n, first, at = b.trunc(n, t), b.trunc(first, t), b.trunc(at, t)

        def c(v):
            return ir.Constant(t, v)
        clamped = b.select(b.icmp_unsigned("<", i, n), i, n)  # (negatives too)
        word = b.add(b.mul(b.add(first, clamped), c(BIN_LANES)),
                     b.and_(at, c(BIN_LANES - 1)))
        if not self._is_corrected(h):
            return word
        e = b.sub(i, b.add(n, c(1)))
        return b.select(b.icmp_unsigned("<", e, n), b.sub(c(-1), e), word)

    def _is_corrected(self, h) -> bool:
        return self.mode.slots()[h][1] is not None

    def _bin_blocks(self, k, bases, n, lo, isz):
        """Histograms over a contiguous row, by blocks (`_blocks`): each element's values
        from its operands' addresses."""
        b, c = self.b, self.c
        masked = [j for j in range(self.nin) if self.masked[j]]
        slot_reads = list(zip(self.mode.slots(), self._masks_read()))

        def values(first, m, store):
            def one(i):
                at = b.add(b.add(first, i), lo)
                addr = [p if not self.kinds[j][k].moves else
                        b.gep(p, [b.mul(at, c(sz), flags=("nuw", "nsw"))])
                        for j, (p, sz) in enumerate(zip(bases, isz))]
                oks = {slot[0]: self._present([b.gep(addr[masked[k]], [self.moff[masked[k]]])
                                               for k in reads])
                       for slot, reads in slot_reads if reads}
                store(i, self._values(addr), oks)
            for_loop(b, m, one, name="bv")
        self._blocks(n, values)

    def _blocks(self, n, values, before=None):
        """Histograms of n values by blocks of BIN_BLOCK: first every value's bins (and
        weights) into arrays on the stack (`values(first, m, store)` calls `store(i, body
        outputs, present)` for each of the block's m values, in a loop that
        vectorizes: no store to the counters there), then the counters (a missing value:
        bin -1). An unweighted histogram's block pass stores counter words
        (`_counter_word`); `present` is {body output: whether its value is present} (an
        output missing from it is present). `before(first, m)`: code run first in each
        block."""
        b, c = self.b, self.c
        slots_of = self.mode.slots()
        words = {q: h for h, (q, _, w) in enumerate(slots_of) if w is None}
        types = self._bin_types()
        with b.goto_entry_block():
            slots = [b.alloca(ir.ArrayType(t, BIN_BLOCK), name=f"bins{q}")
                     for q, t in enumerate(types)]

        def store(i, vals, present):
            for q, (v, real) in enumerate(zip(vals, self._bin_outputs())):
                ok = present.get(q) if present else None
                if ok is not None and not real:
                    v = b.select(ok, v, ir.Constant(v.type, -1))
                if q in words:
                    v = self._counter_word(words[q], v, i)
                b.store(v, b.gep(slots[q], [c(0), i]))

        def block(blk):
            first = b.mul(blk, c(BIN_BLOCK))
            m = b.sub(n, first)
            m = b.select(b.icmp_signed("<", m, c(BIN_BLOCK)), m, c(BIN_BLOCK))
            if before is not None:
                before(first, m)
            values(first, m, store)

            def count(i):
                def slot(q):
                    return b.load(b.gep(slots[q], [c(0), i]))
                for h, (q, v, w) in enumerate(slots_of):
                    if w is not None:  # weights: lane 0, in the values' order
                        self._count_bin(h, slot(q), slot(w),
                                        None if v is None else lambda v=v: slot(v))
                        continue
                    word = slot(q)
                    if word.type != I64:
                        word = b.sext(word, I64)
                    if v is not None:  # an estimate near an edge: -1 - e (few values)
                        before_ = b.block
                        with b.if_then(b.icmp_signed("<", word, c(0)), likely=False):
                            fixed = self._corrected(h, b.sub(c(-1), word), slot(v))
                            fixed = b.add(b.mul(b.add(self.bin_first[h], fixed),
                                                c(BIN_LANES)), b.and_(i, c(BIN_LANES - 1)))
                            near = b.block
                        got = b.phi(I64)
                        got.add_incoming(word, before_)
                        got.add_incoming(fixed, near)
                        word = got
                    self._add_one(b.add(self.bin_base, word))
            hinted_loop(b, m, count, "bq", COUNT_HINTS if before is None else NO_VECTOR)
        blocks = b.sdiv(b.add(n, c(BIN_BLOCK - 1)), c(BIN_BLOCK))
        for_loop(b, blocks, block, name="bb")

    def _bin_types(self) -> list:
        """The LLVM type of each body output of the histograms: float or double for a value
        or a weight, i32 or i64 for a bin index (as the body computes it)."""
        spec = self.mode.after if self.row_bins else self.spec
        return [lltype(spec.outputs[q][1]) if real else
                I32 if spec.outputs[q][1] == np.int32 else I64
                for q, real in enumerate(self._bin_outputs())]

    def _bin_outputs(self) -> list:
        """Per body output of the histograms whether it is a float (a value or a weight),
        not a bin index."""
        real = [False] * self.mode.outputs
        for _, v, w in self.mode.slots():
            for q in (v, w):
                if q is not None:
                    real[q] = True
        return real


def _double(b, v):
    """A float value as a double (a double as it is)."""
    return b.fpext(v, ir.DoubleType()) if v.type == ir.FloatType() else v

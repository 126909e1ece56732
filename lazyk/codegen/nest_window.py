"""The window fold of the loop-nest generator (`codegen.nest`): a contiguous row folded
WINDOW lanes at once with no remainder loop, its leading windows checked against every
operand's content. `NestWindows` is a mixin of the generator (`codegen.nest._NestGen`)."""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from lazyk.codegen.emit import I1, I8, I64, intrinsic, lltype
from lazyk.codegen.levels import FIXED, VAR
from lazyk.codegen.llvm import NO_VECTOR, for_loop, hinted_loop
from lazyk.frontend import ops

# Rows are short and of random lengths: a row folded by windows of this many elements
# (`_window_fold`) has no remainder loop whose length the CPU must guess.
WINDOW = 8
# Windows a row's fold starts with, masked to the row: rows of up to LEAD * WINDOW elements
# fold with no branch on their length (a random length mispredicts such a branch).
LEAD = 3
# Elements whose values a row fold with math calls computes at once (`_staged_fold`): many
# short rows' worth, in one vectorized loop, into a buffer on the stack that stays in L1.
STAGE = 256
# Rows of at most this many elements on average fold counts of trues from a block of one
# byte per value (`_prefixed`, `_trues`); longer ones by windows (a window's count: the
# popcount of its compare bits). Measured on 1e6 rows of Poisson(lambda) float32 items,
# one thread, min of 25 (`sum(x > 40, axis=1)`): bytes against windows 2.3 / 2.6 ms at
# lambda 1, 2.4 / 2.6 at 2, 2.6 / 2.6 at 4, 2.9 / 2.8 at 8, 4.2 / 3.5 at 12, 7.6 / 4.2 at
# 16. Fused into a histogram of each row's count (no result written: less memory to
# wait for), bytes at lambda 4: 3.6 against 4.0 ms.
SHORT = 8
# Bytes a count of trues over short rows sums at once (`_trues`).
SPAN = 16


class NestWindows:
    """The window fold of the loop-nest generator."""

    def _foldable(self, k):
        """Whether the innermost level k's rows fold contiguously with no branch on their
        length (`_window_fold`, `_staged_fold`): a reduction into a real or integer
        accumulator over var rows (plain indices: their content's bounds are known) or
        operands that stay."""
        return (not self.mapping and not self.marking and not self.binning and
                self.tuples[k] is None and k == self.nlev - 1 and
                not self.arg and k not in self.gathered and
                self.levels[k] is VAR and self.out_dts[0].kind in "biuf" and
                all(not lv.moves or (lv.rows and not lv.missing and not lv.stepping)
                    for lv in (self.kinds[j][k] for j in range(self.nin))))

    def _libm(self):
        return any(ops.OPS[ins.op].calls_libm for ins in self.spec.body if ins.op in ops.OPS)

    def _windowed(self, k):
        """Whether level k folds its rows by windows (`_window_fold`): a body without math
        calls (a window computes all its lanes, also those past the row: for a math call
        that wasted work costs more than the branch it saves)."""
        return self._foldable(k) and not self._libm()

    def _staged(self, k):
        """Whether level k folds its rows from a block computed ahead (`_staged_fold`): a
        body with math calls, or an integer sum (`_prefixed`), over operands that all move
        along the rows (or hold one value for the whole call, or are read by a histogram of
        row folds at each row's end only, not by the body), none numbered; on the CPU."""
        read = {ins.attr for ins in self.spec.body if ins.op == "load"}
        return (self.target.name == "cpu" and  # (a GPU thread has no vector math)
                self._foldable(k) and (self._libm() or self._prefixed(k)) and
                not self.position and
                any(self.kinds[j][k].moves for j in range(self.nin)) and
                all(self.kinds[j][k].moves or self._constant(j) or j not in read
                    for j in range(self.nin)))

    def _prefixed(self, k):
        """Whether a staged block holds one byte per value (0 or 1) instead of values: a
        count of trues (an integer sum of bools: `sum(pt > 40, axis=1)`) with no value
        missing and none kept at level k. The block's compares vectorize, and a row's
        count is then SPAN bytes at a time, masked to the row and summed across
        (`_trues`): a short row costs one load and no branch on its length. Rows of more
        than SHORT elements on average fold faster by windows, and so does a sum of plain
        numbers: the bytes are taken where this call's rows at level 1 (under a fixed
        level 0) are short (`_short_rows`)."""
        return k == 1 and self.levels[0] is FIXED and self._sums_bools(k)

    def _sums_bools(self, k):
        """Whether level k folds a count of trues: an integer sum of bools, with no value
        missing and none kept at level k."""
        body = self.spec.body
        out = body[self.spec.outputs[0][0]]
        return (self.red is not None and self.red.combine == "add" and
                self.out_dts[0].kind in "iu" and not any(self.masked) and
                not (self.keep is not None and self.keep.level == k) and
                out.op == "astype" and body[out.args[0]].dtype == np.dtype(bool))

    def _short_rows(self, bases, steps):
        """At level 0 (fixed) of a nest whose level 1 folds counts from bytes (`_prefixed`):
        whether this call's rows there hold at most SHORT elements on average, from the
        first row's start and the last one's stop of the first operand with rows. (Both
        are read again, and checked, by the walk; a wrong pair only picks the slower fold.)"""
        b, c = self.b, self.c
        j = next(j for j in range(self.nin) if self.kinds[j][1].moves)
        width, delta = self.kinds[j][1].width, self.f[j][1][0]
        with b.goto_entry_block():
            slot = b.alloca(I1, name="short")
        b.store(ir.Constant(I1, 1), slot)
        rows = b.sub(self.hi, self.lo)
        with b.if_then(b.icmp_signed(">", rows, c(0))):
            first = self.index(b.gep(bases[j], [b.mul(self.lo, steps[j])]), width)
            last = b.gep(bases[j], [b.mul(b.sub(self.hi, c(1)), steps[j])])
            stop = self.index(b.gep(last, [delta]), width)
            b.store(b.icmp_signed("<=", b.mul(b.sub(stop, first), c(2)),
                                  b.mul(rows, c(int(2 * SHORT)))), slot)
        return b.load(slot)

    def _constant(self, j):
        """Whether operand j is one value for the whole call (a 0-d leaf): it moves at no
        level."""
        return not any(self.kinds[j][q].moves for q in range(self.nlev))

    def _staged_fold(self, bases, n, isz, k, contiguous):
        """Fold a contiguous row whose body calls math functions. Short rows (HEP events
        hold a few objects each) would run those calls one by one; instead the body is
        computed for a block of STAGE elements of content at once, from this row's start,
        in one vectorized loop (the vector math library) into a buffer on the stack; the
        rows that lie inside the block then fold from it by windows (`_window_fold`). A
        row is inside the block when every operand's start is the same distance past the
        block's: operands of equal row lengths over plain offsets keep that distance, so
        consecutive rows share one block. A row longer than the block folds directly."""
        b, c = self.b, self.c
        moving = [j for j in range(self.nin) if self.kinds[j][k].moves]
        starts = {j: self.row_ends[j][0] for j in moving}
        with b.goto_entry_block():
            firsts = {j: b.alloca(I64, name=f"stage{j}") for j in moving}  # the block's
            have = b.alloca(I64, name="staged")  # values computed (none yet)
            for slot in (*firsts.values(), have):
                b.store(c(0), slot)
        d = b.sub(starts[moving[0]], b.load(firsts[moving[0]]))
        hit = b.and_(b.icmp_signed(">=", d, c(0)),
                     b.icmp_signed("<=", b.add(d, n), b.load(have)))
        for j in moving[1:]:
            hit = b.and_(hit, b.icmp_signed("==", b.sub(starts[j], b.load(firsts[j])), d))
        prefixed = self._prefixed(k)
        with b.if_else(b.icmp_signed(">", n, c(STAGE))) as (long, short):
            with long:  # longer than a block: computed and folded in place (vectorized)
                for_loop(b, n, contiguous, name="el")
            with short:
                buf, kept, present = self._stage_block(bases, isz, k, starts, firsts, have,
                                                       hit)
                at = b.select(hit, d, c(0))
                if prefixed:  # the row's count: its bytes, SPAN at a time
                    row = self._trues(buf, at, n)
                    width = lltype(self.out_dts[0]).width
                    row = row if width == 64 else b.trunc(row, ir.IntType(width))
                    self._acc_store(b, self.acc, self._combine(self.em, self._acc_load(
                        b, self.acc), row))
                    b.store(b.add(b.load(self.count), n), self.count)
                    return

                def value(e):
                    i = b.add(at, e)
                    return (b.load(b.gep(buf, [i])),
                            *(None if f is None else b.trunc(b.load(b.gep(f, [i])), I1)
                              for f in (kept, present)))
                self._window_fold(bases, n, isz, k, value=value)

    def _stage_block(self, bases, isz, k, starts, firsts, have, hit):
        """Where the row's values are not in the block yet: the block computed again from
        this row's start, up to STAGE elements inside every operand's content. Returns the
        block's buffers (STAGE values and the windows' reach past them): the values,
        whether each is kept (None: no `Keep` at this level) and present (None: no `?T`
        operand)."""
        b, c = self.b, self.c
        keep = self.keep is not None and self.keep.level == k
        masked = [j for j in range(self.nin) if self.masked[j]]
        prefixed = self._prefixed(k)
        with b.if_then(b.not_(hit)):
            m = c(STAGE)
            for j, start in starts.items():
                room = b.sub(self.f[j][k][4], start)  # content left from the start
                m = b.select(b.icmp_signed("<", room, m), room, m)
                b.store(start, firsts[j])
            b.store(m, have)
            slot = []

            def compute(t):
                addr = [b.gep(p, [b.mul(t, c(sz), flags=("nuw", "nsw"))])
                        if self.kinds[j][k].moves else p
                        for j, (p, sz) in enumerate(zip(bases, isz))]
                v = self._values(addr)[0]
                if prefixed and v.type.width > 8:  # (a count of trues: a byte per value)
                    v = b.trunc(v, I8)
                if not slot:
                    with b.goto_entry_block():
                        size = c(STAGE + LEAD * WINDOW)
                        slot.append(b.alloca(v.type, size=size, name="block"))
                        for name, used in (("kept", keep), ("present", masked)):
                            slot.append(b.alloca(I8, size=size, name=name) if used else None)
                b.store(v, b.gep(slot[0], [t]))
                if keep:
                    b.store(b.zext(self._keep_value(addr), I8), b.gep(slot[1], [t]))
                if masked:
                    ok = self._present([b.gep(addr[j], [self.moff[j]]) for j in masked])
                    b.store(b.zext(ok, I8), b.gep(slot[2], [t]))
            for_loop(b, m, compute, name="stage")
            if prefixed:  # zeros after the block's values: `_trues` reads SPAN at a time
                zero = ir.Constant(ir.VectorType(I8, SPAN), None)
                b.store(zero, b.bitcast(b.gep(slot[0], [m]), zero.type.as_pointer()), align=1)
        return tuple(slot)

    def _trues(self, buf, at, n):
        """The count of the n bytes (each 0 or 1) from buf[at] (an i64): SPAN bytes at a
        time, those past the row masked out, summed across; a row of up to SPAN values is
        one load, one compare and one sum, with no branch on its length."""
        b, c = self.b, self.c
        vt = ir.VectorType(I8, SPAN)
        total = intrinsic(self.module, f"llvm.vector.reduce.add.v{SPAN}i8", I8, [vt])
        lanes = ir.Constant(vt, list(range(SPAN)))

        def chunk(q):
            left = b.sub(n, b.mul(q, c(SPAN)))
            left = b.trunc(b.select(b.icmp_signed("<", left, c(SPAN)), left, c(SPAN)), I8)
            p = b.bitcast(b.gep(buf, [b.add(at, b.mul(q, c(SPAN)))]), vt.as_pointer())
            v = b.select(b.icmp_unsigned("<", lanes, self._splat(left, vt)), b.load(p, align=1),
                         ir.Constant(vt, None))
            return b.zext(b.call(total, [v]), I64)
        with b.goto_entry_block():
            acc = b.alloca(I64, name="trues")
        b.store(chunk(c(0)), acc)  # (an empty row: no lane)
        with b.if_then(b.icmp_signed(">", n, c(SPAN)), likely=False):
            more = b.sdiv(b.sub(n, c(1)), c(SPAN))  # chunks after the first
            hinted_loop(b, more, lambda q: b.store(
                b.add(b.load(acc), chunk(b.add(q, c(1)))), acc), "tc", NO_VECTOR)
        return b.load(acc)

    def _window_fold(self, bases, n, isz, k, value=None):
        """Fold a contiguous row of n elements with no branch on n's remainder: WINDOW lane
        accumulators take the row's first LEAD windows (lanes past n fold the identity);
        a longer row then its blocks of WINDOW after those and its last WINDOW elements
        (those not folded yet). The leading windows may reach past the row: the caller
        checked that they lie inside every operand's content
        (`start <= length - LEAD * WINDOW`). Missing values (`?T`) fold the identity and count as `_fold`
        counts them. Float sums are reassociated (as NumPy's pairwise sums are).
        `value(e)`: element e's value, whether it is kept (None: no `Keep` here) and
        present (None: nothing missing), read from elsewhere (`_staged_fold`'s block)."""
        b, c, em = self.b, self.c, self.em
        dt, acc = self.out_dts[0], self.acc_dtype  # (float32 sums: float64 lanes)
        ident = em.const(dt, self.red.identity(dt))
        masked = [j for j in range(self.nin) if self.masked[j]]
        keep = self.keep is not None and self.keep.level == k
        counted = bool(masked) or keep  # values folded: counted lane by lane
        with b.goto_entry_block():
            lanes = [b.alloca(lltype(acc), name=f"lane{q}") for q in range(WINDOW)]
            # (one count per lane: a count across lanes would take each lane's mask bit
            # out of the vector one by one)
            counts = [b.alloca(I64, name=f"count{q}") for q in range(WINDOW)] if counted \
                else []
            # a float min / max: whether each lane met a NaN, apart from its value
            nans = [b.alloca(I1, name=f"nan{q}") for q in range(WINDOW)] \
                if self._picks(acc) else []
        for slot in nans:
            b.store(ir.Constant(I1, 0), slot)
        for slot in lanes:
            b.store(em.const(acc, self.red.identity(acc)), slot)
        for slot in counts:
            b.store(c(0), slot)

        def element(e):
            """The operands' addresses of element e (an i64) of the row."""
            return [p if not self.kinds[j][k].moves else b.gep(p, [b.mul(e, c(sz))])
                    for j, (p, sz) in enumerate(zip(bases, isz))]

        def fold(q, e, inside=None):
            """Element e (an i64, maybe outside the row) into lane q, where `inside` (and
            kept: `Keep`)."""
            take = inside
            if value is None:
                addr = element(e)
                v = self._values(addr)[0]
                kept = self._keep_value(addr) if keep else None
                ok = self._present([b.gep(addr[j], [self.moff[j]]) for j in masked]) \
                    if masked else None
            else:
                v, kept, ok = value(e)
            if keep:
                take = kept if inside is None else b.and_(inside, kept)
            if masked:
                gone = b.not_(ok) if take is None else b.and_(take, b.not_(ok))
                b.store(b.or_(b.load(self.bad), gone), self.bad)
                take = ok if take is None else b.and_(take, ok)
            if counted:
                b.store(b.add(b.load(counts[q]), b.zext(take, I64)), counts[q])
            if take is not None:
                v = b.select(take, v, ident)
            if nans:
                b.store(b.or_(b.load(nans[q]), b.fcmp_unordered("uno", v, v)), nans[q])
                b.store(self._pick(v, b.load(lanes[q])), lanes[q])
            else:
                b.store(self._combine(em, b.load(lanes[q]), v), lanes[q])
        trues = value is None and self._sums_bools(k) and acc == np.dtype(np.int64)
        if trues:  # a count of trues: a window's count is the popcount of its compare bits
            with b.goto_entry_block():
                ones = b.alloca(I64, name="trues")
            b.store(c(0), ones)
            popcount = b.module.declare_intrinsic("llvm.ctpop", [ir.IntType(WINDOW)])

        def window(es, insides):
            """Lane q takes element es[q] where insides[q] (None: everywhere)."""
            if not trues:
                for q, (e, inside) in enumerate(zip(es, insides)):
                    fold(q, e, inside)
                return
            bits = ir.Constant(ir.VectorType(I1, WINDOW), None)
            for q, (e, inside) in enumerate(zip(es, insides)):
                addr = element(e)
                v = self._values(addr)[0]
                bit = b.icmp_unsigned("!=", v, ir.Constant(v.type, 0))
                bits = b.insert_element(bits, bit if inside is None else b.and_(bit, inside),
                                        ir.Constant(ir.IntType(32), q))
            got = b.call(popcount, [b.bitcast(bits, ir.IntType(WINDOW))])
            b.store(b.add(b.load(ones), b.zext(got, I64)), ones)
        # the leading windows: lane q takes element w * WINDOW + q while it is in the row
        for w in range(LEAD):
            window([c(w * WINDOW + q) for q in range(WINDOW)],
                   self._lane_masks(n, ">", w * WINDOW))

        def block(i):
            at = b.mul(b.add(i, c(LEAD)), c(WINDOW), flags=("nuw", "nsw"))
            window([b.add(at, c(q), flags=("nuw", "nsw")) for q in range(WINDOW)],
                   [None] * WINDOW)
        # longer rows: the blocks after the leading windows, then the last window, lane q
        # taking element n - WINDOW + q where it is not folded yet (>= done); n > WINDOW:
        # the window starts inside the row
        with b.if_then(b.icmp_signed(">", n, c(LEAD * WINDOW))):
            whole = b.and_(n, c(-WINDOW))  # the elements in whole blocks
            hinted_loop(b, b.sub(b.lshr(whole, c(WINDOW.bit_length() - 1)), c(LEAD)), block,
                        "wb", NO_VECTOR)
            done = b.select(b.icmp_signed(">", whole, c(LEAD * WINDOW)), whole,
                            c(LEAD * WINDOW))
            window([b.add(b.sub(n, c(WINDOW)), c(q)) for q in range(WINDOW)],
                   self._lane_masks(b.sub(b.add(done, c(WINDOW)), n), "<="))
        vals = [b.load(ones)] if trues else [b.load(slot) for slot in lanes]
        while len(vals) > 1:  # pairwise
            vals = [self._pick(x, y) if nans else self._combine(em, x, y)
                    for x, y in zip(vals[::2], vals[1::2])]
        if nans:
            nan = b.load(nans[0])
            for slot in nans[1:]:
                nan = b.or_(nan, b.load(slot))
            vals[0] = b.select(nan, ir.Constant(vals[0].type, float("nan")), vals[0])
        self._fold_value(vals[0])
        total = n
        if counted:
            total = b.load(counts[0])
            for slot in counts[1:]:
                total = b.add(total, b.load(slot))
        b.store(b.add(b.load(self.count), total), self.count)

    def _picks(self, dt) -> bool:
        """Whether the window fold's lanes pick min / max of floats (`_pick`): their NaNs
        are then kept apart (LLVM's `maximum` also orders -0.0 below 0.0, in a chain of
        five vector steps that every window of every row waits on; a pick is one)."""
        return self.red.combine in ("minimum", "maximum") and dt.kind == "f"

    def _pick(self, x, y):
        """The winner of x and y for a float min / max of non-NaN values: x where it wins
        strictly, else y (ties fall either way, as in a fold)."""
        b = self.b
        return b.select(b.fcmp_ordered("<" if self.red.combine == "minimum" else ">", x, y),
                        x, y)

    def _lane_masks(self, x, pred, first=0):
        """Per lane q: `x pred first + q` (i1), from one vector compare of x against the
        lane numbers (lane by lane, LLVM folds each compare its own way and the lanes no
        longer vectorize)."""
        b = self.b
        vt = ir.VectorType(I64, WINDOW)
        m = b.icmp_signed(pred, self._splat(x, vt),
                          ir.Constant(vt, list(range(first, first + WINDOW))))
        return [b.extract_element(m, ir.Constant(ir.IntType(32), q)) for q in range(WINDOW)]

    def _splat(self, x, vt):
        """A vector of type `vt` with x in every lane."""
        b = self.b
        return b.shuffle_vector(b.insert_element(ir.Constant(vt, ir.Undefined), x,
                                                 ir.Constant(ir.IntType(32), 0)),
                                ir.Constant(vt, ir.Undefined),
                                ir.Constant(ir.VectorType(ir.IntType(32), vt.count),
                                            [0] * vt.count))

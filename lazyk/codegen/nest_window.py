"""The window fold of the loop-nest generator (`codegen.nest`): a contiguous row folded
WINDOW lanes at once with no remainder loop, its leading windows checked against every
operand's content; and the loops with `llvm.loop` hints (`hinted_loop`) the nest's other
loops take. `NestWindows` is a mixin of the generator (`codegen.nest._NestGen`)."""
from __future__ import annotations

from llvmlite import ir

from lazyk.codegen.emit import I1, I64, lltype
from lazyk.codegen.levels import VAR
from lazyk.codegen.llvm import for_loop
from lazyk.frontend import ops

# Rows are short and of random lengths: a row folded by windows of this many elements
# (`_window_fold`) has no remainder loop whose length the CPU must guess.
WINDOW = 8
# Windows a row's fold starts with, masked to the row: rows of up to LEAD * WINDOW elements
# fold with no branch on their length (a random length mispredicts such a branch).
LEAD = 3
# Loop hints (`llvm.loop` metadata). Strided rows (and the window's blocks, already
# WINDOW lanes wide): a vectorized loop with gathers or remainders rarely pays.
NO_VECTOR = (("llvm.loop.vectorize.enable", False), ("llvm.loop.interleave.count", 1))


def hinted_loop(b, n, body, name, hints) -> None:
    """`for_loop` with `llvm.loop` hints on its back edge."""
    back = for_loop(b, n, body, name)
    m = b.module
    ops_ = [m.add_metadata([ir.MetaDataString(m, key),
                            ir.Constant(I1 if isinstance(v, bool) else ir.IntType(32), v)])
            for key, v in hints]
    loop_id = ir.values.MDValue(m, [], name=str(len(m.metadata)))  # distinct: refers to itself
    loop_id.operands = (loop_id, *ops_)
    back.set_metadata("llvm.loop", loop_id)


class NestWindows:
    """The window fold of the loop-nest generator."""

    def _windowed(self, k):
        """Whether the innermost level k folds its rows by windows (`_window_fold`): a
        reduction into a real or integer accumulator over var rows (plain indices: their
        content's bounds are known) or operands that stay."""
        # NOTE: each window computes all its lanes, also those past the row: for a body
        # that calls libm (`lazyk.cos(x).sum(axis=-1)`) that wasted work costs more than
        # the branch it saves, so such rows take the plain loop, which LLVM vectorizes
        # with the vector math library.
        libm = any(ops.OPS[ins.op].calls_libm for ins in self.spec.body if ins.op in ops.OPS)
        return (not libm and not self.mapping and not self.marking and not self.binning and
                self.tuples[k] is None and k == self.nlev - 1 and
                not self.arg and k not in self.gathered and
                self.levels[k] is VAR and self.out_dts[0].kind in "biuf" and
                all(not lv.moves or (lv.rows and not lv.missing and not lv.stepping)
                    for lv in (self.kinds[j][k] for j in range(self.nin))))

    def _window_fold(self, bases, n, isz, k):
        """Fold a contiguous row of n elements with no branch on n's remainder: WINDOW lane
        accumulators take the row's first LEAD windows (lanes past n fold the identity);
        a longer row then its blocks of WINDOW after those and its last WINDOW elements
        (those not folded yet). The leading windows may reach past the row: the caller
        checked that they lie inside every operand's content
        (`start <= length - LEAD * WINDOW`). Missing values (`?T`) fold the identity and count as `_fold`
        counts them. Float sums are reassociated (as NumPy's pairwise sums are)."""
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
        for slot in lanes:
            b.store(em.const(acc, self.red.identity(acc)), slot)
        for slot in counts:
            b.store(c(0), slot)

        def fold(q, e, inside=None):
            """Element e (an i64, maybe outside the row) into lane q, where `inside` (and
            kept: `Keep`)."""
            addr = [p if not self.kinds[j][k].moves else b.gep(p, [b.mul(e, c(sz))])
                    for j, (p, sz) in enumerate(zip(bases, isz))]
            v = self._values(addr)[0]
            take = inside
            if keep:
                kept = self._keep_value(addr)
                take = kept if inside is None else b.and_(inside, kept)
            if masked:
                ok = self._present([b.gep(addr[j], [self.moff[j]]) for j in masked])
                gone = b.not_(ok) if take is None else b.and_(take, b.not_(ok))
                b.store(b.or_(b.load(self.bad), gone), self.bad)
                take = ok if take is None else b.and_(take, ok)
            if counted:
                b.store(b.add(b.load(counts[q]), b.zext(take, I64)), counts[q])
            if take is not None:
                v = b.select(take, v, ident)
            b.store(self._combine(em, b.load(lanes[q]), v), lanes[q])
        # the leading windows: lane q takes element w * WINDOW + q while it is in the row
        for w in range(LEAD):
            for q, inside in enumerate(self._lane_masks(n, ">", w * WINDOW)):
                fold(q, c(w * WINDOW + q), inside)

        def block(i):
            at = b.mul(b.add(i, c(LEAD)), c(WINDOW), flags=("nuw", "nsw"))
            for q in range(WINDOW):
                fold(q, b.add(at, c(q), flags=("nuw", "nsw")))
        # longer rows: the blocks after the leading windows, then the last window, lane q
        # taking element n - WINDOW + q where it is not folded yet (>= done); n > WINDOW:
        # the window starts inside the row
        with b.if_then(b.icmp_signed(">", n, c(LEAD * WINDOW))):
            whole = b.and_(n, c(-WINDOW))  # the elements in whole blocks
            hinted_loop(b, b.sub(b.lshr(whole, c(WINDOW.bit_length() - 1)), c(LEAD)), block,
                        "wb", NO_VECTOR)
            done = b.select(b.icmp_signed(">", whole, c(LEAD * WINDOW)), whole,
                            c(LEAD * WINDOW))
            last = self._lane_masks(b.sub(b.add(done, c(WINDOW)), n), "<=")
            for q in range(WINDOW):
                fold(q, b.add(b.sub(n, c(WINDOW)), c(q)), last[q])
        vals = [b.load(slot) for slot in lanes]
        while len(vals) > 1:  # pairwise
            vals = [self._combine(em, x, y) for x, y in zip(vals[::2], vals[1::2])]
        self._acc_store(b, self.acc, self._combine(em, self._acc_load(b, self.acc), vals[0]))
        total = n
        if counted:
            total = b.load(counts[0])
            for slot in counts[1:]:
                total = b.add(total, b.load(slot))
        b.store(b.add(b.load(self.count), total), self.count)

    def _lane_masks(self, x, pred, first=0):
        """Per lane q: `x pred first + q` (i1), from one vector compare of x against the
        lane numbers (lane by lane, LLVM folds each compare its own way and the lanes no
        longer vectorize)."""
        b = self.b
        vt = ir.VectorType(I64, WINDOW)
        splat = b.shuffle_vector(b.insert_element(ir.Constant(vt, ir.Undefined), x,
                                                  ir.Constant(ir.IntType(32), 0)),
                                 ir.Constant(vt, ir.Undefined),
                                 ir.Constant(ir.VectorType(ir.IntType(32), WINDOW),
                                             [0] * WINDOW))
        m = b.icmp_signed(pred, splat, ir.Constant(vt, list(range(first, first + WINDOW))))
        return [b.extract_element(m, ir.Constant(ir.IntType(32), q)) for q in range(WINDOW)]

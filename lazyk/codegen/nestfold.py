"""The folds of the loop-nest generator (`codegen.nest`, whose module doc describes the
levels, operand kinds, modes and kernel data): a reduction's accumulators (an
arg-reduction's: the best value and its position, `_arg_combine`; a short row's first
values as a tree, `_arg_rows`), the window fold
of contiguous rows (WINDOW lanes at once, windows checked against every operand's content),
and the folds over a middle level ("fold<a>[,<b>...]"): each result element walks its group,
every element of the folded levels, with `?var` rows at or below a folded level
(`_qfold_*`) found element by element. `NestFolds` is a mixin of the generator: it uses the
generator's builder, operand words and row reads (`_rows`, `_check`, `_inner`)."""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from lazyk.codegen.emit import I1, I8, I64, lltype, store_value
from lazyk.codegen.levels import FIXED, VAR
from lazyk.codegen.llvm import for_loop
from lazyk.frontend import ops

WINDOW = 8
# Histograms fold a contiguous row by blocks of this many values: their bins first (a loop
# that vectorizes), then the counters.
BIN_BLOCK = 256
# Elements of a row an arg-reduction folds with no branch on the row's length (`_arg_rows`).
PEEL = 8
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


class NestFolds:
    """The fold methods of the loop-nest generator (`codegen.nest._NestGen`)."""

    # ------------------------------------------------------------ folds over a middle level
    def _walk(self, m, addrs, at, upto, qs, ns, action):
        """One result element's group from level m (operand addresses `addrs`, index path
        `at`) down to level `upto`: every element of a folded level (operand rows paired
        as elementwise work pairs them), the result index qs[m] at a kept level (a row of
        length 1 stretches, any other must have the result's length ns[m]); then
        `action(addrs, at)`, or (at the last level, folded) the fold of its row."""
        b, c = self.b, self.c
        if m == upto:
            action(addrs, at)
            return
        if m in self.axes:
            bases, steps, n, _ = self._rows(m, addrs, at)
            if m == self.nlev - 1 and upto == self.nlev:
                self._inner(m, bases, steps, n, at)  # contiguous rows take the fast loop
                return

            def each(i):
                self._walk(m + 1, [b.gep(p, [b.mul(i, s)]) for p, s in zip(bases, steps)],
                           at + [i], upto, qs, ns, action)
            for_loop(b, n, each, name=f"g{m}")
            return
        q, n, out = qs[m], ns[m], []
        for j, p in enumerate(addrs):
            level = self.kinds[j][m]
            if level.moves and not level.rows:
                p = b.gep(p, [b.mul(q, self.f[j][m][0])])
            elif level.rows:
                ln, base, stride = self._row(j, m, p, at)
                ok = b.or_(b.icmp_signed("==", ln, n), b.icmp_signed("==", ln, c(1)))
                self.check(ok, 4, m, at, j, ln, n, c(-1))
                p = b.gep(base, [b.mul(b.select(b.icmp_signed("==", ln, c(1)), c(0), q),
                                       stride)])
            out.append(p)
        self._walk(m + 1, out, at + [q], upto, qs, ns, action)

    def _group(self, top, path, upto, qs, ns, action):
        """`_walk` over every element i of the first folded level's rows (`top`)."""
        b = self.b
        bases, steps, na = top

        def each(i):
            if self.arg:  # the folded element's position along the axis
                b.store(i, self.argat)
            self._walk(self.axis + 1, [b.gep(p, [b.mul(i, s)]) for p, s in zip(bases, steps)],
                       path + [i], upto, qs, ns, action)
        for_loop(b, na, each, name="fg")

    def _row(self, j, m, p, path):
        """Operand j's var row at level m whose start index is at p: (length, element-0
        address, stride), its indices checked."""
        return self.kinds[j][m].read(self, j, m, p, self.f[j][m], path, own=False)[:3]

    def _fold_len(self, m, top, path, qs, ns):
        """The result length at level m: the rows there, one per member of the group,
        pair up (one length, rows of length 1 stretching; an empty group: 0)."""
        b, c = self.b, self.c
        b.store(c(-1), self.flen)  # -1: no member yet

        def action(addrs, at):
            n = b.load(self.flen)
            for j in range(self.nin):
                if not self.kinds[j][m].rows:
                    continue
                ln = self._row(j, m, addrs[j], at)[0]
                # -1: no member yet; a row of length 0 pairs only with 0 or 1
                ok = b.or_(b.or_(b.icmp_signed("==", n, c(-1)), b.icmp_signed("==", n, c(1))),
                           b.or_(b.icmp_signed("==", ln, c(1)), b.icmp_signed("==", ln, n)))
                self.check(ok, 4, m, at, j, ln, n, c(-1))
                n = b.select(b.or_(b.icmp_signed("==", n, c(-1)),
                                   b.icmp_signed("!=", ln, c(1))), ln, n)
            b.store(n, self.flen)
        self._group(top, path, m, qs, ns, action)
        n = b.load(self.flen)
        return b.select(b.icmp_signed("==", n, c(-1)), c(0), n)

    def _fold_level(self, m, top, path, qs, ns):
        """Result level m below the first folded level (qs, ns: the result indices and
        lengths of the kept levels so far, by level)."""
        b, c = self.b, self.c
        if m == self.nlev:
            self._fold_leaf(top, path, qs, ns)
            return
        if m in self.axes:
            self._fold_level(m + 1, top, path, qs, ns)
            return
        if self.levels[m] is FIXED:
            n = self.sizes[m]
        else:
            slot = b.load(self.cnt[m])
            at = b.gep(self.lens[m], [slot])
            if self.counting:
                n = self._fold_len(m, top, path, qs, ns)
                b.store(n, at)
            else:
                n = self._counted(slot, m)  # our own count: every write stays inside
            b.store(b.add(slot, c(1)), self.cnt[m])
            if self.counting and m == self.deepest:
                return
        for_loop(b, n, lambda q: self._fold_level(m + 1, top, path, {**qs, m: q},
                                                  {**ns, m: n}), name=f"f{m}")

    def _fold_leaf(self, top, path, qs, ns):
        b, c = self.b, self.c
        self._reset()
        pos = b.load(self.pos)

        def action(addrs, at):
            self._fold(addrs, [b.gep(addrs[j], [self.moff[j]]) for j in range(self.nin)
                               if self.masked[j]])
        self._group(top, path, self.nlev, qs, ns, action)
        # the group had members: a value was folded or a missing one seen
        seen = b.add(b.load(self.count), b.zext(b.load(self.bad), I64))
        self._finish(pos, seen)
        b.store(b.add(pos, c(1)), self.pos)

    # ------------------------------------------------------------ one folded level, `?var`
    # "fold<a>" (one axis) over `?var` rows at or below level a: an element of level a under
    # a missing row is found first (its rows are not paired) and skipped, or makes the
    # result row missing (not under skipna); a missing row of level a makes the result row
    # below it missing.
    def _descend(self, j, p, m, qs, ns, path, gone=None, check=True):
        """Operand j's address at level m + len(qs) from its address p at level m, along
        result indices qs of result lengths ns (a row of length 1 stretches), and whether a
        row on the way is missing (`?var`; then none below it is read; None: no `?var`),
        and whether a row on the way was not read (missing, or not pairing unchecked).
        `check`: rows must pair with the result's; else a row that does not is not read
        below (a checked pass raises for it)."""
        b, c = self.b, self.c
        real = gone
        for q, n in zip(qs, ns):
            level, f = self.kinds[j][m], self.f[j][m]
            if level.moves and not level.rows:
                p = b.gep(p, [b.mul(q, f[0])])
            elif level.rows:
                ln, base, stride, now = self._qrow(j, m, p, path, gone)
                if level.missing:
                    here = now if gone is None else b.and_(now, b.not_(gone))
                    real = here if real is None else b.or_(real, here)
                ok = b.or_(b.icmp_signed("==", ln, n), b.icmp_signed("==", ln, c(1)))
                if now is not None:
                    ok = b.or_(ok, now)
                if check:
                    self.check(ok, 4, m, path, j, ln, n, c(-1))
                    gone = now
                else:
                    gone = b.not_(ok) if now is None else b.or_(now, b.not_(ok))
                q = b.select(b.icmp_signed("==", ln, c(1)), c(0), q)
                p = b.gep(base, [b.mul(q, stride)])
            m += 1
        return p, real, gone

    def _qfold_len(self, m, top, qs, ns, path):
        """The result length at level m: the rows there, one per element i of the folded
        level, pair up (one length, rows of length 1 stretching; nothing folded: 0), and
        whether it is missing (an element's row at level m is: skipped under skipna, else
        the result row is missing; an element missing above m is skipped)."""
        b, c = self.b, self.c
        bases, steps, na = top
        b.store(c(1), self.flen)
        q = self.fold_q
        if q:
            b.store(ir.Constant(I1, 0), self.fmiss)
            b.store(ir.Constant(I1, 0), self.fseen)

        def each(i):
            n = b.load(self.flen)
            at = path[:]
            at[self.axis] = i
            top_j = [b.gep(bases[j], [b.mul(i, steps[j])]) for j in range(self.nin)]
            rows, above, here = [], ir.Constant(I1, 0), ir.Constant(I1, 0)
            # first whether element i is missing here or above (its rows are not paired)
            for j in self._fold_ops(m, True):
                p, g, blind = self._descend(j, top_j[j], self.axis + 1, qs, ns, at, None,
                                            False)
                if g is not None:
                    above = b.or_(above, g)
                if self.kinds[j][m].missing:
                    h = self._qrow(j, m, p, at, blind)[3]
                    here = b.or_(here, h if blind is None else b.and_(h, b.not_(blind)))
            skip = b.or_(above, here) if q else None
            for j in self._fold_ops(m):
                p = self._descend(j, top_j[j], self.axis + 1, qs, ns, at, skip)[0]
                if self.kinds[j][m].rows:
                    rows.append((j, self._qrow(j, m, p, at, skip)[0]))
            for j, ln in rows:
                ok = b.or_(b.or_(b.icmp_signed("==", n, c(1)), b.icmp_signed("==", ln, c(1))),
                           b.icmp_signed("==", ln, n))
                self.check(b.or_(ok, skip) if q else ok, 4, m, at, j, ln, n, c(-1))
                n = b.select(b.or_(skip, b.icmp_signed("==", ln, c(1))), n, ln) if q else \
                    b.select(b.icmp_signed("==", ln, c(1)), n, ln)
            b.store(n, self.flen)
            if q:
                b.store(b.or_(b.load(self.fmiss), b.and_(here, b.not_(above))), self.fmiss)
                b.store(b.or_(b.load(self.fseen), b.not_(skip)), self.fseen)
        for_loop(b, na, each, name=f"fl{m}")
        none = b.icmp_signed("==", na, c(0))
        if q:
            none = b.or_(none, b.not_(b.load(self.fseen)))
        n = b.select(none, c(0), b.load(self.flen))
        if q and not self.skipna:
            return n, b.load(self.fmiss)
        return n, None

    def _fold_ops(self, m, missing=False):
        """Operands with a var (`missing`: `?var`) row between the folded level and m."""
        return [j for j in range(self.nin) if any(
            lv.rows and (lv.missing or not missing)
            for lv in self.kinds[j][self.axis + 1:m + 1])]

    def _qfold_level(self, m, top, path, qs, ns, miss=None):
        """Result level m below the folded level (qs, ns: indices and lengths so far);
        `miss`: the folded row is missing (`?var`): so is the result row."""
        b, c = self.b, self.c
        if m == self.nlev:
            self._qfold_leaf(top, path, qs, ns)
            return
        if self.levels[m] is FIXED:
            n = self.sizes[m]
        else:
            slot = b.load(self.cnt[m])
            at = b.gep(self.lens[m], [slot])
            if self.counting:
                n, gone = self._qfold_len(m, top, qs, ns, path)
                if gone is not None and VAR in self.levels[m + 1:]:
                    # a missing result row: the present rows under it must still pair
                    with b.if_then(gone):
                        for_loop(b, n, lambda q: self._qfold_check(
                            m + 1, top, path + [q], qs + [q], ns + [n]), name=f"fc{m}")
                if miss is not None:
                    gone = miss if gone is None else b.or_(gone, miss)
                if gone is not None:  # a missing result row: length -1, nothing under it
                    n = b.select(gone, c(0), n)
                b.store(n if gone is None else b.select(gone, c(-1), n), at)
            else:
                n = self._counted(slot, m)  # our own count: every write stays inside
            b.store(b.add(slot, c(1)), self.cnt[m])
            if self.counting and m == self.deepest:
                return
        for_loop(b, n, lambda q: self._qfold_level(m + 1, top, path + [q], qs + [q],
                                                   ns + [n]), name=f"f{m}")

    def _qfold_check(self, m, top, path, qs, ns):
        """Pair the rows at level m and below (nothing written): under a missing result row
        the present rows still line up, or the fold raises."""
        b = self.b
        if VAR not in self.levels[m:]:
            return
        n = self.sizes[m] if self.levels[m] is FIXED else \
            self._qfold_len(m, top, qs, ns, path)[0]
        for_loop(b, n, lambda q: self._qfold_check(m + 1, top, path + [q], qs + [q],
                                                  ns + [n]), name=f"fk{m}")

    def _qfold_leaf(self, top, path, qs, ns):
        b, c = self.b, self.c
        bases, steps, na = top
        self._reset()
        pos = b.load(self.pos)

        def each(i):
            at = path[:]
            at[self.axis] = i
            if self.arg:  # the folded element's position along the axis
                b.store(i, self.argat)
            top_j = [b.gep(bases[j], [b.mul(i, steps[j])]) for j in range(self.nin)]
            skip = None  # element i under a missing row: skipped, its rows not paired
            for j in self._fold_ops(self.nlev - 1, True):
                g = self._descend(j, top_j[j], self.axis + 1, qs, ns, at, None, False)[1]
                skip = g if skip is None else b.or_(skip, g)
            addr = [self._descend(j, top_j[j], self.axis + 1, qs, ns, at, skip)[0]
                    for j in range(self.nin)]

            def fold():
                self._fold(addr, [b.gep(addr[j], [self.moff[j]]) for j in range(self.nin)
                                  if self.masked[j]])
            if skip is None:
                fold()
                return
            with b.if_then(b.not_(skip)):
                fold()
        for_loop(b, na, each, name="fi")
        self._finish(pos, na)
        b.store(b.add(pos, c(1)), self.pos)

    def _qrow(self, j, m, p, path, gone=None):
        """Operand j's var row at level m whose start index is at p: (length, element-0
        address, stride, gone), its indices checked (`levels.Rows.read`)."""
        return self.kinds[j][m].read(self, j, m, p, self.f[j][m], path, gone)

    def _contiguous(self, k, steps, isz):
        """Whether every moving operand's row at level k is contiguous (an i1)."""
        b, fast = self.b, ir.Constant(I1, 1)
        for j, (st, sz) in enumerate(zip(steps, isz)):
            if self.kinds[j][k].moves:
                fast = b.and_(fast, b.icmp_signed("==", st, self.c(sz)))
        return fast

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

    def _bin(self, addr, masks):
        """Histograms (`Bins`): each value's counter in this part's counters, by the bin
        index the body gives (+1, or + its weight); nothing where an input is missing."""
        b = self.b

        def add():
            vals = self._values(addr)
            o = 0
            for h, weighted in enumerate(self.mode.weighted):
                self._count_bin(h, vals[o], vals[o + 1] if weighted else None)
                o += 1 + bool(weighted)
        if not masks:
            add()
            return
        with b.if_then(self._present(masks)):
            add()

    def _count_bin(self, h, i, w=None):
        """Counter i of histogram h += 1 (or w), where 0 <= i < its bins."""
        b, c = self.b, self.c
        with b.if_then(b.icmp_unsigned("<", i, self.bin_n[h])):  # (negatives too)
            at = b.add(self.bin_base, b.add(self.bin_first[h], i))
            if w is not None:
                p = b.gep(b.bitcast(self.out, ir.DoubleType().as_pointer()), [at])
                b.store(b.fadd(b.load(p, align=8), w), p, align=8)
            else:
                p = b.gep(b.bitcast(self.out, I64.as_pointer()), [at])
                b.store(b.add(b.load(p, align=8), c(1)), p, align=8)

    def _bin_blocks(self, k, bases, n, lo, isz):
        """Histograms over a contiguous row: per block of BIN_BLOCK elements, first every
        value's bins (and weights) into arrays on the stack (no store to the counters in
        that loop: it vectorizes), then the counters (a missing value: bin -1)."""
        b, c = self.b, self.c
        masked = [j for j in range(self.nin) if self.masked[j]]
        with b.goto_entry_block():
            slots = [b.alloca(ir.ArrayType(I64 if not wt else ir.DoubleType(), BIN_BLOCK),
                              name=f"bins{q}")
                     for q, wt in enumerate(self._bin_outputs())]

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
                for q, (v, wt) in enumerate(zip(vals, self._bin_outputs())):
                    if ok is not None and not wt:
                        v = b.select(ok, v, c(-1))
                    b.store(v, b.gep(slots[q], [c(0), i]))
            for_loop(b, m, values, name="bv")

            def count(i):
                o = 0
                for h, weighted in enumerate(self.mode.weighted):
                    bin_ = b.load(b.gep(slots[o], [c(0), i]))
                    w = b.load(b.gep(slots[o + 1], [c(0), i])) if weighted else None
                    o += 1 + bool(weighted)
                    self._count_bin(h, bin_, w)
            hinted_loop(b, m, count, "bc", NO_VECTOR)
        blocks = b.sdiv(b.add(n, c(BIN_BLOCK - 1)), c(BIN_BLOCK))
        for_loop(b, blocks, block, name="bb")

    def _bin_outputs(self) -> list:
        """Per body output of the histograms whether it is a weight."""
        return [x for w in self.mode.weighted for x in ((False, True) if w else (False,))]

    def _mark(self, g):
        """Mark pass: the row at level g (of the element taking a missing row there) is
        missing: its length n becomes -2 - n (once)."""
        b, c = self.b, self.c
        for k in self.cnt:
            if not any(self.kinds[j][k].missing for j in self.branch_q):
                continue
            with b.if_then(b.icmp_signed("==", g, c(k))):
                at = b.gep(self.lens[k], [b.sub(b.load(self.cnt[k]), c(1))])
                n = b.load(at)
                b.store(b.select(b.icmp_signed(">=", n, c(0)), b.sub(c(-2), n), n), at)

    def _reset(self):
        b = self.b
        dt = self.acc_dtype
        self._acc_store(b, self.acc, self.em.const(dt, self.red.identity(dt)))
        b.store(self.c(0), self.count)
        b.store(ir.Constant(I1, 0), self.bad)
        if self.arg:  # no position yet
            for slot in (self.accpos, self.accfirst, self.accnan):
                b.store(self.c(-1), slot)

    def _arg_peeled(self, k) -> bool:
        """Whether an arg-reduction folds the last level's rows by `_arg_rows`: plain
        contiguous var rows (their content's bounds known), no missing values, nothing kept
        or taken at positions."""
        return (self.arg and self.reducing and k == self.nlev - 1 and self.levels[k] is VAR and
                not any(self.masked) and not self.track and k not in self.gathered and
                (self.keep is None or self.keep.level != k) and
                all(not lv.moves or (lv.rows and not lv.missing and not lv.stepping)
                    for lv in (self.kinds[j][k] for j in range(self.nin))))

    def _arg_rows(self, k, bases, n, isz, general):
        """Arg-reductions over short rows: a row's first PEEL elements fold with no branch
        on its length (those past it masked out: rows of random short lengths would
        mispredict the loop's exit once a row), the rest in a loop; the peeled elements may
        lie past the row, so only rows with PEEL elements of room in every operand's
        content, all contiguous, take this path (the others: `general`, element by
        element)."""
        b, c = self.b, self.c
        fast = ir.Constant(I1, 1)
        for j in range(self.nin):
            if self.kinds[j][k].moves:
                start, stop = self.row_ends[j]
                room = b.sub(self.f[j][k][4], c(PEEL))
                fast = b.and_(fast, b.and_(b.icmp_signed("==", self.f[j][k][3], c(isz[j])),
                                           b.icmp_signed("<=", start, room)))
                fast = b.and_(fast, b.icmp_signed("==", b.sub(stop, start), n))
        with b.if_else(fast) as (then, otherwise):
            with then:
                self._arg_tree(k, bases, n, isz)
                with b.if_then(b.icmp_signed(">", n, c(PEEL))):
                    for_loop(b, b.sub(n, c(PEEL)), lambda i: general(b.add(i, c(PEEL))),
                             name="ep")
            with otherwise:
                hinted_loop(b, n, general, "e", NO_VECTOR)

    def _arg_tree(self, k, bases, n, isz):
        """A row's first PEEL elements (those past the row: the identity, never better) by
        pairs in a tree: the right one wins only where strictly better (its positions are
        the later ones, so the first of equal values stays), three compares deep instead of
        PEEL; the first NaN and the first position are found beside it (`_arg_position`)."""
        b, c, em, dt = self.b, self.c, self.em, self.out_dts[0]
        ident = em.const(dt, self.red.identity(dt))
        op = ">" if self.red.combine == "greater" else "<"
        pairs, nan = [], c(-1)
        for q in range(PEEL):
            inside = b.icmp_signed(">", n, c(q))
            addr = [p if not self.kinds[j][k].moves else b.gep(p, [c(q * sz)])
                    for j, (p, sz) in enumerate(zip(bases, isz))]
            v = b.select(inside, self._values(addr)[0], ident)
            pairs.append((v, c(q)))
            if dt.kind == "f":
                nan = b.select(b.and_(b.fcmp_unordered("uno", v, v),
                                      b.icmp_signed("<", nan, c(0))), c(q), nan)

        def right_wins(x, y):
            if dt.kind == "f":
                return b.fcmp_ordered(op, y, x)
            return em.truth(em.apply(self.red.combine, [y, x], [dt, dt], np.dtype(bool)),
                            np.dtype(bool))
        while len(pairs) > 1:
            pairs = [(b.select(w, y[0], x[0]), b.select(w, y[1], x[1]))
                     for x, y in zip(pairs[::2], pairs[1::2]) for w in [right_wins(x[0], y[0])]]
        (v, at), = pairs
        best = self._acc_load(b, self.acc)
        better = right_wins(best, v)
        self._acc_store(b, self.acc, b.select(better, v, best))
        b.store(b.select(better, at, b.load(self.accpos)), self.accpos)
        some = b.icmp_signed(">", n, c(0))
        first = b.load(self.accfirst)
        b.store(b.select(b.and_(some, b.icmp_signed("<", first, c(0))), c(0), first),
                self.accfirst)
        if dt.kind == "f":
            old = b.load(self.accnan)
            b.store(b.select(b.icmp_signed("<", old, c(0)), nan, old), self.accnan)
        b.store(b.add(b.load(self.count), b.select(b.icmp_signed(">", n, c(PEEL)), c(PEEL), n)),
                self.count)

    def _arg_combine(self, v):
        """Arg-reductions: the value v (at position `argat`) takes the best's place where
        the row's `combine` comparison holds strictly (the first of equal values stays).
        The best value's chain is that compare and a select only (a max / min
        instruction): the first position folded (a row of only the identity, -inf for
        argmax, has no strictly better value) and the first NaN's (NaN wins, as NumPy's)
        are kept beside it and settled by `_arg_position`."""
        b, em, dt = self.b, self.em, self.out_dts[0]
        best, at, c = self._acc_load(b, self.acc), b.load(self.argat), self.c
        if dt.kind == "f":
            better = b.fcmp_ordered(">" if self.red.combine == "greater" else "<", v, best)
            nan = b.load(self.accnan)
            b.store(b.select(b.and_(b.fcmp_unordered("uno", v, v),
                                    b.icmp_signed("<", nan, c(0))), at, nan), self.accnan)
        else:
            better = em.truth(em.apply(self.red.combine, [v, best], [dt, dt], np.dtype(bool)),
                              np.dtype(bool))
        self._acc_store(b, self.acc, b.select(better, v, best))
        b.store(b.select(better, at, b.load(self.accpos)), self.accpos)
        first = b.load(self.accfirst)
        b.store(b.select(b.icmp_signed("<", first, c(0)), at, first), self.accfirst)

    def _arg_position(self):
        """The best value's position: the first NaN's, else the last strictly better one's,
        else the first position folded (-1: nothing folded)."""
        b, c = self.b, self.c
        pos = b.load(self.accpos)
        pos = b.select(b.icmp_signed("<", pos, c(0)), b.load(self.accfirst), pos)
        if self.out_dts[0].kind == "f":
            nan = b.load(self.accnan)
            pos = b.select(b.icmp_signed(">=", nan, c(0)), nan, pos)
        return pos

    def _fold(self, addr, masks):
        b = self.b

        def fold():
            res = self._values(addr)
            if self.arg:
                self._arg_combine(res[0])
            else:
                self._acc_store(b, self.acc, self._combine(
                    self.em, self._acc_load(b, self.acc), res[0]))
            b.store(b.add(b.load(self.count), self.c(1)), self.count)
        if not masks:
            fold()
            return
        with b.if_else(self._present(masks)) as (then, otherwise):
            with then:
                fold()
            with otherwise:
                b.store(ir.Constant(I1, 1), self.bad)

    def _partial(self, at):
        """Mode "all": this part's raw fold at `at`, flags (bit 0 a missing value was seen,
        bit 1 anything was seen) and the count of folded values in status word 6."""
        b, c = self.b, self.c
        dt = self.out_dts[0]
        cnt = b.load(self.count)
        bad = b.load(self.bad)
        if self.arg:  # the position (and, for the caller, nothing else)
            b.store(self.red.finish(self._acc_load(b, self.acc), self._arg_position()),
                    b.bitcast(b.gep(self.out, [b.mul(at, c(8))]), I64.as_pointer()), align=1)
        else:
            store_value(b, self._narrowed(b, self._acc_load(b, self.acc)),
                        b.gep(self.out, [b.mul(at, c(dt.itemsize))]), dt)
        seen = b.or_(bad, b.icmp_signed(">", cnt, c(0)))
        flags = b.or_(b.zext(bad, I8), b.shl(b.zext(seen, I8), ir.Constant(I8, 1)))
        b.store(flags, b.gep(self.outm, [at]), align=1)
        b.store(cnt, b.gep(self.status, [c(6)]))

    def _int_mean(self, v, cnt, dt):
        """A mean accumulated in an integer dtype, as NumPy's: the sum / count in float64,
        truncated back. One value is itself (a float64 could round it out of range); no
        value gives the sum, 0 (the caller reports it)."""
        b, c, em = self.b, self.c, self.em
        f8 = np.dtype(np.float64)
        q = b.fdiv(em.cast(v, dt, f8), b.sitofp(b.select(b.icmp_signed(">", cnt, c(1)), cnt,
                                                         c(1)), lltype(f8)))
        return b.select(b.icmp_signed(">", cnt, c(1)), em.cast(q, f8, dt), v)

    def _finish(self, at, n, miss=None):
        """Store the result and its flags: bit 0 valid, bit 1 the row had elements, bit 2
        the row was missing (`?var`)."""
        b, c = self.b, self.c
        dt = self.out_dts[0]
        cnt = b.load(self.count)
        v = self._acc_load(b, self.acc)
        mj = any(self.masked)
        valid = b.not_(b.load(self.bad)) if (mj and not self.skipna) else ir.Constant(I1, 1)
        if self.red.combine in ("minimum", "maximum") or (self.mean and (self.skipna or mj)) \
                or self.arg:  # nothing folded: no value, no position
            valid = b.and_(valid, b.icmp_signed(">", cnt, c(0)))
        if self.mean and dt.kind in "iu":
            v = self._int_mean(v, cnt, dt)
        elif self.mean:
            cf = b.sitofp(cnt, lltype(self.acc_dtype))
            v = (b.fdiv(v[0], cf), b.fdiv(v[1], cf)) if dt.kind == "c" else b.fdiv(v, cf)
        if self.arg:  # the position, int64
            b.store(self.red.finish(v, self._arg_position()),
                    b.bitcast(b.gep(self.out, [b.mul(at, c(8))]), I64.as_pointer()), align=1)
        else:
            store_value(b, self._narrowed(b, v), b.gep(self.out, [b.mul(at, c(dt.itemsize))]),
                        dt)
        if miss is not None:
            valid = b.and_(valid, b.not_(miss))
        flags = b.or_(b.zext(valid, I8),
                      b.shl(b.zext(b.icmp_signed(">", n, c(0)), I8), ir.Constant(I8, 1)))
        if miss is not None:
            flags = b.or_(flags, b.shl(b.zext(miss, I8), ir.Constant(I8, 2)))
        # no flag bytes (word 4 is 0) where the caller reads none: a plain sum
        with b.if_then(b.icmp_unsigned("!=", b.ptrtoint(self.outm, I64), c(0))):
            b.store(flags, b.gep(self.outm, [at]), align=1)

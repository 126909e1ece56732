"""The folds over middle levels in the loop-nest generator (`codegen.nest`, mode
"fold<a>[,<b>...]"): each result element walks its group, every element of the folded
levels. With one folded level, rows at or below it may be missing (`?var`): a member under a
missing row is skipped (its rows are not paired), and one whose row at a result level is
missing makes that result row missing (not under skipna). `NestGroups` is a mixin of the
generator (`codegen.nest._NestGen`): it uses the generator's builder, operand words and row
reads (`_rows`, `check`, `_inner`)."""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from lazyk.codegen.emit import I1, I64, lltype
from lazyk.codegen.levels import FIXED, VAR, Stay, Strided
from lazyk.codegen.llvm import NO_VECTOR, for_loop, hinted_loop

# Result elements a fold by columns keeps on the stack at once (`_fold_columns`): 16 KB of
# float64 accumulators and counts, in L1, with runs of a row long enough to stream. A
# (2000, 2000) fold along axis 0 on one thread, min of 31: `?float32` sum 5.4 / 2.9 / 2.8 ms
# at 256 / 1024 / 2048 columns, float64 2.0 / 1.6 / 1.5 ms.
COLUMNS = 1024


class NestGroups:
    """The folds over middle levels of the loop-nest generator."""

    def _fold_level(self, m, top, path, qs, ns, miss=None):
        """Result level m below the first folded level (`top`: its rows' bases, steps and
        length; qs, ns: the result indices and lengths of the kept levels so far, by
        level); `miss`: the folded row is missing (`?var`): so is the result row."""
        b, c = self.b, self.c
        if m == self.nlev:
            self._fold_leaf(top, path, qs, ns)
            return
        if m == self.nlev - 1 and self._by_columns():
            self._fold_columns(top, path, qs, ns)
            return
        if m in self.axes:
            self._fold_level(m + 1, top, path, qs, ns, miss)
            return
        if self.levels[m] is FIXED:
            n = self.sizes[m]
        else:
            slot = b.load(self.cnt[m])
            at = b.gep(self.lens[m], [slot])
            if self.counting:
                n, gone = self._fold_len(m, top, path, qs, ns)
                if gone is not None and VAR in self.levels[m + 1:]:
                    # a missing result row: the present rows under it must still pair
                    with b.if_then(gone):
                        for_loop(b, n, lambda q: self._fold_check(
                            m + 1, top, path, {**qs, m: q}, {**ns, m: n}), name=f"fc{m}")
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
        if m == self.nlev - 1 and self.split_columns:  # this part's results: [lo, hi)
            pos0 = b.load(self.pos)

            def column(i):
                q = b.add(self.lo, i)
                b.store(b.add(pos0, q), self.pos)
                self._fold_level(m + 1, top, path, {**qs, m: q}, {**ns, m: n})
            for_loop(b, b.sub(self.hi, self.lo), column, name=f"f{m}")
            b.store(b.add(pos0, n), self.pos)
            return
        for_loop(b, n, lambda q: self._fold_level(m + 1, top, path, {**qs, m: q},
                                                  {**ns, m: n}), name=f"f{m}")

    def _by_columns(self) -> bool:
        """Whether the fold runs by columns (`_fold_columns`): one folded level above the
        last, every level fixed and every operand strided or constant there, numbers only,
        on the CPU; not any / all (LLVM's vectorizer asserts on their i1 accumulators in
        memory)."""
        return (self.target.name == "cpu" and len(self.axes) == 1 and
                self.axis < self.nlev - 1 and all(lv is FIXED for lv in self.levels) and
                all(type(lv) in (Strided, Stay) for ks in self.kinds for lv in ks) and
                not (self.keep is not None or self.out_dts[0].kind in "bc") and
                self._numbers_only())

    def _fold_columns(self, top, path, qs, ns):
        """The last level's result elements (qs: the kept levels' indices above it) by
        blocks of COLUMNS: each element's accumulator in a buffer on the stack, the folded
        level's elements outermost, so the inner loop reads a row's consecutive elements (a
        loop that vectorizes) where walking each element's group would read one value per
        row (a cache line each)."""
        b, c = self.b, self.c
        bases, steps, na = top
        m = self.nlev - 1
        n = self.sizes[m]
        # this part's results (a fold along level 0 splits them: `Fold.splits_columns`)
        lo, hi = (self.lo, self.hi) if self.split_columns else (c(0), n)
        kept = list(range(self.axis + 1, m))
        isz = [np.dtype(d).itemsize for d in self.spec.inputs]
        # per result: its accumulator and count (an arg-reduction: its positions too)
        types = [lltype(self.acc_dtype), I64] + [I64] * (3 if self.arg else 0)
        with b.goto_entry_block():
            bufs = [b.alloca(ir.ArrayType(t, COLUMNS)) for t in types]
        slots = self.acc, self.count, self.bad, self.nan
        args = (self.accpos, self.accfirst, self.accnan) if self.arg else ()
        pos0 = b.load(self.pos)
        steps_m = [self.f[j][m][0] if self.kinds[j][m].moves else c(0) for j in range(self.nin)]

        def use(i, bad=None):
            # a column missed a value where it counted fewer than the folded level's
            # (every element is visited): no flag per column in the loop; a min / max of
            # each column propagates NaN itself (no fold across lanes)
            at = [b.gep(x, [c(0), i]) for x in bufs]
            self.acc, self.count = at[:2]
            if self.arg:
                self.accpos, self.accfirst, self.accnan = at[2:]
            self.bad, self.nan = bad, None

        def block(blk):
            first = b.add(lo, b.mul(blk, c(COLUMNS)))
            w = b.sub(hi, first)
            w = b.select(b.icmp_signed("<", w, c(COLUMNS)), w, c(COLUMNS))
            for_loop(b, w, lambda i: (use(i, slots[2]), self._reset()), name="cz")

            def row(g):
                if self.arg:  # the position of this row's values along the folded level
                    b.store(g, self.argat)
                row0 = [self._descend(j, b.gep(p, [b.mul(g, s)]), self.axis + 1,
                                      [qs[k] for k in kept], [ns[k] for k in kept],
                                      path + [g])[0]
                        for j, (p, s) in enumerate(zip(bases, steps))]

                def column(strides):
                    def one(i):
                        use(i)
                        q = b.add(first, i)
                        addr = [p if not self.kinds[j][m].moves else
                                b.gep(p, [b.mul(q, st)]) for j, (p, st) in
                                enumerate(zip(row0, strides))]
                        self._fold(addr, [b.gep(addr[j], [self.moff[j]])
                                          for j in range(self.nin) if self.masked[j]])
                    return one
                with b.if_else(self._contiguous(m, steps_m, isz)) as (then, otherwise):
                    with then:
                        self._body_loop(b, w, column([c(sz) for sz in isz]))
                    with otherwise:
                        hinted_loop(b, w, column(steps_m), "cs", NO_VECTOR)
            for_loop(b, na, row, name="cg")

            def finish(i):
                use(i, slots[2])
                b.store(b.icmp_signed("<", b.load(self.count), na), self.bad)
                self._finish(b.add(b.add(pos0, first), i), na)
            for_loop(b, w, finish, name="cf")
        for_loop(b, b.sdiv(b.add(b.sub(hi, lo), c(COLUMNS - 1)), c(COLUMNS)), block, name="cb")
        self.acc, self.count, self.bad, self.nan = slots
        if self.arg:
            self.accpos, self.accfirst, self.accnan = args
        b.store(b.add(pos0, n), self.pos)

    def _fold_check(self, m, top, path, qs, ns):
        """Pair the rows at level m and below (nothing written): under a missing result row
        the present rows still line up, or the fold raises."""
        if VAR not in self.levels[m:]:
            return
        n = self.sizes[m] if self.levels[m] is FIXED else \
            self._fold_len(m, top, path, qs, ns)[0]
        for_loop(self.b, n, lambda q: self._fold_check(m + 1, top, path, {**qs, m: q},
                                                       {**ns, m: n}), name=f"fk{m}")

    def _fold_len(self, m, top, path, qs, ns):
        """(the result length at level m, whether that row is missing or None): the rows
        there, one per member of the group, pair up (rows of length 1 stretching; no
        member: 0). A member under a missing row is skipped, one whose row at m is missing
        too; that one makes the result row missing (not under skipna)."""
        b, c = self.b, self.c
        b.store(c(-1), self.flen)  # -1: no member yet
        if self.fold_q:
            b.store(ir.Constant(I1, 0), self.fmiss)

        def action(addrs, at, skip):
            n = b.load(self.flen)
            for j in range(self.nin):
                if not self.kinds[j][m].rows:
                    continue
                ln = self._row(j, m, addrs[j], at, skip)[0]
                # -1: no member yet; a row of length 0 pairs only with 0 or 1
                ok = b.or_(b.or_(b.icmp_signed("==", n, c(-1)), b.icmp_signed("==", n, c(1))),
                           b.or_(b.icmp_signed("==", ln, c(1)), b.icmp_signed("==", ln, n)))
                self.check(ok if skip is None else b.or_(ok, skip), 4, m, at, j, ln, n, c(-1))
                took = b.or_(b.icmp_signed("==", n, c(-1)), b.icmp_signed("!=", ln, c(1)))
                n = b.select(took if skip is None else b.and_(took, b.not_(skip)), ln, n)
            b.store(n, self.flen)
        self._group(top, path, m, qs, ns, action, here=m)
        n = b.load(self.flen)
        n = b.select(b.icmp_signed("==", n, c(-1)), c(0), n)
        return n, (b.load(self.fmiss) if self.fold_q and not self.skipna else None)

    def _fold_leaf(self, top, path, qs, ns):
        b, c = self.b, self.c
        self._reset()
        pos = b.load(self.pos)

        def action(addrs, at, skip):
            def fold():
                self._fold(addrs, [b.gep(addrs[j], [self.moff[j]]) for j in range(self.nin)
                                   if self.masked[j]])
            if skip is None:
                fold()
                return
            with b.if_then(b.not_(skip)):
                fold()
        self._group(top, path, self.nlev, qs, ns, action)
        # the group had members: a value was folded or a missing one seen (one folded level
        # over `?var` rows: its elements)
        seen = top[2] if self.qfold else \
            b.add(b.load(self.count), b.zext(b.load(self.bad), I64))
        self._finish(pos, seen)
        b.store(b.add(pos, c(1)), self.pos)

    # ------------------------------------------------------------ walking a group
    def _group(self, top, path, upto, qs, ns, action, here=None):
        """Every element i of the first folded level's rows (`top`): its members down to
        level `upto` (`_walk`), then `action(addrs, at, skip)`; `skip`: the element lies
        under a missing row (or, with `here`, has a missing row at level `here`), or None
        where no row can be missing."""
        b = self.b
        bases, steps, na = top

        def each(i):
            if self.arg:  # the folded element's position along the axis
                b.store(i, self.argat)
            addrs = [b.gep(p, [b.mul(i, s)]) for p, s in zip(bases, steps)]
            at = path + [i]
            skip = self._skipped(addrs, at, upto, qs, ns, here) if self.fold_q else None
            self._walk(self.axis + 1, addrs, at, upto, qs, ns,
                       lambda a, t: action(a, t, skip), skip)
        for_loop(b, na, each, name="fg")

    def _walk(self, m, addrs, at, upto, qs, ns, action, skip=None):
        """One result element's group from level m (operand addresses `addrs`, index path
        `at`) down to level `upto`: every element of a folded level (operand rows paired
        as elementwise work pairs them), the result index qs[m] at a kept level (a row of
        length 1 stretches, any other must have the result's length ns[m]; none is read
        under a missing row, `skip`); then `action(addrs, at)`, or (at the last level,
        folded) the fold of its row."""
        b = self.b
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
                           at + [i], upto, qs, ns, action, skip)
            for_loop(b, n, each, name=f"g{m}")
            return
        q = qs[m]
        out = [self._descend(j, p, m, [q], [ns[m]], at, skip)[0] for j, p in enumerate(addrs)]
        self._walk(m + 1, out, at + [q], upto, qs, ns, action, skip)

    def _skipped(self, addrs, at, upto, qs, ns, here=None):
        """Whether an element of the folded level (operand addresses `addrs` there) lies
        under a missing row above level `upto` (rows read unpaired and unchecked: the walk
        after checks them), or, with `here`, has a missing row at level `here`. With
        `here`, an element missing there and not above marks the result row missing
        (`fmiss`)."""
        b = self.b
        kept = range(self.axis + 1, upto)
        at = at + [qs[k] for k in kept]  # (the path a failed check reports)
        above, gone_here = ir.Constant(I1, 0), ir.Constant(I1, 0)
        for j in self._fold_ops(upto - 1 if here is None else upto, True):
            p, real, blind = self._descend(j, addrs[j], self.axis + 1, [qs[k] for k in kept],
                                           [ns[k] for k in kept], at, None, False)
            if real is not None:
                above = b.or_(above, real)
            if here is not None and self.kinds[j][here].missing:
                h = self._row(j, here, p, at, blind)[3]
                gone_here = b.or_(gone_here, h if blind is None else b.and_(h, b.not_(blind)))
        if here is None:
            return above
        b.store(b.or_(b.load(self.fmiss), b.and_(gone_here, b.not_(above))), self.fmiss)
        return b.or_(above, gone_here)

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
                ln, base, stride, now = self._row(j, m, p, path, gone)
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

    def _fold_ops(self, m, missing=False):
        """Operands with a var (`missing`: `?var`) row between the folded level and m."""
        return [j for j in range(self.nin) if any(
            lv.rows and (lv.missing or not missing)
            for lv in self.kinds[j][self.axis + 1:m + 1])]

    def _row(self, j, m, p, path, gone=None):
        """Operand j's var row at level m whose start index is at p: (length, element-0
        address, stride, gone), its indices checked (`levels.Rows.read`)."""
        return self.kinds[j][m].read(self, j, m, p, self.f[j][m], path, gone)

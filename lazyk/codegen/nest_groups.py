"""The folds over middle levels in the loop-nest generator (`codegen.nest`, mode
"fold<a>[,<b>...]"): each result element walks its group, every element of the folded
levels, with `?var` rows at or below a folded level (`_qfold_*`) found element by element.
`NestGroups` is a mixin of the generator (`codegen.nest._NestGen`): it uses the generator's
builder, operand words and row reads (`_rows`, `check`, `_inner`)."""
from __future__ import annotations

from llvmlite import ir

from lazyk.codegen.emit import I1, I64
from lazyk.codegen.levels import FIXED, VAR
from lazyk.codegen.llvm import for_loop


class NestGroups:
    """The folds over middle levels of the loop-nest generator."""

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

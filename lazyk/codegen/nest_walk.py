"""The level walk of the loop-nest generator (`codegen.nest`, whose module doc describes the
levels, operand kinds, modes, passes and kernel data): each level's rows read, checked and
paired (`_rows`), the count / fill / check / mark passes over the result rows (`_level`,
`_counted`, `_mark`), tuple levels (`_tuple_rows`, `_tuple_loop`) and the innermost loop
(`_inner`: the window fold, a contiguous loop or the strided one). `NestWalk` is a mixin of
the generator (`codegen.nest._NestGen`)."""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from lazyk.codegen.emit import I1, I8, I64, P8
from lazyk.codegen.levels import FIXED, VAR, Gathered, Pick, tuple_bounds, tuple_count
from lazyk.codegen.llvm import NO_VECTOR, for_loop, hinted_loop
from lazyk.codegen.nest_window import LEAD, WINDOW
from lazyk.errors import NotSupportedError


class NestWalk:
    """The level walk of the loop-nest generator: rows, passes, tuple levels, the inner loop."""

    def _rows(self, k, ptrs, path, gone=None, lost=None):
        """Per operand at level k: (element-0 address, step); the result length n.
        `gone`: per where() branch operand the level of its missing row so far (updated).
        `lost`: the element above is missing (a missing position: an operand gathered
        there points at the dummy bytes), so every row here is read from the dummy."""
        b, c = self.b, self.c
        bases, steps, lens, miss = [], [], {}, None
        gones = {}  # var operand -> its row is missing here
        fixed = k in self.fixed_q
        self.row_gone = ir.Constant(I1, 0)  # a `?var` row at a fixed level k is missing
        self.row_ends = {}  # each var operand's start and stop (`_window_fold`)
        plain = set()  # operands whose row here is read as it is (no missing row above)
        for j in range(self.nin):
            level, f = self.kinds[j][k], self.f[j][k]
            taken = isinstance(level, Gathered)  # read at positions (`_gather`), not paired
            if not level.moves:
                bases.append(ptrs[j])
                steps.append(c(0))
            elif not level.rows:
                bases.append(ptrs[j])
                steps.append(c(0) if taken else f[0])
                if taken:
                    self.grow[j] = (ptrs[j], f[0], f[1])
                if isinstance(level, Pick):  # a fixed dim's items: its size
                    lens[j] = f[1]
            else:
                delta, content, istride, stride, length = f[:5]
                was = None if gone is None or gone[j] is None else \
                    b.icmp_signed("<", gone[j], c(self.nlev))
                # a gone operand's row, or any row under a missing position, is not
                # there: its words and present byte read zeros (the dummy bytes)
                away = was if lost is None else lost if was is None else b.or_(was, lost)

                def at(q, away=away):
                    return q if away is None else b.select(away, self.dummy, q)
                i = getattr(getattr(level, "inner", level), "shares", -1)
                if i in plain and was is None:  # operand i's row: read and checked there
                    start, stop = self.row_ends[i]
                    ok = ir.Constant(I1, 1)
                else:
                    start = self.index(at(ptrs[j]), level.width)
                    stop = self.index(at(b.gep(ptrs[j], [delta])), level.width)
                    ok = level.inside(self, f, start, stop)
                self.row_ends[j] = (start, stop)
                if was is None and not level.missing:
                    plain.add(j)
                rgone = None
                if level.missing:  # a missing row: indices unused, pairs with any row
                    rgone = level.missing_here(self, ptrs[j], f, None, at)
                    ok = b.or_(ok, rgone)
                    if was is not None and (j in self.branch_q or fixed):
                        # a branch's missing row: only where it is taken; against a fixed
                        # level: the row is missing, its elements still run
                        gone[j] = b.select(b.and_(rgone, b.not_(was)), c(k), gone[j])
                        if fixed and j not in self.branch_q:  # (a branch's: `_write`)
                            self.row_gone = b.or_(self.row_gone, rgone)
                        rgone = b.or_(rgone, was)
                    elif was is not None:
                        now = b.and_(rgone, b.not_(was))
                        miss = now if miss is None else b.or_(miss, now)
                        rgone = b.or_(rgone, was)
                    else:
                        miss = rgone if miss is None else b.or_(miss, rgone)
                elif was is not None:
                    rgone = was
                self.check(ok, 1, k, path, j, start, stop, length)
                n = b.sub(stop, start)
                if rgone is not None:
                    n = b.select(rgone, c(1), n)
                    gones[j] = rgone
                bases.append(b.gep(b.inttoptr(content, P8), [b.mul(start, istride)]))
                if taken:
                    steps.append(c(0))
                    self.grow[j] = (bases[-1], stride, n)
                    continue
                steps.append(b.select(b.icmp_signed("==", n, c(1)), c(0), stride))
                lens[j] = n
        if self.keep_sides and k <= self.keep.level and self.tuples[k] is None and \
                (self.keep.array or k == self.keep.level):
            self._sides_agree(k, lens, gones, path, self.keep_sides)
        for at, sides in self.take_sides:
            if k < at and self.tuples[k] is None:
                self._sides_agree(k, lens, gones, path, sides, 7)
        if self.tuples[k] is not None:
            n = self._tuple_rows(k, lens, path)
        elif self.levels[k] is FIXED:
            n = self.sizes[k]
            for j, ln in lens.items():
                ok = b.or_(b.icmp_signed("==", ln, n), b.icmp_signed("==", ln, c(1)))
                self.check(ok, 2, k, path, j, ln, n, c(-1))
        else:
            n, src = c(1), c(-1)  # src: the operand whose row set n
            for j, ln in lens.items():
                ok = b.or_(b.or_(b.icmp_signed("==", n, c(1)), b.icmp_signed("==", ln, c(1))),
                           b.icmp_signed("==", ln, n))
                self.check(ok, 2, k, path, j, ln, n, src)
                one = b.icmp_signed("==", ln, c(1))
                n, src = b.select(one, n, ln), b.select(one, src, c(j))
        if miss is not None:  # nothing under a missing result row
            n = b.select(miss, c(0), n)
            if k in self.slot_lens:  # (nor a tuple)
                self.slot_lens[k] = [b.select(miss, c(0), ln) for ln in self.slot_lens[k]]
        return bases, steps, n, miss

    def _level(self, k, ptrs, path, gone=None, lost=None):
        b, c = self.b, self.c
        gone = None if gone is None else list(gone)
        bases, steps, n, miss = self._rows(k, ptrs, path, gone, lost)
        if lost is not None:  # the element above is missing (`child`): so is this row
            miss = lost if miss is None else b.or_(miss, lost)
            n = b.select(lost, c(0), n)
        keep = self.keep is not None and self.keep.level == k
        want = None  # fill pass: the row's counted length
        if k in self.qrows:  # this row's present byte (fill pass)
            slot = b.load(self.qcnt[k])
            b.store(b.zext(b.not_(self.row_gone), I8), b.gep(self.qrows[k], [slot]), align=1)
            b.store(b.add(slot, c(1)), self.qcnt[k])
        if k == self.axis:
            self._fold_level(k + 1, (bases, steps, n), path, {}, {},
                             miss if self.qfold else None)
            return
        if self.total and miss is not None and not self.skipna:
            b.store(b.or_(b.load(self.bad), miss), self.bad)  # a missing row folded in
        if k in self.cnt:
            slot = b.load(self.cnt[k])
            at = b.gep(self.lens[k], [slot])
            if self.counting:
                got = self._count_kept(k, bases, steps, n, path) if keep else n
                b.store(got if miss is None else b.select(miss, c(-1), got), at)
            else:
                want = self._counted(slot, k)
                if self.branch_q:  # a row the mark pass found missing: nothing under it
                    n = b.select(b.icmp_signed("==", want, c(0)), c(0), n)
                if not keep:  # (kept elements are checked against it one by one)
                    self.check(b.icmp_signed("==", n, want), 3, k, path, -1, n, want)
            b.store(b.add(slot, c(1)), self.cnt[k])
            if self.counting and k == self.deepest and not self.marking:
                return
        if k == self.nlev - 1:
            if not self.checking:  # (the last level's rows are checked: no elements)
                self._inner(k, bases, steps, n, path, miss, gone, want)
            return
        lo = self.lo if k == 0 and self.levels[0] is FIXED else c(0)
        count = b.sub(self.hi, self.lo) if k == 0 and self.levels[0] is FIXED else n
        if self.tuples[k] is not None:
            self._tuple_loop(k, bases, steps, lambda t, addrs: self._level(
                k + 1, addrs, path + [t], gone))
            return

        if k == 0 and self.staged_short is None and self._staged(1) and self._prefixed(1):
            self.staged_short = self._short_rows(bases, steps)

        def child(i):
            i = b.add(i, lo)
            at, away = self._gather(k, [b.gep(p, [b.mul(i, s)]) for p, s in zip(bases, steps)],
                                    path + [i])
            # a missing position, or a kept element whose mask is missing: the row below is
            # missing (`lost`)
            lost = None
            for a in away.values():
                lost = a if lost is None else b.or_(lost, a)
            if not keep:
                self._level(k + 1, at, path + [i], gone, lost)
                return
            kept, unknown = self._keep_value(at, away, missing=True)
            if unknown is not None:
                lost = unknown if lost is None else b.or_(lost, unknown)
            with b.if_then(kept):
                slot = self._next_kept(k, path, want)
                self._level(k + 1, at, path + [i], gone, lost)
                b.store(b.add(slot, c(1)), self.kept)
        if keep:
            b.store(c(0), self.kept)
        if self.row_bins:  # (the level above the folded one)
            self._fold_blocks(bases, steps, lo, count, child)
            return
        for_loop(b, count, child, name=f"l{k}")
        if keep and want is not None:
            got = b.load(self.kept)
            self.check(b.icmp_signed("==", got, want), 3, k, path, -1, got, want)

    def _counted(self, slot, k):
        """Fill pass: result row `slot` of var level k has offsets[slot + 1] - offsets[slot]
        elements (the count pass's lengths, summed up: no separate lengths array)."""
        b = self.b
        lo = b.load(b.gep(self.lens[k], [slot]))
        return b.sub(b.load(b.gep(self.lens[k], [b.add(slot, self.c(1))])), lo)

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

    # ------------------------------------------------------------ innermost level
    def _inner(self, k, bases, steps, n, path, miss=None, gone=None, want=None):
        b, c = self.b, self.c
        isz = [np.dtype(d).itemsize for d in self.spec.inputs]
        lo = self.lo if k == 0 and self.levels[0] is FIXED else c(0)
        if k == 0 and self.levels[0] is FIXED:
            n = b.sub(self.hi, self.lo)
        keep = self.keep is not None and self.keep.level == k
        if self.reducing:
            self._reset()
        if self.scan:  # each innermost row's running fold starts again
            # (a float sum starts from -0.0, the identity: a first -0.0 stays -0.0)
            dt = self.out_dts[0]
            self._scan_store(self.em.const(dt, 1 if self.scan == "multiply" else
                                           complex(-0.0, -0.0) if dt.kind == "c" else
                                           -0.0 if dt.kind == "f" else 0))
            b.store(ir.Constant(I1, 1), self.sfirst)
        if keep:
            b.store(c(0), self.kept)
        pos0 = b.load(self.pos)

        def act(r, addr, masks):
            """Element r of the result row (kept elements: r counts them)."""
            if self.arg and self.total:  # its position among the values of every axis
                flat = b.load(self.flat)
                b.store(flat, self.argat)
                b.store(b.add(flat, c(1)), self.flat)
            elif self.arg and self.reducing:
                b.store(r, self.argat)
            if self.marking:
                self._mark(self._values_and_present(addr, gone)[2])
            elif self.binning:
                self._bin(addr, masks)
            elif not self.mapping:
                self._fold(addr, masks)
            else:
                self._write(addr, masks, b.add(pos0, r), gone)

        def element(i, addr):
            addr, away = self._gather(k, addr, path + [i])
            masks = [b.gep(addr[j], [self.moff[j]]) if j not in away else
                     b.select(away[j], self.dummy, b.gep(addr[j], [self.moff[j]]))
                     for j in range(self.nin) if self.masked[j]]
            if gone is not None and self.track:  # a gone operand reads zeros
                gn = [None if g is None else b.icmp_signed("<", g, c(self.nlev))
                      for g in gone]
                masks = [m if gn[j] is None else b.select(gn[j], self.dummy, m)
                         for j, m in zip([j for j in range(self.nin) if self.masked[j]],
                                         masks)]
                addr = [a if gn[j] is None else b.select(gn[j], self.dummy, a)
                        for j, a in enumerate(addr)]
            if not keep:
                act(b.sub(i, lo), addr, masks)
                return
            if self.mapping and want is not None and not self.where_masks:
                # fill pass: every element written at the next kept slot, which only a kept
                # element moves past (no branch on the mask); one past the row's counted
                # length (dropped elements after its last kept one) goes to scratch
                kp = self._keep_value(addr, away)
                slot = b.load(self.kept)
                fits = b.icmp_signed("<", slot, want)
                self.check(b.or_(fits, b.not_(kp)), 3, k, path, -1, b.add(slot, c(1)), want)
                self._write(addr, masks, b.add(pos0, slot), gone, spare=b.not_(fits))
                b.store(b.add(slot, b.zext(kp, I64)), self.kept)
                return
            with b.if_then(self._keep_value(addr, away)):
                slot = self._next_kept(k, path, want)
                act(b.sub(i, lo) if self.arg and self.keep.every_position else slot, addr,
                    masks)
                b.store(b.add(slot, c(1)), self.kept)

        def general(i):
            i = b.add(i, lo)
            element(i, [b.gep(p, [b.mul(i, s)]) for p, s in zip(bases, steps)])

        def contiguous(i):  # (every moving operand's stride its item size)
            i = b.add(i, lo)
            element(i, [p if not self.kinds[j][k].moves else
                        b.gep(p, [b.mul(i, c(sz), flags=("nuw", "nsw"))])
                        for j, (p, sz) in enumerate(zip(bases, isz))])
        if self.tuples[k] is not None:
            # the tuples of the row; every moving operand contiguous there (rows of one
            # collection's fields): constant strides, so the slots' items are read at one
            # index each, not through a pointer and a stride register per operand
            with b.if_else(self._contiguous(k, steps, isz)) as (then, otherwise):
                with then:
                    self._tuple_loop(k, bases, [c(sz) for sz in isz], element)
                with otherwise:
                    self._tuple_loop(k, bases, steps, element)
        elif self._arg_peeled(k):
            self._arg_rows(k, bases, n, isz, general)
        elif (any(self.masked) and not self._windowed(k) and not self._staged(k) and
              not self.binning and not self._numbers_only()) or \
                not self.nin or self.track or k in self.gathered or (keep and self.mapping) \
                or self.arg:
            for_loop(b, n, general, name="e")
        elif self._staged(k) or self._windowed(k):
            def staged():
                # rows of contiguous content, none stretched: folded from blocks of values
                # (or bytes of a count of trues) computed ahead (`_staged_fold`)
                with b.if_else(self._whole_rows(k, n, isz)) as (then, otherwise):
                    with then:
                        self._staged_fold(bases, n, isz, k, contiguous)
                    with otherwise:
                        hinted_loop(b, n, general, "e", NO_VECTOR)

            def windowed():
                # rows of contiguous content, none stretched, with the leading windows'
                # room in the content (all but the last few rows): the window fold, no
                # branch per element. Its last window, [stop - WINDOW, stop), runs only for
                # rows longer than the leading windows: inside the content too.
                with b.if_else(self._whole_rows(k, n, isz, LEAD * WINDOW)) as (then, other):
                    with then:
                        self._window_fold(bases, n, isz, k)
                    with other:
                        hinted_loop(b, n, general, "e", NO_VECTOR)
            if self._staged(k) and self.staged_short is not None:  # short rows or long
                with b.if_else(self.staged_short) as (short, long):
                    with short:
                        staged()
                    with long:
                        windowed()
            elif self._staged(k) and self._libm():
                staged()
            else:
                windowed()
        else:
            # Every moving operand contiguous in this row: constant strides, so LLVM
            # vectorizes; other rows take the general strided loop.
            with b.if_else(self._contiguous(k, steps, isz)) as (then, otherwise):
                with then:
                    if self.binning:  # bins of a block first (vectorized), then counted
                        self._bin_blocks(k, bases, n, lo, isz)
                    elif self.reducing:
                        self._body_loop(b, n, contiguous)
                    else:
                        for_loop(b, n, contiguous, name="ec")
                with otherwise:
                    hinted_loop(b, n, general, "e", NO_VECTOR)
        if self.reducing:
            # with elements kept: the row had elements when one was folded or missing
            seen = b.add(b.load(self.count), b.zext(b.load(self.bad), I64)) if keep else n
            self._finish(pos0, seen, miss)
            b.store(b.add(pos0, c(1)), self.pos)
        elif self.mapping and keep:
            got = b.load(self.kept)
            if want is not None:
                self.check(b.icmp_signed("==", got, want), 3, k, path, -1, got, want)
            b.store(b.add(pos0, got), self.pos)
        elif self.mapping:
            b.store(b.add(pos0, n), self.pos)

    def _whole_rows(self, k, n, isz, room=0):
        """Whether every moving var operand's row at level k is contiguous content (its
        stride word the item size, the same for every row) of the result row's length n
        (none stretched: a row of 1 against longer ones), with `room` elements of its
        content from its start (an i1)."""
        b, c, fast = self.b, self.c, ir.Constant(I1, 1)
        for j in range(self.nin):
            if self.kinds[j][k].moves:
                start, stop = self.row_ends[j]
                fast = b.and_(fast, b.and_(b.icmp_signed("==", self.f[j][k][3], c(isz[j])),
                                           b.icmp_signed("==", b.sub(stop, start), n)))
                if room:  # start <= length - room
                    fast = b.and_(fast, b.icmp_signed("<=", start,
                                                      b.sub(self.f[j][k][4], c(room))))
        return fast

    def _contiguous(self, k, steps, isz):
        """Whether every moving operand's row at level k is contiguous (an i1)."""
        b, fast = self.b, ir.Constant(I1, 1)
        for j, (st, sz) in enumerate(zip(steps, isz)):
            if self.kinds[j][k].moves:
                fast = b.and_(fast, b.icmp_signed("==", st, self.c(sz)))
        return fast

    # ------------------------------------------------------------ tuple levels
    def _tuple_rows(self, k, lens, path):
        """Tuple level k: the rows of the `Pick` operands pair within their slot's group
        (one length; a row of 1 stretches), which gives each slot's row length and the
        tuple count; any other moving operand's row pairs with the count (1 stretches).
        Returns the count (a fixed level: its size)."""
        b, c = self.b, self.c
        tup = self.tuples[k]
        glen: dict = {}
        for j, ln in lens.items():
            level = self.kinds[j][k]
            if not isinstance(level, Pick):
                continue
            g = tup.group(level.slot)
            have, src = glen.get(g, (c(1), c(-1)))
            ok = b.or_(b.or_(b.icmp_signed("==", have, c(1)), b.icmp_signed("==", ln, c(1))),
                       b.icmp_signed("==", ln, have))
            self.check(ok, 2, k, path, j, ln, have, src)
            one = b.icmp_signed("==", ln, c(1))
            glen[g] = (b.select(one, have, ln), b.select(one, src, c(j)))
        if any(tup.group(s) not in glen for s in range(tup.slots)):  # (no operand's rows)
            raise NotSupportedError(
                "this selection or take-back of one field of combinations / cartesian "
                "tuples over missing rows is not supported yet: evaluate the field first "
                "(f = lazyk.cartesian([x, y])['0'].eval()), then select from it (f[f > 5])")
        slots = [glen[tup.group(s)][0] for s in range(tup.slots)]
        self.slot_lens[k] = slots
        if self.levels[k] is VAR:
            n, fits = tuple_count(self, tup, slots)
            self.check(fits, 8, k, path, -1, slots[0], c(tup.slots))
        else:
            n = self.sizes[k]
        for j, ln in lens.items():
            if not isinstance(self.kinds[j][k], Pick):
                ok = b.or_(b.icmp_signed("==", ln, c(1)), b.icmp_signed("==", ln, n))
                self.check(ok, 2, k, path, j, ln, n, c(-2))  # (-2: against the tuples)
        return n

    def _tuple_loop(self, k, bases, steps, body):
        """Walk the tuples of tuple level k (`_tuple_rows` read the rows): one loop per
        slot, `body(t, addresses)` per tuple, t its number in the row. A `Pick` operand's
        element is its row's item at the tuple's slot; other moving operands read element
        t (steps of 0 for rows of 1)."""
        b, c = self.b, self.c
        tup, lens = self.tuples[k], self.slot_lens[k]
        with b.goto_entry_block():
            counter = b.alloca(I64, name=f"tuple{k}")
        b.store(c(0), counter)
        idx: list = []

        def walk(s):
            first, stop = tuple_bounds(self, tup, s, idx, lens)

            def each(i):
                idx.append(b.add(i, first))
                if s + 1 < tup.slots:
                    walk(s + 1)
                else:
                    t = b.load(counter)
                    addrs = []
                    for j in range(self.nin):
                        level = self.kinds[j][k]
                        at = idx[level.slot] if isinstance(level, Pick) else t
                        if isinstance(level, Pick) and level.position:
                            self.posval[j] = idx[level.slot]
                        addrs.append(b.gep(bases[j], [b.mul(at, steps[j])])
                                     if level.moves else bases[j])
                    body(t, addrs)
                    b.store(b.add(t, c(1)), counter)
                idx.pop()
            for_loop(b, b.sub(stop, first), each, name=f"t{k}s{s}")
        walk(0)

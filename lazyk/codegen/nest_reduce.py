"""A reduction's accumulators in the loop-nest generator (`codegen.nest`): each value folded
(`_fold`), a row's result and flags stored (`_finish`; mode "all": the part's raw fold,
`_partial`), integer means, and an arg-reduction's best value and positions
(`_arg_combine`; a short row's first values as a tree, `_arg_rows`). `NestReduce` is a mixin
of the generator (`codegen.nest._NestGen`)."""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from lazyk.codegen.emit import I1, I8, I64, lltype, store_value
from lazyk.codegen.levels import VAR
from lazyk.codegen.llvm import NO_VECTOR, for_loop, hinted_loop

# Elements of a row an arg-reduction folds with no branch on the row's length (`_arg_rows`).
PEEL = 8


class NestReduce:
    """The accumulators of the loop-nest generator's reductions."""

    def _reset(self):
        b = self.b
        dt = self.acc_dtype
        self._acc_store(b, self.acc, self.em.const(dt, self.red.identity(dt)))
        b.store(self.c(0), self.count)
        b.store(ir.Constant(I1, 0), self.bad)
        if self.nan is not None:
            b.store(ir.Constant(I1, 0), self.nan)
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

    def _arg_combine(self, v, ok=None):
        """Arg-reductions: the value v (at position `argat`) takes the best's place where
        the row's `combine` comparison holds strictly (the first of equal values stays).
        The best value's chain is that compare and a select only (a max / min
        instruction): the first position folded (a row of only the identity, -inf for
        argmax, has no strictly better value) and the first NaN's (NaN wins, as NumPy's)
        are kept beside it and settled by `_arg_position`. `ok`: whether v is present (a
        missing one changes nothing: no branch)."""
        b, em, dt = self.b, self.em, self.out_dts[0]
        best, at, c = self._acc_load(b, self.acc), b.load(self.argat), self.c

        def present(x):
            return x if ok is None else b.and_(x, ok)
        if dt.kind == "f":
            better = b.fcmp_ordered(">" if self.red.combine == "greater" else "<", v, best)
            nan = b.load(self.accnan)
            b.store(b.select(present(b.and_(b.fcmp_unordered("uno", v, v),
                                            b.icmp_signed("<", nan, c(0)))), at, nan),
                    self.accnan)
        else:
            better = em.truth(em.apply(self.red.combine, [v, best], [dt, dt], np.dtype(bool)),
                              np.dtype(bool))
        better = present(better)
        self._acc_store(b, self.acc, b.select(better, v, best))
        b.store(b.select(better, at, b.load(self.accpos)), self.accpos)
        first = b.load(self.accfirst)
        b.store(b.select(present(b.icmp_signed("<", first, c(0))), at, first), self.accfirst)

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

        def fold(ok=None):
            """Fold the value (`ok`: whether it is present; a missing one folds as the
            identity and is not counted)."""
            v = self._values(addr)[0]
            if self.arg:
                self._arg_combine(v, ok)
            else:
                if ok is not None:
                    one = self.em.const(self.out_dts[0], self.red.identity(self.out_dts[0]))
                    v = tuple(b.select(ok, x, y) for x, y in zip(v, one)) \
                        if isinstance(v, tuple) else b.select(ok, v, one)
                self._fold_value(v)
            b.store(b.add(b.load(self.count), self.c(1) if ok is None else b.zext(ok, I64)),
                    self.count)
        if not masks:
            fold()
            return
        if self._numbers_only() and not (self.arg and self.bad is not None):
            # no branch on the present byte (a loop that vectorizes): a missing value's
            # bytes are numbers. (An arg-reduction keeps it along a row, where a missing
            # value skips its four selects: 1.4x faster over (2000, 2000) `?float32`; a
            # column fold, no flag kept (`self.bad` None), vectorizes without it.)
            ok = self._present(masks)
            fold(ok)
            if self.bad is not None:  # (None: the caller finds it from the count)
                b.store(b.or_(b.load(self.bad), b.not_(ok)), self.bad)
            return
        with b.if_else(self._present(masks)) as (then, otherwise):
            with then:
                fold()
            with otherwise:
                b.store(ir.Constant(I1, 1), self.bad)

    def _nan_apart(self) -> bool:
        """Whether a float min / max keeps its NaNs apart (`_fold_value`): on the CPU,
        positions aside."""
        return (self.red.combine in ("minimum", "maximum") and self.acc_dtype.kind == "f" and
                self.target.name == "cpu" and not self.arg)

    def _fold_value(self, v):
        """The accumulator folds v. A float min / max folds with `maxnum` / `minnum` and
        notes a NaN apart (`self.nan`; the result is NaN where one was seen): two folds that
        vectorize, where `llvm.maximum`'s NaN and signed-zero rules are a chain of dependent
        instructions per value."""
        b = self.b
        acc = self._acc_load(b, self.acc)
        if self.nan is None:
            self._acc_store(b, self.acc, self._combine(self.em, acc, v))
            return
        v = self._widened(b, v) if v.type != acc.type else v
        b.store(b.or_(b.load(self.nan), b.fcmp_unordered("uno", v, v)), self.nan)
        fn = self.target.math(b.module, "maxnum" if self.red.combine == "maximum" else
                              "minnum", acc.type)  # (nnan: a NaN's result is never read)
        self._acc_store(b, self.acc, b.call(fn, [acc, v], fastmath=("nnan", "nsz")))

    def _folded(self):
        """The accumulator's value: NaN where a min / max saw one (`_fold_value`)."""
        b = self.b
        v = self._acc_load(b, self.acc)
        if self.nan is None:
            return v
        return b.select(b.load(self.nan), ir.Constant(v.type, float("nan")), v)

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
            store_value(b, self._narrowed(b, self._folded()),
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
        the row was missing (`?var`). Histograms of row folds (`Bins.after`): kept for the
        block's counting instead (`_keep_fold`)."""
        b, c = self.b, self.c
        dt = self.out_dts[0]
        cnt = b.load(self.count)
        v = self._folded()
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
        if self.row_bins:  # (no missing row: the plan takes none)
            self._keep_fold(self._narrowed(b, v), valid, at)
            return
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

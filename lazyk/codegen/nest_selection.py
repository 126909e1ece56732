"""Selection and gather in the loop-nest generator (`codegen.nest`; `levels.Keep`,
`levels.Gathered`): level values computed with only the instructions they need
(`_level_values`), kept elements counted and placed in their row (`_count_kept`,
`_next_kept`), operands read at the positions a spec output gives (`_gather`).
`NestSelection` is a mixin of the generator (`codegen.nest._NestGen`)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from llvmlite import ir

from lazyk.codegen.emit import I1, I64, emit_body
from lazyk.codegen.levels import FIXED, Gathered
from lazyk.codegen.llvm import for_loop


class NestSelection:
    """Kept elements and gathers of the loop-nest generator."""

    # ------------------------------------------------------------ kept elements, positions
    def _sides_agree(self, k, lens, gones, path, sides, code: int = 6) -> None:
        """x[mask] at level k (at or above the selected one; `sides`: the operands of the
        array and of the mask), or x[positions] above the gathered level (code 7: of the
        array taken and of the positions): the array's length there and the other side's
        are equal, each side's the length of its rows (a row of 1 stretching within a side,
        as elementwise work stretches it) or of the fixed level (1 where it stays: a fixed
        1, or no dim). A missing row pairs with any: a side whose rows are all missing here
        is not compared (as Awkward's selection and gather, no row of 1 stretches across
        the sides)."""
        b, c = self.b, self.c
        got = []
        for side in sides:
            # an operand taken at positions has the rows of its positions
            side = set(side).union(*(inputs_of(self.full, self.kinds[j][k].out) for j in side
                                     if isinstance(self.kinds[j][k], Gathered)))
            moves = [j for j in side if self.kinds[j][k].moves and
                     not isinstance(self.kinds[j][k], Gathered)]
            fixed = [j for j in moves if j not in lens]
            n = self.sizes[k] if fixed and self.levels[k] is FIXED else c(1)
            seen = ir.Constant(I1, 1) if fixed or not moves else ir.Constant(I1, 0)
            who = c(min(fixed)) if fixed else c(-1)  # (-1: a fixed dim, or 1 that stays)
            for j in sorted(set(moves) & set(lens)):
                here = b.not_(gones[j]) if j in gones else ir.Constant(I1, 1)
                longer = b.and_(here, b.icmp_signed("!=", lens[j], c(1)))
                n = b.select(longer, lens[j], n)
                first = b.and_(here, b.icmp_signed("<", who, c(0)))  # (a row of 1 too)
                who = b.select(b.or_(longer, first), c(j), who)
                seen = b.or_(seen, here)
            got.append((n, seen, who))
        (na, sa, wa), (nm, sm, wm) = got
        ok = b.or_(b.icmp_signed("==", na, nm), b.not_(b.and_(sa, sm)))
        mask = b.icmp_signed(">=", wm, c(0))  # (else the array's operand is named)
        self.check(ok, code, k, path, b.select(mask, wm, wa), b.select(mask, nm, na),
                   b.select(mask, na, nm), b.select(mask, wa, wm))

    def _level_values(self, outs, addr, away=None):
        """The spec outputs `outs` (a keep predicate, positions) computed at one element of
        their level (`addr`: each operand's address there; only the operands they read are
        loaded): ({out: value}, {out: whether it is present, None when never missing})."""
        b = self.b
        sub = self._subs.get(outs)
        if sub is None:
            sub = self._subs[outs] = _sub_spec(self.full, outs)
        got = emit_body(b, sub, self._loads(addr, sub), self.target, self._pv)
        vals, pres = {}, {}
        for out, v in zip(outs, got):
            masks, gone = [], []
            for j in sorted(inputs_of(self.full, out)):
                if self.masked[j]:
                    m = b.gep(addr[j], [self.moff[j]])
                    if away and j in away:
                        m = b.select(away[j], self.dummy, m)
                    masks.append(m)
                elif away and j in away:  # (taken at a missing position: missing)
                    gone.append(away[j])
            ok = self._present(masks) if masks else None
            for g in gone:
                ok = b.and_(ok if ok is not None else ir.Constant(I1, 1), b.not_(g))
            vals[out], pres[out] = v, ok
        return vals, pres

    def _keep_value(self, addr, away=None, missing=False):
        """Whether the element at `addr` is kept (`Keep`): its mask is true, or missing;
        `missing`: (that, whether the mask element is missing: None when never)."""
        out = self.keep.out
        vals, pres = self._level_values((out,), addr, away)
        v = self.em.truth(vals[out], np.dtype(bool))
        gone = None if pres[out] is None else self.b.not_(pres[out])
        kept = v if gone is None else self.b.or_(v, gone)
        return (kept, gone) if missing else kept

    def _next_kept(self, k, path, want):
        """The next kept element's position in its result row (fill pass: checked below the
        counted length first, so nothing is written past the row)."""
        b = self.b
        slot = b.load(self.kept)
        if want is not None:
            nxt = b.add(slot, self.c(1))
            self.check(b.icmp_signed("<", slot, want), 3, k, path, -1, nxt, want)
        return slot

    def _count_kept(self, k, bases, steps, n, path):
        """Count pass of the level keeping elements: how many elements of this row it keeps."""
        b, c = self.b, self.c
        fixed0 = k == 0 and self.levels[0] is FIXED
        lo = self.lo if fixed0 else c(0)
        b.store(c(0), self.kept)

        def count(addr, i):
            at, away = self._gather(k, addr, path + [i])
            b.store(b.add(b.load(self.kept), b.zext(self._keep_value(at, away), I64)),
                    self.kept)
        if self.tuples[k] is not None:  # the tuples of the row, as the fill pass walks them
            self._tuple_loop(k, bases, steps, lambda t, addrs: count(addrs, t))
            return b.load(self.kept)

        def each(i):
            i = b.add(i, lo)
            count([b.gep(p, [b.mul(i, s)]) for p, s in zip(bases, steps)], i)
        for_loop(b, b.sub(self.hi, self.lo) if fixed0 else n, each, name=f"kc{k}")
        return b.load(self.kept)

    def _gather(self, k, addr, path):
        """`addr` with each operand taken at positions at level k moved to its element at
        the position its spec output gives here (negative: from its row's end), checked
        inside its row (else status 5: the position and the row's length); a missing
        position reads zero bytes. Returns (addresses, {operand: its position is missing})."""
        js = [j for j in range(self.nin) if isinstance(self.kinds[j][k], Gathered)]
        if not js:
            return addr, {}
        b, c = self.b, self.c
        outs = tuple(sorted({self.kinds[j][k].out for j in js}))
        vals, pres = self._level_values(outs, addr)
        addr, away = list(addr), {}
        for j in js:
            out = self.kinds[j][k].out
            q, ok = vals[out], pres[out]
            base, stride, n = self.grow[j]
            at = b.select(b.icmp_signed("<", q, c(0)), b.add(q, n), q)
            inside = b.and_(b.icmp_signed(">=", at, c(0)), b.icmp_signed("<", at, n))
            if ok is not None:  # a missing position: nothing to check, nothing read
                inside = b.or_(inside, b.not_(ok))
                at = b.select(ok, at, c(0))
            self.check(inside, 5, k, path, j, q, n)
            p = b.gep(base, [b.mul(at, stride)])
            if ok is not None:
                away[j] = b.not_(ok)
                p = b.select(ok, p, self.dummy)
            addr[j] = p
        return addr, away


def _sub_spec(spec, outs: tuple):
    """`spec` computing only outputs `outs` (the instructions they need, in order)."""
    need, todo = set(), [spec.outputs[o][0] for o in outs]
    while todo:
        i = todo.pop()
        if i not in need:
            need.add(i)
            todo.extend(spec.body[i].args)
    order = sorted(need)
    at = {i: n for n, i in enumerate(order)}
    body = tuple(replace(spec.body[i], args=tuple(at[a] for a in spec.body[i].args))
                 for i in order)
    return replace(spec, body=body, outputs=tuple((at[spec.outputs[o][0]], spec.outputs[o][1])
                                                  for o in outs), reduce=None)


def inputs_of(spec, out: int) -> set:
    """The inputs output `out` of `spec` reads."""
    return {ins.attr for ins in _sub_spec(spec, (out,)).body if ins.op == "load"}

"""Each element's values in the loop-nest generator (`codegen.nest`): the inputs loaded and
converted (`_loads`), the fused body, the value written with its present byte (`_write`), a
scan's running fold (`_scanned`), and which missing rows and values a `where` takes
(`_values_and_present`). `NestValues` is a mixin of the generator (`codegen.nest._NestGen`)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from llvmlite import ir

from lazyk.codegen.emit import I1, I8, emit_body, load_value, store_value
from lazyk.frontend import ops


class NestValues:
    """Element values of the loop-nest generator: loads, body, writes, scans, missing state."""

    def _present(self, masks):
        b = self.b
        ok = ir.Constant(I1, 1)
        for m in masks:
            ok = b.and_(ok, b.icmp_unsigned("!=", b.load(m, align=1), ir.Constant(I8, 0)))
        return ok

    def _loads(self, addr, part=None):
        """Each input loaded as stored (`spec.inputs`) and converted in registers to the
        dtype the body computes it in (its `load` instruction's): an int32 leaf in a
        float64 body, a byte-swapped leaf, no copy of either. `part`: a spec of some
        outputs only (`_sub_spec`): only the inputs it reads (None for the others)."""
        b, spec = self.b, part or self.spec
        want = {ins.attr: ins.dtype for ins in spec.body if ins.op == "load"}
        return [None if part is not None and j not in want else
                self.em.cast(self.posval[j], np.dtype(np.int64), want.get(j, d))
                if j in self.position else
                self.em.cast(load_value(b, a, d, al), np.dtype(d).newbyteorder("="),
                             want.get(j, d))
                for j, (a, d, al) in enumerate(zip(addr, spec.inputs, spec.aligned))]

    def _values(self, addr):
        return emit_body(self.b, self.spec, self._loads(addr), self.target, self._pv)

    def _write(self, addr, masks, at, gone=None, spare=None):
        """Store element `at`'s value (and present byte); `spare` (an i1): into scratch
        instead (`_inner`: a dropped element past the row's last kept one)."""
        b = self.b
        if self.written > 1:  # several results: each value into its own
            self._write_results(addr, at)
            return
        dt = self.out_dts[0]
        dst = b.gep(self.out, [b.mul(at, self.c(dt.itemsize))])
        outm, step = self.outm, self.present_step
        mat = at if step == 1 else b.mul(at, self.c(step))  # (this element's present byte)
        if spare is not None:
            dst = b.select(spare, self.spare, dst)
            outm = b.select(spare, b.gep(self.spare, [b.neg(mat)]), outm)
        if self.where_masks and gone is not None and self.branch_q and self.qrows:
            # a where() branch's missing row at a fixed level (`?n`): the result row is
            # missing only where an element takes that branch
            took = self._values_and_present(addr, gone)[2]
            for k, rows in self.qrows.items():
                slot = b.sub(b.load(self.qcnt[k]), self.c(1))  # this row's present byte
                with b.if_then(b.icmp_signed("==", took, self.c(k))):
                    b.store(ir.Constant(I8, 0), b.gep(rows, [slot]), align=1)
        if not masks:
            store_value(b, self._scanned(self._values(addr)[0]), dst, dt)
            return
        if self.where_masks:  # values of every element; the mask follows the body
            value, ok, _ = self._values_and_present(addr, gone)
            b.store(b.zext(ok, I8), b.gep(outm, [mat]), align=1)
            store_value(b, self._scanned(value, ok), dst, dt)
            return
        ok = self._present(masks)
        b.store(b.zext(ok, I8), b.gep(outm, [mat]), align=1)
        if self._numbers_only():  # (no branch: the loop vectorizes)
            value = self._values(addr)[0]
            zero = self.em.const(dt, 0)
            value = tuple(b.select(ok, x, z) for x, z in zip(value, zero)) \
                if isinstance(value, tuple) else b.select(ok, value, zero)
            store_value(b, self._scanned(value, ok), dst, dt)
            return
        with b.if_else(ok) as (then, otherwise):
            with then:  # a missing input's bytes are never computed with
                store_value(b, self._scanned(self._values(addr)[0]), dst, dt)
            with otherwise:
                store_value(b, self.em.const(dt, 0), dst, dt)

    def _numbers_only(self) -> bool:
        """Whether the body reads only numbers (no string's characters): a missing
        input's bytes may then be computed with (integer division never traps) and the
        result selected, with no branch on each element's present byte."""
        return all(np.dtype(d).kind in "biufc" for d in self.spec.inputs)

    def _write_results(self, addr, at):
        """Element `at`'s values, each into its own result (`Map.values`)."""
        b = self.b
        for v, out, dt in zip(self._values(addr), self.outs, self.out_dts):
            store_value(b, v, b.gep(out, [b.mul(at, self.c(dt.itemsize))]), dt)

    # ------------------------------------------------------------ running folds (Scan)
    def _scan_slot(self, part: int):
        t = self.em.lltype(self.out_dts[0])
        return self.b.bitcast(self.b.gep(self.sacc, [self.c(0), self.c(8 * part)]),
                              t.as_pointer())

    def _scan_store(self, v):
        for part, x in enumerate(v if isinstance(v, tuple) else (v,)):
            self.b.store(x, self._scan_slot(part))

    def _scanned(self, v, ok=None):
        """Scan: `v` folded into the row's running value, which is stored and returned
        (only where `ok`, an i1, when given: a missing value folds nothing); else `v`.
        Folded in the output dtype in row order, as NumPy's cumsum / cumprod."""
        if not self.scan:
            return v
        b, dt = self.b, self.out_dts[0]
        parts = 2 if isinstance(v, tuple) else 1
        acc = tuple(b.load(self._scan_slot(p)) for p in range(parts))
        acc = acc if parts == 2 else acc[0]
        new = ops.get(self.scan).llvm(self.em, [acc, v], (dt, dt, dt), None)
        if dt == np.float16:  # computed in float: each running value rounds as NumPy's
            new = b.fpext(b.fptrunc(new, ir.HalfType()), new.type)
        if parts == 2 and self.scan == "multiply":  # the row's first value as it is:
            # (1+0j) * (inf+0j) is inf+nanj (a sum's -0-0j identity adds exactly)
            first = b.load(self.sfirst)
            new = tuple(b.select(first, x, y) for x, y in zip(v, new))
            b.store(b.and_(first, b.not_(ok)) if ok is not None else ir.Constant(I1, 0),
                    self.sfirst)
        if ok is not None:
            new = tuple(b.select(ok, x, y) for x, y in zip(new, acc)) if parts == 2 else \
                b.select(ok, new, acc)
        self._scan_store(new)
        return new

    def _values_and_present(self, addr, gone=None):
        """The output value, whether it is present, and the level of the outermost
        missing row it takes (nlev: none): missing in, missing out, except that
        `where(c, x, y)` is missing where c is, else where the branch it takes is (a
        constant c takes every mask); rows alike. Missing inputs are computed with as they
        are (their bytes are numbers; integer division never traps)."""
        b, spec = self.b, self.spec
        conds = [ins.args[0] for ins in spec.body if ins.op == "where"]
        ext = replace(spec, outputs=tuple(spec.outputs) +
                      tuple((i, np.dtype(bool)) for i in conds))
        got = emit_body(b, ext, self._loads(addr), self.target, self._pv)
        cond_value = dict(zip(conds, got[len(spec.outputs):]))
        yes, none = ir.Constant(I1, 1), self.c(self.nlev)
        pres: list = []
        lev: list = []  # the outermost missing row taken
        for ins in spec.body:
            g = none
            if ins.op == "load":
                j = ins.attr
                mp = b.gep(addr[j], [self.moff[j]]) if self.masked[j] else None
                if gone is not None and gone[j] is not None:
                    g = gone[j]
                    if mp is not None:
                        mp = b.select(b.icmp_signed("<", g, none), self.dummy, mp)
                p = b.icmp_unsigned("!=", b.load(mp, align=1), ir.Constant(I8, 0)) \
                    if mp is not None else yes
            elif ins.op in ("const", "param"):
                p = yes
            elif ins.op == "where" and spec.body[ins.args[0]].op not in ("const", "param"):
                c, x, y = (pres[a] for a in ins.args)
                take = cond_value[ins.args[0]]
                p = b.and_(c, b.select(take, x, y))
                g = b.select(c, b.select(take, lev[ins.args[1]], lev[ins.args[2]]), none)
                g = _min(b, lev[ins.args[0]], g)  # a missing condition takes nothing
            else:
                p = yes
                for a in ins.args:
                    p = b.and_(p, pres[a])
                    g = _min(b, g, lev[a])
            pres.append(p)
            lev.append(g)
        return got[0], pres[spec.outputs[0][0]], lev[spec.outputs[0][0]]


def _min(b, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


def deciding_inputs(spec) -> set:
    """Inputs whose missing rows make the result's row missing: read other than only as a
    branch of `where` (a branch's missing row counts only where an element takes it)."""
    body, seen = spec.body, set()
    todo = [spec.outputs[0][0]]
    while todo:
        i = todo.pop()
        if i in seen:
            continue
        seen.add(i)
        ins = body[i]
        where = ins.op == "where" and body[ins.args[0]].op not in ("const", "param")
        todo.extend(ins.args[:1] if where else ins.args)
    return {body[i].attr for i in seen if body[i].op == "load"}

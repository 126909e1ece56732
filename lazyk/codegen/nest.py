"""Loop-nest kernels over ragged layouts: the loop nest follows the result type.

One level per result dim, outermost first. A fixed level is a counted loop; every operand
advances by its own byte stride there (kind 'f'), or not at all (kind 'n': the operand lacks
the dim or has a fixed 1 there, so it broadcasts). At a var operand's level (kind '4' or
'8', the index width) the operand's element is its row's start index (docs/layout.md): the
kernel reads start and stop, checks `0 <= start <= stop <= length` (else it reports the row
and returns: no address outside the content is ever formed), and pairs the rows: equal
lengths, a length-1 row stretching, or a fixed result level of size n that every row must
match (or be 1). A stepping view's rows (kind '4s' / '8s': stride != index_stride, from
`x[:, ::2]`, `x[:, ::-1]`) are checked on their first and last elements instead (both inside
the `length` content elements; the multiply-adds checked for overflow): the window is part
of the compiled structure, so unsliced rows pay nothing for it. At a `?var` level (kind
'4q' / '8q', '4sq' / '8sq') the row's mask byte sits at its
start index's address + the row mask_offset: a missing row's indices are never used, it
pairs with any row, and the result row is missing (the count pass writes length -1, the
result has no elements under it; "reduce" over a missing last row sets flag bit 2). At a
fixed result level (`?n`) the level still runs its n elements: the operand is "gone" (it
reads zero bytes, never its own) and the fill pass writes the row's present byte (word
6 + nlev + 2k: the bytes, +1: the first row). A where() branch's missing row is gone too:
the "mark<s>" pass (count<s>, then every element) gives a row length -2 - n where an
element takes it. Folding one level ("fold<a>", `_qfold_level`) or all ("all"), a missing
row is skipped under skipna, else the result (row) is missing; "fold<a>,<b>..." over
several levels takes `?var` rows only above level a.
Innermost: the fused elementwise body (`emit_body`), `?T` masks at the
value's address + mask_offset. A reduction folds a contiguous row (`T` or `?T`) by
windows of WINDOW lanes (`_window_fold`: no remainder loop), where both windows lie inside
every operand's content (`start <= length - WINDOW`, `stop >= WINDOW`); other rows take
the plain loop.

Modes: "map" writes one value (and a present byte for `?T` results) per result element, in
nest order; "reduce" folds the last level into one value per element of the level above
(an empty row gives the identity; skipna, mean and valid flags as the reference); "all" folds every level
into one partial result per part (`_partial`: the caller combines the parts);
"fold<a>[,<b>...]" folds levels a < b < ... (any set but the last level alone or all):
each result element folds its group, every element of the folded levels under it, with
its own index at each kept level below a (rows of length 1 stretch, any other must have
the result's length; the result row lengths there come from the count pass, which pairs
the rows of every member of the group: an empty row of a folded level adds no member,
so it is never paired; a group with no member gives a row of length 0). Passes: "count" walks the
levels down to the deepest var level of the result and writes each result row's length
(in nest order, one array per var level; "count<s>" stops at level s); "fill" checks every result row's length against
those arrays (so no write leaves the result) and writes the values.

Entry `{name}_run(int64 *kd)`; kernel data words (`nest_layout`):

    0 status (address of int64[8 + nlev])   1 lo   2 hi  (level-0 range, a fixed level)
    3 out values   4 out valid bytes   5 first output position
    6 + k                  size of fixed result level k
    6 + nlev + 2k, +1      var result level k: its lengths array (count pass) or its
                           offsets (fill pass), first row number
    6 + 3 nlev + j (2 + 6 nlev): operand j: address, mask_offset, then per level 6 words:
                           fixed: stride; var: stop_delta, content, index_stride, stride,
                           length, row mask_offset (`?var`)
    then the parameter slots (16 bytes each).

Status: word 0 is 0 when every row was fine, else 1 (bad indices: words 3-5 = start, stop,
length), 2 (rows do not pair: word 3 = the operand's row length, 4 = the result's, 5 =
the operand that set it or -1 for a fixed level), 4 (rows folded together over a middle
level differ: words 3, 4 the two lengths) or 3 (a
row length differs from the count pass); word 1 the level, word 2 the operand, words
8 + k the index at each level down to the failing row. Accumulators live on the stack: no
allocation, no shared state: thread-safe.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from llvmlite import ir

from lazyk import ops
from lazyk.codegen.emit import (
    I1,
    I8,
    I64,
    P8,
    CPUTarget,
    Emitter,
    emit_body,
    lltype,
    load_value,
    store_value,
)
from lazyk.codegen.llvm import KernelGen, LayoutClass, for_loop

HEAD = 6
OP_WORDS = 6


def nest_layout(nlev: int, nin: int) -> dict:
    """Word indices of the kernel data (see the module doc)."""
    ops_at = HEAD + 3 * nlev
    per_op = 2 + OP_WORDS * nlev
    return {"sizes": HEAD, "lens": HEAD + nlev, "ops": ops_at, "per_op": per_op,
            "params": 8 * (ops_at + nin * per_op)}


class _NestGen(KernelGen):
    def __init__(self, spec: Any, levels: tuple, kinds: tuple, masked: tuple, mode: str,
                 npass: str, skipna: bool, mean: bool, name: str, target: Any,
                 where_masks: bool = False):
        super().__init__(spec, LayoutClass(1, ""), name, target)
        self.levels, self.kinds, self.masked = tuple(levels), tuple(kinds), tuple(masked)
        self.mode, self.npass, self.skipna, self.mean = mode, npass, skipna, mean
        self.where_masks = where_masks
        self.nlev = len(levels)
        # where(): operands read only as a branch whose rows may be missing ("gone": the
        # outermost level of the missing row, nlev while present); see `_taken`
        deciding = _deciding(spec) if where_masks else set(range(self.nin))
        self.branch_q = [j for j in range(self.nin) if j not in deciding and
                         any(kd.endswith("q") for kd in kinds[j])]
        # a `?var` row against a fixed result level (`?n` rows): the level still runs its n
        # elements, the operand reads zeros under the missing row ("gone" too), and the
        # fill pass writes each row's present byte (a reduced last level: missing result)
        self.fixed_q = [k for k in range(self.nlev) if levels[k] == "f" and
                        any(ks[k].endswith("q") for ks in kinds) and
                        not (mode == "reduce" and k == self.nlev - 1)]
        self.track = [j for j in range(self.nin) if j in self.branch_q or
                      any(kinds[j][k].endswith("q") for k in self.fixed_q)]
        self.lay = nest_layout(self.nlev, self.nin)
        self.poff = self.lay["params"]
        # result levels: every level for "map", all but the folded last one for "reduce"
        # "fold<a>[,<b>...]": reduce over levels a < b < ... (not only the last one); the
        # kept levels below a fold element by element over each result element's group
        self.axes = tuple(int(a) for a in mode[4:].split(",")) if mode.startswith("fold") \
            else ()
        self.axis = self.axes[0] if self.axes else -1
        self.res = [] if mode == "all" else list(range(self.nlev - 1)) if mode == "reduce" \
            else [k for k in range(self.nlev) if k not in self.axes]
        self.nres = len(self.res)
        # "count<s>" counts the rows of result var level s (and of those above it)
        self.counting = npass.startswith(("count", "mark"))
        self.deepest = int(npass[4 + npass.startswith("count"):]) if self.counting else -1
        # "mark<s>": count<s>, then on to every element: a row whose element takes a
        # branch's missing row gets length -2 - n (missing; n keeps its raw structure)
        self.marking = npass.startswith("mark")
        if self.counting and (self.deepest not in self.res or levels[self.deepest] != "v"):
            raise ops.NotSupportedError(f"no var result level to count in {npass!r}")

    def build(self) -> ir.Module:
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [P8]), f"{self.name}_run")
        kd8 = fn.args[0]
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.b, self.fn = b, fn
        self._load_params(b, kd8)
        kd = b.bitcast(kd8, I64.as_pointer())

        def word(i):
            return b.load(b.gep(kd, [ir.Constant(I64, i)]), align=8)
        self.status = b.inttoptr(word(0), I64.as_pointer())
        self.lo, self.hi = word(1), word(2)
        self.out = b.inttoptr(word(3), P8)
        self.outm = b.inttoptr(word(4), P8)
        lay = self.lay
        self.sizes = [word(lay["sizes"] + k) if self.levels[k] == "f" else None
                      for k in range(self.nlev)]
        self.lens, self.cnt = {}, {}
        with b.goto_entry_block():
            self.pos = b.alloca(I64, name="pos")
            for k in self.res:
                if self.levels[k] == "v":
                    self.cnt[k] = b.alloca(I64, name=f"cnt{k}")
        b.store(word(5), self.pos)
        for k in self.cnt:
            self.lens[k] = b.inttoptr(word(lay["lens"] + 2 * k), I64.as_pointer())
            b.store(word(lay["lens"] + 2 * k + 1), self.cnt[k])
        self.qrows, self.qcnt = {}, {}  # fixed levels with `?var` rows: present bytes
        if not self.counting:
            for k in self.fixed_q:
                with b.goto_entry_block():
                    self.qcnt[k] = b.alloca(I64, name=f"qcnt{k}")
                self.qrows[k] = b.inttoptr(word(lay["lens"] + 2 * k), P8)
                b.store(word(lay["lens"] + 2 * k + 1), self.qcnt[k])
        self.ptr, self.moff, self.f = [], [], []
        for j in range(self.nin):
            at = lay["ops"] + j * lay["per_op"]
            self.ptr.append(b.inttoptr(word(at), P8))
            self.moff.append(word(at + 1) if self.masked[j] else None)
            per = []
            for k in range(self.nlev):
                kind = self.kinds[j][k]
                base = at + 2 + OP_WORDS * k
                per.append(None if kind == "n" else [word(base)] if kind == "f" else
                           [word(base + i) for i in range(OP_WORDS)])
            self.f.append(per)
        self.fail = fn.append_basic_block("fail")
        self.em = Emitter(b, self.target)
        # one folded level over `?var` rows at or below it: `_qfold_level`; `?var` rows
        # below it (fold_q) are found first, element by element
        self.qfold = len(self.axes) == 1 and any(kd.endswith("q") for ks in self.kinds
                                                 for kd in ks[self.axis:])
        self.fold_q = self.qfold and any(kd.endswith("q") for ks in self.kinds
                                         for kd in ks[self.axis + 1:])
        if self.fold_q:
            with b.goto_entry_block():
                self.fmiss = b.alloca(I1, name="fmiss")
                self.fseen = b.alloca(I1, name="fseen")
        if self.track or self.fold_q:  # what a gone operand reads instead: zero bytes
            with b.goto_entry_block():
                self.dummy = b.alloca(ir.ArrayType(I64, 2), name="dummy")
                self.dummy.align = 16
            b.store(ir.Constant(ir.ArrayType(I64, 2), [0, 0]), self.dummy)
            self.dummy = b.bitcast(self.dummy, P8)
        if self.mode != "map":
            self.acc = self._acc_alloca(b)
            with b.goto_entry_block():
                self.count = b.alloca(I64, name="count")
                self.bad = b.alloca(I1, name="bad")
                self.flen = b.alloca(I64, name="flen")
        if self.mode == "all":
            self._reset()
        self._level(0, list(self.ptr), [], [self.c(self.nlev) if j in self.track else None
                                            for j in range(self.nin)])
        if self.mode == "all":
            self._partial(b.load(self.pos))
        b.ret_void()
        b.position_at_end(self.fail)
        b.ret_void()
        self._emit_destroy()
        return self.module

    # ------------------------------------------------------------ helpers
    def c(self, v):
        return ir.Constant(I64, v)

    def _check(self, ok, code, level, path, j=-1, a=None, bb=None, cc=None):
        """Continue when `ok`; else write the status words and return (a rare branch)."""
        b = self.b
        good = self.fn.append_basic_block("ok")
        bad = self.fn.append_basic_block("bad")
        br = b.cbranch(ok, good, bad)
        br.set_weights([1 << 20, 1])
        b.position_at_end(bad)
        st = self.status
        for i, v in enumerate([self.c(code), self.c(level), self.c(j), a, bb, cc]):
            if v is not None:
                b.store(v, b.gep(st, [self.c(i)]))
        for k, v in enumerate(path):
            b.store(v, b.gep(st, [self.c(8 + k)]))
        b.branch(self.fail)
        b.position_at_end(good)

    def _index(self, p, width):
        b = self.b
        t = ir.IntType(8 * width)
        v = b.load(b.bitcast(p, t.as_pointer()), align=1)
        return v if width == 8 else b.sext(v, I64)

    def _row_ok(self, kind, f, start, stop):
        """Whether a row's elements lie inside its content: `0 <= start <= stop <= length`,
        or for a stepping view (kind '.s') its first and last elements' byte offsets inside
        `(length - 1) * index_stride` (no overflow: a bad row never passes)."""
        b, c = self.b, self.c
        _, _, istride, stride, length = f[:5]
        if "s" not in kind:
            return b.and_(b.icmp_signed(">=", start, c(0)),
                          b.and_(b.icmp_signed("<=", start, stop),
                                 b.icmp_signed("<=", stop, length)))
        n = b.sub(stop, start)
        # 0 <= start < length: the first element's offset start * istride cannot overflow
        # (check_extent found all `length` elements in their block)
        inside = b.and_(b.icmp_signed("<", start, length), b.icmp_signed("<=", n, length))
        first = b.mul(b.select(inside, start, c(0)), istride)
        span = b.mul(b.sub(length, c(1)), istride)
        lo = b.select(b.icmp_signed("<", span, c(0)), span, c(0))
        hi = b.select(b.icmp_signed("<", span, c(0)), c(0), span)
        prod = b.smul_with_overflow(b.sub(n, c(1)), stride)
        last = b.sadd_with_overflow(first, b.extract_value(prod, 0))
        at = b.extract_value(last, 0)
        fine = b.and_(inside, b.not_(b.or_(b.extract_value(prod, 1),
                                           b.extract_value(last, 1))))
        fine = b.and_(fine, b.and_(b.icmp_signed(">=", at, lo), b.icmp_signed("<=", at, hi)))
        empty = b.icmp_signed("==", n, c(0))
        return b.and_(b.and_(b.icmp_signed(">=", start, c(0)), b.icmp_signed(">=", n, c(0))),
                      b.or_(empty, fine))

    def _rows(self, k, ptrs, path, gone=None):
        """Per operand at level k: (element-0 address, step); the result length n.
        `gone`: per where() branch operand the level of its missing row so far (updated)."""
        b, c = self.b, self.c
        bases, steps, lens, miss = [], [], {}, None
        fixed = k in self.fixed_q
        self.row_gone = ir.Constant(I1, 0)  # a `?var` row at a fixed level k is missing
        self.row_ends = {}  # each var operand's start and stop (`_window_fold`)
        for j in range(self.nin):
            kind, f = self.kinds[j][k], self.f[j][k]
            if kind == "n":
                bases.append(ptrs[j])
                steps.append(c(0))
            elif kind == "f":
                bases.append(ptrs[j])
                steps.append(f[0])
            else:
                delta, content, istride, stride, length = f[:5]
                w = int(kind[0])
                was = None if gone is None or gone[j] is None else \
                    b.icmp_signed("<", gone[j], c(self.nlev))

                def at(q, was=was):  # a gone operand's row is not there: read zeros
                    return q if was is None else b.select(was, self.dummy, q)
                start = self._index(at(ptrs[j]), w)
                stop = self._index(at(b.gep(ptrs[j], [delta])), w)
                self.row_ends[j] = (start, stop)
                ok = self._row_ok(kind, f, start, stop)
                rgone = None
                if kind.endswith("q"):  # a missing row: indices unused, pairs with any row
                    rgone = b.icmp_unsigned("==", b.load(at(b.gep(ptrs[j], [f[5]])),
                                                         align=1), ir.Constant(I8, 0))
                    ok = b.or_(ok, rgone)
                    if was is not None and (j in self.branch_q or fixed):
                        # a branch's missing row: only where it is taken; against a fixed
                        # level: the row is missing, its elements still run
                        gone[j] = b.select(b.and_(rgone, b.not_(was)), c(k), gone[j])
                        if fixed:
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
                self._check(ok, 1, k, path, j, start, stop, length)
                n = b.sub(stop, start)
                if rgone is not None:
                    n = b.select(rgone, c(1), n)
                bases.append(b.gep(b.inttoptr(content, P8), [b.mul(start, istride)]))
                steps.append(b.select(b.icmp_signed("==", n, c(1)), c(0), stride))
                lens[j] = n
        if self.levels[k] == "f":
            n = self.sizes[k]
            for j, ln in lens.items():
                ok = b.or_(b.icmp_signed("==", ln, n), b.icmp_signed("==", ln, c(1)))
                self._check(ok, 2, k, path, j, ln, n, c(-1))
        else:
            n, src = c(1), c(-1)  # src: the operand whose row set n
            for j, ln in lens.items():
                ok = b.or_(b.or_(b.icmp_signed("==", n, c(1)), b.icmp_signed("==", ln, c(1))),
                           b.icmp_signed("==", ln, n))
                self._check(ok, 2, k, path, j, ln, n, src)
                one = b.icmp_signed("==", ln, c(1))
                n, src = b.select(one, n, ln), b.select(one, src, c(j))
        if miss is not None:  # nothing under a missing result row
            n = b.select(miss, c(0), n)
        return bases, steps, n, miss

    def _level(self, k, ptrs, path, gone=None):
        b, c = self.b, self.c
        gone = None if gone is None else list(gone)
        bases, steps, n, miss = self._rows(k, ptrs, path, gone)
        if k in self.qrows:  # this row's present byte (fill pass)
            slot = b.load(self.qcnt[k])
            b.store(b.zext(b.not_(self.row_gone), I8), b.gep(self.qrows[k], [slot]), align=1)
            b.store(b.add(slot, c(1)), self.qcnt[k])
        if k == self.axis and self.qfold:
            self._qfold_level(k + 1, (bases, steps, n), path + [c(-1)], [], [], miss)
            return
        if k == self.axis:
            self._fold_level(k + 1, (bases, steps, n), path, {}, {})
            return
        if self.mode == "all" and miss is not None and not self.skipna:
            b.store(b.or_(b.load(self.bad), miss), self.bad)  # a missing row folded in
        if k in self.cnt:
            slot = b.load(self.cnt[k])
            at = b.gep(self.lens[k], [slot])
            if self.counting:
                b.store(n if miss is None else b.select(miss, c(-1), n), at)
            else:
                want = self._counted(slot, k)
                if self.branch_q:  # a row the mark pass found missing: nothing under it
                    n = b.select(b.icmp_signed("==", want, c(0)), c(0), n)
                self._check(b.icmp_signed("==", n, want), 3, k, path, -1, n, want)
            b.store(b.add(slot, c(1)), self.cnt[k])
            if self.counting and k == self.deepest and not self.marking:
                return
        if k == self.nlev - 1:
            self._inner(k, bases, steps, n, path, miss, gone)
            return
        lo = self.lo if k == 0 and self.levels[0] == "f" else c(0)
        count = b.sub(self.hi, self.lo) if k == 0 and self.levels[0] == "f" else n

        def child(i):
            i = b.add(i, lo)
            self._level(k + 1, [b.gep(p, [b.mul(i, s)]) for p, s in zip(bases, steps)],
                        path + [i], gone)
        for_loop(b, count, child, name=f"l{k}")

    def _counted(self, slot, k):
        """Fill pass: result row `slot` of var level k has offsets[slot + 1] - offsets[slot]
        elements (the count pass's lengths, summed up: no separate lengths array)."""
        b = self.b
        lo = b.load(b.gep(self.lens[k], [slot]))
        return b.sub(b.load(b.gep(self.lens[k], [b.add(slot, self.c(1))])), lo)

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
            kind = self.kinds[j][m]
            if kind == "f":
                p = b.gep(p, [b.mul(q, self.f[j][m][0])])
            elif kind != "n":
                ln, base, stride = self._row(j, m, p, at)
                ok = b.or_(b.icmp_signed("==", ln, n), b.icmp_signed("==", ln, c(1)))
                self._check(ok, 4, m, at, j, ln, n, c(-1))
                p = b.gep(base, [b.mul(b.select(b.icmp_signed("==", ln, c(1)), c(0), q),
                                       stride)])
            out.append(p)
        self._walk(m + 1, out, at + [q], upto, qs, ns, action)

    def _group(self, top, path, upto, qs, ns, action):
        """`_walk` over every element i of the first folded level's rows (`top`)."""
        b = self.b
        bases, steps, na = top

        def each(i):
            self._walk(self.axis + 1, [b.gep(p, [b.mul(i, s)]) for p, s in zip(bases, steps)],
                       path + [i], upto, qs, ns, action)
        for_loop(b, na, each, name="fg")

    def _row(self, j, m, p, path):
        """Operand j's var row at level m whose start index is at p: (length, element-0
        address, stride), its indices checked."""
        b = self.b
        delta, content, istride, stride, length = self.f[j][m][:5]
        w = int(self.kinds[j][m][0])
        start = self._index(p, w)
        stop = self._index(b.gep(p, [delta]), w)
        ok = self._row_ok(self.kinds[j][m], self.f[j][m], start, stop)
        self._check(ok, 1, m, path, j, start, stop, length)
        return b.sub(stop, start), b.gep(b.inttoptr(content, P8), [b.mul(start, istride)]), \
            stride

    def _fold_len(self, m, top, path, qs, ns):
        """The result length at level m: the rows there, one per member of the group,
        pair up (one length, rows of length 1 stretching; an empty group: 0)."""
        b, c = self.b, self.c
        b.store(c(-1), self.flen)  # -1: no member yet

        def action(addrs, at):
            n = b.load(self.flen)
            for j in range(self.nin):
                if self.kinds[j][m] in ("n", "f"):
                    continue
                ln = self._row(j, m, addrs[j], at)[0]
                ok = b.or_(b.or_(b.icmp_signed("<=", n, c(1)), b.icmp_signed("==", ln, c(1))),
                           b.icmp_signed("==", ln, n))
                self._check(ok, 4, m, at, j, ln, n, c(-1))
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
        if self.levels[m] == "f":
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
            kind, f = self.kinds[j][m], self.f[j][m]
            if kind == "f":
                p = b.gep(p, [b.mul(q, f[0])])
            elif kind != "n":
                ln, base, stride, now = self._qrow(j, m, p, path, gone)
                if kind.endswith("q"):
                    here = now if gone is None else b.and_(now, b.not_(gone))
                    real = here if real is None else b.or_(real, here)
                ok = b.or_(b.icmp_signed("==", ln, n), b.icmp_signed("==", ln, c(1)))
                if now is not None:
                    ok = b.or_(ok, now)
                if check:
                    self._check(ok, 4, m, path, j, ln, n, c(-1))
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
            for j in self._fold_ops(m, "q"):
                p, g, blind = self._descend(j, top_j[j], self.axis + 1, qs, ns, at, None,
                                            False)
                if g is not None:
                    above = b.or_(above, g)
                if self.kinds[j][m].endswith("q"):
                    h = self._qrow(j, m, p, at, blind)[3]
                    here = b.or_(here, h if blind is None else b.and_(h, b.not_(blind)))
            skip = b.or_(above, here) if q else None
            for j in self._fold_ops(m):
                p = self._descend(j, top_j[j], self.axis + 1, qs, ns, at, skip)[0]
                if self.kinds[j][m] not in ("n", "f"):
                    rows.append((j, self._qrow(j, m, p, at, skip)[0]))
            for j, ln in rows:
                ok = b.or_(b.or_(b.icmp_signed("==", n, c(1)), b.icmp_signed("==", ln, c(1))),
                           b.icmp_signed("==", ln, n))
                self._check(b.or_(ok, skip) if q else ok, 4, m, at, j, ln, n, c(-1))
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

    def _fold_ops(self, m, only=""):
        """Operands with a var (`only="q"`: `?var`) row between the folded level and m."""
        return [j for j in range(self.nin) if any(
            kd not in ("n", "f") and kd.endswith(only) for kd in self.kinds[j][self.axis + 1:
                                                                             m + 1])]

    def _qfold_level(self, m, top, path, qs, ns, miss=None):
        """Result level m below the folded level (qs, ns: indices and lengths so far);
        `miss`: the folded row is missing (`?var`): so is the result row."""
        b, c = self.b, self.c
        if m == self.nlev:
            self._qfold_leaf(top, path, qs, ns)
            return
        if self.levels[m] == "f":
            n = self.sizes[m]
        else:
            slot = b.load(self.cnt[m])
            at = b.gep(self.lens[m], [slot])
            if self.counting:
                n, gone = self._qfold_len(m, top, qs, ns, path)
                if gone is not None and "v" in self.levels[m + 1:]:
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
        if "v" not in self.levels[m:]:
            return
        n = self.sizes[m] if self.levels[m] == "f" else \
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
            top_j = [b.gep(bases[j], [b.mul(i, steps[j])]) for j in range(self.nin)]
            skip = None  # element i under a missing row: skipped, its rows not paired
            for j in self._fold_ops(self.nlev - 1, "q"):
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
        address, stride, gone), its indices checked. `gone`: a row above is missing (an
        i1, or None); a `?var` row may be missing itself: then its indices are not read
        (length 1, it pairs with any row) and `gone` becomes true."""
        b, c = self.b, self.c
        delta, content, istride, stride, length = self.f[j][m][:5]
        kind = self.kinds[j][m]
        w = int(kind[0])

        def at(q):  # a missing row's bytes are not read: zeros instead
            return q if gone is None else b.select(gone, self.dummy, q)
        if kind.endswith("q"):
            here = b.icmp_unsigned("==", b.load(at(b.gep(p, [self.f[j][m][5]])), align=1),
                                   ir.Constant(I8, 0))
            gone = here if gone is None else b.or_(gone, here)
        start = self._index(at(p), w)
        stop = self._index(at(b.gep(p, [delta])), w)
        ok = self._row_ok(kind, self.f[j][m], start, stop)
        self._check(ok, 1, m, path, j, start, stop, length)
        ln = b.sub(stop, start) if gone is None else b.select(gone, c(1), b.sub(stop, start))
        return ln, b.gep(b.inttoptr(content, P8), [b.mul(start, istride)]), stride, gone

    # ------------------------------------------------------------ innermost level
    def _inner(self, k, bases, steps, n, path, miss=None, gone=None):
        b, c = self.b, self.c
        isz = [np.dtype(d).itemsize for d in self.spec.inputs]
        lo = self.lo if k == 0 and self.levels[0] == "f" else c(0)
        if k == 0 and self.levels[0] == "f":
            n = b.sub(self.hi, self.lo)
        if self.mode == "reduce":
            self._reset()
        pos0 = b.load(self.pos)

        def element(i, addr):
            masks = [b.gep(addr[j], [self.moff[j]]) for j in range(self.nin) if self.masked[j]]
            if gone is not None and self.track:  # a gone operand reads zeros
                away = [None if g is None else b.icmp_signed("<", g, c(self.nlev))
                        for g in gone]
                masks = [m if away[j] is None else b.select(away[j], self.dummy, m)
                         for j, m in zip([j for j in range(self.nin) if self.masked[j]],
                                         masks)]
                addr = [a if away[j] is None else b.select(away[j], self.dummy, a)
                        for j, a in enumerate(addr)]
            if self.marking:
                self._mark(self._values_and_present(addr, gone)[2])
            elif self.mode != "map":
                self._fold(addr, masks)
            else:
                self._write(addr, masks, b.add(pos0, b.sub(i, lo)), gone)

        def general(i):
            i = b.add(i, lo)
            element(i, [b.gep(p, [b.mul(i, s)]) for p, s in zip(bases, steps)])
        if (any(self.masked) and not self._windowed(k)) or not self.nin or self.track:
            for_loop(b, n, general, name="e")
        elif self._windowed(k):
            # contiguous rows with a window's room in their content both sides (all but
            # the first and last few rows): the window fold, no branch per element
            fast = b.icmp_signed("==", n, c(1))
            if any(self.kinds[j][k] != "n" for j in range(self.nin)):
                fast = b.or_(fast, self._contiguous(k, steps, isz))
            for j in range(self.nin):
                if self.kinds[j][k] != "n":
                    start, stop = self.row_ends[j]
                    room = b.sub(self.f[j][k][4], c(WINDOW))  # length - WINDOW
                    fast = b.and_(fast, b.and_(b.icmp_signed(">=", stop, c(WINDOW)),
                                               b.icmp_signed("<=", start, room)))
            with b.if_else(fast) as (then, otherwise):
                with then:
                    self._window_fold(bases, n, isz, k)
                with otherwise:
                    _hinted_loop(b, n, general, "e", _NO_VECTOR)
        else:
            # Every moving operand contiguous in this row: constant strides, so LLVM
            # vectorizes; other rows take the general strided loop.
            fast = self._contiguous(k, steps, isz)

            def contiguous(i):
                i = b.add(i, lo)
                element(i, [p if self.kinds[j][k] == "n" else
                            b.gep(p, [b.mul(i, c(sz), flags=("nuw", "nsw"))])
                            for j, (p, sz) in enumerate(zip(bases, isz))])
            with b.if_else(fast) as (then, otherwise):
                with then:
                    for_loop(b, n, contiguous, name="ec")
                with otherwise:
                    _hinted_loop(b, n, general, "e", _NO_VECTOR)
        if self.mode == "reduce":
            self._finish(pos0, n, miss)
            b.store(b.add(pos0, c(1)), self.pos)
        elif self.mode == "map":
            b.store(b.add(pos0, n), self.pos)

    def _contiguous(self, k, steps, isz):
        """Whether every moving operand's row at level k is contiguous (an i1)."""
        b, fast = self.b, ir.Constant(I1, 1)
        for j, (st, sz) in enumerate(zip(steps, isz)):
            if self.kinds[j][k] != "n":
                fast = b.and_(fast, b.icmp_signed("==", st, self.c(sz)))
        return fast

    def _windowed(self, k):
        """Whether the innermost level k folds its rows by windows (`_window_fold`): a
        reduction into a real or integer accumulator over var rows (plain indices: their
        content's bounds are known) or operands that stay."""
        return (self.mode != "map" and not self.marking and k == self.nlev - 1 and
                self.levels[k] == "v" and self.out_dts[0].kind in "biuf" and
                all(self.kinds[j][k] in ("n", "4", "8") for j in range(self.nin)))

    def _window_fold(self, bases, n, isz, k):
        """Fold a contiguous row of n elements with no branch on n's remainder: WINDOW lane
        accumulators take the row's first WINDOW elements (lanes past n fold the identity),
        then its blocks of WINDOW after the first, then its last WINDOW elements (those
        not folded yet). The windows may reach past the row: the caller checked that they
        lie inside every operand's content. Missing values (`?T`) fold the identity and
        count as `_fold` counts them. Float sums are reassociated (as NumPy's pairwise sums
        are)."""
        b, c, em = self.b, self.c, self.em
        dt = self.out_dts[0]
        ident = em.const(dt, self.red.identity(dt))
        masked = [j for j in range(self.nin) if self.masked[j]]
        with b.goto_entry_block():
            lanes = [b.alloca(lltype(dt), name=f"lane{q}") for q in range(WINDOW)]
        for slot in lanes:
            b.store(ident, slot)

        def fold(slot, e, inside=None):
            """Element e (an i64, maybe outside the row) into a lane, where `inside`."""
            addr = [p if self.kinds[j][k] == "n" else b.gep(p, [b.mul(e, c(sz))])
                    for j, (p, sz) in enumerate(zip(bases, isz))]
            v = self._values(addr)[0]
            take = inside
            if masked:
                ok = self._present([b.gep(addr[j], [self.moff[j]]) for j in masked])
                gone = b.not_(ok) if inside is None else b.and_(inside, b.not_(ok))
                b.store(b.or_(b.load(self.bad), gone), self.bad)
                take = ok if inside is None else b.and_(inside, ok)
                b.store(b.add(b.load(self.count), b.zext(take, I64)), self.count)
            if take is not None:
                v = b.select(take, v, ident)
            b.store(self._combine(em, b.load(slot), v), slot)
        for q, slot in enumerate(lanes):  # the first window
            fold(slot, c(q), b.icmp_signed("<", c(q), n))

        def block(i):
            at = b.mul(b.add(i, c(1)), c(WINDOW), flags=("nuw", "nsw"))
            for q, slot in enumerate(lanes):
                fold(slot, b.add(at, c(q), flags=("nuw", "nsw")))
        whole = b.and_(n, c(-WINDOW))  # the elements in whole blocks
        _hinted_loop(b, b.sub(b.lshr(whole, c(WINDOW.bit_length() - 1)), c(1)), block, "wb",
                     _NO_VECTOR)
        done = b.select(b.icmp_signed(">", whole, c(WINDOW)), whole, c(WINDOW))
        for q, slot in enumerate(lanes):  # the last window
            e = b.add(b.sub(n, c(WINDOW)), c(q))
            fold(slot, e, b.icmp_signed(">=", e, done))
        vals = [b.load(slot) for slot in lanes]
        while len(vals) > 1:  # pairwise
            vals = [self._combine(em, x, y) for x, y in zip(vals[::2], vals[1::2])]
        self._acc_store(b, self.acc, self._combine(em, self._acc_load(b, self.acc), vals[0]))
        if not masked:
            b.store(b.add(b.load(self.count), n), self.count)

    def _present(self, masks):
        b = self.b
        ok = ir.Constant(I1, 1)
        for m in masks:
            ok = b.and_(ok, b.icmp_unsigned("!=", b.load(m, align=1), ir.Constant(I8, 0)))
        return ok

    def _loads(self, addr):
        """Each input loaded as stored (`spec.inputs`) and converted in registers to the
        dtype the body computes it in (its `load` instruction's): an int32 leaf in a
        float64 body, a byte-swapped leaf, no copy of either."""
        b, spec = self.b, self.spec
        want = {ins.attr: ins.dtype for ins in spec.body if ins.op == "load"}
        return [self.em.cast(load_value(b, a, d, al), np.dtype(d).newbyteorder("="),
                             want.get(j, d))
                for j, (a, d, al) in enumerate(zip(addr, spec.inputs, spec.aligned))]

    def _values(self, addr):
        return emit_body(self.b, self.spec, self._loads(addr), self.target, self._pv)

    def _write(self, addr, masks, at, gone=None):
        b = self.b
        dt = self.out_dts[0]
        dst = b.gep(self.out, [b.mul(at, self.c(dt.itemsize))])
        if not masks:
            store_value(b, self._values(addr)[0], dst, dt)
            return
        if self.where_masks:  # values of every element; the mask follows the body
            value, ok, _ = self._values_and_present(addr, gone)
            b.store(b.zext(ok, I8), b.gep(self.outm, [at]), align=1)
            store_value(b, value, dst, dt)
            return
        ok = self._present(masks)
        b.store(b.zext(ok, I8), b.gep(self.outm, [at]), align=1)
        with b.if_else(ok) as (then, otherwise):
            with then:  # a missing input's bytes are never computed with
                store_value(b, self._values(addr)[0], dst, dt)
            with otherwise:
                store_value(b, self.em.const(dt, 0), dst, dt)

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

    def _mark(self, g):
        """Mark pass: the row at level g (of the element taking a missing row there) is
        missing: its length n becomes -2 - n (once)."""
        b, c = self.b, self.c
        for k in self.cnt:
            if not any(self.kinds[j][k].endswith("q") for j in self.branch_q):
                continue
            with b.if_then(b.icmp_signed("==", g, c(k))):
                at = b.gep(self.lens[k], [b.sub(b.load(self.cnt[k]), c(1))])
                n = b.load(at)
                b.store(b.select(b.icmp_signed(">=", n, c(0)), b.sub(c(-2), n), n), at)

    def _reset(self):
        b = self.b
        dt = self.out_dts[0]
        self._acc_store(b, self.acc, self.em.const(dt, self.red.identity(dt)))
        b.store(self.c(0), self.count)
        b.store(ir.Constant(I1, 0), self.bad)

    def _fold(self, addr, masks):
        b = self.b

        def fold():
            res = self._values(addr)
            self._acc_store(b, self.acc, self._combine(self.em, self._acc_load(b, self.acc),
                                                       res[0]))
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
        store_value(b, self._acc_load(b, self.acc), b.gep(self.out, [b.mul(at, c(dt.itemsize))]),
                    dt)
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
        if self.red.combine in ("minimum", "maximum") or (self.mean and (self.skipna or mj)):
            valid = b.and_(valid, b.icmp_signed(">", cnt, c(0)))
        if self.mean and dt.kind in "iu":
            v = self._int_mean(v, cnt, dt)
        elif self.mean:
            cf = b.sitofp(cnt, lltype(dt))
            v = (b.fdiv(v[0], cf), b.fdiv(v[1], cf)) if dt.kind == "c" else b.fdiv(v, cf)
        store_value(b, v, b.gep(self.out, [b.mul(at, c(dt.itemsize))]), dt)
        if miss is not None:
            valid = b.and_(valid, b.not_(miss))
        flags = b.or_(b.zext(valid, I8),
                      b.shl(b.zext(b.icmp_signed(">", n, c(0)), I8), ir.Constant(I8, 1)))
        if miss is not None:
            flags = b.or_(flags, b.shl(b.zext(miss, I8), ir.Constant(I8, 2)))
        b.store(flags, b.gep(self.outm, [at]), align=1)


# Rows are short and of random lengths: a row folded by windows of this many elements
# (`_window_fold`) has no remainder loop whose length the CPU must guess.
WINDOW = 8
# Loop hints (`llvm.loop` metadata). Strided rows (and the window's blocks, already
# WINDOW lanes wide): a vectorized loop with gathers or remainders rarely pays.
_NO_VECTOR = (("llvm.loop.vectorize.enable", False), ("llvm.loop.interleave.count", 1))


def _hinted_loop(b, n, body, name, hints) -> None:
    """`for_loop` with `llvm.loop` hints on its back edge."""
    back = for_loop(b, n, body, name)
    m = b.module
    ops_ = [m.add_metadata([ir.MetaDataString(m, key),
                            ir.Constant(I1 if isinstance(v, bool) else ir.IntType(32), v)])
            for key, v in hints]
    loop_id = ir.values.MDValue(m, [], name=str(len(m.metadata)))  # distinct: refers to itself
    loop_id.operands = (loop_id, *ops_)
    back.set_metadata("llvm.loop", loop_id)


def _min(b, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


def _deciding(spec) -> set:
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


def generate_nest(spec: Any, levels: tuple, kinds: tuple, masked: tuple, mode: str = "map",
                  npass: str = "fill", skipna: bool = False, mean: bool = False,
                  name: str = "lazyk_nest", target: Any = None,
                  where_masks: bool = False) -> ir.Module:
    """The module of one loop-nest kernel (see the module doc).

    levels: 'f' or 'v' per result level (for "reduce" the last one is folded);
    kinds: per input, per level 'n' (stays), 'f' (strided), '4' / '8' (var, index width),
    '4s' / '8s' (var rows of a stepping view) or '4q' / '8q' / '4sq' / '8sq' (`?var`, at var
    levels; "fold<a>,<b>...": only above level a);
    masked: per input, whether it is `?T` (mask byte at value + mask_offset);
    where_masks: ("map") a `where` in the body takes the missing state of its condition
    and of the branch it selects, not of all three.
    """
    if mode != "map" and spec.reduce is None:
        raise ops.NotSupportedError("a reducing nest needs a reduction")
    if mode == "map" and spec.reduce is not None:
        raise ops.NotSupportedError("an elementwise nest has no reduction")
    if mean and np.dtype(spec.outputs[0][1]).kind not in "fciu":
        raise ops.NotSupportedError("a mean needs a number accumulator")
    if len(kinds) != len(spec.inputs) or any(len(k) != len(levels) for k in kinds):
        raise ValueError("one kind per input and level")
    return _NestGen(spec, levels, kinds, masked, mode, npass, skipna, mean, name,
                    target or CPUTarget(), where_masks).build()


def add_part_entry(module: ir.Module, name: str = "lazyk_nest") -> str:
    """Add `void <name>_part(i8 **kds, i64 tid)`, which runs `<name>_run(kds[tid])`: the
    entry the native thread pool calls (`backend.threads.parallel_for`), one kernel data
    block per part. Returns the entry's name."""
    run = module.get_global(f"{name}_run")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [P8, I64]), f"{name}_part")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    kds = b.bitcast(fn.args[0], P8.as_pointer())
    b.call(run, [b.load(b.gep(kds, [fn.args[1]]), align=8)])
    b.ret_void()
    return fn.name

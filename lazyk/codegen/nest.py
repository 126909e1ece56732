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
element takes it; at a fixed level the fill pass clears the row's present byte where an
element takes it (`_write`). Folding one level ("fold<a>", `_qfold_level`) or all ("all"), a missing
row is skipped under skipna, else the result (row) is missing; "fold<a>,<b>..." over
several levels takes `?var` rows only above level a.
Innermost: the fused elementwise body (`emit_body`), `?T` masks at the value's address +
mask_offset. The folds are in `codegen.nestfold`. A reduction folds a contiguous row (`T` or `?T`) by
windows of WINDOW lanes (`_window_fold`: no remainder loop), where the windows lie inside
every operand's content (`start <= length - LEAD * WINDOW`); other rows take the plain
loop.

Modes: "map" writes one value (and a present byte for `?T` results) per result element, in
nest order; "scan" (`levels.Scan`) is a map whose written value is the running fold of the
innermost row so far (a missing value folds nothing); "reduce" folds the last level into one value per element of the level above
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
those arrays (so no write leaves the result) and writes the values; "check" is the fill pass's walk
without the elements (nothing written: rows that cannot pair raise before a large result is
allocated).

A nest kernel is a ckernel (`lazyk.kernel.abi`): `{name}_single(char *dst, char *const
*src, ckernel_prefix *self)` runs the nest over the level-0 range its kernel data gives,
`dst` the output values (or 0: count and check passes), `src[j]` operand j's data; after
the prefix (function, destructor) come the kernel data words (`nest_layout`). The part
entries run `{name}_go(self)` per part: the single request on the pointers the record
holds (words 3 and each operand's first word). Words:

    0 status (address of int64[8 + nlev])   1 lo   2 hi  (level-0 range, a fixed level)
    3 out values (for `_go`)   4 out valid bytes   5 first output position
    6 + k                  size of fixed result level k
    6 + nlev + 2k, +1      var result level k: its lengths array (count pass) or its
                           offsets (fill pass), first row number
    6 + 3 nlev + j (2 + 6 nlev): operand j: address (for `_go`), mask_offset, then per
                           level 6 words:
                           fixed: stride; var: stop_delta, content, index_stride, stride,
                           length, row mask_offset (`?var`)
    then the parameter slots (16 bytes each).

Selection and gather (`levels.Keep`, `levels.Gathered`): spec outputs past the first are
level values, each computed at one element of its level from the operands that stay below
it (`_level_values`: only the instructions it needs). A `Keep` level visits every element
and keeps those whose mask output is true (or missing): its count pass counts the kept
elements (`_count_kept`), its fill pass checks each kept element against the counted
length before anything under it is written, and a fold there folds only kept values. An
operand `Gathered` at a level reads its own row (checked, never paired) and, at each
element, its element at the position output there (`_gather`; outside the row: status 5).
A missing position, or a kept element whose mask is missing, above the last level makes
the row below it missing (`lost`).

Status: word 0 is 0 when every row was fine, else 1 (bad indices: words 3-5 = start, stop,
length), 2 (rows do not pair: word 3 = the operand's row length, 4 = the result's, 5 =
the operand that set it or -1 for a fixed level; 6: the same at a selection's level,
where no row of 1 stretches), 4 (rows folded together over a middle
level differ: words 3, 4 the two lengths), 3 (a
row length differs from the count pass) or 5 (a position outside its row: words 3, 4 =
the position, the row's length; the path reaches the position); word 1 the level, word 2
the operand, words 8 + k the index at each level down to the failing row. Accumulators live on the stack: no
allocation, no shared state: thread-safe.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from llvmlite import ir

from lazyk.codegen.emit import (
    I1,
    I8,
    I64,
    P8,
    CPUTarget,
    Emitter,
    emit_body,
    load_value,
    store_value,
)
from lazyk.codegen.levels import (
    FIXED,
    VAR,
    WORDS,
    Bins,
    Check,
    Fill,
    Gathered,
    Map,
    Pick,
    Reduce,
    Scan,
    Total,
    tuple_bounds,
    tuple_count,
    tuple_kind,
)
from lazyk.codegen.llvm import KernelGen, LayoutClass, for_loop
from lazyk.codegen.nestfold import LEAD, NO_VECTOR, WINDOW, NestFolds, hinted_loop
from lazyk.frontend import ops

HEAD = 6
PREFIX = 2  # words of the ckernel_prefix {function, destructor} before the kernel data words


def nest_layout(nlev: int, nin: int) -> dict:
    """Word indices of the kernel data (see the module doc)."""
    ops_at = HEAD + 3 * nlev
    per_op = 2 + WORDS * nlev
    return {"sizes": HEAD, "lens": HEAD + nlev, "ops": ops_at, "per_op": per_op,
            "params": 8 * (ops_at + nin * per_op)}


class _NestGen(NestFolds, KernelGen):
    def __init__(self, spec: Any, levels: tuple, kinds: tuple, masked: tuple, mode, npass,
                 skipna: bool, mean: bool, name: str, target: Any, where_masks: bool = False):
        # outputs past the first are level values (a keep predicate, positions): the body
        # computes them where their level needs them (`_level_values`), nothing stores them;
        # histograms (Bins) count every output: a bin index, then its weight if any
        self.full = spec
        if not isinstance(mode, Bins):
            spec = replace(spec, outputs=spec.outputs[:1])
        super().__init__(spec, LayoutClass(1, ""), name, target)
        self.levels, self.kinds, self.masked = tuple(levels), tuple(kinds), tuple(masked)
        self.keep = mode.keep
        # x[mask]: the operands of the selected array and of the mask (`_sides_agree`)
        self.keep_sides = () if self.keep is None else (
            set(self.keep.array) or inputs_of(self.full, 0), inputs_of(self.full, self.keep.out))
        self.gathered = {k for ks in kinds for k, lv in enumerate(ks)
                         if isinstance(lv, Gathered)}
        self.arg = self.red is not None and self.red.finish is not None
        self._subs: dict = {}
        self.grow: dict = {}  # operand taken at positions -> (its row's element 0, stride, n)
        self.mode, self.npass, self.skipna, self.mean = mode, npass, skipna, mean
        self.mapping, self.reducing = isinstance(mode, Map), isinstance(mode, Reduce)
        # Scan (a Map): each written value is the running fold of its row so far
        self.scan = mode.combine if isinstance(mode, Scan) else None
        self.total = isinstance(mode, Total)
        self.binning = isinstance(mode, Bins)
        self.where_masks = where_masks
        self.nlev = len(levels)
        # tuple levels (`Combos`, `Product`): the tuples each walks; operands that read a
        # tuple's item index (argcombinations) take it as their value (`_loads`)
        self.tuples = [tuple_kind(kinds, k) for k in range(self.nlev)]
        if self.tuples[0] is not None and levels[0] is FIXED:
            raise ops.NotSupportedError("a tuple level at the outermost fixed level")
        self.position = {j: k for j in range(self.nin) for k in range(self.nlev)
                         if isinstance(kinds[j][k], Pick) and kinds[j][k].position}
        self.posval: dict = {}
        self.slot_lens: dict = {}
        # where(): operands read only as a branch whose rows may be missing ("gone": the
        # outermost level of the missing row, nlev while present); see `_taken`
        deciding = _deciding(spec) if where_masks else set(range(self.nin))
        self.branch_q = [j for j in range(self.nin) if j not in deciding and
                         any(lv.missing for lv in kinds[j])]
        # a `?var` row against a fixed result level (`?n` rows): the level still runs its n
        # elements, the operand reads zeros under the missing row ("gone" too), and the
        # fill pass writes each row's present byte (a reduced last level: missing result)
        self.fixed_q = [k for k in range(self.nlev) if levels[k] is FIXED and
                        any(ks[k].missing for ks in kinds) and
                        not (isinstance(mode, Reduce) and k == self.nlev - 1)]
        self.track = [j for j in range(self.nin) if j in self.branch_q or
                      any(kinds[j][k].missing for k in self.fixed_q)]
        self.lay = nest_layout(self.nlev, self.nin)
        self.poff = self.lay["params"]
        # result levels: every level for Map, all but the folded last one for Reduce, none
        # for Total; Fold(axes): the kept levels below the first folded one fold element by
        # element over each result element's group
        self.axes = mode.axes
        self.axis = self.axes[0] if self.axes else -1
        self.res = [] if isinstance(mode, (Total, Bins)) else list(range(self.nlev - 1)) \
            if isinstance(mode, Reduce) else [k for k in range(self.nlev) if k not in self.axes]
        self.nres = len(self.res)
        # Count(s) counts the rows of result var level s (and of those above it); Mark(s)
        # then goes on to every element: a row whose element takes a branch's missing row
        # gets length -2 - n (missing; n keeps its raw structure)
        self.counting, self.marking = npass.counting, npass.marking
        # Check: the fill pass's walk over the rows (every row checked and paired) with
        # nothing written: run before a large result is allocated
        self.checking = isinstance(npass, Check)
        if self.checking and not isinstance(mode, (Map, Reduce)):
            raise ops.NotSupportedError(f"no check pass for mode {mode}")
        self.deepest = npass.level if self.counting else -1
        # the result levels whose rows are counted: var ones, and the level keeping elements
        self.counted = {k for k in self.res if levels[k] is VAR or
                        (self.keep is not None and k == self.keep.level)}
        if self.counting and self.deepest not in self.counted:
            raise ops.NotSupportedError(f"no var result level to count in {npass}")

    def build(self) -> ir.Module:
        # the ckernel single request: dst, src, then the ckernel_prefix, the words after it
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [P8, P8.as_pointer(), P8]),
                         f"{self.name}_single")
        dst, src, me = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        kd8 = b.gep(me, [ir.Constant(I64, 8 * PREFIX)])
        self.b, self.fn = b, fn
        self._load_params(b, kd8)
        kd = b.bitcast(kd8, I64.as_pointer())

        def word(i):
            return b.load(b.gep(kd, [ir.Constant(I64, i)]), align=8)
        self.status = b.inttoptr(word(0), I64.as_pointer())
        self.lo, self.hi = word(1), word(2)
        self.out = dst
        self.outm = b.inttoptr(word(4), P8)
        lay = self.lay
        self.sizes = [word(lay["sizes"] + k) if self.levels[k] is FIXED else None
                      for k in range(self.nlev)]
        self.lens, self.cnt = {}, {}
        with b.goto_entry_block():
            self.pos = b.alloca(I64, name="pos")
            for k in sorted(self.counted):
                self.cnt[k] = b.alloca(I64, name=f"cnt{k}")
            if self.keep is not None:
                self.kept = b.alloca(I64, name="kept")
            if self.arg:
                self.argat = b.alloca(I64, name="argat")  # the folded element's position
                self.flat = b.alloca(I64, name="flat")  # elements folded so far (all axes)
        b.store(word(5), self.pos)
        for k in self.cnt:
            self.lens[k] = b.inttoptr(word(lay["lens"] + 2 * k), I64.as_pointer())
            b.store(word(lay["lens"] + 2 * k + 1), self.cnt[k])
        self.qrows, self.qcnt = {}, {}  # fixed levels with `?var` rows: present bytes
        if not (self.counting or self.checking):
            for k in self.fixed_q:
                with b.goto_entry_block():
                    self.qcnt[k] = b.alloca(I64, name=f"qcnt{k}")
                self.qrows[k] = b.inttoptr(word(lay["lens"] + 2 * k), P8)
                b.store(word(lay["lens"] + 2 * k + 1), self.qcnt[k])
        self.ptr, self.moff, self.f = [], [], []
        for j in range(self.nin):
            at = lay["ops"] + j * lay["per_op"]
            self.ptr.append(b.load(b.gep(src, [ir.Constant(I64, j)]), align=8))
            self.moff.append(word(at + 1) if self.masked[j] else None)
            per = []
            for k in range(self.nlev):
                level = self.kinds[j][k]
                base = at + 2 + WORDS * k
                # a fixed dim read at a tuple level or at positions: its stride and size
                nw = 0 if not level.moves else WORDS if level.rows else \
                    2 if isinstance(level, (Pick, Gathered)) else 1
                per.append([word(base + i) for i in range(nw)] if nw else None)
            self.f.append(per)
        self.fail = fn.append_basic_block("fail")
        self.em = Emitter(b, self.target)
        # one folded level over `?var` rows at or below it: `_qfold_level`; `?var` rows
        # below it (fold_q) are found first, element by element
        self.qfold = len(self.axes) == 1 and any(lv.missing for ks in self.kinds
                                                 for lv in ks[self.axis:])
        self.fold_q = self.qfold and any(lv.missing for ks in self.kinds
                                         for lv in ks[self.axis + 1:])
        if self.fold_q:
            with b.goto_entry_block():
                self.fmiss = b.alloca(I1, name="fmiss")
                self.fseen = b.alloca(I1, name="fseen")
        if self.keep is not None:  # where a dropped element is written (`_inner`)
            with b.goto_entry_block():
                spare = b.alloca(ir.ArrayType(I64, 2), name="spare")
                spare.align = 16
            self.spare = b.bitcast(spare, P8)
        if self.track or self.fold_q or self.gathered:  # what a gone operand reads: zeros
            with b.goto_entry_block():
                self.dummy = b.alloca(ir.ArrayType(I64, 2), name="dummy")
                self.dummy.align = 16
            b.store(ir.Constant(ir.ArrayType(I64, 2), [0, 0]), self.dummy)
            self.dummy = b.bitcast(self.dummy, P8)
        if self.binning:  # this part's counters: out + part * (counters of a part)
            table = b.inttoptr(word(4), I64.as_pointer())
            at = b.mul(word(5), b.load(table, align=8))
            self.bin_base = at
            self.bin_n = [b.load(b.gep(table, [self.c(1 + 2 * h)]), align=8)
                          for h in range(len(self.mode.weighted))]
            self.bin_first = [b.load(b.gep(table, [self.c(2 + 2 * h)]), align=8)
                              for h in range(len(self.mode.weighted))]
        elif not self.mapping:
            self.acc = self._acc_alloca(b)
            if self.arg:  # positions: the best value's, the first folded, the first NaN
                with b.goto_entry_block():
                    self.accpos, self.accfirst, self.accnan = (
                        b.alloca(I64, name=n) for n in ("accpos", "accfirst", "accnan"))
            with b.goto_entry_block():
                self.count = b.alloca(I64, name="count")
                self.bad = b.alloca(I1, name="bad")
                self.flen = b.alloca(I64, name="flen")
        if self.total:
            self._reset()
        if self.scan:
            with b.goto_entry_block():
                self.sacc = b.alloca(ir.ArrayType(I8, 16), name="scan")
                self.sacc.align = 16
        if self.arg:
            b.store(self.c(0), self.flat)
        self._level(0, list(self.ptr), [], [self.c(self.nlev) if j in self.track else None
                                            for j in range(self.nin)])
        if self.total:
            self._partial(b.load(self.pos))
        b.ret_void()
        b.position_at_end(self.fail)
        b.ret_void()
        self._emit_destroy()
        self._emit_go(fn)
        return self.module

    def _emit_go(self, single) -> None:
        """`void <name>_go(i8 *self)`: the single request on the pointers a part's record
        holds (word 3: the output values; each operand's first word: its data): what the
        part entries run for each part (`self`: ckernel_prefix, then the words)."""
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [P8]), f"{self.name}_go")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        words = b.bitcast(b.gep(fn.args[0], [self.c(8 * PREFIX)]), I64.as_pointer())

        def pointer(i):
            return b.inttoptr(b.load(b.gep(words, [self.c(i)]), align=8), P8)
        src = b.alloca(P8, self.c(max(self.nin, 1)), name="src")
        for j in range(self.nin):
            at = self.lay["ops"] + j * self.lay["per_op"]
            b.store(pointer(at), b.gep(src, [self.c(j)]))
        b.call(single, [pointer(3), src, fn.args[0]])
        b.ret_void()

    # ------------------------------------------------------------ helpers
    def c(self, v):
        return ir.Constant(I64, v)

    def check(self, ok, code, level, path, j=-1, a=None, bb=None, cc=None):
        """Continue when `ok`; else write the status words and return (a rare branch)."""
        b = self.b
        good = self.fn.append_basic_block("ok")
        bad = self.fn.append_basic_block("bad")
        br = b.cbranch(ok, good, bad)
        br.set_weights([1 << 20, 1])
        b.position_at_end(bad)
        st = self.status
        j = self.c(j) if isinstance(j, int) else j
        for i, v in enumerate([self.c(code), self.c(level), j, a, bb, cc]):
            if v is not None:
                b.store(v, b.gep(st, [self.c(i)]))
        for k, v in enumerate(path):
            b.store(v, b.gep(st, [self.c(8 + k)]))
        b.branch(self.fail)
        b.position_at_end(good)

    def index(self, p, width):
        b = self.b
        t = ir.IntType(8 * width)
        v = b.load(b.bitcast(p, t.as_pointer()), align=1)
        return v if width == 8 else b.sext(v, I64)

    def _rows(self, k, ptrs, path, gone=None):
        """Per operand at level k: (element-0 address, step); the result length n.
        `gone`: per where() branch operand the level of its missing row so far (updated)."""
        b, c = self.b, self.c
        bases, steps, lens, miss = [], [], {}, None
        gones = {}  # var operand -> its row is missing here
        fixed = k in self.fixed_q
        self.row_gone = ir.Constant(I1, 0)  # a `?var` row at a fixed level k is missing
        self.row_ends = {}  # each var operand's start and stop (`_window_fold`)
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

                def at(q, was=was):  # a gone operand's row is not there: read zeros
                    return q if was is None else b.select(was, self.dummy, q)
                start = self.index(at(ptrs[j]), level.width)
                stop = self.index(at(b.gep(ptrs[j], [delta])), level.width)
                self.row_ends[j] = (start, stop)
                ok = level.inside(self, f, start, stop)
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
            self._sides_agree(k, lens, gones, path)
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

    def _sides_agree(self, k, lens, gones, path) -> None:
        """x[mask] at level k (at or above the selected one): the array's length there and
        the mask's are equal, each side's the length of its rows (a row of 1 stretching
        within a side, as elementwise work stretches it) or of the fixed level (1 where it
        stays: a fixed 1, or no dim). A missing row pairs with any: a side whose rows are
        all missing here is not compared (as Awkward's selection, no row of 1 stretches
        across the sides)."""
        b, c = self.b, self.c
        got = []
        for side in self.keep_sides:
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
        self.check(ok, 6, k, path, b.select(mask, wm, wa), b.select(mask, nm, na),
                   b.select(mask, na, nm), b.select(mask, wa, wm))

    def _level(self, k, ptrs, path, gone=None, lost=None):
        b, c = self.b, self.c
        gone = None if gone is None else list(gone)
        bases, steps, n, miss = self._rows(k, ptrs, path, gone)
        if lost is not None:  # the element above is missing (`child`): so is this row
            miss = lost if miss is None else b.or_(miss, lost)
            n = b.select(lost, c(0), n)
        keep = self.keep is not None and self.keep.level == k
        want = None  # fill pass: the row's counted length
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


    # ------------------------------------------------------------ kept elements, positions
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
            masks = []
            for j in sorted(inputs_of(self.full, out)):
                if self.masked[j]:
                    m = b.gep(addr[j], [self.moff[j]])
                    if away and j in away:
                        m = b.select(away[j], self.dummy, m)
                    masks.append(m)
            vals[out], pres[out] = v, (self._present(masks) if masks else None)
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
            self._scan_store(self.em.const(self.out_dts[0], 1 if self.scan == "multiply"
                                           else 0))
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
                act(slot, addr, masks)
                b.store(b.add(slot, c(1)), self.kept)

        def general(i):
            i = b.add(i, lo)
            element(i, [b.gep(p, [b.mul(i, s)]) for p, s in zip(bases, steps)])
        if self.tuples[k] is not None:  # the tuples of the row: no contiguous fast path
            self._tuple_loop(k, bases, steps, element)
        elif self._arg_peeled(k):
            self._arg_rows(k, bases, n, isz, general)
        elif (any(self.masked) and not self._windowed(k) and not self.binning) or \
                not self.nin or self.track or k in self.gathered or (keep and self.mapping) \
                or self.arg:
            for_loop(b, n, general, name="e")
        elif self._windowed(k):
            # rows of contiguous content (a stride word: the same for every row), none
            # stretched (a row of 1 against longer ones: the plain loop), with the leading
            # windows' room in the content (all but the last few rows): the window fold, no
            # branch per element. Its last window, [stop - WINDOW, stop), runs only for
            # rows longer than the leading windows: inside the content too.
            fast = ir.Constant(I1, 1)
            for j in range(self.nin):
                if self.kinds[j][k].moves:
                    start, stop = self.row_ends[j]
                    room = b.sub(self.f[j][k][4], c(LEAD * WINDOW))  # length - LEAD * WINDOW
                    fast = b.and_(fast, b.and_(b.icmp_signed("==", self.f[j][k][3],
                                                             c(isz[j])),
                                               b.icmp_signed("<=", start, room)))
                    fast = b.and_(fast, b.icmp_signed("==", b.sub(stop, start), n))
            with b.if_else(fast) as (then, otherwise):
                with then:
                    self._window_fold(bases, n, isz, k)
                with otherwise:
                    hinted_loop(b, n, general, "e", NO_VECTOR)
        else:
            # Every moving operand contiguous in this row: constant strides, so LLVM
            # vectorizes; other rows take the general strided loop.
            fast = self._contiguous(k, steps, isz)

            def contiguous(i):
                i = b.add(i, lo)
                element(i, [p if not self.kinds[j][k].moves else
                            b.gep(p, [b.mul(i, c(sz), flags=("nuw", "nsw"))])
                            for j, (p, sz) in enumerate(zip(bases, isz))])
            with b.if_else(fast) as (then, otherwise):
                with then:
                    if self.binning:  # bins of a block first (vectorized), then counted
                        self._bin_blocks(k, bases, n, lo, isz)
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
        slots = [glen[tup.group(s)][0] for s in range(tup.slots)]
        self.slot_lens[k] = slots
        n = tuple_count(self, tup, slots) if self.levels[k] is VAR else self.sizes[k]
        for j, ln in lens.items():
            if not isinstance(self.kinds[j][k], Pick):
                ok = b.or_(b.icmp_signed("==", ln, c(1)), b.icmp_signed("==", ln, n))
                self.check(ok, 2, k, path, j, ln, n, c(-1))
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
        dt = self.out_dts[0]
        dst = b.gep(self.out, [b.mul(at, self.c(dt.itemsize))])
        outm = self.outm
        if spare is not None:
            dst = b.select(spare, self.spare, dst)
            outm = b.select(spare, b.gep(self.spare, [b.neg(at)]), outm)
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
            b.store(b.zext(ok, I8), b.gep(outm, [at]), align=1)
            store_value(b, self._scanned(value, ok), dst, dt)
            return
        ok = self._present(masks)
        b.store(b.zext(ok, I8), b.gep(outm, [at]), align=1)
        with b.if_else(ok) as (then, otherwise):
            with then:  # a missing input's bytes are never computed with
                store_value(b, self._scanned(self._values(addr)[0]), dst, dt)
            with otherwise:
                store_value(b, self.em.const(dt, 0), dst, dt)

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


# Rows are short and of random lengths: a row folded by windows of this many elements
# (`_window_fold`) has no remainder loop whose length the CPU must guess.
def _min(b, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


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


def generate_nest(spec: Any, levels: tuple, kinds: tuple, masked: tuple, mode=Map(),
                  npass=Fill(), skipna: bool = False, mean: bool = False,
                  name: str = "lazyk_nest", target: Any = None,
                  where_masks: bool = False) -> ir.Module:
    """The module of one loop-nest kernel (see the module doc).

    levels: `FIXED` or `VAR` per result level (for `Reduce` the last one is folded);
    kinds: per input, per level its `levels` class (`Stay`, `Strided`, `Rows`,
    `MissingRows`: at var levels; under `Fold` of several levels only above the first);
    masked: per input, whether it is `?T` (mask byte at value + mask_offset);
    mode: `Map`, `Scan(combine)`, `Reduce`, `Total` or `Fold(axes)`; npass: `Fill`,
    `Count(s)`, `Mark(s)`;
    where_masks: (`Map`) a `where` in the body takes the missing state of its condition
    and of the branch it selects, not of all three.
    """
    mapping = isinstance(mode, (Map, Bins))  # (a Scan too)
    if isinstance(mode, Bins) and len(spec.outputs) != mode.outputs:
        raise ops.NotSupportedError(f"{mode} takes {mode.outputs} body outputs")
    if not mapping and spec.reduce is None:
        raise ops.NotSupportedError("a reducing nest needs a reduction")
    if mapping and spec.reduce is not None:
        raise ops.NotSupportedError("an elementwise nest has no reduction")
    if mean and np.dtype(spec.outputs[0][1]).kind not in "fciu":
        raise ops.NotSupportedError("a mean needs a number accumulator")
    if len(kinds) != len(spec.inputs) or any(len(k) != len(levels) for k in kinds):
        raise ValueError("one level per input and result level")
    return _NestGen(spec, levels, kinds, masked, mode, npass, skipna, mean, name,
                    target or CPUTarget(), where_masks).build()


def add_part_entry(module: ir.Module, name: str = "lazyk_nest") -> str:
    """Add `void <name>_part(i8 **kds, i64 tid)`, which runs `<name>_go(kds[tid])`: the
    entry the native thread pool calls (`backend.threads.parallel_for`), one record
    (ckernel_prefix + kernel data) per part. Returns the entry's name."""
    run = module.get_global(f"{name}_go")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [P8, I64]), f"{name}_part")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    kds = b.bitcast(fn.args[0], P8.as_pointer())
    b.call(run, [b.load(b.gep(kds, [fn.args[1]]), align=8)])
    b.ret_void()
    return fn.name


def add_steal_entry(module: ir.Module, name: str = "lazyk_nest") -> str:
    """Add `void <name>_steal(i64 *arg, i64 tid)`, arg = {i8 **kds, n, next}: each thread
    claims the next part (an atomic add on `next`) and runs `<name>_go(kds[i])` until the n
    parts are taken, so a thread the OS holds back leaves its parts to the others. Returns
    the entry's name."""
    run = module.get_global(f"{name}_go")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [P8, I64]), f"{name}_steal")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    arg = b.bitcast(fn.args[0], I64.as_pointer())
    kds = b.inttoptr(b.load(arg, align=8), P8.as_pointer())
    n = b.load(b.gep(arg, [ir.Constant(I64, 1)]), align=8)
    nxt = b.gep(arg, [ir.Constant(I64, 2)])
    claim = fn.append_basic_block("claim")
    body = fn.append_basic_block("body")
    done = fn.append_basic_block("done")
    b.branch(claim)
    b.position_at_end(claim)
    i = b.atomic_rmw("add", nxt, ir.Constant(I64, 1), "monotonic")
    b.cbranch(b.icmp_signed("<", i, n), body, done)
    b.position_at_end(body)
    b.call(run, [b.load(b.gep(kds, [i]), align=8)])
    b.branch(claim)
    b.position_at_end(done)
    b.ret_void()
    return fn.name

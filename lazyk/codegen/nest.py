"""Loop-nest kernels over ragged layouts: the loop nest follows the result type.

One level per result dim, outermost first; each operand reads it through its level object
(`codegen.levels`). A fixed level is a counted loop; every operand advances by its own byte
stride there (`Strided`), or not at all (`Stay`: the operand lacks the dim or has a fixed 1
there, so it broadcasts). At a var operand's level (`Rows`, of 4- or 8-byte indices) the
operand's element is its row's start index (docs/layout.md): the
kernel reads start and stop, checks `0 <= start <= stop <= length` (else it reports the row
and returns: no address outside the content is ever formed), and pairs the rows: equal
lengths, a length-1 row stretching, or a fixed result level of size n that every row must
match (or be 1). A stepping view's rows (`Rows(stepping=True)`: stride != index_stride,
from `x[:, ::2]`, `x[:, ::-1]`) are checked on their first and last elements instead (both
inside the `length` content elements; the multiply-adds checked for overflow): the window
is part of the compiled structure, so unsliced rows pay nothing for it. At a `?var` level
(`MissingRows`, an option wrapping rows) the row's mask byte sits at its
start index's address + the row mask_offset: a missing row's indices are never used, it
pairs with any row, and the result row is missing (the count pass writes length -1, the
result has no elements under it; "reduce" over a missing last row sets flag bit 2). At a
fixed result level (`?n`) the level still runs its n elements: the operand is "gone" (it
reads zero bytes, never its own) and the fill pass writes the row's present byte (word
6 + nlev + 2k: the bytes, +1: the first row). A where() branch's missing row is gone too:
the "mark<s>" pass (count<s>, then every element) gives a row length -2 - n where an
element takes it; at a fixed level the fill pass clears the row's present byte where an
element takes it (`_write`). Folding one level ("fold<a>", `_fold_level`) or all ("all"), a missing
row is skipped under skipna, else the result (row) is missing; "fold<a>,<b>..." over
several levels takes `?var` rows only above level a.
Innermost: the fused elementwise body (`emit_body`), `?T` masks at the value's address +
mask_offset. A reduction folds a contiguous row (`T` or `?T`) by
windows of WINDOW lanes (`_window_fold`: no remainder loop), where the windows lie inside
every operand's content (`start <= length - LEAD * WINDOW`); a body with math calls folds
from a block of values computed ahead in one vectorized loop (`_staged_fold`), and a count
of trues over short rows from a block of one byte per value (`_prefixed`); other rows take the
plain loop.

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

The generator (`_NestGen`) is set up here; its parts are mixins, one module each:
`nest_walk` (the levels' rows, the passes, tuple levels, the innermost loop), `nest_values`
(each element's loads, body, writes, scans and missing state), `nest_selection` (kept
elements, gathers), `nest_groups` (folds over middle levels), `nest_window` (the window
fold), `nest_reduce` (accumulators, arg-reductions, results) and `nest_bins` (histograms).
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
    load_params,
)
from lazyk.codegen.levels import (
    FIXED,
    VAR,
    WORDS,
    Beside,
    Bins,
    Check,
    Fill,
    Fold,
    Gathered,
    Map,
    Pick,
    Reduce,
    Scan,
    Total,
    tuple_kind,
)
from lazyk.codegen.llvm import KernelGen, LayoutClass
from lazyk.codegen.nest_bins import NestBins
from lazyk.codegen.nest_groups import NestGroups
from lazyk.codegen.nest_reduce import NestReduce
from lazyk.codegen.nest_selection import NestSelection, inputs_of
from lazyk.codegen.nest_values import NestValues, deciding_inputs
from lazyk.codegen.nest_walk import NestWalk
from lazyk.codegen.nest_window import NestWindows
from lazyk.frontend import ops
from lazyk.frontend.spec import PARAM_SLOT

HEAD = 6
PREFIX = 2  # words of the ckernel_prefix {function, destructor} before the kernel data words


def nest_layout(nlev: int, nin: int) -> dict:
    """Word indices of the kernel data (see the module doc)."""
    ops_at = HEAD + 3 * nlev
    per_op = 2 + WORDS * nlev
    return {"sizes": HEAD, "lens": HEAD + nlev, "ops": ops_at, "per_op": per_op,
            "params": 8 * (ops_at + nin * per_op)}


class _NestGen(NestWalk, NestValues, NestSelection, NestGroups, NestWindows, NestReduce,
               NestBins, KernelGen):
    """The loop-nest generator: set up here (`build`), its parts one mixin each."""

    def __init__(self, spec: Any, levels: tuple, kinds: tuple, masked: tuple, mode, npass,
                 skipna: bool, mean: bool, name: str, target: Any, where_masks: bool = False):
        # outputs past the first are level values (a keep predicate, positions): the body
        # computes them where their level needs them (`_level_values`), nothing stores them;
        # histograms (Bins) count every output: a bin index, then its weight if any
        self.full = spec
        self.written = mode.values if isinstance(mode, Map) else 1
        # histograms of row folds: the last level folds as a reduction's, each row's fold
        # then counts in the histograms (`Bins.after`)
        self.row_bins = isinstance(mode, Bins) and mode.after is not None
        if not isinstance(mode, Bins) or self.row_bins:
            spec = replace(spec, outputs=spec.outputs[:self.written])
        if self.written > 1 and (mode.keep is not None or any(masked) or where_masks or
                                 isinstance(mode, Scan) or not isinstance(npass, Fill)):
            raise ops.NotSupportedError("several results of a map: values only (no missing "
                                        "values, kept elements or running folds)")
        super().__init__(spec, LayoutClass(1, ""), name, target)
        self.levels, self.kinds, self.masked = tuple(levels), tuple(kinds), tuple(masked)
        self.keep = mode.keep
        # x[mask]: the operands of the selected array and of the mask (`_sides_agree`)
        self.keep_sides = () if self.keep is None else (
            set(self.keep.array) or inputs_of(self.full, 0), inputs_of(self.full, self.keep.out))
        self.staged_short = None  # level 1 rows short on average (`_short_rows`)
        self.gathered = {k for ks in kinds for k, lv in enumerate(ks)
                         if isinstance(lv, Gathered)}
        # x[positions]: per gathered level and positions, the operands taken there and
        # those of the positions, whose rows above it pair exactly (`_sides_agree`)
        taken: dict = {}
        for j, ks in enumerate(kinds):
            for k, lv in enumerate(ks):
                if isinstance(lv, (Gathered, Beside)):  # (the array's operands)
                    taken.setdefault((k, lv.out), set()).add(j)
        self.take_sides = [(k, (xs, inputs_of(self.full, out)))
                           for (k, out), xs in sorted(taken.items())]
        self.arg = self.red is not None and self.red.finish is not None
        self._subs: dict = {}
        self.grow: dict = {}  # operand taken at positions -> (its row's element 0, stride, n)
        self.mode, self.npass, self.skipna, self.mean = mode, npass, skipna, mean
        self.mapping = isinstance(mode, Map)
        self.reducing = isinstance(mode, Reduce) or self.row_bins
        # Scan (a Map): each written value is the running fold of its row so far
        self.scan = mode.combine if isinstance(mode, Scan) else None
        self.total = isinstance(mode, Total)
        self.binning = isinstance(mode, Bins) and not self.row_bins
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
        deciding = deciding_inputs(spec) if where_masks else set(range(self.nin))
        self.branch_q = [j for j in range(self.nin) if j not in deciding and
                         any(lv.missing for lv in kinds[j])]
        # a `?var` row against a fixed result level (`?n` rows): the level still runs its n
        # elements, the operand reads zeros under the missing row ("gone" too), and the
        # fill pass writes each row's present byte (a reduced last level: missing result)
        self.fixed_q = [k for k in range(self.nlev) if levels[k] is FIXED and
                        any(ks[k].missing for ks in kinds) and
                        not (self.reducing and k == self.nlev - 1)]
        self.track = [j for j in range(self.nin) if j in self.branch_q or
                      any(kinds[j][k].missing for k in self.fixed_q)]
        self.lay = nest_layout(self.nlev, self.nin)
        self.poff = self.lay["params"]
        # result levels: every level for Map, all but the folded last one for Reduce, none
        # for Total; Fold(axes): the kept levels below the first folded one fold element by
        # element over each result element's group
        self.axes = mode.axes
        self.axis = self.axes[0] if self.axes else -1
        # a part: a range [lo, hi) of the last level's results (`Fold.splits_columns`)
        self.split_columns = isinstance(mode, Fold) and mode.splits_columns(levels, kinds)
        self.res = [] if self.total or self.binning else list(range(self.nlev - 1)) \
            if self.reducing else [k for k in range(self.nlev) if k not in self.axes]
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
        # (only the fill pass writes values and their present bytes)
        self.present_step = npass.present_step if isinstance(npass, Fill) else 1
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
        if self.row_bins:  # (the parameters of `after` follow the body's)
            self._pv_after = load_params(b, kd8, self.poff + PARAM_SLOT * len(self.params),
                                         self.mode.after.params)
        kd = b.bitcast(kd8, I64.as_pointer())

        def word(i):
            return b.load(b.gep(kd, [ir.Constant(I64, i)]), align=8)
        self.status = b.inttoptr(word(0), I64.as_pointer())
        self.lo, self.hi = word(1), word(2)
        self.out = dst
        self.outm = b.inttoptr(word(4), P8)
        self.outs = [dst]
        if self.written > 1:  # the other results' addresses: a table at word 4
            table = b.inttoptr(word(4), I64.as_pointer())
            self.outs += [b.inttoptr(b.load(b.gep(table, [ir.Constant(I64, q)]), align=8), P8)
                          for q in range(self.written - 1)]
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
                if level.rows and level.step:  # (index stride and stride: constants)
                    per[-1][2] = per[-1][3] = ir.Constant(I64, level.step)
            self.f.append(per)
        self.fail = fn.append_basic_block("fail")
        self.sink = None  # the block the failed checks write the status words in (`check`)
        self.em = Emitter(b, self.target)
        # one folded level over `?var` rows at or below it (`nest_groups`); `?var` rows
        # below it (fold_q) are found first, element by element
        self.qfold = len(self.axes) == 1 and any(lv.missing for ks in self.kinds
                                                 for lv in ks[self.axis:])
        self.fold_q = self.qfold and any(lv.missing for ks in self.kinds
                                         for lv in ks[self.axis + 1:])
        if self.fold_q:
            with b.goto_entry_block():
                self.fmiss = b.alloca(I1, name="fmiss")
        if self.keep is not None:  # where a dropped element is written (`_inner`)
            with b.goto_entry_block():
                spare = b.alloca(ir.ArrayType(I64, 2), name="spare")
                spare.align = 16
            self.spare = b.bitcast(spare, P8)
        if self.track or self.fold_q or self.gathered or self.keep is not None:
            # what a gone operand, or a row under a missing element, reads: zeros
            with b.goto_entry_block():
                self.dummy = b.alloca(ir.ArrayType(I64, 2), name="dummy")
                self.dummy.align = 16
            b.store(ir.Constant(ir.ArrayType(I64, 2), [0, 0]), self.dummy)
            self.dummy = b.bitcast(self.dummy, P8)
        if self.binning or self.row_bins:  # this part's counters: part * (a part's)
            table = b.inttoptr(word(4), I64.as_pointer())
            at = b.mul(word(5), b.load(table, align=8))
            self.bin_base = at
            nh = len(self.mode.weighted)
            self.bin_n, self.bin_first, edges_at = (
                [b.load(b.gep(table, [self.c(w + 3 * h)]), align=8) for h in range(nh)]
                for w in (1, 2, 3))
            edges = b.bitcast(table, ir.DoubleType().as_pointer())
            self.bin_edges = [b.gep(edges, [at]) for at in edges_at]
        self.nan = None  # a float min / max: whether a NaN was folded (`_fold_value`)
        if not (self.mapping or self.binning):
            self.acc = self._acc_alloca(b)
            if self._nan_apart():
                with b.goto_entry_block():
                    self.nan = b.alloca(I1, name="nan")
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
                self.sfirst = b.alloca(I1, name="scanfirst")
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
        single.attributes.add("noinline")  # one copy of the nest, not one per entry point
        b.call(single, [pointer(3), src, fn.args[0]])
        b.ret_void()

    # ------------------------------------------------------------ helpers
    def c(self, v):
        return ir.Constant(I64, v)

    def check(self, ok, code, level, path, j=-1, a=None, bb=None, cc=None):
        """Continue when `ok`; else write the status words and return (a rare branch). Every
        check branches to one block that writes them from phis: a block of stores per check
        made the largest of the ADL Q8 kernels 1,194 lines of IR instead of 855, and the
        query's 28 kernels compiled in 1.35 s instead of 1.07-1.17 s."""
        b, c = self.b, self.c
        if isinstance(ok, ir.Constant) and ok.constant in (1, True):
            return  # (checked where it was read: rows shared with another operand)
        if self.sink is None:
            here = b.block
            block = self.fn.append_basic_block("bad")
            b.position_at_end(block)
            phis = [b.phi(I64, name=f"status{i}") for i in range(6 + self.nlev)]
            for i, v in enumerate(phis):  # words 0-5, then the row path from word 8
                b.store(v, b.gep(self.status, [c(i if i < 6 else i + 2)]))
            b.branch(self.fail)
            b.position_at_end(here)
            self.sink = (block, phis)
        block, phis = self.sink
        good = self.fn.append_basic_block("ok")
        br = b.cbranch(ok, good, block)
        br.set_weights([1 << 20, 1])
        values = [c(code), c(level), c(j) if isinstance(j, int) else j, a, bb, cc, *path]
        assert len(values) <= len(phis), "a row path deeper than the nest"
        values += [None] * (len(phis) - len(values))
        here = b.block
        for phi, v in zip(phis, values):
            phi.add_incoming(c(0) if v is None else v, here)
        b.position_at_end(good)

    def index(self, p, width):
        b = self.b
        t = ir.IntType(8 * width)
        v = b.load(b.bitcast(p, t.as_pointer()), align=1)
        return v if width == 8 else b.sext(v, I64)


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
    row_bins = isinstance(mode, Bins) and mode.after is not None
    mapping = isinstance(mode, Map) or isinstance(mode, Bins) and not row_bins  # (Scan too)
    if isinstance(mode, Bins) and len((mode.after or spec).outputs) != mode.outputs:
        raise ops.NotSupportedError(f"{mode} takes {mode.outputs} body outputs")
    if row_bins and (len(mode.after_inputs) != len(mode.after.inputs) - 1 or
                     tuple(levels) != (FIXED, VAR)):
        raise ops.NotSupportedError("histograms of row folds: one operand per input of "
                                    "`after` past the fold, levels fixed * var")
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

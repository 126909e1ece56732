"""Levels: how one operand of a loop nest reaches its elements at one level, and what the nest
does there.

A type becomes a stack of levels, outermost first (`operand_levels`), one small class per
kind; the loop-nest generator (`codegen.nest`) asks each level to read its rows, and the
runtime asks it for its kernel-data words (`words`), so no other code knows how a level finds
its rows:

- `Stay`: the operand lacks this dim, or has a fixed 1 against var rows: it reads the same
  element all along the level (no words).
- `Strided`: a fixed dim: one byte stride (0 for a broadcast size 1).
- `Rows(width, stepping, shares, step)`: var rows: the operand's element at this level is its
  row's start index (`width` bytes), the stop index `stop_delta` bytes later, element i at
  `content + start * index_stride + i * stride` (docs/layout.md; `step`: both strides that
  constant, compiled in). Rows are checked
  (`0 <= start <= stop <= length`, or for a stepping view `x[:, ::2]` its first and last
  elements inside the content) before any element is read.
- `MissingRows(rows)`: `?var`: an option wrapping rows; the row's present byte sits at its
  start index's address + the row mask offset, and a missing row's indices are never read.
- `Gathered(inner, out)`: an operand taken at positions (`x[positions]`): it reads its own
  row (or fixed dim) as `inner` does, never paired with the result's, and at the result's
  element i its element at the position spec output `out` gives there (negative: from the
  row's end; outside the row: reported, never read). `Beside(inner, out)`: another operand
  of that array, a fixed 1 there (it stretches); its rows above are the array's too.

The nest's result levels are `FIXED` or `VAR` (`Extent`); what it computes is a mode (`Map`,
`Scan` along the last level, `Reduce` of the last level, `Total` over every level, `Fold` of a
set of levels), maybe keeping only some elements of one level (`Keep`: `x[mask]`; that
level's result rows are counted), and a pass (`Fill`, or `Count` / `Mark` of a result var
level's rows). All are frozen and hashable:
together with the KernelSpec they are the compile key of a nest kernel, never sizes.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from llvmlite import ir

from lazyk.arrays.arrmeta import VarWords
from lazyk.codegen.emit import I8, P8
from lazyk.frontend.tuples import Combos, Product

WORDS = 6  # kernel-data words per operand and level (the most any level takes)


class Extent(Enum):
    """A result level: a fixed size (a kernel-data word) or var rows (counted)."""

    FIXED = "fixed"
    VAR = "var"


FIXED, VAR = Extent.FIXED, Extent.VAR


# ---------------------------------------------------------------- operand levels
@dataclass(frozen=True)
class Stay:
    """The operand stays: it lacks the dim, or a fixed 1 broadcasts against var rows."""

    moves = False
    rows = False
    missing = False

    def words(self, dim) -> tuple:
        return ()

    def __str__(self) -> str:
        return "stays (broadcast)"


@dataclass(frozen=True)
class Strided:
    """A fixed dim: the operand advances by one byte stride (0: a broadcast size 1)."""

    moves = True
    rows = False
    missing = False

    def words(self, dim) -> tuple:
        return (0 if dim.size == 1 else dim.stride,)

    def __str__(self) -> str:
        return "strided"


@dataclass(frozen=True)
class Rows:
    """Var rows read from the arrmeta: start / stop indices of `width` bytes; `stepping`:
    rows of a stepping view (stride != index stride), checked on their first and last
    elements; `shares`: the operand (an earlier one) whose rows these are, read from the
    same index memory over content of the same length (the fields of one collection):
    its start and stop, read and checked once (-1: read its own); `step`: the stride and
    index stride both this many bytes (1, 2, 4, 8 or 16: plain content, a field of small
    records), compiled in as constants instead of read from the words (0: read them)."""

    width: int
    stepping: bool = False
    shares: int = -1
    step: int = 0
    moves = True
    rows = True
    missing = False

    def words(self, dim) -> tuple:
        return (dim.stop_delta, dim.content, dim.index_stride, dim.stride, dim.length,
                dim.row_mask or 0)

    def __str__(self) -> str:
        return "var rows" + (" of a stepping view" if self.stepping else "") + \
            f", int{8 * self.width} indices" + \
            (f", those of input {self.shares}" if self.shares >= 0 else "") + \
            (f", stride {self.step} bytes compiled in" if self.step else "")

    # -- code (`gen` is the nest generator: its builder, dummy bytes and checks)
    def read(self, gen, j: int, m: int, p, f, path, gone=None, own: bool = True):
        """The row whose start index is at p: (length, element-0 address, stride, gone).
        `gone`: whether a row above is missing (an i1, or None); a missing row's bytes are
        never read (zeros instead) and it has length 1, so it pairs with any row. `own`:
        whether a `?var` row's own present byte counts (else it is read as a plain row)."""
        b, c = gen.b, gen.c
        delta, content, istride, stride, length = f[:5]

        def at(q):
            return q if gone is None else b.select(gone, gen.dummy, q)
        if own:
            gone = self.missing_here(gen, p, f, gone, at)
        start = gen.index(at(p), self.width)
        stop = gen.index(at(b.gep(p, [delta])), self.width)
        ok = self.inside(gen, f, start, stop)
        gen.check(ok, 1, m, path, j, start, stop, length)
        n = b.sub(stop, start)
        if gone is not None:
            n = b.select(gone, c(1), n)
        return n, b.gep(b.inttoptr(content, P8), [b.mul(start, istride)]), stride, gone

    def missing_here(self, gen, p, f, gone, at=None):
        """`gone` or'd with this row's own missing state (plain rows are never missing).
        `at(address)`: where to read instead (zeros under a row already missing)."""
        return gone

    def inside(self, gen, f, start, stop):
        """Whether the row's elements lie inside its content (an i1): `0 <= start <= stop
        <= length`, or for a stepping view its first and last elements' byte offsets inside
        `(length - 1) * index_stride` (multiply-adds checked for overflow)."""
        b, c = gen.b, gen.c
        _, _, istride, stride, length = f[:5]
        if not self.stepping:  # unsigned: a negative start or stop fails too
            return b.and_(b.icmp_signed(">=", length, c(0)),
                          b.and_(b.icmp_unsigned("<=", start, stop),
                                 b.icmp_unsigned("<=", stop, length)))
        n = b.sub(stop, start)
        # 0 <= start < length: the first element's offset start * istride cannot overflow
        # (check_extent found all `length` elements in their block)
        within = b.and_(b.icmp_signed("<", start, length), b.icmp_signed("<=", n, length))
        first = b.mul(b.select(within, start, c(0)), istride)
        span = b.mul(b.sub(length, c(1)), istride)
        lo = b.select(b.icmp_signed("<", span, c(0)), span, c(0))
        hi = b.select(b.icmp_signed("<", span, c(0)), c(0), span)
        prod = b.smul_with_overflow(b.sub(n, c(1)), stride)
        last = b.sadd_with_overflow(first, b.extract_value(prod, 0))
        end = b.extract_value(last, 0)
        fine = b.and_(within, b.not_(b.or_(b.extract_value(prod, 1),
                                           b.extract_value(last, 1))))
        fine = b.and_(fine, b.and_(b.icmp_signed(">=", end, lo), b.icmp_signed("<=", end, hi)))
        empty = b.icmp_signed("==", n, c(0))
        return b.and_(b.and_(b.icmp_signed(">=", start, c(0)), b.icmp_signed(">=", n, c(0))),
                      b.or_(empty, fine))


@dataclass(frozen=True)
class MissingRows(Rows):
    """`?var`: rows that may be missing (a present byte per row at the start index's
    address + the row mask offset, word 5); a missing row's indices are never read."""

    missing = True

    def __str__(self) -> str:
        return "?" + super().__str__()

    def missing_here(self, gen, p, f, gone, at=None):
        b = gen.b
        mask = b.gep(p, [f[5]])  # NOTE: `at` selects whole addresses, never an offset
        here = b.icmp_unsigned("==", b.load(mask if at is None else at(mask), align=1),
                               ir.Constant(I8, 0))
        return here if gone is None else b.or_(gone, here)


# ---------------------------------------------------------------- tuple levels
# A tuple level walks the tuples of a row's items instead of its items: the i < j (< k ...)
# combinations of one row (`Combos`) or the product of one row per slot (`Product`). An
# operand there is a `Pick`: its rows read as rows (or a fixed dim) are, and its element for
# the tuple at slot s is item idx[s] of its row; other operands stay, or read the tuple's
# linear number t as their element. The tuples are never stored: the loops run inside the
# kernel's level (`codegen.nest_walk._tuple_loop`).
def tuple_count(gen, tuples, lens: list):
    """(how many tuples (`Combos`, `Product`) rows of lengths `lens` (i64, one per slot)
    hold, whether that count fits an int64), in the kernel (an i64, an i1)."""
    b, c = gen.b, gen.c
    fits = ir.Constant(ir.IntType(1), 1)

    def times(x, y):  # x * y of counts, and whether it overflowed (y > 0 and x > max / y)
        over = b.and_(b.icmp_signed(">", y, c(0)), b.icmp_signed(
            ">", x, b.sdiv(c(2 ** 63 - 1), b.select(b.icmp_signed(">", y, c(0)), y, c(1)))))
        return b.mul(x, y), b.not_(over)
    if isinstance(tuples, Product):
        got = lens[0]
        for ln in lens[1:]:
            got, ok = times(got, ln)
            fits = b.and_(fits, ok)
        return got, fits
    n = tuples.n
    top = b.add(lens[0], c(n - 1)) if tuples.replacement else lens[0]
    got = c(1)
    for q in range(n):  # C(top, n) = prod (top - q) / (q + 1), exact at each step
        step, ok = times(got, b.sub(top, c(q)))
        got, fits = b.sdiv(step, c(q + 1)), b.and_(fits, ok)
    few = b.icmp_signed("<", top, c(n))
    return b.select(few, c(0), got), b.or_(few, fits)


def tuple_bounds(gen, tuples, slot: int, idx: list, lens: list) -> tuple:
    """(first, stop) of slot `slot`'s item index, given the indices of the slots before
    it: 0..L for a product's slot; after (or, with replacement, at) the previous index
    for combinations, leaving room for the slots after it (a row with no tuple, of fewer
    than n items, runs no loop at all)."""
    b, c = gen.b, gen.c
    if isinstance(tuples, Product):
        return c(0), lens[slot]
    last = tuples.n - 1 - slot
    stop = lens[0] if tuples.replacement or not last else b.sub(lens[0], c(last))
    if not slot:
        return c(0), stop
    return (idx[-1] if tuples.replacement else b.add(idx[-1], c(1))), stop


@dataclass(frozen=True)
class AtTuples:
    """Something read at the tuple level of tuples `tuples` (combinations, cartesian) at
    slot `slot`, over `inner`, which it reads as `inner` reads (rows, words, sizes);
    `position`: its value is the item's index, not the item."""

    inner: object
    tuples: object
    slot: int
    position: bool = False

    @property
    def rows(self) -> bool:
        return self.inner.rows

    @property
    def missing(self) -> bool:
        return self.inner.missing

    def __getattr__(self, name: str):  # as the inner level / dim reads it
        if name == "inner" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.inner, name)


@dataclass(frozen=True)
class Pick(AtTuples):
    """An operand at a tuple level: its rows (`inner`: `Rows`, `MissingRows` or `Strided`)
    read as they are, its element the item at the tuple's slot `slot`; `position`: the
    element is that item's index (ak.argcombinations: an int64 value, no memory read)."""

    moves = True

    @property
    def stepping(self) -> bool:
        return getattr(self.inner, "stepping", False)

    def words(self, dim) -> tuple:
        """The inner level's words; a fixed dim adds its size (the tuples' row length)."""
        inner = self.inner.words(dim.inner)
        return inner if self.inner.rows else inner + (dim.inner.size,)

    def __str__(self) -> str:
        what = "index" if self.position else "item"
        return f"{what} {self.slot} of the {self.tuples} over {self.inner}"


@dataclass(frozen=True)
class _AtPositions:
    """An operand's level (`inner`) at the level where an array is taken at the positions
    of spec output `out`: read and checked as `inner` is."""

    inner: Stay | Strided | Rows
    out: int

    def __getattr__(self, name: str):
        # how its rows are read and checked (`width`, `inside`, `missing_here`, ...)
        if name.startswith("__") or name in ("inner", "out"):
            raise AttributeError(name)
        return getattr(self.inner, name)


@dataclass(frozen=True)
class Gathered(_AtPositions):
    """An operand taken at positions at this level: its own row (`inner`: `Strided`,
    `Rows`, `MissingRows`) is read and checked, never paired with the result's; at the
    result's element i it reads its element at the position spec output `out` computes
    there. Words: `inner`'s, and a fixed dim's size after its stride (the positions'
    bound)."""

    def words(self, dim) -> tuple:
        return self.inner.words(dim) if self.rows else (dim.stride, dim.size)

    def __str__(self) -> str:
        return f"{self.inner}, taken at the positions of output {self.out}"


@dataclass(frozen=True)
class Beside(_AtPositions):
    """An operand of an array taken at the positions of spec output `out` at this level
    that is not taken itself (a fixed 1 there: it stretches along the level, read as
    `inner` reads it); above the level its rows are the array's, which the positions'
    rows pair with exactly."""

    def words(self, dim) -> tuple:
        return self.inner.words(dim)

    def __str__(self) -> str:
        return f"{self.inner}, beside the positions of output {self.out}"


# ---------------------------------------------------------------- operand dims (bound data)
@dataclass(frozen=True)
class FixedDimData:
    """A fixed dim of an operand: its size and byte stride."""

    size: int
    stride: int
    rows = False
    missing = False


@dataclass(frozen=True)
class RowsData(VarWords):
    """A var dim of an operand (`?var` when `row_mask` is not None): its arrmeta words."""

    rows = True

    @property
    def missing(self) -> bool:
        return self.row_mask is not None

    def level(self) -> Rows:
        cls = MissingRows if self.missing else Rows
        step = self.stride if self.stride == self.index_stride and \
            self.stride in (1, 2, 4, 8, 16) else 0
        return cls(self.width, self.stride != self.index_stride, step=step)


@dataclass(frozen=True)
class PickDimData(AtTuples):
    """An operand dim read at a tuple level: its own dim (`inner`: `FixedDimData` or
    `RowsData`), the tuples and the slot it reads. A fixed dim's tuple count is fixed too."""

    def level(self) -> Pick:
        inner = self.inner.level() if self.inner.rows else Strided()
        return Pick(inner, self.tuples, self.slot, self.position)


def operand_level(dim, extent: Extent, out: int | None = None, beside: bool = False):
    """The level an operand dim takes under a result level: a fixed 1 against var rows
    stays, any other fixed dim is strided, a var dim reads its rows; taken at the positions
    of spec output `out`, its own dim (`Gathered`); `beside` them, as it is (`Beside`)."""
    if isinstance(dim, PickDimData):
        return dim.level()
    if out is not None and not beside:
        return Gathered(Strided() if not dim.rows else dim.level(), out)
    if dim is None or (not dim.rows and dim.size == 1 and extent is VAR):
        got = Stay()
    else:
        got = Strided() if not dim.rows else dim.level()
    return Beside(got, out) if beside else got


# ---------------------------------------------------------------- modes and passes
@dataclass(frozen=True)
class Keep:
    """Keep the elements of level `level` where spec output `out` (a bool) is true, or
    missing (a missing mask element keeps a missing element): `x[mask]`. Work below and
    after it visits only the kept elements; a result level there has its rows counted
    (their lengths are the kept counts). `array`: the inputs the selected array reads (its
    rows and the mask's pair exactly at every level down to `level`: no row of 1 stretches
    between them). `every_position`: an arg-reduction of the kept elements gives their
    positions among all the row's elements (`x[m][argmin(y[m], keepdims=True)]` then
    gathers x's own rows: x[m] is never stored)."""

    level: int
    out: int
    array: tuple = ()
    every_position: bool = False

    def __str__(self) -> str:
        return f"keep{self.level} where output {self.out}" + (
            ", positions in the whole row" if self.every_position else "")


def _keeping(name: str, keep) -> str:
    return name if keep is None else f"{name}, {keep}"


@dataclass(frozen=True)
class Map:
    """Elementwise: one value (and present byte for `?T`) per result element. `values` > 1:
    the body's first `values` outputs, each into a result of its own (no `?T` operand, no
    keep): several results over the same rows in one pass."""

    keep: Keep | None = None
    values: int = 1
    axes = ()

    def __str__(self) -> str:
        return _keeping("map" if self.values == 1 else f"map of {self.values} results",
                        self.keep)


@dataclass(frozen=True)
class Scan(Map):
    """A running fold along the last level: each element is the fold (`combine`: "add" or
    "multiply") of its row's present values up to it; a missing value stays missing and
    folds nothing. Rows, missing rows and result structure are those of `Map`; a row is
    never split between threads."""

    combine: str = "add"

    def __str__(self) -> str:
        return f"scan {self.combine}"


@dataclass(frozen=True)
class Reduce:
    """Fold the last level: one value per element of the level above."""

    keep: Keep | None = None
    axes = ()

    def __str__(self) -> str:
        return _keeping("reduce", self.keep)


@dataclass(frozen=True)
class Total:
    """Fold every level: one partial result per part (the caller combines the parts)."""

    keep: Keep | None = None
    axes = ()

    def __str__(self) -> str:
        return _keeping("all", self.keep)


@dataclass(frozen=True)
class Fold:
    """Fold levels `axes` (any set but the last level alone or all)."""

    axes: tuple
    keep = None

    def splits_columns(self, levels, kinds) -> bool:
        """Whether a part of this fold is a range [lo, hi) of the last level's elements
        instead of level-0 rows: a fold along level 0 that keeps the last level, every
        level fixed and every operand strided (or staying) there. Each part then folds
        every row of its own columns: level 0 is folded, yet its results spread over
        threads."""
        return (0 in self.axes and len(levels) - 1 not in self.axes and
                all(lv is FIXED for lv in levels) and
                all(type(lv) in (Strided, Stay) for ks in kinds for lv in ks))

    def __str__(self) -> str:
        return "fold" + ",".join(map(str, self.axes))


@dataclass(frozen=True)
class Bins:
    """Histograms: fold every level into private counters per part (the caller adds the
    parts' counters up; no counter is shared between threads). The body's outputs are, per
    histogram, its bin index (int32 or int64; a value outside 0..n-1 is not counted), then for a
    `corrected` one the value (float64: an index of n + 1 + e is the estimate e of a
    value near an edge, corrected against the edges as numpy.histogram corrects it), then for a
    `weighted` one its weight (float64, added instead of 1). A missing input (`?T`) or a
    missing row counts nowhere. Kernel data word 4 is the address of the bins table, int64:
    the counters of one part, then per histogram its bin count n, first bin and where its
    n + 1 edges (float64) start in the table. Bin i of a histogram is
    `codegen.nest_bins.BIN_LANES` adjacent counters at (first + i) * lanes; bin n counts
    the values in no bin (read by nobody).

    `after` (a spec): histograms of row folds. The body's one output is folded over the
    last level (its reduction), and at the end of each row `after` computes the outputs
    above from the row's fold (its input 0) and the operands `after_inputs` names (its
    inputs 1, 2, ...: operand numbers of the nest, read at the row); its parameters
    follow the body's. A row's fold that has no value (min of an empty row) counts
    nowhere."""

    weighted: tuple
    corrected: tuple = ()
    after: Any = None
    after_inputs: tuple = ()
    axes = ()
    keep = None

    def slots(self) -> list:
        """Per histogram its body outputs: (index, value or None, weight or None)."""
        got, o = [], 0
        for h, w in enumerate(self.weighted):
            v = self.corrected[h] if self.corrected else False
            got.append((o, o + 1 if v else None, o + 1 + v if w else None))
            o += 1 + bool(v) + bool(w)
        return got

    @property
    def outputs(self) -> int:
        return len(self.weighted) + sum(map(bool, self.weighted)) + sum(map(bool,
                                                                            self.corrected))

    def __str__(self) -> str:
        return "histograms " + ",".join(
            ("weighted" if w else "counts") + (" by estimate" if v else "")
            for w, v in zip(self.weighted, self.corrected or (False,) * len(self.weighted))) + (
            "" if self.after is None else " of row folds")


def tuple_kind(kinds, k: int):
    """The tuples (`Combos`, `Product`) level k of a nest walks, or None: those of its
    `Pick` operands (one kind per level: the plan refuses two)."""
    for ks in kinds:
        if isinstance(ks[k], Pick):
            return ks[k].tuples
    return None


@dataclass(frozen=True)
class Fill:
    """Compute the values (every result row checked against the counted lengths).
    `present_step`: bytes between an elementwise result's present bytes (its item size
    where they go straight into the result's mask, one value apart: `docs/layout.md`)."""

    present_step: int = 1
    counting = False
    marking = False
    level = -1

    def __str__(self) -> str:
        return "fill" if self.present_step == 1 else \
            f"fill (present bytes {self.present_step} apart)"


@dataclass(frozen=True)
class Check:
    """The fill pass's walk over the rows with nothing written: rows that cannot pair raise
    before a large result is allocated."""

    counting = False
    marking = False
    level = -1

    def __str__(self) -> str:
        return "check"


@dataclass(frozen=True)
class Count:
    """Count the rows of result var level `level` (and of those above it)."""

    level: int
    counting = True
    marking = False

    def __str__(self) -> str:
        return f"count{self.level}"


@dataclass(frozen=True)
class Mark:
    """Count, then mark a row missing where an element takes a where() branch's missing row
    (its length becomes -2 - n)."""

    level: int
    counting = True
    marking = True

    def __str__(self) -> str:
        return f"mark{self.level}"


__all__ = ["Beside", "Bins", "Check", "Combos", "Count", "Extent", "FIXED", "Fill", "FixedDimData",
           "Fold", "Gathered", "Keep", "Map", "Mark", "MissingRows", "Pick", "PickDimData",
           "Product", "Reduce", "Rows", "RowsData", "Scan", "Stay", "Strided", "Total", "VAR",
           "WORDS", "operand_level", "tuple_kind"]

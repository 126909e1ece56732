"""Column trees: one node class per kind of items, with their lengths, spans, takes,
slices and blanks, the primitives the row operations (`restructure`) and the nest's
gathers are built from.

A tree describes a sequence of items (`lazyk.arrays.columns` builds it from an array):
`Leaf(values)` | `Masked(present, child)` | `Lists(offsets, child)` |
`Regular(size, child, count)` | `Text(type_name, offsets, chars)` | `Record(names, children)`.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

from lazyk import hooks
from lazyk.arrays.array import masked_empty
from lazyk.arrays.memory import next_block
from lazyk.arrays.outputs import empty
from lazyk.errors import NotSupportedError

I64 = np.int64
# NumPy row work shared by the steps of one evaluation (`rows_memo`): each step evaluates
# on its own, and the fields of one collection would each find the same rows again.
ROWS_MEMO: ContextVar = ContextVar("lazyk_rows_memo", default=None)


def rows_memo_dict() -> dict | None:
    """The dict of the enclosing `rows_memo`, None outside one."""
    return ROWS_MEMO.get()


@contextmanager
def rows_memo():
    """Within it, the steps of an evaluation share their NumPy row work (`rows_memo_dict`);
    nested uses share the outermost one."""
    if ROWS_MEMO.get() is not None:
        yield
        return
    token = ROWS_MEMO.set({"blocks from": next_block()})  # (memory made within it)
    try:
        yield
    finally:
        ROWS_MEMO.reset(token)


def rising(offsets: np.ndarray, length: int) -> bool:
    """Whether every row of `offsets` lies in 0..length: offsets that never decrease are
    bounded by their first and last (one native pass on the thread pool: cheaper than
    `check_rows` on the starts and stops, which says which row is bad). Once per offsets
    in an evaluation (`rows_memo`: the fields of a collection, the steps of one evaluation
    read the same offsets)."""
    if len(offsets) < 2 or int(offsets[0]) < 0 or int(offsets[-1]) > length:
        return len(offsets) < 2
    memo = rows_memo_dict()
    if memo is None:
        return hooks.rows_rise(offsets)
    seen, key = memo.setdefault("rising", {}), memory_key(offsets)
    if key in seen:
        return True
    if not hooks.rows_rise(offsets):
        return False
    seen[key] = offsets  # (held: its memory stays these offsets')
    return True


def memory_key(a: np.ndarray) -> tuple:
    """What identifies the values of NumPy array `a` while it lives and nothing writes to
    it (within one evaluation): its memory and layout; another view of that memory with
    the same layout has the same values."""
    iface = a.__array_interface__
    return iface["data"][0], a.shape, iface["strides"], a.dtype.str


class Column:
    """A node of a column tree: the items of one level (`kind`: its name in messages)."""

    __slots__ = ()
    kind = "node"

    def __getstate__(self):  # (slots pickle with every protocol, 0 and 1 too)
        return object.__getstate__(self)

    def length(self) -> int:
        """How many items the node describes."""
        raise NotSupportedError(f"a column of kind {self.kind!r}")

    def unwrap(self) -> tuple:
        """(present mask or None, the node under it)."""
        return None, self

    def slice(self, lo: int, hi: int) -> Column:
        """Items lo..hi - 1 (views where the node allows)."""
        return self.take(np.arange(lo, hi, dtype=I64))

    def at(self, depth: int, fn) -> Column:
        """The node with `fn` applied to the node `depth` list levels down (options above
        it are kept; a missing list there stays missing)."""
        if depth == 0:
            return fn(self)
        raise NotSupportedError(f"no lists {depth} levels below a {self.kind} column")


class Leaf(Column):
    """NumPy `values`, one item each (their first axis)."""

    __slots__ = ("values",)
    kind = "numpy"

    def __init__(self, values: np.ndarray):
        self.values = values

    def length(self) -> int:
        return len(self.values)

    def take(self, idx: np.ndarray) -> Leaf:  # (np.take: about twice as fast as values[idx])
        return Leaf(np.take(self.values, np.asarray(idx, I64), axis=0))

    def slice(self, lo: int, hi: int) -> Leaf:
        return Leaf(self.values[lo:hi])

    def blank(self, n: int) -> Leaf:
        return Leaf(np.zeros(n, self.values.dtype))


class Masked(Column):
    """The items of `child`, missing where `present` (bool, one per item) is False."""

    __slots__ = ("present", "child")
    kind = "option"

    def __init__(self, present: np.ndarray, child: Column):
        self.present, self.child = present, child

    def length(self) -> int:
        return len(self.present)

    def unwrap(self) -> tuple:
        return self.present, self.child

    def take(self, idx: np.ndarray) -> Masked:
        idx = np.asarray(idx, I64)
        values = self.child.values if type(self.child) is Leaf else None
        if values is None or values.ndim != 1 or values.dtype.kind not in "biufcmM":
            return Masked(np.take(self.present, idx), self.child.take(idx))
        leaf = option_leaf(len(idx), values.dtype)  # (into lazyk's `?T` form: no copy later)
        np.take(self.present, idx, out=leaf.present)  # (checks idx: `clip` for the values)
        np.take(values, idx, out=leaf.child.values, mode="clip")
        return leaf

    def slice(self, lo: int, hi: int) -> Masked:
        return Masked(self.present[lo:hi], self.child.slice(lo, hi))

    def blank(self, n: int) -> Masked:
        return Masked(np.zeros(n, bool), self.child.blank(n))

    def at(self, depth: int, fn) -> Column:
        return fn(self) if depth == 0 else Masked(self.present, self.child.at(depth, fn))


class OptionLeaf(Masked):
    """A `Masked` over a `Leaf`, over the memory of a new lazyk array `n * ?T` (`array`),
    made by `option_leaf`: once filled in place, it is that array, with no copy
    (`columns.build_columns`)."""

    __slots__ = ("array",)


def option_leaf(n: int, dtype: np.dtype) -> OptionLeaf:
    """`n` values of `dtype` (numbers) to fill in place: write every value into
    `leaf.child.values` and every present flag into `leaf.present` (neither is zeroed)."""
    got, values, present = masked_empty((n,), dtype, filled=True)
    leaf = OptionLeaf(present, Leaf(values))
    leaf.array = got
    return leaf


class Lists(Column):
    """Lists of the items of `child`: list i is items offsets[i]..offsets[i + 1] - 1."""

    __slots__ = ("offsets", "child")
    kind = "list"

    def __init__(self, offsets: np.ndarray, child: Column):
        self.offsets, self.child = offsets, child

    def length(self) -> int:
        return len(self.offsets) - 1

    def spans(self) -> tuple[np.ndarray, np.ndarray]:
        """(starts, lengths) in the child of every list (int64)."""
        off = np.asarray(self.offsets, dtype=I64)
        # (into a reused block: a fresh one of a million rows faults 2,000 pages in)
        return off[:-1], np.subtract(off[1:], off[:-1], out=empty(len(off) - 1, I64))

    def take(self, idx: np.ndarray) -> Lists:
        starts, lens = self.spans()
        idx = np.asarray(idx, I64)
        return rows_at(self.child, starts[idx], lens[idx])

    def slice(self, lo: int, hi: int) -> Lists:
        return Lists(self.offsets[lo:hi + 1], self.child)

    def blank(self, n: int) -> Lists:
        return Lists(np.zeros(n + 1, I64), self.child.blank(0))

    def at(self, depth: int, fn) -> Column:
        return fn(self) if depth == 0 else Lists(self.offsets, self.child.at(depth - 1, fn))


class Regular(Column):
    """Lists of `size` items of `child` each; `count`: how many (rows of size 0 carry it,
    their child cannot tell; None: the child's length over `size`)."""

    __slots__ = ("size", "child", "count")
    kind = "regular"

    def __init__(self, size: int, child: Column, count: int | None = None):
        self.size, self.child, self.count = size, child, count

    def length(self) -> int:
        if self.count is not None:
            return int(self.count)
        return self.child.length() // self.size if self.size else 0

    def spans(self) -> tuple[np.ndarray, np.ndarray]:
        n, size = self.length(), self.size
        return np.arange(n, dtype=I64) * size, np.full(n, size, I64)

    def take(self, idx: np.ndarray) -> Regular:
        idx, size = np.asarray(idx, I64), self.size
        if size == 1:  # (a per-event value under a dim of 1: its items' own positions)
            return Regular(1, self.child.take(idx), len(idx))
        inner = (idx[:, None] * size + np.arange(size, dtype=I64)).reshape(-1)
        return Regular(size, self.child.take(inner), len(idx))

    def blank(self, n: int) -> Regular:
        return Regular(self.size, self.child.blank(n * self.size), n)

    def at(self, depth: int, fn) -> Column:
        if depth == 0:
            return fn(self)
        return Regular(self.size, self.child.at(depth - 1, fn), self.length())


class Text(Column):
    """Strings (`type_name` "string") or bytes ("bytes"): item i is the uint8 `chars`
    offsets[i]..offsets[i + 1] - 1."""

    __slots__ = ("type_name", "offsets", "chars")
    kind = "text"

    def __init__(self, type_name: str, offsets: np.ndarray, chars: np.ndarray):
        self.type_name, self.offsets, self.chars = type_name, offsets, chars

    length = Lists.length
    spans = Lists.spans

    def take(self, idx: np.ndarray) -> Text:
        starts, lens = self.spans()
        idx = np.asarray(idx, I64)
        starts, lens = starts[idx], lens[idx]
        return Text(self.type_name, offsets_of(lens), self.chars[ranges(starts, lens)])

    def blank(self, n: int) -> Text:
        return Text(self.type_name, np.zeros(n + 1, I64), np.zeros(0, np.uint8))


class Record(Column):
    """Records: field `names[k]` of item i is item i of `children[k]` (a tuple's names are
    its positions 0, 1, ... as ints)."""

    __slots__ = ("names", "children")
    kind = "record"

    def __init__(self, names, children: list):
        self.names, self.children = names, children

    def length(self) -> int:
        return self.children[0].length() if self.children else 0

    def take(self, idx: np.ndarray) -> Record:
        idx = np.asarray(idx, I64)
        return Record(self.names, [c.take(idx) for c in self.children])

    def blank(self, n: int) -> Record:
        return Record(self.names, [c.blank(n) for c in self.children])


class Unread(Column):
    """The `count` items below lists that `columns(..., lists=...)` left unread."""

    __slots__ = ("count",)
    kind = "unread"

    def __init__(self, count: int):
        self.count = count

    def length(self) -> int:
        return int(self.count)

    def take(self, idx: np.ndarray) -> Unread:
        return Unread(len(idx))


def ranges(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The positions starts[i] + 0 .. lens[i] - 1 of every i, one after the other (int64)."""
    starts = np.asarray(starts, I64)
    lens = np.asarray(lens, I64)
    total = int(lens.sum())
    if not total:
        return np.zeros(0, I64)
    if contiguous(starts, lens):  # lists one after the other (offsets): one run
        return np.arange(int(starts[0]), int(starts[0]) + total, dtype=I64)
    # a running sum of steps of 1 that jumps to each list's start at its first position
    # (no np.repeat, which took 2.5x as long over a million short lists)
    full = lens > 0
    s, n = starts[full], lens[full]
    out = np.ones(total, I64)
    out[0] = s[0]
    if len(s) > 1:
        out[np.cumsum(n[:-1])] = s[1:] - s[:-1] - n[:-1] + 1
    return np.cumsum(out, out=out)


def contiguous(starts: np.ndarray, lens: np.ndarray) -> bool:
    """Whether each list starts where the one before it stops."""
    return len(starts) < 2 or bool(np.array_equal(starts[1:], starts[:-1] + lens[:-1]))


def offsets_of(lens: np.ndarray) -> np.ndarray:
    off = np.zeros(len(lens) + 1, I64)
    np.cumsum(lens, out=off[1:])
    return off


def rows_at(child: Column, starts: np.ndarray, lens: np.ndarray) -> Lists:
    """The rows of `child`'s items at `starts` (`lens` items each), one after the other."""
    return Lists(offsets_of(lens), child.take(ranges(starts, lens)))


def take_or_missing(node: Column, idx: np.ndarray, valid: np.ndarray) -> Masked:
    """The items at `idx` where `valid`, missing elsewhere (an option of the taken items
    merged into it)."""
    valid = np.asarray(valid, bool)
    if not node.length():
        return Masked(np.zeros(len(idx), bool), node.blank(len(idx)).unwrap()[1])
    if isinstance(node, Leaf) and node.values.ndim == 1 and \
            node.values.dtype.kind in "biufcmM":
        # into lazyk's `?T` form in place; a missing value's bytes are never read, so any
        # item will do there (`clip`)
        leaf = option_leaf(len(idx), node.values.dtype)
        np.take(node.values, idx, out=leaf.child.values, mode="clip")
        leaf.present[...] = valid
        return leaf
    got = node.take(np.where(valid, idx, 0))
    if isinstance(got, Masked):
        return Masked(got.present & valid, got.child)
    return Masked(valid, got)


def without_options(tree: Column, lo: int, hi: int, rows: tuple) -> Column | None:
    """`tree` with its option levels dropped (but the `?var` rows of the dims that `rows`
    flags, from the tree's first dim on), or None where one of the items `lo:hi` it
    describes (and those below them) is missing. Items no row reads are not looked at (a
    slice of data with missing values elsewhere)."""
    if isinstance(tree, Masked):
        if isinstance(tree.child, Lists) and rows[:1] == (True,):  # (`?var` wanted)
            child = without_options(tree.child, lo, hi, rows)
            return None if child is None else Masked(tree.present, child)
        return without_options(tree.child, lo, hi, rows) if tree.present[lo:hi].all() \
            else None
    if isinstance(tree, Lists):
        off = np.asarray(tree.offsets)
        child = without_options(tree.child, int(off[lo]), int(off[hi]), rows[1:]) \
            if hi > lo else without_options(tree.child, 0, 0, rows[1:])
        return None if child is None else Lists(tree.offsets, child)
    if isinstance(tree, Regular):
        child = without_options(tree.child, lo * tree.size, hi * tree.size, rows[1:])
        return None if child is None else Regular(tree.size, child, tree.count)
    return tree if isinstance(tree, Leaf) else None


def _emptied(tree, present: np.ndarray):
    """`tree` with the lists of its missing rows (`present` false) empty: what a missing
    row hides differs from field to field (a selection keeps it in one, not another)."""
    if not isinstance(tree, Lists):
        return tree
    starts, lens = tree.spans()
    if not lens[~np.asarray(present, bool)].any():
        return tree
    lens = np.where(present, lens, 0)
    off = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(lens, out=off[1:])
    return Lists(off, tree.child.take(ranges(starts, lens)))


def zipped(trees: list, names: list, depth: int):
    """The column tree of records over the fields' trees (of the items of the outer dim),
    the records `depth` list levels down; None where the fields' lists differ."""
    if depth == 0:
        if len({t.length() for t in trees}) > 1:
            return None
        return Record(tuple(names), trees)
    first = trees[0]
    if len({type(t) for t in trees}) != 1:
        return None
    if isinstance(first, Masked):
        if any(not np.array_equal(t.present, first.present) for t in trees[1:]):
            return None
        inner = zipped([_emptied(t.child, first.present) for t in trees], names, depth)
        return None if inner is None else Masked(first.present, inner)
    if isinstance(first, Regular):
        if len({t.size for t in trees}) != 1:
            return None
        inner = zipped([t.child for t in trees], names, depth - 1)
        return None if inner is None else Regular(first.size, inner, first.length())
    if not isinstance(first, Lists):
        return None
    off = first.offsets
    if all(np.array_equal(t.offsets, off) for t in trees[1:]):
        inner = zipped([t.child for t in trees], names, depth - 1)
        return None if inner is None else Lists(off, inner)
    lens = [t.spans()[1] for t in trees]
    if any(not np.array_equal(ln, lens[0]) for ln in lens[1:]):
        return None
    kids = [t.child.take(ranges(t.spans()[0], ln)) for t, ln in zip(trees, lens)]
    inner = zipped(kids, names, depth - 1)
    if inner is None:
        return None
    off = np.zeros(len(lens[0]) + 1, np.int64)
    np.cumsum(lens[0], out=off[1:])
    return Lists(off, inner)

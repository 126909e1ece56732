"""Column trees' items: lengths, spans, takes, slices and blanks, the primitives the row
operations (`restructure`) and the nest's gathers are built from.

A tree describes a sequence of items (`lazyk.arrays.columns` builds it from an array):
("numpy", values) | ("option", present, child) | ("list", offsets, child) |
("regular", size, child[, count]) | ("text", kind, offsets, characters) |
("record", names, [child, ...]).
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

from lazyk import hooks
from lazyk.arrays.array import Array, masked_empty
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
    token = ROWS_MEMO.set({})
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
    seen = None if memo is None else memo.setdefault("rising", {})
    key = memory_key(offsets)
    if seen is not None and key in seen:
        return True
    if not hooks.rows_rise(offsets):
        return False
    if seen is not None:
        seen[key] = offsets  # (held: its memory stays these offsets')
    return True


def memory_key(a: np.ndarray) -> tuple:
    """What identifies the values of NumPy array `a` while it lives and nothing writes to
    it (within one evaluation): its memory and layout; another view of that memory with
    the same layout has the same values."""
    iface = a.__array_interface__
    return iface["data"][0], a.shape, iface["strides"], a.dtype.str


class OptionLeaf(tuple):
    """An ("option", present, ("numpy", values)) node over the memory of a new lazyk array
    `n * ?T` (`array`), made by `option_leaf`: once filled in place, it is that array, with
    no copy (`columns.build_columns`)."""

    array: Array


def option_leaf(n: int, dtype: np.dtype) -> OptionLeaf:
    """`n` missing values of `dtype` (numbers) to fill in place: write the values into
    `leaf[2][1]` and the present flags into `leaf[1]`."""
    got, values, present = masked_empty((n,), dtype)
    leaf = OptionLeaf(("option", present, ("numpy", values)))
    leaf.array = got
    return leaf


def length(node: tuple) -> int:
    """How many items `node` describes."""
    kind = node[0]
    if kind == "numpy":
        return len(node[1])
    if kind == "option":
        return len(node[1])
    if kind in ("list", "text"):
        return len(node[1 if kind == "list" else 2]) - 1
    if kind == "regular":
        if len(node) > 3:
            return int(node[3])
        return length(node[2]) // node[1] if node[1] else 0
    if kind == "record":
        return length(node[2][0]) if node[2] else 0
    raise NotSupportedError(f"a column of kind {kind!r}")


def spans(node: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(starts, lengths) in the child of every list of a "list" / "regular" / "text" node
    (int64)."""
    kind = node[0]
    if kind == "regular":
        n, size = length(node), node[1]
        return np.arange(n, dtype=I64) * size, np.full(n, size, I64)
    off = np.asarray(node[1] if kind == "list" else node[2], dtype=I64)
    # (into a reused block: a fresh one of a million rows faults 2,000 pages in)
    return off[:-1], np.subtract(off[1:], off[:-1], out=empty(len(off) - 1, I64))


def ranges(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The positions starts[i] + 0 .. lens[i] - 1 of every i, one after the other (int64)."""
    starts = np.asarray(starts, I64)
    lens = np.asarray(lens, I64)
    total = int(lens.sum())
    if not total:
        return np.zeros(0, I64)
    if contiguous(starts, lens):  # lists one after the other (offsets): one run
        return np.arange(int(starts[0]), int(starts[0]) + total, dtype=I64)
    ends = np.cumsum(lens)
    return np.arange(total, dtype=I64) + np.repeat(starts - (ends - lens), lens)


def contiguous(starts: np.ndarray, lens: np.ndarray) -> bool:
    """Whether each list starts where the one before it stops."""
    return len(starts) < 2 or bool(np.array_equal(starts[1:], starts[:-1] + lens[:-1]))


def items(node: tuple, idx: np.ndarray) -> np.ndarray:
    """`node[1][idx]` of a "numpy" node for increasing positions `idx` (`ranges`): a view
    where they are one run."""
    if len(idx) and int(idx[-1]) - int(idx[0]) == len(idx) - 1 and \
            (len(idx) < 2 or int(idx[1]) == int(idx[0]) + 1):
        return node[1][int(idx[0]):int(idx[0]) + len(idx)]
    return node[1][idx]


def offsets_of(lens: np.ndarray) -> np.ndarray:
    off = np.zeros(len(lens) + 1, I64)
    np.cumsum(lens, out=off[1:])
    return off


def rows_at(child: tuple, starts: np.ndarray, lens: np.ndarray) -> tuple:
    """A "list" node of the rows of `child`'s items at `starts` (`lens` items each), one
    after the other."""
    return ("list", offsets_of(lens), take(child, ranges(starts, lens)))


def take(node: tuple, idx: np.ndarray) -> tuple:
    """The items at positions `idx` (valid int64 positions, in any order, repeats too)."""
    idx = np.asarray(idx, I64)
    kind = node[0]
    if kind == "numpy":  # (np.take: about twice as fast as node[1][idx])
        return ("numpy", np.take(node[1], idx, axis=0))
    if kind == "option":
        return ("option", np.take(node[1], idx), take(node[2], idx))
    if kind == "record":
        return ("record", node[1], [take(c, idx) for c in node[2]])
    if kind == "regular":
        size = node[1]
        inner = (idx[:, None] * size + np.arange(size, dtype=I64)).reshape(-1)
        return ("regular", size, take(node[2], inner), len(idx))
    starts, lens = spans(node)
    starts, lens = starts[idx], lens[idx]
    if kind == "text":
        return ("text", node[1], offsets_of(lens), node[3][ranges(starts, lens)])
    return ("list", offsets_of(lens), take(node[2], ranges(starts, lens)))


def slice_items(node: tuple, lo: int, hi: int) -> tuple:
    """Items lo..hi - 1 (views where the node allows)."""
    kind = node[0]
    if kind == "numpy":
        return ("numpy", node[1][lo:hi])
    if kind == "option":
        return ("option", node[1][lo:hi], slice_items(node[2], lo, hi))
    if kind == "list":
        return ("list", node[1][lo:hi + 1], node[2])
    return take(node, np.arange(lo, hi, dtype=I64))


def blank(node: tuple, n: int) -> tuple:
    """`n` items of the structure of `node`, all missing where they may be, empty lists,
    zeros (what a missing item holds)."""
    kind = node[0]
    if kind == "numpy":
        return ("numpy", np.zeros(n, node[1].dtype))
    if kind == "option":
        return ("option", np.zeros(n, bool), blank(node[2], n))
    if kind == "record":
        return ("record", node[1], [blank(c, n) for c in node[2]])
    if kind == "regular":
        return ("regular", node[1], blank(node[2], n * node[1]), n)
    if kind == "text":
        return ("text", node[1], np.zeros(n + 1, I64), np.zeros(0, np.uint8))
    return ("list", np.zeros(n + 1, I64), blank(node[2], 0))


def take_or_missing(node: tuple, idx: np.ndarray, valid: np.ndarray) -> tuple:
    """The items at `idx` where `valid`, missing elsewhere: an "option" node (an option
    of the taken items merged into it)."""
    valid = np.asarray(valid, bool)
    if not length(node):
        return ("option", np.zeros(len(idx), bool), unwrap(blank(node, len(idx)))[1])
    if node[0] == "numpy" and node[1].ndim == 1 and node[1].dtype.kind in "biufcmM":
        # into lazyk's `?T` form in place; a missing value's bytes are never read, so any
        # item will do there (`clip`)
        leaf = option_leaf(len(idx), node[1].dtype)
        np.take(node[1], idx, out=leaf[2][1], mode="clip")
        leaf[1][...] = valid
        return leaf
    got = take(node, np.where(valid, idx, 0))
    if got[0] == "option":
        return ("option", got[1] & valid, got[2])
    return ("option", valid, got)


def at(node: tuple, depth: int, fn) -> tuple:
    """`node` with `fn` applied to the node `depth` list levels down (options above it are
    kept; a missing list there stays missing)."""
    if depth == 0:
        return fn(node)
    kind = node[0]
    if kind == "option":
        return ("option", node[1], at(node[2], depth, fn))
    if kind == "list":
        return ("list", node[1], at(node[2], depth - 1, fn))
    if kind == "regular":
        return ("regular", node[1], at(node[2], depth - 1, fn), length(node))
    raise NotSupportedError(f"no lists {depth} levels below a {kind} column")


def unwrap(node: tuple) -> tuple:
    """(present mask or None, the node under it)."""
    if node[0] == "option":
        return node[1], node[2]
    return None, node

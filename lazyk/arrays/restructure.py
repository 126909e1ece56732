"""Restructuring ragged data with NumPy over column trees (`lazyk.arrays.trees`): the row
operations that only move values (`num`, `flatten`, `firsts`, `local_index`,
`concatenate`, `is_none`, `pad_none`; `sort` in `lazyk.arrays.sorting`), vectorized over
all rows at once, no Python loop per row; lists read through their offsets are reused in
place where the result keeps them (zero-copy). Every function here takes and returns
trees; the root describes the items of the array's outer dim, so the lists at `axis` a
(>= 1) are the items of the node `a - 1` list levels down (`Column.at`).
"""
from __future__ import annotations

import numpy as np

from lazyk import types as T
from lazyk.arrays import arrmeta as M
from lazyk.arrays import memory
from lazyk.arrays.array import Array
from lazyk.arrays.trees import (
    I64,
    Column,
    Leaf,
    Lists,
    Masked,
    Record,
    Regular,
    Text,
    contiguous,
    offsets_of,
    option_leaf,
    ranges,
    rising,
    take_or_missing,
)
from lazyk.errors import NotSupportedError, ShapeError


def row_items(node: Lists) -> Column:
    """The items of the one list of `Lists` of one list (an array `var * X`)."""
    starts, lens = node.spans()
    return node.child.slice(int(starts[0]), int(starts[0] + lens[0]))


# ---------------------------------------------------------------- the operations
def num(tree: Column, axis: int) -> Column:
    """`ak.num` at `axis` >= 1: each list's length (int64); a missing list stays missing."""
    def lengths(node):
        mask, inner = node.unwrap()
        if mask is None:
            return Leaf(inner.spans()[1].astype(I64, copy=False))
        got = option_leaf(len(mask), I64)  # (computed into lazyk's `?int64` form)
        if isinstance(inner, Lists):
            np.subtract(inner.offsets[1:], inner.offsets[:-1], out=got.child.values)
        else:
            got.child.values[...] = inner.spans()[1]
        got.present[...] = mask
        return got
    return tree.at(axis - 1, lengths)


def missing_rows_bounds(a: Array) -> tuple | None:
    """(starts, stops) of `N * ?var` rows in offsets form as `N * ?int` views whose missing
    bytes are the rows' own (a row's missing byte lies at one distance from its start
    index, and one word less from its stop), the rows checked; None for other layouts."""
    t, meta, owner = a.type, a.meta, a.owner
    if not isinstance(t.elem.elem, T.VarDim) or not isinstance(owner, memory.MemoryBlock):
        return None
    n, stride, gone = t.size, meta[1], meta[2]
    rows = M.rows_at(meta, 3, gone)
    w = rows.width
    if not n or not stride == w == rows.stop_delta or rows.stride != rows.index_stride:
        return None
    offsets = memory.view(a.ptr, (n + 1,), (w,), M.INDEX_DTYPES[w], owner, True)
    if not rising(offsets, rows.length):
        M.check_rows(offsets[:-1], offsets[1:], rows)  # (names the first bad row)
    index = T.FixedDim(n, T.Option(M.type_from_numpy(M.INDEX_DTYPES[w])))
    return tuple(Array.from_parts(index, (n, stride, gone - k), a.ptr + k, owner, True)
                 for k in (0, w))


def present_leaves(tree: Column) -> Column:
    """Every present value under `tree`, in order (missing values and rows dropped); a
    slice of the values (no copy) while no level is missing anything."""
    lo, hi, node = 0, tree.length(), tree
    while isinstance(node, (Lists, Regular)):  # (a run of items: the next level's run)
        if isinstance(node, Lists):
            lo, hi = (int(node.offsets[lo]), int(node.offsets[hi])) if hi > lo else (0, 0)
        else:
            lo, hi = lo * node.size, hi * node.size
        node = node.child
    if isinstance(node, (Leaf, Text)):
        return node.slice(lo, hi)
    idx = np.arange(lo, hi, dtype=I64)
    while True:
        if isinstance(node, Masked):
            idx = idx[node.present[idx]]
        elif isinstance(node, (Lists, Regular)):
            starts, lens = node.spans()
            idx = ranges(starts[idx], lens[idx])
        elif isinstance(node, (Leaf, Text)):  # (strings: their {begin, size} taken)
            return node.take(idx)
        else:
            raise NotSupportedError(f"flatten(axis=None) of {node.kind} columns")
        node = node.child


def flatten(tree: Column, axis: int | None) -> Column:
    """`ak.flatten`: None: every present value; 0: the present items; >= 1: the lists at
    `axis` joined into their parents (missing lists among them dropped)."""
    if axis is None:
        return present_leaves(tree)
    if axis == 0:
        mask, inner = tree.unwrap()
        return inner if mask is None else inner.take(np.flatnonzero(mask))
    if axis == 1:  # the outer items' lists joined into one
        return _join(Lists(np.array([0, tree.length()], I64), tree)).child
    return tree.at(axis - 2, _join)


def flat_view(a: Array) -> Array | None:
    """`ak.flatten(a, axis=1)` of `N * var * T` rows in offsets form (each row's stop the
    next row's start) over content of one stride: a view of the content the rows cover (no
    copy, as NumPy's ravel), any T (`?T`, strings, records); None for other layouts."""
    t = a.type
    if type(a) is not Array or not (isinstance(t, T.FixedDim) and
                                    isinstance(t.elem, T.VarDim)) or t.size == 0:
        return None  # (records read from columns flatten their columns: no structs built)
    meta = a.meta
    n, outer, ref, width, stop_delta, content, index_stride, stride, length = meta[:9]
    if width not in (4, 8) or stop_delta != width or outer != width or stride != index_stride:
        return None
    block = memory.lookup(ref)
    off = memory.view(a.ptr, (n + 1,), (width,), np.int32 if width == 4 else np.int64,
                      a.owner, True)
    lo, hi = int(off[0]), int(off[-1])
    if not 0 <= lo <= hi <= length or (np.diff(off) < 0).any():
        return None  # (the rows' own check names the bad one)
    return Array.from_parts(T.FixedDim(hi - lo, t.elem.elem), (hi - lo, stride) + meta[9:],
                            content + lo * index_stride, block, a.readonly, check_strings=False)


def _join(node: Column) -> Column:
    """The lists of `node` (whose items are lists) with their lists' items joined."""
    mask, outer = node.unwrap()
    if not isinstance(outer, (Lists, Regular)):
        raise NotSupportedError(f"flatten of {outer.kind} columns")
    inner_mask, inner = outer.child.unwrap()
    if not isinstance(inner, (Lists, Regular, Text)):
        raise NotSupportedError(f"flatten of {inner.kind} columns")
    if isinstance(inner, Text):
        raise NotSupportedError("flatten of strings into characters")
    s1, n1 = outer.spans()
    s2, n2 = inner.spans()
    runs = contiguous(s1, n1)  # the outer lists cover runs of inner lists
    if inner_mask is None and runs and isinstance(inner, Lists) and \
            isinstance(outer, Lists) and len(s1) == 1:
        # one outer list (the top): its inner lists' items, a slice of their content
        off = np.asarray(inner.offsets, I64)
        lo, hi = int(off[s1[0]]), int(off[s1[0] + n1[0]])
        got = Lists(np.array([0, hi - lo], I64), inner.child.slice(lo, hi))
    elif inner_mask is None and runs and isinstance(inner, Lists):
        # their offsets index the inner offsets
        off = np.asarray(inner.offsets)
        cover = np.concatenate([s1, [s1[-1] + n1[-1]]]) if len(s1) else np.zeros(1, I64)
        got = Lists(off[cover], inner.child)
    elif inner_mask is None and runs and isinstance(outer, Regular) and \
            isinstance(inner, Regular):
        got = Regular(outer.size * inner.size, inner.child, outer.length())
    else:
        js = ranges(s1, n1)  # every inner list, in order of its outer list
        keep = np.ones(len(js), bool) if inner_mask is None else inner_mask[js]
        lens = np.where(keep, n2[js], 0)
        sums = np.concatenate([[0], np.cumsum(lens)])
        bounds = offsets_of(n1)
        got = Lists(sums[bounds], inner.child.take(ranges(s2[js][keep], lens[keep])))
    return got if mask is None else Masked(mask, got)


def firsts(tree: Column, axis: int) -> Column:
    """`ak.firsts` at `axis` >= 1: each list's first item, missing for an empty list."""
    def first(node):
        mask, inner = node.unwrap()
        if mask is None and isinstance(inner, Regular) and inner.size == 1 and \
                isinstance(inner.child, Masked) and inner.child.length() == inner.length():
            return inner.child  # (lists of one item that may be missing: those items)
        if isinstance(inner, Lists):  # a list is empty where its offsets meet (no lengths)
            off = inner.offsets
            starts, valid = off[:-1], off[1:] > off[:-1]
        else:
            starts, lens = inner.spans()
            valid = lens > 0
        if mask is not None:
            valid &= mask
        return take_or_missing(inner.child, starts, valid)
    return tree.at(axis - 1, first)


def missing_records(tree: Column) -> Column | None:
    """Where the records below the lists of `tree` are missing (`?{...}`): a bool leaf in
    their place, the lists above kept; None where they cannot be missing."""
    if isinstance(tree, Masked):
        if isinstance(tree.child, Record):
            return Leaf(~np.asarray(tree.present, bool))
        inner = missing_records(tree.child)  # (lists that may be missing, above)
        return None if inner is None else Masked(tree.present, inner)
    if isinstance(tree, (Lists, Regular)):
        inner = missing_records(tree.child)
        return None if inner is None else Lists(tree.offsets, inner) \
            if isinstance(tree, Lists) else Regular(tree.size, inner, tree.count)
    return None


def local_index(tree: Column, axis: int) -> Column:
    """`ak.local_index` at `axis`: each item's position in its list (what lies below is
    dropped); axis 0: the positions of the outer items."""
    if axis == 0:
        return Leaf(np.arange(tree.length(), dtype=I64))

    def index(node):
        mask, inner = node.unwrap()
        starts, lens = inner.spans()
        if isinstance(inner, Regular):
            got = Regular(inner.size, Leaf(np.tile(np.arange(inner.size, dtype=I64),
                                                   len(lens))), len(lens))
        else:
            got = Lists(offsets_of(lens), Leaf(ranges(np.zeros(len(lens), I64), lens)))
        return got if mask is None else Masked(mask, got)
    return tree.at(axis - 1, index)


def select(tree: Column, mask: Column, at: int) -> Column:
    """`x[mask]` for items the loop nest does not write (strings): the items of the lists
    `at` list levels down kept where the mask (bools whose lists pair with the array's) is
    true, a missing mask item giving a missing item; at 0, the rows. A missing row of
    either stays missing. Options stay where either had them (the type is the same for
    every partition of a collection). ShapeError names a row whose lengths differ."""
    if at == 0:
        return _kept(tree, *_keep(mask))
    ok, masked, (xs, xn, xchild), (ms, mn, mchild) = _paired(tree, mask, "mask", at - 1)
    lens = np.where(ok, xn, 0)
    items, marks = xchild.take(ranges(xs, lens)), mchild.take(ranges(ms, lens))
    if at == 1:
        keep, present = _keep(marks)
        kept = np.concatenate([[0], np.cumsum(keep, dtype=I64)])
        got = Lists(kept[offsets_of(lens)], _kept(items, keep, present))
    else:
        got = _lists_like(tree, lens, select(items, marks, at - 1), masked)
    return Masked(ok, got) if masked else got  # (`?var` in the type: missing or not)


def gather(tree: Column, positions: Column, at: int) -> Column:
    """`x[positions]` for items the loop nest does not write (strings): per list `at` - 1
    list levels down (at 0: the array), the items at the positions of the matching list of
    positions (negative ones count from the list's end); a missing position gives a missing
    item, a missing row of either a missing row. IndexError names a position outside its
    list; ShapeError a row whose lengths differ above."""
    if at == 0:
        return _taken(tree, positions, np.zeros(1, I64), np.array([tree.length()], I64), None)
    ok, masked, (xs, xn, xchild), (ps, pn, pchild) = _paired(
        tree, positions, "positions", at - 1 if at > 1 else None)
    lens = np.where(ok, pn, 0)
    if at == 1:  # (the positions' lists: var, or fixed as argmax(..., keepdims=True)'s)
        got = _lists_like(positions, lens, _taken(xchild, pchild.take(ranges(ps, lens)),
                                                  xs, np.where(ok, xn, 0), lens), masked)
    else:
        got = _lists_like(tree, lens, gather(xchild.take(ranges(xs, lens)),
                                             pchild.take(ranges(ps, lens)), at - 1), masked)
    return Masked(ok, got) if masked else got


def _paired(tree: Column, key: Column, what: str, dim: int | None) -> tuple:
    """(rows present in both, whether either may miss rows, (starts, lengths, items) of the
    array's lists and of the key's). With `dim`, the lists pair exactly (ShapeError naming
    the row at that dim)."""
    xp, xs, xn, xchild = _spans(tree)
    kp, ks, kn, kchild = _spans(key)
    ok = np.ones(len(xn), bool) if xp is None else xp.copy()
    if kp is not None:
        ok &= kp
    bad = np.flatnonzero(ok & (xn != kn)) if dim is not None else ()
    if len(bad):
        r = int(bad[0])
        raise ShapeError(f"x[{what}]: row {r} at dim {dim} has length {int(xn[r])} in "
                         f"the array and {int(kn[r])} in the {what}"
                         + (" (a mask selects from rows of its own length)"
                            if what == "mask" else ""))
    return ok, xp is not None or kp is not None, (xs, xn, xchild), (ks, kn, kchild)


def _taken(items: Column, positions: Column, starts, lens, per_row) -> Column:
    """The items at each list's positions (`per_row`: how many positions each list has;
    None for one list of all the items)."""
    present, positions = _unwrapped(positions)
    pos = np.asarray(positions.values, I64)
    row = np.zeros(len(pos), I64) if per_row is None else \
        np.repeat(np.arange(len(lens)), per_row)
    n = lens[row]
    fixed = np.where(pos < 0, pos + n, pos)
    bad = (fixed < 0) | (fixed >= n)
    if present is not None:
        bad &= present
        fixed = np.where(present, fixed, 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        where = "the array" if per_row is None else f"row {int(row[i])}"
        raise IndexError(f"x[positions]: position {int(pos[i])} is out of range for {where} "
                         f"of length {int(n[i])}")
    idx = starts[row] + fixed
    if present is None:
        return items.take(idx)
    return take_or_missing(items, idx, present)


def _lists_like(node: Column, lens: np.ndarray, items: Column, masked: bool) -> Column:
    """Lists of `lens` items each over `items`: fixed-size where `node`'s lists are and
    none may be missing (a fixed dim stays fixed), else var (`?n` rows become `?var`)."""
    if isinstance(node, Regular) and not masked:
        return Regular(node.size, items, len(lens))
    return Lists(offsets_of(lens), items)


def _spans(node: Column) -> tuple:
    """(present rows or None, starts, lengths, items) of lists, missing ones or not."""
    present, node = _unwrapped(node)
    starts, lens = node.spans()
    return present, starts, lens, node.child


def _unwrapped(node: Column) -> tuple:
    """(present flags as bools or None, the node under them)."""
    present, node = node.unwrap()
    return (None if present is None else np.asarray(present, bool)), node


def _keep(mask: Column) -> tuple:
    """(kept: true or missing, present or None) of a tree of bools."""
    present, mask = _unwrapped(mask)
    values = np.asarray(mask.values, bool)
    return (values if present is None else values | ~present), present


def _kept(items: Column, keep: np.ndarray, present) -> Column:
    """The items where `keep`; missing where the mask item is missing (`present`)."""
    idx = np.flatnonzero(keep)
    if present is None:
        return items.take(idx)
    return take_or_missing(items, idx, present[idx])  # (`?` in the type: missing or not)


def is_none(tree: Column, axis: int) -> Column:
    """`ak.is_none` at `axis`: whether each item there is missing (bool)."""
    def missing(node):
        if isinstance(node, Masked):
            return Leaf(~np.asarray(node.present, bool))
        return Leaf(np.zeros(node.length(), bool))
    return tree.at(axis, missing)


def pad_none(tree: Column, target: int, axis: int, clip: bool) -> Column:
    """`ak.pad_none`: the lists at `axis` padded with missing items to `target` (cut to it
    with `clip`: `Regular` lists of `target`)."""
    if axis == 0:
        n = tree.length()
        size = target if clip else max(n, target)
        idx = np.arange(size, dtype=I64)
        return take_or_missing(tree, np.minimum(idx, max(n - 1, 0)), idx < n)

    def pad(node):
        mask, inner = node.unwrap()
        starts, lens = inner.spans()
        if clip:  # target positions per list, one column (position) at a time: NumPy's
            # loops then run along the lists, not along rows of a few positions each
            valid = np.empty((len(lens), target), bool)
            at = np.empty((len(lens), target), I64)
            for j in range(target):
                np.less(j, lens, out=valid[:, j])
                np.add(starts, j, out=at[:, j])
            new = np.full(len(lens), target, I64)
        else:
            new = np.maximum(lens, target)
            at = ranges(starts, new)  # (past a list's end: missing, never read)
            valid = np.ones(len(at), bool)  # but where a short list is padded
            short = lens < target
            valid[ranges(offsets_of(new)[:-1][short] + lens[short], target - lens[short])] = False
        items = take_or_missing(inner.child, at.reshape(-1), valid.reshape(-1))
        if clip:
            got = Regular(target, items, len(new))
        elif isinstance(inner, Regular):  # every list gets max(size, target) items
            got = Regular(max(inner.size, target), items, len(new))
        else:
            got = Lists(offsets_of(new), items)
        return got if mask is None else Masked(mask, got)
    return tree.at(axis - 1, pad)


# ---------------------------------------------------------------- concatenate
def _join_items(nodes: list) -> Column:
    """The items of every node one after the other (axis 0): one structure, values of one
    dtype (the caller converted them), missing where a node's item is."""
    kinds = {type(n) for n in nodes}
    if any(issubclass(k, Masked) for k in kinds):
        masks = [n.present if isinstance(n, Masked) else np.ones(n.length(), bool)
                 for n in nodes]
        return Masked(np.concatenate(masks), _join_items([n.unwrap()[1] for n in nodes]))
    if len(kinds) > 1 and kinds <= {Lists, Regular}:
        nodes = [Lists(offsets_of(n.spans()[1]), n.child) if isinstance(n, Regular) else n
                 for n in nodes]
        kinds = {Lists}
    if len(kinds) > 1:
        raise NotSupportedError(f"concatenate of {' and '.join(sorted(k.kind for k in kinds))}"
                                " items")
    kind = kinds.pop()
    if kind is Leaf:
        return Leaf(np.concatenate([n.values for n in nodes]))
    if kind is Regular:
        if len({n.size for n in nodes}) == 1:
            return Regular(nodes[0].size, _join_items([n.child for n in nodes]),
                           sum(n.length() for n in nodes))
        nodes = [Lists(offsets_of(n.spans()[1]), n.child) for n in nodes]
        kind = Lists
    if kind in (Lists, Text):
        parts, offs, base = [], [np.zeros(1, I64)], 0
        for n in nodes:
            starts, lens = n.spans()
            idx = ranges(starts, lens)
            parts.append(idx)
            offs.append(base + np.cumsum(lens))
            base += int(lens.sum())
        off = np.concatenate(offs)
        if kind is Text:
            return Text(nodes[0].type_name, off, np.concatenate([n.chars[i] for n, i in
                                                                 zip(nodes, parts)]))
        return Lists(off, _join_items([n.child.take(i) for n, i in zip(nodes, parts)]))
    raise NotSupportedError(f"concatenate of {kind.kind} items")


def concatenate(trees: list, axis: int, path: tuple = ()) -> Column:
    """`ak.concatenate`: the lists at `axis` of every tree joined per row (axis 0: the
    items one after the other). Above `axis` the trees walk together: lengths must agree
    (ShapeError naming the row), a missing row in any gives a missing row."""
    if axis == 0:
        return _join_items(trees)
    if axis == 1:  # (a missing list counts as empty)
        return _join_rows(trees)
    masks = [t.unwrap()[0] for t in trees]
    inner = [t.unwrap()[1] for t in trees]
    mask = None
    for m in masks:
        if m is not None:
            mask = m if mask is None else mask & m
    if not all(isinstance(n, (Lists, Regular)) for n in inner):
        kinds = sorted({n.kind for n in inner})
        raise NotSupportedError(f"concatenate below {' and '.join(kinds)} items")
    lens = [n.spans()[1] for n in inner]
    present = np.ones(len(lens[0]), bool) if mask is None else mask
    for j, ln in enumerate(lens[1:], 1):
        bad = (ln != lens[0]) & present
        if bad.any():
            i = int(np.argmax(bad))
            where = list(path) + [i]
            where = f"row {where[0]}" if len(where) == 1 else f"row {where}"
            raise ShapeError(f"concatenate at axis {axis + len(path)}: {where} has length "
                             f"{int(lens[0][i])} in operand 0 and {int(ln[i])} in operand {j}")
    if mask is not None and not mask.all():
        # rows missing in one operand: their lists in the others are not read
        keep = np.flatnonzero(mask)
        inner = [n.take(keep) for n in inner]
        rows = concatenate([n.child for n in inner], axis - 1, path)
        got = _spread_rows(inner[0], rows, keep, len(mask))
        return Masked(mask, got)
    kids = []
    for n in inner:  # each operand's items in row order (its lists may have gaps)
        starts, ln = n.spans()
        kids.append(n.child.take(ranges(starts, ln)))
    rows = concatenate(kids, axis - 1, path)
    first = inner[0]
    if all(isinstance(n, Regular) for n in inner):
        got = Regular(first.size, rows, first.length())
    else:
        got = Lists(offsets_of(lens[0]), rows)
    return got if mask is None else Masked(mask, got)


def _spread_rows(first: Column, rows: Column, keep: np.ndarray, n: int) -> Lists:
    """The lists `rows` (of the kept rows `keep` of `first`) placed back at those rows of
    n rows; the others empty (they are missing)."""
    lens = np.zeros(n, I64)
    lens[keep] = first.spans()[1]
    return Lists(offsets_of(lens), rows)


def _join_rows(nodes: list) -> Column:
    """Row i of the result: row i of every node's lists joined (a missing list counts as
    empty, Awkward's rule)."""
    n = nodes[0].length()
    for j, node in enumerate(nodes[1:], 1):
        if node.length() != n:
            raise ShapeError(f"concatenate at axis 1: operand 0 has {n} rows and operand {j} "
                             f"has {node.length()}")
    parts = []
    for node in nodes:
        lmask, lists = node.unwrap()
        if not isinstance(lists, (Lists, Regular)):
            raise NotSupportedError(f"concatenate of {lists.kind} items")
        starts, lens = lists.spans()
        if lmask is not None:
            lens = np.where(lmask, lens, 0)
        parts.append((lists, starts, lens))
    total = sum(p[2] for p in parts)
    items = _join_items([lists.child.take(ranges(starts, lens))
                         for lists, starts, lens in parts])
    # row-major order: row i's items of operand 0, then of operand 1, ...
    base = np.cumsum([0] + [int(p[2].sum()) for p in parts[:-1]])
    starts = np.stack([b + offsets_of(p[2])[:-1] for b, p in zip(base, parts)], axis=1)
    lens = np.stack([p[2] for p in parts], axis=1)
    order = ranges(starts.reshape(-1), lens.reshape(-1))
    items = items.take(order)
    if all(isinstance(p[0], Regular) for p in parts) and all(
            node.unwrap()[0] is None for node in nodes):  # fixed lists stay fixed
        return Regular(sum(p[0].size for p in parts), items, n)
    return Lists(offsets_of(total), items)


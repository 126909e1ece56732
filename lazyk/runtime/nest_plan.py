"""How the loop nest reads its operands (`codegen.nest`): each leaf described per dim
(fixed: size and stride; var / `?var`: the arrmeta words of its rows), the result levels
and each operand's kind at each level, the kernel data words (the split of level-0 rows
across threads: `nest_threads`). Forms that need no count pass are found here too: `N * var`
rows of one offsets array (`offsets_rows`) and a last-axis reduction of `N * var * var`
rows that follow each other, which runs over the inner rows as `M * var` (`flat_rows`).
An array's checked operand is reused while its memory is open (`nest_operand`), and the
plan of a set of operands is kept with the first (`nest_plan`): a repeated call over the
same arrays reads only their rows. Nothing here runs a kernel."""
from __future__ import annotations

import weakref
from dataclasses import replace

import numpy as np

from lazyk.arrays import memory
from lazyk.arrays.arrmeta import FixedWords, RowsWords, dims_words
from lazyk.arrays.memory import view
from lazyk.arrays.trees import rising
from lazyk.codegen.levels import (
    FIXED,
    VAR,
    WORDS,
    FixedDimData,
    Gathered,
    Pick,
    PickDimData,
    Rows,
    RowsData,
    Strided,
    operand_level,
)
from lazyk.codegen.nest import nest_layout
from lazyk.errors import NotSupportedError, ShapeError
from lazyk.frontend.leaves import PickLeaf, RaggedLeaf, is_ragged, text_rows
from lazyk.frontend.ops import BYTES, STRING
from lazyk.kernel.flat import data_pointer
from lazyk.lru import Memo
from lazyk.runtime.rows import check_extent
from lazyk.types import Option, Scalar

STRIDED = Strided()  # (compared on every call: made once)


class NestOperand:
    """One leaf as the nest reads it: per own dim a `FixedDimData` (size, stride) or a
    `RowsData` (var or `?var` rows: the arrmeta words); its address, dtype, mask; `owner`:
    what keeps a writable var leaf's memory alive (a result may share its offsets), else
    None."""

    def __init__(self, dims, ptr, dtype, mask_offset, aligned, owner=None):
        self.dims, self.ptr, self.dtype = dims, ptr, dtype
        self.mask_offset, self.aligned, self.owner = mask_offset, aligned, owner


# id(Array) -> (weak ref to it, its owner's id, the block refs its arrmeta names, its
# NestOperand): an Array's type, arrmeta and pointer never change, so its checked operand
# is reused while it holds its owner and every block it names is open (a closed block is
# checked again, and refused); the entry goes with the Array
_operands: dict = {}


def nest_operand(leaf):
    """A `NestOperand`, or None for a leaf the nest does not read (records, ...)."""
    if isinstance(leaf, PickLeaf):
        return _picked(leaf)
    if is_ragged(leaf):
        return array_operand(leaf.array)
    return _nest_operand(leaf)


def array_operand(arr):
    """The `NestOperand` of a var / option lazyk Array (None where the nest does not read
    it), checked on the array's first use and kept while the array, its owner and every
    block its arrmeta names live."""
    key = id(arr)
    got = _operands.get(key)
    if got is not None and got[0]() is arr and got[1] == id(arr.owner):
        for r in got[2]:  # each block still open (`ref in memory.blocks`, inline)
            w = memory.open_refs.get(r)
            if w is None or w() is None:
                break
        else:
            return got[3]
    got = _nest_operand(RaggedLeaf(arr, False))
    if got is not None and got.dtype.kind in "biufc":
        _operands[key] = (weakref.ref(arr, lambda r, k=key: _forget(k, r)),
                          id(arr.owner), _refs(arr), got)
    return got


def _picked(leaf):
    """The operand of an array read at tuple levels: its dims there `PickDimData`; a
    position's dims end at its last tuple level (int64 values, none stored), a witness's
    values are never read (neither are their masks)."""
    base = array_operand(leaf.array)
    if base is None:
        return None
    dims = list(base.dims)
    for at, tuples, slot in leaf.picks:
        dims[at] = PickDimData(dims[at], tuples, slot, leaf.position and
                               (at, tuples, slot) == leaf.picks[-1])
    if leaf.position or leaf.witness:  # a witness: its rows only, no values, no mask
        dims = dims[:leaf.cut] + [FixedDimData(1, 0)] * leaf.pad
        return NestOperand(dims, base.ptr, np.dtype(np.int64), None, True) if \
            leaf.position else NestOperand(dims, base.ptr, base.dtype, None, base.aligned)
    return NestOperand(dims, base.ptr, base.dtype, base.mask_offset, base.aligned,
                       base.owner)


def _forget(key: int, ref) -> None:
    """Drop the cached operand of an Array that is gone (not a newer one at its id)."""
    got = _operands.get(key)
    if got is not None and got[0] is ref:
        _operands.pop(key, None)


def _refs(arr) -> tuple:
    """The block refs of the var dims of `arr`'s arrmeta."""
    return tuple(d.ref for d in dims_words(arr.type, arr.meta)[0] if isinstance(d, RowsWords))


def _nest_operand(leaf):
    """`nest_operand` without the cache."""
    if isinstance(leaf, np.ndarray):
        al = leaf.dtype.alignment
        ptr = data_pointer(leaf)
        dims = [FixedDimData(n, s) for n, s in zip(leaf.shape, leaf.strides)]
        aligned = ptr % al == 0 and all(s % al == 0 for s in leaf.strides)
        return NestOperand(dims, ptr, leaf.dtype, None, aligned)
    if not is_ragged(leaf):
        return None
    arr = leaf.array
    words, t, k = dims_words(arr.type, arr.meta)
    dims, addrs = [], [arr.ptr]
    for d in words:
        if isinstance(d, FixedWords):
            dims.append(FixedDimData(d.size, d.stride))
            addrs.append(d.stride)
        elif d.width not in (4, 8):
            return None
        else:
            dims.append(RowsData(d.width, d.stop_delta, d.content, d.index_stride, d.stride,
                                 d.length, d.row_mask))
            addrs += [d.content, d.index_stride, d.stride]
    moff = None
    if isinstance(t, Option):
        moff, t = arr.meta[k], t.elem
    if not isinstance(t, Scalar):
        return None
    if t.name in ("string", "bytes"):  # `{begin, size}` elements (lazyk.runtime.text_steps fuses them)
        check_extent(text_rows(arr, nested=True))
        dt = STRING if t.name == "string" else BYTES
        return NestOperand(dims, arr.ptr, dt, moff, all(a % 8 == 0 for a in addrs))
    dt = t.to_numpy()
    if dt.kind not in "biufc":
        return None
    check_extent(arr)  # the kernel trusts the arrmeta's addresses and lengths
    return NestOperand(dims, arr.ptr, dt, moff, all(a % dt.alignment == 0 for a in addrs),
                       None if arr.readonly else arr.owner)


def nest_plan(ops_, taken=None, shape=()):
    """Result levels (`FIXED` / `VAR`), fixed sizes, and per operand its level class at
    each level (`codegen.levels`). `taken`: per operand None, or (level, spec output): it is
    taken at the positions that output gives there (`Gathered`: its own dim there is
    read, never paired; the level's extent is the other operands'). `shape`: the result's,
    a dim per level: var rows it types as a fixed 1 are one (`?1` rows: no var rows meet).
    Kept on the first operand for these operands (the operands of an Array are reused:
    `nest_operand`), so a repeated call over the same arrays plans once."""
    first, rest = ops_[0], ops_[1:]
    plans = first.__dict__.get("plans")
    if plans is None:
        plans = first.plans = Memo(8, "nest plans of an operand")
    taken = tuple(taken) if taken else (None,) * len(ops_)
    ones = tuple(n == 1 for n in shape) if 1 in shape else ()  # (one plan without)
    key = (tuple(map(id, rest)), taken, ones)
    got = plans.get(key)
    if got is not None and all(w() is o for w, o in zip(got[0], rest)):
        return got[1], list(got[2]), list(got[3])
    levels, sizes, kinds = _nest_plan(ops_, taken, ones)
    plans.put(key, (tuple(weakref.ref(o) for o in rest), levels, tuple(sizes), tuple(kinds)))
    return levels, sizes, kinds


def _nest_plan(ops_, taken, ones=()):
    """`nest_plan` without the cache; `ones`: per level, whether `shape` there is 1."""
    nlev = max(len(o.dims) for o in ops_)
    ones = ones if len(ones) == nlev else (False,) * nlev
    levels, sizes = [], []
    for k in range(nlev):
        ds = [o.dims[k - nlev + len(o.dims)] for o, t in zip(ops_, taken)
              if k - nlev + len(o.dims) >= 0 and (t is None or t[0] != k or len(t) > 2)]
        fixed = {d.size for d in ds if not d.rows and d.size != 1 and
                 not isinstance(d, PickDimData)}
        picks = [d for d in ds if isinstance(d, PickDimData)]
        if picks:  # a tuple level: the tuples' count
            if len({d.tuples for d in picks}) > 1:
                raise NotSupportedError(f"dim {k}: the tuples of "
                                        f"{' and '.join(sorted({str(d.tuples) for d in picks}))}"
                                        " meet in one expression: evaluate one of them first")
            tuples = picks[0].tuples
            if levels == [] and not any(d.rows for d in picks):
                raise NotSupportedError(f"{tuples} along the outermost fixed dim")
            if not any(d.rows for d in picks):
                slot = {}
                for d in picks:  # rows of 1 stretch
                    g = tuples.group(d.slot)
                    if d.size != 1 or g not in slot:
                        slot[g] = d.size
                fixed.add(tuples.count([slot[tuples.group(q)] for q in range(tuples.slots)]))
            if any(d.rows for d in picks) and fixed:
                raise ShapeError(f"dim {k}: fixed sizes {sorted(fixed)} against the var "
                                 f"rows of {tuples}")
        if len(fixed) > 1:
            raise ShapeError(f"dim {k}: fixed sizes {sorted(fixed)} do not broadcast")
        if fixed:
            levels.append(FIXED)
            sizes.append(fixed.pop())
        elif any(d.rows for d in ds) and not ones[k]:
            levels.append(VAR)
            sizes.append(0)
        else:
            levels.append(FIXED)
            sizes.append(1)
    kinds = []
    for o, t in zip(ops_, taken):
        lead = nlev - len(o.dims)
        # a fixed 1 broadcasts: stride 0 at a fixed level (no other structure for size 1),
        # the operand stays where the result level is var
        kinds.append(tuple(operand_level(o.dims[k - lead] if k >= lead else None, levels[k],
                                         *(t[1:] if t is not None and t[0] == k else ()))
                           for k in range(nlev)))
    return tuple(levels), sizes, _shared_rows(ops_, kinds, taken, nlev)


def _shared_rows(ops_, kinds: list, taken, nlev: int) -> list:
    """`kinds` with each operand's plain var rows marked as those of the first operand
    that reads the same rows (`Rows.shares`): the same address, the same levels and dims
    above (so the same index memory), the same index width, stop offset and content
    length. The fields of one collection (`jets.pt`, `jets.eta`, ...) then read and check
    a row once, not once per field; gathered there (`lep.pt[pairs.i]`), each position is
    checked against that one row once. Decided from each call's own operands (the kinds are
    part of the compiled structure: other arrays plan again)."""
    first: dict = {}
    for j, (o, kind, t) in enumerate(zip(ops_, kinds, taken)):
        lead = nlev - len(o.dims)
        for k in range(max(lead, 1), nlev):
            level = kind[k]
            rows = _own_rows(level)
            if type(rows) is not Rows or rows.stepping or (t is not None and t[0] < k):
                continue
            dim = o.dims[k - lead].inner if isinstance(level, Pick) else o.dims[k - lead]
            where = (k, lead, o.ptr, kind[:k], tuple(o.dims[:k - lead]), dim.width, dim.stop_delta,
                     dim.length)
            i = first.setdefault(where, j)
            if i != j:
                rows = replace(rows, shares=i)
                kind = kind[:k] + (_with_rows(level, rows),) + kind[k + 1:]
        kinds[j] = kind
    return kinds


def kinds_of(kinds: list, order: list) -> list:
    """The kinds of operands `order` (their numbers in `kinds`), in that order: rows marked
    as another operand's (`Rows.shares`) are renumbered to the first operand of `order`
    that reads them (none before: read here)."""
    first, got = {}, []
    for new, old in enumerate(order):
        kind = list(kinds[old])
        for k, level in enumerate(kind):
            rows = _own_rows(level)
            if type(rows) is Rows:
                i = first.setdefault((k, rows.shares if rows.shares >= 0 else old), new)
                kind[k] = _with_rows(level, replace(rows, shares=-1 if i == new else i))
        got.append(tuple(kind))
    return got


def _own_rows(level):
    """The rows an operand's level reads itself: a tuple level's or a gathered operand's
    (their `inner`), or the level."""
    return level.inner if isinstance(level, (Pick, Gathered)) else level


def _with_rows(level, rows):
    """`level` reading `rows` (see `_own_rows`)."""
    return replace(level, inner=rows) if isinstance(level, (Pick, Gathered)) else rows


def plain_rows(level) -> bool:
    """Var rows of plain indices: neither a stepping view's nor `?var`."""
    return type(level) is Rows and not level.stepping


def positions(r0: int, levels, sizes, offsets: dict, upto: int) -> list:
    """X[k]: how many level-k iterations come before level-0 row r0 (k < upto), from the
    fixed sizes and the result var levels' offsets known so far."""
    xs = []
    for k in range(upto):
        if k == 0:
            x = r0 if levels[0] is FIXED else 0
        elif levels[k] is FIXED:
            x = xs[-1] * sizes[k]
        else:
            x = int(offsets[k][xs[-1]])
        if k == 0 and levels[0] is VAR:
            x = int(offsets[0][1]) if r0 else 0
        xs.append(x)
    return xs


def flat_rows(ops_, levels, kinds, sizes):
    """A reduction over the last axis of `N * var * var` rows, where the inner rows of
    outer row i + 1 follow those of row i (offsets, or index pairs that touch), is one
    reduction over the inner rows they cover: (the operands as `M * var`, the result's
    offsets, their `nest_plan`), or None: another form, outer rows that differ between operands, or bad
    rows (the full nest names them). Operands without the two outer dims stay (`n`).
    Offsets from 0 of a writable leaf are those offsets themselves (no copy)."""
    if tuple(levels) != (FIXED, VAR, VAR):
        return None
    off, flat = None, list(ops_)
    for j, (o, kd) in enumerate(zip(ops_, kinds)):
        if not kd[0].moves and not kd[1].moves:
            continue
        if kd[0] != STRIDED or not plain_rows(kd[1]):
            return None
        n0, s0 = o.dims[0].size, o.dims[0].stride
        r = o.dims[1]
        width, delta, content, istride, stride, length = (
            r.width, r.stop_delta, r.content, r.index_stride, r.stride, r.length)
        if stride != istride or not n0 or s0 <= 0 or n0 != sizes[0]:
            return None
        # row r's start and stop: bytes the nest reads too (inside the operand's block:
        # `check_extent`)
        dt = np.int32 if width == 4 else np.int64
        starts = view(o.ptr, (n0,), (s0,), dt, None, True)
        stops = view(o.ptr + delta, (n0,), (s0,), dt, None, True)
        lo, hi = int(starts[0]), int(stops[-1])
        if lo < 0 or hi > length or (s0 != delta and (starts[1:] != stops[:-1]).any()):
            return None
        if off is not None and (len(off) != n0 + 1 or (stops != off[1:] + lo).any()):
            return None  # the outer rows differ between operands
        if off is None:
            if lo == 0 and s0 == delta == width and o.owner is not None:
                # offsets from 0: the result shares them (keeping their memory alive)
                off = view(o.ptr, (n0 + 1,), (width,), dt, o.owner)
            else:
                off = np.empty(n0 + 1, np.int64)
                off[0] = 0
                np.subtract(stops, lo, out=off[1:])
            if (off[1:] < off[:-1]).any():
                return None
        flat[j] = NestOperand([FixedDimData(hi - lo, istride)] + o.dims[2:],
                              content + lo * istride, o.dtype, o.mask_offset, o.aligned)
    if off is None:
        return None
    # the flat nest's plan (`nest_plan` of the flat operands): the inner rows are level 0
    kinds2 = [(kd[0] if not kd[1].moves else STRIDED, kd[2]) for kd in kinds]
    return flat, off, ((FIXED, VAR), [int(off[-1]), 0], kinds2)


def flat_items(ops_, levels, kinds, sizes, offsets: bool = True):
    """`N * var` rows that every operand with rows reads through one offsets array, and no
    operand stays at the rows (a per-row value): the items as one run of M, (the operands
    as `M`, the offsets from 0 (with `offsets=False`, a fold over every item: the offsets
    as they are, unchecked, then the first and last: what a bound call checks again), their
    plan), or None. Work item by item (elementwise, histograms) then runs one loop over
    the items: no loop per row, none of a row's short remainders (rows of one to four
    items are common). The offsets are checked here (the kernel reads no row)."""
    if tuple(levels) != (FIXED, VAR):
        return None
    ref, flat = None, list(ops_)
    for j, (o, kd) in enumerate(zip(ops_, kinds)):
        if not kd[0].moves and not kd[1].moves:
            continue
        if kd[0] != STRIDED or not plain_rows(kd[1]):
            return None
        n0, s0 = o.dims[0].size, o.dims[0].stride
        r = o.dims[1]
        key = (o.ptr, n0, s0, r.width)
        if s0 != r.stop_delta or r.stride != r.index_stride or n0 != sizes[0] or not n0 or \
                (ref or key) != key:
            return None
        ref, owner = key, o.owner
    if ref is None:
        return None
    ptr, n0, s0, width = ref
    dt = np.int32 if width == 4 else np.int64
    off = raw = view(ptr, (n0 + 1,), (s0,), dt, None, True)  # (the nest reads them)
    lo, hi = int(off[0]), int(off[-1])
    if not rising(off, hi):
        return None  # bad rows: the full nest names them
    for j, (o, kd) in enumerate(zip(ops_, kinds)):
        if kd[1].moves:
            r = o.dims[1]
            if hi > r.length:
                return None
            flat[j] = NestOperand([FixedDimData(hi - lo, r.index_stride)],
                                  r.content + lo * r.index_stride, o.dtype, o.mask_offset,
                                  o.aligned)
    kinds2 = [(STRIDED,) if kd[1].moves else (kd[1],) for kd in kinds]
    if offsets and not lo and s0 == width == 8 and owner is not None:
        off = view(ptr, (n0 + 1,), (8,), np.int64, owner)  # (shared, its memory kept alive)
    elif offsets:
        off = np.subtract(off, lo, dtype=np.int64)
    return flat, off if offsets else (raw, lo, hi), ((FIXED,), [hi - lo], kinds2)


def offsets_rows(ops_, kinds, levels, sizes):
    """The offsets (from 0) of `N * var` rows that every var operand reads through one
    offsets array, rising and within every such operand's content, or None (then a count
    pass; none is needed here: the fill pass checks each row's length against them, and
    the kernel each row's indices)."""
    if tuple(levels) != (FIXED, VAR):
        return None
    ref, length = None, None
    for o, kd in zip(ops_, kinds):
        if not kd[1].rows or isinstance(kd[1], Gathered):  # (read at positions, not paired)
            continue
        if kd[0] != STRIDED or not plain_rows(kd[1]):
            return None
        n0, s0 = o.dims[0].size, o.dims[0].stride
        width, delta = o.dims[1].width, o.dims[1].stop_delta
        key = (o.ptr, n0, s0, width, delta)
        if n0 != sizes[0] or not n0 or (ref or key) != key:
            return None
        ref, reader = key, o
        length = o.dims[1].length if length is None else min(length, o.dims[1].length)
    if ref is None:
        return None
    ptr, n0, s0, width, delta = ref
    dt = np.int32 if width == 4 else np.int64
    if s0 == delta:  # an offsets array (the nest reads it)
        views = reader.__dict__.setdefault("offsets_views", {})  # (kept as its memory is)
        off = views.get(ref)
        if off is None:
            off = views[ref] = view(ptr, (n0 + 1,), (s0,), dt, None, True)
        if not rising(off, length):
            return None  # (the count pass names the row)
        return np.subtract(off, off[0], dtype=np.int64)  # (a copy: bound calls compare it)
    starts = view(ptr, (n0,), (s0,), dt, None, True)
    stops = view(ptr + delta, (n0,), (s0,), dt, None, True)
    lens = np.subtract(stops, starts, dtype=np.int64)
    if lens.min() < 0 or starts.min() < 0 or stops.max() > length:
        return None  # (the count pass names the row)
    off = np.zeros(n0 + 1, np.int64)
    np.cumsum(lens, out=off[1:])
    return off


def nest_words(levels, sizes, sel, kinds):
    """The kernel data words that do not change between parts and passes."""
    lay = nest_layout(len(levels), len(sel))
    words = np.zeros(lay["params"] // 8, np.int64)
    for k, (lv, n) in enumerate(zip(levels, sizes)):
        words[lay["sizes"] + k] = n if lv is FIXED else 0
    for j, (o, kind) in enumerate(zip(sel, kinds)):
        at = lay["ops"] + j * lay["per_op"]
        words[at] = o.ptr
        words[at + 1] = o.mask_offset or 0
        lead = len(levels) - len(o.dims)
        for k, level in enumerate(kind):
            if level.moves:
                w = level.words(o.dims[k - lead])
                base = at + 2 + WORDS * k
                words[base:base + len(w)] = w
    return words, lay


def row_signature(o, kind, k: int, nlev: int):
    """Which rows operand `o` reads at nest level k (None: it reads none there): its row
    indices' address and the dims above (equal signatures: the same rows)."""
    if not kind.rows:
        return None
    lead = nlev - len(o.dims)
    d = o.dims[k - lead]
    inner = d.inner if isinstance(d, PickDimData) else d
    return (o.ptr, tuple(o.dims[:k - lead]), inner.width, inner.stop_delta,
            getattr(kind, "tuples", None))

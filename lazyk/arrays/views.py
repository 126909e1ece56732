"""Strided views of arrays described by arrmeta: index items -> (type, arrmeta, pointer).

`Array.__getitem__` builds its views here. Ints, slices, `...`, `None` and field names
become a new type and arrmeta over the same memory; options and var dims are followed
through their masks and {start, stop} row indices (docs/layout.md); a slice of var rows
under kept dims gets new index pairs (`reslice_rows`). Where no view exists, `index_type` and
`index_values` give the copy's type and values.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from lazyk import types as T
from lazyk.arrays import arrmeta as M
from lazyk.arrays import memory
from lazyk.arrays.arrmeta import check_rows, read_rows
from lazyk.errors import NotSupportedError

DIM_ITEMS = (int, np.integer, slice)

# (lazyk.array reads a Python tuple as a list, as NumPy does)
NEW_FIELD = " (a new field: lazyk.with_field(a, value, name) gives records with it)"
NO_FIELDS = (": its elements are not records (Python tuples in lists are read as lists, as "
             "NumPy reads them: give a tuple type, e.g. type='N * (int64, float64)')")


def bool_items(items: tuple) -> tuple:
    """NumPy's meaning of a bool index: `True` is a new axis (None); `False` (a new axis
    of size 0) has no view over var dims."""
    if any(i is False or i is np.False_ for i in items):
        raise IndexError("x[False] (a new axis of size 0) is not supported on arrays with "
                         "var dims or missing values: x[None][:0] gives that view")
    return tuple(None if isinstance(i, (bool, np.bool_)) else i for i in items)


def normalize_index(t: T.Type, items: tuple) -> tuple[list, list[str]]:
    """Dim items with `...` expanded, and the field names (applied after the dims)."""
    names = [i for i in items if isinstance(i, str)]
    dims = [i for i in items if not isinstance(i, str)]
    for i in dims:
        if not (i is None or i is Ellipsis or isinstance(i, DIM_ITEMS)):
            raise IndexError(f"lazyk arrays take ints, slices, ..., None and field names as "
                             f"indices (views), not {type(i).__name__}; a mask or positions "
                             "select or gather as one array on its own (x[mask], "
                             "x[np.array([2, 0])], a bool or integer array or expression)")
    if sum(i is Ellipsis for i in dims) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(isinstance(i, DIM_ITEMS) for i in dims)
    if used > t.ndim:
        raise IndexError(f"too many indices: {used} for type '{t}' with {t.ndim} dimensions")
    if Ellipsis in [i for i in dims if i is Ellipsis]:
        k = next(n for n, i in enumerate(dims) if i is Ellipsis)
        dims[k:k + 1] = [slice(None)] * (t.ndim - used)
    elif names:
        dims += [slice(None)] * (t.ndim - used)  # a field applies under all dims
    return [int(i) if isinstance(i, np.integer) else i for i in dims], names


def strided_view(t: T.Type, meta: tuple, buf: np.ndarray, cur: int, ptr: int, owner: Any,
                 dims: list, names: list[str]) -> tuple | None:
    """(type, arrmeta, pointer, owner) of the view `dims` then `names` (`normalize_index`) of
    the array of type `t` whose element lies at byte `cur` of `buf` (address `ptr`), or None
    when no strided view exists (an int or partial slice on a var dim under a kept dim).

    Slicing a var dim may make a new block of {start, stop} pairs (then the new owner, which
    keeps the old one alive); the rows themselves are never copied.
    """
    at = 0
    cur_buf = buf  # current element: byte offset `cur` into `cur_buf`
    base = ptr - cur
    wrap: list = []      # type constructors of kept dims, outermost first
    out_meta: list = []  # their arrmeta
    adjust = None        # out_meta index of the innermost kept var's offset; None: the pointer
    single = True        # no kept dims so far: we address one element

    kept_options: list[tuple[int, int | None]] = []  # (out_meta index, address target)

    def shift(delta: int) -> None:
        nonlocal cur
        if adjust is None:
            cur += delta
        else:
            out_meta[adjust] += delta
        # A mask sits at a fixed distance from its element's *start*: when a view moves that
        # start (field, int or slice inside the option), the distance shrinks by as much.
        for k, target in kept_options:
            if target == adjust:
                out_meta[k] -= delta

    for item in dims:
        if item is None:
            wrap.append(lambda e: T.FixedDim(1, e))
            out_meta += [1, 0]
            continue
        while isinstance(t, T.Option):
            if single:
                if not cur_buf[cur + meta[at]]:
                    raise IndexError(f"cannot index into a missing value (type '{t}')")
            else:
                wrap.append(T.Option)
                kept_options.append((len(out_meta), adjust))
                out_meta.append(meta[at])
            t, at = t.elem, at + 1
        if isinstance(t, T.FixedDim):
            n, stride = meta[at], meta[at + 1]
            if isinstance(item, int):
                i = item + n if item < 0 else item
                if not 0 <= i < n:
                    raise IndexError(f"index {item} is out of bounds for a dim of size {n}")
                shift(i * stride)
            else:
                start, _, step = item.indices(n)
                m = len(range(*item.indices(n)))
                shift(start * stride if m else 0)
                wrap.append(lambda e, m=m: T.FixedDim(m, e))
                out_meta += [m, stride * step]
                single = False
            t, at = t.elem, at + 2
            continue
        var = M.rows_at(meta, at)
        ref, content, istride, stride, length = var.ref, var.content, var.index_stride, \
            var.stride, var.length
        if single:
            starts, stops = M.read_rows(cur_buf, np.array([cur], np.int64), var.width,
                                        var.stop_delta)
            M.check_rows(starts, stops, var)
            begin, size = int(starts[0]), int(stops[0] - starts[0])
            block = memory.lookup(ref)
            if isinstance(item, int):
                i = item + size if item < 0 else item
                if not 0 <= i < size:
                    raise IndexError(f"index {item} is out of bounds for a row of {size} "
                                     "elements")
                cur_buf = block.buffer
                cur = content + begin * istride + i * stride - block.address
                # The content's block holds everything the view reaches (children via keep).
                base, owner = block.address, block
                t, at = t.elem, at + M.VAR_META
                continue
            start, _, step = item.indices(size)
            m = len(range(*item.indices(size)))
            start = start if istride else 0  # (items of no bytes: any m of them are the slice)
            if m and stride != istride:  # a stepping view: move the content to the row
                content, begin, length = content + begin * istride, 0, size
                istride = stride
            # A new {start, stop} row over the same content; the step becomes the stride.
            head = memory.MemoryBlock(16, keep=[owner])
            pair = [begin + start, begin + start + m] if m else [0, 0]
            head.buffer[:16] = np.array(pair, np.int64).view(np.uint8)
            owner, cur_buf, cur, base = head, head.buffer, 0, head.address
            wrap.append(T.VarDim)
            out_meta += replace(var, width=8, stop_delta=8, content=content,
                                index_stride=istride, stride=stride * step,
                                length=length).words
        elif isinstance(item, slice) and item == slice(None):
            wrap.append(T.VarDim)
            out_meta += var.words
        elif isinstance(item, slice) and adjust is None and T.Option not in wrap:
            # Only fixed dims kept above: new {start, stop} pairs over the same content.
            got = reslice_rows(cur_buf, cur, out_meta, item, var, owner)
            if got is None:
                return None
            head, new_meta = got
            owner, cur_buf, cur, base = head, head.buffer, 0, head.address
            wrap.append(T.VarDim)
            out_meta += list(new_meta)
        else:
            return None
        adjust = len(out_meta) - 4  # the content address moves with field / index views
        single = False
        t, at = t.elem, at + M.VAR_META
    if wrap and wrap[-1] is T.Option and isinstance(t, T.Option):
        return None  # (an int into `?n * ?T` rows: one mask cannot say row or value missing)
    for n in names:
        optional = isinstance(t, T.Option)
        if optional:  # a field of a maybe-missing record is maybe missing: `?{x: T}`.x is `?T`
            wrap.append(T.Option)
            kept_options.append((len(out_meta), adjust))
            out_meta.append(meta[at])
            t, at = t.elem, at + 1
        # a tuple's fields are its positions, named "0", "1", ... (as in Awkward Array)
        keys = t.names if isinstance(t, T.Record) else \
            [str(k) for k in range(len(t.types))] if isinstance(t, T.Tuple) else ()
        if n not in keys:
            raise KeyError(f"type '{t}' has no field {n!r}" + (
                f" (a tuple's fields are its positions: {', '.join(map(repr, keys))})"
                if isinstance(t, T.Tuple) else NEW_FIELD if isinstance(t, T.Record) else NO_FIELDS))
        k = keys.index(n)
        if optional and isinstance(t.types[k], T.Option):
            raise NotSupportedError(f"field {n!r} of '?{t}': an option inside an option has "
                                    "two masks; read it with to_list()")
        shift(meta[at + k])
        at = M.field_meta_positions(t, at)[k]
        t = t.types[k]
    out_meta += meta[at:at + M.meta_len(t)]
    for w in reversed(wrap):
        t = w(t)
    return t, tuple(out_meta), base + cur, owner


def slice_rows(sizes: np.ndarray, item: slice) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised `slice.indices` over rows of `sizes`: (first index, count) per row."""
    step = 1 if item.step is None else _clipped(item.step)
    if step == 0:
        raise ValueError("slice step cannot be zero")
    lo, hi = (0, sizes) if step > 0 else (-1, sizes - 1)

    def clamp(v: int | None, default):
        if v is None:
            return default  # (a number broadcasts)
        v = _clipped(v)
        return np.clip(v + sizes, lo, hi) if v < 0 else np.minimum(v, hi)

    start = clamp(item.start, 0 if step > 0 else sizes - 1)
    stop = clamp(item.stop, sizes if step > 0 else -1)
    span = stop - start if step > 0 else start - stop
    count = np.maximum(span, 0) if abs(step) == 1 else \
        np.maximum(0, (span + abs(step) - 1) // abs(step))
    return np.broadcast_to(np.asarray(start, np.int64), sizes.shape), count


def _clipped(v: int) -> int:
    """A slice bound or step within +-2**62: past every row as any larger one is, and no
    int64 sum of it overflows."""
    return max(-(2 ** 62), min(int(v), 2 ** 62))


def reslice_rows(buf: np.ndarray, cur: int, kept: list, item: slice, var: M.RowsWords,
                 owner: object):
    """(block of {start, stop} int64 pairs, C order over the kept fixed dims, new var arrmeta)
    for the rows `item` selects; the content is not touched (a step becomes the stride).

    `kept` is the kept dims' arrmeta ({size, stride} pairs); their strides are rewritten.
    """
    step = 1 if item.step is None else int(item.step)
    width, stop_delta, istride, stride = var.width, var.stop_delta, var.index_stride, var.stride
    # (a step past any row picks each row's first item: as big a one as int64 strides hold)
    step = max(-(2 ** 62 // max(abs(stride), 1)), min(step, 2 ** 62 // max(abs(stride), 1)))
    offs = np.array([cur], np.int64)
    for k in range(0, len(kept), 2):
        offs = (offs[:, None] + np.arange(kept[k], dtype=np.int64) * kept[k + 1]).reshape(-1)
    starts, stops = read_rows(buf, offs, width, stop_delta)
    check_rows(starts, stops, var)
    if stride != istride:  # already a stepping view: index units are not row positions
        return None
    first, count = slice_rows(stops - starts, item)
    if not istride:  # items of no bytes (`var * 0 * T`): any `count` of a row's are its slice
        first = np.zeros_like(first)
    head = memory.MemoryBlock(16 * max(len(offs), 1), keep=[owner])
    pairs = head.buffer[:16 * len(offs)].view(np.int64).reshape(len(offs), 2)
    np.add(starts, first, out=pairs[:, 0])
    pairs[:, 0][count == 0] = 0
    np.add(pairs[:, 0], count, out=pairs[:, 1])
    step_bytes = 16
    for k in range(len(kept) - 2, -1, -2):  # the kept dims become C-contiguous over the pairs
        kept[k + 1] = step_bytes
        step_bytes *= kept[k]
    return head, replace(var, width=8, stop_delta=8, stride=stride * step).words


def index_type(t: T.Type, dims: list) -> T.Type:
    """Type of `dims` applied to `t` by the copying path (a consumed `?var` gives options)."""
    if not dims:
        return t
    item, rest = dims[0], dims[1:]
    if item is None:
        return T.FixedDim(1, index_type(t, rest))
    opt = isinstance(t, T.Option)
    t = t.elem if opt else t
    elem = index_type(t.elem, rest)
    if isinstance(item, int):
        return T.Option(elem) if opt and not isinstance(elem, T.Option) else elem
    if isinstance(t, T.FixedDim):
        out: T.Type = T.FixedDim(len(range(*item.indices(t.size))), elem)
    else:
        out = T.VarDim(elem)
    return T.Option(out) if opt else out


def index_values(v: object, t: T.Type, dims: list, path: list) -> object:
    """Python-level `dims` applied to nested lists `v` (rows too short raise IndexError)."""
    if not dims:
        return v
    item, rest = dims[0], dims[1:]
    if item is None:
        return [index_values(v, t, rest, path)]
    if isinstance(t, T.Option):
        if v is None:
            return None
        t = t.elem
    if isinstance(item, int):
        i = item + len(v) if item < 0 else item
        if not 0 <= i < len(v):
            where = "row " + ", ".join(map(str, path)) if path else "the array"
            raise IndexError(f"index {item} is out of bounds: {where} has {len(v)} elements")
        return index_values(v[i], t.elem, rest, path + [i])
    return [index_values(v[i], t.elem, rest, path + [i]) for i in range(*item.indices(len(v)))]

"""Strided views of arrays described by arrmeta: index items -> (type, arrmeta, pointer).

`Array.__getitem__` builds its views here. Ints, slices, `...`, `None` and field names
become a new type and arrmeta over the same memory; options and var dims are followed
through their masks and {begin, size} elements (docs/layout.md).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from lazyk import arrmeta as M
from lazyk import memory
from lazyk import types as T
from lazyk.errors import NotSupportedError

DIM_ITEMS = (int, np.integer, slice)


def normalize_index(t: T.Type, items: tuple) -> tuple[list, list[str]]:
    """Dim items with `...` expanded, and the field names (applied after the dims)."""
    names = [i for i in items if isinstance(i, str)]
    dims = [i for i in items if not isinstance(i, str)]
    for i in dims:
        if not (i is None or i is Ellipsis or isinstance(i, DIM_ITEMS)):
            raise IndexError(f"lazyk arrays take ints, slices, ..., None and field names as "
                             f"indices, not {type(i).__name__}")
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

    Slicing a var dim may make a new {begin, size} block (then the new owner, which keeps
    the old one alive); the rows themselves are never copied.
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
        ref, stride, offset = meta[at:at + 3]
        if single:
            begins, sizes = M.read_pairs(cur_buf, np.array([cur], np.int64))
            begin, size = int(begins[0]), int(sizes[0])
            block = memory.lookup(ref)
            if isinstance(item, int):
                i = item + size if item < 0 else item
                if not 0 <= i < size:
                    raise IndexError(f"index {item} is out of bounds for a row of {size} "
                                     "elements")
                cur_buf, cur = block.buffer, begin + offset + i * stride - block.address
                # The row's block holds everything the view reaches (its children via keep).
                base, owner = block.address, block
                t, at = t.elem, at + 3
                continue
            start, _, step = item.indices(size)
            m = len(range(*item.indices(size)))
            # A new {begin, size} element; the rows stay where they are.
            head = memory.MemoryBlock(16 * (1 + M.n_shadows(t)), keep=[owner])
            pair = np.array([(begin + (start * stride if m else 0), m)], M.POINTER_SIZE_DTYPE)
            head.buffer[:16] = pair.view(np.uint8)
            owner, cur_buf, cur, base = head, head.buffer, 0, head.address
            wrap.append(T.VarDim)
            out_meta += [ref, stride * step, offset]
        elif isinstance(item, slice) and item == slice(None):
            wrap.append(T.VarDim)
            out_meta += [ref, stride, offset]
        elif isinstance(item, slice) and adjust is None and T.Option not in wrap:
            # Only fixed dims kept above: re-point every row in a new {begin, size} block.
            head = M.reslice_rows(cur_buf, cur, out_meta, item, stride, owner,
                                  M.n_shadows(t))
            owner, cur_buf, cur, base = head, head.buffer, 0, head.address
            wrap.append(T.VarDim)
            out_meta += [ref, stride * (item.step or 1), offset]
        else:
            return None
        adjust = len(out_meta) - 1
        single = False
        t, at = t.elem, at + 3
    for n in names:
        optional = isinstance(t, T.Option)
        if optional:  # a field of a maybe-missing record is maybe missing: `?{x: T}`.x is `?T`
            wrap.append(T.Option)
            kept_options.append((len(out_meta), adjust))
            out_meta.append(meta[at])
            t, at = t.elem, at + 1
        if not isinstance(t, T.Record) or n not in t.names:
            raise KeyError(f"type '{t}' has no field {n!r}")
        k = t.names.index(n)
        if optional and isinstance(t.fields[k][1], T.Option):
            raise NotSupportedError(f"field {n!r} of '?{t}': an option inside an option has "
                                    "two masks; read it with to_list()")
        shift(meta[at + k])
        at = M.field_meta_positions(t, at)[k]
        t = t.fields[k][1]
    out_meta += meta[at:at + M.meta_len(t)]
    for w in reversed(wrap):
        t = w(t)
    return t, tuple(out_meta), base + cur, owner

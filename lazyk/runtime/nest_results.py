"""The arrays a loop nest's values become (`lazyk.runtime.nest_run`): fixed and var dims
over the counted offsets (`nest_result`), the values and present flags of a reduction
(`nest_reduced`), missing rows against a fixed dim (`?n`: `fixed_rows` lays them out,
`var_rows` reads them as `?var` rows of n elements), and arrays rebuilt from a columns tree
(`tree_array`, `rows_of`). NumPy work, no Python per row."""
from __future__ import annotations

import numpy as np

from lazyk.arrays import arrmeta as M
from lazyk.arrays.array import Array, array, masked
from lazyk.arrays.buffers import offsets_array, option_fixed_rows, regular, text_array
from lazyk.arrays.columns import columns
from lazyk.arrays.memory import MemoryBlock
from lazyk.arrays.trees import Leaf, Lists, Masked, Regular, Text
from lazyk.codegen.levels import VAR
from lazyk.errors import NotSupportedError
from lazyk.frontend.ops import ARG_REDUCTIONS, OPS
from lazyk.runtime.ragged_rules import seed
from lazyk.types import FixedDim, Option, VarDim


def fixed_rows(result, present: dict):
    """`result` with the rows of result level p missing where `present[p]` is 0 (rows in
    nest order: every row of a level counted, also under a missing fixed row): `?n` dims,
    at any number of levels, over any dims. Laid out with NumPy, no Python per row: rows
    over fixed dims and values get the values then one shadow for the rows' present
    bytes (`_option_rows`); others a copy of their index block with that shadow after it
    (`arrays.buffers.option_fixed_rows`)."""
    if not present:
        return result
    top = isinstance(result.type, FixedDim)
    tree = columns(result if top else result[None])
    marks = {p + (not top): np.asarray(v) != 0 for p, v in present.items()}

    if 0 in marks:  # the whole result is one row
        got = tree_array(Regular(result.type.size, tree), 1, None, marks, 0) if top \
            else None
        got = None if got is None else got[0]
    else:
        got = tree_array(tree, result.type.size if top else 1, None if top else (), marks)
    if got is None:
        raise NotSupportedError(f"missing rows against a fixed dim (`?n` rows) in a result "
                                f"of type {result.type}: its layout has no room for them")
    return got


def var_rows(arr) -> tuple:
    """`arr` (`N * ?n * T`: missing rows against a fixed dim) with each `?n` dim as a
    `?var` dim whose rows all have n elements (offsets 0, n, 2n, ...; a missing row keeps
    its n slots, which nothing reads), and {dim: n}: the nest reads that, with a fixed n
    to pair (`lazyk.frontend.expr`). (arr, {}) for an array without `?n` dims. The values stay in
    place; only the offsets are new (NumPy, no Python per row)."""
    sizes, t, j = {}, arr.type, 0
    while isinstance(t, (FixedDim, VarDim, Option)):
        if isinstance(t, Option):
            t = t.elem
            if not isinstance(t, (FixedDim, VarDim)):
                break
            if isinstance(t, FixedDim):
                sizes[j] = t.size
        t, j = t.elem, j + 1
    if not sizes:
        return arr, {}
    if 0 in sizes:
        raise NotSupportedError(f"expressions over {arr.type}: an outermost `?n` dim")
    top = isinstance(arr.type, FixedDim)
    levels = {d + (not top) for d in sizes}

    def walk(node, count, level):
        if node.length() > count:  # (content past the last row: a sliced Arrow array's)
            node = node.slice(0, count)
        if isinstance(node, (Leaf, Text)) or isinstance(node, Masked) and \
                isinstance(node.child, (Leaf, Text)):
            return node
        if isinstance(node, Masked):
            return Masked(node.present, walk(node.child, count, level))
        if isinstance(node, Regular):
            n = node.size
            inner = walk(node.child, count * n, level + 1)
            if level in levels:
                return Lists(np.arange(count + 1, dtype=np.int64) * n, inner)
            return Regular(n, inner, count)
        return Lists(node.offsets, walk(node.child, int(node.offsets[-1]), level + 1))
    count = arr.type.size if top else 1
    got = tree_array(walk(columns(arr if top else arr[None]), count, 1), count,
                     None if top else ())
    if got is None:
        raise NotSupportedError(f"expressions over {arr.type}: its layout of missing rows "
                                "against a fixed dim")
    return got, sizes


def tree_array(node, count: int, outer=None, marks=None, level: int = 1):
    """The lazyk Array of a columns node describing `count` elements (`outer`: the fixed
    dims of an outermost var dim, as `offsets_array`), with the rows at the levels of
    `marks` missing where it is False (`?n`); None for a form it does not build."""
    marks = marks or {}
    if level in marks:
        if not isinstance(node, Regular):
            return None
        got = _option_rows(node, marks[level])
        if got is None:
            inner = tree_array(node.child, count * node.size, None, marks, level + 1)
            got = None if inner is None else option_fixed_rows(inner, count, node.size,
                                                           marks[level])
        return got
    valid, lists = node.unwrap()
    if isinstance(lists, Leaf):
        return array(lists.values) if valid is None else masked(lists.values, valid)
    if isinstance(lists, Text):
        return text_array(lists.offsets, lists.chars, valid, lists.type_name)
    if isinstance(node, Regular):
        got = tree_array(node.child, count * node.size, None, marks, level + 1)
        return None if got is None else rows_of(got, count, node.size)
    if not isinstance(lists, Lists):
        return None
    off, child = lists.offsets, lists.child
    got = tree_array(child, child.length(), None, marks, level + 1)  # (all its items:
    # rows sliced from the middle leave some before and after them)
    return None if got is None else offsets_array(off, got, valid, outer=outer, check=None)


def rows_of(inner, count: int, n: int):
    """`count * n * X` over `inner` (`count * n` elements of X; `regular`, which cannot
    tell the count when n is 0)."""
    if n:
        return regular(inner, n)
    owner = inner.owner if isinstance(inner.owner, MemoryBlock) else inner.to_numpy()
    return Array.from_parts(FixedDim(count, FixedDim(0, inner.type.elem)),
                            (count, 0, 0, inner.meta[1]) + tuple(inner.meta[2:]), inner.ptr,
                            owner, check_strings=False)


def _option_rows(node, valid):
    """`L * ?n * X` from a columns node of `L * n * X` (X fixed dims over values) and each
    row's present flag, or None for other forms."""
    if not isinstance(node, Regular):
        return None
    shape, x = [node.size], node.child
    while isinstance(x, Regular):
        shape.append(x.size)
        x = x.child
    mask, x = x.unwrap()
    if not isinstance(x, Leaf) or 0 in shape or not len(valid):
        return None  # (rows of no values: no room for their present bytes)
    values = np.ascontiguousarray(x.values)
    rows = len(valid)
    if values.size != rows * int(np.prod(shape)):
        return None
    size = values.nbytes
    block = MemoryBlock((2 + (mask is not None)) * size, zeroed=False)
    block.buffer[:size] = values.view(np.uint8).reshape(-1)
    block.buffer[size:] = 0  # (the shadows: only each row's / item's first byte is set)
    item = values.dtype.itemsize
    rowbytes = size // rows if rows else item * int(np.prod(shape))
    block.buffer[size:2 * size].reshape(rows, rowbytes)[:, 0] = valid
    elem = M.type_from_numpy(values.dtype)
    meta = []
    if mask is not None:
        block.buffer[2 * size:].reshape(-1, item)[:, 0] = mask
        elem, meta = Option(elem), [2 * size]
    step = item
    for n in reversed(shape):
        meta[:0] = [n, step]
        elem = FixedDim(n, elem)
        step *= n
    t = FixedDim(rows, Option(elem))
    return Array.from_parts(t, (rows, rowbytes, size) + tuple(meta), block.address, block,
                            check_strings=False)


def nest_reduced(out, flags, reduce_arg, any_mask: bool, skipna: bool, whole=False,
                 row_name=str):
    """Values and present flags of a reduction (the rules of `tests/ragged_reference.py`).
    `row_name(k)`: how an error names result value k (its path in the result's lists)."""
    op = reduce_arg[0]
    if op in ARG_REDUCTIONS:  # a position where something was folded (flag bit 0)
        valid = (flags & 1).view(bool)
        if any_mask:
            return out, valid
        if not valid.all():  # fixed dims only: NumPy's error
            where = "array" if whole else f"row {row_name(int(np.argmin(valid)))}"
            raise ValueError(f"attempt to get {op} of an empty sequence ({where})")
        return out, None
    extremum = OPS[op].no_empty_fold
    seeded = extremum and len(reduce_arg) > 4
    if not (any_mask or extremum or (op == "mean" and out.dtype.kind in "iu")):
        return out, None  # a sum over plain values: every row has one (no pass over flags)
    valid = (flags & 1).view(bool)  # (0 / 1 bytes: one pass, no copy to bool)
    int_mean = op == "mean" and out.dtype.kind in "iu"
    nonempty = (flags & 2) != 0 if seeded or int_mean else None
    values = out
    if seeded:
        values, valid = seed(values, valid, reduce_arg, ~nonempty, any_mask and not skipna)
    if not any_mask:
        if extremum and not valid.all():
            where = "array" if whole else f"row {row_name(int(np.argmin(valid)))}"
            raise ValueError(f"zero-size {where} in reduction {op}, which has no identity: "
                             "pass initial=, or keep the rows that have items")
        if int_mean and not nonempty.all():
            where = "array" if whole else f"row {row_name(int(np.argmin(nonempty)))}"
            raise ValueError(f"zero-size {where} in a mean of dtype {out.dtype}: an "
                             "integer has no NaN")
        return values, None
    if skipna:
        return values, (valid if (extremum and not seeded) or op == "mean" else None)
    return values, valid


def row_path(k: int, dims: list, offsets: dict) -> str:
    """Result value k named by its path in the result's lists, `[i, j]` (`dims`: per
    result level a size or VAR; `offsets`: the var levels' offsets by level)."""
    path = []
    for p in range(len(dims) - 1, 0, -1):
        if isinstance(dims[p], int):
            k, at = divmod(k, dims[p]) if dims[p] else (k, 0)
        else:
            off = offsets[p]
            parent = int(np.searchsorted(off, k, "right")) - 1
            k, at = parent, k - int(off[parent])
        path.append(at)
    return str(k) if not path else str([k, *path[::-1]])


def _in_place(packed: tuple, mask: np.ndarray, shape: tuple) -> Array:
    """`masked_empty`'s one-dim `n * ?T` array (values written) with `mask` as its present
    bytes, viewed as `shape` (C order, n elements)."""
    arr, values, present = packed
    if mask.ctypes.data != present.ctypes.data:  # (else the kernel wrote them there)
        present[...] = mask.reshape(present.shape)
    values.reshape(shape)  # (the same elements: else ValueError, as a copy would raise)
    if shape == values.shape:
        return arr
    t, meta, step = arr.type.elem, [], values.itemsize
    for n in reversed(shape):
        t = FixedDim(n, t)
        meta[:0] = [n, step]
        step *= n
    return Array.from_parts(t, tuple(meta) + (arr.meta[-1],), arr.ptr, arr.owner,
                            check_strings=False)


def nest_result(values, mask, dims, offsets, xs, validity=None, packed=None):
    """The lazyk Array of a nest's result: fixed dims, var dims over their offsets (`?var`
    where `validity` has the level's present rows). `packed`: `masked_empty`'s (array,
    values, present bytes) whose values are `values` (written in place): the mask goes
    into its present bytes, no copy of the values."""
    var_at = [k for k, d in enumerate(dims) if d is VAR]
    if not var_at:
        shape = tuple(int(d) for d in dims)
        if packed is not None and mask is not None:
            return _in_place(packed, mask, shape)
        values = np.asarray(values, order="C").reshape(shape)
        return array(values) if mask is None else \
            masked(values, mask.reshape(shape))
    d = var_at[-1]
    tail = tuple(int(n) for n in dims[d + 1:])
    shape = (xs[d] if d < len(xs) else len(values),) + tail
    if packed is not None and mask is not None:
        cur = _in_place(packed, mask, shape)
    else:
        values = values.reshape(shape)
        cur = array(np.ascontiguousarray(values)) if mask is None else \
            masked(values, mask.reshape(shape))
    for k in range(d, -1, -1):
        if dims[k] is VAR:
            outer = None if k != var_at[0] else tuple(int(n) for n in dims[:k])
            cur = offsets_array(offsets[k], cur, (validity or {}).get(k), outer=outer,
                                check=False)
        elif k > var_at[0] and dims[k]:
            cur = regular(cur, int(dims[k]))
        elif k > var_at[0]:  # `m * 0 * X`: m (the elements of the level above) from xs
            t = FixedDim(xs[k - 1], FixedDim(0, cur.type.elem))
            owner = cur.owner if isinstance(cur.owner, MemoryBlock) else cur.to_numpy()
            cur = Array.from_parts(t, (xs[k - 1], 0, 0, cur.meta[1]) + tuple(cur.meta[2:]),
                                   cur.ptr, owner, check_strings=False)
    return cur

"""Column trees: a lazyk array as a tree of NumPy buffers and back.

A tree is made of the nodes of `lazyk.arrays.trees` (`Leaf`, `Masked`, `Lists`, `Regular`,
`Text`, `Record`): the form Arrow, Awkward, Dask partitions and the NumPy row operations
(`restructure`) read.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from lazyk import types as T
from lazyk.arrays import arrmeta as M
from lazyk.arrays import memory
from lazyk.arrays.array import Array, array, masked, use_field_copy, use_pickle_form
from lazyk.arrays.buffers import (
    ColumnArray,
    column_lists,
    column_records,
    offsets_array,
    option_fixed_rows,
    regular,
    text_array,
    text_buffers,
    text_from_numpy,
)
from lazyk.arrays.foreign import is_pandas
from lazyk.arrays.structs import field_view, records_array, unsupported
from lazyk.arrays.trees import (
    Column,
    Leaf,
    Lists,
    Masked,
    OptionLeaf,
    Record,
    Regular,
    Text,
    Unread,
    offsets_of,
    rising,
    rows_at,
)
from lazyk.errors import NotSupportedError


def fixed_text_rows(a: Array) -> Array:
    """`a` (dims, `?var` rows and `?T` over `fixed_string[n]` or `fixed_bytes[n]`
    elements) with `string` (`bytes`) elements instead, for the string operations: the
    fixed strings are packed into UTF-8 characters and 16-byte `{begin, size}` elements (a
    copy of the elements only); fixed bytes keep their bytes in place (each value is all
    n of them); the rows' indices are used in place where they are offsets. An array with
    a fixed dim of size 0 holds no element: it is rebuilt from its (empty) rows."""
    def rebuild(col: Column) -> Array:
        if isinstance(col, Leaf):
            if col.values.dtype.kind in "USV":
                return rebuild(fixed_text(col.values))
            return array(col.values)
        if isinstance(col, Text):
            return text_array(col.offsets, col.chars, None, col.type_name)
        if isinstance(col, Lists):
            return offsets_array(col.offsets, rebuild(col.child))
        if isinstance(col, Regular):
            return regular(rebuild(col.child), col.size)
        child = col.child if isinstance(col, Masked) else None
        if isinstance(child, Leaf) and child.values.dtype.kind in "USV":
            child = fixed_text(child.values)
        if isinstance(child, Text):
            return text_array(child.offsets, child.chars, col.present, child.type_name)
        if isinstance(child, Lists):
            return offsets_array(child.offsets, rebuild(child.child), col.present)
        raise NotSupportedError(f"string operations on {a.type}: fixed, var and ?var dims "
                                "over fixed_string[n], fixed_bytes[n] or an option of them")
    t = a.type
    if isinstance(t.elem if isinstance(t, T.Option) else t, T.VarDim):
        # an outermost (?)var dim: the one row of a fixed dim
        one = Array.from_parts(T.FixedDim(1, t), (1, 16) + tuple(a.meta), a.ptr, a.owner,
                               a.readonly, check_strings=False)
        return fixed_text_rows(one)[0]
    while isinstance(t, (T.Dim, T.Option)):
        if isinstance(t, T.FixedDim) and t.size == 0:  # no element: empty rows only
            return array(a.to_list(), type=re.sub(r"fixed_(string|bytes)\[[^\]]*\]$",
                                                  r"\1", str(a.type)))
        t = t.elem
    return rebuild(columns(a))


def fixed_text(arr: np.ndarray, dest: str | None = None) -> Text:
    """A column tree leaf of `fixed_string[n]` elements (NumPy `U` / `S`) as `string`
    elements (offsets, characters: a copy). lazyk reads `S` text as UTF-8 (`str_len` counts
    code points), so it becomes `string` too; NotSupportedError for bytes that are not
    UTF-8, which Arrow and Awkward strings cannot hold. `fixed_bytes[n]` (NumPy `V`)
    elements become `bytes` of all their n bytes, over the same memory when it is
    contiguous."""
    if arr.dtype.kind == "V":
        n, width = len(arr), arr.dtype.itemsize
        chars = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        return Text("bytes", np.arange(n + 1, dtype=np.int64) * width, chars)
    offsets, chars = text_buffers(arr)
    if dest and arr.dtype.kind == "S" and len(chars) and chars.max() >= 128:
        inner = offsets[:-1][offsets[:-1] < len(chars)]
        try:  # valid as a whole, and no string starts inside a character: each is valid
            bytes(chars).decode("utf-8")
            ok = not ((chars[inner] & 0xC0) == 0x80).any()
        except UnicodeDecodeError:
            ok = False
        if not ok:
            raise NotSupportedError(
                f"fixed_string[{arr.dtype.itemsize}] (NumPy {arr.dtype.str}) elements that "
                f"are not UTF-8 text have no {dest} string type; convert the NumPy 'S' "
                f"data itself (pyarrow.array and awkward.Array read it as binary)")
    return Text("string", offsets, chars)


def as_array(x: Any, fn: str) -> Array:
    """`x` as a lazyk Array: NumPy arrays are wrapped, expressions and lazy records
    (`lazyk.zip`, `r[mask]`) evaluated."""
    if isinstance(x, Array):
        return x
    if isinstance(x, np.ndarray):
        return array(x)
    if hasattr(x, "eval") and (hasattr(x, "node") or hasattr(x, "leaves")):
        return x.eval()  # a lazyk expression, or lazy records
    raise TypeError(f"{fn} takes a lazyk Array, expression, records or NumPy array, not "
                    f"{type(x).__name__}")


def columns(a: Array, lists: int | None = None) -> Column:
    """The array as a tree of buffers (`lazyk.arrays.trees`; a tuple's field names are its
    positions 0, 1, ... as ints). Offsets-form var dims and lazyk mask blocks give their
    buffers in place; other layouts are repacked first. `lists`: only that many list levels
    are read; the items of the var lists there are left unread (an `Unread` node: what
    needs only the lists' lengths skips their content; 0: only whether the items are
    missing is read, not their lists)."""
    t = a.type
    if not isinstance(t, T.FixedDim):
        raise NotSupportedError(f"conversion of '{t}': needs a leading fixed dimension (a "
                                "row x[i] of rows: x[i:i + 1], or x[i][None])")
    if lists == 0 and isinstance(t.elem, (T.VarDim, T.FixedDim)):
        return Unread(t.size)  # (lists are never missing themselves: not even their rows read)
    if a._columns is not None:  # records read from columns: those columns, not the structs
        if isinstance(t.elem, T.Record):
            return Record(tuple(a._columns), [columns(c) for c in a._columns.values()])
        if isinstance(a, ColumnArray) and a._parts is not None:
            offsets, content, valid = a._parts
            rows = Lists(offsets, Unread(content.type.size) if lists == 1 else
                         columns(content, _below(lists)))
            return rows if valid is None else Masked(valid, rows)
    if M.is_plain(t) and not _has_tuple(t):
        arr = a.to_numpy()
        if arr.ndim == 1 and arr.dtype.names:  # records of numbers: a field view each
            return Record(arr.dtype.names, [columns(array(arr[k])) for k in arr.dtype.names])
        if arr.ndim == 1:
            return Leaf(arr)
        flat = np.ascontiguousarray(arr).reshape((arr.shape[0] * arr.shape[1],) +
                                                 arr.shape[2:])  # (-1 fails on size 0)
        return Regular(arr.shape[1], columns(array(flat)), _count(arr.shape))
    n, stride, x, meta, owner = t.size, a.meta[1], t.elem, a.meta, a.owner
    if not isinstance(owner, memory.MemoryBlock) and not M.is_plain(t):
        return columns(_repack(a))
    if isinstance(x, T.FixedDim):
        if x.size == 1 and stride != meta[3]:  # (rows of one: the outer stride steps)
            one = Array.from_parts(T.FixedDim(n, x.elem), (n, stride) + meta[4:], a.ptr,
                                   owner, a.readonly, check_strings=False)
            return Regular(1, columns(one, _below(lists)))
        if stride != x.size * meta[3]:
            return columns(_repack(a))
        flat = Array.from_parts(T.FixedDim(n * x.size, x.elem), (n * x.size,) + meta[3:],
                                a.ptr, owner, a.readonly, check_strings=False)
        return Regular(x.size, columns(flat, _below(lists)), _count((n, x.size)))
    if isinstance(x, T.Option):
        mask = _strided_bytes(owner.buffer, a.ptr - owner.address + meta[2], stride, n) != 0
        inner = Array.from_parts(T.FixedDim(n, x.elem), (n, stride) + meta[3:], a.ptr, owner,
                                 a.readonly, check_strings=False)
        return Masked(mask, columns(inner, lists))
    if isinstance(x, T.VarDim):
        var = M.rows_at(meta, 2)
        w, delta, content, istride, length = var.width, var.stop_delta, var.content, \
            var.index_stride, var.length
        if var.stride != istride:
            return columns(_repack(a))
        offsets = None
        if stride == w == delta:  # offsets form: the n + 1 indices in place
            offsets = memory.view(a.ptr, (n + 1,), (w,), M.INDEX_DTYPES[w], owner, True)
            starts, stops = offsets[:-1], offsets[1:]
        else:
            offs = a.ptr - owner.address + np.arange(n, dtype=np.int64) * stride
            starts, stops = M.read_rows(owner.buffer, offs, w, delta)
        if offsets is None or not rising(offsets, length):
            M.check_rows(starts, stops, var)  # (names the first bad row)
        child = Array.from_parts(T.FixedDim(length, x.elem), (length, istride) +
                                 meta[2 + M.VAR_META:], content, memory.lookup(var.ref),
                                 a.readonly, check_strings=False)
        if offsets is None:
            if n and not bool(np.all(stops[:-1] == starts[1:])):
                # rows out of order (gathered rows): their items taken in row order
                return rows_at(columns(child), starts, (stops - starts).astype(np.int64))
            # Rows back to back (lazyk's own pairs): their indices become offsets.
            offsets = (np.concatenate([starts[:1], stops]) if n else np.zeros(1, np.int64)
                       ).astype(M.INDEX_DTYPES[w])  # the same index width
        return Lists(offsets, Unread(length) if lists == 1 else columns(child, _below(lists)))
    if M.is_varlen(x):
        return Text(x.name, *_text_columns(a))
    if isinstance(x, (T.Record, T.Tuple)):  # each field a view of its own
        keys = x.names if isinstance(x, T.Record) else tuple(range(len(x.types)))
        return Record(keys, [columns(field_view(a, k)) for k in range(len(keys))])
    if M.is_plain(t):  # numbers inside a tuple
        return Leaf(a.to_numpy())
    return unsupported(t)


def _below(lists: int | None) -> int | None:
    return None if lists is None else lists - 1


def _strided_bytes(buf: np.ndarray, start: int, step: int, n: int) -> np.ndarray:
    """Bytes start, start + step, ... (n of them) of `buf`, bounds-checked: a view."""
    if n == 0:
        return np.zeros(0, np.uint8)
    lo, hi = sorted((start, start + step * (n - 1)))
    if lo < 0 or hi >= len(buf):
        raise ValueError(f"arrmeta points outside its memory block ({lo}..{hi + 1} of "
                         f"{len(buf)})")
    return np.lib.stride_tricks.as_strided(buf[start:], (n,), (step,), writeable=False)


def _count(shape: tuple) -> int | None:
    """The row count a `Regular` node of rows of size 0 carries (its child cannot tell)."""
    return shape[0] if shape[1] == 0 else None


def _has_tuple(t: T.Type) -> bool:
    """Whether a tuple type sits anywhere in `t` (NumPy would name its fields f0, f1, ...)."""
    if isinstance(t, T.Tuple):
        return True
    if isinstance(t, T.Record):
        return any(map(_has_tuple, t.types))
    return isinstance(t, (T.Dim, T.Option)) and _has_tuple(t.elem)


def _text_columns(a: Array) -> tuple:
    """(offsets, characters) of `N * string` / `N * bytes`: the characters in place where
    the strings lie back to back in one block (as `text_array` and Arrow lay them out), else
    gathered into one buffer (vectorized, per block)."""
    n, stride, owner = a.type.size, a.meta[1], a.owner
    offs = a.ptr - owner.address + np.arange(n, dtype=np.int64) * stride
    begins, sizes = M.read_pairs(owner.buffer, offs)
    offsets = offsets_of(sizes)
    blocks = M.string_blocks(memory.lookup(a.meta[2]))
    head = blocks[0]
    if n and int(begins[0]) >= head.address and \
            int(begins[0]) + int(offsets[-1]) <= head.address + head.size and \
            bool(np.all(begins - begins[0] == offsets[:-1])):
        lo = int(begins[0]) - head.address
        return offsets, head.buffer[lo:lo + int(offsets[-1])]
    chars, todo = np.empty(int(offsets[-1]), np.uint8), np.ones(n, bool)
    for block in blocks:
        starts = begins - block.address
        # (an empty string reads nothing: a missing one's element is {0, 0})
        inside = todo & (((starts >= 0) & (starts + sizes <= block.size)) | (sizes == 0))
        k = sizes[inside]
        within = np.arange(int(k.sum())) - np.repeat(np.cumsum(k) - k, k)
        chars[np.repeat(offsets[:-1][inside], k) + within] = \
            block.buffer[np.repeat(starts[inside], k) + within]
        todo &= ~inside
    if todo.any():
        raise ValueError("string data points outside its memory blocks")
    return offsets, chars


def option_field(a: Array, name: str) -> Array:
    """Field `name` of records that may be missing whose field may be missing too
    (`... * ?{name: ?T}`), as a new `... * ?T` array (read-only): missing where the record
    or the field is, as Arrow and Awkward read it. One mask cannot say both, so this is a
    copy: the field's values and the AND of the two masks (vectorized)."""
    if a.type.ndim == 0:
        return option_field(a[None], name)[0]
    out = build_columns(_pick(columns(a), name))
    return Array._from_parts(out.type, out.meta, out.ptr, out.owner, True)


def _pick(col: Column, name: str) -> Column:
    """The column tree of field `name` under the dims of `col` (a `Masked` over records
    ANDs its mask into the field's)."""
    if isinstance(col, Record):
        keys = [str(k) for k in col.names]  # a tuple's fields are its positions "0", "1", ...
        if name not in keys:
            raise KeyError(f"the records have no field {name!r}")
        return col.children[keys.index(name)]
    if isinstance(col, Masked) and isinstance(col.child, Record):
        f = _pick(col.child, name)
        return Masked(col.present & f.present, f.child) if isinstance(f, Masked) else \
            Masked(col.present, f)
    if isinstance(col, Masked):
        return Masked(col.present, _pick(col.child, name))
    if isinstance(col, Lists):
        return Lists(col.offsets, _pick(col.child, name))
    if isinstance(col, Regular):
        return Regular(col.size, _pick(col.child, name), col.count)
    raise KeyError(f"no records with a field {name!r}")


def build_columns(col: Column, read_only: bool = False) -> Array:
    """A lazyk array from a column tree (`columns`): buffers used as they are.
    `read_only`: records that cannot be missing read their fields from the columns in
    place, and are read-only (`column_records`), as `lazyk.from_awkward` reads them."""
    if isinstance(col, OptionLeaf):
        return col.array
    if isinstance(col, Leaf):
        return array(np.ascontiguousarray(col.values))
    if isinstance(col, Regular):  # (rows of size 0: their count)
        return regular(build_columns(col.child, read_only), col.size, col.count)
    if isinstance(col, Lists):
        lists = column_lists if read_only else offsets_array
        return lists(col.offsets, build_columns(col.child, read_only), check=None)
    if isinstance(col, Text):
        return text_array(col.offsets, col.chars, None, col.type_name)
    if isinstance(col, Record):
        records = column_records if read_only else records_array
        return records(list(col.names), [build_columns(f, read_only) for f in col.children])
    mask, child = col.present, col.child
    if isinstance(child, Leaf):
        return masked(child.values, mask)
    if isinstance(child, Lists):
        lists = column_lists if read_only else offsets_array
        return lists(child.offsets, build_columns(child.child, read_only), mask, check=None)
    if isinstance(child, Text):
        return text_array(child.offsets, child.chars, mask, child.type_name)
    if isinstance(child, Record):
        return records_array(list(child.names), [build_columns(f) for f in child.children],
                             mask)
    if isinstance(child, Regular):  # `?n` rows: laid out, then each row's present byte
        got = option_fixed_rows(build_columns(child.child), len(mask), child.size, mask)
        if got is not None:
            return got
    raise NotSupportedError("missing fixed-size rows (?N * T) under a var dim or in a "
                            "field of records (they are results, not rebuilt from columns)")


def counted_columns(a: Array) -> Column:
    """`columns(a)` with the count of rows of size 0 on their `Regular` nodes, which
    `build_columns` needs and their child cannot tell."""
    return _counted(columns(a), a.type.size)


def _counted(col: Column, n: int) -> Column:
    if isinstance(col, Masked):
        return Masked(col.present, _counted(col.child, n))
    if isinstance(col, Lists):  # (the content's rows)
        return Lists(col.offsets, _counted(col.child, int(col.offsets[-1])))
    if isinstance(col, Regular):
        return Regular(col.size, _counted(col.child, n * col.size), None if col.size else n)
    if isinstance(col, Record):
        return Record(col.names, [_counted(f, n) for f in col.children])
    return col


def column_buffers(a: Array) -> Column | None:
    """The column tree of `a`'s own rows, cut to what they reach (`build_columns` makes
    the array again: how ragged arrays pickle), or None where NumPy holds `a` or the tree
    cannot hold it."""
    if not isinstance(a.type, T.FixedDim) or M.is_plain(a.type) and a._columns is None:
        return None
    try:
        col = _trim(counted_columns(a))
    except NotSupportedError:
        return None
    return col if _buildable(col) else None


def _trim(col: Column) -> Column:
    """A column tree cut to the entries its rows reach, offsets starting at 0."""
    if isinstance(col, Lists):
        o = col.offsets
        lo, hi = int(o[0]), int(o[-1])
        return Lists(o - o[0] if lo else o, _trim(cut(col.child, lo, hi)))
    if isinstance(col, Text):  # only the characters its strings reach
        o = col.offsets
        return Text(col.type_name, o - o[0], col.chars[int(o[0]):int(o[-1])])
    if isinstance(col, Record):
        return Record(col.names, [_trim(f) for f in col.children])
    if isinstance(col, Masked):
        return Masked(col.present, _trim(col.child))
    if isinstance(col, Regular):
        return Regular(col.size, _trim(col.child), col.count)
    return col


def _buildable(col: Column) -> bool:
    if isinstance(col, (Leaf, Text)):
        return True
    if isinstance(col, Record):
        return all(map(_buildable, col.children))
    if isinstance(col, Masked) and not isinstance(col.child, (Leaf, Lists, Text, Record)):
        return False
    return _buildable(col.child)


def cut(col: Column, lo: int, hi: int) -> Column:
    """Entries lo..hi of a column tree (`columns.columns`)."""
    if isinstance(col, Leaf):
        return Leaf(col.values[lo:hi])
    if isinstance(col, Masked):
        return Masked(col.present[lo:hi], cut(col.child, lo, hi))
    if isinstance(col, Lists):
        return Lists(col.offsets[lo:hi + 1], col.child)
    if isinstance(col, Text):
        return Text(col.type_name, col.offsets[lo:hi + 1], col.chars)
    if isinstance(col, Record):
        return Record(col.names, [cut(f, lo, hi) for f in col.children])
    size = col.size
    return Regular(size, cut(col.child, lo * size, hi * size),
                   None if size else hi - lo)  # rows of size 0 carry their count


def _pickled(a: Array) -> tuple | None:
    """How `a` pickles as its buffers (`build_columns` rebuilds it: records read from
    columns stay so), or None where NumPy holds it or the tree does not give its type back."""
    col = column_buffers(a)
    if col is None:
        return None
    read_only = bool(a.readonly)
    if build_columns(col, read_only).type != a.type:
        return None
    return (build_columns, (col, read_only))


def _repack(a: Array) -> Array:
    """A copy in lazyk's packed form (contiguous rows), for views the tree cannot express."""
    return array(a.to_list(), a.type)


use_field_copy(option_field)  # `r.x` of `?{x: ?T}` records reads through it
use_pickle_form(_pickled)  # a ragged array or records pickle as their buffers


def text_input(x: Any) -> Any:
    """Lists of str (or bytes), NumPy `U` (or `S`) arrays and pandas columns as a lazyk
    `string` (`bytes`) array (a copy), lazyk `fixed_bytes[n]` arrays as `bytes` (over the
    same bytes); other inputs as they are."""
    if isinstance(x, Array):
        elem = x.type.dtype
        if isinstance(elem.elem if isinstance(elem, T.Option) else elem, T.FixedBytes):
            return fixed_text_rows(x)
    if isinstance(x, np.ndarray) and x.dtype.kind in "US" and 0 not in x.shape[1:]:
        return text_from_numpy(x)
    if isinstance(x, np.ndarray) and x.dtype.kind in "US":
        kind = "string" if x.dtype.kind == "U" else "bytes"
        return array(x.tolist(), type=" * ".join([*map(str, x.shape), kind]))
    if isinstance(x, (list, tuple)) or is_pandas(x):
        return array(x)
    return x


def converted(x: Array, dtype: np.dtype) -> Array:
    """Array `x` with its values converted to `dtype` (offsets and masks reused)."""
    if not x.shape:  # (a 0-d value: converted as a row of one)
        return converted(x[None], dtype)[0]
    def cast(node: Column) -> Column:
        mask, leaf = node.unwrap()
        leaf = Leaf(leaf.values.astype(dtype))
        return leaf if mask is None else Masked(mask, leaf)
    return build_columns(columns(x).at(len(x.shape) - 1, cast))

"""Python data -> lazyk type (inference) and -> memory (packing), level by level.

Both walk nested lists one nesting level at a time over a flat list of items, so a
1,000,000-element ragged list costs a few C-speed passes, not a Python call per element.
"""
from __future__ import annotations

import datetime
from itertools import chain, repeat
from numbers import Number
from operator import is_not
from typing import Any

import numpy as np

from lazyk import types as T
from lazyk.arrays.arrmeta import (
    POINTER_SIZE_DTYPE,
    fields_of,
    is_varlen,
    n_shadows,
    np_dtype,
    scatter,
    type_from_numpy,
)
from lazyk.arrays.indexpath import Subset, Where
from lazyk.arrays.memory import MemoryBlock
from lazyk.errors import ArrayConstructionError, NotSupportedError

SEQUENCES = (list, tuple, np.ndarray)
_NONE = type(None)
_PY_SCALARS = {bool: T.Scalar("bool"), int: T.Scalar("int64"), float: T.Scalar("float64"),
               complex: T.Scalar("complex128"), str: T.Scalar("string"),
               bytes: T.Scalar("bytes")}
_PY_TEMPORAL = ((datetime.datetime, "datetime"), (datetime.date, "date"),
                (datetime.time, "time"), (datetime.timedelta, "timedelta"))
_INT64 = (-(2**63), 2**63 - 1)


def _starts(lens: list[int]) -> np.ndarray:
    s = np.zeros(len(lens), np.int64)
    if len(lens) > 1:
        np.cumsum(lens[:-1], out=s[1:])
    return s


def _first(items: list, bad) -> int:
    # No bare next(): a StopIteration escaping here would end a caller's map() silently.
    for i, x in enumerate(items):
        if bad(x):
            return i
    raise ValueError("no item matches")  # callers look only where a match exists


def _bad_kinds(items: list, good) -> list[int]:
    """[index of the first item whose class fails `good`], or []; classes checked once each."""
    bad = {k for k in set(map(type, items)) if not good(k)}
    return [_first(items, lambda x: type(x) in bad)] if bad else []


def _describe(x: Any) -> str:
    return type(x).__name__


# ---------------------------------------------------------------- inference
def infer_type(obj: Any, tuples: bool = False) -> T.Type:
    """The lazyk type of nested Python data (ragged -> var, None -> option, str -> string;
    tuples: lists, as NumPy reads them, or tuple records with `tuples`, as `ak.from_iter`).
    Raises ArrayConstructionError for mixed incompatible items or non-rectangular nesting.
    """
    return _infer([obj], Where(), tuples=tuples)


def _infer(items: list, where: Where, missing_above: bool = False, tuples: bool = False):
    """`missing_above`: the items are fields of records that may be missing, whose lists are
    var rows (`?{t: var * string}`) as lists that may be missing are (fixed ones would be
    `?2 * string`, fixed rows that may be missing)."""
    kinds = set(map(type, items))
    if tuples and kinds - {_NONE} == {tuple}:
        return _infer_tuple(items, where, missing_above)
    optional = _NONE in kinds
    if optional:
        kinds.discard(_NONE)
        keep = np.flatnonzero(np.array(list(map(is_not, items, repeat(None))), dtype=bool))
        present = [items[i] for i in keep.tolist()]
        where = Subset(where, keep)
        items = present
    else:
        present = items
    seq = {k for k in kinds if issubclass(k, SEQUENCES)}
    if not kinds:
        t: T.Type = T.Scalar("float64")  # NumPy's choice for data with no values
    elif seq and seq == kinds:
        try:
            lens = list(map(len, present))
        except TypeError:  # 0-d NumPy arrays: no length
            i = _first(present, lambda x: isinstance(x, np.ndarray) and not x.ndim)
            raise ArrayConstructionError(
                f"item {where.name(i)} is a 0-d NumPy array ({present[i]!r:.40}): give its "
                "value (x.item()), or make the list a NumPy array first (np.asarray)") from None
        child = list(chain.from_iterable(present))
        try:
            elem = _infer(child, where.rows(_starts(lens)), tuples=tuples)
        except ArrayConstructionError as err:
            if tuple not in kinds or "type=" in str(err):
                raise
            raise ArrayConstructionError(  # (Python tuples read as lists, as NumPy reads them)
                f"{err} (tuples are read as lists; tuples of mixed items take a type, e.g. "
                "type='N * var * (int64, string)')") from None
        if not optional and not missing_above and len(set(lens)) == 1:
            t = T.FixedDim(lens[0], elem)
        else:
            t = T.VarDim(elem)
    elif seq:
        i = _first(items, lambda x: x is not None and isinstance(x, SEQUENCES))
        j = _first(items, lambda x: x is not None and not isinstance(x, SEQUENCES))
        raise ArrayConstructionError(
            f"non-rectangular data: item {where.name(i)} is a {_describe(items[i])} but item "
            f"{where.name(j)} is a {_describe(items[j])} ({items[j]!r})")
    elif all(issubclass(k, dict) for k in kinds):
        t = _infer_record(present, where, optional or missing_above, tuples)
    elif any(issubclass(k, dict) for k in kinds):
        i = _first(items, lambda x: isinstance(x, dict))
        j = _first(items, lambda x: x is not None and not isinstance(x, dict))
        raise ArrayConstructionError(
            f"records mixed with other items: item {where.name(i)} is a dict but item "
            f"{where.name(j)} is {items[j]!r:.40} ({_describe(items[j])})")
    else:
        t = _infer_scalar(items, kinds, where)
    return T.Option(t) if optional else t


def _infer_record(present: list[dict], where: Where, missing: bool,
                  tuples: bool = False) -> T.Type:
    """Every field any record has, in order of appearance; a field some records lack is
    missing there (`?T`), as Awkward reads such dicts. `missing`: the records may be
    missing (their fields' lists are var rows, `_infer`)."""
    keys = tuple(present[0])
    if any(tuple(d) != keys for d in present):
        keys = tuple(dict.fromkeys(k for d in present for k in d))
    return T.Record(tuple((k, _infer([d.get(k) for d in present], where.field(k), missing,
                                     tuples)) for k in keys))


def _infer_tuple(items: list, where: Where, missing_above: bool) -> T.Type:
    """Python tuples as tuple records (`(int64, string)`), as Awkward's `from_iter` reads
    them: one field per position, so every tuple has one length."""
    keep = [i for i, x in enumerate(items) if x is not None]
    present, optional = [items[i] for i in keep], len(keep) < len(items)
    for i, x in enumerate(present):
        if len(x) != len(present[0]):
            raise ArrayConstructionError(
                f"tuples of different lengths: item {where.name(keep[0])} has {len(present[0])}"
                f" items but item {where.name(keep[i])} has {len(x)} (a tuple is a record of "
                "its positions; use lists for lists)")
    sub = Subset(where, np.array(keep, np.int64)) if optional else where
    t = T.Tuple(tuple(_infer([x[k] for x in present], sub.field(k), missing_above or optional,
                             True) for k in range(len(present[0]) if present else 0)))
    return T.Option(t) if optional else t


def _scalar_of(kind: type, items: list) -> T.Type:
    if kind in _PY_SCALARS:
        return _PY_SCALARS[kind]
    if issubclass(kind, (np.str_, np.bytes_)):  # NumPy's str / bytes: Python's, sized
        return _PY_SCALARS[str if issubclass(kind, str) else bytes]
    if issubclass(kind, (np.datetime64, np.timedelta64)):  # the unit is the value's
        return T.from_numpy(np.array([x for x in items if type(x) is kind]).dtype)
    if issubclass(kind, np.generic):
        return T.from_numpy(np.dtype(kind))
    for base, t in _PY_SCALARS.items():
        if issubclass(kind, base):
            return t
    for base, text in _PY_TEMPORAL:  # (datetime before date: a datetime is a date)
        if issubclass(kind, base):
            return T.dshape(text)
    raise ArrayConstructionError(f"cannot store a {kind.__name__} in a lazyk array")


def _infer_scalar(items: list, kinds: set, where: Where) -> T.Type:
    ts = {k: _scalar_of(k, items) for k in kinds}
    text = {k for k, t in ts.items() if is_varlen(t)}
    if text and len(set(ts.values())) > 1:  # (str and np.str_ are one kind here)
        a = next(iter(text))
        b = next(k for k in kinds if ts[k] != ts[a])
        i = _first(items, lambda x: type(x) is a)
        j = _first(items, lambda x: type(x) is b)
        raise ArrayConstructionError(
            f"mixed incompatible types: {a.__name__} at {where.name(i)} and {b.__name__} "
            f"at {where.name(j)}")
    result = None
    floats = any(issubclass(k, (float, complex, np.inexact)) for k in kinds)
    for k, t in ts.items():
        if k is int and not floats:  # (beside floats, ints of any size are floats: NumPy's)
            t = _int_type(items, where)
        result = t if result is None else T.promote(result, t)
    return result


def _int_type(items: list, where: Where) -> T.Type:
    ints = items if len(set(map(type, items))) == 1 else [x for x in items if type(x) is int]
    lo, hi = min(ints), max(ints)
    if _INT64[0] <= lo and hi <= _INT64[1]:
        return T.Scalar("int64")
    if lo >= 0 and hi < 2**64:
        return T.Scalar("uint64")
    if lo >= _INT64[0] and hi < 2**64:  # each fits one of them, not both together
        i = _first(items, lambda x: type(x) is int and x > _INT64[1])
        j = _first(items, lambda x: type(x) is int and x < 0)
        raise ArrayConstructionError(
            f"integer {items[i]} at {where.name(i)} needs uint64 but the negative integer "
            f"{items[j]} at {where.name(j)} needs int64: no integer type holds both")
    i = _first(items, lambda x: type(x) is int and not (_INT64[0] <= x < 2**64))
    raise ArrayConstructionError(f"integer {items[i]} at {where.name(i)} does not fit in "
                                 "int64 or uint64")


def masked_records(obj: np.ma.MaskedArray) -> tuple[list, T.Type]:
    """(rows as dicts, type) of a masked NumPy record array: a field with masked entries
    is `?T` (missing there), the others keep their type."""
    names, mask = obj.dtype.names, np.ma.getmaskarray(obj)
    fields = []
    for n in names:
        ft = obj.dtype.fields[n][0]
        if ft.names or ft.subdtype:
            raise NotSupportedError(f"a masked NumPy record array with a field of records "
                                    f"or sub-arrays ({n!r}: {ft}): pass obj.filled() or a list")
        t = type_from_numpy(ft)
        fields.append((n, T.Option(t) if mask[n].any() else t))
    t = T.Record(tuple(fields))
    for size in reversed(obj.shape):
        t = T.FixedDim(size, t)

    def rows(v):
        return [rows(x) for x in v] if isinstance(v, list) else dict(zip(names, v))
    return rows(obj.tolist()), t


# ---------------------------------------------------------------- typed templates
ZERO = object()  # fill marker: the zero of each leaf type (0, False, "", b"")
EMPTY = object()  # fill marker of `empty`: missing values, zeros, rows of the lengths given


def with_dtype(t: T.Type, leaf: T.Type) -> T.Type:
    """`t` with its element type replaced by `leaf` (dims and missing rows kept)."""
    if isinstance(t, T.FixedDim):
        return T.FixedDim(t.size, with_dtype(t.elem, leaf))
    if isinstance(t, T.VarDim):
        return T.VarDim(with_dtype(t.elem, leaf))
    if isinstance(t, T.Option):
        inner = with_dtype(t.elem, leaf)
        return inner if isinstance(inner, T.Option) else T.Option(inner)
    return leaf


def template(t: T.Type, value: Any, lengths: list, level: int) -> Any:
    """Python data of type `t` filled with `value`; var rows take sizes from `lengths`.

    `lengths[k]` is an iterator over the row sizes of the k-th var dim, in order.
    """
    leaf = t.elem if isinstance(t, T.Dim) else t
    while isinstance(leaf, T.Option):
        leaf = leaf.elem
    flat = not isinstance(leaf, (T.Dim, T.Record, T.Tuple))
    if isinstance(t, T.FixedDim):
        if flat:  # immutable leaves: one value, repeated at C speed
            return [template(t.elem, value, lengths, level)] * t.size
        return [template(t.elem, value, lengths, level) for _ in range(t.size)]
    if isinstance(t, T.VarDim):
        n = next(lengths[level], _END) if level < len(lengths) else _END
        if n is None:
            raise ArrayConstructionError(f"lengths: a row length None (a missing row) for var "
                                         f"dim number {level} of type '{t}': only the rows of "
                                         "a ?var dim can be missing")
        return _var_row(t, value, lengths, level, n)
    if isinstance(t, T.Option):
        if value is not None and isinstance(t.elem, T.VarDim) and level < len(lengths):
            n = next(lengths[level], _END)  # None: a missing row
            return None if n is None else _var_row(t.elem, value, lengths, level, n)
        if value is EMPTY:  # a ?var row without a length given is missing
            return None
        return None if value is None else template(t.elem, value, lengths, level)
    if isinstance(t, T.Record):
        return {k: template(f, value, lengths, level) for k, f in t.fields}
    if isinstance(t, T.Tuple):
        return tuple(template(f, value, lengths, level) for f in t.types)
    if value is None or value is ZERO or value is EMPTY:
        return _zero(t)
    return value


def _zero(t: T.Type) -> Any:
    """The zero of a leaf type as Python data: 0, False, "", b"", zero bytes, 1970-01-01."""
    if is_varlen(t):
        return "" if t.name == "string" else b""
    if isinstance(t, T.FixedString) or t == T.Scalar("char"):
        return ""
    if isinstance(t, T.FixedBytes):
        return bytes(t.size)
    if t == T.Scalar("bool"):
        return False
    try:
        return np.zeros((), np_dtype(t)).item()  # (dates and times: the epoch)
    except NotSupportedError:
        return 0


def _var_row(t: T.VarDim, value: Any, lengths: list, level: int, n: Any) -> list:
    """One row of var dim `t` holding `n` elements (`_END`: the lengths ran out)."""
    if n is _END:
        raise ArrayConstructionError(f"type '{t}' needs (more) row lengths for its var dim "
                                     f"number {level} (pass lengths=[...])")
    leaf = t.elem
    while isinstance(leaf, T.Option):
        leaf = leaf.elem
    if not isinstance(leaf, (T.Dim, T.Record, T.Tuple)):
        return [template(t.elem, value, lengths, level + 1)] * n  # immutable leaves
    return [template(t.elem, value, lengths, level + 1) for _ in range(n)]


_END = object()


# ---------------------------------------------------------------- packing
def check_lengths(lengths: Any) -> tuple[list[list[int]], bool]:
    """`lengths` as one list of row sizes per var dim (and whether it was nested).

    ArrayConstructionError names the position of a size that is not a non-negative int;
    None (a missing row of a `?var` dim) is kept.
    """
    if lengths is None:
        return [], False
    if isinstance(lengths, np.ndarray):
        lengths = lengths.tolist()
    if not isinstance(lengths, (list, tuple)):
        raise ArrayConstructionError(f"lengths must be a list of row sizes (or one list per "
                                     f"var dim), not {type(lengths).__name__}")
    nested = bool(lengths) and isinstance(lengths[0], (list, tuple, np.ndarray))
    levels = list(lengths) if nested else [lengths] if lengths else []
    for k, level in enumerate(levels):
        if isinstance(level, np.ndarray):
            level = level.tolist()
        if not isinstance(level, (list, tuple)):
            raise ArrayConstructionError(f"lengths[{k}] = {level!r}: with one list per "
                                         "var dim, every entry must be a list of row sizes")
        for i, n in enumerate(level):
            where = f"lengths[{k}][{i}]" if nested else f"lengths[{i}]"
            if n is None:  # a missing row of a ?var dim (checked as the array is built)
                continue
            if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
                raise ArrayConstructionError(f"{where} = {n!r}: a row length must be a "
                                             "non-negative integer")
            if n < 0:
                raise ArrayConstructionError(f"{where} = {n!r}: a row length must be "
                                             "non-negative")
        levels[k] = [None if n is None else int(n) for n in level]
    return levels, nested


def pack(t: T.Type, obj: Any) -> tuple[MemoryBlock, tuple[int, ...]]:
    """Lay out Python data `obj` as type `t` in fresh memory; returns (block, arrmeta).

    The data pointer of the result is `block.address`.

    Raises:
        ArrayConstructionError: naming the first item that does not fit `t` and its index path.
    """
    first, row, path = t, obj, []  # (the first rows' sizes: no memory for a wrong type)
    while isinstance(first, T.FixedDim) and isinstance(row, SEQUENCES):
        if len(row) != first.size:
            raise ArrayConstructionError(f"row {', '.join(path) or '(top level)'} has "
                                         f"{len(row)} elements, the type says {first.size} "
                                         f"({first})")
        first, row, path = first.elem, row[0] if len(row) else None, path + ["0"]
    block = MemoryBlock(t.itemsize * (1 + n_shadows(t)), keep=[])
    meta = _pack(t, [obj], block, np.zeros(1, np.int64), t.itemsize, [0], Where())
    return block, tuple(meta)


def _pack(t: T.Type, items: list, block: MemoryBlock, offs: np.ndarray, region: int,
          counter: list[int], where: Where) -> list[int]:
    if isinstance(t, T.Option):
        counter[0] += 1
        mask_offset = counter[0] * region
        present = np.array(list(map(is_not, items, repeat(None))), dtype=bool)
        scatter(block.buffer, offs[present] + mask_offset,
                np.ones((int(present.sum()), 1), np.uint8))
        if present.all():
            return [mask_offset] + _pack(t.elem, items, block, offs, region, counter, where)
        keep = np.flatnonzero(present)
        sub = [items[i] for i in keep.tolist()]
        return [mask_offset] + _pack(t.elem, sub, block, offs[present], region, counter,
                                     Subset(where, keep))
    if isinstance(t, (T.FixedDim, T.VarDim)):
        bad = _bad_kinds(items, lambda k: issubclass(k, SEQUENCES))
        if bad:
            x = items[bad[0]]
            raise ArrayConstructionError(
                f"item {where.name(bad[0])} is a {_describe(x)} ({x!r:.40}), the type says "
                f"{'a row' if isinstance(t, T.VarDim) else f'{t.size} elements'} ({t})")
        lens = list(map(len, items))
        child = list(chain.from_iterable(items))
        sub = where.rows(_starts(lens))
        esize = t.elem.itemsize
        if isinstance(t, T.FixedDim):
            if any(n != t.size for n in lens):
                i = _first(lens, lambda n: n != t.size)
                raise ArrayConstructionError(
                    f"row {where.name(i).strip('[]')} has {lens[i]} elements, "
                    f"the type says {t.size} ({t})")
            coffs = (offs[:, None] + np.arange(t.size, dtype=np.int64) * esize).reshape(-1)
            return [t.size, esize] + _pack(t.elem, child, block, coffs, region, counter, sub)
        total = len(child)
        rows = MemoryBlock(esize * total * (1 + n_shadows(t.elem)), keep=[])
        block.keep.append(rows)
        # Each row element is an inline {int64 start; int64 stop} pair (docs/layout.md).
        starts = _starts(lens)
        pairs = np.stack([starts, starts + np.asarray(lens, np.int64)], axis=1)
        scatter(block.buffer, offs, pairs.view(np.uint8).reshape(len(items), 16))
        coffs = np.arange(total, dtype=np.int64) * esize
        return [rows.ref, 8, 8, rows.address, esize, esize, total] + _pack(
            t.elem, child, rows, coffs, esize * total, [0], sub)
    if isinstance(t, (T.Record, T.Tuple)):
        return _pack_fields(t, items, block, offs, region, counter, where)
    if is_varlen(t):
        return _pack_strings(t, items, block, offs, where)
    _pack_scalars(t, items, block, offs, where)
    return []


def _pack_fields(t: T.Type, items: list, block: MemoryBlock, offs: np.ndarray, region: int,
                 counter: list[int], where: Where) -> list[int]:
    fields = fields_of(t)
    names = [k for k, _ in fields]
    cols: list[list] = [[] for _ in fields]
    for i, x in enumerate(items):
        if isinstance(x, dict) and isinstance(t, T.Record):
            if x.keys() - set(names) or any(
                    k not in x and not isinstance(f, T.Option) for k, f in fields):
                raise ArrayConstructionError(
                    f"item {where.name(i)} has fields {sorted(map(str, x))}, the type says "
                    f"{list(names)} ({t}; a field a record may lack is an option, ?T)")
            for c, k in zip(cols, names):
                c.append(x.get(k))  # (a field the type makes optional: missing)
        elif isinstance(x, (tuple, list)) and len(x) == len(names):
            for c, v in zip(cols, x):
                c.append(v)
        else:
            raise ArrayConstructionError(
                f"item {where.name(i)} is {x!r:.40}, the type says a record {t}")
    meta = list(t.offsets)
    for (k, f), off, c in zip(fields, t.offsets, cols):
        meta += _pack(f, c, block, offs + off, region, counter, where.field(k))
    return meta


def _encodes(x: str) -> bool:
    try:
        x.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _pack_strings(t: T.Type, items: list, block: MemoryBlock, offs: np.ndarray,
                  where: Where) -> list[int]:
    want = str if t.name == "string" else bytes
    if _bad_kinds(items, lambda k: issubclass(k, want)):
        i = _first(items, lambda x: not isinstance(x, want))
        raise ArrayConstructionError(
            f"item {where.name(i)} is a {_describe(items[i])} ({items[i]!r:.40}), the type says "
            f"{t}")
    try:
        data = [x.encode("utf-8") for x in items] if want is str else list(items)
    except UnicodeEncodeError:  # a lone surrogate ('\ud800'): no UTF-8 form
        i = _first(items, lambda x: not _encodes(x))
        raise ArrayConstructionError(f"item {where.name(i)} ({items[i]!r:.40}) has no UTF-8 "
                                     f"form (a lone surrogate), the type says {t}") from None
    lens = list(map(len, data))
    chars = MemoryBlock(sum(lens), keep=None)
    block.keep.append(chars)
    if lens:
        chars.buffer[:] = np.frombuffer(b"".join(data), np.uint8)
    pairs = np.empty(len(items), POINTER_SIZE_DTYPE)
    pairs["begin"] = chars.address + _starts(lens)
    pairs["size"] = lens
    scatter(block.buffer, offs, pairs.view(np.uint8).reshape(len(items), 16))
    return [chars.ref]


# Python/NumPy classes each scalar kind accepts without losing information.
_ACCEPT = {
    "b": (bool,),
    "i": (int, np.integer),
    "u": (int, np.integer),
    "f": (int, float, np.integer, np.floating),
    "c": (int, float, complex, np.integer, np.floating, np.complexfloating),
}


def _pack_scalars(t: T.Type, items: list, block: MemoryBlock, offs: np.ndarray,
                  where: Where) -> None:
    dt = np_dtype(t)
    if isinstance(t, T.FixedString):
        items = _fixed_strings(t, items, where)
    ok = _ACCEPT.get(dt.kind)
    if ok is not None:
        # bool is an int in Python and NumPy, so numbers accept it; bool accepts only bools.
        ok_bad = _bad_kinds(items, lambda k: issubclass(k, ok + (np.bool_,)))
        if ok_bad:
            x = items[ok_bad[0]]
            if x is None:
                raise ArrayConstructionError(f"item {where.name(ok_bad[0])} is missing (None) "
                                             f"but the type '{t}' is not an option ('?{t}')")
            raise ArrayConstructionError(
                f"item {where.name(ok_bad[0])} is a {_describe(x)} ({x!r:.40}), the type says {t}")
    if t == T.Scalar("char"):  # one character (NumPy would convert and cut silently)
        bad = _bad_kinds(items, lambda k: issubclass(k, str))
        i = bad[0] if bad else next((i for i, x in enumerate(items) if len(x) > 1), None)
        if i is not None:
            raise ArrayConstructionError(f"item {where.name(i)} ({items[i]!r:.40}) is not one "
                                         "character, the type says char")
    if t == T.Scalar("time"):  # times of day: microseconds since midnight
        items = [datetime.timedelta(hours=x.hour, minutes=x.minute, seconds=x.second,
                                    microseconds=x.microsecond)
                 if isinstance(x, datetime.time) else x for x in items]
    if isinstance(t, T.FixedBytes) and items:  # (NumPy would cut longer values silently)
        if any(isinstance(x, (bytes, bytearray)) and len(x) > t.size for x in items):
            i = _first(items, lambda x: isinstance(x, (bytes, bytearray)) and len(x) > t.size)
            raise ArrayConstructionError(f"item {where.name(i)} ({items[i]!r:.40}) has "
                                         f"{len(items[i])} bytes, the type {t} holds {t.size}")
    try:
        vals = np.array(items, dtype=dt) if items else np.zeros(0, dt)
    except (OverflowError, ValueError, TypeError) as e:
        i = _first_unfit(items, dt)
        raise ArrayConstructionError(
            f"item {where.name(i)} ({items[i]!r:.40}) does not fit {t}: {e}") from None
    if dt.kind in "mM" and dt != np.dtype(f"{dt.kind}8[us]"):
        _check_temporal_range(items, vals, dt, t, where)
    if dt.kind in "iu" and any(issubclass(k, np.integer) for k in set(map(type, items))):
        # NumPy wraps NumPy integers silently on a narrowing cast; Python ints raise above.
        i = next((i for i, x in enumerate(items) if isinstance(x, Number) and
                  int(x) != int(vals[i])), None)
        if i is not None:
            raise ArrayConstructionError(f"item {where.name(i)} ({items[i]}) does not fit {t}")
    scatter(block.buffer, offs, vals.reshape(-1).view(np.uint8).reshape(len(items), dt.itemsize))


def _check_temporal_range(items: list, vals: np.ndarray, dt: np.dtype, t: T.Type,
                          where: Where) -> None:
    """ArrayConstructionError for a Python date, time or duration outside the range of `dt`
    (NumPy wraps those silently: 0001-01-01 in nanoseconds is a date in 1754)."""
    py = (datetime.date, datetime.timedelta)
    at = [i for i, x in enumerate(items) if isinstance(x, py)]
    if not at:
        return
    exact = np.array([items[i] for i in at], dtype=f"{dt.kind}8[us]")  # (Python's own unit)
    with np.errstate(over="ignore"):
        back = vals.reshape(-1)[at].astype(exact.dtype)
    # (a coarser unit only truncates, by less than a day; a wrapped value is centuries off)
    wrong = np.flatnonzero(np.abs((back - exact).astype(np.int64)) >= 86_400_000_000)
    if len(wrong):
        i = at[wrong[0]]
        raise ArrayConstructionError(f"item {where.name(i)} ({items[i]!r:.60}) is outside the "
                                     f"range of {t}")


def _fixed_strings(t: T.Type, items: list, where: Where) -> list:
    """Encode strs for an inline fixed_string, refusing any that would be truncated."""
    bad = _bad_kinds(items, lambda k: issubclass(k, str))
    if bad:
        raise ArrayConstructionError(f"item {where.name(bad[0])} is a {_describe(items[bad[0]])}, "
                                     f"the type says {t}")
    if t.encoding == "utf32":
        data, lens = items, list(map(len, items))
    else:
        codec = "utf-8" if t.encoding == "utf8" else "ascii"
        try:
            data = [x.encode(codec) for x in items]
        except UnicodeEncodeError:
            i = _first(items, lambda x: not x.isascii() if codec == "ascii" else
                       not _encodes(x))
            raise ArrayConstructionError(f"item {where.name(i)} ({items[i]!r:.40}) is not "
                                         f"{codec}, the type says {t}") from None
        lens = list(map(len, data))
    if lens and max(lens) > t.size:
        i = _first(lens, lambda n: n > t.size)
        raise ArrayConstructionError(f"item {where.name(i)} ({items[i]!r:.40}) has {lens[i]} "
                                     f"units, the type {t} holds {t.size}")
    return data


def _first_unfit(items: list, dt: np.dtype) -> int:
    for i, x in enumerate(items):
        try:
            np.array([x], dtype=dt)
        except (OverflowError, ValueError, TypeError):
            return i
    return 0

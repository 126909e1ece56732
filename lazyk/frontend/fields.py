"""Awkward's functions over record fields and whole arrays: `fields`, `with_field`,
`without_field` (lazy records, as `lazyk.zip` makes), `to_list`, `to_numpy`, `from_iter`,
`from_numpy`, and the structure builders `unflatten` and `run_lengths` (computed at once
with NumPy over the values and offsets: the lists they make are the structure later work
reads).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from lazyk import hooks
from lazyk.arrays.array import Array
from lazyk.arrays.array import array as lazyk_array
from lazyk.arrays.buffers import from_offsets, regular
from lazyk.arrays.columns import columns
from lazyk.arrays.conversions import text_numpy
from lazyk.arrays.infer import infer_type
from lazyk.arrays.operators import use_row_ops
from lazyk.arrays.trees import Leaf, Masked, Regular
from lazyk.errors import NotSupportedError, ShapeError
from lazyk.frontend.expression import Expr
from lazyk.frontend.leaves import Placeholder, RaggedPlaceholder
from lazyk.frontend.operands import as_expr
from lazyk.frontend.records import Records, record_fields, zip
from lazyk.frontend.rowops import fill_none, flatten, is_none, num


def fields(array: Any) -> list:
    """`ak.fields`: the field names of records (lazy, a lazyk array of records, Arrow or
    Awkward records), in order; `[]` for anything else.

    Example: `lazyk.fields(lazyk.zip({"pt": pt, "eta": eta}))` is `['pt', 'eta']`.
    """
    if isinstance(array, (np.ndarray, list)):  # (NumPy's structured arrays, dicts)
        array = lazyk_array(array)
    rec = record_fields(array)
    return [] if rec is None else rec.fields


def with_field(array: Any, what: Any, where: str | tuple) -> Records:
    """Lazy `ak.with_field`: the records of `array` with field `where` set to `what` (added
    last, or replacing the field of that name); `where` a tuple is a path into records
    fields (`("Jet", "px")`). `what` lines up with the other fields as `lazyk.zip`'s fields
    do (a per-event value meets per-object fields as `met[:, None]`). Missing records stay
    missing.

    Example: `lazyk.with_field(jets, jets.pt * 2, "pt2").pt2` is `jets.pt * 2`.
    """
    rec = _records("with_field", array)
    path = (where,) if isinstance(where, str) else where
    if not isinstance(path, tuple) or not path or not all(isinstance(k, str) for k in path):
        raise TypeError(f"with_field: where is a field name or a tuple of them, not "
                        f"{where!r:.60}")
    if len(path) > 1:  # a field of a records field
        inner = rec[path[0]] if path[0] in rec.fields else None
        if record_fields(inner) is None:
            raise TypeError(f"with_field: field {path[0]!r} of records with fields "
                            f"{rec.fields} is not records (a path goes through records)")
        what = with_field(inner, what, path[1:])
    new = dict(rec.items())
    new[path[0]] = what
    got = zip(new, depth_limit=rec.depth)
    return got if rec.present is None else got.with_fields(dict(got.items()), rec.present)


def without_field(array: Any, where: str | tuple) -> Records:
    """Lazy `ak.without_field`: the records of `array` without field `where` (a tuple: a
    path into records fields).

    Example: `lazyk.fields(lazyk.without_field(jets, "eta"))` is `['pt']` for jets of
    fields pt and eta.
    """
    rec = _records("without_field", array)
    path = (where,) if isinstance(where, str) else where
    if not isinstance(path, tuple) or not path or not all(isinstance(k, str) for k in path):
        raise TypeError(f"without_field: where is a field name or a tuple of them, not "
                        f"{where!r:.60}")
    if path[0] not in rec.fields:
        raise KeyError(f"without_field: no field {where!r:.60} in records with fields "
                       f"{rec.fields}")
    if len(path) > 1:
        return with_field(rec, without_field(rec[path[0]], path[1:]), path[0])
    kept = {k: v for k, v in rec.items() if k != path[0]}
    if not kept:
        raise ValueError(f"without_field: {path[0]!r} is the only field of the records")
    return rec.with_fields(kept)


def _records(name: str, x: Any) -> Records:
    rec = record_fields(x)
    if rec is None:
        raise TypeError(f"{name} takes records (lazyk.zip, a lazyk array of records), not "
                        f"{getattr(x, 'type', type(x).__name__)}")
    return rec


def to_list(array: Any) -> Any:
    """`ak.to_list`: the values as nested Python lists (records as dicts, missing values as
    None), computing a lazy expression first."""
    got = _computed(array)
    return got.to_list() if isinstance(got, Array) else np.asarray(got).tolist()


def to_numpy(array: Any, allow_missing: bool = True) -> np.ndarray:
    """`ak.to_numpy`: the values as a NumPy array (a lazy expression computed first);
    missing values (`?T` over fixed dims) as a masked array, a missing row (`?n * T`)
    masked whole (`allow_missing=False`: a ValueError instead); data with var dims has no NumPy form (`NotSupportedError`: pad and
    fill first, `lazyk.fill_none(lazyk.pad_none(x, n, axis=1, clip=True), 0)`)."""
    got = _computed(array)
    if not isinstance(got, Array):
        return np.asarray(got)
    t = got.type
    text = text_numpy(got, missing=True)  # (strings and bytes: a new `U` / `S` array)
    if text is not None:
        if not allow_missing and t.missing_values:
            raise ValueError(f"to_numpy of {t} with allow_missing=False: it has missing values")
        return text
    dt = as_expr(got).dtype if t.missing_values else None
    if dt is not None and None not in t.shape and dt.kind in "biufc":
        if not allow_missing:
            raise ValueError(f"to_numpy of {t} with allow_missing=False: it has missing values")
        if t.missing_rows:  # `N * ?2 * T`: a missing row is masked whole, as Awkward's
            return _masked_rows(got)
        values = hooks.evaluate(fill_none(got, np.zeros((), dt)[()]))
        gone = hooks.evaluate(is_none(got, axis=max(t.ndim - 1, 0)))
        return np.ma.MaskedArray(np.asarray(values), np.asarray(gone, bool))
    return got.to_numpy()


def _masked_rows(a: Array) -> np.ma.MaskedArray:
    """Fixed dims of numbers with missing rows (`3 * ?2 * ?int64`) as a masked array:
    masked where a value or a row above it is missing (0 under the mask)."""
    node, hidden = columns(a), np.zeros(a.type.shape[0], bool)  # (per item of the level)
    while not isinstance(node, Leaf):
        if isinstance(node, Masked):
            hidden = hidden | ~np.asarray(node.present, bool)
        elif isinstance(node, Regular):
            hidden = np.repeat(hidden, node.size)
        else:  # (fixed dims of numbers have no other level)
            raise NotSupportedError(f"to_numpy of {a.type}: no masked-array form")
        node = node.child
    values = np.asarray(node.values)
    mask = np.broadcast_to(hidden.reshape((-1,) + (1,) * (values.ndim - 1)), values.shape)
    shape = tuple(a.type.shape)
    return np.ma.MaskedArray(np.where(mask, 0, values).reshape(shape), mask.reshape(shape))


def _computed(x: Any, what: str | None = None) -> Any:
    """`x` as data: computed where lazy. `what`: a function computed at once, which refuses
    a lazy parameter (`lazyk.placeholder`)."""
    if isinstance(x, (Array, np.ndarray)):
        return x
    if what is not None and isinstance(x, Expr):
        names = [k for k, v in x.env.items() if type(v) in (Placeholder, RaggedPlaceholder)]
        if names:
            raise NotSupportedError(f"{what} is computed at once, not lazily: give it arrays "
                                    f"(it got the parameter {names[0]!r} of "
                                    "lazyk.placeholder, which only lazyk.compile can take)")
    if record_fields(x) is not None or hasattr(x, "eval"):
        return hooks.evaluate(x)
    return lazyk_array(x)


def from_iter(iterable: Any, type: Any = None) -> Array:  # noqa: A002
    """`ak.from_iter`: a lazyk array of the items of `iterable` (nested lists, dicts for
    records, tuples for tuple records, None for missing values), as
    `lazyk.array(list(iterable))` except that tuples are records, not lists."""
    if isinstance(iterable, (str, bytes, dict)):
        raise TypeError(f"from_iter takes an iterable of items, not a "
                        f"{iterable.__class__.__name__}")
    items = list(iterable)
    return lazyk_array(items, type=infer_type(items, tuples=True) if type is None else type)


def from_numpy(values: np.ndarray) -> Array:
    """`ak.from_numpy`: a lazyk array over the NumPy array's memory (no copy), as
    `lazyk.array(values)`."""
    if not isinstance(values, np.ndarray):
        raise TypeError(f"from_numpy takes a NumPy array, not {type(values).__name__}")
    return lazyk_array(values)


def unflatten(array: Any, counts: Any, axis: int = 0) -> Array:
    """`ak.unflatten` at axis 0: the values of `array` cut into lists of `counts` items
    (an int: lists of that many, a fixed dim; a sequence of ints: one list each, a var
    dim). Computed at once (a lazy `array` first), the values not copied.

    Example: `lazyk.unflatten(lazyk.array([1, 2, 3, 4, 5]), [2, 0, 3])` is
    `[[1, 2], [], [3, 4, 5]]`.

    Raises:
        ShapeError: the counts do not add up to the number of values.
        NotSupportedError: another axis.
    """
    if axis != 0:
        raise NotSupportedError(f"unflatten at axis {axis!r}: axis 0 only (unflatten the "
                                "flat values, then build the outer lists on them)")
    values = _as_array(array, "unflatten")
    n = values.type.shape[0] if values.type.ndim else None
    if not isinstance(n, int):
        raise NotSupportedError(f"unflatten of {values.type}: values with a fixed outer dim")
    if isinstance(counts, (int, np.integer)) and not isinstance(counts, bool):
        if counts <= 0 or n % counts:
            raise ShapeError(f"unflatten: {n} values do not make lists of {counts}")
        return regular(values, int(counts))
    c = _as_array(np.asarray(counts, np.int64) if isinstance(counts, list) and not counts
                  else counts, "unflatten")  # (an empty list: no lists, of no type NumPy infers)
    if c.type.missing_values:
        raise NotSupportedError(f"unflatten with counts that may be missing ({c.type}): "
                                "lists that are missing are not made yet")
    c = c.to_numpy()
    if c.ndim != 1 or c.dtype.kind not in "iu":
        raise TypeError(f"unflatten: counts are an int or a 1-d array of ints, not "
                        f"{c.dtype} of shape {c.shape}")
    c = c.astype(np.int64)  # (unsigned counts too: offsets are int64)
    if (c < 0).any() or int(c.sum()) != n:
        raise ShapeError(f"unflatten: counts add up to {int(c.sum())} (of {len(c)} lists"
                         f"{', one negative' if (c < 0).any() else ''}), the values are {n}")
    return from_offsets(np.concatenate([[0], np.cumsum(c)]), values)


def run_lengths(array: Any) -> Array:
    """`ak.run_lengths`: the lengths of the runs of equal values along a 1-d array, or
    along each list (`N * var * T`: each list's runs its own). Computed at once.

    Example: `lazyk.run_lengths(lazyk.array([[1, 1, 2], [3, 3], []]))` is
    `[[2, 1], [2], []]`.
    """
    x = _as_array(array, "run_lengths")
    if x.type.missing_values or x.dtype.kind not in "biuf":
        raise NotSupportedError(f"run_lengths of {x.type}: numbers without missing values")
    if x.type.ndim == 1:
        flat, offsets = x.to_numpy(), np.array([0, x.type.shape[0]])
    elif x.type.ndim == 2:
        flat = flatten(x).eval().to_numpy()
        offsets = np.concatenate([[0], np.cumsum(num(x, axis=1).eval().to_numpy())])
    else:
        raise NotSupportedError(f"run_lengths of {x.type}: a 1-d array or lists of values "
                                "(N * var * T)")
    starts = np.ones(len(flat), bool)  # where a run starts: a list's first value, a change
    starts[1:] = flat[1:] != flat[:-1]
    starts[offsets[:-1][offsets[:-1] < offsets[1:]]] = True
    at = np.flatnonzero(starts)
    lengths = np.diff(np.append(at, len(flat)))
    if x.type.ndim == 1:
        return lazyk_array(lengths)
    seen = np.concatenate([[0], np.cumsum(starts)])
    return from_offsets(np.concatenate([[0], np.cumsum(seen[offsets[1:]] - seen[offsets[:-1]])]),
                        lazyk_array(lengths))


def _as_array(x: Any, what: str) -> Array:
    """`x` computed (lazy) or read (NumPy data, lists) as a lazyk array, for `what`."""
    got = _computed(x, what)
    return got if isinstance(got, Array) else lazyk_array(np.asarray(got))


use_row_ops(with_field=with_field)  # (`r["name"] = what` on lazy records)

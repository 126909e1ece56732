"""Lazy records: `lazyk.zip({"pt": pt, "eta": eta})` keeps each field a lazy expression
(`r.pt`, `r["pt"]` give it back, nothing computed) until the records are evaluated, when
the fields are computed, lined up (lazyk's broadcasting) and laid out as a lazyk array of
records (`N * var * {pt: float32, eta: float32}`), whose fields read as views again.

Row operations take records field by field (`lazyk.flatten(r)`, `lazyk.firsts(r)`,
`lazyk.pad_none(r, 2)`, `lazyk.concatenate([r, s])`); `lazyk.num(r)` counts the lists the
fields share. A lazyk array of records is read the same way (its fields are views).
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from lazyk import hooks
from lazyk import types as T
from lazyk.arrays.array import Array
from lazyk.arrays.array import array as lazyk_array
from lazyk.arrays.interchange import build_columns, columns
from lazyk.arrays.restructure import length, ranges, spans, take
from lazyk.errors import NotSupportedError, ShapeError
from lazyk.frontend import expr as lx
from lazyk.frontend.numpy_rules import broadcast_shapes


class Records:
    """Lazy records (`lazyk.zip`): an ordered mapping of field names to lazy expressions
    that line up; `r.name` and `r["name"]` give a field, `.eval()` the array of records.

    Example: `r = lazyk.zip({"x": lazyk.array([[1, 2], []]), "y": lazyk.array([[0.5, 1.5],
    []])})`; `r.type` is `2 * var * {x: int64, y: float64}`, `r.y` the lazy `y`.
    """

    __slots__ = ("_fields", "_depth", "_tuple")

    def __init__(self, fields: dict, depth: int | None = None, is_tuple: bool = False):
        self._fields = dict(fields)
        self._depth = depth
        self._tuple = is_tuple

    # --- fields, lazily
    @property
    def fields(self) -> list[str]:
        """The field names, in order (a tuple's are "0", "1", ...)."""
        return [str(k) for k in self._fields]

    def __getitem__(self, name: Any) -> lx.Expr:
        key = self._key(name)
        if key is None:
            raise KeyError(f"the records have no field {name!r} (fields: "
                           f"{', '.join(self.fields)})")
        return self._fields[key]

    def __getattr__(self, name: str) -> lx.Expr:
        if name.startswith("_"):
            raise AttributeError(name)
        key = self._key(name)
        if key is None:
            raise AttributeError(f"records of type {self.type} have no field {name!r}")
        return self._fields[key]

    def _key(self, name: Any):
        for k in self._fields:
            if k == name or str(k) == str(name):
                return k
        return None

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | {f for f in self.fields
                                                     if f.isidentifier()})

    def items(self):
        """(name, lazy field) pairs."""
        return self._fields.items()

    @property
    def is_tuple(self) -> bool:
        """Whether the records are a tuple (fields "0", "1", ...)."""
        return self._tuple

    def map(self, fn, dims: int | None = 0) -> Records:
        """Records whose fields are `fn(field)` (a row operation on every field), with
        `dims` more dims above them (None: as deep as the fields go)."""
        depth = None if self._depth is None or dims is None else \
            builtins.max(self._depth + dims, 1)
        return Records({k: fn(v) for k, v in self._fields.items()}, depth, self._tuple)

    @property
    def depth(self) -> int:
        """How many dims lie above the records (the fields' dims below it are inside them)."""
        nd = len(self.shape)
        return nd if self._depth is None else builtins.min(self._depth, nd)

    @property
    def shape(self) -> tuple:
        """The shape the fields line up to (ints, "var", symbols)."""
        return broadcast_shapes("zip", [e.shape for e in self._fields.values()])

    def with_fields(self, fields: dict) -> Records:
        """Records of other fields, at the same depth."""
        return Records(fields, self._depth, self._tuple)

    @property
    def type(self):
        """The records' lazyk type, e.g. `N * var * {pt: float32, eta: float32}`."""
        shape, d = self.shape, self.depth
        rows = [False] * d
        elems = []
        for k, e in self._fields.items():
            t = e.type
            lead = len(shape) - e.ndim
            for j in range(e.ndim):  # the field's dims above the records
                if lead + j >= d:
                    break
                missing = isinstance(t, T.Option)
                t = t.elem if missing else t
                rows[lead + j] = rows[lead + j] or missing
                t = t.elem
            elems.append((str(k), t))
        t = T.Tuple(tuple(e for _, e in elems)) if self._tuple else T.Record(tuple(elems))
        for k in range(d - 1, -1, -1):
            n = shape[k]
            t = T.FixedDim(n, t) if isinstance(n, int) else T.VarDim(t) if n == "var" else \
                T.SymbolicDim(n, t)
            if rows[k]:
                t = T.Option(t)
        return t

    def __repr__(self) -> str:
        return f"<lazyk.Records {self.type}>"

    def __len__(self) -> int:
        shape = self.shape
        if not shape or not isinstance(shape[0], int):
            raise TypeError("len() of records whose length is not known before evaluation")
        return shape[0]

    # --- computing
    def eval(self) -> Array:
        """Compute the fields and lay them out as a lazyk array of records (the fields'
        values are copied into the records; their lists' offsets are shared)."""
        names = list(self._fields)
        exprs = list(self._fields.values())
        shape, d = self.shape, self.depth
        if any(e.shape != shape for e in exprs):
            exprs = _lined_up(exprs)
        trees = [_tree(hooks.evaluate(e)) for e in exprs]
        got = _zipped(trees, names, d - 1)
        if got is None:  # the fields' lists differ: line them up (or name the rows)
            trees = [_tree(hooks.evaluate(e)) for e in _lined_up(exprs)]
            got = _zipped(trees, names, d - 1)
        if got is None:
            raise ShapeError(f"zip: the fields {', '.join(map(str, names))} do not line up")
        return build_columns(got)

    def to_list(self):
        """Compute and return nested Python lists of dicts (tuples for a tuple)."""
        return self.eval().to_list()

    tolist = to_list


_is_none: list = []  # lazyk.is_none (`lazyk.frontend.rowops` registers it: `use_is_none`)


def use_is_none(fn) -> None:
    """Line fields up with `fn` (`lazyk.is_none`, registered when its module loads)."""
    _is_none[:] = [fn]


def _lined_up(exprs: list) -> list:
    """Each field broadcast against the others (lazyk's rules; its missing values stay
    its own): where(others' structure, f, f)."""
    anchor = None
    for e in exprs:
        here = _is_none[0](e, axis=-1) if e.ndim else None
        if here is not None:
            here = lx.logical_or(here, lx.logical_not(here))  # True in e's structure
            anchor = here if anchor is None else lx.logical_and(anchor, here)
    if anchor is None:
        return exprs
    return [lx.where(anchor, e, e) for e in exprs]


def _tree(value) -> tuple:
    arr = value if isinstance(value, Array) else lazyk_array(np.asarray(value))
    if isinstance(arr.type, T.FixedDim):
        return columns(arr)
    raise NotSupportedError(f"zip of a field of type {arr.type}: the fields need an outer "
                            "fixed dim")


def _zipped(trees: list, names: list, depth: int):
    """The column tree of records over the fields' trees (of the items of the outer dim),
    the records `depth` list levels down; None where the fields' lists differ."""
    if depth == 0:
        if len({length(t) for t in trees}) > 1:
            return None
        return ("record", tuple(names), trees)
    kinds = {t[0] for t in trees}
    if len(kinds) != 1:
        return None
    kind = kinds.pop()
    if kind == "option":
        if any(not np.array_equal(t[1], trees[0][1]) for t in trees[1:]):
            return None
        inner = _zipped([t[2] for t in trees], names, depth)
        return None if inner is None else ("option", trees[0][1], inner)
    if kind == "regular":
        if len({t[1] for t in trees}) != 1:
            return None
        inner = _zipped([t[2] for t in trees], names, depth - 1)
        return None if inner is None else ("regular", trees[0][1], inner, length(trees[0]))
    if kind != "list":
        return None
    off = trees[0][1]
    if all(np.array_equal(t[1], off) for t in trees[1:]):
        inner = _zipped([t[2] for t in trees], names, depth - 1)
        return None if inner is None else ("list", off, inner)
    lens = [spans(t)[1] for t in trees]
    if any(not np.array_equal(ln, lens[0]) for ln in lens[1:]):
        return None
    kids = [take(t[2], ranges(spans(t)[0], ln)) for t, ln in zip(trees, lens)]
    inner = _zipped(kids, names, depth - 1)
    if inner is None:
        return None
    off = np.zeros(len(lens[0]) + 1, np.int64)
    np.cumsum(lens[0], out=off[1:])
    return ("list", off, inner)


def zip(arrays: Any, depth_limit: int | None = None) -> Records:
    """Lazy `ak.zip`: records whose fields are `arrays` (a dict of name -> array or
    expression; a list or tuple gives a tuple, fields "0", "1", ...), nothing computed.

    The fields line up as lazyk's operands do (from the right: a per-event value meets
    per-object values as `met[:, None]`); the records sit as deep as the fields' dims go,
    or `depth_limit` dims down (the fields' dims below it are inside the records).

    Example: `lazyk.zip({"x": x, "y": y}).eval()` for x, y of type `2 * var * int64` is an
    array of type `2 * var * {x: int64, y: int64}`; `r.x` gives x back.

    Raises:
        ShapeError: the fields do not line up (now, or when evaluated, naming the row).
        ValueError: no fields, or a depth_limit below 1.
    """
    if isinstance(arrays, dict):
        items, is_tuple = list(arrays.items()), False
    elif isinstance(arrays, (list, tuple)):
        items, is_tuple = list(enumerate(arrays)), True
    else:
        raise TypeError(f"zip takes a dict (records) or a list / tuple (a tuple) of arrays, "
                        f"not {type(arrays).__name__}")
    if not items:
        raise ValueError("zip needs at least one field")
    if depth_limit is not None and (not isinstance(depth_limit, (int, np.integer)) or
                                    depth_limit < 1):
        raise ValueError(f"zip: depth_limit must be None or an int >= 1, not {depth_limit!r}")
    fields = {}
    for k, v in items:
        if not isinstance(k, (str, int)):
            raise TypeError(f"zip: field names are str, not {type(k).__name__}")
        fields[k] = lx.operands("zip", (v,))[0]
    rec = Records(fields, depth_limit, is_tuple)
    rec.type  # the fields line up (ShapeError naming the axis and the sizes otherwise)
    return rec


def record_fields(x: Any) -> Records | None:
    """`x` as Records: lazy records as they are, a lazyk array of records as its fields
    (views); None for anything else."""
    if isinstance(x, Records):
        return x
    if not isinstance(x, Array):
        return None
    t = x.type
    depth = 0
    while isinstance(t, (T.Dim, T.Option)):
        if isinstance(t, T.Dim):
            depth += 1
        t = t.elem
    if not isinstance(t, (T.Record, T.Tuple)):
        return None
    names = t.names if isinstance(t, T.Record) else tuple(str(k) for k in range(len(t.types)))
    fields = {(n if isinstance(t, T.Record) else int(n)): lx.as_expr(x[n]) for n in names}
    deep = all(e.ndim == depth for e in fields.values())  # fields of values: no limit
    return Records(fields, None if deep else depth, isinstance(t, T.Tuple))

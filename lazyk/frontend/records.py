"""Lazy records: `lazyk.zip({"pt": pt, "eta": eta})`, and those `lazyk.combinations`,
`argcombinations` and `cartesian` give. Each field is a lazy expression, or records itself;
`r.pt`, `r["pt"]` give it back, nothing computed. Evaluated, the fields are computed together (their shared work once), lined up
above the records (rows only, never values, taken from the other fields) and laid out as a
lazyk array of records (`N * var * {pt: float32}`), whose fields read as views again.

Row operations take records field by field (`lazyk.flatten(r)`, `lazyk.firsts(r)`,
`lazyk.pad_none(r, 2)`, `lazyk.concatenate([r, s])`), each field stretched against the others
first (a per-event field among per-object ones); `lazyk.num(r)` counts the lists the
fields share; an index other than a field name (`r[mask]`, `r[:, None]`) indexes every
field. A lazyk array of records is read the same way (its fields are views).
"""
from __future__ import annotations

import builtins
import copy
from typing import Any

import numpy as np

from lazyk import hooks
from lazyk import types as T
from lazyk.arrays import operators
from lazyk.arrays.array import Array
from lazyk.arrays.foreign import from_foreign, is_foreign
from lazyk.errors import NotSupportedError, ShapeError, UnsupportedOperandError
from lazyk.frontend.expression import Expr, type_flags
from lazyk.frontend.graph import PICK_OP, REDUCE_OP, ROWS_OP, SELECT_OP, TAKE_OP, Node, arg_key
from lazyk.frontend.leaves import is_text, leaf_data
from lazyk.frontend.missing import keeps_present, rows_may_miss
from lazyk.frontend.numpy_rules import broadcast_shapes
from lazyk.frontend.operands import as_expr, operands
from lazyk.frontend.record_layout import (
    FieldAssignment,
    NotOperands,
    built,
    mapped_flags,
    present_in,
    stretched,
    with_flags,
    with_rows,
)


class Records(FieldAssignment, NotOperands):
    """Lazy records (`lazyk.zip`, `lazyk.combinations`, `lazyk.cartesian`): an ordered
    mapping of field names to lazy expressions (or records) that line up over the dims
    above the records; `r.name` and `r["name"]` give a field (a tuple's also `r[0]`),
    `.eval()` the array of records; `r["name"] = what` sets a field (`lazyk.with_field`),
    and so does `r.name = what` (or `r.name += 1`) for a field the records have.

    Example: `r = lazyk.zip({"x": lazyk.array([[1, 2], []]), "y": lazyk.array([[0.5, 1.5],
    []])})`; `r.type` is `2 * var * {x: int64, y: float64}`, `r.y` the lazy `y`.
    """

    __slots__ = ("_fields", "_depth", "_tuple", "_one_array", "_own_fields", "_shape",
                 "_lists_aligned", "_lined", "_present")

    def __init__(self, fields: dict, depth: int | None = None, is_tuple: bool = False,
                 one_array: bool = False, own_fields: bool = False, present: Any = None):
        self._fields = {str(k): v for k, v in fields.items()}
        self._depth = depth
        self._tuple = is_tuple
        # (the fields of one array's records, or fn of them all in `map`: the same lists)
        self._one_array = one_array
        # (zip's, combinations': each field's missing values its own: `own_fields`)
        self._own_fields = own_fields
        # (kept once known: the fields never change, nor do their shapes and lists)
        self._shape = self._lists_aligned = self._lined = None
        # where the records themselves are: None (everywhere), a bool expression with their
        # dims, or (records, fn): what fn (a selection, firsts) makes of those records' flags
        self._present = present

    @property
    def present(self) -> Expr | None:
        """Where the records themselves are present (a bool expression with the records'
        dims), or None where no record can be missing: a gather at a missing position,
        `firsts` of an empty list and a missing mask element give missing records (`?{...}`),
        as in Awkward; their fields are missing there too."""
        p = self._present
        if isinstance(p, tuple):
            p = self._present = mapped_flags(self, *p)
        return p

    def __reduce__(self):  # (the flags worked out: a (records, fn) pair holds a closure)
        return (Records, (self._fields, self._depth, self._tuple, self._one_array,
                          self._own_fields, self.present))

    def __copy__(self):  # (what is known of the fields comes along: they never change)
        got = object.__new__(Records)
        for name in Records.__slots__:
            setattr(got, name, getattr(self, name))
        return got

    @property
    def own_fields(self) -> bool:
        """Whether the records are `lazyk.zip`'s or `combinations`' / `cartesian`'s: a
        missing value is one field's (`is_none` of them: each field's), the records are
        missing only where a row operation makes them so (`present`)."""
        return self._own_fields

    @property
    def fields(self) -> list[str]:
        """The field names, in order (a tuple's are "0", "1", ...), as `ak.Array.fields`."""
        return list(self._fields)

    def __getitem__(self, key: Any):
        if type(key) is tuple and len(key) > 1 and all(type(k) is str for k in key):
            return self[key[0]][key[1:] if len(key) > 2 else key[1]]  # (a field path)
        if isinstance(key, str) or (self._tuple and isinstance(key, (int, np.integer))
                                    and not isinstance(key, bool)):
            if str(key) not in self._fields:
                raise KeyError(f"no field {key!r} in records with fields {self.fields}")
            return self._field(str(key))
        if isinstance(key, (int, np.integer)):
            raise KeyError(f"no field {key!r} in records with fields {self.fields}: an int "
                           "names a field of a tuple only; the lazy records hold no items "
                           f"to index (r.eval()[{key}] is record {key}, r[mask] and r[1:] "
                           "select lazily)")
        if isinstance(key, list) and key and all(isinstance(k, str) for k in key):
            missing = [k for k in key if k not in self._fields]  # (Awkward's projection)
            if missing:
                raise KeyError(f"no field {missing[0]!r} in records with fields {self.fields}")
            return Records({k: self._fields[k] for k in key}, self._depth, False,
                           present=self._present)
        # an index of the records (a mask, a slice, new axes): each field's, the fields
        # stretched against each other first (a per-event field among per-object ones)
        base = self if _aligned(self) else _lined_up(self)
        first = base.leaves()[0]
        before = first.ndim
        try:  # (an item or slice of the lists of records: one set of positions for all)
            index_like = operators.front_end().index_like  # (a later module, as for Expr)
            depth = base.depth
            # (a selection or slice keeps zip's records as they are; positions that may
            # be missing, as a take-back's, miss whole records)
            same = all(map(keeps_present, key if isinstance(key, tuple) else (key,)))
            got = base.map(lambda e: index_like(e, key, first, depth), same=same)
        except ShapeError as err:  # (said of a field: name the records)
            raise ShapeError(f"{err}, indexing each field of the records {self.type}") \
                from None
        except TypeError as err:  # (said of a field's expression: name the records)
            raise TypeError(f"lazy records {self.type} cannot be indexed by {key!r}: "
                            "index each field's way (r[:, 0], r[:, :2], r[mask], r[:, None]),"
                            " or evaluate them first (r.eval()[...], a view of the result)"
                            ) from err
        deeper = got.leaves()[0].ndim - before
        return got if not deeper or got._depth is None else \
            Records(got._fields, got._depth + deeper, got._tuple, own_fields=got.own_fields,
                    present=got._present)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        fields = object.__getattribute__(self, "_fields")
        if name in fields:
            return self._field(name)
        raise AttributeError(f"lazyk.Records has no attribute {name!r}: no field {name!r} "
                             f"among the fields {list(fields)}")

    def _field(self, name: str):
        """Field `name` with the records' lists (as Awkward's): a field of other dims
        (`cartesian(..., nested=True)`'s, a per-event value zipped with lists) stretched
        against the other fields: a fold of it alone sees one value per record."""
        f = self._lined_fields()[name]
        if not isinstance(f, Records):
            return f
        f._lined_fields()  # (lined up once, in the field kept here: each copy starts so)
        return copy.copy(f)  # (r.x["y"] = ...: x's own)

    def _lined_fields(self) -> dict:
        if self._lined is None:  # (True: as they are; differing lists checked where used)
            self._lined = one_shape(self, taken_strings=True) or \
                _lined_up(self, shapes_only=True)
        return (self if self._lined is True else self._lined)._fields

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | {f for f in self._fields if f.isidentifier()})

    def items(self):
        """(name, field) pairs; a field is an expression or records."""
        return self._fields.items()

    def leaves(self) -> list:
        """Every field expression, depth first (the fields of records fields in place)."""
        out: list = []
        for f in self._fields.values():
            out.extend(f.leaves() if isinstance(f, Records) else [f])
        return out

    @property
    def is_tuple(self) -> bool:
        """Whether the records are a tuple (fields "0", "1", ...)."""
        return self._tuple

    def map(self, fn, dims: int | None = 0, same: bool = False, flags: bool = True) -> Records:
        """Records whose field expressions are `fn(field)` (records fields too, field by
        field), which puts `dims` more dims above the records (None: as deep as the new
        fields go). `same`: fn keeps the records as they are (a selection, a slice, the
        fields lined up), zip's records stay zip's (`own_fields`). `flags`: the records are
        present where fn of their present flags says (else where they were)."""
        depth = None if self._depth is None or dims is None else \
            builtins.max(self._depth + dims, 0)
        return Records({k: f.map(fn, dims, flags=flags) if isinstance(f, Records) else fn(f)
                        for k, f in self._fields.items()}, depth, self._tuple,
                       one_array=self._one_array, own_fields=same and self._own_fields,
                       present=(self, fn) if flags else self._present)

    def with_fields(self, fields: dict, present: Expr | None = None) -> Records:
        """Records of other fields, at the same depth (zip's stay zip's), present where
        `present` says (None: where these are)."""
        return Records(fields, self._depth, self._tuple, own_fields=self._own_fields,
                       present=self._present if present is None else present)

    @property
    def depth(self) -> int:
        """How many dims lie above the records (the fields' dims below them are inside)."""
        nd = len(self.shape)
        return nd if self._depth is None else builtins.min(self._depth, nd)

    ndim = depth

    @property
    def shape(self) -> tuple:
        """The shape of the dims above the records (ints, None for var, symbols): the fields'
        dims there, broadcast as lazyk's operands are."""
        shape = self._shape
        if shape is None:
            shape = self._shape = broadcast_shapes(
                "zip", [_outer(f, self._depth) for f in self._fields.values()])
        return shape

    @property
    def type(self) -> T.Type:
        """The records' lazyk type, e.g. `N * var * {pt: float32, eta: float32}` or
        `N * var * (float64, float64)`."""
        shape, d = self.shape, self.depth
        rows = [False] * d
        elems = []
        for k, f in self._fields.items():
            n = builtins.min(len(_outer(f, d)), d)  # the field's dims above the records
            if isinstance(f, Records) and f.depth < d:
                raise ShapeError(f"zip: records field {k!r} has its records {f.depth} dims "
                                 f"down, above the records of the zip ({d} dims down): "
                                 f"zip with depth_limit={f.depth}")
            t = f.type
            for j in range(d - n, d):
                missing = isinstance(t, T.Option)
                t = t.elem if missing else t
                rows[j] = rows[j] or missing
                t = t.elem
            elems.append((k, t))
        t = T.Tuple(tuple(e for _, e in elems)) if self._tuple else T.Record(tuple(elems))
        t = T.Option(t) if self.present is not None else t
        for k in range(d - 1, -1, -1):
            n = shape[k]
            t = T.FixedDim(n, t) if isinstance(n, int) else T.VarDim(t) if n is None else \
                T.SymbolicDim(n, t)
            if rows[k]:
                t = T.Option(t)
        return t

    def __repr__(self) -> str:
        return f"<lazyk.Records {self.type}>"

    def __iter__(self):
        """The records one by one, computed first (as iterating an Awkward array)."""
        return iter(self.eval())

    def __len__(self) -> int:
        if not self.shape or not isinstance(self.shape[0], int):
            raise TypeError("len() of records whose length is known only once evaluated: "
                            "lazyk.num(r, axis=0) counts lazily, len(r.eval()) evaluates")
        return self.shape[0]

    def __arrow_array__(self, type=None):  # (`pyarrow.array(r)`: computed, to Arrow structs)
        return self.eval().__arrow_array__(type)

    def explain(self, target: str = "cpu") -> str:
        """The kernels computing this runs (loop nests, specs, LLVM IR and assembly; with
        `target='cuda'` their NVVM IR and PTX), as `Expr.explain`."""
        return hooks.explain(self, target=target)

    def eval(self) -> Array:
        """Compute the fields and return them as a lazyk array of records. Records that
        cannot be missing read each field from its computed column in place, nothing
        copied, and are read-only (`.copy()` gives a writable array of C structs); tuples
        and records that may be missing are C structs at once.

        Raises:
            ShapeError: the fields' lists above the records do not line up (naming the row).
        """
        same = one_shape(self)  # (built as they are where their lists are equal, else lined up)
        rec = self if same or _aligned(self) else _lined_up(self)
        try:
            got = built(rec)
            if got is None and rec is self:
                got = built(_lined_up(self))  # lists that differ: lined up (or named)
        except ShapeError as err:  # (the kernel names rows and operands, not the fields)
            raise ShapeError(f"zip: the fields {', '.join(map(repr, self.fields))} do not "
                             f"line up above the records: {err}") from None
        except NotSupportedError:
            fixed = [f for f in self.fields if self[f].type.missing_fixed_rows]
            if fixed and not self.type.missing_fixed_rows:  # (a take-back of list fields)
                raise NotSupportedError(
                    f"records of type {self.type}: field(s) {', '.join(map(repr, fixed))} are "
                    "rows of a fixed size that may be missing (`?N`), the others var rows, not "
                    "laid out as one array yet; evaluate the fields (r.name)") from None
            if not self.type.missing_fixed_rows:
                raise
            got = None
        if got is None and self.type.missing_fixed_rows:
            raise fixed_rows_refused(self)
        if got is None:
            raise ShapeError(f"zip: the fields {', '.join(self.fields)} do not line up above "
                             f"the records ({self.depth} dims)")
        return got

    def to_list(self):
        """Compute and return nested Python lists of dicts (tuples for a tuple), as
        `ak.to_list`."""
        return self.eval().to_list()

    tolist = to_list


def _outer(f, depth: int | None) -> tuple:
    """The dims of field `f` above the records: an expression's (its first `depth`),
    records' above their own records."""
    shape = f.shape[:f.depth] if isinstance(f, Records) else f.shape
    return shape if depth is None else shape[:depth]


def _aligned(rec: Records) -> bool:
    """Whether every field expression has the same dims above the records (of each records
    field too) and, where those hold var dims, the same lists (`_rows_key`): their values
    line up as they are."""
    got = rec._lists_aligned
    if got is None:
        got = rec._lists_aligned = _fields_aligned(rec)
    return got


def _fields_aligned(rec: Records) -> bool:
    if rec._one_array:
        return True
    d = rec.depth
    leaves = rec.leaves()
    if not one_shape(rec):
        return False
    if any(n is None for e in leaves for n in e.shape[:d]) and \
            len({_rows_key(e.node, d, e.env, {}) for e in leaves}) > 1:
        return False  # (lists that may differ: lined up, which checks them)
    if len(leaves) > 1 and all(n is not None for e in leaves for n in e.shape[:d]) and \
            any(any(type_flags(e)[0][:d]) for e in leaves if e.ndim) and \
            len({_rows_key(e.node, d, e.env, {}, True) for e in leaves}) > 1:
        return False  # (fixed rows that may be missing, `?n`: missing in every field)
    return all(_aligned(f) for f in rec._fields.values() if isinstance(f, Records))


def _rows_key(node: Node, d: int, env: dict, memo: dict, fixed: bool = False) -> Any:
    """What gives `node`'s first `d` dims their lists: equal keys, the same lists (arrays
    over the same offsets; the same selections, gathers and row operations of them; fields
    lined up together); elementwise work keeps its operands' lists. `fixed`: of fixed dims
    too (their missing rows)."""
    if None not in node.shape[:d] and not fixed:
        return None  # (no lists there)
    got = memo.get((node, d))
    if got is not None:
        return got
    if node.op == "input":
        a = getattr(leaf_data(env.get(node.arg)), "array", None)
        # (a parameter's or a Dask collection's lists are known only when it runs: its
        # own, lined up with another's, which checks them then)
        got = ("lists", a.ptr, a.meta[:2]) if isinstance(a, Array) else ("input", node.arg)
    elif node.op in (SELECT_OP, TAKE_OP) or (node.op == ROWS_OP and node.arg[0] in (
            "select", "gather")):  # (strings select and gather as row operations)
        x, key = node.srcs  # (a selection inside the records leaves the lists above alone)
        at = node.arg if node.op != ROWS_OP else node.arg[1][0]
        op = node.op if node.op != ROWS_OP else SELECT_OP if node.arg[0] == "select" \
            else TAKE_OP
        got = _rows_key(x, d, env, memo) if at >= d else \
            (op, at, _rows_key(x, d, env, memo), key)
    elif node.op == "with_rows":  # fields lined up: the lists of all of them, paired
        keys: set = set()
        for s in node.srcs:
            k = _rows_key(s, builtins.min(d, s.ndim), env, memo)
            keys |= k[1] if isinstance(k, tuple) and k[:1] == ("paired",) else {k}
        got = ("paired", frozenset(keys - {None}))
    elif node.op in (ROWS_OP, PICK_OP, REDUCE_OP):  # (their own lists: every dim counts)
        # (a pick at any slot; a row operation's flags follow its operands' lists, whose
        # keys are part of this one, and its values' option is no list)
        arg = node.arg[:1] + node.arg[2:] if node.op == PICK_OP else \
            node.arg[:2] if node.op == ROWS_OP else node.arg
        got = (node.op, arg_key(arg),
               tuple(_rows_key(s, s.ndim, env, memo) for s in node.srcs))
    else:  # elementwise: its operands' dims are its last ones
        keys = {_rows_key(s, d - (node.ndim - s.ndim), env, memo) for s in node.srcs
                if d - (node.ndim - s.ndim) > 0} - {None}
        got = keys.pop() if len(keys) == 1 else frozenset(keys)
    memo[(node, d)] = got
    return got


def _lined_up(rec: Records, shapes_only: bool = False) -> Records:
    """The records with each field expression broadcast against the others above the
    records (lazyk's rules: a dim of 1 or a missing dim stretches, a missing row is
    missing in every field; the other fields' rows are read, never their values).
    `shapes_only`: records fields whose fields have one shape are kept as they are (their
    lists, which may differ, are checked where used)."""
    rec = rec.with_fields({k: f if not isinstance(f, Records) else
                           f if shapes_only and one_shape(f, True) else _lined_up(f, shapes_only)
                           for k, f in rec._fields.items()})
    d = rec.depth
    leaves = with_flags(rec)
    if all(isinstance(n, int) for e in leaves for n in e.shape[:d]) and \
            not any(isinstance(e.type, T.Option) or any(type_flags(e)[0][:d])
                    for e in leaves if e.ndim):  # (`?n` rows: a missing row in every field)
        shape = broadcast_shapes("zip", [e.shape[:d] for e in leaves])
        new = iter([stretched(e, shape) for e in leaves])  # fixed dims: NumPy's broadcast
    else:
        new = iter([with_rows(e, others, d) for e, others in _partners(rec)])
    return _rebuilt(rec, new)


def _rebuilt(rec: Records, new) -> Records:
    """`rec` over the next expressions (`with_flags` order: present flags too)."""
    fields = {k: _rebuilt(f, new) if isinstance(f, Records) else next(new)
              for k, f in rec._fields.items()}
    return Records(fields, rec._depth, rec._tuple, rec._one_array, rec._own_fields,
                   next(new) if rec.present is not None else None)


def _partners(rec: Records) -> list:
    """(leaf, the leaves whose rows it pairs in) for every leaf of `rec` (`with_flags`
    order): one leaf of each other field (each field's leaves share their lists, lined up
    first), the one of the same name where there is one (`pairs.jet.eta` pairs in
    `pairs.lep.eta`, so work over both reads the two arrays alone: `ufuncs` drops pairings
    both sides hold); present flags (name None) pair in the first leaf of each other field."""
    groups = [[(name, f)] if not isinstance(f, Records) else _named_leaves(f)
              for name, f in rec._fields.items()] + [[(None, rec.present)]] * (
                  rec.present is not None)
    got = []
    for g, group in enumerate(groups):
        for name, e in group:
            got.append((e, [next((o for n, o in other if n == name), other[0][1])
                            for h, other in enumerate(groups) if h != g and other and
                            other[0][0] is not None]))
    return got


def _named_leaves(rec: Records) -> list:
    """(the innermost field name, leaf) of every leaf of `rec` (`with_flags` order: each
    records' present flags, named None, after their fields)."""
    out: list = []
    for name, f in rec._fields.items():
        out.extend(_named_leaves(f) if isinstance(f, Records) else [(name, f)])
    return out + ([(None, rec.present)] if rec.present is not None else [])


def zip(arrays: Any, depth_limit: int | None = None) -> Records:  # noqa: A001
    """Lazy `ak.zip`: records whose fields are `arrays` (a dict of name -> array,
    expression or records; a list or tuple gives a tuple, fields "0", "1", ...).

    The fields line up as lazyk's operands do (from the right: a per-event value meets
    per-object values as `met[:, None]`); the records sit as deep as the fields' dims go
    (a records field's: down to its records), or `depth_limit` dims down (the fields' dims
    below it are inside the records). A row missing in one field is missing in every
    field (`r.b` of `zip({"a": a, "b": b})` is missing where a's row is, as in Awkward).

    Example: `lazyk.zip({"x": x, "y": y}).eval()` for x, y of type `2 * var * int64` is an
    array of type `2 * var * {x: int64, y: int64}`; `r.x` gives x back.

    Raises:
        ShapeError: the fields do not line up (now, or when evaluated, naming the row); a
            records field has its records above the zip's (give a depth_limit).
        ValueError: no fields, or a depth_limit below 1.
        TypeError: not a dict, list or tuple; a field name not a str, a field a str.
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
    if depth_limit is not None and (isinstance(depth_limit, bool) or
                                    not isinstance(depth_limit, (int, np.integer)) or
                                    depth_limit < 1):
        raise ValueError(f"zip: depth_limit must be None or an int >= 1, not {depth_limit!r}")
    fields = {}
    for k, v in items:
        if not is_tuple and not isinstance(k, str):
            raise TypeError(f"zip: field names are str, not {type(k).__name__}")
        if isinstance(v, (str, bytes)):
            raise TypeError(f"zip: field {k!r} is a Python {type(v).__name__}: fields are arrays")
        rec = record_fields(v)
        fields[k] = copy.copy(rec) if rec is not None else operands("zip", (v,))[0]
    rec = Records(fields, None if depth_limit is None else int(depth_limit), is_tuple)
    rec = Records(rec._fields, rec.depth, is_tuple, own_fields=True)  # (its depth now)
    rec.type  # the fields line up (ShapeError naming the axis and the sizes otherwise)
    if rows_may_miss(rec.leaves(), rec.depth) and not _aligned(rec):
        # (a row missing in one field is missing in every field)
        rec = _lined_up(rec)
    return rec


def record_fields(x: Any) -> Records | None:
    """`x` as Records: lazy records as they are, a lazyk array of records (or tuples), an
    Arrow or Awkward one, or a Dask collection of them, as its fields (views; records
    fields as records); None for anything else."""
    if isinstance(x, Records):
        return x
    if is_foreign(x):  # an Arrow or Awkward array, read as lazyk.from_arrow / from_awkward
        x = from_foreign(x)
    # a lazyk array, or a Dask collection of them (`lazyk.dask.RaggedRecords`)
    if not isinstance(x, Array) and not hasattr(x, "__dask_graph__"):
        return None
    t = getattr(x, "type", None)  # (a Dask array has none)
    if not isinstance(t, T.Type):
        return None
    depth = missing = 0  # (missing: the records themselves may be, `?{...}`)
    while isinstance(t, (T.Dim, T.Option)):
        depth, missing, t = depth + isinstance(t, T.Dim), isinstance(t, T.Option), t.elem
    if not isinstance(t, (T.Record, T.Tuple)):
        return None
    names = t.names if isinstance(t, T.Record) else tuple(str(k) for k in range(len(t.types)))
    fields = {}
    for n in names:
        view = x[n]
        rec = record_fields(view)
        try:
            fields[n] = rec if rec is not None else as_expr(view)
        except UnsupportedOperandError as err:  # (dates, times: held, not computed with)
            raise UnsupportedOperandError(
                f"field {n!r} of records of type {x.type}: {err}; lazy work (a selection, a "
                f"gather, a row operation) takes the records' fields, so zip the fields it "
                f"needs first: lazyk.zip({{name: x[name] for name in [...]}})") from None
    if missing and depth and not isinstance(x, Array):
        raise NotSupportedError(f"records that may be missing ({x.type}) in a Dask collection "
                                "are not read as lazy records: work on their fields (r.pt), or "
                                "in the graph that made them")
    present = present_in(x) if missing and depth else None
    return Records(fields, depth, isinstance(t, T.Tuple), one_array=True, present=present)


def one_shape(rec: Records, taken_strings: bool = False) -> bool:
    """Whether every field of `rec` has one shape above the records (their lists may
    still differ; a field of dims of 1 beside others' lists has another). `taken_strings`:
    a string field's var dim matches a dim of 1 of the other fields (strings taken back
    hold `?var` rows where numbers hold `?1`)."""
    d = rec.depth
    shapes = [(e.shape[:d] if e.ndim >= d else None, is_text(e.dtype)) for e in rec.leaves()]
    numbers = {sh for sh, text in shapes if not (text and taken_strings)}
    if len(numbers) != 1:
        return not numbers and len({sh for sh, _ in shapes}) == 1
    (want,) = numbers
    return all(sh == want or sh is not None and want is not None and len(sh) == len(want) and
               all(a == b or a is None and b == 1 for a, b in builtins.zip(sh, want))
               for sh, text in shapes if text and taken_strings)


def lined_up_fields(x: Any) -> Records | None:
    """`record_fields(x)` with each field broadcast against the others above the records
    (`lazyk.zip({"met": met[:, None], "pt": pt})`: met stretched to pt's lists), as row
    operations on the records see them; None for anything else."""
    rec = record_fields(x)
    return rec if rec is None or _aligned(rec) else _lined_up(rec)


__all__ = ["Records", "lined_up_fields", "record_fields", "zip"]


def fixed_rows_refused(rec: Records) -> NotSupportedError:
    """The error for records in rows of a fixed size that may be missing (`?N`)."""
    return NotSupportedError(
        f"records of type {rec.type}: records in rows of a fixed size that may be "
        "missing (`?N`: pad_none(..., clip=True) of lists that may be missing, firsts "
        "of a fixed dim) are not laid out as one array yet; evaluate their fields "
        "(r.name, or lazyk.evaluate(r.a, r.b)), leave clip=False, or read the lists "
        "as var (lazyk.array(rows, type='N * var * ...'))")

"""Lazy records laid out: their fields, and where the records themselves are present,
computed together (`lazyk.evaluate(e1, e2, ...)`: the work they share runs once) and zipped
into a lazyk array of records whose fields read their columns in place; a field set on
lazy records (`r["name"] = what`); and what lazy records refuse (they are not operands)."""
from __future__ import annotations

import numpy as np

from lazyk import hooks
from lazyk import types as T
from lazyk.arrays import operators
from lazyk.arrays.array import Array
from lazyk.arrays.array import array as lazyk_array
from lazyk.arrays.columns import build_columns, columns
from lazyk.arrays.restructure import missing_records
from lazyk.arrays.trees import Lists, Masked, Record, Regular, zipped
from lazyk.errors import UnsupportedOperandError
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import Node
from lazyk.frontend.numpy_rules import broadcast_shapes
from lazyk.frontend.operands import as_expr
from lazyk.frontend.ufuncs import where


class FieldAssignment:
    """`r["name"] = what` on lazy records, as on Awkward arrays."""

    __slots__ = ()

    def __setitem__(self, where, what) -> None:
        """Set field `where` (a tuple: a path into records fields) to `what`, lazily, as
        `r = lazyk.with_field(r, what, where)` does (added last, or replacing the field of
        that name; `what` lines up with the other fields as `lazyk.zip`'s do)."""
        got = operators.row_ops().with_field(self, what, where)
        for name in type(self).__slots__:
            setattr(self, name, getattr(got, name))

    def __setattr__(self, name: str, what) -> None:
        """`r.x = what` (and `r.x += 1`) sets the field x, as `r["x"] = what`."""
        if name[:1] == "_" or hasattr(type(self), name):  # (slots, properties)
            object.__setattr__(self, name, what)
        elif name in self.fields:
            self[name] = what
        else:
            raise AttributeError(f"records of type '{self.type}' have no field {name!r} to "
                                 f"set: r[{name!r}] = value adds one")


class NotOperands:
    """Records are not operands: arithmetic, comparisons, reductions and NumPy's functions
    take a field (`r.pt`); each is refused naming the operation and the records' type."""

    __slots__ = ()

    def _refused(self, what: str):
        raise UnsupportedOperandError(
            f"{what} of records ({self.type}): records are not operands; use a field "
            f"(r.{self.fields[0]}), or .eval() them")

    @classmethod
    def __lazyk_expr__(cls, x):
        x._refused("an expression")

    def __array_function__(self, func, types, args, kwargs):
        self._refused(f"numpy.{func.__name__}")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        self._refused(f"numpy.{ufunc.__name__}")

    def __array__(self, dtype=None, copy=None):
        self._refused("numpy.asarray")


def _refuse_operator(symbol: str):
    def method(self, *other):
        self._refused(f"the operator {symbol}")
    return method


# (records compared with == must not fall back to Python's identity: a silent False)
for _name, _symbol in (("add", "+"), ("sub", "-"), ("mul", "*"), ("truediv", "/"),
                       ("floordiv", "//"), ("mod", "%"), ("pow", "**"), ("and", "&"),
                       ("or", "|"), ("xor", "^"), ("lshift", "<<"), ("rshift", ">>")):
    setattr(NotOperands, f"__{_name}__", _refuse_operator(_symbol))
    setattr(NotOperands, f"__r{_name}__", _refuse_operator(_symbol))
for _name, _symbol in (("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"),
                       ("ge", ">="), ("neg", "-"), ("pos", "+"), ("abs", "abs()"),
                       ("invert", "~")):
    setattr(NotOperands, f"__{_name}__", _refuse_operator(_symbol))


_PRESENT = object()  # (the name of the present flags among the fields, while zipped)


def built(rec) -> Array | None:
    """The array of lazy records `rec` over the fields' values, missing where `rec.present`
    is False; None where the fields' lists above the records differ."""
    values = hooks.evaluate_many(*with_flags(rec))
    values = [v if isinstance(v, Array) else lazyk_array(np.asarray(v)) for v in values]
    top = all(isinstance(v.type, T.FixedDim) for v in values)  # else 0-d records
    values = iter(values if top else [v[None] for v in values])
    tree = _tree(rec, values, not top)
    if tree is None:
        return None
    got = build_columns(_missing_where_absent(tree), read_only=True)
    return got if top else got[0]


def with_flags(rec) -> list:
    """The field expressions of `rec`, depth first, each records' present flags (where
    some may be missing) after their fields: what is computed to lay them out."""
    got = [f for _, e in rec.items() for f in ([e] if isinstance(e, Expr) else with_flags(e))]
    return got + ([rec.present] if rec.present is not None else [])


def _tree(rec, values, extra: bool):
    """The column tree of the records over the next values (`with_flags`' order; `extra`:
    under a dim of 1 of their own), present flags as one more field; None where the
    fields' lists differ."""
    trees = [columns(next(values)) if isinstance(f, Expr) else _tree(f, values, extra)
             for _, f in rec.items()]
    names = [int(k) for k, _ in rec.items()] if rec.is_tuple else [k for k, _ in rec.items()]
    if rec.present is not None:
        trees.append(columns(next(values)))
        names.append(_PRESENT)
    if any(t is None for t in trees):
        return None
    return zipped(trees, names, rec.depth - 1 + extra)


def _missing_where_absent(tree):
    """`tree` with the present flags zipped in as a last field (of records fields too) made
    the records' own missing flags (`?{...}`)."""
    if isinstance(tree, Record):
        kids = [_missing_where_absent(c) for c in tree.children]
        if not tree.names or tree.names[-1] is not _PRESENT:
            return Record(tree.names, kids)
        flags = np.asarray(tree.children[-1].values, bool)
        return Masked(flags, Record(tree.names[:-1], kids[:-1]))
    if isinstance(tree, Masked):
        return Masked(tree.present, _missing_where_absent(tree.child))
    if isinstance(tree, Regular):
        return Regular(tree.size, _missing_where_absent(tree.child), tree.count)
    if isinstance(tree, Lists):
        return Lists(tree.offsets, _missing_where_absent(tree.child))
    return tree  # (values, strings: no records below)


def may_miss(e: Expr, d: int) -> bool:
    """Whether `e`'s items `d` dims down (records' fields: at the records) may be missing."""
    t = e.type
    for _ in range(d):
        t = t.elem.elem if isinstance(t, T.Option) else t.elem
    return isinstance(t, T.Option)


def everywhere(rec) -> Expr:
    """True at every record of `rec` (missing where a row above them is)."""
    if not rec.depth:
        return as_expr(np.True_)
    leaf = max(rec.leaves(), key=lambda e: e.ndim)
    return operators.row_ops().local_index(leaf, rec.depth - 1) >= 0


def present_in(x: Array) -> Expr | None:
    """Where the records of array `x` (`... * ?{...}`) are present; None where none is
    missing."""
    missing = missing_records(columns(x))
    return None if missing is None else ~as_expr(build_columns(missing))


def mapped_flags(rec, parent, fn) -> Expr | None:
    """Where records `rec`, `parent.map(fn)`, are present (None: everywhere)."""
    base, ops = parent.present, operators.row_ops()
    whole = [k for k, e in enumerate(parent.leaves()) if not may_miss(e, parent.depth)]
    if base is None and whole:  # a field never missing on its own: missing with them
        f = rec.leaves()[whole[0]]
        return ~ops.is_none(f, max(rec.depth - 1, 0)) if may_miss(f, rec.depth) else None
    got = fn(base if base is not None else everywhere(parent))
    return ops.fill_none(got, False) if may_miss(got, got.ndim) else \
        got if base is not None else None


def stretched(e: Expr, shape: tuple) -> Expr:
    """`e` broadcast to the fixed `shape` above the records."""
    inner = max(e.ndim - len(shape), 0)
    if e.shape[:len(shape)] == shape:
        return e
    return where(np.ones(shape + (1,) * inner, bool), e, e)


def with_rows(e: Expr, leaves: list, d: int) -> Expr:
    """`e` with the rows of every other field expression paired in above the records
    (`with_rows`, the op a cartesian product's slots pair by)."""
    x = e[(None,) * (d - e.ndim)] if e.ndim < d else e
    node, env = x.node, dict(x.env)
    seen = {e.node}
    for o in leaves:
        if o.node in seen or not o.ndim:
            continue
        seen.add(o.node)
        y = o[(None,) * (d - o.ndim)] if o.ndim < d else o  # (its dims below: not read)
        shape = broadcast_shapes("zip", [node.shape[:d], y.shape[:d]]) + node.shape[d:]
        node = Node("with_rows", node.dtype, shape, (node, y.node), d)
        env.update(y.env)
    return Expr(node, env)

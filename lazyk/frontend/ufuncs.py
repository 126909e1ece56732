"""Elementwise builders by NumPy's names: every ufunc row of the op table (`apply`),
`astype`, `where`, `clip`, `real`, `imag`, `positive`.

Every builder types its node at once with NumPy's own ufunc resolution (NEP 50 weak
Python scalars included, `lazyk.frontend.numpy_rules`) and inserts `astype` nodes so each
op sees exactly its loop dtypes; the kernels then never guess about promotion.
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from lazyk.arrays.array import array as lazyk_array
from lazyk.errors import CastingError, DTypeError, NotSupportedError, UnsupportedOperandError
from lazyk.frontend import ops
from lazyk.frontend.expression import Expr, type_flags
from lazyk.frontend.graph import Node
from lazyk.frontend.leaves import check_dtype, is_text, parse_fixed_type
from lazyk.frontend.numpy_rules import (
    broadcast_shapes,
    cast,
    clip_key,
    comparison_beyond,
    describe_node,
    resolve,
)
from lazyk.frontend.operands import as_expr, merge_env, op_text, operand_text, operands, refuse_text
from lazyk.frontend.strings import text_apply, text_where
from lazyk.frontend.structure import NO_KEYWORDS, build_key, built, deferred, remember, token

# One builder per ufunc row of the op table (`lazyk.frontend.ops.OPS`, NumPy's names;
# `conj` is NumPy's `conjugate`), by arity, and one per alias: a new ufunc is one row there.
UNARY = tuple(n for n, op in ops.OPS.items() if op.kind == "elementwise" and
              isinstance(op.numpy, np.ufunc) and op.arity == 1)
BINARY = tuple(n for n, op in ops.OPS.items() if op.kind == "elementwise" and
               isinstance(op.numpy, np.ufunc) and op.arity == 2)
COMPARISONS = ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal")
ALIASES = ops.UFUNC_ALIASES
# every ufunc builder's name (`lazyk.frontend.expr` and `lazyk` export them all)
UFUNCS = UNARY + BINARY + tuple(ALIASES)


def text_operand(name: str, x: Any, text: str | bytes, reflected: bool = False) -> Expr:
    """Operator `name` between a lazy value `x` and a Python str / bytes.

    String arrays compare elementwise (`lazyk.frontend.expr.apply`); a numeric `x` compares as NumPy
    does (`==` all False, `!=` all True); everything else (arithmetic, ordering a number
    with a string, record / datetime arrays) raises UnsupportedOperandError.
    """
    why = "strings of this type are not supported in expressions"
    try:
        e = as_expr(x)
    except (DTypeError, NotSupportedError) as err:
        e, why = None, str(err)
    if e is not None and is_text(e.dtype):
        return apply(name, text, e) if reflected else apply(name, e, text)
    if e is not None and name in ("equal", "not_equal"):
        answer = Node("const", np.dtype(bool), (), (), name == "not_equal")
        true = Node("const", np.dtype(bool), (), (), True)
        node = Node("where", np.dtype(bool), e.shape, (true, answer, cast(e.node, bool)))
        return Expr(node, e.env)
    pair = (text, x) if reflected else (x, text)
    what = why if e is None else "a number and a string have no common type"
    raise UnsupportedOperandError(
        f"{op_text(name)}: unsupported operand type(s) {operand_text(pair[0])} and "
        f"{operand_text(pair[1])} ({what})")



def apply_built(name: str, x: Any, y: Any) -> Expr | None:
    """ufunc `name` of `x` and `y` when that structure was built before (a look-up), else
    None: then `apply` builds it. The operators' first step."""
    a = token(x)
    if a is not None:
        b = token(y)
        if b is not None:
            p, q = a[1], b[1]
            if not p or not q or (len(p) == 1 == len(q) and p[0] is not q[0]):
                entry = built.get((name, a[0], b[0]))  # (`build_key`'s key)
                if entry is not None:  # `deferred(...)` inline: every operator's path
                    e = _new_expr(Expr)
                    e._node = e._env = e._launch = None
                    e._key, e._leaves, e._recipe = entry, p + q, (_apply, (name, x, y),
                                                                  NO_KEYWORDS)
                    return e
    return None


_new_expr = object.__new__


def apply(name: str, *args: Any) -> Expr:
    """Build the node for ufunc `name` on `args` (typed now; errors name op and types)."""
    got = build_key((name,), args)
    if got is not None:
        entry = built.get(got[0])
        if entry is not None:
            return deferred(entry, got[1], (_apply, (name,) + args, NO_KEYWORDS))
        return remember(got, _apply(name, *args))
    return _apply(name, *args)


def _apply(name: str, *args: Any) -> Expr:
    name = ALIASES.get(name, name)
    exprs = operands(name, args)
    srcs = tuple([e.node for e in exprs])
    for src in srcs:
        if src.dtype.kind not in "biufc" and builtins.any(is_text(e.dtype) for e in exprs):
            if name not in COMPARISONS:
                refuse_text(name, exprs)
            return text_apply(ops.TEXT_COMPARISONS[name], exprs, op_text(name))
    if name in COMPARISONS:
        beyond = comparison_beyond(name, srcs)
        if beyond is not None:  # every element compares alike: x == x or x != x (ints)
            x = Expr(beyond[0], merge_env(exprs))
            return _apply("equal" if beyond[1] else "not_equal", x, x)
    elif name == "clip":
        srcs = clip_key(srcs)
    if builtins.any(s.op == "with_rows" or s.op == "astype" and s.srcs[0].op == "with_rows"
                    for s in srcs):
        srcs = _unpaired(srcs)
    loop, result = resolve(name, srcs)
    if name == "power" and result.kind in "biu" and \
            0 not in broadcast_shapes(name, [s.shape for s in srcs]):  # (no element: none)
        _check_int_exponent(srcs[1])
    if name == "power" and result.kind in "fc" and srcs[1].op in ("scalar", "const") and \
            srcs[1].arg == 0.5 and srcs[0].ndim:  # NumPy's fast path: sqrt (-inf -> nan)
        return _apply("sqrt", Expr(cast(srcs[0], loop[0]), merge_env(exprs[:1])))
    if len(srcs) == 2:
        a, b = srcs
        shape = a.shape if a.shape == b.shape or not b.shape else \
            broadcast_shapes(name, [a.shape, b.shape])
        typed = (cast(a, loop[0]), cast(b, loop[1]))
    else:
        shape = broadcast_shapes(name, [s.shape for s in srcs])
        typed = tuple([cast(s, d) for s, d in zip(srcs, loop)])
    return Expr(Node(name, result, shape, typed), merge_env(exprs))


def _unpaired(srcs: tuple) -> tuple:
    """`srcs` without the `with_rows` pairings (record fields stretched to the records'
    lists) whose paired-in rows another operand itself holds: broadcasting pairs them
    alike (`pairs.jet.eta - pairs.lep.eta` reads two arrays, not four)."""
    chains = []
    for s in srcs:
        if s.op == "astype" and s.srcs[0].op == "with_rows":  # the cast below the pairing
            w = s.srcs[0]
            x = w.srcs[0]
            s = w.replace(dtype=s.dtype, srcs=(s.replace(shape=x.shape, srcs=(x,)), w.srcs[1]))
        chain = [s]
        while chain[-1].op == "with_rows":
            chain.append(chain[-1].srcs[0])
        chains.append(chain)
    bases, partners, depths = [], set(), set()
    for i, chain in enumerate(chains):
        others = {m for j, c in enumerate(chains) if j != i for n in c for m in (n, _uncast(n))}
        k = 0
        while chain[k].op == "with_rows" and chain[k].srcs[1] in others:
            partners.add(chain[k].srcs[1])
            depths.add(chain[k].arg)
            k += 1
        bases.append(chain[k])
    if len(depths) == 1 and partners <= {_uncast(b) for b in bases} | set(bases) and \
            builtins.all(b.ndim in (0, *depths) for b in bases):
        return tuple(bases)
    return srcs


def _uncast(n: Node) -> Node:
    return n.srcs[0] if n.op == "astype" else n


NEGATIVE_INT_POWER = "Integers to negative integer powers are not allowed."


def _check_int_exponent(exponent: Node) -> None:
    """NumPy's ValueError for an integer power with a negative constant exponent.

    Other exponents (arrays, sub-expressions such as `a ** (b - 5)`) are checked on their
    values before a kernel runs (`lazyk.runtime.launch.check_int_powers`).
    """
    if exponent.op in ("scalar", "const") and exponent.arg < 0:
        raise ValueError(NEGATIVE_INT_POWER)


def _make_ufunc(name: str):
    nin = ops.get(name).arity

    def fn(*args):
        if len(args) != nin:
            raise TypeError(f"{name}() takes {nin} argument(s), {len(args)} given")
        return apply(name, *args)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Lazy NumPy `{name}` (types and broadcasting exactly as NumPy)."
    return fn


def positive(x: Any) -> Expr:
    """Lazy `+x` (the value itself; bool raises as in NumPy)."""
    e = as_expr(x)
    refuse_text("positive", [e])
    if e.dtype.kind not in "iufc":
        raise DTypeError(f"positive: unsupported operand type {describe_node(e.node)}")
    return e


for _name in UNARY + BINARY:
    globals()[_name] = _make_ufunc(_name)
for _alias, _target in ALIASES.items():
    globals()[_alias] = globals()[_target]


def power_operator(x: Any, e: Any) -> Expr:
    """Python's `x ** e` as NumPy computes it for arrays: `x ** 2` is `np.square(x)` (of
    bools: int8, where `np.power` gives int64) and `x ** -1` of complex values
    `np.reciprocal(x)` (an infinite x gives 0, where `np.power` gives NaN)."""
    kind = as_expr(x).dtype.kind  # (the values' dtype, missing or not)
    if type(e) is int and e == 2 and kind == "b":
        return apply("power", astype(x, "int8"), 2)
    if type(e) in (int, float) and e == -1 and kind == "c":
        return apply("reciprocal", x)
    return apply("power", x, e)


def astype(x: Any, dtype: Any, casting: str = "unsafe") -> Expr:
    """Lazy conversion; CastingError when `casting` forbids it (e.g. 'safe' float -> int)."""
    e = as_expr(x)
    refuse_text("astype", [e])
    if isinstance(dtype, str) and dtype.strip().startswith("?"):
        # ('?float32': the values converted, missing ones stay missing, as with 'float32')
        dtype = dtype.strip()[1:]
    try:  # NumPy's dtype spellings first ('f8', 'int' = int64), as ndarray.astype
        target = np.dtype(dtype)
    except (TypeError, ValueError):  # then the lazyk type language ('complex[float32]')
        try:
            shape, target = parse_fixed_type(dtype)
        except NotSupportedError:
            shape = None
        if shape != ():
            raise NotSupportedError(f"astype to {dtype!r}: lazyk converts numbers to another "
                                    "number type: give one, such as 'float32' or 'int64' "
                                    "(missing values stay missing)") from None
    if not np.can_cast(e.dtype, target, casting):
        raise CastingError(f"astype: cannot cast {e.dtype} to {target} under casting="
                           f"{casting!r}")
    try:
        check_dtype(target, "target")
    except UnsupportedOperandError as err:
        raise UnsupportedOperandError(f"astype: {err}") from None
    return Expr(cast(e.node, target.newbyteorder("=")), e.env)


def where(condition: Any, x: Any, y: Any) -> Expr:
    """Lazy `np.where(condition, x, y)` with NumPy's result type (weak scalars yield)."""
    exprs = operands("where", (condition, x, y))
    if builtins.any(is_text(e.dtype) for e in exprs[1:]):
        return text_where(exprs)
    refuse_text("where", exprs)
    if exprs[0].node.op == "const" and builtins.any(
            builtins.any(r) or o for r, o in map(type_flags, exprs[1:])):
        # a constant condition over branches that may be missing: read as a 0-d array, it
        # takes its branch's missing values only (a constant one spells a shape: every mask)
        exprs[0] = as_expr(lazyk_array(np.bool_(exprs[0].node.arg)))
    c, a, b = (e.node for e in exprs)
    # NOTE: typed here, not by ops.where's resolve: `np.dtype('f8') in (int, float)` is
    # True, so a table rule that tests weakness with `in` misreads float64 operands.
    kinds = [a.dtype, b.dtype] if a.weak and b.weak else \
        [n.arg if n.weak else n.dtype for n in (a, b)]
    try:
        result = np.result_type(*kinds)
    except TypeError:
        raise DTypeError(f"where: incompatible types {describe_node(a)} and "
                         f"{describe_node(b)}") from None
    if result.kind not in "biufc":
        raise DTypeError(f"where: unsupported types {describe_node(a)} and {describe_node(b)}")
    shape = broadcast_shapes("where", [c.shape, a.shape, b.shape])
    srcs = (cast(c, np.dtype(bool)), cast(a, result, wrap=True), cast(b, result, wrap=True))
    return Expr(Node("where", result, shape, srcs), merge_env(exprs))


def clip(x: Any, a_min: Any, a_max: Any) -> Expr:
    """Lazy `np.clip(x, a_min, a_max)` with NumPy's clip typing; a bound of None is no
    bound (both None: `x` itself)."""
    if isinstance(x, (bool, int, float, complex)):
        x = np.asarray(x)  # (np.clip's: the clipped value is an array, never a weak scalar)
    if a_min is None and a_max is None:
        return as_expr(x)
    if a_min is None or a_max is None:
        bound, e = a_max if a_min is None else a_min, as_expr(x)
        if type(bound) is int and e.dtype.kind in "iu" and (
                bound >= np.iinfo(e.dtype).max if a_min is None else
                bound <= np.iinfo(e.dtype).min):
            return e  # (a bound beyond the values' range, on the side it cannot matter)
        return apply("minimum" if a_min is None else "maximum", x,
                     a_max if a_min is None else a_min)
    return apply("clip", x, a_min, a_max)


def nan_to_num(x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None,
               neginf: Any = None) -> Expr:
    """Lazy `np.nan_to_num`: NaN replaced by `nan`, infinities by `posinf` / `neginf` (the
    dtype's largest and smallest finite values by default); integers as they are."""
    for name, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if v is not None and (not isinstance(v, (int, float, np.number)) or
                              isinstance(v, (complex, np.complexfloating))):
            raise TypeError(f"nan_to_num: {name} must be a real number, not {v!r:.40}")
    e = as_expr(x)
    if e.dtype.kind not in "fc":
        return e
    if e.dtype.kind == "c":  # (each part on its own, as NumPy's)
        return apply("add", nan_to_num(real(e), nan=nan, posinf=posinf, neginf=neginf),
                     apply("multiply", nan_to_num(imag(e), nan=nan, posinf=posinf,
                                                  neginf=neginf), 1j))
    big = np.finfo(e.dtype)
    got = where(apply("isnan", e), nan, e)
    got = where(apply("equal", e, np.inf), big.max if posinf is None else posinf, got)
    return where(apply("equal", e, -np.inf), big.min if neginf is None else neginf, got)


def isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Expr:
    """Lazy `np.isclose`: |a - b| <= atol + rtol * |b|, equal infinities close, NaN close to
    NaN only with `equal_nan`."""
    for name, v in (("rtol", rtol), ("atol", atol)):
        if not isinstance(v, (int, float, np.number)) or isinstance(v, complex):
            raise TypeError(f"isclose: {name} must be a real number, not {v!r:.40}")
    a, b = (np.asarray(v) if isinstance(v, (list, tuple)) else v for v in (a, b))
    refuse_text("isclose", [as_expr(a), as_expr(b)])
    # (as NumPy's: integers compared as floats, so that a - b never wraps)
    a, b = (astype(v, np.float64) if as_expr(v).dtype.kind in "biu" else v for v in (a, b))
    finite = apply("logical_and", apply("isfinite", a), apply("isfinite", b))
    near = apply("less_equal", apply("absolute", apply("subtract", a, b)),
                 apply("add", atol, apply("multiply", rtol, apply("absolute", b))))
    got = apply("logical_or", apply("logical_and", finite, near), apply("equal", a, b))
    if equal_nan:
        got = apply("logical_or", got, apply("logical_and", apply("isnan", a),
                                             apply("isnan", b)))
    return got


def real(x: Any) -> Expr:
    """Lazy real part (the value itself for real dtypes)."""
    e = as_expr(x)
    refuse_text("real", [e])
    if e.dtype.kind != "c":
        return e
    dt = np.dtype(np.float32 if e.dtype == np.complex64 else np.float64)
    return Expr(Node("real", dt, e.shape, (e.node,)), e.env)


def imag(x: Any) -> Expr:
    """Lazy imaginary part (zeros for real dtypes)."""
    e = as_expr(x)
    refuse_text("imag", [e])
    if e.dtype.kind != "c":
        # where(True, 0, x): zeros in x's dtype and shape (x * 0 would keep NaN and -0.0)
        zero = Node("const", e.dtype, (), (), np.zeros((), e.dtype).item())
        true = Node("const", np.dtype(bool), (), (), True)
        return Expr(Node("where", e.dtype, e.shape, (true, zero, e.node)), e.env)
    dt = np.dtype(np.float32 if e.dtype == np.complex64 else np.float64)
    return Expr(Node("imag", dt, e.shape, (e.node,)), e.env)

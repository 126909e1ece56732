"""Pattern matching of types: type variables, symbolic dims, ellipses, broadcasting.

Broadcasting follows NumPy (right-aligned; a size of 1 stretches), plus the ragged rules
of the multidim design note: `var` against 1 or `var` stays `var`; `var` against a fixed
size n != 1 becomes n (each row is checked, or stretched from 1, at evaluation time).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lazyk.errors import TypeMatchError
from lazyk.types.base import (
    Dim,
    EllipsisDim,
    FixedDim,
    Function,
    Option,
    Scalar,
    SymbolicDim,
    Type,
    VarDim,
)
from lazyk.types.elements import (
    Pointer,
    Record,
    Tuple,
    TypeVar,
)
from lazyk.types.parse import dshape
from lazyk.types.promote import promote

VAR = "var"  # the size of a ragged dimension in dim lists


@dataclass(frozen=True)
class _D:
    """One dimension of a decomposed type: size int, VAR, or a pattern's dim type."""

    size: Any
    optional: bool = False
    pattern: Dim | None = None  # SymbolicDim / EllipsisDim / VarDim / FixedDim in patterns


def _split(t: Type) -> tuple[list[_D], Type]:
    """(dimensions outermost first, element type) of `t`."""
    dims: list[_D] = []
    while True:
        opt = False
        if isinstance(t, Option) and isinstance(t.elem, Dim):
            opt, t = True, t.elem
        if isinstance(t, FixedDim):
            dims.append(_D(t.size, opt, t))
        elif isinstance(t, VarDim):
            dims.append(_D(VAR, opt, t))
        elif isinstance(t, (SymbolicDim, EllipsisDim)):
            dims.append(_D(None, opt, t))
        else:
            return dims, t
        t = t.elem


def _join(dims: list[_D], dtype: Type) -> Type:
    """Rebuild a concrete type from decomposed dimensions."""
    t = dtype
    for d in reversed(dims):
        t = VarDim(t) if d.size == VAR else FixedDim(d.size, t)
        if d.optional:
            t = Option(t)
    return t


def broadcast_dims(a: list[_D], b: list[_D], what: tuple[Type, Type]) -> list[_D]:
    """Right-aligned NumPy broadcasting of two concrete dim lists (with var rules)."""
    n = max(len(a), len(b))
    a = [_D(1)] * (n - len(a)) + a
    b = [_D(1)] * (n - len(b)) + b
    out = []
    for axis, (x, y) in enumerate(zip(a, b)):
        out.append(_D(_combine(x.size, y.size, axis, what), x.optional or y.optional))
    return out


def _combine(x: Any, y: Any, axis: int, what: tuple[Type, Type]) -> Any:
    if x == y or y == 1:
        return x
    if x == 1:
        return y
    if x == VAR:
        return y
    if y == VAR:
        return x
    raise TypeMatchError(f"cannot broadcast {what[0]} with {what[1]}: dimension {axis} "
                         f"(counting from the outermost of the broadcast shape) has size "
                         f"{x} vs {y}")


@dataclass
class _Bindings:
    types: dict[str, Type] = field(default_factory=dict)
    dims: dict[str, Any] = field(default_factory=dict)           # N -> size or VAR
    ellipses: dict[Any, tuple[list[_D], Type]] = field(default_factory=dict)


def _match(p: Type, c: Type, env: _Bindings) -> None:
    pdims, pdt = _split(p)
    cdims, cdt = _split(c)
    ells = [i for i, d in enumerate(pdims) if isinstance(d.pattern, EllipsisDim)]
    if ells:
        k = ells[0]
        tail = len(pdims) - k - 1
        if len(cdims) < len(pdims) - 1:
            raise TypeMatchError(f"{c} has {len(cdims)} dimension(s); pattern {p} needs at "
                                 f"least {len(pdims) - 1}")
        middle = cdims[k:len(cdims) - tail]
        pairs = (list(zip(pdims[:k], cdims[:k]))
                 + list(zip(pdims[k + 1:], cdims[len(cdims) - tail:])))
        name = pdims[k].pattern.name
        if name in env.ellipses:
            prev, origin = env.ellipses[name]
            merged = broadcast_dims(prev, [_D(d.size, d.optional) for d in middle], (origin, c))
            env.ellipses[name] = (merged, origin)
        else:
            env.ellipses[name] = ([_D(d.size, d.optional) for d in middle], c)
        offset = {id(pd): (i if i < k else len(cdims) - tail + (i - k - 1))
                  for i, pd in enumerate(pdims) if i != k}
    else:
        if len(cdims) != len(pdims):
            raise TypeMatchError(f"{c} has {len(cdims)} dimension(s); pattern {p} has "
                                 f"{len(pdims)}")
        pairs = list(zip(pdims, cdims))
        offset = {id(pd): i for i, pd in enumerate(pdims)}
    for pd, cd in pairs:
        _match_dim(pd, cd, env, p, c, offset[id(pd)])
    _match_dtype(pdt, cdt, env, p, c)


def _match_dim(pd: _D, cd: _D, env: _Bindings, p: Type, c: Type, axis: int) -> None:
    if cd.optional and not pd.optional:
        raise TypeMatchError(f"dimension {axis} of {c} may be missing but pattern {p} "
                             "does not allow it")
    pat = pd.pattern
    if isinstance(pat, FixedDim):
        if cd.size != pat.size:
            raise TypeMatchError(f"dimension {axis} of {c} has size {cd.size}; pattern {p} "
                                 f"needs {pat.size}")
    elif isinstance(pat, SymbolicDim):
        prev = env.dims.get(pat.name)
        if prev is None or prev == cd.size:
            env.dims[pat.name] = cd.size
        elif prev == VAR or cd.size == VAR:
            env.dims[pat.name] = cd.size if prev == VAR else prev
        else:
            raise TypeMatchError(f"dimension {axis} of {c} has size {cd.size} but "
                                 f"{pat.name} is already {prev} (pattern {p})")
    # A var pattern dim accepts any size: fixed is a special case of ragged.


def _match_dtype(p: Type, c: Type, env: _Bindings, ptop: Type, ctop: Type) -> None:
    if isinstance(p, TypeVar):
        prev = env.types.get(p.name)
        if prev is None:
            env.types[p.name] = c
        elif prev is not c:
            raise TypeMatchError(f"type variable {p.name} is {prev} but {ctop} has {c} "
                                 f"(pattern {ptop})")
        return
    if isinstance(p, Option):
        _match(p.elem, c.elem if isinstance(c, Option) else c, env)
        return
    if isinstance(p, Record) and isinstance(c, Record) and p.names == c.names:
        for x, y in zip(p.types, c.types):
            _match(x, y, env)
        return
    if isinstance(p, Tuple) and isinstance(c, Tuple) and len(p.types) == len(c.types):
        for x, y in zip(p.types, c.types):
            _match(x, y, env)
        return
    if isinstance(p, Pointer) and isinstance(c, Pointer):
        _match(p.target, c.target, env)
        return
    if p is c or (isinstance(p, Scalar) and isinstance(c, Scalar) and p is c.native):
        return
    raise TypeMatchError(f"element type {c} of {ctop} does not match {p} in pattern {ptop}")


def _substitute(t: Type, env: _Bindings) -> Type:
    """The pattern `t` with every bound variable replaced."""
    if isinstance(t, EllipsisDim):
        inner = _substitute(t.elem, env)
        if t.name not in env.ellipses:
            return EllipsisDim(t.name, inner)
        return _join(env.ellipses[t.name][0], inner)
    if isinstance(t, SymbolicDim):
        inner = _substitute(t.elem, env)
        size = env.dims.get(t.name)
        if size is None:
            return SymbolicDim(t.name, inner)
        return VarDim(inner) if size == VAR else FixedDim(size, inner)
    if isinstance(t, FixedDim):
        return FixedDim(t.size, _substitute(t.elem, env))
    if isinstance(t, VarDim):
        return VarDim(_substitute(t.elem, env))
    if isinstance(t, Option):
        return Option(_substitute(t.elem, env))
    if isinstance(t, TypeVar):
        return env.types.get(t.name, t)
    if isinstance(t, Record):
        return Record(tuple((n, _substitute(x, env)) for n, x in t.fields))
    if isinstance(t, Tuple):
        return Tuple(tuple(_substitute(x, env) for x in t.types))
    if isinstance(t, Pointer):
        return Pointer(_substitute(t.target, env))
    if isinstance(t, Function):
        return Function(tuple(_substitute(x, env) for x in t.args),
                        tuple((n, _substitute(x, env)) for n, x in t.kwargs),
                        _substitute(t.ret, env))
    return t


def _solve(pattern: Any, concrete: tuple) -> tuple[Type, _Bindings]:
    """Match and return (the pattern as a type, the bindings)."""
    p = dshape(pattern)
    cs = [dshape(c) for c in concrete]
    env = _Bindings()
    if isinstance(p, Function):
        params = p.args + tuple(x for _, x in p.kwargs)
        if len(cs) != len(params):
            raise TypeMatchError(f"signature {p} takes {len(params)} argument(s), "
                                 f"got {len(cs)}")
        for x, c in zip(params, cs):
            _match(x, c, env)
    else:
        for c in cs:
            _match(p, c, env)
    return p, env


def solve(pattern: Any, *concrete: Any) -> dict[str, Any]:
    """The bindings `match` finds: type variables to types, symbolic dims to a size (or
    'var'), ellipses to a tuple of sizes (`'...'` for the anonymous one).

    Example: `solve('(N * T, M * T) -> T', '3 * int8', '4 * int8')` is
    `{'T': dshape('int8'), 'N': 3, 'M': 4}`.
    """
    _, env = _solve(pattern, concrete)
    out: dict[str, Any] = dict(env.types)
    out.update(env.dims)
    for name, (dims, _) in env.ellipses.items():
        out["..." if name is None else name] = tuple(d.size for d in dims)
    return out


def match(pattern: Any, *concrete: Any) -> Type:
    """Bind `pattern`'s variables to `concrete` types and return the resolved type.

    For a function pattern the concrete types are its arguments (keywords in order after
    the positional ones) and the result is the resolved return type; otherwise every
    concrete type is matched against the pattern and the resolved pattern is returned.

    Raises:
        TypeMatchError: naming both types and the offending dimension.

    Example: `match('(Dims... * T, Dims... * T) -> Dims... * T', '5 * 1 * int32',
    '3 * int32')` is `dshape('5 * 3 * int32')`.
    """
    p, env = _solve(pattern, concrete)
    return _substitute(p.ret if isinstance(p, Function) else p, env)


def broadcast(*types: Any) -> Type:
    """The NumPy-broadcast shape of concrete types over their promoted element type.

    Raises:
        TypeMatchError: when two dimensions are incompatible (names types and axis).
    """
    ts = [dshape(t) for t in types]
    if not ts:
        raise TypeError("broadcast() needs at least one type")
    dims, dtype = _split(ts[0])
    for t in ts:
        if t.is_symbolic:
            raise TypeMatchError(f"broadcast() needs concrete types, got {t}")
    for t in ts[1:]:
        d, e = _split(t)
        dims = broadcast_dims(dims, d, (ts[0], t))
        dtype = dtype if e is dtype else promote(dtype, e)
    return _join(dims, dtype)

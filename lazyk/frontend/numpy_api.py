"""NumPy's protocols on lazy values: `np.sin(x)`, `np.sum(e)`, `np.where(c, e, 0)` build
expressions; the rest raise NotSupportedError naming the function.

`__array_ufunc__` maps every NumPy ufunc that is a row of the op table (`lazyk.frontend.ops.OPS`)
and the ufunc reductions of its reduction rows (`np.add.reduce` is `sum`);
`__array_function__` maps the NumPy functions of `FUNCTIONS` (one table: a new lazyk
function is one row there) to lazyk's own, keywords included. `np.asarray(e)` and
`np.array(e)` compute the expression, as they always did (`Expr.__array__`).
"""
from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from lazyk import hooks
from lazyk.arrays.array import Array
from lazyk.arrays.operators import Operators, store_reduced
from lazyk.errors import NotSupportedError
from lazyk.frontend import expr as lx
from lazyk.frontend import histogram, ops, rowops, statistics

# Every NumPy ufunc lazyk computes (its row in the op table), and the reduction each ufunc's
# `reduce` is (the first reduction row that folds with it: `np.add.reduce` is sum, not mean).
UFUNCS = {row.numpy: name for name, row in ops.OPS.items()
          if row.kind == "elementwise" and isinstance(row.numpy, np.ufunc)}
UFUNC_REDUCTIONS: dict = {}
for _name in ops.REDUCTIONS:
    UFUNC_REDUCTIONS.setdefault(ops.OPS[ops.OPS[_name].combine].numpy, _name)


@dataclass(frozen=True)
class Function:
    """How a NumPy function maps onto lazyk: `fn` takes the NumPy parameters named in
    `args` positionally (the first `required` of them must be given; the others default to
    None) and those in `keywords` by the same name; `aliases` renames NumPy keywords
    (`np.clip(x, min=0)` is `a_min`); `out=` computes into `out` under same_kind casting,
    or NumPy's rules for reduction `reduces` (`lazyk.arrays.operators.store_reduced`)."""

    fn: Callable[..., Any]
    args: tuple[str, ...]
    keywords: tuple[str, ...] = ()
    aliases: dict = field(default_factory=dict)
    out: bool = True
    reduces: str = ""  # a reduction's name: out= under NumPy's rules for it (store_reduced)
    required: int | None = None  # None: every one of `args`


_RED = ("axis", "dtype", "keepdims")
_MINMAX = ("axis", "keepdims", "initial")


def _reduction(op: str, keywords: tuple, skipnan: bool = False) -> Function:
    fn = getattr(lx, op)
    return Function(functools.partial(fn, skipnan=True) if skipnan else fn, ("a",), keywords,
                    reduces=op)


def _clip(a: Any, a_min: Any = None, a_max: Any = None) -> lx.Expr:
    """np.clip with either bound left out (None), as NumPy allows (both: the values)."""
    if a_min is None and a_max is None:
        return lx.as_expr(a)
    if a_min is None:
        return lx.minimum(a, a_max)
    return lx.maximum(a, a_min) if a_max is None else lx.clip(a, a_min, a_max)


# THE table of NumPy functions that stay lazy on lazyk expressions (others raise
# NotSupportedError naming the function).
FUNCTIONS: dict[Callable, Function] = {
    np.sum: _reduction("sum", _RED + ("initial",)),
    np.prod: _reduction("prod", _RED + ("initial",)),
    np.mean: _reduction("mean", _RED),
    np.min: _reduction("min", _MINMAX),
    np.amin: _reduction("min", _MINMAX),
    np.max: _reduction("max", _MINMAX),
    np.amax: _reduction("max", _MINMAX),
    np.any: _reduction("any", ("axis", "keepdims")),
    np.all: _reduction("all", ("axis", "keepdims")),
    np.nansum: _reduction("sum", _RED + ("initial",), skipnan=True),
    np.nanprod: _reduction("prod", _RED + ("initial",), skipnan=True),
    np.nanmean: _reduction("mean", _RED, skipnan=True),
    np.nanmin: _reduction("min", _MINMAX, skipnan=True),
    np.nanmax: _reduction("max", _MINMAX, skipnan=True),
    np.where: Function(lx.where, ("condition", "x", "y"), out=False),
    np.clip: Function(_clip, ("a", "a_min", "a_max"), required=1,
                      aliases={"min": "a_min", "max": "a_max"}),
    np.real: Function(lx.real, ("val",), out=False),
    np.nan_to_num: Function(lx.nan_to_num, ("x", "copy", "nan", "posinf", "neginf"),
                            out=False, required=1),
    np.isclose: Function(lx.isclose, ("a", "b", "rtol", "atol", "equal_nan"), out=False,
                         required=2),
    np.imag: Function(lx.imag, ("val",), out=False),
    np.shape: Function(lambda a: a.shape, ("a",), out=False),
    np.ndim: Function(lambda a: a.ndim, ("a",), out=False),
}
def _stable_sort(fn):
    """np.sort / np.argsort over lazyk: stable sorts (any `kind` gives NumPy's stable
    order; `order=` is for structured arrays)."""
    def sort(a: Any, axis: Any = -1, kind: Any = None, stable: Any = None) -> lx.Expr:
        return fn(a, axis=axis)
    return sort


FUNCTIONS.update({
    np.argmax: Function(lx.argmax, ("a", "axis"), ("keepdims",), required=1, reduces="argmax"),
    np.argmin: Function(lx.argmin, ("a", "axis"), ("keepdims",), required=1, reduces="argmin"),
    np.count_nonzero: Function(lx.count_nonzero, ("a", "axis"), ("keepdims",), required=1,
                               out=False),
    np.std: Function(statistics.std, ("a", "axis"), ("ddof", "keepdims", "dtype"),
                     {"correction": "ddof"}, required=1, reduces="std"),
    np.var: Function(statistics.var, ("a", "axis"), ("ddof", "keepdims", "dtype"),
                     {"correction": "ddof"}, required=1, reduces="var"),
    np.cumsum: Function(lambda a, axis=None, dtype=None: rowops.cumsum(a, axis, dtype),
                        ("a", "axis", "dtype"), required=1, reduces="cumsum"),
    np.cumprod: Function(lambda a, axis=None, dtype=None: rowops.cumprod(a, axis, dtype),
                         ("a", "axis", "dtype"), required=1, reduces="cumprod"),
    np.sort: Function(_stable_sort(rowops.sort), ("a", "axis", "kind"), ("stable",),
                      out=False, required=1),
    np.argsort: Function(_stable_sort(rowops.argsort), ("a", "axis", "kind"), ("stable",),
                         out=False, required=1),
    np.concatenate: Function(lambda arrays, axis=0: rowops.concatenate(arrays, axis),
                             ("arrays", "axis"), required=1, out=False),
    np.histogram: Function(histogram.histogram, ("a", "bins", "range"),
                           ("density", "weights"), out=False, required=1),
})
if hasattr(np, "astype"):  # NumPy 2.1+
    FUNCTIONS[np.astype] = Function(lx.astype, ("x", "dtype"), out=False)


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """`__array_ufunc__` of lazyk arrays and expressions: a lazy node (or the result written
    into `out=`); NotSupportedError for what lazyk does not compute."""
    if any(_foreign(x, "__array_ufunc__") for x in inputs):
        return NotImplemented  # another library's array: its rules first
    where = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    out = kwargs.pop("out", None)
    if isinstance(out, tuple):
        out = out[0] if len(out) == 1 else out
    if method == "__call__" and ufunc is np.square and len(inputs) == 1:
        x = inputs[0]  # x * x, as NumPy's square computes it (bools: its int8 loop)
        x = lx.astype(x, "int8") if lx.as_expr(x).dtype.kind == "b" else x
        inputs, ufunc = (x, x), np.multiply
    casting = "same_kind"
    if method == "__call__" and ufunc is np.positive and len(inputs) == 1 and not kwargs:
        result = lx.positive(inputs[0])  # (the value itself: no op row of its own)
    elif method == "__call__" and ufunc in UFUNCS:
        dt, casting = kwargs.pop("dtype", None), kwargs.pop("casting", "same_kind")
        _refuse_keywords(where, kwargs, ())
        loop = None if dt is None else _loop(ufunc, inputs, dt, casting)
        if loop is not None:  # NumPy's loop of that output dtype: the operands cast to it
            inputs = tuple(x if isinstance(x, (bool, int, float, complex)) else
                           lx.astype(x, t) for x, t in zip(inputs, loop))
        result = lx.apply(UFUNCS[ufunc], *inputs)
        if loop is not None and result.dtype != loop[-1]:
            result = lx.astype(result, loop[-1])
    elif method == "reduce" and ufunc in UFUNC_REDUCTIONS and len(inputs) == 1:
        op = UFUNC_REDUCTIONS[ufunc]
        keywords = ("axis", "keepdims", "dtype") + (
            ("initial",) if ops.OPS[op].no_empty_fold or op in ("sum", "prod") else ())
        _refuse_keywords(where, kwargs, keywords)
        kwargs.setdefault("axis", 0)  # a ufunc's reduce folds axis 0 unless told
        return store_reduced(lx.reduce(op, inputs[0], **kwargs), out, op)
    else:
        plain = _numpy_forms(inputs)
        if plain is None:
            raise NotSupportedError(_refusal(where, inputs))
        # arrays (not expressions) of fixed dims: NumPy's own ufunc method on their values
        if out is not None:
            kwargs["out"] = out
        return getattr(ufunc, method)(*plain, **kwargs)
    if out is None:
        return result
    return hooks.evaluate(result, out=out, casting=casting)


def _loop(ufunc: np.ufunc, inputs: tuple, dt: Any, casting: str) -> tuple:
    """The dtypes of NumPy's loop of `ufunc` giving `dt` for these operands (inputs, then
    the output); NumPy's TypeError where none takes them under `casting`."""
    kinds = tuple(np.dtype(bool) if isinstance(x, bool) else type(x)
                  if isinstance(x, (int, float, complex)) else lx.as_expr(x).dtype
                  for x in inputs)
    return ufunc.resolve_dtypes(kinds + (None,) * ufunc.nout, casting=casting,
                                signature=(None,) * ufunc.nin + (np.dtype(dt),) * ufunc.nout)


def _numpy_forms(values: tuple) -> tuple | None:
    """`values` with each lazyk array as its NumPy form; None when one is a lazy
    expression or has no NumPy form (var dims, missing values)."""
    got = []
    for v in values:
        if isinstance(v, lx.Expr):
            return None
        if isinstance(v, Array):
            try:
                v = v.to_numpy()
            except NotSupportedError:
                return None
        got.append(v)
    return tuple(got)


def _default(p: inspect.Parameter | None) -> Any:
    """A NumPy parameter's default, None where it has none (or NumPy's "no value")."""
    if p is None or p.default is inspect.Parameter.empty or p.default is np._NoValue:
        return None
    return p.default


def array_function(func: Callable, types: tuple, args: tuple, kwargs: dict) -> Any:
    """`__array_function__` of lazyk expressions: the lazyk function of `FUNCTIONS`, else
    NotSupportedError naming the NumPy function (never a silent computation)."""
    if any(not issubclass(t, (Operators, np.ndarray)) for t in types):
        return NotImplemented  # another library's array: its rules first
    module = getattr(func, "__module__", None) or "numpy"  # (numpy.linalg.norm by its name)
    where = f"{'numpy' if module.startswith('numpy._') else module}.{func.__name__}"
    row = FUNCTIONS.get(func)
    if row is None:
        raise NotSupportedError(_refusal(where, args + tuple(kwargs.values())))
    signature = _signature(func)
    try:
        given = dict(signature.bind(*args, **kwargs).arguments)
    except TypeError as err:
        raise TypeError(f"{where}(): {err}") from None
    for name, p in signature.parameters.items():
        if p.kind is p.VAR_KEYWORD:  # `np.clip(..., **kwargs)`: the ufunc keywords
            given.update(given.pop(name, {}))
    for alias, name in row.aliases.items():
        if alias in given:
            if name in given:
                raise TypeError(f"{where}(): both {name} and {alias} given")
            given[name] = given.pop(alias)
    missing = [a for a in row.args[:row.required] if a not in given]
    if missing:
        raise NotSupportedError(f"{where}() without {', '.join(missing)} is not supported on "
                                f"lazy expressions ({_subject(args)[1]}): evaluate first "
                                f"(expr.eval()) and call {where} on the result")
    params = signature.parameters  # a NumPy default where the caller gave none
    positional = [given.pop(a) if a in given else _default(params.get(a)) for a in row.args]
    out = given.pop("out", None) if row.out else None
    _refuse_keywords(where, given, row.keywords)
    result = row.fn(*positional, **given)
    if row.reduces:
        return store_reduced(result, out, row.reduces)
    return result if out is None else hooks.evaluate(result, out=out, casting="same_kind")


_signature = functools.lru_cache(maxsize=None)(inspect.signature)  # the table's functions


def _foreign(x: Any, protocol: str) -> bool:
    """Whether `x` is another library's array that implements `protocol` itself."""
    if isinstance(x, (Operators, np.ndarray)) or lx.is_operand(x):
        return False
    return getattr(type(x), protocol, None) is not None


# Keywords given their NumPy default: nothing to refuse.
_DEFAULTS = {"where": True, "casting": "same_kind", "order": "K", "dtype": None,
             "subok": True, "signature": None}


def _refuse_keywords(where: str, given: dict, allowed: tuple) -> None:
    for k in [k for k in given if k not in allowed and k in _DEFAULTS]:
        if given[k] is _DEFAULTS[k] or (isinstance(_DEFAULTS[k], str) and
                                        given[k] == _DEFAULTS[k]):
            del given[k]
    bad = [k for k in given if k not in allowed]
    if bad:
        raise NotSupportedError(f"{where}: the keyword(s) {', '.join(bad)} are not supported "
                                "on lazy expressions" + (f" (supported: {', '.join(allowed)})"
                                                         if allowed else ""))


def _subject(values: tuple) -> tuple[str, str]:
    """(what, its name in a line) of the first lazyk value among `values` (or in a list or
    tuple of them, as `np.concatenate` takes)."""
    values = [x for v in values for x in (v if isinstance(v, (list, tuple)) else (v,))]
    for v in values:
        if isinstance(v, lx.Expr):
            return "lazy expressions", lx.summary(v)
    for v in values:
        if isinstance(v, Array):
            return "lazyk arrays", f"an array of type '{v.type}'"
    return "lazy expressions", "a lazyk value"


def _refusal(where: str, values: tuple) -> str:
    what, name = _subject(values)
    if what == "lazy expressions":
        first = f"evaluate first (expr.eval()) and call {where} on the result"
    else:  # (arrays of fixed dims never come here: NumPy's own function reads them)
        first = ("var dims and missing values have no NumPy form: pad and fill first "
                 "(lazyk.fill_none(lazyk.pad_none(a, n, axis=1), value)) or use a.to_list()")
    return (f"{where} is not supported on {what} ({name}): {first}, or build what you need "
            "from lazyk's functions (docs/api.md lists them)")

"""THE op table: one row per op with its type rule, NumPy reference and scalar LLVM lowering.

Type rules defer to NumPy's own resolution (`ufunc.resolve_dtypes`, NEP 50 weak Python
scalars given as the classes `int`/`float`/`complex`), so lazyk matches NumPy exactly.

A lowering (in `lazyk.frontend.lowering`) is `llvm(em, args, loop, attr) -> value`: `args` are
already cast to the loop's input dtypes, `loop` is the resolved dtype tuple `(in..., out)`,
and `em` is the codegen emitter (`lazyk.codegen.emit.Emitter`: `.b` builder,
`.math(name, *xs)`, `.const(dt, v)`, `.cast(v, src, dst)`, `.truth(v, dt)`, `.lltype(dt)`,
`.cmath(name, *zs)` for the C99 complex functions). Values are LLVM scalars in the compute type (bool -> i1, float16 ->
float), complex values are `(re, im)` tuples.

Known differences from NumPy: float sums/products reassociate (NumPy's pairwise order is
not reproduced bit for bit). Integer `power` with a negative exponent raises NumPy's
ValueError, but from the runtime, which checks the exponents before a kernel runs
(`lazyk.runtime.check_int_powers`): the kernel itself gives base**(e mod 2**w). Float -> int casts of NaN / inf /
out-of-range values follow NumPy's x86-64 scalar rule (docs/types.md).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from lazyk.errors import DTypeError, NotSupportedError
from lazyk.frontend import lowering as lo

try:  # NumPy 2 exposes clip as a ufunc here; its loop resolution is what np.clip uses
    from numpy._core.umath import clip as _clip_ufunc
except ImportError:  # pragma: no cover
    _clip_ufunc = None

WEAK = (int, float, complex)
NUMERIC = tuple(np.dtype(c) for c in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128"))


def as_dtype(x: Any) -> Any:
    """Normalise an operand type: Python weak classes stay classes, all else becomes np.dtype."""
    # NOTE: identity, not `in`: np.dtype('f8') == float is True in NumPy
    if any(x is w for w in WEAK):
        return x
    if x is bool:
        return np.dtype(bool)
    return np.dtype(x)


def _native(dt: np.dtype) -> np.dtype:
    return dt.newbyteorder("=") if dt.byteorder not in ("=", "|") else dt


@dataclass(frozen=True)
class Op:
    """One row: how an op types, computes (NumPy) and lowers (LLVM, NVVM)."""

    name: str
    arity: int
    kind: str  # "elementwise" | "reduction" | "text" (elementwise over strings)
    resolve: Callable[..., tuple]  # (*dtypes, attr=None) -> (loop in..., out)
    numpy: Callable[..., Any]
    llvm: Callable[..., Any] | None
    nvvm: Callable[..., Any] | None = None
    complex_ok: bool = False  # NOTE: complex lowering exists only where this is True
    identity: Callable[[np.dtype], Any] | None = None  # reductions: the start value
    combine: str | None = None  # reductions: elementwise op that folds two partials
    # reductions: a fold of nothing is `empty` (None: NumPy raises "zero-size array ...")
    empty: Any = None
    # reductions: the result is the fold divided by the number of values folded (mean)
    per_value: bool = False
    # arg-reductions: the result from the accumulator (best value, its position); `combine`
    # then names the comparison a later value must pass to take the best's place
    finish: Callable[[Any, Any], Any] | None = None
    # calls a libm function (tens of cycles an element): the code around it should let the
    # loop vectorizer use the vector math library rather than compute wasted lanes
    calls_libm: bool = False
    # dtype kinds ("biufc") for which swapping the two operands never changes the result
    # (bits, signed zeros, which NaN): CSE may reorder operands only there
    commutes: str = ""
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def no_empty_fold(self) -> bool:
        """Reductions with no value for nothing (min, max): an empty axis or row raises, as
        in NumPy, unless `initial=` is given; over data with missing values an empty row
        gives a missing value. Their identity only starts a fold."""
        return self.kind == "reduction" and self.empty is None and self.finish is None

    @property
    def folds_to_identity(self) -> bool:
        """Reductions whose fold of nothing is their identity (sum, prod, any, all): every
        row has a value, an empty one too."""
        return self.kind == "reduction" and self.empty is not None and not self.per_value

    def combine_ufunc(self) -> Any:
        """The NumPy ufunc that folds two partial results of this reduction (np.add, ...):
        what combines the parts of threads, partitions and `initial=`."""
        return OPS[self.combine].numpy

    def empty_value(self, dt: Any = None) -> Any:
        """The value of a fold over nothing in dtype `dt` (ValueError as NumPy where there
        is none); a complex mean's is NumPy's 0 / 0, nan+nanj."""
        if self.empty is None:
            raise ValueError(f"zero-size array to reduction operation {self.name} which has "
                             "no identity")
        if dt is not None and np.dtype(dt).kind == "c" and isinstance(self.empty, float):
            return complex(self.empty, self.empty)
        return self.empty

    def infer(self, *dtypes: Any) -> np.dtype:
        """Result dtype for operand dtypes (np.dtype or weak int/float/complex class)."""
        return self.resolve(*dtypes)[-1]

    def commutative(self, *dtypes: np.dtype) -> bool:
        """Whether `op(a, b)` equals `op(b, a)` for operands of these dtypes."""
        return self.arity == 2 and all(np.dtype(d).kind in self.commutes for d in dtypes)

    def supported(self, loop: tuple, target: str | None = "cpu") -> bool:
        """Whether lazyk lowers this resolved loop on `target` (None: on every target).

        Complex is lowered only where implemented; rows that call C99 complex functions
        (csqrt, cexp, ...) need a target with them (the CPU; libdevice has none).
        """
        if not any(np.dtype(d).kind == "c" for d in loop):
            return True
        return self.complex_ok and (not self.extra.get("cmath") or target == "cpu")

    def reference(self, *arrays: Any, attr: Any = None) -> Any:
        """Run the NumPy reference (astype takes `attr` as the target dtype)."""
        if self.name == "astype":
            return cast_values(arrays[0], attr)
        return self.numpy(*arrays)


def cast_values(values: Any, dtype: Any) -> np.ndarray:
    """`values.astype(dtype)` (unsafe), float -> integer by the kernels' rule for NaN, inf
    and out-of-range values (NumPy's x86-64 scalar loop; its vectorized uint32 loop gives
    other bits): what lazyk stores where NumPy converts a result (docs/types.md)."""
    values, dt = np.asarray(values), np.dtype(dtype)
    if values.dtype.kind not in "fc" or dt.kind not in "iu":
        return values.astype(dt)
    x = values.real.astype(np.float64)  # float16 / float32 values are exact in float64
    bits = dt.itemsize * 8
    if dt.kind == "u" and bits == 64:
        big = x >= 2.0 ** 63
        r = _truncate_indefinite(np.where(big, x - 2.0 ** 63, x), 64)
        return np.where(big, r ^ np.int64(-(1 << 63)), r).astype(dt)
    wide = 64 if bits == 64 or (dt.kind == "u" and bits == 32) else 32
    return _truncate_indefinite(x, wide).astype(dt)  # int64 -> narrower: the low bits


def _truncate_indefinite(x: np.ndarray, bits: int) -> np.ndarray:
    """float64 -> int64 holding the `bits`-bit truncation, or its minimum where that does
    not fit (NaN too): NumPy's astype sees in-range values only."""
    low = -(1 << (bits - 1))
    with np.errstate(invalid="ignore"):
        fits = (x > low - 1 if bits == 32 else x >= float(low)) & (x < float(-low))
    r = np.where(fits, x, 0.0).astype(np.int64)
    r[~fits] = low
    return r


def _wrap_resolve(name: str, fn: Callable[..., tuple]) -> Callable[..., tuple]:
    @functools.lru_cache(maxsize=4096)
    def resolve(*dtypes: Any, attr: Any = None) -> tuple:
        dts = tuple(as_dtype(d) for d in dtypes)
        try:
            loop = fn(dts, attr)
        except (TypeError, ValueError) as e:  # NumPy's UFuncNoLoopError is a TypeError
            names = ", ".join(getattr(d, "__name__", str(d)) for d in dts)
            raise DTypeError(f"{name} does not support operand types ({names}): {e}") from None
        return tuple(_native(np.dtype(d)) for d in loop)
    return resolve


def _ufunc_resolve(uf: np.ufunc) -> Callable:
    return lambda dts, attr: uf.resolve_dtypes(dts + (None,) * uf.nout)


def _weak_value(d: Any) -> Any:
    # np.result_type treats Python scalar *values* as weak (NEP 50)
    for cls, v in ((int, 0), (float, 0.0), (complex, 0j)):
        if d is cls:
            return v
    return d


def _is_weak(d: Any) -> bool:
    return any(d is w for w in WEAK)


def _where_resolve(dts: tuple, attr: Any) -> tuple:
    t = np.result_type(_weak_value(dts[1]), _weak_value(dts[2]))
    if _is_weak(dts[1]) and _is_weak(dts[2]):
        t = np.result_type(*(np.asarray(_weak_value(d)).dtype for d in dts[1:]))
    return (np.dtype(bool), t, t, t)


def _astype_resolve(dts: tuple, attr: Any) -> tuple:
    src = dts[0] if isinstance(dts[0], np.dtype) else np.asarray(_weak_value(dts[0])).dtype
    return (src, np.dtype(attr))


def _realimag_resolve(dts: tuple, attr: Any) -> tuple:
    d = dts[0] if isinstance(dts[0], np.dtype) else np.asarray(_weak_value(dts[0])).dtype
    if d.kind not in "biufc":
        raise TypeError(f"not numeric: {d}")
    out = np.empty(0, d).real.dtype
    return (d, out)


def _complex_resolve(dts: tuple, attr: Any) -> tuple:
    # NumPy's typing of re + im * 1j; both parts cast to its real type
    out = np.result_type(*(_weak_value(d) for d in dts), 1j)
    if any((d if isinstance(d, np.dtype) else np.dtype(type(_weak_value(d)))).kind not in "biuf"
           for d in dts):
        raise DTypeError("complex(re, im) takes real numbers")
    part = np.empty(0, out).real.dtype
    return (part, part, out)


def _complex_numpy(re: Any, im: Any) -> np.ndarray:
    re, im = np.asarray(re), np.asarray(im)
    out = np.empty(np.broadcast_shapes(re.shape, im.shape), _complex_resolve(
        (re.dtype, im.dtype), None)[2])
    out.real, out.imag = re, im  # (not re + im * 1j: an infinite im would make re NaN)
    return out


def _clip_resolve(dts: tuple, attr: Any) -> tuple:
    if _clip_ufunc is not None:
        return _clip_ufunc.resolve_dtypes(dts + (None,))
    t = np.result_type(*(_weak_value(d) for d in dts))  # pragma: no cover
    return (t, t, t, t)  # pragma: no cover


# ---------------------------------------------------------------- the table
OPS: dict[str, Op] = {}


def _row(name, arity, resolve, numpy, llvm, complex_ok=False, **kw) -> None:
    OPS[name] = Op(name, arity, "elementwise", _wrap_resolve(name, resolve), numpy, llvm,
                   complex_ok=complex_ok, **kw)


def _ufunc_row(name, llvm, complex_ok=False, uf=None, **kw):
    uf = uf or getattr(np, name)
    _row(name, uf.nin, _ufunc_resolve(uf), uf, llvm, complex_ok, **kw)


_ufunc_row("add", lo.binary("fadd", "add", "or_"), True, commutes="biufc")
_ufunc_row("subtract", lo.binary("fsub", "sub"), True)
_ufunc_row("multiply", lo.multiply, True, commutes="biufc")
_ufunc_row("true_divide", lo.true_divide, True, uf=np.divide)
_ufunc_row("reciprocal", lo.reciprocal, True)
# (float: fmod, a call on the CPU (vectorized, `codegen.vector_fmod`), libdevice's on the GPU;
# integer: a division, tens of cycles, never vectorized): a short row's fold should not
# compute wasted lanes of it
_ufunc_row("floor_divide", lo.floor_divide, calls_libm=True)
_ufunc_row("remainder", lo.remainder, calls_libm=True)
_ufunc_row("power", lo.power, True, extra={"cmath": True}, calls_libm=True)
_ufunc_row("negative", lo.negative, True)
_ufunc_row("absolute", lo.absolute, True)
for _n, _p in (("less", "<"), ("less_equal", "<="), ("greater", ">"),
               ("greater_equal", ">="), ("equal", "=="), ("not_equal", "!=")):
    _ufunc_row(_n, lo.compare(_p), True, commutes="biufc" if _p in ("==", "!=") else "")
for _n in ("and", "or", "xor", "not"):
    _ufunc_row(f"logical_{_n}", lo.logical(_n), True, commutes="biufc")
for _n in ("and", "or", "xor"):
    _ufunc_row(f"bitwise_{_n}", lo.bitwise(_n), commutes="biu")
_ufunc_row("invert", lo.invert)
_ufunc_row("left_shift", lo.shift(True))
_ufunc_row("right_shift", lo.shift(False))
for _n, _m in (("sqrt", "sqrt"), ("exp", "exp"), ("expm1", "expm1"), ("log", "log"),
               ("log1p", "log1p"), ("log2", "log2"), ("log10", "log10"), ("sin", "sin"),
               ("cos", "cos"), ("tan", "tan"), ("arcsin", "asin"), ("arccos", "acos"),
               ("arctan", "atan"), ("sinh", "sinh"), ("cosh", "cosh"), ("tanh", "tanh")):
    _ufunc_row(_n, lo.unary_math(_m), True,
               extra={"cmath": _m not in ("expm1", "log1p")}, calls_libm=_m != "sqrt")
for _n, _m in (("floor", "floor"), ("ceil", "ceil"), ("trunc", "trunc"), ("rint", "rint")):
    _ufunc_row(_n, lo.unary_math(_m, int_identity=True), _n == "rint")
_ufunc_row("arctan2", lambda em, a, loop, attr: em.math("atan2", *a), calls_libm=True)
_ufunc_row("hypot", lambda em, a, loop, attr: em.math("hypot", *a), commutes="f",
           calls_libm=True)


for _n, _m in (("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh")):
    _ufunc_row(_n, lo.inverse_hyperbolic(_m), True, extra={"cmath": True}, calls_libm=True)
_ufunc_row("fmod", lo.fmod, calls_libm=True)
_ufunc_row("copysign", lambda em, a, loop, attr: em.math("copysign", *a))
_ufunc_row("sign", lo.sign, True)
# NOTE: min / max commute on integers only: NumPy's float and complex loops give the
# second operand for ties (0.0 and -0.0) and pick a NaN by position
_ufunc_row("minimum", lo.minmax(True, True), True, commutes="biu")
_ufunc_row("maximum", lo.minmax(False, True), True, commutes="biu")
_ufunc_row("fmin", lo.minmax(True, False), True, commutes="biu")
_ufunc_row("fmax", lo.minmax(False, False), True, commutes="biu")
_ufunc_row("isnan", lo.isclass("isnan"), True)
_ufunc_row("isinf", lo.isclass("isinf"), True)
_ufunc_row("isfinite", lo.isclass("isfinite"), True)
_ufunc_row("conj", lo.conj, True, uf=np.conjugate)
_row("clip", 3, _clip_resolve, np.clip, lo.clip, complex_ok=True)
_row("where", 3, _where_resolve, np.where, lo.where, complex_ok=True)
_row("complex", 2, _complex_resolve, _complex_numpy, lambda em, a, loop, attr: tuple(a),
     complex_ok=True)
_row("real", 1, _realimag_resolve, np.real, lo.real, complex_ok=True)
_row("imag", 1, _realimag_resolve, np.imag, lo.imag, complex_ok=True)
_row("astype", 1, _astype_resolve, None, lo.astype, complex_ok=True)


def _with_rows_resolve(dts: tuple, attr: Any) -> tuple:
    d = tuple(x if isinstance(x, np.dtype) else np.asarray(_weak_value(x)).dtype for x in dts)
    return (d[0], d[1], d[0])


# x, with y's rows paired in and its values unused: a cartesian product's slot that no
# value reads still gives the tuple level its rows (`lazyk.runtime.picks`)
_row("with_rows", 2, _with_rows_resolve,
     lambda x, y: np.broadcast_arrays(np.asarray(x), np.asarray(y))[0].copy(),
     lambda em, a, loop, attr: a[0], complex_ok=True)



# ---------------------------------------------------------------- text (strings)
STRING, STRING32, TEXT_PAD, text_unit = lo.STRING, lo.STRING32, lo.TEXT_PAD, lo.text_unit
FOLD = lo.FOLD
BYTES = lo.BYTES
# NumPy's comparison name -> the text row that computes it
TEXT_COMPARISONS = {n: f"text_{n}" for n in ("less", "less_equal", "greater", "greater_equal",
                                               "equal", "not_equal")}


_TEXT_NAMES = {"lazyk:string": STRING, "lazyk:string32": STRING32, "lazyk:bytes": BYTES}


def dtype_text(dt: np.dtype) -> str:
    """`dt.str`, or a name for the `{begin, size}` text dtypes (whose `str` is `|V16`)."""
    for name, t in _TEXT_NAMES.items():
        if dt == t:
            return name
    return dt.str


def text_dtype(text: str) -> np.dtype:
    """The dtype `dtype_text` wrote."""
    return _TEXT_NAMES.get(text) or np.dtype(text)


def _text_resolve(out: np.dtype | None):
    def resolve(dts, attr):
        units = {text_unit(d) if isinstance(d, np.dtype) else 0 for d in dts}
        if 0 in units or len(units) != 1:
            raise TypeError("operands must be strings of one encoding (UTF-8 or UTF-32)")
        return dts + (out,)
    return resolve


def _text_numpy(fn):
    def ref(*xs):  # Python strings (constant folding), NumPy U/S arrays, decoded bytes
        xs = [np.asarray(x) for x in xs]
        xs = [np.char.decode(x, "utf-8") if x.dtype.kind == "S" else x.astype(str) for x in xs]
        return fn(*xs)
    return ref


def _text_row(name, arity, numpy, llvm, out) -> None:
    OPS[name] = Op(name, arity, "text", _wrap_resolve(name, _text_resolve(out)),
                   _text_numpy(numpy), llvm)


for _n, _p in (("less", "<"), ("less_equal", "<="), ("greater", ">"),
               ("greater_equal", ">="), ("equal", "=="), ("not_equal", "!=")):
    _text_row(TEXT_COMPARISONS[_n], 2, getattr(np, _n), lo.text_compare(_p), np.dtype(bool))
_text_row("str_len", 1, np.strings.str_len, lo.str_len, np.dtype(np.int64))
_text_row("startswith", 2, np.strings.startswith, lo.text_affix(False), np.dtype(bool))
_text_row("endswith", 2, np.strings.endswith, lo.text_affix(True), np.dtype(bool))

# NumPy's other names of ufuncs in the table: lazyk functions of those names too
UFUNC_ALIASES = {"divide": "true_divide", "mod": "remainder", "abs": "absolute",
                 "conjugate": "conj", "bitwise_not": "invert", "pow": "power"}
ALIASES = {**UFUNC_ALIASES, "cast": "astype", "arctangent2": "arctan2"}


# ---------------------------------------------------------------- reductions
@functools.lru_cache(maxsize=512)
def _reduce_out(fn_name: str, dt: np.dtype) -> np.dtype:
    try:
        return _native(getattr(np, fn_name)(np.ones(1, dt)).dtype)
    except TypeError as e:
        raise DTypeError(f"{fn_name} does not support {dt}: {e}") from None


def _red_resolve(fn_name: str):
    def resolve(dts, attr):
        d = dts[0] if isinstance(dts[0], np.dtype) else np.asarray(_weak_value(dts[0])).dtype
        return (d, _reduce_out(fn_name, d))
    return resolve


def _limit(dt: np.dtype, low: bool) -> Any:
    dt = np.dtype(dt)
    if dt.kind == "f":
        return -np.inf if low else np.inf
    if dt.kind == "c":  # lexicographic order: (inf, inf) is above every non-NaN value
        return complex(-np.inf, -np.inf) if low else complex(np.inf, np.inf)
    if dt.kind == "b":
        return not low
    info = np.iinfo(dt)
    return int(info.min if low else info.max)


# name: (combine, identity, value of a fold of nothing)
_REDUCTIONS = {
    "sum": ("add", lambda dt: 0, 0),
    "prod": ("multiply", lambda dt: 1, 1),
    "min": ("minimum", lambda dt: _limit(dt, False), None),
    "max": ("maximum", lambda dt: _limit(dt, True), None),
    "mean": ("add", lambda dt: 0, np.nan),  # the sum, divided by the count (`per_value`)
    "any": ("logical_or", lambda dt: False, False),
    "all": ("logical_and", lambda dt: True, True),
}
for _n, (_comb, _ident, _empty) in _REDUCTIONS.items():
    OPS[_n] = Op(_n, 1, "reduction", _wrap_resolve(_n, _red_resolve(_n)), getattr(np, _n),
                 None, complex_ok=True, identity=_ident, combine=_comb, empty=_empty,
                 per_value=_n == "mean")



def _arg_resolve(dts, attr):
    d = dts[0] if isinstance(dts[0], np.dtype) else np.asarray(_weak_value(dts[0])).dtype
    if d.kind not in "biuf":
        raise TypeError(f"no order of {d} values to take a position from")
    return (d, np.dtype(np.int64))


# Arg-reductions: the accumulator is (best value, its position), starting from (identity,
# -1: nothing folded, a missing result). A later value takes the best's place only where
# `combine` holds strictly (the first of equal values wins) or where it is NaN and the best
# is not: the first NaN wins, as NumPy's argmax / argmin (Awkward's compare NaN as any other
# value, so there a NaN wins only where it comes first). `finish` keeps the position.
for _n, _comb, _low in (("argmax", "greater", True), ("argmin", "less", False)):
    OPS[_n] = Op(_n, 1, "reduction", _wrap_resolve(_n, _arg_resolve), getattr(np, _n), None,
                 identity=functools.partial(_limit, low=_low), combine=_comb,
                 finish=lambda value, position: position)
ARG_REDUCTIONS = ("argmax", "argmin")

ELEMENTWISE = tuple(n for n, o in OPS.items() if o.kind == "elementwise")
TEXT = tuple(n for n, o in OPS.items() if o.kind == "text")
REDUCTIONS = tuple(n for n, o in OPS.items() if o.kind == "reduction")


def get(name: str) -> Op:
    """The row for an op name (aliases such as `divide`, `abs`, `conjugate` accepted)."""
    try:
        return OPS[ALIASES.get(name, name)]
    except KeyError:
        raise NotSupportedError(f"unknown op {name!r}") from None

"""THE op table: one row per op with its type rule, NumPy reference and scalar LLVM lowering.

Type rules defer to NumPy's own resolution (`ufunc.resolve_dtypes`, NEP 50 weak Python
scalars given as the classes `int`/`float`/`complex`), so lazyk matches NumPy exactly.

A lowering is `llvm(em, args, loop, attr) -> value`: `args` are already cast to the loop's
input dtypes, `loop` is the resolved dtype tuple `(in..., out)`, and `em` is the codegen
emitter (`lazyk.codegen.emit.Emitter`: `.b` builder, `.math(name, *xs)`, `.const(dt, v)`,
`.cast(v, src, dst)`, `.truth(v, dt)`, `.lltype(dt)`, `.cmath(name, *zs)` for the C99
complex functions). Values are LLVM scalars in the compute type (bool -> i1, float16 ->
float), complex values are `(re, im)` tuples.

Known differences from NumPy: integer `power` with a negative exponent (NumPy raises; a
kernel cannot, so it gives base**(e mod 2**w)); float -> int casts of NaN/out-of-range
values (undefined in C, LLVM poison); float sums/products reassociate (NumPy's pairwise
order is not reproduced bit for bit).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from llvmlite import ir

from lazyk.errors import DTypeError, NotSupportedError

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
    kind: str  # "elementwise" | "reduction"
    resolve: Callable[..., tuple]  # (*dtypes, attr=None) -> (loop in..., out)
    numpy: Callable[..., Any]
    llvm: Callable[..., Any] | None
    nvvm: Callable[..., Any] | None = None
    complex_ok: bool = False  # NOTE: complex lowering exists only where this is True
    identity: Callable[[np.dtype], Any] | None = None  # reductions: the start value
    combine: str | None = None  # reductions: elementwise op that folds two partials
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def infer(self, *dtypes: Any, attr: Any = None) -> np.dtype:
        """Result dtype for operand dtypes (np.dtype or weak int/float/complex class)."""
        return self.resolve(*dtypes, attr=attr)[-1]

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
            return np.asarray(arrays[0]).astype(attr)
        return self.numpy(*arrays)


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


def _clip_resolve(dts: tuple, attr: Any) -> tuple:
    if _clip_ufunc is not None:
        return _clip_ufunc.resolve_dtypes(dts + (None,))
    t = np.result_type(*(_weak_value(d) for d in dts))  # pragma: no cover
    return (t, t, t, t)  # pragma: no cover


# ---------------------------------------------------------------- lowering helpers
def _k(dt: np.dtype) -> str:
    return np.dtype(dt).kind


def _cplx(fn: Callable) -> Callable:
    """Apply a real lowering to both components of complex operands."""
    def lower(em, args, loop, attr):
        if _k(loop[-1]) == "c":
            return tuple(fn(em, [a[i] for a in args], loop, attr, part=True) for i in (0, 1))
        return fn(em, args, loop, attr)
    return lower


def _binary(f_op: str, i_op: str, b_op: str | None = None, u_op: str | None = None):
    def lower(em, args, loop, attr, part=False):
        b, (x, y) = em.b, args
        k = "f" if part else _k(loop[0])
        if k == "f":
            return getattr(b, f_op)(x, y)
        if k == "b":
            return getattr(b, b_op)(x, y)
        return getattr(b, u_op if (k == "u" and u_op) else i_op)(x, y)
    return _cplx(lower)


def _multiply(em, args, loop, attr):
    b, (x, y) = em.b, args
    k = _k(loop[0])
    if k == "c":
        (xr, xi), (yr, yi) = x, y
        return (b.fsub(b.fmul(xr, yr), b.fmul(xi, yi)), b.fadd(b.fmul(xr, yi), b.fmul(xi, yr)))
    if k == "f":
        return b.fmul(x, y)
    return b.and_(x, y) if k == "b" else b.mul(x, y)


def _true_divide(em, args, loop, attr):
    b, (x, y) = em.b, args
    if _k(loop[0]) != "c":
        return b.fdiv(x, y)
    # NumPy's Smith division, both branches computed and selected (branchless)
    (xr, xi), (yr, yi) = x, y
    t = yr.type
    one, zero = ir.Constant(t, 1.0), ir.Constant(t, 0.0)
    ar, ai = em.math("fabs", yr), em.math("fabs", yi)
    rat1 = b.fdiv(yi, yr)
    scl1 = b.fdiv(one, b.fadd(yr, b.fmul(yi, rat1)))
    r1 = b.fmul(b.fadd(xr, b.fmul(xi, rat1)), scl1)
    i1 = b.fmul(b.fsub(xi, b.fmul(xr, rat1)), scl1)
    both0 = b.and_(b.fcmp_ordered("==", ar, zero), b.fcmp_ordered("==", ai, zero))
    r1 = b.select(both0, b.fdiv(xr, ar), r1)
    i1 = b.select(both0, b.fdiv(xi, ar), i1)
    rat2 = b.fdiv(yr, yi)
    scl2 = b.fdiv(one, b.fadd(yi, b.fmul(yr, rat2)))
    r2 = b.fmul(b.fadd(b.fmul(xr, rat2), xi), scl2)
    i2 = b.fmul(b.fsub(b.fmul(xi, rat2), xr), scl2)
    first = b.fcmp_ordered(">=", ar, ai)
    return (b.select(first, r1, r2), b.select(first, i1, i2))


def _float_divmod(em, x, y):
    """NumPy's npy_divmod: (floordiv, mod) with Python sign conventions, branchless."""
    b, t = em.b, x.type
    zero, one, half = (ir.Constant(t, v) for v in (0.0, 1.0, 0.5))
    mod = b.frem(x, y)
    div = b.fdiv(b.fsub(x, mod), y)
    fix = b.and_(b.fcmp_unordered("!=", mod, zero),
                 b.xor(b.fcmp_ordered("<", y, zero), b.fcmp_ordered("<", mod, zero)))
    mod2 = b.select(fix, b.fadd(mod, y), mod)
    div = b.select(fix, b.fsub(div, one), div)
    mod2 = b.select(b.fcmp_ordered("==", mod, zero), em.math("copysign", zero, y), mod2)
    fl = em.math("floor", div)
    fl = b.select(b.fcmp_ordered(">", b.fsub(div, fl), half), b.fadd(fl, one), fl)
    q = b.fdiv(x, y)
    fl = b.select(b.fcmp_ordered("==", div, zero), em.math("copysign", zero, q), fl)
    ynz = b.fcmp_unordered("!=", y, zero)
    return b.select(ynz, fl, q), b.select(ynz, mod2, mod)


def _int_safe(em, x, y, signed):
    """Divisor with 0 and -1 replaced by 1, so sdiv/srem never trap (results fixed later)."""
    b, t = em.b, y.type
    bad = b.icmp_unsigned("==", y, ir.Constant(t, 0))
    if signed:
        bad = b.or_(bad, b.icmp_signed("==", y, ir.Constant(t, -1)))
    return b.select(bad, ir.Constant(t, 1), y)


def _floor_divide(em, args, loop, attr):
    b, (x, y) = em.b, args
    k = _k(loop[0])
    if k == "f":
        return _float_divmod(em, x, y)[0]
    t = x.type
    z = ir.Constant(t, 0)
    ys = _int_safe(em, x, y, k == "i")
    if k != "i":
        return b.select(b.icmp_unsigned("==", y, z), z, b.udiv(x, ys))
    q, r = b.sdiv(x, ys), b.srem(x, ys)
    adj = b.and_(b.icmp_signed("!=", r, z),
                 b.xor(b.icmp_signed("<", r, z), b.icmp_signed("<", y, z)))
    q = b.select(adj, b.sub(q, ir.Constant(t, 1)), q)
    q = b.select(b.icmp_signed("==", y, ir.Constant(t, -1)), b.sub(z, x), q)  # wraps at MIN
    return b.select(b.icmp_signed("==", y, z), z, q)


def _remainder(em, args, loop, attr):
    b, (x, y) = em.b, args
    k = _k(loop[0])
    if k == "f":
        return _float_divmod(em, x, y)[1]
    t = x.type
    z = ir.Constant(t, 0)
    ys = _int_safe(em, x, y, k == "i")
    if k != "i":
        return b.select(b.icmp_unsigned("==", y, z), z, b.urem(x, ys))
    r = b.srem(x, ys)
    adj = b.and_(b.icmp_signed("!=", r, z),
                 b.xor(b.icmp_signed("<", r, z), b.icmp_signed("<", y, z)))
    r = b.select(adj, b.add(r, y), r)
    bad = b.or_(b.icmp_signed("==", y, z), b.icmp_signed("==", y, ir.Constant(t, -1)))
    return b.select(bad, z, r)


def _complex_power(em, x, y):
    """NumPy's nc_pow, branchless: 0 and small integer exponents by repeated multiplication
    (as NumPy, for exactness), everything else through C99 cpow."""
    b, t = em.b, x[0].type
    zero, one, nan = (ir.Constant(t, v) for v in (0.0, 1.0, float("nan")))
    (xr, xi), (yr, yi) = x, y
    sel = lambda c, u, v: (b.select(c, u[0], v[0]), b.select(c, u[1], v[1]))  # noqa: E731
    mul = lambda u, v: _multiply(em, [u, v], (np.dtype("c16"),), None)  # noqa: E731
    res = em.cmath("pow", x, y)
    small = b.and_(b.fcmp_ordered("<", em.math("fabs", yr), ir.Constant(t, 100.0)),
                   b.fcmp_ordered("==", yi, zero))
    n = b.fptosi(b.select(small, yr, zero), ir.IntType(64))
    small = b.and_(small, b.fcmp_ordered("==", b.sitofp(n, t), yr))
    m = b.select(b.icmp_signed("<", n, ir.Constant(n.type, 0)), b.neg(n), n)
    acc, p = (one, zero), x
    for bit in range(7):  # |n| < 100 < 2**7
        on = b.trunc(b.lshr(m, ir.Constant(n.type, bit)), ir.IntType(1))
        acc = sel(on, mul(acc, p), acc)
        p = mul(p, p)
    inv = _true_divide(em, [(one, zero), acc], (np.dtype("c16"),), None)
    acc = sel(b.fcmp_ordered("<", yr, zero), inv, acc)
    sq = mul(x, x)
    acc = sel(b.icmp_signed("==", n, ir.Constant(n.type, 3)), mul(x, sq), acc)
    acc = sel(b.icmp_signed("==", n, ir.Constant(n.type, 2)), sq, acc)
    acc = sel(b.icmp_signed("==", n, ir.Constant(n.type, 1)), x, acc)
    res = sel(small, acc, res)
    x0 = b.and_(b.fcmp_ordered("==", xr, zero), b.fcmp_ordered("==", xi, zero))
    pos = b.and_(b.fcmp_ordered(">", yr, zero), b.fcmp_ordered("==", yi, zero))
    res = sel(x0, sel(pos, (zero, zero), (nan, nan)), res)
    y0 = b.and_(b.fcmp_ordered("==", yr, zero), b.fcmp_ordered("==", yi, zero))
    return sel(y0, (one, zero), res)


def _power(em, args, loop, attr):
    b, (x, y) = em.b, args
    k = _k(loop[0])
    if k == "c":
        return _complex_power(em, x, y)
    if k == "f":
        return em.math("pow", x, y)
    if k == "b":  # pragma: no cover - NumPy resolves bool**bool to int8
        return b.or_(x, b.not_(y))
    # Square-and-multiply over every exponent bit, unrolled: exact mod 2**w, branchless.
    # NOTE: NumPy raises for negative integer exponents; here they give base**(e mod 2**w).
    t = x.type
    one = ir.Constant(t, 1)
    res, base = one, x
    for i in range(t.width):
        bit = b.trunc(b.lshr(y, ir.Constant(t, i)), ir.IntType(1))
        res = b.select(bit, b.mul(res, base), res)
        base = b.mul(base, base)
    return res


def _negative(em, args, loop, attr):
    b, (x,) = em.b, args
    k = _k(loop[0])
    if k == "c":
        return (b.fneg(x[0]), b.fneg(x[1]))
    return b.fneg(x) if k == "f" else b.neg(x)


def _absolute(em, args, loop, attr):
    b, (x,) = em.b, args
    k = _k(loop[0])
    if k == "c":
        return em.math("hypot", x[0], x[1])
    if k == "f":
        return em.math("fabs", x)
    if k == "i":
        return b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)), b.neg(x), x)
    return x


_SWAP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def _compare(pred: str):
    def lower(em, args, loop, attr):
        b, (x, y) = em.b, args
        k0, k1 = _k(loop[0]), _k(loop[1])
        if k0 == "c":
            if pred == "==":
                return b.and_(b.fcmp_ordered("==", x[0], y[0]), b.fcmp_ordered("==", x[1], y[1]))
            if pred == "!=":
                return b.or_(b.fcmp_unordered("!=", x[0], y[0]),
                             b.fcmp_unordered("!=", x[1], y[1]))
            return _complex_order(em, pred, x, y)
        if k0 == "f":
            return (b.fcmp_unordered if pred == "!=" else b.fcmp_ordered)(pred, x, y)
        if k0 == k1 or k0 == "b":
            return (b.icmp_signed if k0 == "i" else b.icmp_unsigned)(pred, x, y)
        # NumPy 2 compares int64 with uint64 exactly: a negative signed side decides alone
        s, u, p = (x, y, pred) if k0 == "i" else (y, x, _SWAP[pred])
        neg = b.icmp_signed("<", s, ir.Constant(s.type, 0))
        rest = b.icmp_unsigned(p, s, u)
        when_neg = ir.Constant(ir.IntType(1), p in ("<", "<=", "!="))
        return b.select(neg, when_neg, rest)
    return lower


def _complex_order(em, pred: str, x, y):
    """NumPy's lexicographic complex order (CLT/CLE/...): a NaN imaginary part blocks `re <`."""
    b = em.b
    (xr, xi), (yr, yi) = x, y
    strict = "<" if pred in ("<", "<=") else ">"
    no_nan = b.and_(b.fcmp_ordered("ord", xi, xi), b.fcmp_ordered("ord", yi, yi))
    first = b.and_(b.fcmp_ordered(strict, xr, yr), no_nan)
    return b.or_(first, b.and_(b.fcmp_ordered("==", xr, yr), b.fcmp_ordered(pred, xi, yi)))


def _complex_minmax(em, x, y, is_min: bool, nan_prop: bool):
    """NumPy's complex maximum/minimum (NaN in x wins) and fmax/fmin (NaN in y loses)."""
    b = em.b
    keep_x = _complex_order(em, "<=" if is_min else ">=", x, y)
    if nan_prop:
        keep_x = b.or_(keep_x, b.or_(b.fcmp_unordered("uno", x[0], x[0]),
                                     b.fcmp_unordered("uno", x[1], x[1])))
    else:
        keep_x = b.or_(keep_x, b.or_(b.fcmp_unordered("uno", y[0], y[0]),
                                     b.fcmp_unordered("uno", y[1], y[1])))
    return (b.select(keep_x, x[0], y[0]), b.select(keep_x, x[1], y[1]))


def _logical(opname: str):
    def lower(em, args, loop, attr):
        b = em.b
        xs = [em.truth(a, d) for a, d in zip(args, loop)]
        if opname == "not":
            return b.not_(xs[0])
        return {"and": b.and_, "or": b.or_, "xor": b.xor}[opname](*xs)
    return lower


def _bitwise(opname: str):
    def lower(em, args, loop, attr):
        return {"and": em.b.and_, "or": em.b.or_, "xor": em.b.xor}[opname](*args)
    return lower


def _invert(em, args, loop, attr):
    return em.b.not_(args[0])


def _shift(left: bool):
    def lower(em, args, loop, attr):
        b, (x, y) = em.b, args
        t = x.type
        inrange = b.icmp_unsigned("<", y, ir.Constant(t, t.width))  # negative -> huge
        ys = b.select(inrange, y, ir.Constant(t, 0))
        if left:
            return b.select(inrange, b.shl(x, ys), ir.Constant(t, 0))
        if _k(loop[0]) == "i":
            fill = b.ashr(x, ir.Constant(t, t.width - 1))  # -1 for negatives, else 0
            return b.select(inrange, b.ashr(x, ys), fill)
        return b.select(inrange, b.lshr(x, ys), ir.Constant(t, 0))
    return lower


# NumPy's complex loops call the C99 functions of the same name (csqrt, cexp, ...) from libm
_C99 = {"sqrt", "exp", "log", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
        "tanh"}


def _complex_logexp(em, name: str, z):
    """NumPy's own complex log2/log10/expm1/log1p formulas (funcs.inc.src)."""
    b, (re, im) = em.b, z
    t = re.type
    if name in ("log2", "log10"):
        k = ir.Constant(t, 1.4426950408889634 if name == "log2" else 0.4342944819032518)
        r, i = em.cmath("log", z)
        return (b.fmul(r, k), b.fmul(i, k))
    one, two = ir.Constant(t, 1.0), ir.Constant(t, 2.0)
    if name == "log1p":
        re1 = b.fadd(re, one)
        return (em.math("log", em.math("hypot", re1, im)), em.math("atan2", im, re1))
    if name == "expm1":
        a = em.math("sin", b.fdiv(im, two))
        r = b.fsub(b.fmul(em.math("expm1", re), em.math("cos", im)), b.fmul(b.fmul(two, a), a))
        return (r, b.fmul(em.math("exp", re), em.math("sin", im)))
    raise NotSupportedError(f"complex {name}")


def _unary_math(name: str, int_identity: bool = False):
    def lower(em, args, loop, attr):
        if _k(loop[0]) == "c":
            if name == "rint":
                return tuple(em.math("rint", v) for v in args[0])
            if name in _C99:
                return em.cmath(name, args[0])
            return _complex_logexp(em, name, args[0])
        if _k(loop[0]) != "f":
            if int_identity:
                return args[0]
            raise NotSupportedError(f"{name} on {loop[0]}")
        return em.math(name, *args)
    return lower


def _complex_sign(em, x):
    """NumPy 2's complex sign z/|z|: an infinite part wins over NaN; inf + inf j is NaN."""
    b = em.b
    (re, im), t = x, x[0].type
    one, mone, zero, nan = (ir.Constant(t, v) for v in (1.0, -1.0, 0.0, float("nan")))
    inf = ir.Constant(t, float("inf"))
    rinf = b.fcmp_ordered("==", em.math("fabs", re), inf)
    iinf = b.fcmp_ordered("==", em.math("fabs", im), inf)
    anynan = b.or_(b.fcmp_unordered("uno", re, re), b.fcmp_unordered("uno", im, im))
    both0 = b.and_(b.fcmp_ordered("==", re, zero), b.fcmp_ordered("==", im, zero))
    a = em.math("hypot", re, im)
    r, i = b.fdiv(re, a), b.fdiv(im, a)
    r, i = b.select(both0, zero, r), b.select(both0, zero, i)
    r, i = b.select(anynan, nan, r), b.select(anynan, nan, i)
    unit = lambda v: b.select(b.fcmp_ordered(">", v, zero), one, mone)  # noqa: E731
    r, i = b.select(iinf, zero, r), b.select(iinf, unit(im), i)
    r, i = b.select(rinf, unit(re), r), b.select(rinf, zero, i)
    both = b.and_(rinf, iinf)
    return (b.select(both, nan, r), b.select(both, nan, i))


def _sign(em, args, loop, attr):
    b, (x,) = em.b, args
    k = _k(loop[0])
    if k == "c":
        return _complex_sign(em, x)
    t = x.type
    if k == "f":
        one, mone, zero = (ir.Constant(t, v) for v in (1.0, -1.0, 0.0))
        r = b.select(b.fcmp_ordered("==", x, zero), zero, x)  # keeps NaN
        r = b.select(b.fcmp_ordered("<", x, zero), mone, r)
        return b.select(b.fcmp_ordered(">", x, zero), one, r)
    z = ir.Constant(t, 0)
    if k == "u":
        return b.zext(b.icmp_unsigned("!=", x, z), t)
    return b.sub(b.zext(b.icmp_signed(">", x, z), t), b.zext(b.icmp_signed("<", x, z), t))


def _minmax(is_min: bool, nan_prop: bool):
    def lower(em, args, loop, attr):
        b, (x, y) = em.b, args
        k = _k(loop[0])
        if k == "c":
            return _complex_minmax(em, x, y, is_min, nan_prop)
        if k == "f":
            name = ("minimum" if is_min else "maximum") if nan_prop else (
                "minnum" if is_min else "maxnum")
            return em.math(name, x, y)
        if k == "b":
            return b.and_(x, y) if is_min else b.or_(x, y)
        cmp = b.icmp_signed if k == "i" else b.icmp_unsigned
        return b.select(cmp("<" if is_min else ">", x, y), x, y)
    return lower


def _clip(em, args, loop, attr):
    x, lo, hi = args
    if _k(loop[0]) == "c":
        # NumPy's clip.cpp: plain lexicographic order (no NaN rule) and a NaN operand wins
        b = em.b

        def pick(u, v, pred):
            re_eq = b.fcmp_ordered("==", u[0], v[0])
            lt = b.select(re_eq, b.fcmp_ordered(pred, u[1], v[1]),
                          b.fcmp_ordered(pred, u[0], v[0]))
            keep = b.or_(lt, b.or_(b.fcmp_unordered("uno", u[0], u[0]),
                                   b.fcmp_unordered("uno", u[1], u[1])))
            return (b.select(keep, u[0], v[0]), b.select(keep, u[1], v[1]))
        return pick(pick(x, lo, ">"), hi, "<")
    mx = _minmax(False, True)(em, [x, lo], loop, attr)
    return _minmax(True, True)(em, [mx, hi], loop, attr)


def _where(em, args, loop, attr):
    c, x, y = args
    if isinstance(x, tuple):
        return (em.b.select(c, x[0], y[0]), em.b.select(c, x[1], y[1]))
    return em.b.select(c, x, y)


def _isclass(which: str):
    def lower(em, args, loop, attr):
        b, (x,) = em.b, args
        k = _k(loop[0])
        if k not in "fc":
            return ir.Constant(ir.IntType(1), which == "isfinite")

        def one(v):
            if which == "isnan":
                return b.fcmp_unordered("uno", v, v)
            inf = ir.Constant(v.type, float("inf"))
            a = em.math("fabs", v)
            return b.fcmp_ordered("==" if which == "isinf" else "<", a, inf)
        if k == "c":
            r, i = one(x[0]), one(x[1])
            return b.and_(r, i) if which == "isfinite" else b.or_(r, i)
        return one(x)
    return lower


def _real(em, args, loop, attr):
    return args[0][0] if _k(loop[0]) == "c" else args[0]


def _imag(em, args, loop, attr):
    if _k(loop[0]) == "c":
        return args[0][1]
    return em.const(loop[-1], 0)


def _conj(em, args, loop, attr):
    x = args[0]
    return (x[0], em.b.fneg(x[1])) if _k(loop[0]) == "c" else x


def _astype(em, args, loop, attr):
    return em.cast(args[0], loop[0], loop[1])


# ---------------------------------------------------------------- the table
OPS: dict[str, Op] = {}


def _row(name, arity, resolve, numpy, llvm, complex_ok=False, **kw) -> None:
    OPS[name] = Op(name, arity, "elementwise", _wrap_resolve(name, resolve), numpy, llvm,
                   complex_ok=complex_ok, **kw)


def _ufunc_row(name, llvm, complex_ok=False, uf=None, **kw):
    uf = uf or getattr(np, name)
    _row(name, uf.nin, _ufunc_resolve(uf), uf, llvm, complex_ok, **kw)


_ufunc_row("add", _binary("fadd", "add", "or_"), True)
_ufunc_row("subtract", _binary("fsub", "sub"), True)
_ufunc_row("multiply", _multiply, True)
_ufunc_row("true_divide", _true_divide, True, uf=np.divide)
_ufunc_row("floor_divide", _floor_divide)
_ufunc_row("remainder", _remainder)
_ufunc_row("power", _power, True, extra={"cmath": True})
_ufunc_row("negative", _negative, True)
_ufunc_row("absolute", _absolute, True)
for _n, _p in (("less", "<"), ("less_equal", "<="), ("greater", ">"),
               ("greater_equal", ">="), ("equal", "=="), ("not_equal", "!=")):
    _ufunc_row(_n, _compare(_p), True)
for _n in ("and", "or", "xor", "not"):
    _ufunc_row(f"logical_{_n}", _logical(_n), True)
for _n in ("and", "or", "xor"):
    _ufunc_row(f"bitwise_{_n}", _bitwise(_n))
_ufunc_row("invert", _invert)
_ufunc_row("left_shift", _shift(True))
_ufunc_row("right_shift", _shift(False))
for _n, _m in (("sqrt", "sqrt"), ("exp", "exp"), ("expm1", "expm1"), ("log", "log"),
               ("log1p", "log1p"), ("log2", "log2"), ("log10", "log10"), ("sin", "sin"),
               ("cos", "cos"), ("tan", "tan"), ("arcsin", "asin"), ("arccos", "acos"),
               ("arctan", "atan"), ("sinh", "sinh"), ("cosh", "cosh"), ("tanh", "tanh")):
    _ufunc_row(_n, _unary_math(_m), True,
               extra={"cmath": _m not in ("expm1", "log1p")})
for _n, _m in (("floor", "floor"), ("ceil", "ceil"), ("trunc", "trunc"), ("rint", "rint")):
    _ufunc_row(_n, _unary_math(_m, int_identity=True), _n == "rint")
_ufunc_row("arctan2", lambda em, a, loop, attr: em.math("atan2", *a))
_ufunc_row("hypot", lambda em, a, loop, attr: em.math("hypot", *a))


def _inverse_hyperbolic(name: str):
    """arcsinh/arccosh/arctanh: libm asinh/acosh/atanh; complex through C99 casinh/... (the
    functions NumPy's complex loops call)."""
    def lower(em, args, loop, attr):
        k = _k(loop[0])
        if k == "c":
            return em.cmath(name, args[0])
        if k != "f":  # pragma: no cover - NumPy resolves integer inputs to float loops
            raise NotSupportedError(f"{name} on {loop[0]}")
        return em.math(name, *args)
    return lower


def _fmod(em, args, loop, attr):
    """C fmod: the remainder takes the dividend's sign; integer x % 0 is 0 (as NumPy)."""
    b, (x, y) = em.b, args
    k = _k(loop[0])
    if k == "f":
        return b.frem(x, y)  # LLVM's frem is C fmod (NaN for y == 0 or x infinite)
    t = x.type
    z = ir.Constant(t, 0)
    ys = _int_safe(em, x, y, k == "i")
    if k != "i":
        return b.select(b.icmp_unsigned("==", y, z), z, b.urem(x, ys))
    bad = b.or_(b.icmp_signed("==", y, z), b.icmp_signed("==", y, ir.Constant(t, -1)))
    return b.select(bad, z, b.srem(x, ys))


for _n, _m in (("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh")):
    _ufunc_row(_n, _inverse_hyperbolic(_m), True, extra={"cmath": True})
_ufunc_row("fmod", _fmod)
_ufunc_row("copysign", lambda em, a, loop, attr: em.math("copysign", *a))
_ufunc_row("sign", _sign, True)
_ufunc_row("minimum", _minmax(True, True), True)
_ufunc_row("maximum", _minmax(False, True), True)
_ufunc_row("fmin", _minmax(True, False), True)
_ufunc_row("fmax", _minmax(False, False), True)
_ufunc_row("isnan", _isclass("isnan"), True)
_ufunc_row("isinf", _isclass("isinf"), True)
_ufunc_row("isfinite", _isclass("isfinite"), True)
_ufunc_row("conj", _conj, True, uf=np.conjugate)
_row("clip", 3, _clip_resolve, np.clip, _clip, complex_ok=True)
_row("where", 3, _where_resolve, np.where, _where, complex_ok=True)
_row("real", 1, _realimag_resolve, np.real, _real, complex_ok=True)
_row("imag", 1, _realimag_resolve, np.imag, _imag, complex_ok=True)
_row("astype", 1, _astype_resolve, None, _astype, complex_ok=True)

ALIASES = {"divide": "true_divide", "conjugate": "conj", "abs": "absolute", "pow": "power",
           "mod": "remainder", "cast": "astype", "arctangent2": "arctan2"}


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


_REDUCTIONS = {
    "sum": ("add", lambda dt: 0, True),
    "prod": ("multiply", lambda dt: 1, True),
    "min": ("minimum", lambda dt: _limit(dt, False), True),
    "max": ("maximum", lambda dt: _limit(dt, True), True),
    "mean": ("add", lambda dt: 0, True),  # the front end divides the sum by the count
    "any": ("logical_or", lambda dt: False, True),
    "all": ("logical_and", lambda dt: True, True),
}
for _n, (_comb, _ident, _cok) in _REDUCTIONS.items():
    OPS[_n] = Op(_n, 1, "reduction", _wrap_resolve(_n, _red_resolve(_n)), getattr(np, _n),
                 None, complex_ok=_cok, identity=_ident, combine=_comb)

ELEMENTWISE = tuple(n for n, o in OPS.items() if o.kind == "elementwise")
REDUCTIONS = tuple(n for n, o in OPS.items() if o.kind == "reduction")


def get(name: str) -> Op:
    """The row for an op name (aliases such as `divide`, `abs`, `conjugate` accepted)."""
    try:
        return OPS[ALIASES.get(name, name)]
    except KeyError:
        raise NotSupportedError(f"unknown op {name!r}") from None

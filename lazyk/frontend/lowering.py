"""The LLVM lowerings of the op table's rows (`lazyk.frontend.ops.OPS`): one function per op, or a
factory for a family of ops, each `llvm(em, args, loop, attr) -> value` as the `lazyk.frontend.ops`
docstring describes. They build IR through the codegen's scalar emitter `em` and never import
codegen: it passes itself in.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from llvmlite import ir

from lazyk.errors import NotSupportedError


def _k(dt: np.dtype) -> str:
    return np.dtype(dt).kind


def _cplx(fn: Callable) -> Callable:
    """Apply a real lowering to both components of complex operands."""
    def lower(em, args, loop, attr):
        if _k(loop[-1]) == "c":
            return tuple(fn(em, [a[i] for a in args], loop, attr, part=True) for i in (0, 1))
        return fn(em, args, loop, attr)
    return lower


def binary(f_op: str, i_op: str, b_op: str | None = None):
    def lower(em, args, loop, attr, part=False):
        b, (x, y) = em.b, args
        k = "f" if part else _k(loop[0])
        if k == "f":
            return getattr(b, f_op)(x, y)
        if k == "b":
            return getattr(b, b_op)(x, y)
        return getattr(b, i_op)(x, y)
    return _cplx(lower)


def multiply(em, args, loop, attr):
    b, (x, y) = em.b, args
    k = _k(loop[0])
    if k == "c":
        (xr, xi), (yr, yi) = x, y
        return (b.fsub(b.fmul(xr, yr), b.fmul(xi, yi)), b.fadd(b.fmul(xr, yi), b.fmul(xi, yr)))
    if k == "f":
        return b.fmul(x, y)
    return b.and_(x, y) if k == "b" else b.mul(x, y)


def reciprocal(em, args, loop, attr):
    """1 / x as NumPy: integers (T)(1.0 / x) (1 / 0 = inf: the lowest int32 / int64, else 0);
    complex by NumPy's algorithm (not Smith's division: signs of zeros, infinities differ)."""
    b, k, x = em.b, _k(loop[0]), args[0]
    if k == "f":
        return b.fdiv(ir.Constant(x.type, 1.0), x)
    if k in "iu":
        c = [ir.Constant(x.type, v) for v in (0, 1, -1, -1 << (x.type.width - 1))]
        got = b.select(b.icmp_signed("==", x, c[1]), c[1], c[0])
        got = b.select(b.icmp_signed("==", x, c[2]), x, got) if k == "i" else got
        return b.select(b.icmp_signed("==", x, c[0]), c[3], got) if k == "i" and \
            x.type.width >= 32 else got
    (re, im), one = x, ir.Constant(x[0].type, 1.0)
    first = b.fcmp_ordered("<=", em.math("fabs", im), em.math("fabs", re))
    r1, r2 = b.fdiv(im, re), b.fdiv(re, im)
    d1, d2 = b.fadd(re, b.fmul(im, r1)), b.fadd(b.fmul(re, r2), im)
    return (b.select(first, b.fdiv(one, d1), b.fdiv(r2, d2)),
            b.select(first, b.fdiv(b.fneg(r1), d1), b.fdiv(b.fneg(one), d2)))


def true_divide(em, args, loop, attr):
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


def inline_helper(module: ir.Module, name: str, ret: ir.Type,
                  args: list) -> tuple[ir.Function, ir.IRBuilder | None]:
    """A helper function of `module`, internal and always inlined (a call per element
    costs more than its body): (it, a builder at its entry when it is new, else None)."""
    fn = module.globals.get(name)
    if fn is not None:
        return fn, None
    fn = ir.Function(module, ir.FunctionType(ret, args), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    fn.attributes.add("alwaysinline")
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def frem(em, x, y):
    """C fmod (the target's: libm on the CPU, libdevice on the GPU) with no call where
    |x| < 2|y|, as when an angle is wrapped into one period: x below |y|, else |x| - |y| with
    x's sign (exact by Sterbenz's lemma, as fmod is). A helper of the module, always
    inlined, so the branch sits in the caller's loop. A target whose fmod the loop
    vectorizer widens (the CPU's: exact, few libm calls) is called as it is."""
    if getattr(em.target, "fmod_widens", False):
        return em.target.fmod(em.b, x, y)
    t = x.type
    fn, b = inline_helper(em.module, f"lazyk_frem_{t}", t, [t, t])
    if b is not None:
        fx, fy = fn.args
        sub = type(em)(b, em.target)
        ax, ay = sub.math("fabs", fx), sub.math("fabs", fy)
        near = b.fcmp_ordered("<", ax, b.fmul(ay, ir.Constant(t, 2.0)))
        with b.if_then(b.not_(near), likely=False):
            b.ret(em.target.fmod(b, fx, fy))  # (NaN, infinite x, zero y, |x| >= 2|y|)
        b.ret(b.select(b.fcmp_ordered("<", ax, ay), fx,
                       sub.math("copysign", b.fsub(ax, ay), fx)))
    return em.b.call(fn, [x, y])


def _float_divmod(em, x, y):
    """NumPy's npy_divmod: (floordiv, mod) with Python sign conventions, branchless."""
    b, t = em.b, x.type
    zero, one, half = (ir.Constant(t, v) for v in (0.0, 1.0, 0.5))
    mod = frem(em, x, y)
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


def _int_safe(em, y, signed):
    """Divisor with 0 and -1 replaced by 1, so sdiv/srem never trap (results fixed later)."""
    b, t = em.b, y.type
    bad = b.icmp_unsigned("==", y, ir.Constant(t, 0))
    if signed:
        bad = b.or_(bad, b.icmp_signed("==", y, ir.Constant(t, -1)))
    return b.select(bad, ir.Constant(t, 1), y)


def floor_divide(em, args, loop, attr):
    b, (x, y) = em.b, args
    k = _k(loop[0])
    if k == "f":
        return _float_divmod(em, x, y)[0]
    t = x.type
    z = ir.Constant(t, 0)
    ys = _int_safe(em, y, k == "i")
    if k != "i":
        return b.select(b.icmp_unsigned("==", y, z), z, b.udiv(x, ys))
    q, r = b.sdiv(x, ys), b.srem(x, ys)
    adj = b.and_(b.icmp_signed("!=", r, z),
                 b.xor(b.icmp_signed("<", r, z), b.icmp_signed("<", y, z)))
    q = b.select(adj, b.sub(q, ir.Constant(t, 1)), q)
    q = b.select(b.icmp_signed("==", y, ir.Constant(t, -1)), b.sub(z, x), q)  # wraps at MIN
    return b.select(b.icmp_signed("==", y, z), z, q)


def remainder(em, args, loop, attr):
    b, (x, y) = em.b, args
    k = _k(loop[0])
    if k == "f":
        return _float_divmod(em, x, y)[1]
    t = x.type
    z = ir.Constant(t, 0)
    ys = _int_safe(em, y, k == "i")
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
    mul = lambda u, v: multiply(em, [u, v], (np.dtype("c16"),), None)  # noqa: E731
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
    inv = true_divide(em, [(one, zero), acc], (np.dtype("c16"),), None)
    acc = sel(b.fcmp_ordered("<", yr, zero), inv, acc)
    sq = mul(x, x)
    acc = sel(b.icmp_signed("==", n, ir.Constant(n.type, 3)), mul(x, sq), acc)
    acc = sel(b.icmp_signed("==", n, ir.Constant(n.type, 2)), sq, acc)
    acc = sel(b.icmp_signed("==", n, ir.Constant(n.type, 1)), x, acc)
    res = sel(small, acc, res)
    # NumPy 2: a zero base gives 0 for an exponent of positive real part (any imaginary
    # part), else NaN; a zero exponent gives 1 (below, over everything)
    x0 = b.and_(b.fcmp_ordered("==", xr, zero), b.fcmp_ordered("==", xi, zero))
    pos = b.fcmp_ordered(">", yr, zero)
    res = sel(x0, sel(pos, (zero, zero), (nan, nan)), res)
    y0 = b.and_(b.fcmp_ordered("==", yr, zero), b.fcmp_ordered("==", yi, zero))
    return sel(y0, (one, zero), res)


def power(em, args, loop, attr):
    b, (x, y) = em.b, args
    k = _k(loop[0])
    if k == "c":
        return _complex_power(em, x, y)
    if k == "f":
        return em.math("pow", x, y)
    if k == "b":  # pragma: no cover - NumPy resolves bool**bool to int8
        return b.or_(x, b.not_(y))
    # Square-and-multiply over every exponent bit, unrolled: exact mod 2**w, branchless.
    # NOTE: NumPy raises for negative integer exponents; here they give base**(e mod 2**w)
    # (the runtime checks the exponents first and raises NumPy's ValueError).
    t = x.type
    one = ir.Constant(t, 1)
    res, base = one, x
    for i in range(t.width):
        bit = b.trunc(b.lshr(y, ir.Constant(t, i)), ir.IntType(1))
        res = b.select(bit, b.mul(res, base), res)
        base = b.mul(base, base)
    return res


def negative(em, args, loop, attr):
    b, (x,) = em.b, args
    k = _k(loop[0])
    if k == "c":
        return (b.fneg(x[0]), b.fneg(x[1]))
    return b.fneg(x) if k == "f" else b.neg(x)


def absolute(em, args, loop, attr):
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


def compare(pred: str):
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


def logical(opname: str):
    def lower(em, args, loop, attr):
        b = em.b
        xs = [em.truth(a, d) for a, d in zip(args, loop)]
        if opname == "not":
            return b.not_(xs[0])
        return {"and": b.and_, "or": b.or_, "xor": b.xor}[opname](*xs)
    return lower


def bitwise(opname: str):
    def lower(em, args, loop, attr):
        return {"and": em.b.and_, "or": em.b.or_, "xor": em.b.xor}[opname](*args)
    return lower


def invert(em, args, loop, attr):
    return em.b.not_(args[0])


def shift(left: bool):
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


def unary_math(name: str, int_identity: bool = False):
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


def sign(em, args, loop, attr):
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


# `attr` of a minimum / maximum a reduction folds with (see `minmax`)
FOLD = "fold"


def minmax(is_min: bool, nan_prop: bool):
    def lower(em, args, loop, attr):
        b, (x, y) = em.b, args
        k = _k(loop[0])
        if k == "c":
            return _complex_minmax(em, x, y, is_min, nan_prop)
        if k == "f" and attr == FOLD:
            # a reduction's fold: NaN propagates, ties fall either way as in NumPy's own
            # (order-dependent) folds, and the intrinsic keeps the loop vectorized
            name = ("minimum" if is_min else "maximum") if nan_prop else (
                "minnum" if is_min else "maxnum")
            return em.math(name, x, y)
        if k == "f":
            # NumPy's order of operands, on every target: x when it wins strictly (or is
            # NaN for maximum / minimum, or y alone is NaN for fmax / fmin), else y; equal
            # values (0.0 and -0.0) and two NaNs give y. LLVM's maximum / maxnum order
            # -0.0 below 0.0 or leave ties open.
            win = b.fcmp_ordered("<" if is_min else ">", x, y)
            x_nan, y_nan = b.fcmp_unordered("uno", x, x), b.fcmp_unordered("uno", y, y)
            keep = b.or_(win, x_nan if nan_prop else b.and_(y_nan, b.not_(x_nan)))
            return b.select(keep, x, y)
        if k == "b":
            return b.and_(x, y) if is_min else b.or_(x, y)
        cmp = b.icmp_signed if k == "i" else b.icmp_unsigned
        return b.select(cmp("<" if is_min else ">", x, y), x, y)
    return lower


def clip(em, args, loop, attr):
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
    mx = minmax(False, True)(em, [x, lo], loop, attr)
    return minmax(True, True)(em, [mx, hi], loop, attr)


def where(em, args, loop, attr):
    c, x, y = args
    if isinstance(x, tuple):
        return (em.b.select(c, x[0], y[0]), em.b.select(c, x[1], y[1]))
    return em.b.select(c, x, y)


def isclass(which: str):
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


def real(em, args, loop, attr):
    return args[0][0] if _k(loop[0]) == "c" else args[0]


def imag(em, args, loop, attr):
    return args[0][1] if _k(loop[0]) == "c" else em.const(loop[-1], 0)


def conj(em, args, loop, attr):
    x = args[0]
    return (x[0], em.b.fneg(x[1])) if _k(loop[0]) == "c" else x


def astype(em, args, loop, attr):
    return em.cast(args[0], loop[0], loop[1])


def inverse_hyperbolic(name: str):
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


def fmod(em, args, loop, attr):
    """C fmod: the remainder takes the dividend's sign; integer x % 0 is 0 (as NumPy)."""
    b, (x, y) = em.b, args
    k = _k(loop[0])
    if k == "f":
        return frem(em, x, y)  # C fmod (NaN for y == 0 or x infinite)
    t = x.type
    z = ir.Constant(t, 0)
    ys = _int_safe(em, y, k == "i")
    if k != "i":
        return b.select(b.icmp_unsigned("==", y, z), z, b.urem(x, ys))
    bad = b.or_(b.icmp_signed("==", y, z), b.icmp_signed("==", y, ir.Constant(t, -1)))
    return b.select(bad, z, b.srem(x, ys))


# ---------------------------------------------------------------- text (strings)
# A string element in a kernel is a (pointer, length) pair. In graphs and KernelSpecs the
# text dtypes are: STRING, lazyk's `string` element `{char *begin; int64 size}` (UTF-8,
# size in bytes); NumPy `S<n>` (`fixed_string[n]`: inline UTF-8 / ASCII, NUL-padded);
# NumPy `U<n>` (inline UTF-32, NUL-padded); and STRING32, the `{begin, size}` form of a
# UTF-32 constant compared with `U<n>` data (size in 4-byte units). BYTES is lazyk's
# `bytes` element, the same `{begin, size}` pair over raw bytes (byte order, byte length).
STRING = np.dtype([("utf8_begin", np.uint64), ("utf8_size", np.int64)])
BYTES = np.dtype([("bytes_begin", np.uint64), ("bytes_size", np.int64)])
STRING32 = np.dtype([("utf32_begin", np.uint64), ("utf32_size", np.int64)])
# Zero bytes kept after the text of every string parameter (`lazyk.frontend.spec.text_param`): an
# element of up to this many bytes compares with a parameter in one fixed-size memcmp.
TEXT_PAD = 64


def text_unit(dt) -> int:
    """Bytes per code unit of a text dtype (1: UTF-8 / bytes, 4: UTF-32); 0 for other dtypes."""
    dt = np.dtype(dt)
    if dt.kind != "V":  # (numbers and NumPy text: no compare with structured dtypes)
        return 1 if dt.kind == "S" else 4 if dt.kind == "U" else 0
    return 1 if dt == STRING or dt == BYTES else 4 if dt == STRING32 else 0


def text_compare(pred: str):
    """Lexicographic order of code units (= code point order for UTF-8 and UTF-32)."""
    def lower(em, args, loop, attr):
        return em.text_compare(pred, args[0], args[1], text_unit(loop[0]))
    return lower


def str_len(em, args, loop, attr):
    """Characters: UTF-8 lead bytes (bytes that are not 0b10xxxxxx), or UTF-32 units; the
    byte count of `bytes` elements."""
    if np.dtype(loop[0]) == BYTES:
        return args[0][1]
    return em.text_length(args[0], text_unit(loop[0]))


def text_affix(end: bool):
    """startswith / endswith: the prefix (suffix) has at most x's units and they are equal."""
    def lower(em, args, loop, attr):
        return em.text_affix(args[0], args[1], text_unit(loop[0]), end)
    return lower

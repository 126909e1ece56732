"""C fmod on the CPU, exact as libm's and widened by the loop vectorizer.

LLVM's `frem` is a libm call per element (~10-20 ns), and a loop calling it keeps its other
math scalar too. Here fmod is a call to a module function that declares vector variants of
itself (LLVM's `vector-function-abi-variant`), so the loop vectorizer widens it with the
rest of the loop (`cos`, `sqrt` of a delta-phi then go to libmvec).

Each function computes q = trunc(x / y) and r = fma(-q, y, x). Where |x / y| < 2**(p - 1)
(p: the mantissa's bits) and x and y are finite, q is the true quotient's integer part or
one past it (x / y rounds up to the next integer): x - q y is then exact (fmod's result is
representable and fma rounds once), and one past it gives r of the other sign than x, which
one more fma with q moved toward zero corrects; a zero takes x's sign. Other elements (NaN, infinities, y = 0, huge
quotients) take `frem` itself: the scalar function branches there, a vector variant takes
it for the whole vector when any of its elements needs it (rare)."""
from __future__ import annotations

from llvmlite import ir

_F32, _F64 = ir.FloatType(), ir.DoubleType()
_LANES = {_F64: (2, 4, 8), _F32: (4, 8, 16)}  # (SSE, AVX2, AVX-512 widths)
_BITS = {_F64: 53, _F32: 24}


def fmod_call(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """fmod(x, y) of float or double scalars as a call the loop vectorizer can widen."""
    module, t = b.module, x.type
    if t not in _LANES:
        return b.frem(x, y)
    fn = module.globals.get(_name(t, 1))
    if fn is None:
        fn = _functions(module)[t]
    call = b.call(fn, [x, y])
    for attr in ("nounwind", "willreturn", "memory(none)", _variants(t)):
        set.add(call.attributes, attr)  # (llvmlite checks names against its own list)
    return call


def _name(t: ir.Type, lanes: int) -> str:
    kind = "f64" if t == _F64 else "f32"
    return f"lazyk.fmod.{kind}" if lanes == 1 else f"lazyk.fmod.v{lanes}{kind}"


def _variants(t: ir.Type) -> str:
    scalar = _name(t, 1)
    return '"vector-function-abi-variant"="' + ",".join(
        f"_ZGV_LLVM_N{n}vv_{scalar}({_name(t, n)})" for n in _LANES[t]) + '"'


def _functions(module: ir.Module) -> dict:
    """The scalar fmod of each float type and its vector variants, defined in `module` (the
    variants kept alive for the vectorizer by `llvm.compiler.used`; the scalars listed there
    too, so no interprocedural pass drops an argument it finds constant: a call whose
    arguments no longer match its declared variants is invalid IR)."""
    scalars, variants = {}, []
    for t in (_F64, _F32):
        scalars[t] = _define(module, t, 1)
        variants += [scalars[t]] + [_define(module, t, n) for n in _LANES[t]]
    p8 = ir.IntType(8).as_pointer()
    used = ir.GlobalVariable(module, ir.ArrayType(p8, len(variants)), "llvm.compiler.used")
    used.linkage = "appending"
    used.section = "llvm.metadata"
    used.initializer = ir.Constant(ir.ArrayType(p8, len(variants)),
                                   [f.bitcast(p8) for f in variants])
    return scalars


def _intrinsic(module: ir.Module, name: str, ty: ir.Type, nargs: int) -> ir.Function:
    sfx = f"v{ty.count}{'f64' if ty.element == _F64 else 'f32'}" \
        if isinstance(ty, ir.VectorType) else ("f64" if ty == _F64 else "f32")
    fname = f"llvm.{name}.{sfx}"
    fn = module.globals.get(fname)
    return fn if fn is not None else ir.Function(module, ir.FunctionType(ty, [ty] * nargs), fname)


def _define(module: ir.Module, t: ir.Type, lanes: int) -> ir.Function:
    vt = t if lanes == 1 else ir.VectorType(t, lanes)
    fn = ir.Function(module, ir.FunctionType(vt, [vt, vt]), _name(t, lanes))
    fn.linkage = "internal"
    for attr in ("nounwind", "willreturn", "memory(none)") + (("noinline",) if lanes == 1
                                                                 else ()):
        set.add(fn.attributes, attr)  # (the scalar one stays a call until vectorization)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    x, y = fn.args

    def c(v):
        return ir.Constant(vt, v) if lanes == 1 else ir.Constant(vt, [ir.Constant(t, v)] * lanes)

    def call(name, *args):
        return b.call(_intrinsic(module, name, vt, len(args)), list(args))
    if lanes == 1:  # |x| < 2|y| (an angle wrapped into a period): x, or |x| - |y| with x's
        ax, ay = call("fabs", x), call("fabs", y)  # sign (exact by Sterbenz's lemma)
        with b.if_then(b.fcmp_ordered("<", ax, b.fmul(ay, c(2.0))), likely=True):
            b.ret(b.select(b.fcmp_ordered("<", ax, ay), x,
                           call("copysign", b.fsub(ax, ay), x)))
    q0 = b.fdiv(x, y)
    q = call("trunc", q0)
    r = call("fma", b.fneg(q), y, x)
    # one past the quotient: r of the other sign than x (x - q y is never -0 then)
    over = b.and_(b.fcmp_ordered("!=", r, c(0.0)),
                  b.xor(b.fcmp_ordered("<", r, c(0.0)), b.fcmp_ordered("<", x, c(0.0))))
    r = b.select(over, call("fma", b.fneg(b.fsub(q, call("copysign", c(1.0), q))), y, x), r)
    r = call("copysign", r, x)  # (an exact 0 is x's zero: fma gives +0 for x - q y = 0)
    ok = b.and_(b.fcmp_ordered("<", call("fabs", q0), c(2.0 ** (_BITS[t] - 1))),
                b.fcmp_ordered("<", call("fabs", y), c(float("inf"))))
    if lanes == 1:
        with b.if_then(b.not_(ok), likely=False):
            b.ret(b.frem(x, y))
        b.ret(r)
        return fn
    bad = b.call(_reduce_or(module, lanes), [b.not_(ok)])
    with b.if_then(bad, likely=False):
        b.ret(b.select(ok, r, b.frem(x, y)))
    b.ret(r)
    return fn


def _reduce_or(module: ir.Module, lanes: int) -> ir.Function:
    name = f"llvm.vector.reduce.or.v{lanes}i1"
    fn = module.globals.get(name)
    vb = ir.VectorType(ir.IntType(1), lanes)
    return fn if fn is not None else ir.Function(module, ir.FunctionType(ir.IntType(1), [vb]),
                                                 name)

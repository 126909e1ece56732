"""The per-element code of a kernel, shared by every target: math naming (`CPUTarget`; the
CUDA target is in `lazyk.codegen.nvvm`), the scalar `Emitter` the op rows of `lazyk.frontend.ops`
lower through, `emit_body` for a KernelSpec's instructions, and loads and stores of one
element (byte-swapped, unaligned, float16, complex).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from llvmlite import ir

from lazyk.codegen.vector_fmod import fmod_call
from lazyk.frontend import ops
from lazyk.frontend.lowering import inline_helper

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
P8 = I8.as_pointer()


# ---------------------------------------------------------------- math naming per target
# Intrinsics the loop vectorizer can widen (and lazyk.backend.vecmath can map to libmvec).
_INTRINSICS = {"sqrt", "fabs", "floor", "ceil", "trunc", "rint", "sin", "cos", "tan", "asin",
               "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp", "exp2", "log", "log2",
               "log10", "pow", "copysign", "minimum", "maximum", "minnum", "maxnum"}
_ARITY2 = {"atan2", "pow", "copysign", "minimum", "maximum", "minnum", "maxnum", "hypot"}


class CPUTarget:
    """Math calls as LLVM intrinsics where they exist, else libm (`expm1`, `log1p`, `hypot`)."""

    name = "cpu"
    fmod_widens = True  # (`fmod` vectorizes: no branch around it in the caller's loop)

    def math(self, module: ir.Module, name: str, ty: ir.Type) -> ir.Function:
        """The function to call for math op `name` on scalar type `ty` (float or double)."""
        sfx = {F32: "f32", F64: "f64"}[ty]
        if name in _INTRINSICS:
            fname = f"llvm.{name}.{sfx}"
        else:
            fname = name + ("f" if ty == F32 else "")
        fn = module.globals.get(fname)
        if fn is None:
            nargs = 2 if name in _ARITY2 else 1
            fn = ir.Function(module, ir.FunctionType(ty, [ty] * nargs), fname)
        return fn

    def fmod(self, b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
        """C fmod, exact, as a call the loop vectorizer widens (`codegen.vector_fmod`)."""
        return fmod_call(b, x, y)

    def cmath(self, module: ir.Module, name: str, ty: ir.Type) -> ir.Function:
        """C99 complex function `name` (csqrt, cexp, ...) with the x86-64 SysV lowering clang
        uses: `{double, double} f(double, double)` and `<2 x float> f(<2 x float>)`."""
        fname = "c" + name + ("f" if ty == F32 else "")
        fn = module.globals.get(fname)
        if fn is None:
            nargs = 2 if name == "pow" else 1
            if ty == F32:
                v2 = ir.VectorType(F32, 2)
                fnty = ir.FunctionType(v2, [v2] * nargs)
            else:
                fnty = ir.FunctionType(ir.LiteralStructType([F64, F64]), [F64, F64] * nargs)
            fn = ir.Function(module, fnty, fname)
        return fn


# ---------------------------------------------------------------- scalar emitter
def lltype(dt: np.dtype) -> ir.Type:
    """Register (compute) type: bool -> i1, float16 -> float, complex -> its component type."""
    dt = np.dtype(dt)
    k, n = dt.kind, dt.itemsize
    if k == "b":
        return I1
    if k in "iu":
        return ir.IntType(8 * n)
    if k == "f":
        return F64 if n == 8 else F32
    if k == "c":
        return F64 if n == 16 else F32
    raise ops.NotSupportedError(f"no LLVM type for {dt}")


def _component(dt: np.dtype) -> np.dtype:
    return np.dtype("f8") if np.dtype(dt).itemsize == 16 else np.dtype("f4")


def _same(a: np.dtype, b: np.dtype) -> bool:
    return np.dtype(a).newbyteorder("=") == np.dtype(b).newbyteorder("=")


class Emitter:
    """The scalar helpers op rows lower through (see the lazyk.frontend.ops docstring)."""

    def __init__(self, builder: ir.IRBuilder, target: Any):
        self.b = builder
        self.module = builder.module
        self.target = target

    lltype = staticmethod(lltype)

    def math(self, name: str, *xs: ir.Value) -> ir.Value:
        """Call math function `name` through the target's naming."""
        return self.b.call(self.target.math(self.module, name, xs[0].type), list(xs))

    def cmath(self, name: str, *zs: tuple) -> tuple:
        """Call the target's C99 complex function `name` on `(re, im)` values (NumPy's too)."""
        cm = getattr(self.target, "cmath", None)
        if cm is None:
            raise ops.NotSupportedError(f"complex {name} on target {self.target.name}")
        b, t = self.b, zs[0][0].type
        fn = cm(self.module, name, t)
        i0, i1 = ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), 1)
        if t == F32:
            vs = []
            for z in zs:
                v = b.insert_element(ir.Constant(ir.VectorType(F32, 2), None), z[0], i0)
                vs.append(b.insert_element(v, z[1], i1))
            r = b.call(fn, vs)
            return (b.extract_element(r, i0), b.extract_element(r, i1))
        r = b.call(fn, [x for z in zs for x in z])
        return (b.extract_value(r, 0), b.extract_value(r, 1))

    def const(self, dt: np.dtype, value: Any) -> Any:
        """A constant of dtype `dt` in compute representation."""
        dt = np.dtype(dt)
        if dt.kind == "c":
            c = complex(value)
            t = lltype(dt)
            return (ir.Constant(t, c.real), ir.Constant(t, c.imag))
        t = lltype(dt)
        if dt.kind == "b":
            return ir.Constant(I1, int(bool(value)))
        if dt.kind in "iu":
            v = int(value) & ((1 << t.width) - 1)
            return ir.Constant(t, v - (1 << t.width) if v >> (t.width - 1) else v)
        if dt.itemsize == 2:
            value = float(np.float16(value))  # float16 constants are exact halves
        return ir.Constant(t, float(value))

    def truth(self, v: Any, dt: np.dtype) -> ir.Value:
        """x != 0 as i1 (NaN is true, as NumPy's bool cast)."""
        k = np.dtype(dt).kind
        b = self.b
        if k == "b":
            return v
        if k == "c":
            z = ir.Constant(v[0].type, 0.0)
            return b.or_(b.fcmp_unordered("!=", v[0], z), b.fcmp_unordered("!=", v[1], z))
        if k == "f":
            return b.fcmp_unordered("!=", v, ir.Constant(v.type, 0.0))
        return b.icmp_unsigned("!=", v, ir.Constant(v.type, 0))

    def round_half(self, v: ir.Value) -> ir.Value:
        """Round a float32 value to float16 and back: NumPy computes float16 ops in float32."""
        return self.b.fpext(self.b.fptrunc(v, F16), F32)

    def cast(self, v: Any, src: np.dtype, dst: np.dtype) -> Any:
        """Convert a compute value from dtype `src` to `dst` as NumPy's astype (C casts)."""
        src, dst = np.dtype(src), np.dtype(dst)
        if _same(src, dst):
            return v
        b, ks, kd = self.b, src.kind, dst.kind
        if kd == "b":
            return self.truth(v, src)
        if ks == "c":
            if kd == "c":
                return tuple(self.cast(x, _component(src), _component(dst)) for x in v)
            v, src, ks = v[0], _component(src), "f"
            if _same(src, dst):
                return v
        if kd == "c":
            comp = _component(dst)
            return (self.cast(v, src, comp), ir.Constant(lltype(comp), 0.0))
        t = lltype(dst)
        half = kd == "f" and dst.itemsize == 2
        if ks in "biu":
            if kd in "iu":
                if v.type.width > t.width:
                    return b.trunc(v, t)
                if v.type.width < t.width:
                    return b.sext(v, t) if ks == "i" else b.zext(v, t)
                return v
            conv = b.sitofp if ks == "i" else b.uitofp
            return b.fpext(conv(v, F16), F32) if half else conv(v, t)
        # src is a float in its compute type (float16 lives in float)
        if kd in "iu":
            return self.float_to_int(v, dst)
        if half:
            return self.round_half(v) if v.type == F32 else b.fpext(b.fptrunc(v, F16), F32)
        if v.type == t:
            return v
        return b.fpext(v, t) if t == F64 else b.fptrunc(v, t)

    def float_to_int(self, v: ir.Value, dst: np.dtype) -> ir.Value:
        """NumPy's float -> integer cast on x86-64, one answer for every value (LLVM's
        fptosi / fptoui of NaN, inf or an out-of-range value is poison, so the answer
        changed with the vector width): truncate toward zero into int32 (for int8, int16,
        uint8, uint16, int32) or int64 (uint32, int64), NaN / inf / out of that range
        giving its minimum (x86's "integer indefinite"), then keep the low bits; uint64
        takes values from 2**63 up as x - 2**63 with the top bit set. docs/types.md."""
        b, bits = self.b, dst.itemsize * 8
        if dst.kind == "u" and bits == 64:
            top = ir.Constant(v.type, 2.0 ** 63)
            big = b.fcmp_ordered(">=", v, top)
            r = self._truncate_indefinite(b.select(big, b.fsub(v, top), v), 64)
            return b.select(big, b.xor(r, ir.Constant(I64, -(1 << 63))), r)
        wide = 64 if bits == 64 or (dst.kind == "u" and bits == 32) else 32
        r = self._truncate_indefinite(v, wide)
        return b.trunc(r, lltype(dst)) if bits < wide else r

    def _truncate_indefinite(self, v: ir.Value, bits: int) -> ir.Value:
        """fptosi to `bits` where the truncated value fits, else the minimum (NaN too);
        the fptosi never sees a value out of range (no poison; selects vectorize)."""
        b, t, it = self.b, v.type, ir.IntType(bits)
        low = -(1 << (bits - 1))
        exact = float(np.float32(low - 1) if t == F32 else np.float64(low - 1)) == low - 1
        above = b.fcmp_ordered(">", v, ir.Constant(t, float(low - 1))) if exact else \
            b.fcmp_ordered(">=", v, ir.Constant(t, float(low)))
        fits = b.and_(above, b.fcmp_ordered("<", v, ir.Constant(t, float(-low))))
        r = b.fptosi(b.select(fits, v, ir.Constant(t, 0.0)), it)
        return b.select(fits, r, ir.Constant(it, low))

    # --- text: values are (i8* begin, i64 length in code units) pairs, see load_value
    def text(self, x: tuple, unit: int) -> tuple:
        """(begin, length) of a text value; a `FixedText` gets its padding stripped here."""
        if isinstance(x, FixedText):
            return (x[0], self.b.call(text_function(self.module, "fixlen", unit), list(x)))
        return x

    def text_compare(self, pred: str, x: tuple, y: tuple, unit: int) -> ir.Value:
        """`x pred y` for strings: code unit order, a proper prefix first (Python's order)."""
        b = self.b
        if pred in ("==", "!="):
            f, o = (x, y) if isinstance(x, FixedText) else (y, x)
            width = f[1].constant * unit if isinstance(f, FixedText) else 0
            if isinstance(f, FixedText) and not isinstance(o, FixedText):
                # a padded element never ends in NUL: nor may `o`, else `ab` would equal `ab\0`
                # (an empty `o` reads a zero instead: its begin may point nowhere)
                nonempty = b.icmp_signed(">", o[1], ir.Constant(I64, 0))
                at = b.gep(o[0], [b.mul(b.sub(o[1], ir.Constant(I64, 1)),
                                        ir.Constant(I64, unit))])
                at = b.select(nonempty, at, _zero_ptr(self.module))
                lu = b.load(b.bitcast(at, ir.IntType(8 * unit).as_pointer()), align=1)
                ends_ok = b.or_(b.not_(nonempty),
                                b.icmp_unsigned("!=", lu, ir.Constant(lu.type, 0)))
            if isinstance(o, PaddedText) and 0 < width <= ops.TEXT_PAD:
                # the parameter is NUL-padded past its end: one fixed-size memcmp (LLVM
                # expands it into a few loads) of the element with the padded text
                same = b.call(_memcmp(self.module), [f[0], o[0], ir.Constant(I64, width)])
                eq = b.and_(b.and_(b.icmp_signed("<=", o[1], f[1]), ends_ok),
                            b.icmp_signed("==", same, ir.Constant(ir.IntType(32), 0)))
            elif isinstance(x, FixedText) != isinstance(y, FixedText):
                # one pass over the element's whole width (a constant trip count)
                eq = b.and_(b.call(text_function(self.module, "fixeq", unit), [*f, *o]),
                            ends_ok)
            else:
                eq = b.call(text_function(self.module, "eq", unit),
                            [*self.text(x, unit), *self.text(y, unit)])
            return eq if pred == "==" else b.not_(eq)
        if isinstance(x, FixedText) != isinstance(y, FixedText):
            # padded element against a string: no length scan (see text_function "fixcmp")
            f, o = (x, y) if isinstance(x, FixedText) else (y, x)
            c = b.call(text_function(self.module, "fixcmp", unit), [*f, *o])
            if f is y:
                c = b.neg(c)
        else:
            c = b.call(text_function(self.module, "cmp", unit),
                       [*self.text(x, unit), *self.text(y, unit)])
        return b.icmp_signed(pred, c, ir.Constant(c.type, 0))

    def text_length(self, x: tuple, unit: int) -> ir.Value:
        """Characters of `x`: UTF-8 lead bytes, or UTF-32 units."""
        x = self.text(x, unit)
        if unit == 4:
            return x[1]
        return self.b.call(text_function(self.module, "utf8len", 1), list(x))

    def text_affix(self, x: tuple, y: tuple, unit: int, end: bool) -> ir.Value:
        """Whether `y` is a prefix (suffix when `end`) of `x`."""
        b = self.b
        x, y = self.text(x, unit), self.text(y, unit)
        k = b.select(b.icmp_signed("<", x[1], y[1]), x[1], y[1])  # min(len x, len y)
        p = x[0]
        if end:
            p = b.gep(p, [b.mul(b.sub(x[1], k), ir.Constant(I64, unit))])
        return b.call(text_function(self.module, "eq", unit), [p, k, *y])

    def apply(self, op: str, args: Sequence[Any], dtypes: Sequence[np.dtype], out: np.dtype,
              attr: Any = None) -> Any:
        """Lower one op row: cast args to the resolved loop, run the row, round, cast to out."""
        row = ops.get(op)
        loop = row.resolve(*dtypes, attr=attr)
        if not row.supported(loop, getattr(self.target, "name", None)):
            raise ops.NotSupportedError(f"{op} on {', '.join(map(str, loop[:-1]))}")
        xs = [self.cast(a, d, ld) for a, d, ld in zip(args, dtypes, loop)]
        v = row.llvm(self, xs, loop, attr)
        if loop[-1].kind == "f" and loop[-1].itemsize == 2 and op != "astype":
            v = self.round_half(v)
        return self.cast(v, loop[-1], out)


def emit_body(builder: ir.IRBuilder, spec: Any, loaded_values: Sequence[Any], target: Any,
              params: Sequence[Any] = ()) -> list[Any]:
    """Emit the per-element SSA body of `spec`; return output values in their stored dtypes.

    Args:
        builder: positioned where the element's code goes (straight-line, no new blocks).
        spec: a `lazyk.frontend.spec.KernelSpec`.
        loaded_values: per input index, the loaded value in compute representation
            (see `load_value`); complex values are `(re, im)` tuples.
        params: per parameter slot, its value in compute representation (`load_params`
            once at function entry, outside the loops).
        target: names math calls (`target.math(module, name, ir_type) -> ir.Function`);
            `CPUTarget` uses LLVM intrinsics/libm, the CUDA target libdevice `__nv_*`.
    """
    em = Emitter(builder, target)
    vals: list[Any] = []
    for ins in spec.body:
        if ins.op == "load":
            vals.append(loaded_values[ins.attr])
        elif ins.op == "param":
            vals.append(params[ins.attr])
        elif ins.op == "const":
            vals.append(em.const(ins.dtype, ins.attr))
        else:
            vals.append(em.apply(ins.op, [vals[a] for a in ins.args],
                                 [spec.body[a].dtype for a in ins.args], ins.dtype, ins.attr))
    return [em.cast(vals[i], spec.body[i].dtype, dt) for i, dt in spec.outputs]


def load_params(b: ir.IRBuilder, kd: ir.Value, offset: int, dtypes: Sequence[np.dtype]
                ) -> list[Any]:
    """Load each parameter slot (16 bytes apart from byte `offset` of i8* `kd`)."""
    vals = [load_value(b, b.gep(kd, [ir.Constant(I64, offset + 16 * k)]), dt)
            for k, dt in enumerate(dtypes)]
    return [PaddedText(v) if ops.text_unit(dt) else v for v, dt in zip(vals, dtypes)]


# ---------------------------------------------------------------- memory access
def _load_scalar(b: ir.IRBuilder, p8: ir.Value, t: ir.Type, nbytes: int, swap: bool,
                 align: int) -> ir.Value:
    if swap and nbytes > 1:
        it = ir.IntType(8 * nbytes)
        raw = b.load(b.bitcast(p8, it.as_pointer()), align=align)
        sw = b.call(intrinsic(b.module, f"llvm.bswap.i{8 * nbytes}", it, [it]), [raw])
        return sw if t == it else b.bitcast(sw, t)
    return b.load(b.bitcast(p8, t.as_pointer()), align=align)


def intrinsic(module: ir.Module, name: str, ret: ir.Type, args: list) -> ir.Function:
    """The function `name` of `module`, declared (ret (args)) on first use."""
    fn = module.globals.get(name)
    return fn if fn is not None else ir.Function(module, ir.FunctionType(ret, args), name)


def load_value(b: ir.IRBuilder, p8: ir.Value, dt: np.dtype, aligned: bool = True) -> Any:
    """Load one element at i8* `p8` into compute form (byte-swapped via llvm.bswap if needed)."""
    dt = np.dtype(dt)
    if ops.text_unit(dt):
        return _load_text(b, p8, dt, aligned)
    swap = not dt.isnative
    k, n = dt.kind, dt.itemsize
    if k == "c":
        h = n // 2
        t = lltype(dt)
        al = h if aligned else 1
        re = _load_scalar(b, p8, t, h, swap, al)
        im = _load_scalar(b, b.gep(p8, [ir.Constant(I64, h)]), t, h, swap, al)
        return (re, im)
    al = n if aligned else 1
    if k == "b":
        return b.icmp_unsigned("!=", b.load(p8, align=1), ir.Constant(I8, 0))
    if k == "f" and n == 2:
        return b.fpext(_load_scalar(b, p8, F16, 2, swap, al), F32)
    return _load_scalar(b, p8, lltype(dt), n, swap, al)


def _text_unit_load(b, p, i, unit):
    q = b.gep(p, [b.mul(i, ir.Constant(I64, unit))]) if unit > 1 else b.gep(p, [i])
    t = ir.IntType(8 * unit)
    return b.load(b.bitcast(q, t.as_pointer()), align=1)


def text_function(module: ir.Module, kind: str, unit: int) -> ir.Function:
    """A helper of the kernel's module (internal, always inlined) working on code units:

    - `cmp(p, n, q, m) -> i32`: -1, 0, 1 as (p, n) sorts before, equal to, after (q, m);
    - `eq(p, n, q, m) -> i1`: equal lengths and units;
    - `fixeq(p, n, q, m) -> i1`: NUL-padded element (p, n units) equals (q, m);
    - `fixcmp(p, n, q, m) -> i32`: `cmp` of a NUL-padded element (p, n units) with (q, m) in
      one pass over its width (the stripped element's `cmp` when q ends in NUL);
    - `utf8len(p, n) -> i64`: UTF-8 lead bytes among n bytes;
    - `fixlen(p, n) -> i64`: n units less the trailing NUL units (NumPy S / U elements).
    Reads only units below the given lengths; no allocation, no state (thread-safe).
    """
    npairs = 2 if kind in ("cmp", "eq", "fixeq", "fixcmp") else 1
    ret = {"cmp": ir.IntType(32), "fixcmp": ir.IntType(32), "eq": I1, "fixeq": I1}.get(kind, I64)
    fn, b = inline_helper(module, f"lazyk_text_{kind}{unit}", ret, [P8, I64] * npairs)
    if b is None:
        return fn
    zero, one = ir.Constant(I64, 0), ir.Constant(I64, 1)
    if kind == "fixlen":  # scan back from the end while the unit is NUL
        p, n = fn.args
        head, body, done = (fn.append_basic_block(x) for x in ("head", "body", "done"))
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64)
        i.add_incoming(n, fn.entry_basic_block)
        b.cbranch(b.icmp_signed(">", i, zero), body, done)
        b.position_at_end(body)
        j = b.sub(i, one)
        u = _text_unit_load(b, p, j, unit)
        i.add_incoming(j, body)
        b.cbranch(b.icmp_unsigned("==", u, ir.Constant(u.type, 0)), head, done)
        b.position_at_end(done)
        out = b.phi(I64)
        out.add_incoming(zero, head)
        out.add_incoming(i, body)
        b.ret(out)
        return fn
    if kind == "utf8len":  # a counted loop the vectorizer widens
        p, n = fn.args
        head, body, done = (fn.append_basic_block(x) for x in ("head", "body", "done"))
        b.branch(head)
        b.position_at_end(head)
        i, acc = b.phi(I64), b.phi(I64)
        i.add_incoming(zero, fn.entry_basic_block)
        acc.add_incoming(zero, fn.entry_basic_block)
        b.cbranch(b.icmp_signed("<", i, n), body, done)
        b.position_at_end(body)
        c = b.and_(b.load(b.gep(p, [i]), align=1), ir.Constant(I8, 0xC0))
        lead = b.zext(b.icmp_unsigned("!=", c, ir.Constant(I8, 0x80)), I64)
        i.add_incoming(b.add(i, one), body)
        acc.add_incoming(b.add(acc, lead), body)
        b.branch(head)
        b.position_at_end(done)
        b.ret(acc)
        return fn
    if kind == "fixeq":  # padded element (p, n units) == (q, m): no length needed
        p, n, q, m = fn.args
        zero_p = _zero_ptr(module)
        head, body, done, short = (fn.append_basic_block(x) for x in ("head", "body", "done",
                                                                       "short"))
        b.cbranch(b.icmp_signed(">", m, n), short, head)
        b.position_at_end(head)
        i, acc = b.phi(I64), b.phi(ir.IntType(8 * unit))
        i.add_incoming(zero, fn.entry_basic_block)
        acc.add_incoming(ir.Constant(acc.type, 0), fn.entry_basic_block)
        b.cbranch(b.icmp_signed("<", i, n), body, done)
        b.position_at_end(body)
        u = _text_unit_load(b, p, i, unit)
        # units past m compare with NUL (the padding), read from a zero, never past q's end
        qi = b.select(b.icmp_signed("<", i, m), b.gep(q, [b.mul(i, ir.Constant(I64, unit))]),
                      zero_p)
        v = b.load(b.bitcast(qi, u.type.as_pointer()), align=1)
        i.add_incoming(b.add(i, one), body)
        acc.add_incoming(b.or_(acc, b.xor(u, v)), body)
        b.branch(head)
        b.position_at_end(done)
        b.ret(b.icmp_unsigned("==", acc, ir.Constant(acc.type, 0)))
        b.position_at_end(short)
        b.ret(ir.Constant(I1, 0))
        return fn
    if kind == "fixcmp":  # padded element (p, n units) against (q, m)
        p, n, q, m = fn.args
        r = ir.IntType(32)
        last = b.gep(q, [b.mul(b.sub(m, one), ir.Constant(I64, unit))])
        last = b.select(b.icmp_signed(">", m, zero), last, _zero_ptr(module))
        lu = b.load(b.bitcast(last, ir.IntType(8 * unit).as_pointer()), align=1)
        head, body, step, differ, done, slow = (fn.append_basic_block(x) for x in (
            "head", "body", "step", "differ", "done", "slow"))
        # (q, m) ending in NUL: the padded order would tie `ab` with `ab\0`; stripped order
        b.cbranch(b.and_(b.icmp_signed(">", m, zero),
                         b.icmp_unsigned("==", lu, ir.Constant(lu.type, 0))), slow, head)
        b.position_at_end(head)
        i = b.phi(I64)
        i.add_incoming(zero, fn.entry_basic_block)
        b.cbranch(b.icmp_signed("<", i, n), body, done)
        b.position_at_end(body)
        u = _text_unit_load(b, p, i, unit)
        qi = b.select(b.icmp_signed("<", i, m), b.gep(q, [b.mul(i, ir.Constant(I64, unit))]),
                      _zero_ptr(module))
        v = b.load(b.bitcast(qi, u.type.as_pointer()), align=1)
        b.cbranch(b.icmp_unsigned("==", u, v), step, differ)
        b.position_at_end(step)
        i.add_incoming(b.add(i, one), step)
        b.branch(head)
        b.position_at_end(differ)
        b.ret(b.select(b.icmp_unsigned("<", u, v), ir.Constant(r, -1), ir.Constant(r, 1)))
        b.position_at_end(done)  # equal over the element's width: (q, m) longer sorts after
        b.ret(b.select(b.icmp_signed(">", m, n), ir.Constant(r, -1), ir.Constant(r, 0)))
        b.position_at_end(slow)
        stripped = b.call(text_function(module, "fixlen", unit), [p, n])
        b.ret(b.call(text_function(module, "cmp", unit), [p, stripped, q, m]))
        return fn
    p, n, q, m = fn.args
    # cmp compares the common prefix; eq only equal lengths (else false at once)
    loop, body, differ, ends = (fn.append_basic_block(x) for x in ("loop", "body", "differ",
                                                                    "ends"))
    if kind == "eq":
        b.cbranch(b.icmp_signed("==", n, m), loop, differ)
        k = n
    else:
        k = b.select(b.icmp_signed("<", n, m), n, m)
        b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(I64)
    i.add_incoming(zero, fn.entry_basic_block)
    b.cbranch(b.icmp_signed("<", i, k), body, ends)
    b.position_at_end(body)
    u, v = _text_unit_load(b, p, i, unit), _text_unit_load(b, q, i, unit)
    i.add_incoming(b.add(i, one), body)
    b.cbranch(b.icmp_unsigned("==", u, v), loop, differ)
    b.position_at_end(differ)
    if kind == "eq":
        b.ret(ir.Constant(I1, 0))
        b.position_at_end(ends)
        b.ret(ir.Constant(I1, 1))
        return fn
    r = ir.IntType(32)
    # NOTE: u, v are only defined when coming from body; differ is reached only from there
    b.ret(b.select(b.icmp_unsigned("<", u, v), ir.Constant(r, -1), ir.Constant(r, 1)))
    b.position_at_end(ends)
    less = b.select(b.icmp_signed("<", n, m), ir.Constant(r, -1), ir.Constant(r, 0))
    b.ret(b.select(b.icmp_signed(">", n, m), ir.Constant(r, 1), less))
    return fn


class PaddedText(tuple):
    """A string parameter (begin, length): `lowering.TEXT_PAD` zero bytes follow its text."""

    __slots__ = ()


def _zero_ptr(module: ir.Module) -> ir.Value:
    """i8* to a zero code unit (a constant of the module), read in place of missing units."""
    zero = module.globals.get("lazyk_text_zero")
    if zero is None:
        zero = ir.GlobalVariable(module, ir.IntType(32), "lazyk_text_zero")
        zero.linkage, zero.global_constant = "internal", True
        zero.initializer = ir.Constant(ir.IntType(32), 0)
        zero.align = 4
    return zero.bitcast(P8)


def _memcmp(module: ir.Module) -> ir.Function:
    fn = module.globals.get("memcmp")
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ir.IntType(32), [P8, P8, I64]), "memcmp")
        fn.attributes.add("nounwind")
    return fn


class FixedText(tuple):
    """An inline NUL-padded element (NumPy S / U) as (i8* begin, i64 units of the element);
    `Emitter.text` strips the padding where a length is needed (equality needs none)."""

    __slots__ = ()


def _load_text(b: ir.IRBuilder, p8: ir.Value, dt: np.dtype, aligned: bool) -> tuple:
    """A text element as (i8* begin, i64 length in units), or a `FixedText`."""
    unit = ops.text_unit(dt)
    if dt.kind in "SU":  # inline, NUL-padded
        return FixedText((p8, ir.Constant(I64, dt.itemsize // unit)))
    al = 8 if aligned else 1
    begin = b.load(b.bitcast(p8, I64.as_pointer()), align=al)
    size = b.load(b.bitcast(b.gep(p8, [ir.Constant(I64, 8)]), I64.as_pointer()), align=al)
    return (b.inttoptr(begin, P8), size)


def store_value(b: ir.IRBuilder, v: Any, p8: ir.Value, dt: np.dtype) -> None:
    """Store compute value `v` as native dtype `dt` at i8* `p8` (align 1: outputs may be any)."""
    dt = np.dtype(dt)
    k, n = dt.kind, dt.itemsize
    if k == "c":
        t = lltype(dt)
        b.store(v[0], b.bitcast(p8, t.as_pointer()), align=1)
        b.store(v[1], b.bitcast(b.gep(p8, [ir.Constant(I64, n // 2)]), t.as_pointer()), align=1)
    elif k == "b":
        b.store(b.zext(v, I8), p8, align=1)
    elif k == "f" and n == 2:
        b.store(b.fptrunc(v, F16), b.bitcast(p8, F16.as_pointer()), align=1)
    else:
        b.store(v, b.bitcast(p8, lltype(dt).as_pointer()), align=1)

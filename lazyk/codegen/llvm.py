"""KernelSpec + layout class -> LLVM IR text (llvmlite.ir, typed pointers) for one flat ckernel.

Kernel data (Contract 4), all fields int64, for a layout of `ndim` dims, `nout` outputs and
`nin` inputs:

    0   function    (the single entry)          8   destructor
    16  ndim        24  shape[ndim]
    24 + 8*ndim              out_strides[nout][ndim]   (bytes; 0 along reduced dims)
    24 + 8*ndim*(1 + nout)   in_strides[nin][ndim]     (bytes; 0 along broadcast dims)
    24 + 8*ndim*(1 + nout + nin)   params[nparams]: 16-byte slots, each holding the value of
                             a `param` instruction as its native dtype (constants' values)

Entries (exported names derive from `name`):
- `{name}_single(char *dst, char *const *src, ckernel_prefix *self)` runs the whole nest.
- `{name}_strided(dst, dst_stride, src, src_stride, count, self)` runs `count` elements along
  an explicit outermost dim (kernel-data dim 0 is ignored; dims 1.. describe one element), so
  threads can split `count`. With ndim <= 1 this is the plain 1-D strided loop.
- `{name}_destroy(self)` is a no-op: kernel data owns no resources (the code lives in the
  compiled kernel, which outlives every bound kernel).
With several outputs `dst` is a `char *const *` array of output pointers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from llvmlite import ir

from lazyk import ops

I1, I8, I16, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(16), ir.IntType(64)
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
P8 = I8.as_pointer()
PREFIX_BYTES = 24  # function, destructor, ndim


# ---------------------------------------------------------------- math naming per target
# Intrinsics the loop vectorizer can widen (and lazyk.backend.vecmath can map to libmvec).
_INTRINSICS = {"sqrt", "fabs", "floor", "ceil", "trunc", "rint", "sin", "cos", "tan", "asin",
               "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp", "exp2", "log", "log2",
               "log10", "pow", "copysign", "minimum", "maximum", "minnum", "maxnum"}
_ARITY2 = {"atan2", "pow", "copysign", "minimum", "maximum", "minnum", "maxnum", "hypot"}


class CPUTarget:
    """Math calls as LLVM intrinsics where they exist, else libm (`expm1`, `log1p`, `hypot`)."""

    name = "cpu"

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
    """The scalar helpers op rows lower through (see the lazyk.ops docstring)."""

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
            return (b.fptosi if kd == "i" else b.fptoui)(v, t)
        if half:
            return self.round_half(v) if v.type == F32 else b.fpext(b.fptrunc(v, F16), F32)
        if v.type == t:
            return v
        return b.fpext(v, t) if t == F64 else b.fptrunc(v, t)

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
        spec: a `lazyk.kernel.KernelSpec`.
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
    return [load_value(b, b.gep(kd, [ir.Constant(I64, offset + 16 * k)]), dt)
            for k, dt in enumerate(dtypes)]


# ---------------------------------------------------------------- memory access
def _load_scalar(b: ir.IRBuilder, p8: ir.Value, t: ir.Type, nbytes: int, swap: bool,
                 align: int) -> ir.Value:
    if swap and nbytes > 1:
        it = ir.IntType(8 * nbytes)
        raw = b.load(b.bitcast(p8, it.as_pointer()), align=align)
        sw = b.call(_intrinsic(b.module, f"llvm.bswap.i{8 * nbytes}", it, [it]), [raw])
        return sw if t == it else b.bitcast(sw, t)
    return b.load(b.bitcast(p8, t.as_pointer()), align=align)


def _intrinsic(module: ir.Module, name: str, ret: ir.Type, args: list) -> ir.Function:
    fn = module.globals.get(name)
    return fn if fn is not None else ir.Function(module, ir.FunctionType(ret, args), name)


def load_value(b: ir.IRBuilder, p8: ir.Value, dt: np.dtype, aligned: bool = True) -> Any:
    """Load one element at i8* `p8` into compute form (byte-swapped via llvm.bswap if needed)."""
    dt = np.dtype(dt)
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


# ---------------------------------------------------------------- loops
@dataclass(frozen=True)
class LayoutClass:
    """What a compiled kernel is specialised on: ndim after coalescing and inner-stride kinds.

    `inner` has one letter per operand (outputs first): 'c' inner stride == itemsize,
    '0' inner stride 0 (broadcast / reduced), 's' anything else.
    """

    ndim: int
    inner: str


def _for(b: ir.IRBuilder, n: ir.Value, body, name: str = "i") -> None:
    """Counted loop `for i in [0, n)`; `body(i)` emits into the loop."""
    pre = b.block
    head = b.append_basic_block(f"{name}.head")
    loop = b.append_basic_block(f"{name}.body")
    done = b.append_basic_block(f"{name}.done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64, name=name)
    i.add_incoming(ir.Constant(I64, 0), pre)
    b.cbranch(b.icmp_signed("<", i, n), loop, done)
    b.position_at_end(loop)
    body(i)
    nxt = b.add(i, ir.Constant(I64, 1), flags=("nuw", "nsw"))
    i.add_incoming(nxt, b.block)
    b.branch(head)
    b.position_at_end(done)


def _offset(b: ir.IRBuilder, p: ir.Value, i: ir.Value, stride: ir.Value) -> ir.Value:
    return b.gep(p, [b.mul(i, stride)])


class _Gen:
    """Builds one kernel module: entries, nest, contiguous and strided inner loops."""

    def __init__(self, spec: Any, lc: LayoutClass, name: str, target: Any):
        self.spec, self.lc, self.name, self.target = spec, lc, name, target
        self.nin, self.nout = len(spec.inputs), len(spec.outputs)
        self.out_dts = [np.dtype(d) for _, d in spec.outputs]
        self.sizes = [d.itemsize for d in self.out_dts] + [np.dtype(d).itemsize
                                                           for d in spec.inputs]
        self.red = ops.get(spec.reduce) if spec.reduce else None
        if self.red is not None and self.nout != 1:
            raise ops.NotSupportedError("a reduction kernel has exactly one output")
        self.module = ir.Module(name=name)
        self.module.triple = ""  # the backend sets the host triple
        self.params = spec.params
        self.poff = kernel_data_size(lc, self.nout, self.nin)
        self._pv: list = []  # parameter values loaded in the function being emitted
        self._kd = None  # ... and its kernel-data pointer

    def _load_params(self, b, kd) -> list:
        # NOTE: at function entry, never in a loop: the output stores may alias kernel data
        # as far as LLVM knows, so loads inside the loop would stay there (no vectorization).
        self._pv = load_params(b, kd, self.poff, self.params)
        return self._pv

    # kernel-data field addresses
    def _field(self, b, kd, idx: int) -> ir.Value:
        p = b.bitcast(kd, I64.as_pointer())
        return b.load(b.gep(p, [ir.Constant(I64, idx)]), align=8)

    def _shape(self, b, kd, d):
        return self._field(b, kd, 3 + d)

    def _stride(self, b, kd, op, d):
        return self._field(b, kd, 3 + self.lc.ndim * (1 + op) + d)

    def build(self) -> ir.Module:
        body = self._emit_strided_body()
        self._emit_strided(body)
        self._emit_single(body)
        self._emit_destroy()
        return self.module

    def _emit_destroy(self):
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [P8]), f"{self.name}_destroy")
        ir.IRBuilder(fn.append_basic_block("entry")).ret_void()

    def _emit_strided_body(self) -> ir.Function:
        # body(out_ptrs**, out_stride, in_ptrs**, in_strides*, count, kd): nout/nin pointers
        ft = ir.FunctionType(ir.VoidType(), [P8.as_pointer(), I64, P8.as_pointer(),
                                             I64.as_pointer(), I64, P8])
        fn = ir.Function(self.module, ft, f"{self.name}_nest")
        fn.linkage = "internal"
        fn.attributes.add("noinline")  # shared by both entries: one copy of the loop code
        outs, ostride, ins, istrides, count, kd = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        self._kd = kd
        self._load_params(b, kd)
        nops = self.nout + self.nin
        bases = [b.load(b.gep(outs, [ir.Constant(I64, j)])) for j in range(self.nout)]
        bases += [b.load(b.gep(ins, [ir.Constant(I64, j)])) for j in range(self.nin)]
        c_strides = [ostride] * self.nout + [b.load(b.gep(istrides, [ir.Constant(I64, j)]))
                                             for j in range(self.nin)]
        # dims: (count, per-op strides) then kernel-data dims 1..ndim-1
        dims = [(count, c_strides)]
        for d in range(1, self.lc.ndim):
            dims.append((self._shape(b, kd, d), [self._stride(b, kd, j, d) for j in range(nops)]))
        if self.red is not None:
            self._emit_init(b, bases[0], dims)
        self._emit_nest(b, bases, dims)
        b.ret_void()
        return fn

    def _emit_init(self, b, out, dims):
        """Write the reduction identity once per output element (extent 1 where stride is 0)."""
        dt = self.out_dts[0]
        em = Emitter(b, self.target)
        ident = em.const(dt, self.red.identity(dt))

        def level(p, k):
            if k == len(dims):
                store_value(b, ident, p, dt)
                return
            n, strides = dims[k]
            st = strides[0]
            ext = b.select(b.icmp_signed("==", st, ir.Constant(I64, 0)),
                           b.select(b.icmp_signed(">", n, ir.Constant(I64, 0)),
                                    ir.Constant(I64, 1), ir.Constant(I64, 0)), n)
            _for(b, ext, lambda i: level(_offset(b, p, i, st), k + 1), name=f"init{k}")
        level(out, 0)

    def _emit_nest(self, b, ptrs, dims):
        if len(dims) == 1:
            self._emit_inner(b, ptrs, *dims[0])
            return
        n, strides = dims[0]
        _for(b, n, lambda i: self._emit_nest(
            b, [_offset(b, p, i, s) for p, s in zip(ptrs, strides)], dims[1:]), name="o")

    # ---------------------------------------------------------------- inner loops
    def _emit_inner(self, b, ptrs, n, strides):
        fast_kinds = self.lc.inner
        if all(k == "s" for k in fast_kinds) or len(fast_kinds) != len(ptrs):
            self._call_fallback(b, ptrs, n, strides)
            return
        ok = ir.Constant(I1, 1)
        for k, st, sz in zip(fast_kinds, strides, self.sizes):
            if k == "c":
                ok = b.and_(ok, b.icmp_signed("==", st, ir.Constant(I64, sz)))
            elif k == "0":
                ok = b.and_(ok, b.icmp_signed("==", st, ir.Constant(I64, 0)))
        ok = b.and_(ok, b.icmp_signed(">", n, ir.Constant(I64, 0)))
        with b.if_else(ok) as (then, otherwise):
            with then:
                self._emit_contiguous_loop(b, ptrs, n, strides)
            with otherwise:
                self._call_fallback(b, ptrs, n, strides)

    def _loads(self, b, ptrs_in):
        return [load_value(b, p, dt, al) for p, dt, al
                in zip(ptrs_in, self.spec.inputs, self.spec.aligned)]

    def _emit_contiguous_loop(self, b, ptrs, n, strides):
        """Inner loop with compile-time strides for 'c' (itemsize) and '0' operands."""
        kinds = self.lc.inner
        no = self.nout
        # broadcast inputs (stride 0) are loop-invariant: load once, before the loop
        hoisted = {j: load_value(b, ptrs[no + j], self.spec.inputs[j], self.spec.aligned[j])
                   for j in range(self.nin) if kinds[no + j] == "0"}
        em = Emitter(b, self.target)
        acc_slot = None
        if self.red is not None and kinds[0] == "0":
            acc_slot = self._acc_alloca(b)
            self._acc_store(b, acc_slot, load_value(b, ptrs[0], self.out_dts[0]))

        def body(i):
            def at(j):
                if kinds[j] == "s":
                    return _offset(b, ptrs[j], i, strides[j])
                sz = self.sizes[j]
                return b.gep(ptrs[j], [b.mul(i, ir.Constant(I64, sz), flags=("nuw", "nsw"))])
            vals = []
            for j in range(self.nin):
                if j in hoisted:
                    vals.append(hoisted[j])
                else:
                    vals.append(load_value(b, at(no + j), self.spec.inputs[j],
                                           self.spec.aligned[j]))
            res = emit_body(b, self.spec, vals, self.target, self._pv)
            if acc_slot is not None:
                acc = self._combine(em, self._acc_load(b, acc_slot), res[0])
                self._acc_store(b, acc_slot, acc)
                return
            for j, v in enumerate(res):
                p = ptrs[j] if kinds[j] == "0" else at(j)
                if self.red is not None:
                    v = self._combine(em, load_value(b, p, self.out_dts[0]), v)
                store_value(b, v, p, self.out_dts[j])
        _for(b, n, body, name="c")
        if acc_slot is not None:
            store_value(b, self._acc_load(b, acc_slot), ptrs[0], self.out_dts[0])

    def _call_fallback(self, b, ptrs, n, strides):
        """Call the generic strided loop, emitted once as a small `minsize` function."""
        fn = self.module.globals.get(f"{self.name}_fallback")
        if fn is None:
            nops = len(ptrs)
            ft = ir.FunctionType(ir.VoidType(), [P8] * nops + [I64] * nops + [I64, P8])
            fn = ir.Function(self.module, ft, f"{self.name}_fallback")
            fn.linkage = "internal"
            # NOTE: minsize keeps the vectorizer off this loop: gathers/scatters for odd
            # strides rarely pay and doubled compile time (measured 38 -> ~15 ms codegen).
            for a in ("noinline", "minsize", "optsize"):
                fn.attributes.add(a)
            fb = ir.IRBuilder(fn.append_basic_block("entry"))
            args = list(fn.args)
            outer = self._pv
            self._load_params(fb, args[-1])
            self._emit_strided_loop(fb, args[:nops], args[-2], args[nops:2 * nops])
            self._pv = outer
            fb.ret_void()
        b.call(fn, list(ptrs) + list(strides) + [n, self._kd])

    def _emit_strided_loop(self, b, ptrs, n, strides):
        no = self.nout
        em = Emitter(b, self.target)

        def body(i):
            ps = [_offset(b, p, i, s) for p, s in zip(ptrs, strides)]
            vals = self._loads(b, ps[no:])
            res = emit_body(b, self.spec, vals, self.target, self._pv)
            for j, v in enumerate(res):
                if self.red is not None:
                    v = self._combine(em, load_value(b, ps[j], self.out_dts[0]), v)
                store_value(b, v, ps[j], self.out_dts[j])
        _for(b, n, body, name="s")

    # accumulators live in allocas (SROA/mem2reg turns them into phis): simpler than phis
    # across the loop helper, and complex accumulators are two slots.
    def _acc_alloca(self, b):
        t = lltype(self.out_dts[0])
        with b.goto_entry_block():
            if self.out_dts[0].kind == "c":
                return (b.alloca(t), b.alloca(t))
            return b.alloca(t)

    def _acc_store(self, b, slot, v):
        if isinstance(slot, tuple):
            b.store(v[0], slot[0])
            b.store(v[1], slot[1])
        else:
            b.store(v, slot)

    def _acc_load(self, b, slot):
        if isinstance(slot, tuple):
            return (b.load(slot[0]), b.load(slot[1]))
        return b.load(slot)

    def _combine(self, em, acc, v):
        """Fold one value into the accumulator; float sums/products may reassociate."""
        dt = self.out_dts[0]
        b = em.b
        if self.red.combine in ("add", "multiply") and dt.kind == "f":
            # NOTE: NumPy's own float sums are pairwise, not sequential, so no order is
            # "the" answer; reassoc lets LLVM keep several vector accumulators.
            f = b.fadd if self.red.combine == "add" else b.fmul
            return f(acc, v, flags=("reassoc", "nsz"))
        if self.red.combine == "add" and dt.kind == "c":
            return (b.fadd(acc[0], v[0], flags=("reassoc", "nsz")),
                    b.fadd(acc[1], v[1], flags=("reassoc", "nsz")))
        return em.apply(self.red.combine, [acc, v], [dt, dt], dt)

    # ---------------------------------------------------------------- entries
    def _ptr_array(self, b, base, count):
        """An i8** for outputs: dst itself when there is one output, else dst as char**."""
        arr = b.alloca(P8, ir.Constant(I64, count))
        if self.nout == 1:
            b.store(base, arr)
            return arr
        src = b.bitcast(base, P8.as_pointer())
        for j in range(count):
            b.store(b.load(b.gep(src, [ir.Constant(I64, j)])), b.gep(arr, [ir.Constant(I64, j)]))
        return arr

    def _emit_strided(self, body):
        ft = ir.FunctionType(ir.VoidType(), [P8, I64, P8.as_pointer(), I64.as_pointer(), I64, P8])
        fn = ir.Function(self.module, ft, f"{self.name}_strided")
        dst, ds, src, ss, count, kd = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        outs = self._ptr_array(b, dst, self.nout)
        b.call(body, [outs, ds, src, ss, count, kd])
        b.ret_void()

    def _emit_single(self, body):
        ft = ir.FunctionType(ir.VoidType(), [P8, P8.as_pointer(), P8])
        fn = ir.Function(self.module, ft, f"{self.name}_single")
        dst, src, kd = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        outs = self._ptr_array(b, dst, self.nout)
        if self.lc.ndim == 0:
            count, ds = ir.Constant(I64, 1), ir.Constant(I64, 0)
            ss = b.alloca(I64, ir.Constant(I64, max(self.nin, 1)))
            for j in range(self.nin):
                b.store(ir.Constant(I64, 0), b.gep(ss, [ir.Constant(I64, j)]))
        else:
            count, ds = self._shape(b, kd, 0), self._stride(b, kd, 0, 0)
            # in_strides[j][0] are consecutive only for ndim == 1: gather them
            ss = b.alloca(I64, ir.Constant(I64, max(self.nin, 1)))
            for j in range(self.nin):
                b.store(self._stride(b, kd, self.nout + j, 0), b.gep(ss, [ir.Constant(I64, j)]))
        # NOTE: several outputs share one dst stride in the strided ABI; single passes each
        # output's dim-0 stride by running the nest directly when nout > 1.
        if self.nout > 1 and self.lc.ndim > 0:
            self._single_multi(b, outs, src, kd)
        else:
            b.call(body, [outs, ds, src, ss, count, kd])
        b.ret_void()

    def _single_multi(self, b, outs, src, kd):
        """Several outputs: walk dim 0 here with per-output strides, inner dims via the body."""
        nops = self.nout + self.nin
        n0 = self._shape(b, kd, 0)
        st0 = [self._stride(b, kd, j, 0) for j in range(nops)]
        ins = [b.load(b.gep(src, [ir.Constant(I64, j)])) for j in range(self.nin)]
        bases = [b.load(b.gep(outs, [ir.Constant(I64, j)])) for j in range(self.nout)] + ins
        dims = [(n0, st0)]
        for d in range(1, self.lc.ndim):
            dims.append((self._shape(b, kd, d), [self._stride(b, kd, j, d) for j in range(nops)]))
        self._kd = kd
        self._load_params(b, kd)
        self._emit_nest(b, bases, dims)


def generate(spec: Any, layout: LayoutClass, name: str = "lazyk_k", target: Any = None
             ) -> ir.Module:
    """Build the llvmlite.ir module for `spec` specialised on `layout` (see module docstring)."""
    return _Gen(spec, layout, name, target or CPUTarget()).build()


def kernel_data_size(layout: LayoutClass, nout: int, nin: int, nparams: int = 0) -> int:
    """Bytes of kernel data for this layout (prefix, ndim, shape, strides, parameters)."""
    return PREFIX_BYTES + 8 * layout.ndim * (1 + nout + nin) + 16 * nparams


def seg_params_offset(nin: int) -> int:
    """Byte offset of the parameter slots in a segmented kernel's kernel data."""
    return 8 * (5 + nin)


# ---------------------------------------------------------------- segmented (var-row) reductions
class _SegGen(_Gen):
    """Fused elementwise body + reduction over a segmented (ragged) layout.

    Entry `{name}_single(char *dst, char *const *src, ckernel_prefix *self)`; `dst` is a
    `char *const *` of two outputs: the results (accumulator dtype, contiguous) and a
    `uint8` valid flag per result (1 = a value, 0 = missing / no value).

    Row layout (`rows=True`, read in place through the arrays' own arrmeta):
    - `src[0]`: `int64 lengths[nrows]`, the result row lengths (from the shape step);
    - `src[1 + 2j]`, `src[2 + 2j]`: input j's `int64 rowptr[nrows]` (address of the row's
      element 0: a var row's `begin + offset`, a fixed row's address) and
      `int64 rowstride[nrows]` (byte stride inside the row; 0 for a broadcast length-1
      row or a 0-d operand); element i of row r is at `rowptr[r] + i * rowstride[r]`;
    - kernel data {function, destructor, 0, nrows, ncols, mask_offset[nin]}: a `?T`
      input's mask byte is at its value's address + mask_offset (docs/layout.md).
    - `order`: "row" folds each row into one result (nrows results: the last, var, axis);
      "col" folds element i of every row into result i (ncols results: the outer axes,
      every row has ncols elements or broadcasts); "all" folds everything into one result.
    Flat layout (`rows=False`, operands already lined up element by element; "row" only):
    - `src[0]`: `int64 offsets[nrows + 1]`; `src[1 + j]` input j's contiguous values;
      then one contiguous `uint8` mask (1 = present) per input in `masked`;
    - kernel data {function, destructor, 0, nrows}.
    Both layouts: the parameter slots start at byte `seg_params_offset(nin)` = 8 * (5 + nin).
    Per result: the identity is the start value; an element whose masks are all present
    runs the body and folds; a missing one is skipped (`skipna`) or marks the result missing.
    Valid flag: 0 when a missing element was seen without `skipna`, or when no element was
    folded for min/max (no identity) and for a `skipna` mean. `mean` divides by the number
    of folded elements. Accumulators live on the stack: no allocation, thread-safe.
    """

    def __init__(self, spec: Any, masked: tuple, skipna: bool, mean: bool, name: str,
                 target: Any, rows: bool = False, order: str = "row"):
        super().__init__(spec, LayoutClass(1, ""), name, target)
        self.poff = seg_params_offset(self.nin)
        self.masked, self.skipna, self.mean = tuple(masked), skipna, mean
        self.rows, self.order = rows, order
        if order != "row" and not rows:
            raise ops.NotSupportedError(f"segmented order {order!r} needs the row layout")

    def build(self) -> ir.Module:
        ft = ir.FunctionType(ir.VoidType(), [P8, P8.as_pointer(), P8])
        fn = ir.Function(self.module, ft, f"{self.name}_single")
        dst, src, kd = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        self._load_params(b, kd)
        c64 = lambda v: ir.Constant(I64, v)  # noqa: E731
        P64 = I64.as_pointer()
        dsts = b.bitcast(dst, P8.as_pointer())
        outv = b.load(b.gep(dsts, [c64(0)]))
        outm = b.load(b.gep(dsts, [c64(1)]))
        head = b.bitcast(b.load(b.gep(src, [c64(0)])), P64)
        mj = [j for j in range(self.nin) if self.masked[j]]
        if self.rows:
            rowptr = [b.bitcast(b.load(b.gep(src, [c64(1 + 2 * j)])), P64)
                      for j in range(self.nin)]
            rowst = [b.bitcast(b.load(b.gep(src, [c64(2 + 2 * j)])), P64)
                     for j in range(self.nin)]
            moff = {j: self._field(b, kd, 5 + j) for j in mj}
            ncols = self._field(b, kd, 4)
        else:
            ins = [b.load(b.gep(src, [c64(1 + j)])) for j in range(self.nin)]
            fmask = {j: b.load(b.gep(src, [c64(1 + self.nin + k)])) for k, j in enumerate(mj)}
        nrows = self._field(b, kd, 3)
        dt = self.out_dts[0]
        em = Emitter(b, self.target)
        acc = self._acc_alloca(b)
        with b.goto_entry_block():
            cnt = b.alloca(I64)
            bad = b.alloca(I1)
        one, zero = c64(1), c64(0)
        isz = [np.dtype(d).itemsize for d in self.spec.inputs]

        def reset():
            self._acc_store(b, acc, em.const(dt, self.red.identity(dt)))
            b.store(zero, cnt)
            b.store(ir.Constant(I1, 0), bad)

        def element(addr, mptr):
            def fold():
                vals = [load_value(b, a, d, al) for a, d, al
                        in zip(addr, self.spec.inputs, self.spec.aligned)]
                res = emit_body(b, self.spec, vals, self.target, self._pv)
                self._acc_store(b, acc, self._combine(em, self._acc_load(b, acc), res[0]))
                b.store(b.add(b.load(cnt), one), cnt)
            if not mptr:
                fold()
                return
            ok = ir.Constant(I1, 1)
            for m in mptr:
                ok = b.and_(ok, b.icmp_unsigned("!=", b.load(m, align=1), ir.Constant(I8, 0)))
            with b.if_else(ok) as (then, otherwise):
                with then:
                    fold()
                with otherwise:
                    b.store(ir.Constant(I1, 1), bad)

        def finish(k):
            c = b.load(cnt)
            v = self._acc_load(b, acc)
            valid = b.not_(b.load(bad)) if (mj and not self.skipna) else ir.Constant(I1, 1)
            if self.red.combine in ("minimum", "maximum") or (self.mean and self.skipna):
                valid = b.and_(valid, b.icmp_signed(">", c, zero))
            if self.mean:
                cf = b.sitofp(c, lltype(dt))
                v = (b.fdiv(v[0], cf), b.fdiv(v[1], cf)) if dt.kind == "c" else b.fdiv(v, cf)
            store_value(b, v, b.gep(outv, [b.mul(k, c64(dt.itemsize))]), dt)
            b.store(b.zext(valid, I8), b.gep(outm, [k]), align=1)

        def row_elements(r):
            """Fold every element of row r (row layout)."""
            n = b.load(b.gep(head, [r]), align=8)
            base = [b.inttoptr(b.load(b.gep(p, [r]), align=8), P8) for p in rowptr]
            step = [b.load(b.gep(p, [r]), align=8) for p in rowst]

            def elem(i):
                addr = [b.gep(p, [b.mul(i, st)]) for p, st in zip(base, step)]
                element(addr, [b.gep(addr[j], [moff[j]]) for j in mj])
            if mj or not self.nin:
                _for(b, n, elem, name="e")
                return
            # Every operand contiguous in this row: constant strides, so LLVM vectorizes the
            # fold (reassoc float sums); other rows take the general strided loop.
            fast = ir.Constant(I1, 1)
            for st, sz in zip(step, isz):
                fast = b.and_(fast, b.icmp_signed("==", st, c64(sz)))

            def elem_c(i):
                element([b.gep(p, [b.mul(i, c64(sz), flags=("nuw", "nsw"))])
                         for p, sz in zip(base, isz)], [])
            with b.if_else(fast) as (then, otherwise):
                with then:
                    _for(b, n, elem_c, name="ec")
                with otherwise:
                    _for(b, n, elem, name="e")

        if not self.rows:
            def flat_row(r):
                lo = b.load(b.gep(head, [r]), align=8)
                n = b.sub(b.load(b.gep(head, [b.add(r, one)]), align=8), lo)
                reset()

                def elem(i):
                    e = b.add(lo, i)
                    element([b.gep(p, [b.mul(e, c64(sz))]) for p, sz in zip(ins, isz)],
                            [b.gep(fmask[j], [e]) for j in mj])
                _for(b, n, elem, name="e")
                finish(r)
            _for(b, nrows, flat_row, name="r")
        elif self.order == "row":
            def per_row(r):
                reset()
                row_elements(r)
                finish(r)
            _for(b, nrows, per_row, name="r")
        elif self.order == "all":
            reset()
            _for(b, nrows, row_elements, name="r")
            finish(zero)
        else:  # "col": result i folds element i of every row
            def col(i):
                reset()

                def down(r):
                    addr = [b.gep(b.inttoptr(b.load(b.gep(p, [r]), align=8), P8),
                                  [b.mul(i, b.load(b.gep(st, [r]), align=8))])
                            for p, st in zip(rowptr, rowst)]
                    element(addr, [b.gep(addr[j], [moff[j]]) for j in mj])
                _for(b, nrows, down, name="r")
                finish(i)
            _for(b, ncols, col, name="c")
        b.ret_void()
        self._emit_destroy()
        return self.module


def generate_segmented(spec: Any, masked: tuple, skipna: bool, mean: bool,
                       name: str = "lazyk_seg", target: Any = None, rows: bool = False,
                       order: str = "row") -> ir.Module:
    """The module of a segmented (var-row) reduction kernel; see `_SegGen`."""
    if spec.reduce is None:
        raise ops.NotSupportedError("a segmented kernel needs a reduction")
    if mean and np.dtype(spec.outputs[0][1]).kind not in "fc":
        raise ops.NotSupportedError("a segmented mean needs a float accumulator")
    return _SegGen(spec, masked, skipna, mean, name, target or CPUTarget(), rows,
                   order).build()

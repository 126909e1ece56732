"""KernelSpec -> NVVM IR text: the CPU generator's per-element body inside a grid-stride kernel.

Codegen owns loops, indexing and kernel data; the per-element math comes from
`lazyk.codegen.emit.emit_body` with `CUDA` as the target, so every op is lowered once.
Kernel data is one by-value struct parameter (see `KernelData`), so a kernel is compiled
once per (spec, layout class) and bound per call without touching LLVM.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from llvmlite import ir

from lazyk.codegen import emit as cg
from lazyk.errors import BindError, NotSupportedError
from lazyk.frontend import ops
from lazyk.frontend.lowering import inline_helper

TRIPLE = "nvptx64-nvidia-cuda"
DATA_LAYOUT = ("e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-"
               "f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64")
ENTRY = "lazyk_kernel"
FINISH = "lazyk_finish"
ROWS = "lazyk_rows"
# Reduction kernels run blocks of exactly this many threads: the shared-memory tree is
# unrolled for it (a power of two; 256 keeps 8 blocks per SM resident on sm_90).
REDUCE_BLOCK = 256

I8P = ir.PointerType(ir.IntType(8))
I32 = ir.IntType(32)
I64 = ir.IntType(64)


# ops.py math names whose libdevice function has another name (the rest are __nv_<name>).
_LIBDEVICE = {"minnum": "fmin", "maxnum": "fmax"}
# NaN-propagating min/max (NumPy minimum/maximum): LLVM 7 has no llvm.minimum and libdevice
# fmin ignores NaN, so these become small internal functions: fmin plus a select for NaN.
_NAN_PROPAGATING = {"minimum": "fmin", "maximum": "fmax"}
_ARITY2 = {"atan2", "pow", "copysign", "minimum", "maximum", "minnum", "maxnum", "hypot",
           "fmod"}


class CudaTarget:
    """emit_body's target for NVVM: math calls resolve to libdevice `__nv_*` functions."""

    name = "cuda"

    def symbol(self, name: str, ty: ir.Type) -> str:
        """libdevice name: sin on double -> __nv_sin, on float -> __nv_sinf."""
        base = _LIBDEVICE.get(name, _NAN_PROPAGATING.get(name, name))
        if ty == ir.DoubleType():
            return f"__nv_{base}"
        if ty == ir.FloatType():
            return f"__nv_{base}f"
        raise NotSupportedError(f"{name} on {ty} not supported on the GPU yet")

    def fmod(self, b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
        """C fmod through libdevice: NVPTX lowers frem to x - trunc(x / y) * y, which is off
        by up to an ulp of x where NumPy's remainder and fmod are exact."""
        return b.call(self.math(b.module, "fmod", x.type), [x, y])

    def cmath(self, module: ir.Module, name: str, ty: ir.Type) -> ir.Function:
        """C99 complex math (csqrt, cexp, ...): libdevice has none."""
        # TODO(#6): lower complex functions from real libdevice calls.
        raise NotSupportedError(f"complex {name} not supported on the GPU yet")

    def math(self, module: ir.Module, name: str, ty: ir.Type) -> ir.Function:
        """The function emit_body calls for math op `name` on scalar type `ty`."""
        sym = self.symbol(name, ty)
        nargs = 2 if name in _ARITY2 else 1
        fn = module.globals.get(sym)
        if fn is None:
            fn = ir.Function(module, ir.FunctionType(ty, [ty] * nargs), sym)
        if name not in _NAN_PROPAGATING:
            return fn
        wrap, b = inline_helper(module, f"lazyk_nv_{name}_{ty}", ty, [ty, ty])
        if b is not None:
            x, y = wrap.args
            nan = b.fcmp_unordered("uno", x, y)
            b.ret(b.select(nan, b.fadd(x, y), b.call(fn, [x, y])))
        return wrap


CUDA = CudaTarget()


@dataclass(frozen=True)
class LayoutClass:
    """What a compiled kernel depends on besides the spec: never sizes or strides."""

    ndim: int
    reduced: tuple[bool, ...]
    inner_contiguous: tuple[bool, ...]  # output first, then inputs

    @classmethod
    def of(cls, layout, spec) -> LayoutClass:
        """The class of a bound `passes.dims.Layout` for `spec` (operand 0 is the output)."""
        sizes = (np.dtype(spec.outputs[0][1]).itemsize,) + tuple(
            np.dtype(d).itemsize for d in spec.inputs)
        return cls(layout.ndim, tuple(layout.reduced), layout.inner_contiguous(sizes))

    @property
    def full_reduction(self) -> bool:
        """Every loop is reduced into one output: block trees plus a finishing pass."""
        return all(self.reduced)

    @property
    def partial_reduction(self) -> bool:
        """Some dims reduced, some kept: one thread per output walks its reduced dims."""
        return any(self.reduced) and not all(self.reduced)

    @property
    def block_per_output(self) -> bool:
        """Partial reduction over the innermost dim: a block per output keeps loads coalesced.

        With a kept innermost dim, neighbouring threads own neighbouring outputs instead.
        """
        return self.partial_reduction and self.reduced[-1]


@dataclass(frozen=True)
class KernelData:
    """Field order of the by-value kernel parameter; `pack` on the host mirrors `struct_type`.

    {i8* out, i8* src[nin], i8* scratch, i64 total, i64 shape[nd],
     i64 out_stride[nd], i64 src_stride[nin][nd]}, then with parameters
     i64 params[2 * nparams] (16-byte slots as `lazyk.frontend.spec.pack_params` writes them);
    all 8-byte fields, so no padding.
    """

    nin: int
    ndim: int
    nparams: int = 0

    def struct_type(self) -> ir.LiteralStructType:
        nd = max(self.ndim, 1)
        fields = [
            I8P, ir.ArrayType(I8P, max(self.nin, 1)), I8P, I64, ir.ArrayType(I64, nd),
            ir.ArrayType(I64, nd), ir.ArrayType(ir.ArrayType(I64, nd), max(self.nin, 1))]
        if self.nparams:
            fields.append(ir.ArrayType(I64, 2 * self.nparams))
        return ir.LiteralStructType(fields)

    def pack(self, out: int, srcs: tuple[int, ...], scratch: int, layout,
             params: bytes = b"") -> bytes:
        """Kernel data bytes for device pointers `out`/`srcs` (offsets already added) and
        the parameter slots `params`."""
        if len(params) != 16 * self.nparams:
            raise BindError(f"kernel takes {self.nparams} parameters, got {len(params)} bytes")
        nd = max(self.ndim, 1)
        shape = list(layout.shape) or [1]
        ost, *ists = [list(s) or [0] for s in layout.strides]
        words = [out, *(list(srcs) or [0]), scratch, layout.size, *shape, *ost]
        for k in range(max(self.nin, 1)):
            words += ists[k] if k < len(ists) else [0] * nd
        return np.array(words, dtype=np.int64).tobytes() + bytes(params)


def _body_emitter():
    return cg.emit_body


def check_supported(spec) -> None:
    """Raise NotSupportedError naming what the GPU path does not do yet."""
    check_dtypes(spec)
    if len(spec.outputs) != 1:
        raise NotSupportedError("kernels with several outputs not supported on the GPU yet")
    if spec.reduce is not None:
        _reduction_row(spec.reduce)


def check_dtypes(spec) -> None:
    """Raise NotSupportedError for element types the GPU path does not compute yet."""
    for dt in (*spec.inputs, *spec.params, *(d for _, d in spec.outputs)):
        if ops.text_unit(dt):
            raise NotSupportedError("strings (string, fixed_string[n], NumPy S / U) are not "
                                    "supported on the GPU yet; compute on the CPU")
        if np.dtype(dt).kind not in "biufc":
            raise NotSupportedError(f"dtype {np.dtype(dt)} not supported on the GPU yet")


class _Emitter:
    """Builds one NVVM module for one (spec, layout class)."""

    def __init__(self, spec, lc: LayoutClass, emit_body):
        check_supported(spec)
        self.spec, self.lc, self.emit_body = spec, lc, emit_body
        self.kd = KernelData(len(spec.inputs), lc.ndim, len(spec.params))
        self.module = ir.Module(name="lazyk")
        self.module.triple = TRIPLE
        self.module.data_layout = DATA_LAYOUT
        self.kernels: list[ir.Function] = []

    # ---- helpers ---------------------------------------------------------------------------
    def sreg(self, b: ir.IRBuilder, name: str) -> ir.Value:
        fn = self.module.globals.get(f"llvm.nvvm.read.ptx.sreg.{name}")
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(I32, []), f"llvm.nvvm.read.ptx.sreg.{name}")
        return b.zext(b.call(fn, []), I64)

    def barrier(self, b: ir.IRBuilder) -> None:
        fn = self.module.globals.get("llvm.nvvm.barrier0")
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), []), "llvm.nvvm.barrier0")
        b.call(fn, [])

    def field(self, b, kd, *path) -> ir.Value:
        return b.extract_value(kd, list(path))

    def offsets(self, b, kd, index: ir.Value, dims: list[int]) -> list[ir.Value]:
        """Byte offsets of operand k (0 = output) for a linear index over `dims`, inner last."""
        nops = 1 + len(self.spec.inputs)
        offs = [ir.Constant(I64, 0)] * nops
        rem = index
        for pos, d in enumerate(reversed(dims)):
            outermost = pos == len(dims) - 1
            if outermost:
                idx = rem
            else:
                size = self.field(b, kd, 4, d)
                idx = b.urem(rem, size)
                rem = b.udiv(rem, size)
            for k in range(nops):
                st = self.stride(b, kd, k, d)
                offs[k] = b.add(offs[k], b.mul(idx, st))
        return offs

    def stride(self, b, kd, k: int, d: int) -> ir.Value:
        # A contiguous innermost dim is a compile-time itemsize: cheaper address arithmetic.
        if d == self.lc.ndim - 1 and self.lc.inner_contiguous[k]:
            dt = self.spec.outputs[0][1] if k == 0 else self.spec.inputs[k - 1]
            return ir.Constant(I64, np.dtype(dt).itemsize)
        return self.field(b, kd, 5, d) if k == 0 else self.field(b, kd, 6, k - 1, d)

    def load_inputs(self, b, kd, offs: list[ir.Value]) -> list:
        """Each input's element in compute form (byte swaps and float16 as on the CPU)."""
        return [cg.load_value(b, b.gep(self.field(b, kd, 1, k), [offs[k + 1]]), dt, al)
                for k, (dt, al) in enumerate(zip(self.spec.inputs, self.spec.aligned))]

    def params(self, b, kd) -> list:
        """Each parameter slot's value in compute form, from the by-value kernel data."""
        out = []
        for k, dt in enumerate(self.spec.params):
            w = self.field(b, kd, 7, 2 * k)
            n = dt.itemsize
            if dt.kind == "c" and n == 16:
                out.append((b.bitcast(w, cg.F64),
                            b.bitcast(self.field(b, kd, 7, 2 * k + 1), cg.F64)))
            elif dt.kind == "c":  # complex64: re in the low 32 bits, im in the high ones
                out.append((b.bitcast(b.trunc(w, I32), cg.F32),
                            b.bitcast(b.trunc(b.lshr(w, ir.Constant(I64, 32)), I32), cg.F32)))
            elif dt.kind == "b":
                out.append(b.icmp_unsigned("!=", b.trunc(w, ir.IntType(8)),
                                           ir.Constant(ir.IntType(8), 0)))
            elif dt.kind == "f":
                raw = w if n == 8 else b.trunc(w, ir.IntType(8 * n))
                v = b.bitcast(raw, {8: cg.F64, 4: cg.F32, 2: cg.F16}[n])
                out.append(b.fpext(v, cg.F32) if n == 2 else v)
            else:
                out.append(w if n == 8 else b.trunc(w, ir.IntType(8 * n)))
        return out

    def value(self, b, loaded: list, kd=None):
        """The output's value, already in its stored dtype, from the shared body emitter."""
        if not self.spec.params:
            return self.emit_body(b, self.spec, loaded, CUDA)[0]
        return self.emit_body(b, self.spec, loaded, CUDA, self.params(b, kd))[0]

    def store(self, b, kd, off: ir.Value, val) -> None:
        """Store a compute value as the output dtype, naturally aligned."""
        dt = np.dtype(self.spec.outputs[0][1])
        before = len(b.block.instructions)
        cg.store_value(b, val, b.gep(self.field(b, kd, 0), [off]), dt)
        # NOTE: store_value writes with align 1 (CPU outputs may be unaligned); NVPTX splits
        # such stores into bytes. GPU outputs are lazyk allocations, aligned by the driver.
        align = dt.itemsize // 2 if dt.kind == "c" else dt.itemsize
        for ins in b.block.instructions[before:]:
            if isinstance(ins, ir.StoreInstr):
                ins.align = align

    def new_kernel(self, name: str, args: list[ir.Type]) -> ir.Function:
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), args), name)
        self.kernels.append(fn)
        return fn

    def grid_stride(self, b, fn, total: ir.Value, body, per_block: bool = False,
                    per_thread: bool = False) -> None:
        """for (i = blockIdx*blockDim + tid; i < total; i += gridDim*blockDim) body(b, i).

        `per_block`: i = blockIdx, step gridDim (uniform in a block, so barriers are legal).
        `per_thread`: i = tid, step blockDim (the threads of one block share the range).
        """
        if per_block:
            start, step = self.sreg(b, "ctaid.x"), self.sreg(b, "nctaid.x")
        elif per_thread:
            start, step = self.sreg(b, "tid.x"), self.sreg(b, "ntid.x")
        else:
            start = b.add(b.mul(self.sreg(b, "ctaid.x"), self.sreg(b, "ntid.x")),
                          self.sreg(b, "tid.x"))
            step = b.mul(self.sreg(b, "nctaid.x"), self.sreg(b, "ntid.x"))
        head, loop, done = (fn.append_basic_block(n) for n in ("head", "loop", "done"))
        entry = b.block
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64, name="i")
        i.add_incoming(start, entry)
        b.cbranch(b.icmp_unsigned("<", i, total), loop, done)
        b.position_at_end(loop)
        body(b, i)
        i.add_incoming(b.add(i, step), b.block)
        b.branch(head)
        b.position_at_end(done)

    # ---- kernels ---------------------------------------------------------------------------
    def elementwise(self) -> None:
        fn = self.new_kernel(ENTRY, [self.kd.struct_type()])
        kd = fn.args[0]
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        dims = list(range(self.lc.ndim))

        def body(b, i):
            offs = self.offsets(b, kd, i, dims)
            self.store(b, kd, offs[0], self.value(b, self.load_inputs(b, kd, offs), kd))

        self.grid_stride(b, fn, self.field(b, kd, 3), body)
        b.ret_void()
        if self.lc.ndim >= 2:
            self.rows()

    def rows(self) -> None:
        """ROWS: a block per row of the innermost dim, its threads along the row.

        Unravelling a flat index costs 64-bit divisions per element (far more than the
        memory traffic of a simple expression); here they happen once per row. The
        launcher picks this kernel when rows are long enough to fill a block.
        """
        fn = self.new_kernel(ROWS, [self.kd.struct_type()])
        kd = fn.args[0]
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        outer, inner = list(range(self.lc.ndim - 1)), self.lc.ndim - 1
        nrows = ir.Constant(I64, 1)
        for d in outer:
            nrows = b.mul(nrows, self.field(b, kd, 4, d))
        nops = 1 + len(self.spec.inputs)
        steps = [self.stride(b, kd, k, inner) for k in range(nops)]

        def row(b, r):
            base = self.offsets(b, kd, r, outer)

            def element(b, j):
                offs = [b.add(o, b.mul(j, st)) for o, st in zip(base, steps)]
                self.store(b, kd, offs[0], self.value(b, self.load_inputs(b, kd, offs), kd))
            self.grid_stride(b, fn, self.field(b, kd, 4, inner), element, per_thread=True)

        self.grid_stride(b, fn, nrows, row, per_block=True)
        b.ret_void()

    # ---- reductions ------------------------------------------------------------------------
    @property
    def acc_dtype(self) -> np.dtype:
        """The stored dtype is the accumulator (Contract 3): sum of int32 folds in int64."""
        return np.dtype(self.spec.outputs[0][1])

    def combine(self, b, acc: ir.Value, val: ir.Value) -> ir.Value:
        """acc (op) val through the op row's combine, so NaN and integer rules match the CPU."""
        dt = self.acc_dtype
        return cg.Emitter(b, CUDA).apply(_reduction_row(self.spec.reduce).combine,
                                         [acc, val], [dt, dt], dt, ops.FOLD)

    def accumulate(self, b, kd, acc: ir.Value, i: ir.Value, dims, base_offs=None) -> ir.Value:
        offs = self.offsets(b, kd, i, dims)
        if base_offs is not None:
            offs = [b.add(x, y) for x, y in zip(offs, base_offs)]
        return self.combine(b, acc, self.value(b, self.load_inputs(b, kd, offs), kd))

    # Accumulators are scalars, or (re, im) pairs for complex: handled as lists of parts.
    @property
    def nparts(self) -> int:
        return 2 if self.acc_dtype.kind == "c" else 1

    def parts(self, v) -> list:
        return list(v) if isinstance(v, tuple) else [v]

    def join(self, parts: list):
        return tuple(parts) if self.nparts == 2 else parts[0]

    def smem(self, part: int) -> ir.GlobalVariable:
        name = f"lazyk_smem{part}"
        gv = self.module.globals.get(name)
        if gv is None:
            ty = ir.ArrayType(cg.lltype(self.acc_dtype), REDUCE_BLOCK)
            gv = ir.GlobalVariable(self.module, ty, name, addrspace=3)
            gv.linkage = "internal"
            gv.initializer = ir.Constant(ty, ir.Undefined)
            gv.align = 16
        return gv

    def block_tree(self, b, fn, acc) -> tuple[ir.Value, object]:
        """Reduce `acc` across the block in shared memory; returns (thread index, total in thread 0).

        NOTE: the unrolled tree assumes blockDim.x == REDUCE_BLOCK (the launcher guarantees it).
        """
        tid = self.sreg(b, "tid.x")
        zero = ir.Constant(I64, 0)
        smem = [self.smem(k) for k in range(self.nparts)]

        def at(index):
            return [b.gep(m, [zero, index], inbounds=True) for m in smem]
        slot = at(tid)
        for p, v in zip(slot, self.parts(acc)):
            b.store(v, p)
        self.barrier(b)
        s = REDUCE_BLOCK // 2
        while s >= 1:
            active, nxt = fn.append_basic_block(f"tree{s}"), fn.append_basic_block(f"tree{s}_done")
            b.cbranch(b.icmp_unsigned("<", tid, ir.Constant(I64, s)), active, nxt)
            b.position_at_end(active)
            other = self.join([b.load(p) for p in at(b.add(tid, ir.Constant(I64, s)))])
            mine = self.join([b.load(p) for p in slot])
            for p, v in zip(slot, self.parts(self.combine(b, mine, other))):
                b.store(v, p)
            b.branch(nxt)
            b.position_at_end(nxt)
            self.barrier(b)
            s //= 2
        return tid, self.join([b.load(p) for p in at(zero)])

    def local_loop(self, b, fn, start, stop, step, init, body):
        """acc = init; for (j = start; j < stop; j += step) acc = body(b, acc, j); returns acc."""
        head, loop, done = (fn.append_basic_block(n) for n in ("rhead", "rloop", "rdone"))
        entry = b.block
        b.branch(head)
        b.position_at_end(head)
        j = b.phi(I64, name="j")
        accs = [b.phi(v.type, name="acc") for v in self.parts(init)]
        j.add_incoming(start, entry)
        for phi, v in zip(accs, self.parts(init)):
            phi.add_incoming(v, entry)
        b.cbranch(b.icmp_unsigned("<", j, stop), loop, done)
        b.position_at_end(loop)
        new = self.parts(body(b, self.join(accs), j))
        j.add_incoming(b.add(j, step), b.block)
        for phi, v in zip(accs, new):
            phi.add_incoming(v, b.block)
        b.branch(head)
        b.position_at_end(done)
        return self.join(accs)

    def scratch(self, b, kd, index: ir.Value) -> list[ir.Value]:
        """Pointers to partial number `index` in the scratch buffer (one per part)."""
        base = b.bitcast(self.field(b, kd, 2), ir.PointerType(cg.lltype(self.acc_dtype)))
        first = b.mul(index, ir.Constant(I64, self.nparts))
        return [b.gep(base, [b.add(first, ir.Constant(I64, k))]) for k in range(self.nparts)]

    def if_thread0(self, b, fn, tid, then) -> None:
        yes, end = fn.append_basic_block("first"), fn.append_basic_block("end")
        b.cbranch(b.icmp_unsigned("==", tid, ir.Constant(I64, 0)), yes, end)
        b.position_at_end(yes)
        then(b)
        b.branch(end)
        b.position_at_end(end)

    def full_reduction(self) -> None:
        """Pass 1: each block reduces its grid-stride share into scratch[blockIdx].
        Pass 2 (FINISH, one block): reduces the partials and stores the result."""
        dims = list(range(self.lc.ndim))

        fn = self.new_kernel(ENTRY, [self.kd.struct_type()])
        kd = fn.args[0]
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ident = identity(b, self.spec.reduce, self.acc_dtype)
        start = b.add(b.mul(self.sreg(b, "ctaid.x"), self.sreg(b, "ntid.x")), self.sreg(b, "tid.x"))
        step = b.mul(self.sreg(b, "nctaid.x"), self.sreg(b, "ntid.x"))
        acc = self.local_loop(b, fn, start, self.field(b, kd, 3), step, ident,
                              lambda b, acc, i: self.accumulate(b, kd, acc, i, dims))
        tid, total = self.block_tree(b, fn, acc)
        block = self.sreg(b, "ctaid.x")

        def keep(b):
            for p, v in zip(self.scratch(b, kd, block), self.parts(total)):
                b.store(v, p)
        self.if_thread0(b, fn, tid, keep)
        b.ret_void()

        fn = self.new_kernel(FINISH, [self.kd.struct_type(), I64])
        kd, nparts = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        acc = self.local_loop(
            b, fn, self.sreg(b, "tid.x"), nparts, self.sreg(b, "ntid.x"), ident,
            lambda b, acc, j: self.combine(
                b, acc, self.join([b.load(p) for p in self.scratch(b, kd, j)])))
        tid, total = self.block_tree(b, fn, acc)
        self.if_thread0(b, fn, tid, lambda b: self.store(b, kd, ir.Constant(I64, 0), total))
        b.ret_void()

    def partial_reduction(self) -> None:
        """One thread per kept output element walks all reduced dims serially."""
        kept = [d for d, r in enumerate(self.lc.reduced) if not r]
        red = [d for d, r in enumerate(self.lc.reduced) if r]
        fn = self.new_kernel(ENTRY, [self.kd.struct_type()])
        kd = fn.args[0]
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        nkept, nred = ir.Constant(I64, 1), ir.Constant(I64, 1)
        for d in kept:
            nkept = b.mul(nkept, self.field(b, kd, 4, d))
        for d in red:
            nred = b.mul(nred, self.field(b, kd, 4, d))
        ident = identity(b, self.spec.reduce, self.acc_dtype)

        def per_output(b, i):
            base = self.offsets(b, kd, i, kept)
            acc = self.local_loop(b, fn, ir.Constant(I64, 0), nred, ir.Constant(I64, 1), ident,
                                  lambda b, acc, j: self.accumulate(b, kd, acc, j, red, base))
            self.store(b, kd, base[0], acc)

        if not self.lc.block_per_output:
            self.grid_stride(b, fn, nkept, per_output)
            b.ret_void()
            return

        def per_block(b, o):
            base = self.offsets(b, kd, o, kept)
            acc = self.local_loop(b, fn, self.sreg(b, "tid.x"), nred, self.sreg(b, "ntid.x"),
                                  ident,
                                  lambda b, acc, j: self.accumulate(b, kd, acc, j, red, base))
            tid, total = self.block_tree(b, fn, acc)
            self.if_thread0(b, fn, tid, lambda b: self.store(b, kd, base[0], total))
            self.barrier(b)  # slot 0 is read before the next output reuses shared memory

        self.grid_stride(b, fn, nkept, per_block, per_block=True)
        b.ret_void()

    def build(self) -> ir.Module:
        if self.spec.reduce is None:
            self.elementwise()
        elif self.lc.full_reduction:
            self.full_reduction()
        else:
            self.partial_reduction()
        md = self.module.add_named_metadata("nvvm.annotations")
        for fn in self.kernels:
            md.add(self.module.add_metadata([fn, "kernel", ir.Constant(I32, 1)]))
        self.module.add_named_metadata("nvvmir.version").add(
            self.module.add_metadata([ir.Constant(I32, 2), ir.Constant(I32, 0)]))
        return self.module


def _reduction_row(reduce: str):
    row = ops.OPS.get(reduce)
    if row is None or row.kind != "reduction" or row.combine is None:
        raise NotSupportedError(f"reduction {reduce!r} not supported on the GPU yet")
    return row


def identity(b: ir.IRBuilder, reduce: str, dtype) -> ir.Constant:
    """The reduction's start value from its op row, as a compute-type constant."""
    dt = np.dtype(dtype)
    return cg.Emitter(b, CUDA).const(dt, _reduction_row(reduce).identity(dt))


_FNEG = re.compile(r"= fneg((?: [a-z]+)*) (float|double) ")


def legalize(text: str) -> str:
    """Rewrite what LLVM 7's parser (libNVVM) lacks: `fneg x` -> `fsub -0.0, x` (same bits)."""
    return _FNEG.sub(r"= fsub\1 \2 -0.0, ", text)


@lru_cache(maxsize=256)
def lower(spec, lc: LayoutClass) -> str:
    """NVVM IR text (typed pointers, LLVM-7 style) for `spec` over layouts of class `lc`."""
    try:
        return legalize(str(_Emitter(spec, lc, _body_emitter()).build()))
    except NotSupportedError as err:
        if "on the GPU" in str(err):
            raise
        raise NotSupportedError(f"{err}: not supported on the GPU yet") from None

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

Math over a strided operand (layout kind 's') runs by blocks (`KernelGen._emit_blocks`): its
elements are copied to a stack buffer, the body's loop over the block is contiguous and
vectorizes with libmvec. A loop over the strided operand itself would be versioned by LLVM on
its stride being one element, the version for every other stride a scalar loop of libm calls.

The per-element code (loads, stores, op lowering) is `lazyk.codegen.emit`; loop nests over
ragged (var / option) layouts are `lazyk.codegen.nest`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from llvmlite import ir

from lazyk.codegen.emit import (
    F32,
    F64,
    I1,
    I64,
    P8,
    CPUTarget,
    Emitter,
    emit_body,
    lltype,
    load_params,
    load_value,
    store_value,
)
from lazyk.frontend import ops

PREFIX_BYTES = 24  # function, destructor, ndim
# Elements of a block of math over strided operands (`KernelGen._emit_blocks`), at most
# BLOCK_BYTES of stack buffers in all. Measured (1e6 float32 / float64 sin, exp, log of a
# column of a (1e6, 4) array): 128, 256 and 1024 within noise of each other.
BLOCK = 256
BLOCK_BYTES = 32768
# Loop hints (`llvm.loop` metadata). Strided rows or copies: a vectorized loop with gathers
# or remainders rarely pays.
NO_VECTOR = (("llvm.loop.vectorize.enable", False), ("llvm.loop.interleave.count", 1))


# ---------------------------------------------------------------- loops
@dataclass(frozen=True)
class LayoutClass:
    """What a compiled kernel is specialised on: ndim after coalescing and inner-stride kinds.

    `inner` has one letter per operand (outputs first): 'c' inner stride == itemsize,
    '0' inner stride 0 (broadcast / reduced), 's' anything else.
    """

    ndim: int
    inner: str


def for_loop(b: ir.IRBuilder, n: ir.Value, body, name: str = "i") -> ir.Instruction:
    """Counted loop `for i in [0, n)`; `body(i)` emits into the loop. Returns the loop's
    back-edge branch (where `llvm.loop` hints go)."""
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
    back = b.branch(head)
    b.position_at_end(done)
    return back


def hinted_loop(b, n, body, name, hints) -> None:
    """`for_loop` with `llvm.loop` hints on its back edge."""
    back = for_loop(b, n, body, name)
    m = b.module
    ops_ = [m.add_metadata([ir.MetaDataString(m, key),
                            ir.Constant(I1 if isinstance(v, bool) else ir.IntType(32), v)])
            for key, v in hints]
    loop_id = ir.values.MDValue(m, [], name=str(len(m.metadata)))  # distinct: refers to itself
    loop_id.operands = (loop_id, *ops_)
    back.set_metadata("llvm.loop", loop_id)


def _offset(b: ir.IRBuilder, p: ir.Value, i: ir.Value, stride: ir.Value) -> ir.Value:
    return b.gep(p, [b.mul(i, stride)])


class KernelGen:
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
        if self.red is not None and self.red.finish is not None:
            raise ops.NotSupportedError(f"{self.spec.reduce} folds positions: the loop nest "
                                        "runs it (`codegen.nest`), not a flat kernel")
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
            for_loop(b, ext, lambda i: level(_offset(b, p, i, st), k + 1), name=f"init{k}")
        level(out, 0)

    def _emit_nest(self, b, ptrs, dims):
        if len(dims) == 1:
            self._emit_inner(b, ptrs, *dims[0])
            return
        n, strides = dims[0]
        for_loop(b, n, lambda i: self._emit_nest(
            b, [_offset(b, p, i, s) for p, s in zip(ptrs, strides)], dims[1:]), name="o")

    # ---------------------------------------------------------------- inner loops
    def _emit_inner(self, b, ptrs, n, strides):
        fast_kinds = self.lc.inner
        blocked = self._blocked()
        if blocked and all(k == "s" for k in fast_kinds):
            self._emit_contiguous_loop(b, ptrs, n, strides, blocked)
            return
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
                self._emit_contiguous_loop(b, ptrs, n, strides, blocked)
            with otherwise:
                self._call_fallback(b, ptrs, n, strides)

    def _loads(self, b, ptrs_in):
        return [load_value(b, p, dt, al) for p, dt, al
                in zip(ptrs_in, self.spec.inputs, self.spec.aligned)]

    def _body_loop(self, b, n, body) -> None:
        """The contiguous loop over n elements. Where float32 math feeds a float64
        accumulator (`sum(sin(x))`) LLVM would take 4 lanes (the accumulator's vector
        width), whose libmvec variant is not used beside AVX code (`vecmath.vector_name`):
        one libm call per value, 10x NumPy's time. 8 lanes call the 8-lane variant."""
        if self.red is None or self.acc_dtype == self.out_dts[0] or not any(
                ins.op in ops.OPS and ops.OPS[ins.op].calls_libm and
                np.dtype(ins.dtype) == np.float32 for ins in self.spec.body):
            for_loop(b, n, body, name="c")
            return
        hinted_loop(b, n, body, "c", (("llvm.loop.vectorize.width", 8),))

    def _blocked(self) -> bool:
        """Whether the inner loop runs by blocks (`_emit_blocks`): a strided operand of a
        plain numeric dtype, and float math calls that the contiguous loop over a block
        turns into libmvec calls (plain arithmetic over strided data is bound by memory: no
        blocks)."""
        kinds = self.lc.inner
        if "s" not in kinds or len(kinds) != self.nout + self.nin:
            return False
        if not any(ins.op in ops.OPS and ops.OPS[ins.op].calls_libm and
                   np.dtype(ins.dtype).kind in "fc" for ins in self.spec.body):
            return False
        dts = self.out_dts + [np.dtype(d) for d in self.spec.inputs]
        return all(dt.kind in "biufc" and dt.itemsize in (1, 2, 4, 8, 16)
                   for k, dt in zip(kinds, dts) if k == "s")

    def _emit_blocks(self, b, ptrs, n, strides, body):
        """The inner loop by blocks: each strided operand's elements of a block copied (as
        raw bytes) into a stack buffer, `body(i, block_ptrs, block_kinds)` run over the block
        with the buffers as contiguous operands, strided outputs copied back."""
        kinds, no = self.lc.inner, self.nout
        buffered = [j for j, k in enumerate(kinds) if k == "s"]
        blk = max(16, min(BLOCK, BLOCK_BYTES // sum(self.sizes[j] for j in buffered)))
        words = {j: ir.IntType(8 * self.sizes[j]) for j in buffered}
        bufs = {}
        with b.goto_entry_block():  # (an alloca in a loop would grow the stack each time)
            for j in buffered:
                bufs[j] = b.alloca(ir.ArrayType(words[j], blk))
                bufs[j].align = 64
        kinds_in_block = "".join("c" if k == "s" else k for k in kinds)
        size = ir.Constant(I64, blk)

        def block(k):
            start = b.mul(k, size, flags=("nuw", "nsw"))
            rest = b.sub(n, start)
            m = b.select(b.icmp_signed("<", rest, size), rest, size)
            ps = []
            for j, (p, kind) in enumerate(zip(ptrs, kinds)):
                if kind == "s":
                    ps.append(b.bitcast(bufs[j], P8))
                elif kind == "c":
                    ps.append(b.gep(p, [b.mul(start, ir.Constant(I64, self.sizes[j]))]))
                else:
                    ps.append(p)
            for j in buffered:
                if j >= no or self.red is not None:  # (a fold reads its outputs too)
                    self._copy(b, m, _offset(b, ptrs[j], start, strides[j]), strides[j],
                               bufs[j], words[j], True, self._align(j))
            self._body_loop(b, m, lambda i: body(i, ps, kinds_in_block))
            for j in buffered:
                if j < no:
                    self._copy(b, m, _offset(b, ptrs[j], start, strides[j]), strides[j],
                               bufs[j], words[j], False, 1)
        nblocks = b.udiv(b.add(n, ir.Constant(I64, blk - 1)), size)
        for_loop(b, nblocks, block, name="blk")

    def _align(self, j: int) -> int:
        """The alignment operand j's loads may assume (outputs: none, as `store_value`)."""
        if j < self.nout or not self.spec.aligned[j - self.nout]:
            return 1
        return np.dtype(self.spec.inputs[j - self.nout]).alignment

    def _copy(self, b, m, p, stride, buf, word, into, align):
        """Copy m elements (`word`s) between strided `p` (alignment `align`) and buffer
        `buf`, `into` it or out of it, in a scalar loop: LLVM would version a vector one on
        the stride being one element (never true: the layout class says it is not)."""
        sz = word.width // 8
        words = b.bitcast(buf, word.as_pointer())

        def one(i):
            at = b.bitcast(_offset(b, p, i, stride), word.as_pointer())
            if into:
                b.store(b.load(at, align=align), b.gep(words, [i]), align=sz)
            else:
                b.store(b.load(b.gep(words, [i]), align=sz), at, align=align)
        hinted_loop(b, m, one, "bi" if into else "bo", NO_VECTOR)

    def _emit_contiguous_loop(self, b, ptrs, n, strides, blocked=False):
        """Inner loop with compile-time strides for 'c' (itemsize) and '0' operands; by
        blocks (`_emit_blocks`) with `blocked`."""
        kinds = self.lc.inner
        no = self.nout
        # broadcast inputs (stride 0) are loop-invariant: load once, before the loop
        hoisted = {j: load_value(b, ptrs[no + j], self.spec.inputs[j], self.spec.aligned[j])
                   for j in range(self.nin) if kinds[no + j] == "0"}
        em = Emitter(b, self.target)
        acc_slot = nan_slot = None
        if self.red is not None and kinds[0] == "0":
            acc_slot = self._acc_alloca(b)
            start = self._widened(b, load_value(b, ptrs[0], self.out_dts[0]))
            if self._nan_apart():  # a NaN already folded stays apart, as every later one
                with b.goto_entry_block():
                    nan_slot = b.alloca(I1)
                seen = b.fcmp_unordered("uno", start, start)
                b.store(seen, nan_slot)
                start = b.select(seen, em.const(self.out_dts[0],
                                                self.red.identity(self.out_dts[0])), start)
            self._acc_store(b, acc_slot, start)

        def body(i, ptrs, kinds):
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
            if nan_slot is not None:  # two folds LLVM vectorizes: maxnum / minnum, NaN seen
                v = res[0]
                b.store(b.or_(b.load(nan_slot), b.fcmp_unordered("uno", v, v)), nan_slot)
                acc = self._acc_load(b, acc_slot)  # (nnan: a NaN's lane is never read)
                fn = self.target.math(b.module, "maxnum" if self.red.combine == "maximum"
                                      else "minnum", acc.type)
                self._acc_store(b, acc_slot, b.call(fn, [acc, v], fastmath=("nnan", "nsz")))
                return
            if acc_slot is not None:
                acc = self._combine(em, self._acc_load(b, acc_slot), res[0])
                self._acc_store(b, acc_slot, acc)
                return
            for j, v in enumerate(res):
                p = ptrs[j] if kinds[j] == "0" else at(j)
                if self.red is not None:
                    v = self._combine(em, load_value(b, p, self.out_dts[0]), v)
                store_value(b, v, p, self.out_dts[j])
        if blocked:
            self._emit_blocks(b, ptrs, n, strides, body)
        else:
            self._body_loop(b, n, lambda i: body(i, ptrs, kinds))
        if acc_slot is not None:
            got = self._acc_load(b, acc_slot)
            if nan_slot is not None:
                got = b.select(b.load(nan_slot), ir.Constant(got.type, float("nan")), got)
            store_value(b, self._narrowed(b, got), ptrs[0], self.out_dts[0])

    def _nan_apart(self) -> bool:
        """Whether a float min / max folds its values and whether it saw a NaN apart (two
        folds that vectorize with plain min / max instructions; `llvm.maximum`'s NaN and
        signed-zero rules cost four dependent instructions a vector on x86)."""
        return self.red.combine in ("maximum", "minimum") and self.target.name == "cpu" and \
            self.out_dts[0] in (np.dtype(np.float32), np.dtype(np.float64))

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
        for_loop(b, n, body, name="s")

    # accumulators live in allocas (SROA/mem2reg turns them into phis): simpler than phis
    # across the loop helper, and complex accumulators are two slots.
    @property
    def acc_dtype(self) -> np.dtype:
        """The accumulator's dtype: float32 / complex64 sums add in float64 (a sequential
        float32 sum of 1e6 values is off by ~1e-4 relative; NumPy's pairwise one by ~1e-7;
        the loop is bound by memory, not by the wider adds), and float32 products multiply
        in float64 (the lanes reorder them: in float32 a partial product could overflow or
        underflow where NumPy's ordered one does not, inf * 0 giving NaN); anything else in
        its own dtype."""
        dt = self.out_dts[0]
        if self.red is not None and (self.red.combine == "add" and dt in (
                np.dtype(np.float32), np.dtype(np.complex64)) or
                self.red.combine == "multiply" and dt == np.dtype(np.float32)):
            return np.dtype(np.float64 if dt.kind == "f" else np.complex128)
        return dt

    def _acc_alloca(self, b):
        t = lltype(self.acc_dtype)
        with b.goto_entry_block():
            if self.out_dts[0].kind == "c":
                return (b.alloca(t), b.alloca(t))
            return b.alloca(t)

    def _widened(self, b, v):
        """A value of the output dtype as the accumulator's."""
        if self.acc_dtype == self.out_dts[0]:
            return v
        return tuple(b.fpext(x, F64) for x in v) if isinstance(v, tuple) else b.fpext(v, F64)

    def _narrowed(self, b, v):
        """An accumulator value as the output dtype's."""
        if self.acc_dtype == self.out_dts[0]:
            return v
        return tuple(b.fptrunc(x, F32) for x in v) if isinstance(v, tuple) else \
            b.fptrunc(v, F32)

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
        """Fold one value into the accumulator (a value of the output dtype is widened to
        a wider accumulator's); float sums/products may reassociate."""
        dt = self.out_dts[0]
        b = em.b
        if (acc[0] if isinstance(acc, tuple) else acc).type == F64 and \
                (v[0] if isinstance(v, tuple) else v).type == F32:
            v, dt = self._widened(b, v), self.acc_dtype
        if self.red.combine in ("add", "multiply") and dt.kind == "f":
            # NOTE: NumPy's own float sums are pairwise, not sequential, so no order is
            # "the" answer; reassoc lets LLVM keep several vector accumulators.
            f = b.fadd if self.red.combine == "add" else b.fmul
            return f(acc, v, flags=("reassoc", "nsz"))
        if self.red.combine == "add" and dt.kind == "c":
            return (b.fadd(acc[0], v[0], flags=("reassoc", "nsz")),
                    b.fadd(acc[1], v[1], flags=("reassoc", "nsz")))
        return em.apply(self.red.combine, [acc, v], [dt, dt], dt, ops.FOLD)

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
    return KernelGen(spec, layout, name, target or CPUTarget()).build()


def kernel_data_size(layout: LayoutClass, nout: int, nin: int, nparams: int = 0) -> int:
    """Bytes of kernel data for this layout (prefix, ndim, shape, strides, parameters)."""
    return PREFIX_BYTES + 8 * layout.ndim * (1 + nout + nin) + 16 * nparams

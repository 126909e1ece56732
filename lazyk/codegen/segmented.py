"""Segmented (var-row) reduction kernels: a fused elementwise body folded over the rows of a
ragged layout (`generate_segmented`), built on the loop generator of `lazyk.codegen.llvm`.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir

from lazyk import ops
from lazyk.codegen.emit import (
    I1,
    I8,
    I64,
    P8,
    CPUTarget,
    Emitter,
    emit_body,
    lltype,
    load_value,
    store_value,
)
from lazyk.codegen.llvm import KernelGen, LayoutClass, for_loop


def seg_params_offset(nin: int) -> int:
    """Byte offset of the parameter slots in a segmented kernel's kernel data."""
    return 8 * (5 + nin)


class _SegGen(KernelGen):
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
    folded for min/max (no identity) and for a mean over `?T` inputs. `mean` divides by the number
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
            # nothing folded: no identity for min/max; a mean of ?T data is missing
            if self.red.combine in ("minimum", "maximum") or (self.mean and (self.skipna or mj)):
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
                for_loop(b, n, elem, name="e")
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
                    for_loop(b, n, elem_c, name="ec")
                with otherwise:
                    for_loop(b, n, elem, name="e")

        if not self.rows:
            def flat_row(r):
                lo = b.load(b.gep(head, [r]), align=8)
                n = b.sub(b.load(b.gep(head, [b.add(r, one)]), align=8), lo)
                reset()

                def elem(i):
                    e = b.add(lo, i)
                    element([b.gep(p, [b.mul(e, c64(sz))]) for p, sz in zip(ins, isz)],
                            [b.gep(fmask[j], [e]) for j in mj])
                for_loop(b, n, elem, name="e")
                finish(r)
            for_loop(b, nrows, flat_row, name="r")
        elif self.order == "row":
            def per_row(r):
                reset()
                row_elements(r)
                finish(r)
            for_loop(b, nrows, per_row, name="r")
        elif self.order == "all":
            reset()
            for_loop(b, nrows, row_elements, name="r")
            finish(zero)
        else:  # "col": result i folds element i of every row
            def col(i):
                reset()

                def down(r):
                    addr = [b.gep(b.inttoptr(b.load(b.gep(p, [r]), align=8), P8),
                                  [b.mul(i, b.load(b.gep(st, [r]), align=8))])
                            for p, st in zip(rowptr, rowst)]
                    element(addr, [b.gep(addr[j], [moff[j]]) for j in mj])
                for_loop(b, nrows, down, name="r")
                finish(i)
            for_loop(b, ncols, col, name="c")
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

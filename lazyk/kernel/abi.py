"""The ckernel ABI (Contract 4): prefix struct, request signatures and a kernel-data builder.

```
struct ckernel_prefix { void *function; void (*destructor)(ckernel_prefix *); };
single:  void (*)(char *dst, char *const *src, ckernel_prefix *self)
strided: void (*)(char *dst, intptr_t dst_stride, char *const *src,
                  const intptr_t *src_stride, size_t count, ckernel_prefix *self)
```
Kernel data is zero-initialised and memcpy-movable (offsets, never interior pointers);
children sit at 16-byte aligned offsets; the root destructor runs exactly once, and it is
safe to run after a construction that failed half-way because unset fields are zero.
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

ALIGN = 16


class CKernelPrefix(ctypes.Structure):
    """`ckernel_prefix`: the function pointer (request-specific) and the destructor."""

    _fields_ = [("function", ctypes.c_void_p), ("destructor", ctypes.c_void_p)]


DestructorFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
SingleFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
StridedFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_void_p,
                             ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)

C_DECLARATIONS = """\
#include <stddef.h>
#include <stdint.h>
typedef struct ckernel_prefix {
    void *function;
    void (*destructor)(struct ckernel_prefix *self);
} ckernel_prefix;
typedef void (*ckernel_single_t)(char *dst, char *const *src, ckernel_prefix *self);
typedef void (*ckernel_strided_t)(char *dst, intptr_t dst_stride, char *const *src,
                                  const intptr_t *src_stride, size_t count,
                                  ckernel_prefix *self);
"""


def align_up(n: int) -> int:
    """Round `n` up to a multiple of ALIGN (children start at 16-byte boundaries)."""
    return (n + ALIGN - 1) & -ALIGN


class CKernelBuilder:
    """Owns a growable, zero-initialised kernel-data buffer, like DyND's ckernel_builder.

    Everything inside is addressed by offset, so growing may move the buffer (memcpy).
    `close()` runs the root destructor exactly once; also usable as a context manager.
    """

    def __init__(self, size: int = 64):
        self._buf = ctypes.create_string_buffer(align_up(max(size, ctypes.sizeof(CKernelPrefix))))
        self._used = 0
        self._closed = False

    @property
    def address(self) -> int:
        """Address of the root `ckernel_prefix` (offset 0); valid until the next growth."""
        return ctypes.addressof(self._buf)

    @property
    def capacity(self) -> int:
        """Bytes currently allocated."""
        return ctypes.sizeof(self._buf)

    def reserve(self, size: int) -> None:
        """Grow to at least `size` bytes; new bytes are zero, old bytes are moved as-is."""
        if size > self.capacity:
            new = ctypes.create_string_buffer(align_up(max(size, 2 * self.capacity)))
            ctypes.memmove(new, self._buf, self.capacity)
            self._buf = new

    def alloc(self, size: int) -> int:
        """Reserve `size` bytes at the next 16-byte aligned offset and return that offset."""
        off = align_up(self._used)
        self.reserve(off + size)
        self._used = off + size
        return off

    def prefix(self, offset: int = 0) -> CKernelPrefix:
        """The `ckernel_prefix` at `offset` (a view; do not keep it across growth)."""
        return CKernelPrefix.from_address(self.address + offset)

    def view(self, ctype: Any, offset: int = 0) -> Any:
        """A ctypes view of `ctype` at `offset` inside the buffer."""
        return ctype.from_address(self.address + offset)

    def buffer(self) -> Any:
        """The writable ctypes buffer (for struct.pack_into)."""
        return self._buf

    def close(self) -> None:
        """Run the root destructor once (if set), then zero the prefix so it cannot run again."""
        if self._closed:
            return
        self._closed = True
        p = self.prefix(0)
        if p.destructor:
            DestructorFn(p.destructor)(self.address)
        p.function = None
        p.destructor = None

    @property
    def closed(self) -> bool:
        """Whether close() has run."""
        return self._closed

    def __enter__(self) -> CKernelBuilder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


# ---------------------------------------------------------------- Python-object front door
# NumPy's PyArrayObject_fields (stable since NumPy 1.7, verified at runtime by kernel.py):
# ob_type @8, data @16, nd (int) @24, dimensions @32, strides @40, descr @56, flags (int) @64.
NPY_ALIGNED, NPY_WRITEABLE = 0x100, 0x400
GUARD_MAXND = 8
# Per operand (output first): type, descr, flag mask, ndim, byte offset, extent lo, extent hi,
# may-alias-out flag, source slot (position among the kernel's inputs), then GUARD_MAXND dims
# and GUARD_MAXND strides (all int64).
GUARD_REC = 9 + 2 * GUARD_MAXND
GUARD_HEAD = 3  # function, its last argument (kernel data or record), mode
GUARD_SINGLE, GUARD_RECORD = 0, 1  # modes: call `void single(dst, src, kd)` and return 0, or
# `i64 lazyk_record_go(dst, src, record)` (threads.py) and return its result


def guard_size(nops: int) -> int:
    """int64 fields in a guard for `nops` operands (output first)."""
    return GUARD_HEAD + GUARD_REC * nops


GUARD_MAXOPS = 12  # operands (output included) with an entry point of their own
GUARD_ANY = "lazyk_guard_any"  # any count: `(guard, PyArrayObject **arrays, count)`


def guard_name(nops: int) -> str:
    """Symbol of the guard entry point for `nops` operands."""
    return f"lazyk_guard{nops}"


def guard_ir(max_ops: int = GUARD_MAXOPS) -> str:
    """IR for `i64 lazyk_guard{n}(i64 *guard, PyArrayObject *out, PyArrayObject *in...)`,
    n = 1 .. max_ops: thin entry points over one loop over the operands.

    Checks each array's type, dtype object, flags, ndim, shape and strides against the
    guard (the geometry the kernel data was bound for), and that each input's byte extent
    is disjoint from the output's unless it is the exact alias the guard allows. On a match
    it calls the single request with the arrays' data pointers and returns 0, else returns 1
    and runs nothing. This makes a repeated call one foreign call instead of a Python bind.
    NOTE: one module for every operand count, compiled once per process (and cached on
    disk): a module per count cost 40-76 ms each, more than the kernels it guards.
    """
    from llvmlite import ir

    i8, i32, i64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
    p8, p64 = i8.as_pointer(), i64.as_pointer()
    m = ir.Module(name="lazyk_guards")
    body = ir.Function(m, ir.FunctionType(i64, [p64, p8.as_pointer(), i64]), GUARD_ANY)
    body.attributes.add("noinline")  # one copy, not one per entry point
    g, objs, nops = body.args
    b = ir.IRBuilder(body.append_basic_block("entry"))
    fail = body.append_basic_block("fail")
    c = lambda v: ir.Constant(i64, v)  # noqa: E731
    mx = GUARD_MAXND

    def gf(i):
        return b.load(b.gep(g, [i if isinstance(i, ir.Value) else c(i)]))

    def field(obj, off, ty):
        return b.load(b.bitcast(b.gep(obj, [c(off)]), ty.as_pointer()))

    def loop(name, n, exit_block):
        """Open `for i in [0, n)`: returns (i, head); the builder is left in the body, and
        the caller adds i + 1 as the head's incoming value when it branches back."""
        pre = b.block
        head = body.append_basic_block(name)
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(i64)
        i.add_incoming(c(0), pre)
        inside = body.append_basic_block(f"{name}.body")
        b.cbranch(b.icmp_signed("<", i, n), inside, exit_block)
        b.position_at_end(inside)
        return i, head

    src = b.alloca(p8, nops)
    dst_slot, out_slot = b.alloca(p8), b.alloca(i64)
    done = body.append_basic_block("run")
    j, operand = loop("operand", nops, done)
    r = b.add(c(GUARD_HEAD), b.mul(j, c(GUARD_REC)))
    at = lambda k: b.add(r, c(k))  # noqa: E731
    obj = b.load(b.gep(objs, [j]))
    # NOTE: check the type first, on its own branch: any Python object may arrive here,
    # and only an ndarray is known to be large enough for the field reads below.
    is_array = body.append_basic_block("operand.fields")
    b.cbranch(b.icmp_unsigned("==", b.ptrtoint(field(obj, 8, p8), i64), gf(r)), is_array, fail)
    b.position_at_end(is_array)
    ok = b.icmp_unsigned("==", b.ptrtoint(field(obj, 56, p8), i64), gf(at(1)))
    mask = gf(at(2))
    flags = b.zext(field(obj, 64, i32), i64)
    ok = b.and_(ok, b.icmp_unsigned("==", b.and_(flags, mask), mask))
    nd = b.sext(field(obj, 24, i32), i64)
    ok = b.and_(ok, b.icmp_unsigned("==", nd, gf(at(3))))
    raw = b.ptrtoint(field(obj, 16, p8), i64)
    # Overlap with the output (operand 0 is the output itself: its own extents, never
    # disjoint, but the exact alias): disjoint extents, or the allowed exact alias.
    first = b.icmp_unsigned("==", j, c(0))
    out_raw = b.select(first, raw, b.load(out_slot))
    o_lo, o_hi = b.add(out_raw, gf(GUARD_HEAD + 5)), b.add(out_raw, gf(GUARD_HEAD + 6))
    i_lo, i_hi = b.add(raw, gf(at(5))), b.add(raw, gf(at(6)))
    disjoint = b.or_(b.icmp_signed(">=", i_lo, o_hi), b.icmp_signed(">=", o_lo, i_hi))
    alias = b.and_(b.icmp_unsigned("!=", gf(at(7)), c(0)), b.icmp_unsigned("==", raw, out_raw))
    ok = b.and_(ok, b.or_(first, b.or_(disjoint, alias)))
    dims_head = body.append_basic_block("operand.dims")
    b.cbranch(ok, dims_head, fail)
    b.position_at_end(dims_head)
    dims, strides = field(obj, 32, p64), field(obj, 40, p64)
    dims_done = body.append_basic_block("dim.done")
    d, dim = loop("dim", nd, dims_done)
    same = b.and_(
        b.icmp_signed("==", b.load(b.gep(dims, [d])), gf(b.add(d, at(9)))),
        b.icmp_signed("==", b.load(b.gep(strides, [d])), gf(b.add(d, at(9 + mx)))))
    d.add_incoming(b.add(d, c(1)), b.block)
    b.cbranch(same, dim, fail)
    b.position_at_end(dims_done)
    data = b.inttoptr(b.add(raw, gf(at(4))), p8)
    is_out = body.append_basic_block("operand.out")
    is_in = body.append_basic_block("operand.in")
    nxt = body.append_basic_block("operand.next")
    b.cbranch(first, is_out, is_in)
    b.position_at_end(is_out)
    b.store(data, dst_slot)
    b.store(raw, out_slot)
    b.branch(nxt)
    b.position_at_end(is_in)
    b.store(data, b.gep(src, [gf(at(8))]))
    b.branch(nxt)
    b.position_at_end(nxt)
    j.add_incoming(b.add(j, c(1)), nxt)
    b.branch(operand)

    b.position_at_end(done)
    args = [b.load(dst_slot), src, b.inttoptr(gf(1), p8)]
    with b.if_else(b.icmp_unsigned("==", gf(2), c(GUARD_SINGLE))) as (single, record):
        with single:
            single_t = ir.FunctionType(ir.VoidType(), [p8, p8.as_pointer(), p8]).as_pointer()
            b.call(b.inttoptr(gf(0), single_t), args)
            b.ret(c(0))
        with record:
            go_t = ir.FunctionType(i64, [p8, p8.as_pointer(), p8]).as_pointer()
            b.ret(b.call(b.inttoptr(gf(0), go_t), args))
    b.unreachable()
    b.position_at_end(fail)
    b.ret(c(1))

    for n in range(1, max_ops + 1):
        fn = ir.Function(m, ir.FunctionType(i64, [p64] + [p8] * n), guard_name(n))
        e = ir.IRBuilder(fn.append_basic_block("entry"))
        arr = e.alloca(p8, c(n))
        for k, a in enumerate(fn.args[1:]):
            e.store(a, e.gep(arr, [c(k)]))
        e.ret(e.call(body, [fn.args[0], arr, c(n)]))
    return str(m)


def extent(shape: tuple, strides: tuple, itemsize: int) -> tuple[int, int]:
    """Byte range [lo, hi) touched by an array, relative to its element-0 address."""
    lo = hi = 0
    for n, s in zip(shape, strides):
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    return lo, hi + itemsize


def make_guard(single_address: int, kd_address: int, offsets: tuple, arrays: tuple,
               aligned: tuple, order: tuple, may_alias: bool = True,
               mode: int = GUARD_SINGLE) -> ctypes.Array:
    """A guard buffer for `arrays` (output, then inputs in the caller's order) bound to kernel
    data at `kd_address`; `order[k]` is the caller's input that is kernel input k and
    `offsets` the byte offsets bind added (output first, then kernel inputs).

    `may_alias`: an input may be the output itself (elementwise kernels); a reduction sets
    its output before reading its inputs, so it must refuse every overlap."""
    slot = {p: k for k, p in enumerate(order)}
    out = arrays[0]
    buf = (ctypes.c_int64 * guard_size(len(arrays)))()
    buf[0], buf[1], buf[2] = single_address, kd_address, mode
    for j, a in enumerate(arrays):
        r = GUARD_HEAD + GUARD_REC * j
        k = 0 if j == 0 else slot[j - 1]  # kernel input k
        mask = NPY_WRITEABLE | NPY_ALIGNED if j == 0 else (NPY_ALIGNED if aligned[k] else 0)
        lo, hi = extent(a.shape, a.strides, a.dtype.itemsize)
        alias = int(may_alias and j > 0 and a.shape == out.shape and a.strides == out.strides
                    and a.dtype.itemsize == out.dtype.itemsize)
        off = offsets[0] if j == 0 else offsets[k + 1]
        buf[r:r + 9] = [id(np.ndarray), id(a.dtype), mask, a.ndim, off, lo, hi, alias, k]
        buf[r + 9:r + 9 + a.ndim] = list(a.shape)
        buf[r + 9 + GUARD_MAXND:r + 9 + GUARD_MAXND + a.ndim] = list(a.strides)
    return buf

"""`lazyk.compile`: an expression planned once, then called on new inputs (`CompiledExpr`).

Planning (passes, fusion, kernel specs) happens at compile time; a call checks the inputs
against the parameter types. On the one-kernel path a call whose arrays have the geometry of
a recent call (type, dtype, flags, shape, strides; no partial overlap with `out`) is one
foreign call into a native guard that checks all that and runs the kernel (~1 us at n = 1).
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from lazyk import abi
from lazyk import kernel as _kernel
from lazyk.errors import ShapeError
from lazyk.expr import Expr, Placeholder, as_expr, leaf_data
from lazyk.graph import Node, type_text
from lazyk.kernel import data_pointer
from lazyk.pipeline import (
    _THREAD_MIN, _as_out, _backend, _empty_out, _needs_temporary, _over, _prepare, _release,
    plan, run_program,
)


def signature_text(params: list[tuple[str, str]], result: str) -> str:
    """Datashape function type text: `(a: N * float64, b: N * float64) -> N * float64`."""
    return "(" + ", ".join(f"{n}: {t}" for n, t in params) + ") -> " + result


class CompiledExpr:
    """A planned expression callable on new inputs: `k(a, b, out=None)`.

    Planning (passes, fusion, kernel specs) happens once here; a call checks the
    inputs against the parameter types, binds shapes/strides and launches the kernels.
    """

    def __init__(self, expr: Expr):
        from lazyk import ragged

        if any(ragged.is_ragged(v) for v in expr.env.values()):
            from lazyk.errors import NotSupportedError

            raise NotSupportedError(
                f"lazyk.compile of an expression over var / option arrays ({expr.type}) is "
                "not supported yet; call .eval() on it (one fused kernel per step)")
        self.expr = expr
        self.program = plan(expr.node)
        # Parameters in order of first appearance in the graph the user wrote.
        self.params = tuple(dict.fromkeys(_leaf_order(expr.node)))
        self._types = []
        self._symbols: list[tuple[int, int, str]] = []
        shown = []
        k = 0
        for i, name in enumerate(self.params):
            v = leaf_data(expr.env[name])
            shape, dtype = (v.shape, v.dtype)
            if not isinstance(v, Placeholder):
                dtype = dtype.newbyteorder("=")
                label = f"_{k}"
                k += 1
            else:
                label = name
            self._types.append((shape, dtype))
            for ax, d in enumerate(shape):
                if isinstance(d, str):
                    self._symbols.append((i, ax, d))
            shown.append((label, type_text(shape, dtype)))
        self.labels = tuple(label for label, _ in shown)
        self.signature = signature_text(shown, expr.node.type_text())
        self._setup_fast()

    def __repr__(self) -> str:
        return f"<lazyk.CompiledExpr {self.signature}>"

    def _bind_inputs(self, inputs: tuple) -> dict:
        if len(inputs) != len(self.params):
            raise TypeError(f"expected {len(self.params)} inputs {self.signature}, got "
                            f"{len(inputs)}")
        data = {}
        for i, (name, x) in enumerate(zip(self.params, inputs)):
            a = x if isinstance(x, np.ndarray) else _as_input(x)
            shape, dtype = self._types[i]
            if a.dtype.newbyteorder("=") != dtype or a.ndim != len(shape):
                from lazyk.errors import TypeMatchError

                raise TypeMatchError(f"input {self.labels[i]!r}: expected "
                                     f"{type_text(shape, dtype)}, got "
                                     f"{type_text(a.shape, a.dtype)}")
            data[name] = a
        self._check_shapes([data[name].shape for name in self.params])
        return data

    def _check_shapes(self, shapes: list) -> None:
        """Every input's shape against its parameter: fixed sizes equal, symbols agree."""
        sizes: dict[str, tuple[str, int, int]] = {}
        for i, shape in enumerate(shapes):
            for ax, (want, n) in enumerate(zip(self._types[i][0], shape)):
                if isinstance(want, str):
                    seen = sizes.setdefault(want, (self.labels[i], ax, n))
                    if seen[2] != n:
                        raise ShapeError(
                            f"dimension {want} is {seen[2]} in {seen[0]!r} (axis {seen[1]}) "
                            f"but {n} in {self.labels[i]!r} (axis {ax}); signature "
                            f"{self.signature}")
                elif want != n:
                    raise ShapeError(
                        f"input {self.labels[i]!r}: axis {ax} has size {n}, the signature "
                        f"says {want}: {self.signature}")

    def _setup_fast(self) -> None:
        """Precompute the one-kernel elementwise fast path (the common `k(a, b, out=c)`)."""
        self._fast = None
        # Native guards (issue 5): (guard address, guard fn, keep-alive, geometry key), one
        # for calls with `out=` and one for fresh outputs (+ shape, dtype to allocate).
        self._g_out = self._g_new = None
        self._gfn = None
        self._nin = len(self.params)
        steps = self.program.steps
        if len(steps) != 1 or steps[0].axes is not None or _backend() is None:
            return
        step = steps[0]
        if not all(isinstance(r, str) for r in step.inputs):
            return
        where = {name: k for k, name in enumerate(self.params)}
        self._fast = (tuple(where[r] for r in step.inputs), step.spec, step.dtype,
                      tuple(t[1] for t in self._types), tuple(len(t[0]) for t in self._types))
        self._geom: dict = {}
        self._valid_shapes: set = set()  # common input shapes already checked against types
        self._src_type = ctypes.c_void_p * max(len(step.inputs), 1)
        if (_kernel._GUARD_OK and sorted(self._fast[0]) == list(range(len(self.params)))
                and len(step.spec.outputs) == 1):
            self._gfn = _guard_fn(1 + len(self.params))

    def _install_guard(self, key: tuple, entry: tuple, out: np.ndarray, inputs: tuple,
                       fresh: bool) -> None:
        """Remember this geometry in a native guard, so the next call is one foreign call."""
        old = self._g_new if fresh else self._g_out
        if old is not None and old[3] == key:
            return  # the guard refused these arrays (e.g. overlapping extents): keep it
        ops = (out, *inputs)
        if any(a.ndim > abi.GUARD_MAXND for a in ops):
            return
        buf = _make_guard(entry, ops, self._fast[1].aligned, self._fast[0])
        # NOTE: dtype objects are compared by identity; the guard keeps them alive.
        g = (ctypes.addressof(buf), self._gfn, (buf, entry, tuple(a.dtype for a in ops)), key)
        if fresh:
            self._g_new = g + (out.shape, out.dtype)
        else:
            self._g_out = g

    def _call_fast(self, inputs: tuple, out: Any):
        """One kernel, same-shape native aligned inputs: dict lookups and one C call."""
        order, spec, dtype, dtypes, ndims = self._fast
        shape = None
        for a, dt, nd in zip(inputs, dtypes, ndims):
            if type(a) is not np.ndarray or a.dtype != dt or a.ndim != nd \
                    or not a.flags.aligned or (shape is not None and a.shape != shape):
                return None
            shape = a.shape
        if shape not in self._valid_shapes:
            self._check_shapes([shape] * len(inputs))
            self._valid_shapes.add(shape)
        fresh = out is None
        if not fresh and (type(out) is not np.ndarray or out.dtype != dtype
                          or out.shape != shape or not out.flags.writeable
                          or not out.flags.aligned
                          or _needs_temporary(out, list(inputs), False)):
            return None
        arrays = [inputs[k] for k in order]
        # A fresh output is C-contiguous, so its strides need not be part of the key.
        key = (shape, None if fresh else out.strides, tuple(a.strides for a in arrays))
        entry = self._geom.get(key)
        if entry is None:
            if fresh:
                out = np.empty(shape, dtype)
            if len(self._geom) > 64:
                self._g_out = self._g_new = None  # guards point into these entries
                _release(list(self._geom.values()))
                self._geom.clear()
            st = (_over(shape, out.shape, out.strides),) + tuple(
                _over(shape, a.shape, a.strides) for a in arrays)
            entry = _prepare(spec, shape, st, (False,) * len(shape))
            old = self._geom.setdefault(key, entry)
            if old is not entry:
                _release([entry])
                entry = old
        _, layout, compiled, kd, kd_address, size, offs = entry
        if out is None:
            # Small outputs: plain np.empty (0.4 us); large ones reuse pre-faulted blocks.
            out = np.empty(shape, dtype) if size < _THREAD_MIN else _empty_out(shape, dtype)
        if size == 0:
            return out
        if size >= _THREAD_MIN:
            _backend()(spec, layout, out, arrays)
            return out
        src = self._src_type(
            *[data_pointer(a) + offs[k + 1] for k, a in enumerate(arrays)])
        compiled.single(data_pointer(out) + offs[0], ctypes.addressof(src), kd_address)
        if self._gfn is not None and size <= _GUARD_MAX:
            self._install_guard(key, entry, out, inputs, fresh)
        return out

    def __del__(self) -> None:
        self._g_out = self._g_new = None
        geom = getattr(self, "_geom", None)
        if geom:
            try:
                _release(list(geom.values()))
            except Exception:  # pragma: no cover  (interpreter shutdown)
                pass
            geom.clear()

    def __call__(self, *inputs, out: Any = None, casting: str = "same_kind"):
        """Bind the inputs and run the kernels; returns a new NumPy array or `out`."""
        if len(inputs) == self._nin:
            # Same geometry as a recent call: the native guard checks type, dtype, flags,
            # shape, strides and overlap, and runs the kernel (no graph, no LLVM, no bind).
            if out is None:
                g = self._g_new
                if g is not None:
                    o = np.empty(g[4], g[5])
                    if g[1](g[0], o, *inputs) == 0:
                        return o
            else:
                g = self._g_out
                if g is not None and g[1](g[0], out, *inputs) == 0:
                    return out
        if self._fast is not None and len(inputs) == len(self.params):
            done = self._call_fast(inputs, out)
            if done is not None:
                return done
        data = self._bind_inputs(inputs)
        from lazyk.device import on_gpu  # issue 6: GPU inputs run there

        if on_gpu(data):
            from lazyk.device import run_program as run_on_device

            return run_on_device(self.program, data, out)
        if out is None:
            return run_program(self.program, data)
        target = _as_out(out)
        run_program(self.program, data, target, casting=casting)
        return out

    def bind(self, out: Any, *inputs: Any) -> Any:
        """Step 2 of the three-step flow: kernel data for these arrays, no LLVM.

        Returns a `lazyk.kernel.BoundKernel`: `ck()` executes, `ck.address` is the
        `ckernel_prefix *` a C caller can run. Only for one-kernel elementwise expressions.
        """
        if self._fast is None:
            from lazyk.errors import NotSupportedError

            raise NotSupportedError(
                f"bind() needs a one-kernel elementwise expression; {self.signature} "
                f"runs {len(self.program.steps)} step(s): call the compiled expression instead")
        data = self._bind_inputs(inputs)
        arrays = [data[self.params[k]] for k in self._fast[0]]
        return _kernel.bind(self._fast[1], _as_out(out), *arrays)

    def explain(self) -> str:
        """The explain text of the underlying expression."""
        return self.expr.explain()


# ---------------------------------------------------------------- repeated calls: native guard
# Per operand (output first): type, descr, flag mask, ndim, byte offset, extent lo, extent hi,
# may-alias-out flag, source slot (position among the kernel's inputs), then GUARD_MAXND dims
# and GUARD_MAXND strides (all int64). Inputs come in parameter order.
_REC = 9 + 2 * abi.GUARD_MAXND
_HEAD = 2  # single-request function, kernel-data address
# The guard runs the kernel with the GIL held: only sizes where the call overhead matters
# take it, so other Python threads keep running next to larger kernels (GIL released).
_GUARD_MAX = 1 << 13
_guards: dict = {}


def _guard_ir(nops: int) -> str:
    """IR for `i64 lazyk_cguard{nops}(i64 *guard, PyArrayObject *out, PyArrayObject *in...)`.

    Like `abi.guard_ir`, plus an overlap check: each input's byte extent must be disjoint
    from the output's unless it is the exact alias (same start and geometry) the guard
    allows. On a match it runs the single request and returns 0; else 1, running nothing.
    """
    from llvmlite import ir

    i8, i32, i64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
    p8, p64 = i8.as_pointer(), i64.as_pointer()
    m = ir.Module(name=f"lazyk_cguard{nops}")
    fn = ir.Function(m, ir.FunctionType(i64, [p64] + [p8] * nops), f"lazyk_cguard{nops}")
    g, objs = fn.args[0], fn.args[1:]
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    fail = fn.append_basic_block("fail")
    c = lambda v: ir.Constant(i64, v)  # noqa: E731
    mx = abi.GUARD_MAXND

    def gf(i):
        return b.load(b.gep(g, [c(i)]))

    def field(obj, off, ty):
        return b.load(b.bitcast(b.gep(obj, [c(off)]), ty.as_pointer()))

    src = b.alloca(p8, c(max(nops - 1, 1)))
    dst = out_raw = None
    for j, obj in enumerate(objs):
        r = _HEAD + _REC * j
        # NOTE: the type first, on its own branch: only an ndarray is large enough to read.
        is_array = fn.append_basic_block(f"array{j}")
        b.cbranch(b.icmp_unsigned("==", b.ptrtoint(field(obj, 8, p8), i64), gf(r)),
                  is_array, fail)
        b.position_at_end(is_array)
        ok = b.icmp_unsigned("==", b.ptrtoint(field(obj, 56, p8), i64), gf(r + 1))
        mask = gf(r + 2)
        flags = b.zext(field(obj, 64, i32), i64)
        ok = b.and_(ok, b.icmp_unsigned("==", b.and_(flags, mask), mask))
        nd = b.sext(field(obj, 24, i32), i64)
        ok = b.and_(ok, b.icmp_unsigned("==", nd, gf(r + 3)))
        raw = b.ptrtoint(field(obj, 16, p8), i64)
        if j > 0:  # overlap with the output: disjoint extents, or the allowed exact alias
            o_lo, o_hi = b.add(out_raw, gf(_HEAD + 5)), b.add(out_raw, gf(_HEAD + 6))
            i_lo, i_hi = b.add(raw, gf(r + 5)), b.add(raw, gf(r + 6))
            disjoint = b.or_(b.icmp_signed(">=", i_lo, o_hi), b.icmp_signed(">=", o_lo, i_hi))
            alias = b.and_(b.icmp_unsigned("!=", gf(r + 7), c(0)),
                           b.icmp_unsigned("==", raw, out_raw))
            ok = b.and_(ok, b.or_(disjoint, alias))
        head = fn.append_basic_block(f"dims{j}")
        b.cbranch(ok, head, fail)
        b.position_at_end(head)
        dims, strides = field(obj, 32, p64), field(obj, 40, p64)
        pre = b.block
        loop = fn.append_basic_block(f"dim{j}")
        body = fn.append_basic_block(f"dim{j}.check")
        done = fn.append_basic_block(f"dim{j}.done")
        b.branch(loop)
        b.position_at_end(loop)
        d = b.phi(i64)
        d.add_incoming(c(0), pre)
        b.cbranch(b.icmp_signed("<", d, nd), body, done)
        b.position_at_end(body)
        same = b.and_(
            b.icmp_signed("==", b.load(b.gep(dims, [d])), b.load(b.gep(g, [b.add(d, c(r + 9))]))),
            b.icmp_signed("==", b.load(b.gep(strides, [d])),
                          b.load(b.gep(g, [b.add(d, c(r + 9 + mx))]))))
        d.add_incoming(b.add(d, c(1)), body)
        b.cbranch(same, loop, fail)
        b.position_at_end(done)
        data = b.inttoptr(b.add(raw, gf(r + 4)), p8)
        if j == 0:
            dst, out_raw = data, raw
        else:
            b.store(data, b.gep(src, [gf(r + 8)]))
    single_t = ir.FunctionType(ir.VoidType(), [p8, p8.as_pointer(), p8]).as_pointer()
    b.call(b.inttoptr(gf(0), single_t), [dst, src, b.inttoptr(gf(1), p8)])
    b.ret(c(0))
    b.position_at_end(fail)
    b.ret(c(1))
    return str(m)


def _guard_fn(nops: int) -> Any:
    """The native guard for `nops` arrays (compiled once per process), or None."""
    f = _guards.get(nops)
    if f is None:
        from lazyk.backend.cpu import JITModule

        jit = JITModule(_guard_ir(nops), (f"lazyk_cguard{nops}",))
        # NOTE: PYFUNCTYPE keeps the GIL (~1 us a call against ~2 us with CFUNCTYPE); only
        # single-threaded sizes take this path, and the guard buffer is then never raced.
        proto = ctypes.PYFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, *[ctypes.py_object] * nops)
        f = _guards[nops] = (proto(jit.addresses[f"lazyk_cguard{nops}"]), jit)
    return f[0]


def _extent(shape: tuple, strides: tuple, itemsize: int) -> tuple[int, int]:
    """Byte range [lo, hi) touched by an array, relative to its element-0 address."""
    lo = hi = 0
    for n, s in zip(shape, strides):
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    return lo, hi + itemsize


def _make_guard(entry: tuple, arrays: tuple, aligned: tuple, order: tuple) -> Any:
    """A guard buffer for `arrays` (output, then inputs in parameter order) bound to the
    kernel data of `entry`; `order[k]` is the parameter that is kernel input k."""
    _, _, compiled, _, kd_address, _, offs = entry
    slot = {p: k for k, p in enumerate(order)}
    out = arrays[0]
    buf = (ctypes.c_int64 * (_HEAD + _REC * len(arrays)))()
    buf[0], buf[1] = compiled.single_address, kd_address
    for j, a in enumerate(arrays):
        r = _HEAD + _REC * j
        k = 0 if j == 0 else slot[j - 1]  # kernel input k
        mask = abi.NPY_WRITEABLE | abi.NPY_ALIGNED if j == 0 else (
            abi.NPY_ALIGNED if aligned[k] else 0)
        lo, hi = _extent(a.shape, a.strides, a.dtype.itemsize)
        alias = int(j > 0 and a.shape == out.shape and a.strides == out.strides
                    and a.dtype.itemsize == out.dtype.itemsize)
        off = offs[0] if j == 0 else offs[k + 1]
        buf[r:r + 9] = [id(np.ndarray), id(a.dtype), mask, a.ndim, off, lo, hi, alias, k]
        buf[r + 9:r + 9 + a.ndim] = list(a.shape)
        buf[r + 9 + abi.GUARD_MAXND:r + 9 + abi.GUARD_MAXND + a.ndim] = list(a.strides)
    return buf


def _as_input(x: Any) -> np.ndarray:
    if isinstance(x, (int, float, complex, np.generic)):
        return np.asarray(x)
    if hasattr(x, "__cuda_array_interface__"):  # issue 6: stays on the GPU, no host copy
        from lazyk.device import as_device_array

        return as_device_array(x)
    if isinstance(x, (list, tuple)):
        return np.asarray(x)
    if isinstance(x, np.ndarray) or hasattr(x, "to_numpy"):
        return _as_out(x)
    raise TypeError(f"inputs must be NumPy or lazyk arrays, lists or scalars, "
                    f"not {type(x).__name__}")


def _leaf_order(root: Node) -> list[str]:
    from lazyk.graph import toposort

    return [n.arg for n in toposort(root) if n.op == "input"]


def compile(expr: Any) -> CompiledExpr:
    """Plan `expr` once; the result is called on arrays of the parameter types.

    Example: `k = lazyk.compile(a + b)` with `k.signature ==
    '(a: N * float64, b: N * float64) -> N * float64'`, then `k(x, y, out=z)`.

    Args:
        expr: a lazy expression; placeholders are parameters by name, concrete leaf
            arrays are parameters `_0, _1, ...` in order of first appearance.

    Raises:
        TypeMatchError: (on call) an input's dtype or ndim differs from its parameter.
        ShapeError: (on call) a symbolic dim has two sizes, or inputs do not broadcast.
    """
    return CompiledExpr(as_expr(expr))

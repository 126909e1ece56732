"""`lazyk.compile`: an expression planned once, then called on new inputs (`CompiledExpr`).

Planning (passes, fusion, kernel specs) happens at compile time; a call checks the inputs
against the parameter types and, on the one-kernel path, costs two dict lookups and one C
call once a geometry has been seen.
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

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
        sizes: dict[str, tuple[str, int]] = {}
        for i, (name, x) in enumerate(zip(self.params, inputs)):
            a = x if isinstance(x, np.ndarray) else _as_input(x)
            shape, dtype = self._types[i]
            if a.dtype.newbyteorder("=") != dtype or a.ndim != len(shape):
                from lazyk.errors import TypeMatchError

                raise TypeMatchError(f"input {self.labels[i]!r}: expected "
                                     f"{type_text(shape, dtype)}, got "
                                     f"{type_text(a.shape, a.dtype)}")
            data[name] = a
        for i, ax, sym in self._symbols:
            n = data[self.params[i]].shape[ax]
            seen = sizes.setdefault(sym, (self.labels[i], n))
            if seen[1] != n:
                raise ShapeError(f"dimension {sym} is {seen[1]} in {seen[0]!r} but {n} in "
                                 f"{self.labels[i]!r} (axis {ax})")
        return data

    def _setup_fast(self) -> None:
        """Precompute the one-kernel elementwise fast path (the common `k(a, b, out=c)`)."""
        self._fast = None
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
        self._src_type = ctypes.c_void_p * max(len(step.inputs), 1)

    def _call_fast(self, inputs: tuple, out: Any):
        """One kernel, same-shape native aligned inputs: dict lookups and one C call."""
        order, spec, dtype, dtypes, ndims = self._fast
        shape = None
        for a, dt, nd in zip(inputs, dtypes, ndims):
            if type(a) is not np.ndarray or a.dtype != dt or a.ndim != nd \
                    or not a.flags.aligned or (shape is not None and a.shape != shape):
                return None
            shape = a.shape
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
        return out

    def __del__(self) -> None:
        geom = getattr(self, "_geom", None)
        if geom:
            try:
                _release(list(geom.values()))
            except Exception:  # pragma: no cover  (interpreter shutdown)
                pass
            geom.clear()

    def __call__(self, *inputs, out: Any = None, casting: str = "same_kind"):
        """Bind the inputs and run the kernels; returns a new NumPy array or `out`."""
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

    def explain(self) -> str:
        """The explain text of the underlying expression."""
        return self.expr.explain()


def _as_input(x: Any) -> np.ndarray:
    if isinstance(x, (int, float, complex, np.generic)):
        return np.asarray(x)
    if hasattr(x, "__cuda_array_interface__"):  # issue 6: stays on the GPU, no host copy
        from lazyk.device import as_device_array

        return as_device_array(x)
    return _as_out(x)


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

"""`lazyk.compile`: an expression planned once, then called on new inputs (`CompiledExpr`).

Planning (passes, fusion, kernel specs) happens at compile time; a call checks the inputs
against the parameter types. On the one-kernel path a call whose arrays have the geometry of
a recent call (type, dtype, flags, shape, strides; no partial overlap with `out`) is one
foreign call into a native guard that checks all that and runs the kernel (~1 us at n = 1).
"""
from __future__ import annotations

import ctypes
import hashlib
import threading
from typing import Any

import numpy as np

from lazyk import types as _T
from lazyk.arrays.array import Array, is_foreign, is_pandas, masked
from lazyk.arrays.array import array as _array
from lazyk.arrays.buffers import offsets_array, regular, text_array, text_from_numpy
from lazyk.arrays.columns import columns, fixed_text_rows
from lazyk.errors import (
    BindError,
    CastingError,
    NotSupportedError,
    ShapeError,
    TypeMatchError,
    UnsupportedOperandError,
)
from lazyk.frontend.expr import (
    NEGATIVE_INT_POWER,
    Expr,
    Placeholder,
    as_expr,
    check_dtype,
    leaf_data,
)
from lazyk.frontend.graph import Node, arg_key, build_type, has_rows, toposort, type_text
from lazyk.frontend.leaves import (
    OwnedView,
    RaggedLeaf,
    RaggedPlaceholder,
    is_dask_array,
    is_text,
    text_element,
    text_rows,
    text_view,
)
from lazyk.frontend.ops import BYTES, dtype_text, text_dtype
from lazyk.frontend.ops import STRING as _STRING_ELEMENT
from lazyk.kernel import abi
from lazyk.kernel import flat as _kernel
from lazyk.kernel.dispatch import GUARD_OK, guard_fn, threaded_run
from lazyk.kernel.flat import data_pointer, run_layout
from lazyk.runtime import ragged as _ragged
from lazyk.runtime import ragged_bind as _ragbind
from lazyk.runtime import row_steps as _rows
from lazyk.runtime.device import as_device_array, on_gpu
from lazyk.runtime.device import run_program as run_on_device
from lazyk.runtime.launch import (
    CASTINGS,
    THREAD_MIN,
    as_out,
    broadcast_strides,
    empty_out,
    needs_temporary,
    out_strides,
    plan,
    power_check,
    prepare,
    run_program,
    truth,
)
from lazyk.runtime.nest_launch import prepare as prepare_launch
from lazyk.runtime.nest_select import needs_nest
from lazyk.types.parse import dshape


def signature_text(params: list[tuple[str, str]], result: str) -> str:
    """Datashape function type text: `(a: N * float64, b: N * float64) -> N * float64`."""
    return "(" + ", ".join(f"{n}: {t}" for n, t in params) + ") -> " + result


class CompiledExpr:
    """A planned expression callable on new inputs: `k(a, b, out=None)`.

    Planning (passes, fusion, kernel specs) happens once here; a call checks the
    inputs against the parameter types, binds shapes/strides and launches the kernels.
    `params` names the parameters (the placeholders) in call order; `constants` holds the
    arrays the expression captured, by input name: every call reads them (no copy is
    made, so an in-place change of one shows in later calls).
    """

    def __new__(cls, expr: Expr):
        # Var / option parameters (placeholders or arrays): the ragged evaluation path.
        # where() over strings too: it gives a string array (lazyk.runtime.text_steps.select_text);
        # and work only the loop nest runs (x[mask], x[positions], argmax)
        if cls is CompiledExpr and (any(_ragged_param(v) for v in expr.env.values()) or
                                    _ragged.has_text_where(expr) or has_rows(expr.node) or
                                    needs_nest(expr.node)):
            cls = RaggedCompiledExpr
        return object.__new__(cls)

    def __init__(self, expr: Expr):
        self.expr = expr
        self.program = plan(expr.node)
        self._capture(expr)
        self._types = []
        self._symbols: list[tuple[int, int, str]] = []
        for i, name in enumerate(self._slots):
            v = leaf_data(expr.env[name])
            shape, dtype = (v.shape, v.dtype)
            if not isinstance(v, Placeholder):
                dtype = dtype.newbyteorder("=")
            self._types.append((shape, dtype))
            for ax, d in enumerate(shape):
                if isinstance(d, str):
                    self._symbols.append((i, ax, d))
        shown = [(name, type_text(*t)) for name, t in zip(self.params, self._types)]
        self.labels = self.params
        self._names = self.params + tuple(f"captured array {k}"
                                          for k in range(len(self.constants)))
        self.signature = signature_text(shown, expr.node.type_text())
        self._setup_fast()
        self._setup_power_check()

    def _setup_power_check(self) -> None:
        """A kernel cannot raise: the exponents of integer powers that may be negative are
        checked before each call by a compiled reduction over them (NumPy's ValueError)."""
        check = power_check(self.expr)
        self._pcheck = None if check is None else (
            CompiledExpr(check),
            tuple(self.params.index(n) for n in dict.fromkeys(_leaf_order(check.node))))

    def check_powers(self, inputs: tuple, casting: str = "same_kind") -> None:
        """ValueError when an integer power's exponent holds a negative value for these
        inputs (in parameter order)."""
        k, at = self._pcheck
        try:
            negative = truth(k(*[inputs[i] for i in at], casting=casting))
        except ValueError as e:
            if str(e) == NEGATIVE_INT_POWER:  # an exponent's own exponent
                raise
            return  # inputs the call itself refuses, naming its own parameters
        except (TypeError, NotImplementedError):
            return
        if negative:
            raise ValueError(NEGATIVE_INT_POWER)

    def _capture(self, expr: Expr) -> None:
        """Parameters (placeholders, by name) and constants (the arrays the expression
        captured), each in order of first appearance in the graph the user wrote."""
        names = tuple(dict.fromkeys(_leaf_order(expr.node)))
        self.params = tuple(n for n in names if _is_parameter(expr.env[n]))
        captured = tuple(n for n in names if not _is_parameter(expr.env[n]))
        # Calls run over the parameters, then the constants: `_slots` is that order.
        self._slots = self.params + captured
        self.constants = {n: _constant_value(expr.env[n]) for n in captured}
        self._captured = tuple(_constant_input(expr.env[n]) for n in captured)

    def _with_constants(self, inputs: tuple) -> tuple:
        """The call's inputs followed by the constants (bound once, at compile time)."""
        if len(inputs) != len(self.params):
            raise TypeError(f"expected {len(self.params)} input{'s' * (len(self.params) != 1)}"
                            f" {self.signature}, got {len(inputs)} (the arrays the expression "
                            "captured are constants, not inputs)")
        return tuple(inputs) + self._captured

    def __repr__(self) -> str:
        return f"<lazyk.CompiledExpr {self.signature}>"

    # --- pickling and Dask tokens: the graph and parameter types, no machine code ---
    def _state(self) -> tuple:
        """(nodes, leaves, constants): the graph in topological order with the captured
        arrays renamed `$k`, every parameter's (name, shape, dtype, True) and every
        constant's (`$k`, its array). Small (but for the constants' data) and picklable."""
        state = self.__dict__.get("_state_cache")
        if state is None:
            rename = {name: name for name in self.params}
            rename.update({name: f"${k}" for k, name in enumerate(self.constants)})
            order = toposort(self.expr.node)
            index = {id(n): k for k, n in enumerate(order)}
            nodes = tuple((n.op, dtype_text(n.dtype), n.shape, tuple(index[id(x)] for x in n.srcs),
                           rename[n.arg] if n.op == "input" else n.arg) for n in order)
            leaves = tuple((name, t[0], dtype_text(t[1]), True)
                           for name, t in zip(self.params, self._types))
            consts = tuple((rename[name], v) for name, v in self.constants.items())
            state = self._state_cache = (nodes, leaves, consts)
        return state

    def __reduce__(self):
        # Pickles as graph + signature + the constants' data (no ctypes); the receiver plans
        # once per process and its kernels come from the in-memory or on-disk cache.
        return (_restore, self._state())

    def __dask_tokenize__(self) -> tuple:
        """A deterministic token: equal for equal expressions (and equal constants), in
        every process."""
        token = self.__dict__.get("_token")
        if token is None:
            token = self._token = _state_token(self._state(), self.signature)
        return ("lazyk.CompiledExpr", token)

    def _bind_inputs(self, inputs: tuple, casting: str = "same_kind",
                     hint: str = "pass casting='unsafe' to convert anyway") -> dict:
        if len(inputs) != len(self._slots):
            raise TypeError(f"expected {len(self._slots)} inputs {self.signature}, got "
                            f"{len(inputs)}")
        data = {}
        for i, (name, x) in enumerate(zip(self._slots, inputs)):
            shape, dtype = self._types[i]
            if type(x) is not np.ndarray and (isinstance(x, (np.ma.MaskedArray, Array)) or
                                              is_foreign(x) or is_pandas(x)):
                x = self._present_input(i, x)  # missing values never dropped
            a = x if isinstance(x, np.ndarray) and x.dtype not in _TEXT_ELEMENTS \
                else _as_input(x)
            exact = _exact_ints(x, a) if isinstance(x, (list, tuple)) and \
                a.dtype.kind in "fO" and dtype.kind in "iu" else None  # ints past int64
            if a.dtype == object and isinstance(x, (list, tuple)) and exact is None:
                # None in a list: missing values, named as such (or a value lazyk refuses)
                x = self._present_input(i, _array(x))
                a = _as_input(x)
            if exact is not None:
                a = exact
            if isinstance(x, (list, tuple, int)) and (a.dtype.kind in "iu" or exact is not None) \
                    and a.size and dtype.kind in "iu":
                _check_range(self.labels[i], a, dtype)
                if casting != "no":  # Python integers that fit: their values exactly
                    a = a.astype(dtype)
            if a.ndim != len(shape):
                raise TypeMatchError(f"input {self._names[i]!r}: expected "
                                     f"{type_text(shape, dtype)}, got "
                                     f"{type_text(a.shape, a.dtype)}")
            if isinstance(x, (list, tuple)) and not a.size and a.dtype != dtype:
                a = a.astype(dtype)  # `[]`: no numbers, no element type to refuse
            if a.dtype.newbyteorder("=") != dtype:  # either byte order runs as it is
                a = self._cast_input(i, a, dtype, casting, hint)
            data[name] = a
        self._check_shapes([data[name].shape for name in self._slots])
        return data

    def _present_input(self, i: int, x: Any) -> Any:
        """A masked / pyarrow / Awkward / lazyk input for a parameter without `?`: its
        values when none is missing, else TypeMatchError (never a silent fill)."""
        got = _present_values(x)
        if got is not None:
            return got
        x = _array(x) if not isinstance(x, Array) else x
        shape, dtype = self._types[i][:2]
        raise TypeMatchError(f"input {self.labels[i]!r}: the input ({x.type}) has missing "
                             f"values; the parameter {type_text(shape, dtype)} has none: "
                             f"fill them first, or declare the parameter "
                             f"?{type_text((), dtype)} (lazyk.placeholder({self._names[i]!r}, "
                             f"{_typed_text(shape, dtype, True)!r})): {self.signature}")

    def _cast_input(self, i: int, a: np.ndarray, dtype: np.dtype, casting: str,
                    hint: str = "pass casting='unsafe' to convert anyway") -> np.ndarray:
        """`a` converted to its parameter's dtype if `casting` allows (numexpr's rule)."""
        if is_text(dtype):  # a string parameter: never converted
            raise TypeMatchError(f"input {self._names[i]!r}: expected "
                                 f"{type_text(self._types[i][0], dtype)}, got "
                                 f"{type_text(a.shape, a.dtype)}: {self.signature}")
        try:
            check_dtype(a.dtype, "input")
        except UnsupportedOperandError as err:
            raise UnsupportedOperandError(f"input {self._names[i]!r}: {err}") from None
        if not np.can_cast(a.dtype, dtype, casting):
            raise CastingError(f"input {self._names[i]!r}: cannot cast {a.dtype} to the "
                               f"parameter's {dtype} under casting={casting!r} ({hint}): "
                               f"{self.signature}")
        return a.astype(dtype)

    def _by_name(self, inputs: tuple, named: dict) -> tuple:
        """Positional and keyword arguments to one tuple in parameter order, as Python
        binds a call: TypeError naming unknown, repeated or missing parameters."""
        labels = self.labels
        if len(inputs) > len(labels):
            raise TypeError(f"expected at most {len(labels)} inputs {self.signature}, got "
                            f"{len(inputs)}")
        unknown = [k for k in named if k not in labels]
        if unknown:
            raise TypeError(f"unexpected keyword argument(s) {', '.join(map(repr, unknown))}; "
                            f"the parameters are {self.signature}")
        twice = [k for k in labels[:len(inputs)] if k in named]
        if twice:
            raise TypeError(f"got multiple values for parameter(s) "
                            f"{', '.join(map(repr, twice))} (positional and by name)")
        missing = [k for k in labels[len(inputs):] if k not in named]
        if missing:
            raise TypeError(f"missing input(s) {', '.join(map(repr, missing))}: "
                            f"{self.signature}")
        return tuple(inputs) + tuple(named[k] for k in labels[len(inputs):])

    def _check_shapes(self, shapes: list) -> None:
        """Every input's shape against its parameter: fixed sizes equal, symbols agree."""
        sizes: dict[str, tuple[str, int, int]] = {}
        for i, shape in enumerate(shapes):
            for ax, (want, n) in enumerate(zip(self._types[i][0], shape)):
                if isinstance(want, str):
                    seen = sizes.setdefault(want, (self._names[i], ax, n))
                    if seen[2] != n:
                        raise ShapeError(
                            f"dimension {want} is {seen[2]} in {seen[0]!r} (axis {seen[1]}) "
                            f"but {n} in {self._names[i]!r} (axis {ax}); signature "
                            f"{self.signature}")
                elif want != n:
                    raise ShapeError(
                        f"input {self._names[i]!r}: axis {ax} has size {n}, the signature "
                        f"says {want}: {self.signature}")

    def _setup_fast(self) -> None:
        """Precompute the one-kernel elementwise fast path (the common `k(a, b, out=c)`)."""
        self._fast = self._red = None
        # Native guards: (guard address, guard fn, keep-alive, geometry key), one
        # for calls with `out=` and one for fresh outputs (+ shape, dtype to allocate).
        self._g_out = self._g_new = None
        self._t_out = self._t_new = None  # the same for threaded sizes (+ the pool record)
        self._gfn = None
        self._nin = len(self._slots)
        steps = self.program.steps
        if len(steps) != 1 or steps[0].mean:
            return
        if any(t[1] in _TEXT_ELEMENTS for t in self._types):
            return  # string inputs: the general path makes their element views (_as_input)
        step = steps[0]
        # A reduction (e.g. `sum(a*b)`) takes this path too: its output has stride 0 along the
        # reduced axes and the kernel folds into it (a mean's division stays on the general path).
        self._red = None if step.axes is None else (step.axes, step.keepdims)
        if not all(isinstance(r, str) for r in step.inputs):
            return
        where = {name: k for k, name in enumerate(self._slots)}
        self._consts = step.consts  # the constants' values, written into kernel data
        self._fast = (tuple(where[r] for r in step.inputs), step.spec, step.dtype,
                      tuple(t[1] for t in self._types), tuple(len(t[0]) for t in self._types))
        self._geom: dict = {}
        self._threaded: dict = {}  # geometry key -> dispatch.ThreadedRun
        self._valid_shapes: dict = {}  # input shapes checked against types -> broadcast shape
        self._src_type = ctypes.c_void_p * max(len(step.inputs), 1)
        if (GUARD_OK and sorted(self._fast[0]) == list(range(len(self._slots)))
                and len(step.spec.outputs) == 1):
            self._gfn = guard_fn(1 + len(self._slots))

    def _install_guard(self, key: tuple, entry: tuple, out: np.ndarray, inputs: tuple,
                       fresh: bool) -> None:
        """Remember this geometry in a native guard, so the next call is one foreign call."""
        old = self._g_new if fresh else self._g_out
        if old is not None and old[3] == key:
            return  # the guard refused these arrays (e.g. overlapping extents): keep it
        ops = (out, *inputs)
        if any(a.ndim > abi.GUARD_MAXND for a in ops):
            return
        _, _, compiled, _, kd_address, size, offs = entry
        buf = abi.make_guard(compiled.single_address, kd_address, offs, ops,
                             self._fast[1].aligned, self._fast[0], may_alias=self._red is None)
        # Mid-size kernels release the GIL while they run (a slower foreign call, ~2 us).
        fn = self._gfn if size <= _GUARD_MAX else guard_fn(len(ops), nogil=True)
        # NOTE: dtype objects are compared by identity; the guard keeps them alive.
        g = (ctypes.addressof(buf), fn, (buf, entry, tuple(a.dtype for a in ops)), key)
        if fresh:
            self._g_new = g + (out.shape, out.dtype)
        else:
            self._g_out = g

    def _install_tguard(self, key: tuple, tr: Any, out: np.ndarray, inputs: tuple,
                        fresh: bool) -> None:
        """A native guard for threaded sizes: it checks the geometry (as for small sizes) and
        runs the cached pool record `tr` on the new data, all in one foreign call."""
        old = self._t_new if fresh else self._t_out
        if old is not None and old[3] == key and old[4] is tr:
            return
        ops = (out, *inputs)
        if any(a.ndim > abi.GUARD_MAXND for a in ops):
            return
        buf = abi.make_guard(tr._native.record_go_address, tr.address, tr.offs, ops,
                             self._fast[1].aligned, self._fast[0], mode=abi.GUARD_RECORD)
        # NOTE: dtype objects are compared by identity; the guard keeps them alive.
        g = (ctypes.addressof(buf), self._gfn, (buf, tuple(a.dtype for a in ops)), key, tr)
        if fresh:
            self._t_new = g + (out.shape, out.dtype)
        else:
            self._t_out = g

    def _call_fast(self, inputs: tuple, out: Any):
        """One kernel, native aligned inputs (broadcasting allowed): dict lookups and one C call."""
        order, spec, dtype, dtypes, ndims = self._fast
        for a, dt, nd in zip(inputs, dtypes, ndims):
            if type(a) is not np.ndarray or a.dtype != dt or a.ndim != nd \
                    or not a.flags.aligned:
                return None
        shapes = tuple(a.shape for a in inputs)
        shape = self._valid_shapes.get(shapes)
        if shape is None:
            # New input shapes: checked against the signature and broadcast once, then a
            # dict lookup (broadcasting operands such as `a2*r + k` stay on this path).
            self._check_shapes(list(shapes))
            try:
                shape = np.broadcast_shapes(*shapes)
            except ValueError:
                return None  # the general path raises the ShapeError naming the operands
            if len(self._valid_shapes) > 64:
                self._valid_shapes.clear()
            self._valid_shapes[shapes] = shape
        fresh = out is None
        red = self._red
        oshape = shape
        if red is not None:
            axes, keepdims = red
            if any(shape[d] == 0 for d in axes):
                return None  # the general path writes the identity or raises as NumPy does
            oshape = tuple((1 if d in axes else n) for d, n in enumerate(shape)
                           if keepdims or d not in axes)
        if not fresh and (type(out) is not np.ndarray or out.dtype != dtype
                          or out.shape != oshape or not out.flags.writeable
                          or not out.flags.aligned
                          or needs_temporary(out, list(inputs), red is not None)):
            return None
        arrays = [inputs[k] for k in order]
        # A fresh output is C-contiguous, so its strides need not be part of the key.
        key = (shapes, None if fresh else out.strides, tuple(a.strides for a in arrays))
        entry = self._geom.get(key)
        if entry is None:
            if fresh:
                out = np.empty(oshape, dtype)
            if len(self._geom) > 64:
                self._g_out = self._g_new = None  # guards point into these entries
                self._t_out = self._t_new = None
                self._geom.clear()
                self._threaded.clear()
            if red is None:
                ost, reduced = broadcast_strides(shape, out.shape, out.strides), (False,) * len(shape)
            else:
                ost = out_strides(out, shape, *red)
                reduced = tuple(d in red[0] for d in range(len(shape)))
            st = (ost,) + tuple(broadcast_strides(shape, a.shape, a.strides) for a in arrays)
            entry = prepare(spec, shape, st, reduced, self._consts)
            entry = self._geom.setdefault(key, entry)
        _, layout, compiled, kd, kd_address, size, offs = entry
        if out is None:
            # Small outputs: plain np.empty (0.4 us); large ones reuse pre-faulted blocks.
            out = (np.empty(oshape, dtype) if size < THREAD_MIN or red is not None
                   else empty_out(shape, dtype))
        if size == 0:
            return out
        if red is not None:
            return self._run_reduce(key, entry, out, arrays, inputs, fresh)
        if size >= THREAD_MIN:
            # Repeated threaded call: a record per geometry with everything but the
            # data pointers filled in; one foreign call into the pool.
            tr = self._threaded.get(key)
            if tr is not None and tr(out, arrays):
                if self._gfn is not None:
                    self._install_tguard(key, tr, out, inputs, fresh)
                return out
            run_layout(spec, layout, out, arrays, self._consts)
            if tr is None or tr.stale():
                tr = threaded_run(spec, layout, self._consts)
                if tr is not None:
                    if len(self._threaded) > 64:
                        self._threaded.clear()
                    self._threaded[key] = tr
            return out
        src = self._src_type(
            *[data_pointer(a) + offs[k + 1] for k, a in enumerate(arrays)])
        compiled.single(data_pointer(out) + offs[0], ctypes.addressof(src), kd_address)
        if self._gfn is not None:
            self._install_guard(key, entry, out, inputs, fresh)
        return out

    def _run_reduce(self, key: tuple, entry: tuple, out: np.ndarray, arrays: list,
                    inputs: tuple, fresh: bool) -> np.ndarray:
        """A reduction on the fast path: threaded sizes go to the kernel stage (per-thread
        partials, combined there); small ones run here and get a native guard."""
        spec, layout, compiled, _, kd_address, size, offs = entry
        if size >= THREAD_MIN:
            run_layout(spec, layout, out, arrays, self._consts)
            return out
        src = self._src_type(
            *[data_pointer(a) + offs[k + 1] for k, a in enumerate(arrays)])
        compiled.single(data_pointer(out) + offs[0], ctypes.addressof(src), kd_address)
        if self._gfn is not None:  # a reduction's guard refuses any overlap with out
            self._install_guard(key, entry, out, inputs, fresh)
        return out

    def __call__(self, *inputs, out: Any = None, casting: str = "same_kind", **named):
        """Bind the inputs and run the kernels; returns a new NumPy array or `out`.

        Inputs are positional, by parameter name (`k(a=x, b=y)`), or both as in a Python
        call. An input of another numeric dtype is converted to its parameter's dtype when
        `casting` allows it (default 'same_kind': int64 or float32 into float64 yes,
        float64 into int32 no, CastingError); `casting` also governs storing into `out`.
        """
        if casting != "same_kind" and casting not in CASTINGS:
            raise ValueError(f"casting must be one of {', '.join(map(repr, CASTINGS))}; got "
                             f"{casting!r}")
        if named:
            inputs = self._by_name(inputs, named)
        if self._pcheck is not None and len(inputs) == len(self.params) and not any(
                is_dask_array(x) for x in inputs):  # (Dask: each block is checked)
            self.check_powers(inputs, casting)
        if self._captured:
            inputs = self._with_constants(inputs)
        if len(inputs) == self._nin:
            # Same geometry as a recent call: the native guard checks type, dtype, flags,
            # shape, strides and overlap, and runs the kernel (no graph, no LLVM, no bind).
            if out is None:
                g = self._g_new
                if g is not None:
                    o = np.empty(g[4], g[5])
                    if g[1](g[0], o, *inputs) == 0:
                        return o
                g = self._t_new
                # NOTE: check staleness before allocating: a second large allocation per call
                # (one dropped) made glibc fault fresh pages every call (1e5: 43 -> 480 us).
                if g is not None and not g[4].stale():
                    o = empty_out(g[5], g[6])
                    if g[1](g[0], o, *inputs) == 0:
                        return o
            else:
                g = self._g_out
                if g is not None and g[1](g[0], out, *inputs) == 0:
                    return out
                g = self._t_out
                if g is not None and g[1](g[0], out, *inputs) == 0:
                    return out
        if self._fast is not None and len(inputs) == len(self._slots):
            done = self._call_fast(inputs, out)
            if done is not None:
                return done
        if any(is_dask_array(x) for x in inputs):  # a lazy Dask array, one blockwise layer
            if _dask_call is None:
                raise NotSupportedError("calling a compiled expression on Dask arrays needs "
                                        "`import lazyk.dask` (pip install 'lazyk[dask]')")
            return _dask_call(self, inputs[:len(self.params)], out)
        if len(inputs) == len(self._slots):  # strs for string parameters: a string array
            inputs = tuple(_text_input(x) if t[1] in _TEXT_ELEMENTS else x
                           for x, t in zip(inputs, self._types))  # held for the call
        data = self._bind_inputs(inputs, casting)
        if on_gpu(data):  # GPU inputs run there
            return run_on_device(self.program, data, out)
        if out is None:
            return run_program(self.program, data)
        target = as_out(out)
        run_program(self.program, data, target, casting=casting)
        return out

    def bind(self, out: Any, *inputs: Any, **named: Any) -> Any:
        """Step 2 of the three-step flow: kernel data for these arrays, no LLVM.

        Inputs are positional or by parameter name, as in a call. Returns a
        `lazyk.kernel.flat.BoundKernel`: `ck()` executes and returns `out`, `ck.address` is the
        `ckernel_prefix *` a C caller can run. Only for one-kernel elementwise expressions.
        The bound kernel reads the very arrays given, so inputs are never converted: an
        input of another dtype raises CastingError (convert it first, or call the compiled
        expression, which converts under `casting=`). `ck()` raises NumPy's ValueError when
        an integer power's exponent is negative then; a C caller of `ck.address` runs the
        kernel alone (such exponents give base ** (e mod 2**w) there).
        """
        if "casting" in named and "casting" not in self.params:
            raise TypeError("bind() takes no casting=: it converts no input (the bound "
                            "kernel reads the very arrays given); pass arrays of the "
                            "parameters' dtypes, or call the compiled expression")
        if named:
            inputs = self._by_name(inputs, named)
        if self._captured:
            inputs = self._with_constants(inputs)
        if self._fast is None or self._red is not None:
            raise NotSupportedError(
                f"bind() needs a one-kernel elementwise expression; {self.signature} "
                f"runs {len(self.program.steps)} step(s): call the compiled expression instead")
        # the bound kernel reads these very arrays: a converted copy would never see changes
        data = self._bind_inputs(inputs, "no", "bind() converts no input: pass an array of "
                                 "the parameter's dtype, or call the compiled expression")
        arrays = [data[self._slots[k]] for k in self._fast[0]]
        ck = _kernel.bind(self._fast[1], as_out(out), *arrays, params=self._consts)
        ck.out = out  # returned by each call, as a bound ragged call returns its out
        if self._pcheck is not None:  # each call checks the arrays bound, as they are then
            bound = tuple(data[p] for p in self.params)
            ck.before = lambda: self.check_powers(bound, "no")
        return ck

    def explain(self) -> str:
        """The explain text of the underlying expression."""
        return self.expr.explain()


# ---------------------------------------------------------------- repeated calls: native guard
# Up to this size the guard runs the kernel with the GIL held (the cheapest foreign call);
# larger single-threaded kernels take the guard entry that releases it.
_GUARD_MAX = 1 << 13


# `lazyk.dask` installs its `call_compiled` here when imported (Dask is an optional extra).
_dask_call: Any = None


def install_dask(call: Any) -> None:
    """Run calls with Dask array inputs through `call(compiled, inputs, out)` (lazyk.dask)."""
    global _dask_call
    _dask_call = call


def _present_values(x: Any) -> Any:
    """A masked / pyarrow / Awkward / pandas / lazyk input as a lazyk Array (read as
    lazyk.array reads it) or, for `?T` elements of which none is missing, their values; None
    where a value is missing."""
    if isinstance(x, np.ma.MaskedArray):
        if not np.ma.getmaskarray(x).any():
            return np.asarray(x.data)
        x = _array(x)
    elif not isinstance(x, Array):
        x = _array(x)  # as lazyk.from_arrow / lazyk.from_awkward read it
    if not _has_option(x.type):
        return x
    if not isinstance(x.type, _T.FixedDim):
        return None  # (columns need a leading fixed dim)
    tree = columns(x)
    if tree[0] == "option" and tree[2][0] == "numpy" and tree[1].all():
        return tree[2][1]  # `?T` type, every value present
    return None


def _refuse_lazy(x: Any) -> None:
    """A lazy Dask collection other than a Dask array (lazyk.dask's RaggedArray): TypeError
    saying how to run it."""
    if hasattr(x, "__dask_graph__") and not is_dask_array(x):
        cls = type(x)
        raise TypeError(f"a compiled expression cannot take a {cls.__module__}."
                        f"{cls.__qualname__} (a lazy Dask collection): build the expression "
                        "on it and run lazyk.dask.evaluate(expr), or call .compute() on it "
                        "first")


def _as_input(x: Any) -> np.ndarray:
    _refuse_lazy(x)
    if is_pandas(x):  # as lazyk.array reads it
        x = _array(x)
    if isinstance(x, (int, float, complex, np.generic)):
        return np.asarray(x)
    if hasattr(x, "__cuda_array_interface__"):  # stays on the GPU, no host copy
        return as_device_array(x)
    if isinstance(x, (list, tuple)):
        return np.asarray(x)
    if isinstance(x, Array) and x.type.dtype in (_STRING, _BYTES):  # {begin, size} elements
        return text_view(x)  # the caller holds `x` for the call
    if isinstance(x, np.ndarray) and x.dtype in _TEXT_ELEMENTS:  # pointers: never trusted
        raise UnsupportedOperandError(f"inputs must be NumPy or lazyk arrays: {x.dtype} "
                                      "NumPy records are not string arrays")
    if isinstance(x, np.ndarray) or hasattr(x, "to_numpy"):
        return as_out(x, None)
    raise TypeError(f"inputs must be NumPy or lazyk arrays, lists or scalars, "
                    f"not {type(x).__name__}")


def _exact_ints(x: Any, a: np.ndarray) -> np.ndarray | None:
    """Nested lists of Python ints (of `a`'s shape) as an object array, else None (NumPy
    makes float64 or object arrays of ints past int64)."""
    exact = np.array(x, dtype=object)
    if exact.shape == a.shape and all(type(v) is int for v in exact.reshape(-1)):
        return exact
    return None


def _check_range(label: str, a: np.ndarray, dtype: np.dtype) -> None:
    """Python integers for an integer parameter must fit it (as in lazyk.array), never
    wrap around."""
    if not a.size:
        return
    info = np.iinfo(dtype)
    lo, hi = a.min(), a.max()
    if lo < info.min or hi > info.max:
        bad = lo if lo < info.min else hi
        raise CastingError(f"input {label!r}: the value {int(bad)} does not fit the "
                           f"parameter's {dtype} ({info.min} to {info.max})")


def _leaf_values(value: Any) -> np.ndarray:
    """The numbers of an input (a NumPy array or ragged leaf; missing ones read as 0)."""
    if isinstance(value, np.ndarray):
        return value.reshape(-1)
    tree = columns(value.array)
    while tree[0] in ("option", "list", "regular"):
        tree = tree[2]
    return tree[1].reshape(-1) if tree[0] == "numpy" else np.zeros(0)


def _has_option(t: Any) -> bool:
    """Whether a lazyk type has missing values (`?T` or `?var`) at any level."""
    while isinstance(t, (_T.FixedDim, _T.VarDim, _T.Option)):
        if isinstance(t, _T.Option):
            return True
        t = t.elem
    return False


def _text_input(x: Any) -> Any:
    """Lists of str (or bytes), NumPy `U` (or `S`) arrays and pandas columns as a lazyk
    `string` (`bytes`) array (a copy), lazyk `fixed_bytes[n]` arrays as `bytes` (over the
    same bytes); other inputs as they are."""
    if isinstance(x, Array):
        elem = x.type.dtype
        if isinstance(elem.elem if isinstance(elem, _T.Option) else elem, _T.FixedBytes):
            return fixed_text_rows(x)
    if isinstance(x, np.ndarray) and x.dtype.kind in "US" and 0 not in x.shape[1:]:
        return text_from_numpy(x)
    if isinstance(x, np.ndarray) and x.dtype.kind in "US":
        kind = "string" if x.dtype.kind == "U" else "bytes"
        return _array(x.tolist(), type=" * ".join([*map(str, x.shape), kind]))
    if isinstance(x, (list, tuple)) or is_pandas(x):
        return _array(x)
    return x


_STRING, _BYTES = dshape("string"), dshape("bytes")
# string / bytes element types and their `{begin, size}` dtypes (string parameters)
_TEXT_TYPES = (_STRING, dshape("?string"), _BYTES, dshape("?bytes"))
_TEXT_ELEMENTS = (_STRING_ELEMENT, BYTES)
_restored: dict = {}
_restored_lock = threading.Lock()


def _restore(nodes: tuple, leaves: tuple, consts: tuple = ()) -> CompiledExpr:
    """Unpickle: rebuild the graph and plan it, once per process for each expression."""
    key = _state_token((nodes, leaves, consts))
    hit = _restored.get(key)
    if hit is not None:
        return hit
    built: list[Node] = []
    for op, dt, shape, srcs, arg in nodes:
        built.append(Node(op, text_dtype(dt), shape, tuple(built[k] for k in srcs), arg))
    env: dict = {}
    for name, shape, dt, _, *option in leaves:
        dtype = text_dtype(dt)
        rows = tuple(option[1]) if len(option) > 1 else ()  # `?var` dims
        option = bool(option and option[0])
        if option or "var" in shape:  # a var / option parameter
            env[name] = RaggedPlaceholder(name, shape, dtype, option, rows)
        else:
            env[name] = Placeholder(name, shape, dtype)
    for name, value in consts:  # a captured array: its env entry, as the expression had it
        env[name], = as_expr(value).env.values()
    k = CompiledExpr(Expr(built[-1], env))
    with _restored_lock:
        if len(_restored) > 256:
            _restored.clear()
        return _restored.setdefault(key, k)


def _state_token(state: tuple, *extra: Any) -> str:
    """A digest of `CompiledExpr._state()` (the constants by their values)."""
    nodes, leaves, consts = state
    h = hashlib.sha256(repr(([(op, dt, shape, srcs, arg_key(arg))
                              for op, dt, shape, srcs, arg in nodes], leaves, extra)).encode())
    for name, value in consts:
        h.update(name.encode())
        if isinstance(value, np.ndarray):
            h.update(repr((value.dtype.str, value.shape)).encode())
            h.update(np.ascontiguousarray(value).tobytes())
        else:  # a lazyk array: its type and values
            h.update(repr((str(value.type), value.to_list())).encode())
    return h.hexdigest()


def _is_parameter(v: Any) -> bool:
    """Whether an env entry is a parameter of a compiled expression (a placeholder, or a
    Dask array's leaf); anything else is an array the expression captured."""
    return isinstance(leaf_data(v), Placeholder)


def _constant_value(v: Any) -> Any:
    """A captured array as the user gave it: the NumPy array, or the lazyk array."""
    if isinstance(v, OwnedView):
        return v.owner
    return v.array if isinstance(v, RaggedLeaf) else v


def _constant_input(v: Any) -> Any:
    """A captured array in the form a call passes it on: a NumPy view (numeric data keeps
    the fast path), else the lazyk array it comes from (strings, var / option data)."""
    if isinstance(v, OwnedView):
        return v.view if v.view.dtype not in _TEXT_ELEMENTS else v.owner
    return v.array if isinstance(v, RaggedLeaf) else v


def _ragged_param(v: Any) -> bool:
    """Whether an env entry is a var / option parameter (placeholder or lazyk array)."""
    return isinstance(v, (RaggedPlaceholder, RaggedLeaf))


def _typed_text(shape: tuple, dtype: np.dtype, option: bool, rows: tuple = ()) -> str:
    return str(build_type(shape, dtype, rows, option))


def _rows_of(t: Any) -> tuple:
    """A flag per dim of a lazyk type: whether it is `?var` (missing rows)."""
    rows = []
    while isinstance(t, (_T.FixedDim, _T.VarDim)) or (
            isinstance(t, _T.Option) and isinstance(t.elem, _T.VarDim)):
        rows.append(isinstance(t, _T.Option))
        t = t.elem.elem if rows[-1] else t.elem
    return tuple(rows)


def _input_type(x: Any) -> tuple[tuple, np.dtype, bool, Any, str, tuple]:
    """(dims with "var", dtype, option, env value, type text, `?var` flag per dim) of a
    call's input: a lazyk Array (var / option ones become ragged leaves), a NumPy array,
    nested lists or a scalar."""
    _refuse_lazy(x)
    if isinstance(x, (list, tuple)) or is_pandas(x) or is_foreign(x) or \
            isinstance(x, np.ma.MaskedArray):
        x = _array(x)  # nested lists: lazyk infers var dims; masked / null entries `?T`
    x = _text_input(x)  # NumPy `U` strings: a string array
    if isinstance(x, Array):
        t, dims, rows = x.type, [], _rows_of(x.type)
        while isinstance(t, (_T.FixedDim, _T.VarDim)) or len(dims) < len(rows):
            t = t.elem if isinstance(t, _T.Option) else t
            dims.append(t.size if isinstance(t, _T.FixedDim) else "var")
            t = t.elem
        option = isinstance(t, _T.Option)
        elem = t.elem if option else t
        if text_element(elem) is not None:  # string / bytes elements: rows, or a view
            value = RaggedLeaf(x, option or any(rows)) if option or "var" in dims else \
                OwnedView(text_view(x), x)
            return tuple(dims), text_element(elem), option, value, str(x.type), rows
        if not isinstance(elem, _T.Scalar) or elem.kind not in "biufc":
            return tuple(dims), np.dtype("V8"), option, None, str(x.type), rows
        dtype = elem.to_numpy()
        if option or "var" in dims:
            return tuple(dims), dtype, option, RaggedLeaf(x, option or any(rows)), \
                str(x.type), rows
        x = x.to_numpy()
    if isinstance(x, (int, float, complex, np.generic)):
        x = np.asarray(x)
    if not isinstance(x, np.ndarray):
        raise TypeError(f"inputs must be lazyk arrays, NumPy arrays, lists or scalars, not "
                        f"{type(x).__name__} (Arrow and Awkward data: lazyk.from_arrow, "
                        "lazyk.from_awkward)")
    return x.shape, x.dtype, False, x, type_text(x.shape, x.dtype), (False,) * np.ndim(x)


def _var_rows(x: np.ndarray) -> RaggedLeaf:
    """A NumPy array as `outer * var * T` rows of its last dim's length (no copy of a
    C-contiguous array; O(1) offsets work beyond one arange)."""
    flat = np.ascontiguousarray(x).reshape(-1)
    nrows = int(np.prod(x.shape[:-1], dtype=np.int64))
    offsets = np.arange(nrows + 1, dtype=np.int64) * x.shape[-1]
    return RaggedLeaf(offsets_array(offsets, _array(flat), outer=x.shape[:-1], check=None),
                      False)


def _text_var_rows(value: OwnedView) -> RaggedLeaf:
    """A fixed lazyk string array as `outer * var * string` rows of its last dim's length
    (its `{begin, size}` elements are not copied when they lie in C order)."""
    x, v = value.owner, value.view
    if not v.flags.c_contiguous:  # a strided view: its strings packed again
        x = _array(x.to_list(), type=str(x.type))
        v = text_view(x)
    flat = Array.from_parts(f"{v.size} * {x.type.dtype}", (v.size, 16, x.meta[-1]),
                            v.__array_interface__["data"][0], x.owner, readonly=True)
    nrows = int(np.prod(v.shape[:-1], dtype=np.int64))
    offsets = np.arange(nrows + 1, dtype=np.int64) * v.shape[-1]
    return RaggedLeaf(offsets_array(offsets, flat, outer=v.shape[:-1], check=None), False)


def _all_present(x: Any, option: bool, rows: tuple, var: tuple) -> Any:
    """Input `x` (a lazyk Array) in its parameter's form: `?T` values when `option`, `?var`
    rows where `rows` says (every value and row present), fixed dims as var rows of one
    length where `var` says. The values and masks are new (vectorized, no Python per row);
    offsets and characters are reused."""
    return _present(columns(x), option, rows[1:], var[1:], len(x))


def _present(tree: tuple, option: bool, rows: tuple, var: tuple, count: int) -> Array:
    """`count`: the number of elements `tree` holds (rows of size 0 hold no values)."""
    mask = None
    if tree[0] == "option":
        mask, tree = tree[1], tree[2]
    if tree[0] in ("list", "regular"):
        inner = int(tree[1][-1]) if tree[0] == "list" else count * tree[1]
        child = _present(tree[2], option, rows[1:], var[1:], inner)
        if tree[0] == "regular" and var[:1] != (True,):
            return regular(child, tree[1])
        offsets = tree[1] if tree[0] == "list" else \
            np.arange(count + 1, dtype=np.int64) * tree[1]
        if rows[:1] == (True,) and mask is None:
            mask = np.ones(len(offsets) - 1, bool)
        return offsets_array(offsets, child, validity=mask, check=None)
    if option and mask is None:
        mask = np.ones(len(tree[2]) - 1 if tree[0] == "text" else len(tree[1]), bool)
    if tree[0] == "text":
        return text_array(tree[2], tree[3], mask, kind=tree[1])
    if tree[0] == "numpy":
        return _array(tree[1]) if mask is None else masked(tree[1], mask)
    raise NotSupportedError(f"missing values added to {tree[0]} data")


class RaggedCompiledExpr(CompiledExpr):
    """`lazyk.compile` of an expression with var / option parameters (a `CompiledExpr`).

    A call checks every input against its parameter type (dims, var dims, options, dtype
    under `casting`, symbols across inputs), then evaluates on the ragged path: the
    loop-nest kernels underneath are compiled once per structure (cached;
    never keyed on sizes), so new data of the same types compiles nothing. `bind(out,
    *inputs)` does the checks and count passes once for repeated calls on the same arrays
    (`lazyk.runtime.ragged_bind.RaggedBound`, or `StepsBound` for forms in several kernel steps).
    """

    def __init__(self, expr: Expr):
        self.expr = expr
        self.program = None
        self.params = tuple(dict.fromkeys(_leaf_order(expr.node)))
        # (dims with "var", native dtype, option, `?var` flag per dim) per parameter
        self._capture(expr)
        self._types = []
        shown = []
        for name in self._slots:
            v = leaf_data(expr.env[name])
            option = bool(getattr(v, "option", False))
            if isinstance(v, RaggedLeaf) and v.array.type.dtype in _TEXT_TYPES:
                shape, dtype = _ragged.describe(text_rows(v.array, nested=True))[0], \
                    text_element(v.array.type.dtype.elem if isinstance(
                        v.array.type.dtype, _T.Option) else v.array.type.dtype)
            elif isinstance(v, RaggedLeaf):
                shape, dtype = _ragged.describe(v.array)[:2]
            if isinstance(v, RaggedLeaf):
                rows = _rows_of(v.array.type)
                option = _input_type(v.array)[2]  # ?T values (not rows)
            else:
                shape, dtype = v.shape, v.dtype.newbyteorder("=")
                rows = (isinstance(v, RaggedPlaceholder) and v.rows) or (False,) * len(shape)
            self._types.append((tuple(shape), dtype, option, rows))
            shown.append((name, _typed_text(shape, dtype, option, rows)))
        self.labels = self.params
        self._names = self.params + tuple(f"captured array {k}"
                                          for k in range(len(self.constants)))
        self.signature = signature_text(shown[:len(self.params)], str(expr.type))
        self._fast = self._red = None
        self._nin = -1  # no native guard: every call goes through __call__'s checks
        self._setup_power_check()
        # the inputs' types (lazyk arrays, a call with the defaults) -> the `NestLaunch` a
        # call over arrays of those types runs (False: the general path)
        self._launches: dict = {}

    def _state(self) -> tuple:
        nodes, leaves, consts = super()._state()
        # options travel with the leaves (a fifth field, `?var` dims a sixth), var dims in
        # their shapes
        return nodes, tuple(leaf + (t[2], t[3]) for leaf, t in zip(leaves, self._types)), \
            consts

    def _bind_ragged(self, inputs: tuple, casting: str, copies: bool = True) -> dict:
        if self._captured:
            inputs = self._with_constants(inputs)
        elif len(inputs) != len(self.params):
            raise TypeError(f"expected {len(self.params)} inputs {self.signature}, got "
                            f"{len(inputs)}")
        env, sizes = {}, {}
        for i, (name, x) in enumerate(zip(self._slots, inputs)):
            want, dtype, option, want_rows = self._types[i]
            label = self._names[i]
            if not option and type(x) is not np.ndarray and (isinstance(
                    x, (np.ma.MaskedArray, Array)) or is_foreign(x) or is_pandas(x)):
                present = _present_values(x)  # `?T` data, none missing: its values
                x = x if present is None else present
            dims, got, got_option, value, text, qrows = _input_type(x)
            expected = _typed_text(want, dtype, option, want_rows)

            fixed_rows = isinstance(value, RaggedLeaf) and 0 not in dims and any(
                w == "var" and n != "var" for w, n in zip(want, dims))
            if value is not None and len(dims) == len(want) and not any(
                    q and not w for q, w in zip(qrows, want_rows)) and (
                    (option and not got_option) or tuple(qrows) != tuple(want_rows) or
                    fixed_rows) and not (got_option and not option):
                # `T` data for a `?T` parameter (`var` rows for `?var`, fixed rows for var):
                # a copy in the parameter's form, every value and row present
                a = value.array if isinstance(value, RaggedLeaf) else \
                    value.owner if isinstance(value, OwnedView) else _array(value)
                if not copies and (option and not got_option or
                                   tuple(qrows) != tuple(want_rows)):
                    raise BindError(f"input {label!r}: {text} has no missing values where "
                                    f"the parameter {expected} has them: bind() reads the "
                                    "very arrays bound, and this input would be a copy "
                                    "(every value present) whose later changes the bound "
                                    "call never sees; pass data of the parameter's type, "
                                    "or call the compiled expression")
                if isinstance(a.type, _T.FixedDim):
                    dims, got, got_option, value, _, qrows = _input_type(_all_present(
                        a, option, want_rows, tuple(w == "var" for w in want)))

            def mismatch(why: str):
                return TypeMatchError(f"input {label!r}: expected {expected}, got {text} "
                                      f"({why}): {self.signature}")
            if value is None:
                raise mismatch("numeric elements only")
            if got_option and not option:
                elem = _typed_text((), got, False)
                raise mismatch(f"missing values (?T): the input's elements are ?{elem}, "
                               f"the parameter's {elem}, never missing; fill or drop them, "
                               f"or declare the parameter ?{elem}")
            if len(dims) != len(want):
                raise mismatch(f"{len(dims)} dimensions, not {len(want)}")
            # fixed rows (NumPy, rectangular lists) are var rows of one length
            rows = want[-1:] == ("var",) and isinstance(value, (np.ndarray, OwnedView)) and \
                len(dims) > 0
            if rows:
                dims = tuple(dims[:-1]) + ("var",)
            for ax, (w, n) in enumerate(zip(want, dims)):
                if (w == "var") != (n == "var"):
                    raise mismatch(f"axis {ax} is {'a var' if n == 'var' else 'a fixed'} "
                                   f"dimension, the parameter's is "
                                   f"{'var' if w == 'var' else 'fixed'}")
                if w == "var":
                    continue
                if isinstance(w, str):
                    seen = sizes.setdefault(w, (label, ax, n))
                    if seen[2] != n:
                        raise ShapeError(
                            f"dimension {w} is {seen[2]} in {seen[0]!r} (axis {seen[1]}) "
                            f"but {n} in {label!r} (axis {ax}); signature {self.signature}")
                elif w != n:
                    raise ShapeError(f"input {label!r}: axis {ax} has size {n}, the "
                                     f"signature says {w}: {self.signature}")
            if got_option != option:
                raise mismatch("missing values (?T) in one but not the other: "
                               "the result's type follows the parameter's")
            if (dtype in _TEXT_ELEMENTS or got in _TEXT_ELEMENTS) and got != dtype:
                raise mismatch("string parameters take lazyk string arrays (lazyk.array("
                               "list_of_str)), bytes parameters bytes arrays (lazyk.array("
                               "list_of_bytes)), other parameters neither")
            if tuple(qrows) != tuple(want_rows):
                raise mismatch("missing rows (?var) in one but not the other: "
                               "the result's type follows the parameter's")
            if got.newbyteorder("=") != dtype:
                python_ints = isinstance(x, (list, tuple, int)) and got.kind in "iu" and \
                    dtype.kind in "iu"
                if python_ints:  # Python integers never wrap around; those that fit pass
                    _check_range(label, _leaf_values(value), dtype)
                if isinstance(x, (list, tuple)) and not _leaf_values(value).size:
                    pass  # no numbers (`[]`, `[[], []]`): no element type to refuse
                elif not np.can_cast(got, dtype, casting) and not (python_ints and
                                                                  casting != "no"):
                    raise CastingError(
                        f"input {label!r}: expected {expected}, got {text}: cannot cast "
                        f"{got} to {dtype} under casting={casting!r}: {self.signature}")
                if isinstance(value, np.ndarray):
                    value = value.astype(dtype)
            env[name] = (_text_var_rows(value) if isinstance(value, OwnedView) else
                         _var_rows(value)) if rows else value
        return env

    def __call__(self, *inputs, out: Any = None, casting: str = "same_kind", **named):
        """Check the inputs against the parameter types and evaluate; returns a new lazyk
        Array (or NumPy array for fixed results), or `out` (a NumPy / fixed lazyk array
        for fixed results, a lazyk array of the result's type and row lengths otherwise)."""
        key = None
        if out is None and not named and casting == "same_kind":
            # lazyk arrays of types seen before: every check of `_bind_ragged` depends on
            # the types alone (interned: one look-up), and so does the prepared nest
            key = tuple([x.type if type(x) is Array else None for x in inputs])
            launch = self._launches.get(key)
            if launch:
                got = launch(inputs)
                if got is not NotImplemented:
                    return got
        if casting != "same_kind" and casting not in CASTINGS:
            raise ValueError(f"casting must be one of {', '.join(map(repr, CASTINGS))}; got "
                             f"{casting!r}")
        if named:
            inputs = self._by_name(inputs, named)
        env = self._bind_ragged(inputs, casting)
        if has_rows(self.expr.node):  # row operations first (lazyk.runtime.row_steps)
            return _rows.evaluate_rows(Expr(self.expr.node, env), out, casting)
        if self._pcheck is not None:
            self.check_powers(inputs, casting)
        # a var / option parameter always gets a var / option array: the ragged path
        expr = Expr(self.expr.node, env)
        got = _ragged.evaluate(expr, out, casting)
        if key is not None and None not in key and key not in self._launches:
            same = all(type(v) is RaggedLeaf and v.array is x
                       for v, x in zip(env.values(), inputs))  # (bound as they are)
            if len(self._launches) >= 16:
                self._launches.clear()
            self._launches[key] = same and prepare_launch(expr, list(self.params)) or False
        return got

    def bind(self, out: Any, *inputs: Any, **named: Any) -> Any:
        """Step 2 of the three-step flow for var / option data: returns a
        `lazyk.runtime.ragged_bind.RaggedBound`; `b()` computes into `out` and returns it. Inputs are
        positional or by parameter name, as in a call.

        Binding checks the inputs against the parameter types (dtypes exactly: the bound
        call reads these very arrays), runs the count passes of the loop nest (the result's
        row lengths and missing rows), checks `out` against that structure once and
        prepares the kernel data. A call runs only the kernel (no LLVM, no count pass, no
        Python per row) and sees in-place changes of the inputs' values; changing their
        structure (row lengths, missing rows) needs a new bind (a changed row length, or a
        `?var` row that turned missing or present, raises ShapeError naming the row). A
        where() over missing rows gives rows that follow the values: each call counts them
        again and raises ShapeError naming the result's row that changed (bind again). An
        input without the `?` of its parameter (`T` data for `?T`, `var` rows for `?var`)
        would be a copy the bound call never sees changes of: BindError (a call takes it). A
        reduction feeding more work (`x - x.mean(axis=-1, keepdims=True)`) and a reduction
        of a where() over missing values bind as several kernel steps through scratch the
        bound object owns (`lazyk.runtime.ragged_bind.StepsBound`: its calls run one at a time).

        Raises:
            TypeMatchError, CastingError, ShapeError: an input does not match its parameter.
            BindError: `out` has another dtype, dims or element kind than the result, or is
                read-only; an input lacks the `?` of its parameter; ShapeError: out's fixed sizes or row lengths differ (naming the
                row).
            NotSupportedError: a string result, or the loop nest does not run it.
        """
        if named:
            inputs = self._by_name(inputs, named)
        if len(inputs) == len(self.params):
            for label, x in zip(self.labels, inputs):
                if isinstance(x, np.ndarray) and not x.flags.c_contiguous and x.ndim:
                    raise BindError(f"input {label!r}: a NumPy array in C order, or a lazyk "
                                    "array (its rows would be a copy the bound call never "
                                    "sees changes of)")
        if has_rows(self.expr.node):
            raise NotSupportedError("bind() of an expression with row operations (num, "
                                    "flatten, sort, cumsum, ...): call the compiled "
                                    "expression instead")
        env = self._bind_ragged(inputs, "no", copies=False)  # it reads these very arrays
        bound = _ragbind.bind(Expr(self.expr.node, env), out, self.signature)
        if self._pcheck is not None:  # each call checks the arrays bound, as they are then
            bound.before = lambda: self.check_powers(inputs, "no")
        return bound


def _leaf_order(root: Node) -> list[str]:
    return [n.arg for n in toposort(root) if n.op == "input"]


def compile(expr: Any) -> CompiledExpr:
    """Plan `expr` once; the result is called on arrays of the parameter types.

    Example: `k = lazyk.compile(a + b)` with `k.signature ==
    '(a: N * float64, b: N * float64) -> N * float64'`, then `k(x, y, out=z)`.

    Args:
        expr: a lazy expression; its placeholders are the parameters, by name, in order
            of first appearance. The arrays it captured (NumPy or lazyk arrays, ragged
            ones too, e.g. `w` in `x * w`) are constants, as in Numba and JAX: bound once
            here and kept alive by the compiled expression (`k.constants`; not copied,
            so an in-place change shows in later calls), never inputs of a call; a
            pickle carries their values with the graph.

    Calls take inputs positionally or by parameter name (`k(a=x, b=y)`); an input of another
    numeric dtype is converted under the call's `casting=` ('same_kind' by default). A `?T`
    parameter also takes `T` data (every value present; the result keeps the `?T` type the
    signature promises), a `?var` one `var` rows; string parameters take lists of str and
    NumPy unicode arrays (copied into a string array), bytes parameters lists of bytes and
    NumPy `S` arrays (copied into a bytes array). NumPy masked arrays and pyarrow /
    Awkward arrays are read as `lazyk.array` reads them (masked entries and nulls missing);
    a parameter without `?` takes them only when no value is missing.

    Raises:
        TypeMatchError: (on call) an input's ndim differs from its parameter, or it has
            missing values where its parameter has none.
        CastingError: (on call) `casting` forbids converting an input to its parameter's
            dtype (e.g. float64 into an int32 parameter under 'same_kind'), or a Python
            integer does not fit an integer parameter.
        ShapeError: (on call) a symbolic dim has two sizes, or inputs do not broadcast.
        TypeError: `expr` is a string (an expression string has no parameter types).
    """
    if isinstance(expr, (str, bytes)):
        raise TypeError(
            f"lazyk.compile takes a lazy expression, not a {type(expr).__name__} ({expr!r:.60}) "
            "(it would be a string constant): build it from typed parameters, e.g. "
            "a = lazyk.placeholder('a', 'N * float64'); lazyk.compile(a * 2 + 1) (or run "
            "the text directly: lazyk.evaluate(text))")
    return CompiledExpr(as_expr(expr))

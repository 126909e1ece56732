"""`lazyk.compile`: an expression planned once, then called on new inputs (`CompiledExpr`).

Planning (passes, fusion, kernel specs) happens at compile time; a call checks the inputs
against the parameter types. On the one-kernel path a call whose arrays have the geometry of
a recent call (type, dtype, flags, shape, strides; no partial overlap with `out`) is one
foreign call into a native guard that checks all that and runs the kernel (~1 us at n = 1).
"""
from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from lazyk import types as _T
from lazyk.arrays.array import Array
from lazyk.arrays.columns import converted
from lazyk.errors import BindError, NotSupportedError, ShapeError
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import ROWS_OP, Node, arg_key, has_rows, toposort, type_text
from lazyk.frontend.histogram import Histogram
from lazyk.frontend.leaves import (
    Placeholder,
    RaggedLeaf,
    RaggedPlaceholder,
    is_dask_array,
    is_text,
    leaf_data,
    text_element,
    text_rows,
)
from lazyk.frontend.operands import as_expr
from lazyk.frontend.ops import dtype_text, text_dtype
from lazyk.frontend.records import Records
from lazyk.frontend.ufuncs import NEGATIVE_INT_POWER
from lazyk.kernel import flat as _kernel
from lazyk.lru import Memo
from lazyk.runtime import ragged as _ragged
from lazyk.runtime import ragged_bind as _ragbind
from lazyk.runtime import row_steps as _rows
from lazyk.runtime.call_inputs import (
    TEXT_ELEMENTS,
    TEXT_TYPES,
    CallInputs,
    input_type,
    leaf_order,
    narrows,
    ragged_param,
    rows_of,
    text_for,
    typed_text,
)
from lazyk.runtime.device import on_gpu
from lazyk.runtime.device import run_program as run_on_device
from lazyk.runtime.fast_calls import FastCalls, fresh_out
from lazyk.runtime.launch import (
    CASTINGS,
    as_out,
    numpy_if_fixed,
    plan,
    power_check,
    run_program,
    truth,
)
from lazyk.runtime.nest_launch import prepare as prepare_launch
from lazyk.runtime.nest_select import needs_nest


def signature_text(params: list[tuple[str, str]], result: str) -> str:
    """Datashape function type text: `(a: N * float64, b: N * float64) -> N * float64`."""
    return "(" + ", ".join(f"{n}: {t}" for n, t in params) + ") -> " + result


class CompiledExpr(CallInputs, FastCalls):
    """A planned expression callable on new inputs: `k(a, b, out=None)`.

    Planning (passes, fusion, kernel specs) happens once here; a call checks the
    inputs against the parameter types, binds shapes/strides and launches the kernels.
    `params` names the parameters (the placeholders) in call order; `constants` holds the
    arrays the expression captured, by input name: every call reads them (no copy is
    made, so an in-place change of one shows in later calls).
    """

    def __new__(cls, expr: Expr):
        # Var / option parameters (placeholders or arrays): the ragged evaluation path.
        # string results too (where() over strings: lazyk.runtime.text_steps.select_text);
        # and work only the loop nest runs (x[mask], x[positions], argmax)
        if cls is CompiledExpr and (any(ragged_param(v) for v in expr.env.values()) or
                                    _ragged.has_text_where(expr) or has_rows(expr.node) or
                                    is_text(expr.node.dtype) or
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
            tuple(self.params.index(n) for n in dict.fromkeys(leaf_order(check.node))))

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
                    o = fresh_out(g[4], g[5], g[6])
                    if g[1](g[0], o, *inputs) == 0:
                        return o
                g = self._t_new
                # NOTE: check staleness before allocating: a second large allocation per call
                # (one dropped) made glibc fault fresh pages every call (1e5: 43 -> 480 us).
                if g is not None and not g[4].stale():
                    o = fresh_out(g[5], g[6], g[7], reuse=True)
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
        if any(is_dask(x) for x in inputs):  # a lazy Dask array, one blockwise layer
            if _dask_call is None:
                raise NotSupportedError("calling a compiled expression on Dask arrays needs "
                                        "`import lazyk.dask` (pip install 'lazyk[dask]')")
            return _dask_call(self, inputs[:len(self.params)], out, casting)
        if len(inputs) == len(self._slots):  # strs for string parameters: a string array
            inputs = tuple(text_for(x, t[1], n) if t[1] in TEXT_ELEMENTS else x
                           for x, t, n in zip(inputs, self._types, self._names))  # held
        data = self._bind_inputs(inputs, casting)
        if on_gpu(data):  # GPU inputs run there
            return run_on_device(self.program, data, out)
        try:
            if out is None:
                return run_program(self.program, data)
            run_program(self.program, data, as_out(out), casting=casting)
        except ShapeError as err:  # (the inputs by name: the kernel knows only shapes)
            shapes = ", ".join(f"{n} {data[s].shape}" for n, s in zip(self._names, self._slots))
            raise ShapeError(f"{err} (inputs: {shapes}): {self.signature}") from None
        return out

    def bind(self, out: Any, *inputs: Any, **named: Any) -> Any:
        """Step 2 of the three-step flow: kernel data for these arrays, no LLVM.

        Inputs are positional or by parameter name, as in a call. Returns a
        `lazyk.kernel.flat.BoundKernel`: `ck()` executes and returns `out`, `ck.address` is the
        `ckernel_prefix *` a C caller can run; an expression with reductions binds as the
        loop nest's bound call (`lazyk.runtime.ragged_bind.RaggedBound` or `StepsBound`).
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
        if has_rows(self.expr.node):
            raise NotSupportedError(f"bind() of {self.signature}: row operations (sort, "
                                    "cumsum, ...) give new arrays each call: call the "
                                    "compiled expression instead")
        # the bound kernel reads these very arrays: a converted copy would never see changes
        data = self._bind_inputs(inputs, "no", "bind() converts no input: pass an array of "
                                 "the parameter's dtype, or call the compiled expression")
        if self._fast is None or self._red is not None:  # reductions: the loop nest's bind
            bound = _ragbind.bind(Expr(self.expr.node, data), out, self.signature)
            if self._pcheck is not None:
                bound.before = lambda: self.check_powers(tuple(data[p] for p in self.params),
                                                         "no")
            return bound
        arrays = [data[self._slots[k]] for k in self._fast[0]]
        ck = _kernel.bind(self._fast[1], as_out(out), *arrays, params=self._consts)
        ck.out = out  # returned by each call, as a bound ragged call returns its out
        if self._pcheck is not None:  # each call checks the arrays bound, as they are then
            bound = tuple(data[p] for p in self.params)
            ck.before = lambda: self.check_powers(bound, "no")
        return ck

    def explain(self, target: str = "cpu") -> str:
        """The explain text of the underlying expression (`target='cuda'`: each kernel's
        NVVM IR and PTX instead of LLVM IR and assembly)."""
        return self.expr.explain(target=target)


# `lazyk.dask` installs its `call_compiled` here when imported (Dask is an optional extra).
_dask_call: Any = None


def is_dask(x: Any) -> bool:
    """A Dask array or a `lazyk.dask` collection (recognised without importing Dask)."""
    return is_dask_array(x) or isinstance(x, Expr) and hasattr(x, "__dask_graph__")


def install_dask(call: Any) -> None:
    """Run calls with Dask array inputs through `call(compiled, inputs, out, casting)`
    (lazyk.dask)."""
    global _dask_call
    _dask_call = call


_restored = Memo(256, "restored expressions")


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
        if option or None in shape:  # a var / option parameter
            env[name] = RaggedPlaceholder(name, shape, dtype, option, rows)
        else:
            env[name] = Placeholder(name, shape, dtype)
    for name, value in consts:  # a captured array: its env entry, as the expression had it
        env[name], = as_expr(value).env.values()
    k = CompiledExpr(Expr(built[-1], env))
    return _restored.put(key, k)


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
        self.params = tuple(dict.fromkeys(leaf_order(expr.node)))
        # (dims with None for var, native dtype, option, `?var` flag per dim) per parameter
        self._capture(expr)
        self._types = []
        shown = []
        for name in self._slots:
            v = leaf_data(expr.env[name])
            option = bool(getattr(v, "option", False))
            if isinstance(v, RaggedLeaf) and v.array.type.dtype in TEXT_TYPES:
                shape, dtype = _ragged.describe(text_rows(v.array, nested=True))[0], \
                    text_element(v.array.type.dtype.elem if isinstance(
                        v.array.type.dtype, _T.Option) else v.array.type.dtype)
            elif isinstance(v, RaggedLeaf):
                shape, dtype = _ragged.describe(v.array)[:2]
            if isinstance(v, RaggedLeaf):
                rows = rows_of(v.array.type)
                option = input_type(v.array)[2]  # ?T values (not rows)
            else:
                shape, dtype = v.shape, v.dtype.newbyteorder("=")
                rows = (isinstance(v, RaggedPlaceholder) and v.rows) or (False,) * len(shape)
            self._types.append((tuple(shape), dtype, option, rows))
            shown.append((name, typed_text(shape, dtype, option, rows)))
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

    def __call__(self, *inputs, out: Any = None, casting: str = "same_kind", **named):
        """Check the inputs against the parameter types and evaluate; returns a new lazyk
        Array (a NumPy array where every input is a NumPy array and the result has fixed
        dims without missing values), or `out` (a NumPy / fixed lazyk array for fixed
        results, a lazyk array of the result's type and row lengths otherwise)."""
        got = self._call(inputs, out, casting, named)
        given = list(inputs) + list(named.values())
        return numpy_if_fixed(got) if out is None and given and all(
            isinstance(x, np.ndarray) for x in given) else got

    def _call(self, inputs, out, casting, named):
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
        if _dask_call is not None and any(is_dask(x) for x in inputs):
            return _dask_call(self, inputs, out, casting)  # (lazyk.dask collections: loaded by then)
        env = self._bind_ragged(inputs, casting)
        if has_rows(self.expr.node):  # row operations first (lazyk.runtime.row_steps)
            return _rows.evaluate_rows(Expr(self.expr.node, self._as_declared(env)), out,
                                       casting)
        if self._pcheck is not None:
            self.check_powers(inputs, casting)
        # a var / option parameter always gets a var / option array: the ragged path
        expr = Expr(self.expr.node, env)
        got = _ragged.evaluate_if_ragged(expr, out, casting)  # (argmax of NumPy data: NumPy's)
        if got is NotImplemented:
            got = _ragged.evaluate(expr, out, casting)
        if key is not None and None not in key and key not in self._launches:
            same = all(type(v) is RaggedLeaf and v.array is x
                       for v, x in zip(env.values(), inputs)) and not any(
                narrows(input_type(x)[1], t[1], casting) for x, t in zip(inputs, self._types))
            # (bound as they are; integers a parameter may not hold: their values checked)
            if len(self._launches) >= 16:
                self._launches.clear()
            self._launches[key] = same and prepare_launch(expr, list(self.params)) or False
        return got

    def _as_declared(self, env: dict) -> dict:
        """`env` with every var / option array converted to its parameter's dtype: row
        operations (`firsts`, `flatten`, ...) move values as they are, where a kernel
        converts each value as it loads it."""
        env = dict(env)
        for name, (_, dtype, _, _) in zip(self._slots, self._types):
            v = env.get(name)
            if type(v) is RaggedLeaf and v.array.dtype != dtype and dtype.kind in "biufc":
                env[name] = RaggedLeaf(converted(v.array, dtype), v.option)
        return env

    def bind(self, out: Any, *inputs: Any, **named: Any) -> Any:
        """Step 2 of the three-step flow for var / option data: returns a
        `lazyk.runtime.ragged_bind.RaggedBound`; `b()` computes into `out` and returns it. Inputs are
        positional or by parameter name, as in a call.

        Binding checks the inputs against the parameter types (dtypes exactly: the bound
        call reads these very arrays), runs the count passes of the loop nest (the result's
        row lengths and missing rows), checks `out` against that structure once and
        prepares the kernel data. A call runs only the kernel (no LLVM, no count pass, no
        Python per row) and sees in-place changes of the inputs' values; changing their
        structure (row lengths, missing rows) needs a new bind where the result holds those
        rows (a changed row length, or a `?var` row that turned missing or present, raises
        ShapeError naming the row; a reduction of the rows reads each as it is). A
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
            for label, x, t in zip(self.labels, inputs, self._types):
                if isinstance(x, np.ndarray) and not x.flags.c_contiguous and None in t[0]:
                    raise BindError(f"input {label!r} is a NumPy array not in C order "
                                    f"(strides {x.strides}): bind() reads the very arrays "
                                    "given, and this one's rows would be a copy the bound "
                                    "call never sees changes of; pass np.ascontiguousarray"
                                    "(x) or a lazyk array")
        if has_rows(self.expr.node):
            names = sorted({str(n.arg[0]) for n in toposort(self.expr.node) if n.op == ROWS_OP})
            raise NotSupportedError(f"bind() of an expression with row operations (here: "
                                    f"{', '.join(names)}), such as num, flatten, sort or a new "
                                    "axis x[:, None]: call the compiled expression instead")
        env = self._bind_ragged(inputs, "no", copies=False)  # it reads these very arrays
        bound = _ragbind.bind(Expr(self.expr.node, env), out, self.signature)
        if self._pcheck is not None:  # each call checks the arrays bound, as they are then
            bound.before = lambda: self.check_powers(inputs, "no")
        return bound


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
    numeric dtype is converted under the call's `casting=` ('same_kind' by default; integers
    that do not fit a narrower integer parameter are refused, wrapped only under 'unsafe'). A `?T`
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
            dtype (e.g. float64 into an int32 parameter under 'same_kind'), or an
            integer does not fit an integer parameter (unless 'unsafe').
        ShapeError: (on call) a symbolic dim has two sizes, or inputs do not broadcast.
        TypeError: `expr` is a string (an expression string has no parameter types).
        NotSupportedError: `expr` is records (`lazyk.zip`, `lazyk.combinations`) or a
            histogram: compile the expressions they are made of.
    """
    if isinstance(expr, (str, bytes)):
        raise TypeError(
            f"lazyk.compile takes a lazy expression, not a {type(expr).__name__} ({expr!r:.60}) "
            "(it would be a string constant): build it from typed parameters, e.g. "
            "a = lazyk.placeholder('a', 'N * float64'); lazyk.compile(a * 2 + 1) (or run "
            "the text directly: lazyk.evaluate(text))")
    if isinstance(expr, Records):
        path, f = "", expr
        while isinstance(f, Records):  # (the first leaf field: records fields are records)
            path, f = path + f"[{f.fields[0]!r}]", f[f.fields[0]]
        raise NotSupportedError(
            f"lazyk.compile of records (fields {', '.join(expr.fields)}): compile each field "
            f"of numbers or strings (lazyk.compile(r{path})) and call those, or .eval() the "
            "records built over arrays")
    if isinstance(expr, Histogram):
        raise NotSupportedError(
            "lazyk.compile of a histogram: compile the values it counts and take "
            "lazyk.histogram of a call's result, or evaluate the histogram built over "
            "arrays (lazyk.evaluate(h))")
    return CompiledExpr(as_expr(expr))

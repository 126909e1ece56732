"""`lazyk.evaluate(string)`: numexpr's `evaluate` and `re_evaluate`, fast for repeated strings.

A string is parsed and built into a lazy expression by `lazyk.frontend.exprparse` and run by
`lazyk.runtime.launch.evaluate`. A repeated `evaluate(text)` over arrays of the same dtypes, ndims
and layout class and scalars of the same kind reuses the planned program instead: a
dictionary look-up, a bind (the scalars' values become kernel parameters) and one foreign
call (a native guard, `lazyk.kernel.dispatch.Dispatcher`).
"""
from __future__ import annotations

import math
import sys
import threading
import weakref
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

from lazyk import hooks
from lazyk.arrays.array import Array
from lazyk.arrays.outputs import fortran_result, kept_layout, permuted
from lazyk.errors import BindError, ShapeError
from lazyk.frontend import ops
from lazyk.frontend.exprparse import Const, build, compile_string, folds_scalars, names
from lazyk.frontend.graph import (
    PICK_OP,
    REDUCE_OP,
    ROWS_OP,
    SELECT_OP,
    TAKE_OP,
    arg_key,
    toposort,
)
from lazyk.frontend.leaves import OwnedView, RaggedLeaf
from lazyk.frontend.operands import as_expr
from lazyk.frontend.spec import PARAM_SLOT, pack_params
from lazyk.frontend.ufuncs import NEGATIVE_INT_POWER
from lazyk.kernel.dispatch import Dispatcher
from lazyk.kernel.flat import broadcast_shapes
from lazyk.lru import LRU, Memo
from lazyk.runtime import launch as runtime
from lazyk.runtime.device import gpu_launch
from lazyk.runtime.launch import (
    canonical,
    env_arrays,
    exponent_leaves,
    int_exponents,
    plan,
)
from lazyk.runtime.nest_launch import prepare as prepare_launch


def evaluate_string(text: str, local_dict: dict | None = None, global_dict: dict | None = None,
                    out: Any = None, order: str = "K", casting: str = "same_kind",
                    _depth: int = 1, _checked: bool = False) -> Any:
    """Evaluate a numexpr-style string like `numexpr.evaluate` (names from the caller's frame).

    Args:
        text: e.g. `"where(a > 0, sqrt(a), -b) * 2"`.
        local_dict, global_dict: where names are looked up; the calling frame's locals and
            globals when left out (`_depth` frames up). Arrays, scalars, and Python lists
            or tuples (read as `lazyk.array` reads them).
        out, order, casting: as `lazyk.evaluate`.
    Raises:
        ExprParseError: syntax errors, unknown names and functions (line, column, caret).
        ValueError / TypeError: an unknown `order` or `casting`; a dict that is not a
            mapping (as numexpr; checked before any name is looked up).
    """
    if not _checked:
        order = runtime.check_options(order, casting, local_dict, global_dict)
    if local_dict is None or global_dict is None:
        frame = sys._getframe(_depth)
        if local_dict is None:
            local_dict = frame.f_locals
        if global_dict is None:
            global_dict = frame.f_globals
        del frame  # no reference cycle through the frame
    _last.args = (text, out, order, casting)
    done = _fast_evaluate(text, local_dict, global_dict, out, order, casting)
    if done is not _MISS:
        return done
    value = build(text, local_dict, global_dict)
    return runtime.evaluate(value, out=out, order=order, casting=casting)


def re_evaluate(local_dict: dict | None = None, global_dict: dict | None = None,
                _depth: int = 1) -> Any:
    """Run the last `evaluate(string)` of this thread again, as `numexpr.re_evaluate`: the
    same string, `out`, `order` and `casting`, with names looked up anew (in `local_dict`,
    else the caller's frame), e.g. new arrays of the same dtypes.

    Raises:
        RuntimeError: no string was evaluated in this thread yet.
    """
    args = getattr(_last, "args", None)
    if args is None:
        raise RuntimeError("re_evaluate() needs a previous evaluate() of a string in this "
                           "thread")
    text, out, order, casting = args  # (the new dicts checked as evaluate checks them)
    return evaluate_string(text, local_dict, global_dict, out, order, casting,
                           _depth=_depth + 1)


# ---------------------------------------------------------------- repeated evaluate(string)
_last = threading.local()
_MISS, _SEEN = object(), object()
# (text, operand kinds, out dtype, order, casting) -> planned program (`_SEEN` after a
# first call; None: not plannable)
_FAST = Memo(1024, "string programs")
_NUMERIC = frozenset("biufc")


def _special(v: Any) -> bool:
    """A scalar value the program's structure may depend on: an exponent baked into the code
    (a small integer or 0.5: see passes/fuse.py) or a bool."""
    if isinstance(v, complex):
        if v.imag:
            return False
        v = v.real
    if isinstance(v, bool):
        return True
    return v == 0.5 or (float(v).is_integer() and abs(v) <= 16)


def _scalar_class(v: Any) -> Any:
    """What of a scalar's value shapes the graph: its kind and, for Python ints, the range
    (NEP 50 overflow checks, comparisons widened for out-of-range ints), and its sign for
    NumPy integers (negative integer powers raise); special values exactly."""
    if isinstance(v, np.generic):
        item = v.item()
        if _special(item):
            return (v.dtype, "=", repr(item))  # repr keeps 0.0 and -0.0 apart
        return (v.dtype, v.dtype.kind in "iu" and item < 0)
    if _special(v):
        return (type(v), "=", repr(v))
    if type(v) is int:
        return (int, v < 0, (v if v >= 0 else -v - 1).bit_length())
    return (type(v),)


def _sentinels(cls: Any, literals: list, count: int) -> list | None:
    """`count` distinct values of scalar class `cls` that no literal of the text is close
    to (so nothing folds or merges them: each becomes its own kernel parameter)."""
    if cls[1:2] == ("=",):
        return None
    kind = cls[0]
    if kind is int:
        neg, bits = cls[1], cls[2]
        lo, hi = max(17, 1 << (bits - 1)), (1 << bits) - 1
        # (from both ends of the range: apart in a float32 parameter too)
        ends = (u for j in range((hi - lo) // 2 + 1) for u in (lo + j, hi - j))
        cands = (-(u + 1) if neg else u for u in ends)
    elif isinstance(kind, np.dtype) and kind.kind in "iu":
        info = np.iinfo(kind)
        cands = (-u if cls[1] else u for u in range(17, min(info.max, 2000)))
    else:
        cands = (17.0 + j for j in range(2000))
    out = []
    for c in cands:
        if all(abs(c - lit) >= 2 for lit in literals):
            out.append(c)
            if len(out) == count:
                break
    else:
        return None
    if isinstance(kind, np.dtype):
        return [kind.type(c) for c in out]
    return [kind(c) for c in out]


def _as_param(v: Any, dt: np.dtype) -> bytes:
    """A scalar's kernel-parameter bytes, converted as the graph builder converts it."""
    if isinstance(v, np.generic):
        v = np.asarray(v).astype(dt)
    return pack_params((dt,), (v,))


def _same_param(v: Any, dt: np.dtype, got: bytes) -> bool:
    try:  # (`v` as a kernel parameter of `dt` has the bytes `got`)
        return _as_param(v, dt) == got
    except (OverflowError, ValueError, TypeError):
        return False


def _fast_evaluate(text: str, local_dict: Any, global_dict: Any, out: Any, order: str,
                   casting: str) -> Any:
    """The result of `evaluate(text)` from the cache of planned programs, or `_MISS`."""
    nm = _names_of.get(text)
    if nm is None:
        nm = _names_of.put(text, names(text))  # parses (syntax errors raise as before)
    values = []
    sig = []
    for n in nm:
        if n in local_dict:
            v = local_dict[n]
        elif n in global_dict:
            v = global_dict[n]
        else:
            return _MISS  # the general path raises the positioned error
        values.append(v)
        t = type(v)
        if t is np.ndarray:
            dt = v.dtype
            if dt.kind not in _NUMERIC or not dt.isnative:
                return _MISS
            if v.ndim < 2:
                sig.append((dt, v.ndim))
            else:  # the layout class decides the order of a fresh result ('K', 'A')
                fl = v.flags
                sig.append((dt, v.ndim, fl.c_contiguous, fl.f_contiguous))
        elif t is float or t is int or t is complex or t is bool or (
                isinstance(v, np.generic) and v.dtype.kind in _NUMERIC):
            sig.append(_scalar_class(v))
        else:
            return _MISS
    if out is None:
        osig = None
    elif type(out) is np.ndarray:
        osig = out.dtype
    else:
        return _MISS
    key = (text, tuple(sig), osig, order, casting)
    entry = _FAST.get(key, _MISS)
    if entry is _MISS or entry is _SEEN:
        # planned on the second call (which runs the general path): a one-off string costs
        _FAST.put(key, _SEEN if entry is _MISS else
                  _plan_fast(text, nm, values, sig, out, order))
        return _MISS
    if entry is None:
        return _MISS
    try:
        return entry(values, out, casting)
    except (ShapeError, BindError, OverflowError):
        return _MISS  # the general path gives these errors their usual form


class _FastEntry:
    """A planned program for one (text, operand kinds) and how to feed it: which operand
    each program input is and which operand each kernel parameter takes its value from."""

    def __init__(self, prog: Any, inputs: dict, recipe: list, exps: tuple):
        self.prog, self.inputs, self.recipe, self.exps = prog, inputs, recipe, exps
        self.dtype = prog.dtype
        self.dispatch = None
        self.order: tuple = ()
        step = prog.steps[0]
        # A full reduction (every axis, no mean) folds into a 0-d output: one kernel too.
        self.reduce = step.axes is not None
        self.keepdims = step.keepdims
        if len(prog.steps) == 1 and not step.mean and step.inputs and \
                all(isinstance(r, str) for r in step.inputs):
            self.order = tuple(inputs[r] for r in step.inputs)
            self.dispatch = Dispatcher(step.spec, step.consts)
        self._run = runtime.run_program
        self._thread_min = runtime.THREAD_MIN
        # elementwise, one kernel, no checks of values: `__call__`'s first lines
        self._plain = self.dispatch is not None and not exps and not recipe and \
            not self.reduce
        self._fresh = self.dispatch.fresh if self._plain else None
        # `launch`'s values are the inputs by position (a string's values hold its scalars too)
        self._in_order = self.order == tuple(range(len(inputs)))

    def launch(self, values: list) -> Any:
        """The value over `values` (an expression's inputs by position), or NotImplemented
        where the general path must compute it (its errors have their usual form there)."""
        fresh = self._fresh
        if fresh is not None:  # the last bind's geometry: one native call
            got = fresh(values if self._in_order else [values[k] for k in self.order])
            if got is not None:
                return got
        try:
            return self(values, None, "same_kind")
        except (ShapeError, BindError, OverflowError):
            return NotImplemented

    def __call__(self, values: Any, out: Any, casting: str) -> Any:
        if self._plain and out is None:  # the last bind's geometry: one native call
            got = self._fresh([values[k] for k in self.order])
            if got is not None:
                return got
        prog = self.prog
        if self.exps:
            for k in self.exps:
                x = values[k]
                if isinstance(x, np.ndarray) and x.size and (x < 0).any():
                    raise ValueError(NEGATIVE_INT_POWER)
        consts = None
        if self.recipe:  # the scalar operands' values, written per call
            consts = []
            for k, slots in self.recipe:
                blob = bytearray(prog.steps[k].consts)
                for slot, j, dt in slots:
                    blob[PARAM_SLOT * slot:PARAM_SLOT * (slot + 1)] = _as_param(values[j], dt)
                consts.append((k, bytes(blob)))
        d = self.dispatch
        if d is not None:
            arrays = [values[k] for k in self.order]
            o = None
            if out is None:
                shape = arrays[0].shape
                for a in arrays:
                    if a.shape != shape:
                        try:
                            shape = broadcast_shapes(*[a.shape for a in arrays])
                        except ValueError:  # the general path names the operands
                            raise ShapeError("operands do not broadcast") from None
                        break
                size = math.prod(shape)
                small = size < self._thread_min  # (threaded: no scalars written per call)
                plain = small or consts is None and all(a.flags.aligned for a in arrays)
                if not self.reduce and plain:  # threaded (out= too): the guard runs a pool record
                    o = (np.empty if small else runtime.empty_out)(shape, self.dtype)
                elif self.reduce and plain and size and len(prog.steps[0].axes) == len(shape):
                    o = np.empty((1,) * len(shape) if self.keepdims else (), self.dtype)
                    if not small:  # per-thread partials, the layout kept
                        return d.fold(o, *arrays)
            elif out.dtype == self.dtype and not self.reduce and (out.size < self._thread_min or (
                    consts is None and all(a.flags.aligned for a in (out, *arrays)))):
                o = out
            if o is not None:
                return d(o, *arrays) if consts is None else d.call_with(consts[0][1], o, *arrays)
        data = {name: values[k] for name, k in self.inputs.items()}
        if consts is not None:
            steps = list(prog.steps)
            for k, blob in consts:
                steps[k] = replace(steps[k], consts=blob)
            prog = replace(prog, steps=tuple(steps))
        if out is None:
            return self._run(prog, data)
        return self._run(prog, data, out, casting=casting)


def _template(text: str, nm: tuple, values: list, sentinels: dict) -> tuple:
    """Plan `text` with each scalar operand k replaced by `sentinels[k]` and each array by a
    view of its own (so operands that are one object stay separate inputs)."""
    local, which = {}, {}
    for k, (n, v) in enumerate(zip(nm, values)):
        if type(v) is np.ndarray:
            v = v.view()
            which[id(v)] = k
        else:
            v = sentinels.get(k, v)
        local[n] = v
    e = as_expr(build(text, local, {}))
    data = env_arrays(e)
    node, data = canonical(e.node, data)
    inputs = {name: which[id(a)] for name, a in data.items()}
    exps = tuple(dict.fromkeys(inputs[n] for n in exponent_leaves(node)))
    return plan(node), inputs, exps, node, data


def _plan_fast(text: str, nm: tuple, values: list, sig: list, out: Any, order: str) -> Any:
    """A `_FastEntry` for these operand kinds, or None when the program's structure could
    depend on more than the kinds (then every call takes the general path)."""
    if folds_scalars(text, {n for n, v in zip(nm, values) if type(v) is np.ndarray}):
        return None  # scalars folded together when built: no parameter slot takes them
    literals, consts = [], []
    for node in compile_string(text)[1]:
        if isinstance(node, Const):
            v = node.value
            if isinstance(v, (str, bytes)):
                continue  # a string constant: no numeric sentinel can meet it
            consts.append(v)
            literals += [v.real, v.imag] if isinstance(v, complex) else [float(v)]
    scalars = [k for k, v in enumerate(values) if type(v) is not np.ndarray]
    sa, sb = {}, {}
    for k in scalars:
        vals = _sentinels(sig[k], literals + [float(np.real(x)) for x in
                                              list(sa.values()) + list(sb.values())], 2)
        if vals is not None:
            sa[k], sb[k] = vals
        elif sig[k][1:2] != ("=",):
            return None
    try:
        pa, inputs, exps, node, data = _template(text, nm, values, sa)
        pb = _template(text, nm, values, sb)[0]
    except Exception:  # noqa: BLE001 - the general path raises it properly
        return None
    if len(exponent_leaves(node)) != len(int_exponents(node)):
        return None  # computed integer exponents: the general path checks their values
    if not pa.steps or len(pa.steps) != len(pb.steps) or pa.dtype != pb.dtype:
        return None
    if out is None and order != "C" and len(pa.shape) >= 2 and (
            fortran_result(order, data) or kept_layout(order, data, pa.shape) is not None):
        return None
    if out is not None and out.dtype != pa.dtype:
        return None  # the general path converts inside the kernel (another program)
    fixed = consts + [values[k] for k in scalars if k not in sa]  # (the same in both)
    recipe = []
    for k, (x, y) in enumerate(zip(pa.steps, pb.steps)):
        if (x.spec is not y.spec or x.inputs != y.inputs or x.axes != y.axes
                or x.keepdims != y.keepdims or x.mean != y.mean):
            return None
        slots = []
        for slot, dt in enumerate(x.spec.params):
            at = slice(PARAM_SLOT * slot, PARAM_SLOT * (slot + 1))
            ca, cb = x.consts[at], y.consts[at]
            if ca == cb:  # a literal, or a special value (part of the key); else two
                # stand-ins that met in this dtype (large ints in float32): no recipe
                if not any(_same_param(c, dt, ca) for c in fixed):
                    return None
                continue
            src = [j for j in sa if _same_param(sa[j], dt, ca) and _same_param(sb[j], dt, cb)]
            if len(src) != 1:
                return None  # a value computed from a scalar (folded): no recipe for it
            slots.append((slot, src[0], dt))
        if slots:
            recipe.append((k, slots))
    return _FastEntry(pa, inputs, recipe, exps)


_names_of = Memo(4096, "string names")  # text -> the names it reads, in order


# ---------------------------------------------------------------- `.eval()` of expressions
# A lazy expression's structure (`Node.skey`: the graph with its inputs by position, their
# dtypes and shapes; with the C / Fortran layout of inputs of 2 or more dims) ->
# `_FastEntry`; built on the first call, so a loop that builds the same expression over new
# arrays each time plans once and then costs a look-up and the native guard.
_expr_entries = LRU(1024, "expression entries")
# graph root -> (structure key, input names in order): graphs of more inputs than a node's
# structure key covers (`lazyk.frontend.graph.MAX_KEYED_INPUTS`) walk once per graph
_fingerprints: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# ops the dense steps do not plan (a selection makes rows; row operations and tuples run
# before the kernels that read them)
_OWN_STEPS = frozenset((SELECT_OP, TAKE_OP, ROWS_OP, PICK_OP))
_NATIVE_NUMERIC = frozenset(np.dtype(c) for c in "?bhilqBHILQefdFD")
# evaluations planned into `_expr_entries` (a repeated structure plans once)
expr_stats = {"plans": 0}


def _fingerprint(root) -> tuple:
    """(the graph's structure with inputs by position, the input names in that order)."""
    got = _fingerprints.get(root)
    if got is None:
        at, key, leaves = {}, [], []
        for i, n in enumerate(toposort(root)):
            at[id(n)] = i
            if n.op == "input":
                leaves.append(n.arg)
                key.append(("input", n.dtype.str, n.shape))
            else:
                key.append((n.op, n.dtype.str, n.shape, tuple(at[id(s)] for s in n.srcs),
                            arg_key(n.arg)))
        got = _fingerprints[root] = (tuple(key), tuple(leaves))
    return got


def evaluate_expr(e) -> Any:
    """The value of a dense lazy expression from `_expr_entries`, or NotImplemented (anything
    else: var / option / string / GPU / Dask leaves, placeholders, Fortran results; while
    explain() records each launch: the general path)."""
    run = e._launch  # this very expression evaluated before: its entry and arrays
    return NotImplemented if runtime.recorders else run() if run is not None else launch(e)


def _general() -> Any:
    """The launch of an expression the entries do not run: the general path runs it."""
    return NotImplemented


def launch(e) -> Any:
    """`evaluate_expr` of `e` not evaluated before (`Expr.eval` calls it first); its launch
    is kept on `e` for its next evaluation: a `_FastEntry.launch` of its arrays, a `_NestRun`
    over var / option arrays, or `_general` for what the entries do not run."""
    key = e._key  # (`Expr._structure`, read inline: this is every new expression's path)
    if key is not None and key[4]:  # flat: dtypes checked by the builder, no result order
        entry = _expr_entries.get(key[1])
        if entry:  # (planned before: the common case, in a few steps)
            leaves = e._leaves
            e._launch = partial(entry.launch, leaves)
            return entry.launch(leaves)
    elif key is not None:  # var / option leaves: their types are in the build token
        entry = _nest_by_token.get(key[0])
        if entry:
            run = e._launch = _NestRun(entry, e._leaves)
            return run()
    run = e._launch = _bind_expr(e, e._structure()) or _general
    return run()


def _bind_expr(e, got: tuple | None) -> Any:
    """The launch of `e` (its `_FastEntry`'s, or a `_NestRun` over var / option arrays), or
    None for what the entries do not run; `got`: `e._structure()`."""
    if got is not None and got[2]:
        return _dense_launch(e, got[0], None, got[1])
    if got is None:
        node = e.node
        key, names_ = node.skey, node.names
        if key is None:
            key, names_ = _fingerprint(node)
        env, values = e.env, []
        for n in names_:
            v = env[n]
            t = type(v)
            values.append(v.view if t is OwnedView else v.array if t is RaggedLeaf else v)
    else:
        key, values, names_ = got[0], [], None
        for v in got[1]:  # (var / option lazyk arrays stay as they are)
            view = v if type(v) is np.ndarray else v.numpy_view()
            values.append(v if view is None else view)
    layout, ragged = None, False
    for k, v in enumerate(values):
        if type(v) is Array:
            ragged = True
            continue
        if type(v) is not np.ndarray or v.dtype not in _NATIVE_NUMERIC:
            return gpu_launch(key, values, partial(_planned_once, e, names_, values))
        if v.ndim >= 2:  # the layout class decides the order of a fresh result
            fl = v.flags
            layout = (layout or ()) + ((k, fl.c_contiguous, fl.f_contiguous,
                                        v.ndim > 2 and permuted(v)),)
    if ragged:
        return _bind_nest(e, key, names_, values)
    return _dense_launch(e, key if layout is None else (key, layout), names_, values)


def _dense_launch(e, key, names_, values: Any) -> Any:
    """The launch of `e` over NumPy arrays `values` (its inputs `names_`, when known): the
    `launch` of the entry of `key` (its structure, with the layout class of its inputs of 2
    or more dims unless it is flat), planned on a miss; None where the general path runs."""
    # (alignment is checked by the native guard, and at bind: BindError, the general path)
    entry = _expr_entries.get(key)
    if entry is None:
        expr_stats["plans"] += 1
        if names_ is None:
            names_ = e.node.names
        got = _planned(e, names_, values)
        entry = _expr_entries.put(key, False if got is None else _FastEntry(*got))
    return partial(entry.launch, values) if entry is not False else None


# (structure key, the var / option arrays' types) -> the `NestLaunch` of that structure
_nest_entries = LRU(256, "expression nests")
# an expression's build token (`lazyk.frontend.structure`: its structure and its leaves'
# types) -> its `NestLaunch`: a new expression over var / option arrays in one look-up
_nest_by_token = Memo(1024, "expression nests by build token")


def _bind_nest(e, key, names_, arrays: list) -> Any:
    """The `_NestRun` of `e` over var / option lazyk arrays (its leaves: `arrays`, named
    `names_` when known), or None where they are not all such or no prepared nest runs it."""
    if not all(type(a) is Array for a in arrays) or int_exponents(e.node):
        return None  # (integer powers: their exponents checked by the general path first)
    full = (key, tuple([a.type for a in arrays]))
    entry = _nest_entries.get(full)
    if entry is None:
        expr_stats["plans"] += 1
        names_ = e.node.names if names_ is None else names_
        entry = _nest_entries.put(full, prepare_launch(e, list(names_)) or False)
    key = e._key  # (built by structure: `arrays` are its leaves, var / option arrays as they are)
    if entry is not False and key is not None:
        _nest_by_token.put(key[0], entry)  # (the token names these leaf types)
    return _NestRun(entry, arrays) if entry is not False else None


class _NestRun:
    """An expression's prepared nest and arrays: calling it evaluates the expression, or
    gives NotImplemented where the general path must."""

    __slots__ = ("launch", "arrays")

    def __init__(self, launch: Any, arrays: list):
        self.launch, self.arrays = launch, arrays

    def __call__(self) -> Any:
        return self.launch(self.arrays)


def _planned_once(e, names_: tuple | None, values: list) -> tuple | None:
    """`_planned`, counted in `expr_stats` (for a structure not seen before)."""
    expr_stats["plans"] += 1
    return _planned(e, e.node.names if names_ is None else names_, values)


def _planned(e, names_: tuple, values: list) -> tuple | None:
    """(program, {program input: position in `values`}, [], the positions of integer
    exponents) of `e`'s structure, its inputs `names_` read from `values` (by position: two
    inputs may be one array now and two others next time), or None where the general path
    runs it: a `_FastEntry`'s arguments."""
    if any(n.dtype.kind not in _NUMERIC or n.op in _OWN_STEPS or
           (n.op == REDUCE_OP and n.arg[0] in ops.ARG_REDUCTIONS) for n in toposort(e.node)):
        return None  # strings, selections, row operations, tuples, argmax: their own steps
    node, inputs = canonical(e.node, {name: k for k, name in enumerate(names_)})
    data = {name: values[k] for name, k in inputs.items()}
    if len(exponent_leaves(node)) != len(int_exponents(node)):
        return None  # a computed exponent: checked by evaluating it (the general path)
    prog = plan(node)
    if not prog.steps or (len(prog.shape) >= 2 and (
            fortran_result("K", data) or kept_layout("K", data, prog.shape) is not None)):
        return None  # (a fresh result in another layout than C: the general path)
    exps = tuple(dict.fromkeys(inputs[n] for n in exponent_leaves(node)))
    return prog, inputs, [], exps


runtime.install_path("string", evaluate_string)
runtime.install_path("expr", evaluate_expr)
hooks.install(launch=launch)

"""Launching programs: PASSES in order, fusion, then one kernel per step (`evaluate`).
`plan(node)` runs the graph passes once per graph (cached); a call then only binds (shapes,
strides, the dims pass: `prepare`) and launches one kernel per step (`launch`, `run_step`,
`run_program`), as `runtime.compiled`, `runtime.ragged`, `lazyk.dask` and `runtime.stringeval` do."""
from __future__ import annotations

import ctypes
import threading
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Callable

import numpy as np

from lazyk.arrays.array import Array
from lazyk.arrays.outputs import empty as empty_out
from lazyk.arrays.outputs import fortran_result, kept_layout
from lazyk.errors import BindError, CastingError, NotSupportedError, ShapeError
from lazyk.frontend import ops
from lazyk.frontend.check import check_graph
from lazyk.frontend.expression import Expr, summary, type_flags
from lazyk.frontend.graph import Node, dump, graph_ops, input_names, rewrite, toposort
from lazyk.frontend.leaves import Placeholder, check_dtype, is_ragged, is_text, leaf_data
from lazyk.frontend.numpy_rules import cast
from lazyk.frontend.operands import as_expr
from lazyk.frontend.reductions import reduce, seeded_fixed_folds
from lazyk.frontend.ufuncs import NEGATIVE_INT_POWER, apply
from lazyk.kernel import flat as kernel
from lazyk.kernel.flat import data_pointer, run_layout
from lazyk.lru import LRU, Memo
from lazyk.passes.cse import eliminate_common_subexpressions
from lazyk.passes.dims import simplify_dims
from lazyk.passes.fold import fold_constants
from lazyk.passes.fuse import Program, Step, fuse_elementwise

# Graph -> graph passes, in order; fusion (graph -> Program) always comes last.
PASSES: tuple[tuple[str, Callable[[Node], Node]], ...] = (
    ("fold_constants", fold_constants),
    ("eliminate_common_subexpressions", eliminate_common_subexpressions),
)
FUSE = ("fuse_elementwise", fuse_elementwise)

plans = LRU(512, "plans")  # graph -> Program (passes + fusion)


def run_passes(root: Node, check: bool = False, trace: list | None = None) -> Node:
    """Apply PASSES in order; `check` runs lazyk.frontend.check after each, `trace` collects dumps."""
    if trace is not None:
        trace.append(("input", dump(root)))
    for name, fn in PASSES:
        root = fn(root)
        if check:
            check_graph(root, after=name)
        if trace is not None:
            trace.append((name, dump(root)))
    return root


def plan(root: Node) -> Program:
    """Passes + fusion for `root`, cached per (interned) graph."""
    prog = plans.get(root)
    if prog is not None:
        return prog
    return plans.put(root, fuse_elementwise(run_passes(seeded_fixed_folds(root))))


# --- executing one step -----------------------------------------------------------------------

def broadcast_strides(shape: tuple, ashape: tuple, astrides: tuple) -> tuple:
    """Byte strides of an operand broadcast (right-aligned) over `shape`; 0 where broadcast."""
    lead = len(shape) - len(ashape)
    if lead < 0 or any(n != 1 and n != m for n, m in zip(ashape, shape[lead:])):
        # NOTE: the last guard before kernel data is built from these strides: a size that
        # neither matches nor broadcasts would make the kernel read or write out of bounds.
        raise ShapeError(f"operand of shape {ashape} does not broadcast to the iteration "
                         f"shape {shape}")
    return (0,) * lead + tuple(0 if n == 1 else s for n, s in zip(ashape, astrides))


def out_strides(out: np.ndarray, shape: tuple, axes, keepdims: bool) -> tuple:
    """`out`'s strides over the iteration shape: 0 along reduced axes."""
    if axes is None:
        return broadcast_strides(shape, out.shape, out.strides)
    strides, k = [], 0
    for d in range(len(shape)):
        if d in axes:
            strides.append(0)
            k += 1 if keepdims else 0
        else:
            strides.append(out.strides[k] if out.shape[k] != 1 else 0)
            k += 1
    return tuple(strides)


class Recorders(threading.local):
    """The lists `explain()` records what runs into, this thread's only: a kernel another
    thread launches meanwhile is not the explained expression's. Empty in normal runs."""

    def __init__(self) -> None:
        self.lists: list[list] = []

    def __iter__(self):
        return iter(self.lists)

    def __bool__(self) -> bool:
        return bool(self.lists)

    def append(self, record: list) -> None:
        self.lists.append(record)

    def remove(self, record: list) -> None:
        """Take `record` itself off (not an equal list: `[] == []`)."""
        self.lists[:] = [r for r in self.lists if r is not record]


# explain() pushes a list here to see each launched (spec, layout)
recorders = Recorders()
# (id(spec), shape, strides...) -> (spec, layout, compiled kernel, kernel data); the spec in
# the value keeps its id from being reused while the entry lives. An LRU: each entry is < 1 KB
# but holds its kernel's code (~64 KB) alive after the kernel cache has dropped it. The kernel
# data holds the parameter values of the entry's first launch; a launch with other values runs
# a private copy (kernel data is never written once built: other threads may be running it).
launches = LRU(512, "launches")
# Below this many elements one thread runs the kernel straight from here (no pool).
THREAD_MIN = 1 << 16


def prepare(spec, shape: tuple, strides: tuple, reduced: tuple, consts: bytes = b""):
    """Layout (dims pass), compiled kernel and kernel data for one geometry and parameter
    values (`consts`, kernel-data bytes); the callers cache it.

    Returns (spec, layout, compiled kernel, kernel data, its address, size, offsets).
    """
    layout = simplify_dims(shape, strides, reduced)
    # NOTE: the entry's reference keeps the code alive (the kernel cache may drop it); a caller
    # runs it only through an entry it holds, so eviction never frees code under a call.
    compiled = kernel.compile(spec, kernel.layout_class(spec, layout))
    # Kernel data per codegen/llvm.py: function, destructor, ndim, shape, strides (int64),
    # then the parameter slots.
    vals = [compiled.single_address, compiled.destroy_address, layout.ndim, *layout.shape]
    for st in layout.strides:
        vals.extend(st)
    kd = np.array([v - (1 << 64) if v >= 1 << 63 else v for v in vals], dtype=np.int64)
    if consts or spec.params:
        kd = np.concatenate([kd, np.frombuffer(kernel.check_params(spec, consts), np.int64)])
    return (spec, layout, compiled, kd, kd.ctypes.data, layout.size, layout.offsets)


def launch(spec, shape: tuple, out: np.ndarray, out_strides: tuple, arrays: list,
           axes, consts: bytes = b"") -> None:
    """Bind (cached per geometry and parameter values) and run one kernel; no LLVM once the
    geometry was seen."""
    in_strides = tuple(broadcast_strides(shape, a.shape, a.strides) for a in arrays)
    key = (id(spec), shape, out_strides, in_strides)
    entry = launches.get(key)
    if entry is None:
        reduced = tuple(d in (axes or ()) for d in range(len(shape)))
        entry = launches.put(key, prepare(spec, shape, (out_strides,) + in_strides, reduced,
                                          consts))
    _, layout, compiled, kd, kd_address, size, offs = entry
    for rec in recorders:  # (explain() records what ran)
        rec.append((spec, layout))
    if size >= THREAD_MIN:
        # the kernel stage splits work over threads
        run_layout(spec, layout, out, arrays, consts)
        return
    if consts:
        head = len(kd) - len(consts) // 8
        if kd[head:].tobytes() != consts:
            kd = np.concatenate((kd[:head], np.frombuffer(consts, np.int64)))
            kd_address = data_pointer(kd)
    src = (ctypes.c_void_p * max(len(arrays), 1))(
        *[data_pointer(a) + offs[k + 1] for k, a in enumerate(arrays)])
    compiled.single(data_pointer(out) + offs[0], ctypes.addressof(src), kd_address)


specialized = LRU(1024, "specialized specs")


def _specialize(spec, arrays: list[np.ndarray]):
    """Spec with the actual byte order / alignment of the inputs (codegen swaps, align 1)."""
    dts = tuple(a.dtype for a in arrays)
    aligned = tuple(a.flags.aligned for a in arrays)
    if dts == spec.inputs and all(aligned):
        return spec
    key = (id(spec), dts, aligned)
    hit = specialized.get(key)
    if hit is None:  # (the spec in the entry keeps its id from being reused)
        hit = specialized.put(key, (spec, replace(spec, inputs=dts, aligned=aligned)))
    return hit[1]


def step_shape(arrays: list[np.ndarray]) -> tuple:
    try:
        return kernel.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        shapes = " and ".join(str(a.shape) for a in arrays)
        raise ShapeError(f"operands with shapes {shapes} do not broadcast") from None


def run_step(step: Step, arrays: list[np.ndarray], out: np.ndarray | None) -> np.ndarray:
    """Bind and launch one step; returns the array written (`out` or a new one)."""
    shape = step_shape(arrays) if arrays else ()
    spec = _specialize(step.spec, arrays)
    if step.axes is None:
        if out is None:
            out = empty_out(shape, step.dtype)
            target = out
        else:
            target = out
            _check_result_shape(shape, out)  # inputs broadcast to out, never the reverse
            shape = out.shape
        if target.size:
            launch(spec, shape, target, broadcast_strides(shape, target.shape, target.strides), arrays,
                    None, step.consts)
        return out
    axes = step.axes
    if out is None:
        out = np.empty(_reduced_shape(step, arrays), step.dtype)
    if any(shape[d] == 0 for d in axes):
        # NumPy raises for min/max over an empty axis even when the result is empty too
        # (with `initial` folded in after: the identity, which `initial` then replaces).
        row = ops.get("mean" if step.mean else step.spec.reduce)
        value = np.asarray(row.identity(out.dtype) if step.seeded else row.empty_value(out.dtype))
        with np.errstate(invalid="ignore"):  # (NaN as an integer dtype: NumPy's cast too)
            out[...] = value.astype(out.dtype)
        return out
    if out.size == 0:
        return out
    launch(spec, shape, out, out_strides(out, shape, axes, step.keepdims), arrays, axes,
            step.consts)
    if step.mean:
        count = int(np.prod([shape[d] for d in axes]))
        np.true_divide(out, count, out=out, casting="unsafe")
    return out


# --- programs and outputs ---------------------------------------------------------------------

def refuse_lazy_out(out: Any) -> None:
    """TypeError for a lazy expression given as `out=` (it has no memory to write into)."""
    if isinstance(out, Expr):
        raise TypeError(f"out must be a NumPy or lazyk array to write into, not a lazy "
                        f"expression ({summary(out)}): evaluate it first (expr.eval())")


def as_out(out: Any, what: str | None = "out=") -> np.ndarray:
    """`out` as the NumPy array a result is stored into; an array of no NumPy equivalent
    raises NotSupportedError naming `what` (the argument; None: the array's own error)."""
    if isinstance(out, np.ndarray):
        return out
    refuse_lazy_out(out)
    if not isinstance(out, Array):  # (foreign arrays, Awkward's too, are only read)
        kind = f"{type(out).__module__.split('.')[0]}.{type(out).__name__}"
        raise TypeError(f"out must be a NumPy or lazyk array, not {kind.removeprefix('builtins.')}")
    try:
        return out.to_numpy()
    except NotSupportedError:  # var dims, options, strings: say which argument it was
        if what is None:
            raise
        raise NotSupportedError(f"{what} of type '{out.type}' cannot take this result: a result "
                                "with no missing values goes into an array of fixed dims with "
                                "none (NumPy's or lazyk's); assign it: out[...] = expr") from None


def needs_temporary(out: np.ndarray, inputs: list[np.ndarray], reduce: bool) -> bool:
    """Overlap other than exact aliasing (same start, strides, shape) needs a temporary."""
    for a in inputs:
        if not np.may_share_memory(out, a):
            continue
        exact = (not reduce and a.ctypes.data == out.ctypes.data and a.shape == out.shape
                 and a.strides == out.strides and a.dtype.itemsize == out.dtype.itemsize)
        if not exact and np.shares_memory(out, a):
            return True
    return False


def numpy_if_fixed(value: Any, env: dict | None = None) -> Any:
    """`value`, a lazyk Array of fixed dims without missing values, as its NumPy array
    (results over NumPy data are NumPy arrays: none where a leaf of `env`, the
    expression's, is a var / option array); anything else as it is."""
    if env is not None and any(is_ragged(leaf_data(v)) for v in env.values()):
        return value
    if isinstance(value, Array):
        try:
            return value.to_numpy()
        except NotSupportedError:  # var dims or missing values
            return value
    return value


def run_program(prog: Program, data: dict, out: np.ndarray | None = None,
                casting: str = "same_kind") -> np.ndarray:
    """Run all steps; the last writes into `out` (checked: writable, casting, broadcast)."""
    if out is not None:
        _check_out(prog, out, casting)
    if not prog.steps:
        try:
            value = np.asarray(prog.value, dtype=prog.dtype)
        except OverflowError:  # (a Python int, as NumPy says it of weak scalars)
            v = str(prog.value)  # (a huge one shortened)
            v = v if len(v) <= 24 else f"{v[:24]}... ({len(v)} digits)"
            raise OverflowError(f"Python integer {v} out of bounds for {prog.dtype}") from None
        if out is None:
            return value.reshape(prog.shape).copy()
        return copy_cast(out, value) or out
    temps: list[np.ndarray] = []
    last = len(prog.steps) - 1
    for k, step in enumerate(prog.steps):
        arrays = [data[r] if isinstance(r, str) else temps[r] for r in step.inputs]
        target = None
        if k == last and out is not None:
            direct = (out.dtype == step.dtype and out.flags.aligned
                      and out.dtype.isnative
                      and not needs_temporary(out, arrays, step.axes is not None)
                      and (step.axes is None or out.shape == _reduced_shape(step, arrays)))
            target = out if direct else None
        temps.append(run_step(step, arrays, target))
    result = temps[-1]
    if out is not None and result is not out:
        _check_result_shape(result.shape, out)  # np.copyto would drop leading 1-dims
        copy_cast(out, result)
        return out
    return result


def copy_cast(out: np.ndarray, values: Any) -> None:
    """`np.copyto(out, values, casting="unsafe")`, float -> integer as the kernels convert
    (`lazyk.frontend.ops.cast_values`: one answer for NaN / inf / out-of-range values)."""
    values = np.asarray(values)
    if values.dtype.kind in "fc" and out.dtype.kind in "iu":
        values = ops.cast_values(values, out.dtype.newbyteorder("="))
    np.copyto(out, values, casting="unsafe")


def _reduced_shape(step: Step, arrays: list[np.ndarray]) -> tuple:
    shape = step_shape(arrays) if arrays else ()
    return tuple((1 if d in step.axes else n) for d, n in enumerate(shape)
                 if step.keepdims or d not in step.axes)


def _check_out(prog: Program, out: np.ndarray, casting: str) -> None:
    check_dtype(out.dtype, "output")  # long double, object, str, ... : never written wrong
    if not out.flags.writeable:
        raise ValueError("out= is read-only: pass a writeable array")
    if not np.can_cast(prog.dtype, out.dtype, casting):
        raise CastingError(f"cannot cast result {prog.dtype} to output {out.dtype} under "
                           f"casting={casting!r}")


def _check_result_shape(shape: tuple, out: np.ndarray) -> None:
    # (each dim of the result, from the right, is out's or 1: NumPy's broadcast_shapes
    # takes 32 dims at most)
    ok = len(shape) <= out.ndim and all(n in (m, 1) for n, m in zip(reversed(shape),
                                                                    reversed(out.shape)))
    if not ok:
        raise ShapeError(f"could not broadcast result of shape {shape} into output of shape "
                         f"{out.shape}")


def _refuse_dask_leaves(expr: Expr) -> None:
    for value in expr.env.values():
        v = leaf_data(value)
        if isinstance(v, Placeholder) and hasattr(v, "array"):  # a Dask array leaf
            raise NotSupportedError(  # (lazyk.frontend.expr.DaskLeaf)
                "this expression has Dask array leaves: lazyk.dask.evaluate(expr) gives "
                "a Dask array (then .compute() it), or compute the Dask arrays first")


def env_arrays(expr: Expr) -> dict:
    data = {}
    _refuse_dask_leaves(expr)
    for name, value in expr.env.items():
        v = leaf_data(value)
        if isinstance(v, Placeholder):
            raise BindError(f"placeholder {name!r} has no data: compile the expression and "
                            "call it with arrays")
        data[name] = v
    return data


_int_exponents = Memo(1 << 10, "integer exponents")


def int_exponents(root: Node) -> tuple[Node, ...]:
    """The exponents of integer `power` nodes with elements that may hold negative values:
    signed and not constants (a negative constant is refused when the node is built).
    Integer casts (the loop's widening) are looked through: they keep the sign. Cached."""
    found = _int_exponents.get(root)
    if found is not None:
        return found
    exps = []
    for node in toposort(root) if "power" in graph_ops(root) else ():
        if node.op == "power" and node.dtype.kind in "biu" and 0 not in node.shape:
            x = node.srcs[1]
            while x.op == "astype" and x.srcs[0].dtype.kind in "biu":
                x = x.srcs[0]
            if x.dtype.kind == "i" and x.op not in ("const", "scalar"):
                exps.append(x)
    return _int_exponents.put(root, tuple(dict.fromkeys(exps)))


def exponent_leaves(root: Node) -> tuple:
    """Names of the input leaves among `int_exponents(root)`."""
    return tuple(x.arg for x in int_exponents(root) if x.op == "input")


def power_check(e: Expr) -> Expr | None:
    """`any(exponent < 0)` over the exponents of `e`'s integer powers that may be negative
    (`int_exponents`): a bool expression over some of `e`'s leaves, or None."""
    check = None
    for x in int_exponents(e.node):  # (a 0-d value never missing: itself, not any())
        part = apply("less", Expr(x, {name: e.env[name] for name in input_names(x)}), 0)
        part = reduce("any", part, skipna=True) if x.ndim or type_flags(part)[1] else part
        check = part if check is None else apply("logical_or", check, part)
    return check


def truth(value: Any) -> bool:
    """A bool result (NumPy, lazyk or GPU array of one element) as a Python bool."""
    to_numpy = getattr(value, "to_numpy", None)
    return bool(np.asarray(to_numpy() if to_numpy is not None and
                           not isinstance(value, np.ndarray) else value))


def check_int_powers(e: Expr) -> None:
    """NumPy's ValueError when an exponent of an integer power holds a negative value,
    before any kernel of `e` runs. A kernel cannot raise, so the exponents are checked
    first: input arrays in NumPy, computed exponents (`a ** (b - 5)`) and ragged, GPU
    data by evaluating `power_check(e)` (a reduction over them)."""
    rest = []
    for x in int_exponents(e.node):
        v = leaf_data(e.env[x.arg]) if x.op == "input" else None
        if type(v) is np.ndarray:
            if v.size and (v < 0).any():
                raise ValueError(NEGATIVE_INT_POWER)
        else:
            rest.append(x)
    if rest and truth(evaluate(power_check(e))):
        raise ValueError(NEGATIVE_INT_POWER)


# Evaluation paths that later modules of this stage install when imported (a module imports
# only earlier ones; `import lazyk` imports them all):
#   "string": lazyk.runtime.stringeval.evaluate_string (a numexpr-style string),
#   "ragged": (expr, out) -> result, or NotImplemented without var / option leaves (lazyk.runtime.ragged),
#   "device": (data) -> a runner `(program, data, out)` when the leaves live on a GPU, else
#             None (lazyk.runtime.device).
#   "text_where": (expr, out, order, casting) -> the result of an expression with where()
#             over strings, else NotImplemented (lazyk.runtime.text_steps).
#   "rows": (expr, out, casting) -> the result of an expression with row operations
#             (num, flatten, sort, cumsum, ...), else NotImplemented (lazyk.runtime.row_steps).
_paths: dict[str, Callable] = {}
PATHS = ("string", "expr", "ragged", "device", "text_where", "rows")


def install_path(name: str, fn: Callable) -> None:
    """Make `fn` the evaluation path `name` (one of PATHS) that `evaluate` dispatches to."""
    if name not in PATHS:
        raise ValueError(f"unknown evaluation path {name!r}; expected one of {PATHS}")
    _paths[name] = fn


def evaluation_path(name: str) -> Callable:
    """The installed evaluation path `name` (one of PATHS)."""
    fn = _paths.get(name)
    if fn is None:
        raise RuntimeError(f"lazyk's {name!r} evaluation path is not installed: import lazyk "
                           "(its __init__ imports every module that installs one)")
    return fn


CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")
ORDERS = ("C", "F", "A", "K")


def check_options(order: Any, casting: Any, local_dict: Any = None,
                  global_dict: Any = None) -> str:
    """numexpr's checks of `evaluate`'s options (on every call, `out` or not); the order
    in capitals (numexpr takes 'k' as 'K')."""
    for what, got, valid in (("casting", casting, CASTINGS), ("order", order, ORDERS)):
        if (got.upper() if what == "order" and isinstance(got, str) else got) not in valid:
            raise ValueError(f"{what} must be one of {', '.join(map(repr, valid))}; got {got!r}")
    for what, d in (("local_dict", local_dict), ("global_dict", global_dict)):
        if d is not None and not isinstance(d, (dict, Mapping)):
            raise TypeError(f"{what} must be a mapping (dict) or None, not "
                            f"{type(d).__name__}")
    return order.upper()


def evaluate(expr: Any, out: Any = None, local_dict: dict | None = None,
             global_dict: dict | None = None, order: str = "K",
             casting: str = "same_kind", _depth: int = 1):
    """Compute `expr` (an Expr, operand or numexpr-style string); into `out` when given.

    Example: `lazyk.evaluate(2 * a + b, out=c)` or `lazyk.evaluate("2*a + b")`.

    Args:
        expr: a lazy expression, an array/scalar, or a string (names from the dicts or
            the caller's frame; a name bound to a Python list or tuple is read as
            `lazyk.array` reads it, None a missing value).
        out: NumPy or lazyk array; the result broadcasts into it as assignment does.
            Overlap with an input (other than exact aliasing) goes through a temporary.
        order: memory layout of a fresh result ('C', 'F', 'A', 'K' as NumPy): 'F' gives
            a Fortran-ordered result; 'A' / 'K' do when every input of 2 or more dims is
            Fortran-contiguous (and not C-contiguous); 'K' keeps the memory order of an
            input of the result's shape whose axes are permuted (`x.transpose(2, 0, 1)`),
            as NumPy's; otherwise C order. Ignored when `out` is given and for ragged /
            option and GPU results (always C order).
        casting: NumPy casting rule for storing into `out` ('no', 'equiv', 'safe',
            'same_kind', 'unsafe'; checked on every call).
        local_dict, global_dict: mappings (or None) for a string's names.

    Returns:
        A new NumPy array (a lazyk Array for var / option results), or `out`.

    Raises:
        ValueError: `out` is read-only; an unknown `casting` or `order`.
        TypeError: `local_dict` / `global_dict` is not a mapping.
        CastingError: `casting` forbids storing the result dtype into `out`.
        ShapeError: operands, or the result and `out`, do not broadcast.
        DTypeError: an operand or `out` has a dtype lazyk does not compute with (long
            double, object, str, datetime, structured).
    """
    if out is None and type(expr) is Expr and order == "K" and casting == "same_kind" and \
            local_dict is None and global_dict is None:  # (`.eval()`: valid options)
        done = _paths["expr"](expr)  # a dense structure seen before: a look-up and one call
        if done is not NotImplemented:
            return done
    order = check_options(order, casting, local_dict, global_dict)
    if isinstance(expr, bytes):  # (numexpr's strings are str: bytes are read from a file)
        raise TypeError(f"evaluate takes a str expression, not bytes ({expr[:40]!r}): decode it")
    if isinstance(expr, str):
        return evaluation_path("string")(expr, local_dict=local_dict, global_dict=global_dict,
                                         out=out, order=order, casting=casting,
                                         _depth=_depth + 1, _checked=True)
    e = as_expr(expr)
    done = evaluation_path("rows")(e, out, casting)  # row operations: computed, or fused, first
    if done is not NotImplemented:
        return done
    if out is None and order != "F":
        done = evaluation_path("expr")(e)  # a dense structure seen before: a look-up and one call
        if done is not NotImplemented:
            return done
    check_int_powers(e)  # every path below: NumPy's ValueError, never a kernel's garbage
    done = evaluation_path("text_where")(e, out, order, casting)  # where() over strings first
    if done is not NotImplemented:
        return done
    _refuse_dask_leaves(e)  # (before the loop nest, which reads every leaf's memory)
    done = evaluation_path("ragged")(e, out, casting)  # var / option leaves
    if done is not NotImplemented:
        return done
    if e.node.op == "input" and out is None and is_text(e.dtype):  # strings: a copy
        leaf = e.env[e.node.arg]
        if isinstance(getattr(leaf, "owner", None), Array):  # (not its {begin, size} slots)
            return leaf.owner.copy()
        if isinstance(leaf_data(leaf), np.ndarray):
            return np.array(leaf_data(leaf))  # fixed strings, no kernel
    data = env_arrays(e)
    on_device = evaluation_path("device")(data)  # GPU leaves run there; mixed raise DeviceError
    if on_device is not None:
        return on_device(plan(e.node), data, out)
    node, data = canonical(e.node, data)
    sized = all(isinstance(d, int) for d in e.shape)  # (a compiled graph's dims: symbols)
    if out is None:
        like = kept_layout(order, data, e.shape) if sized else None
        if like is not None:  # (its axes' memory order, written in place below)
            out = np.empty_like(like, dtype=e.dtype)
        elif order == "C" or len(e.shape) < 2 or not sized or not fortran_result(order, data):
            return run_program(plan(node), data)
        else:
            out = np.empty(e.shape, e.dtype, order="F")  # written in place below
    target = as_out(out)
    if sized:  # (else the kernel's own check, from the data's shapes)
        _check_result_shape(e.shape, target)
    if target.dtype.kind in "biufc" and np.can_cast(node.dtype, target.dtype, casting) \
            and target.dtype.newbyteorder("=") != node.dtype and node.op != "reduce":
        node = cast(node, target.dtype.newbyteorder("="))  # (in the kernel: one store pass)
        run_program(plan(node), data, target, casting="unsafe")
    else:
        run_program(plan(node), data, target, casting=casting)
    return out


def canonical(root: Node, data: dict) -> tuple[Node, dict]:
    """Rename leaves `$0, $1, ...` in order of appearance, so re-built graphs hit the plan cache.

    Each `lazyk.evaluate("a + b")` builds fresh leaves; with canonical names the same
    structure, dtypes and shapes give the very same (interned) graph, Program and specs.
    """
    names: dict[str, str] = {}

    def rename(node: Node, srcs: tuple) -> Node:
        if node.op == "input":
            new = names.setdefault(node.arg, f"${len(names)}")
            return node.replace(arg=new)
        return node.replace(srcs=srcs) if srcs != node.srcs else node

    new_root = rewrite(root, rename)
    return new_root, {names[k]: v for k, v in data.items() if k in names}

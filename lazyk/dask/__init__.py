"""lazyk on Dask: one lazy expression over arrays larger than one machine.

`lazyk.dask.evaluate(expr)` turns an expression whose leaves are Dask arrays (NumPy and
lazyk arrays may join in) into a Dask array:

- the elementwise part becomes one `blockwise` layer (chunks unified first) whose tasks call
  one fused lazyk kernel per block;
- reductions (`sum prod min max any all mean`, any axes, keepdims) run the fused kernel as
  the chunk step (`sum(a*b)` never materialises `a*b`) and lazyk kernels to combine the
  partial results in a `dask.array.reduction` tree; `argmin` / `argmax`, `cumsum` /
  `cumprod` across the chunks are Dask's own over the fused values.

Kernels pickle as expression graph plus signature and are planned once per process; their
machine code comes from the in-memory or on-disk kernel cache, so a worker compiles each
expression once (`lazyk.stats()` shows it): every block runs the kernel's variant for
unaligned inputs, so blocks received from other workers neither recompile nor get copied.

Ragged (`var`) and missing-value (`?T`) data: `from_ragged(x, rows_per_part)` (or a list of
lazyk arrays, a `pyarrow.ChunkedArray`, a Dask array of masked chunks) or
`from_delayed(parts, type, row_counts)` (partitions made by Dask tasks) gives a
`RaggedArray`, a Dask collection of lazyk arrays split by outer rows that is also a lazyk
operand (numbers, `?T` or strings; rows of records give a `RaggedRecords`, whose fields are
`RaggedArray`s); `evaluate` over it gives one blockwise layer per expression
(`lazyk.dask.layers`). Row selection (`x[mask]`, a mask of one dim) and `flatten` run per
partition, their row counts known once computed (`nan`, as Dask's unknown chunk sizes);
work that needs the whole collection's rows is refused by name (`lazyk.dask.rowwork`).
A Dask array of NumPy masked arrays is refused in expressions (its mask would be ignored).

Modules: `collection` (the collections), `sources` (making them), `partitions` (their
data between tasks), `tasks` (one expression on one partition), `folds` (reductions over
the rows' axis, partials combined; histograms' counts), `rowwork` (what work does to the partitions' rows),
`layers` (expressions over collections -> Dask layers), `tokens` (Dask's keys of lazyk
expressions and arrays).

`evaluate(expr, out=buf)` computes at once into a NumPy or lazyk array of this process
(block by block under the local schedulers); Dask collections are immutable and refused as
`out=`, and so is `out=` on a compiled kernel called with Dask arrays (its result is lazy).

Importing this module registers `dask.base.normalize_token` for `lazyk.Expr` and
`lazyk.Array`, so graphs built twice from the same inputs get the same keys.
"""
from __future__ import annotations

import functools
import itertools
import sys
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

try:
    import dask.array as da
    from dask.base import get_scheduler, is_dask_collection, tokenize
    from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
    from dask.local import get_sync
    from dask.threaded import get as threaded_get
except ImportError as err:  # pragma: no cover  (dask is an optional extra)
    raise ImportError("lazyk.dask needs Dask: pip install 'lazyk[dask]'") from err

from lazyk.arrays.array import Array
from lazyk.dask.collection import RaggedArray, RaggedRecords, RowsLeaf, collection
from lazyk.dask.folds import histogram_counts
from lazyk.dask.layers import evaluate_rows
from lazyk.dask.rowwork import across_chunks, dense_step, has_row_work
from lazyk.dask.sources import from_delayed, from_ragged, split_dask_leaves
from lazyk.dask.tasks import records_shape, zip_part
from lazyk.dask.tokens import register_tokens
from lazyk.errors import BindError, CastingError, NotSupportedError, ShapeError, TypeMatchError
from lazyk.frontend import expr as lx
from lazyk.frontend.expression import Expr
from lazyk.frontend.exprparse import build
from lazyk.frontend.graph import REDUCE_OP, ROWS_OP, Node, rewrite, toposort, type_text
from lazyk.frontend.histogram import Histogram
from lazyk.frontend.leaves import DaskLeaf, Placeholder, leaf_data
from lazyk.frontend.numpy_rules import cast, partial_dtype
from lazyk.frontend.operands import as_expr
from lazyk.frontend.ops import ARG_REDUCTIONS
from lazyk.frontend.record_layout import with_flags
from lazyk.frontend.records import Records, lined_up_fields
from lazyk.frontend.tuples import reshaped
from lazyk.lru import LRU
from lazyk.runtime import compiled
from lazyk.runtime import launch as runtime
from lazyk.runtime.call_inputs import check_fits, narrows
from lazyk.runtime.compiled import CompiledExpr, RaggedCompiledExpr
from lazyk.types.unify import solve

__all__ = ["RaggedArray", "RaggedRecords", "evaluate", "from_delayed", "from_ragged"]

_counter = itertools.count()


def evaluate(expr: Any, local_dict: dict | None = None, global_dict: dict | None = None,
             split_every: Any = None, *, out: Any = None, casting: str = "same_kind",
             _depth: int = 1) -> Any:
    """A Dask array that computes `expr` chunk by chunk with fused lazyk kernels.

    Example: `lazyk.dask.evaluate(lazyk.sin(a) * b)` or `lazyk.dask.evaluate("sum(a*b)")`
    with Dask arrays `a`, `b`; `.compute()` the result (or keep building on it).

    Args:
        expr: a lazy expression, an operand, or a numexpr-style string whose names come from
            the dicts (the caller's frame when left out). Leaves may be Dask, NumPy or lazyk
            arrays (NumPy data joins as one chunk, rechunked to match).
        local_dict, global_dict: mappings for a string's names.
        split_every: the reduction tree's fan-in (as `dask.array.reduction`).
        out: a NumPy or lazyk array (in this process) to fill: the result is computed now
            and `out` is returned, as `lazyk.evaluate(..., out=)`. Plain results under the
            threaded or synchronous scheduler are written block by block straight into
            `out` (`dask.array.store`: the whole result is never held twice); other
            schedulers (processes, distributed) compute it, then copy. A Dask array cannot
            be an `out=` (immutable): the lazy result is the Dask way.
        casting: NumPy casting rule from the result to `out`'s dtype.
    Returns:
        A `dask.array`, a `lazyk.dask.RaggedArray` (var / ?T results over collections), or
        `out`.
    Raises:
        NotSupportedError: a Dask array of unknown chunk sizes or of NumPy masked arrays;
            `out=` a Dask collection.
        BindError: a placeholder leaf (it has no data; use `lazyk.compile` and call it).
        ShapeError, CastingError: a result that does not fit `out`.
        TypeError: `local_dict` / `global_dict` that are not mappings (several results are
            evaluated one by one: `lazyk.dask.evaluate(e1)`, `lazyk.dask.evaluate(e2)`).
    """
    for what, d in (("local_dict", local_dict), ("global_dict", global_dict)):
        if d is not None and not isinstance(d, Mapping):
            raise TypeError(f"lazyk.dask.evaluate takes one expression; its {what} must be a "
                            f"mapping, not {type(d).__name__} (several results: evaluate "
                            "them one by one, dask.compute computes them together)")
    if isinstance(expr, str):
        if local_dict is None or global_dict is None:
            frame = sys._getframe(_depth)
            local_dict = frame.f_locals if local_dict is None else local_dict
            global_dict = frame.f_globals if global_dict is None else global_dict
            del frame
        expr = build(expr, local_dict, global_dict)
    if isinstance(expr, Histogram):
        if out is not None:
            return _store(histogram_counts(expr, split_every, _bins), out, casting)
        return histogram_counts(expr, split_every, _bins)
    if isinstance(expr, Records) and out is None:
        return _records(expr, split_every)
    e = as_expr(expr)
    if out is not None:
        return _store(evaluate(e, split_every=split_every), out, casting)
    if any(isinstance(v, RowsLeaf) for v in e.env.values()):
        return evaluate_rows(e, split_every)
    arrays: dict[str, Any] = {}
    for name, value in e.env.items():
        v = leaf_data(value)
        if isinstance(v, DaskLeaf):
            _refuse_masked(v.array)
            arrays[name] = v.array
        elif isinstance(v, Placeholder):
            raise BindError(f"placeholder {name!r} has no data: lazyk.compile the expression "
                            "and call it with Dask arrays")
        elif isinstance(v, np.ndarray):
            arrays[name] = da.from_array(v, chunks=-1)
        else:
            what = getattr(getattr(v, "array", v), "type", type(v).__name__)
            raise NotSupportedError(
                f"ragged (var) and missing-value (?T) data are not supported with dask.array "
                f"collections (an operand of type {what}; nanmax and the like give None for "
                "a slice of NaN only: lazyk.max(x, skipnan=True) gives NumPy's NaN); ragged "
                "data runs as lazyk.dask.from_ragged collections")
    if has_row_work(e.node) and not across_chunks(e.node):  # chunks as partitions of rows
        return evaluate_rows(split_dask_leaves(e), split_every)
    return _evaluate(e.node, arrays, split_every)


def _bins(e: Any, split_every: Any = None) -> Any:
    """`evaluate` of a histogram's bins or weights: a min / max of a row that folds nothing
    (`lazyk.max(pt, axis=1)` of an event without jets) is missing there, so it counts
    nowhere, as on one machine."""
    e = as_expr(e)
    if any(isinstance(v, RowsLeaf) for v in e.env.values()):
        return evaluate_rows(e, split_every, bins=True)
    if has_row_work(e.node):
        return evaluate_rows(split_dask_leaves(e), split_every, bins=True)
    return evaluate(e, split_every=split_every)


def _store(result: Any, out: Any, casting: str) -> Any:
    """`out=`: `result` computed now and written into `out`; returns `out`."""
    if is_dask_collection(out):
        raise NotSupportedError(
            f"out= a {type(out).__module__}.{type(out).__qualname__}: Dask collections are "
            "immutable; lazyk.dask.evaluate(expr) without out= gives the lazy result")
    if not isinstance(result, da.Array):  # a RaggedArray: lazyk stores it (storerows)
        return as_expr(result.compute()).eval(out=out, casting=casting)
    if any(n != n for n in result.shape):  # rows selected: their number known once computed
        return _store(da.from_array(result.compute(), chunks=-1), out, casting)
    target = out.to_numpy() if isinstance(out, Array) else out
    if not isinstance(target, np.ndarray):
        raise TypeError(f"out= must be a NumPy or lazyk array, not "
                        f"{type(out).__module__}.{type(out).__qualname__}")
    if not target.flags.writeable:
        raise ValueError("out= is read-only")
    if not np.can_cast(result.dtype, target.dtype, casting):
        raise CastingError(f"cannot cast result {result.dtype} to output {target.dtype} "
                           f"under casting={casting!r}")
    try:
        shape = np.broadcast_shapes(result.shape, target.shape)
    except ValueError:
        shape = None
    if shape != target.shape:
        raise ShapeError(f"could not broadcast result of shape {result.shape} into output "
                         f"of shape {target.shape}")
    local = get_scheduler(collections=[result]) in (threaded_get, get_sync)
    if local and target.ndim:
        da.store(da.broadcast_to(result, target.shape), target, lock=False)
    else:
        target[...] = result.compute()
    return out


def _refuse_masked(x: Any) -> None:
    """NotSupportedError for NumPy masked data (a Dask array or block): read as data."""
    if isinstance(getattr(x, "_meta", x), np.ma.MaskedArray):
        raise NotSupportedError(
            "a Dask array of NumPy masked arrays in a lazyk expression: its mask would be "
            "ignored; lazyk.dask.from_ragged(x) makes it a collection of ?T (missing-value) "
            "lazyk arrays")


def call_compiled(k: Any, inputs: tuple, out: Any = None,
                  casting: str = "same_kind") -> da.Array:
    """`k(*inputs)` for a `lazyk.compile` result called with Dask arrays: a Dask array
    (numbers of another dtype converted under `casting`, as for NumPy inputs)."""
    if out is not None:
        raise NotSupportedError("out= with Dask inputs: the result is a lazy Dask array "
                                "(store it with dask.array.store, or fill an array with "
                                "lazyk.dask.evaluate(expr, out=...))")
    if len(inputs) != len(k.params):
        raise TypeError(f"expected {len(k.params)} inputs {k.signature}, got {len(inputs)}")
    if isinstance(k, RaggedCompiledExpr) or any(isinstance(x, RaggedArray) for x in inputs):
        return _call_ragged(k, inputs, casting)
    arrays = {}
    for i, (name, x) in enumerate(zip(k.params, inputs)):
        _refuse_masked(x)
        if not hasattr(x, "chunks"):
            x = da.asarray(np.asarray(x))
        shape, dtype = k._types[i]
        if np.dtype(x.dtype).newbyteorder("=") != dtype and x.ndim == len(shape):
            want = k._cast_input(i, np.empty(0, x.dtype), dtype, casting).dtype
            if narrows(np.dtype(x.dtype), want, casting):  # each block checked when computed
                x = _checked(x, None, k.labels[i], want)
            x = x.astype(want)
        if np.dtype(x.dtype).newbyteorder("=") != dtype or x.ndim != len(shape):
            raise TypeMatchError(f"input {k.labels[i]!r}: expected {type_text(shape, dtype)}, "
                                 f"got {type_text(x.shape, np.dtype(x.dtype))}")
        arrays[name] = x
    k._check_shapes([arrays[name].shape for name in k.params])
    for name in k.constants:  # captured arrays: one chunk each
        view = leaf_data(k.expr.env[name])
        if not isinstance(view, np.ndarray) or view.dtype.kind not in "biufc":
            raise NotSupportedError("Dask inputs to a compiled expression that captured a "
                                    "var / option or string array: make it a parameter "
                                    "(lazyk.placeholder) and pass it as a Dask array")
        arrays[name] = da.from_array(view, chunks=-1)
    sizes = {name: tuple(arrays[name].shape) for name in arrays}  # (the graph at these sizes)

    def concrete(node: Node, srcs: tuple) -> Node:
        if node.op == "input":
            return node.replace(shape=sizes[node.arg])
        return reshaped(node, srcs)

    return _evaluate(rewrite(k.expr.node, concrete), arrays, None)


def _checked(x: Any, e: Expr | None, label: str, dtype: np.dtype) -> Any:
    """Input `x` (its expression `e`) as a collection whose partitions are checked to fit
    the integer `dtype` when computed (`check_fits`)."""
    if isinstance(x, da.Array):
        return x.map_blocks(functools.partial(check_fits, label, dtype=dtype), dtype=x.dtype)
    c = x if isinstance(x, RaggedArray) else evaluate(e)
    name = f"lazyk-fits-{tokenize(c.name, label, str(dtype))}"
    layer = {(name, j): (check_fits, label, key, dtype)
             for j, key in enumerate(c.__dask_keys__())}
    return c._derived(name, layer, c.row_counts, c.type)


def _call_ragged(k: Any, inputs: tuple, casting: str = "same_kind") -> Any:
    """`k(*inputs)` of a compiled expression over var / option data with `lazyk.dask`
    collections (or Dask arrays): its graph over them, run as `evaluate` runs one."""
    exprs = [as_expr(x) for x in inputs]
    for i, (e, t) in enumerate(zip(exprs, k._types)):  # numbers converted as a call does
        if e.dtype != t[1] and e.dtype.kind in "biuf" and t[1].kind in "biufc":
            if not np.can_cast(e.dtype, t[1], casting):
                raise CastingError(f"input {k.labels[i]!r}: cannot cast {e.dtype} to the "
                                   f"parameter's {t[1]} under casting={casting!r} (pass "
                                   f"casting='unsafe' to convert anyway): {k.signature}")
            if narrows(e.dtype, t[1], casting):  # each partition's numbers checked
                exprs[i] = e = as_expr(_checked(inputs[i], e, k.labels[i], t[1]))
            exprs[i] = lx.astype(e, t[1])
    sizes: dict = {}  # (symbols of two sizes: the ShapeError of a call on one machine)
    for i, e in enumerate(exprs):
        for ax, (want, n) in enumerate(zip(k._types[i][0], e.shape)):
            if isinstance(n, int) and want is not None:
                k._check_size(sizes, i, ax, want, n)
    try:
        solve(k.signature, *[e.type for e in exprs])
    except TypeMatchError as err:
        raise TypeMatchError(f"{k.signature}: {err}") from None
    env = {name: v for name, v in k.expr.env.items() if name not in k.params}
    leaves = {}
    for name, e in zip(k.params, exprs):
        env.update(e.env)
        leaves[name] = e.node

    def concrete(node: Node, srcs: tuple) -> Node:
        if node.op == "input" and node.arg in leaves:
            return leaves[node.arg]
        return reshaped(node, srcs)

    return evaluate(Expr(rewrite(k.expr.node, concrete), env))


def _records(rec: Records, split_every: Any) -> RaggedRecords:
    """Records over collections: each field computed, lined up with the others as on one
    machine, then each partition's fields laid out as one array of records (`zip_part`)."""
    rec = lined_up_fields(rec)  # (fields of other rows: paired, or refused by name)
    parts = [evaluate(f, split_every=split_every) for f in with_flags(rec)]
    parts = [from_ragged(p) if isinstance(p, da.Array) else p for p in parts]  # (plain)
    if not all(isinstance(p, RaggedArray) for p in parts) or \
            len({p.npartitions for p in parts}) != 1:
        raise NotSupportedError(f"records ({rec.type}) on Dask are laid out partition by "
                                "partition from fields split by the same rows: compute the "
                                "fields (lazyk.dask.evaluate(r.x, r.y))")
    shape = records_shape(rec)
    name = f"lazyk-records-{tokenize([p.name for p in parts], shape)}"
    layer = {(name, i): (zip_part, shape, *[(p.name, i) for p in parts])
             for i in range(parts[0].npartitions)}
    dsk = HighLevelGraph.from_collections(name, MaterializedLayer(layer), dependencies=parts)
    return collection(dsk, name, parts[0]._counts, rec.type)


# ---------------------------------------------------------------- graph -> Dask layers
def _evaluate(root: Node, arrays: dict, split_every: Any) -> da.Array:
    """Innermost reductions first, each replaced by a leaf holding its Dask result."""
    arrays = {name: _without_empty_blocks(x) for name, x in arrays.items()}

    def visit(node: Node, srcs: tuple) -> Node:
        if srcs != node.srcs:
            node = node.replace(srcs=srcs)
        if node.op != REDUCE_OP and not (node.op == ROWS_OP and dense_step(node)):
            return node
        name = f"$r{next(_counter)}"
        arrays[name] = _reduction(node, arrays, split_every) if node.op == REDUCE_OP and \
            node.arg[0] not in ARG_REDUCTIONS else \
            dask_step(node, _evaluate(node.srcs[0], arrays, split_every))
        return Node("input", node.dtype, node.shape, (), name)

    root = rewrite(root, visit)
    if root.op == "input":
        return arrays[root.arg]
    if not any(n.op == "input" for n in toposort(root)):  # constants only
        return da.from_array(np.asarray(runtime.evaluate(Expr(root, {}))), chunks=-1)
    k, names = _kernel(root)
    return da.blockwise(*_blockwise_args(k, names, arrays, root.ndim), dtype=root.dtype,
                        align_arrays=True, concatenate=True,
                        meta=np.empty((0,) * root.ndim, root.dtype),
                        name=_name("lazyk", k, names, arrays))


def dask_step(node: Node, values: da.Array) -> da.Array:
    """`lazyk.argmax` / `argmin`, `cumsum` / `cumprod` or `flatten` of the values (their
    fused kernel's Dask array) by Dask's own, which knows each chunk's place in the whole
    array (NumPy's rules: the first NaN wins, an empty axis raises)."""
    if node.op == REDUCE_OP:  # (every axis: the place in the values raveled, so the chunks
        op, axes, keepdims = node.arg[:3]  # come in NumPy's order and the first tie wins)
        if 0 in [values.shape[a] for a in axes]:  # (NumPy's error; Dask's ravel refuses)
            raise ValueError(f"attempt to get {op} of an empty sequence")
        if len(axes) > 1:
            return getattr(da, op)(values.ravel(), axis=0).reshape(node.shape)
        return getattr(da, op)(values, axis=axes[0], keepdims=keepdims)
    if node.arg[0] == "flatten":
        return values.reshape(node.shape)
    return getattr(da, node.arg[0])(values, axis=node.arg[1][0], dtype=node.dtype)


def _without_empty_blocks(x: da.Array) -> da.Array:
    """`x` without its blocks of size 0 along dims that hold items: a min or max of such a
    block has nothing to fold, though the whole dim does."""
    chunks = tuple(tuple(c for c in cs if c) or cs for cs in x.chunks)
    if chunks == x.chunks or any(np.isnan(c) for cs in x.chunks for c in cs):
        return x
    return x.rechunk(chunks)


def _blockwise_args(k: Any, names: dict, arrays: dict, ndim: int) -> list:
    """`func, out_ind, arr, ind, ...` with operands right-aligned as in broadcasting."""
    args: list = [_Block(k), tuple(range(ndim))]
    by_param = {v: key for key, v in names.items()}
    for param in k.params:
        x = arrays[by_param[param]]
        args += [x, tuple(range(ndim - x.ndim, ndim))]
    return args


def _name(prefix: str, k: Any, names: dict, arrays: dict, *extra: Any) -> str:
    keys = [arrays[n].name for n in names]
    return f"{prefix}-{tokenize(k, keys, *extra)}"


def _reduction(node: Node, arrays: dict, split_every: Any) -> da.Array:
    """`op(elementwise(leaves), axes)`: the fused kernel reduces each block (keepdims) in a
    blockwise layer, then lazyk kernels combine the partials in a reduction tree."""
    op, axes, keepdims = node.arg[:3]
    src = node.srcs[0]
    fold = "sum" if op == "mean" else op
    acc = partial_dtype(fold, node.dtype)  # (float32 sums: float64 partials, as one machine)
    partial_node = Node(REDUCE_OP, acc,
                        tuple(1 if d in axes else n for d, n in enumerate(src.shape)),
                        (cast(src, acc),), (fold, axes, True))
    k, names = _kernel(partial_node)
    partials = da.blockwise(*_blockwise_args(k, names, arrays, src.ndim), dtype=node.dtype,
                            align_arrays=True, concatenate=True,
                            adjust_chunks={ax: 1 for ax in axes},
                            meta=np.empty((0,) * src.ndim, node.dtype),
                            name=_name("lazyk-partial", k, names, arrays))
    dt = acc.str
    aggregate = _Fold(fold, dt)
    if op == "mean":
        count = int(np.prod([src.shape[d] for d in axes]))
        aggregate = functools.partial(_divide_after, aggregate, count)
    if acc != node.dtype:
        aggregate = functools.partial(_rounded, aggregate, node.dtype.str)
    return da.reduction(partials, _keep, aggregate, axis=axes, keepdims=keepdims,
                        dtype=node.dtype, split_every=split_every,
                        combine=_Fold(fold, dt), concatenate=True,
                        meta=np.empty((0,) * len(node.shape), node.dtype),
                        name=f"lazyk-{op}")


def _keep(x: np.ndarray, axis: Any = None, keepdims: bool = True) -> np.ndarray:
    """The reduction's chunk step: partials are already one element along the axes."""
    return x


# ---------------------------------------------------------------- kernels (per process)
kernels = LRU(256, "Dask block kernels")  # symbolic graph -> CompiledExpr


def _kernel(root: Node) -> tuple[Any, dict]:
    """The compiled kernel for an elementwise graph (or a keepdims reduction of one).

    Leaves are renamed `x0, x1, ...` and sizes other than 1 become symbols `D<axis>`, so
    every block (and every equal expression) shares one planned, compiled kernel.
    Returns (kernel, {original leaf name: parameter name}).
    """
    top = root.srcs[0] if root.op == REDUCE_OP else root
    ndim = top.ndim
    names: dict[str, str] = {}

    def sym(shape: tuple) -> tuple:
        n = len(shape)
        return tuple(1 if d == 1 else f"D{ndim - n + p}" for p, d in enumerate(shape))

    def visit(node: Node, srcs: tuple) -> Node:
        if node.op == "input":
            return Node("input", node.dtype, sym(node.shape), (),
                        names.setdefault(node.arg, f"x{len(names)}"))
        if node.op == REDUCE_OP:
            axes = node.arg[1]
            shape = tuple(1 if d in axes else n for d, n in enumerate(srcs[0].shape))
            return Node(REDUCE_OP, node.dtype, shape, srcs, node.arg[:1] + (axes, True))
        return Node(node.op, node.dtype, sym(node.shape), srcs, node.arg)

    sym_root = rewrite(root, visit)
    def build():
        env = {n.arg: Placeholder(n.arg, n.shape, n.dtype)
               for n in toposort(sym_root) if n.op == "input"}
        return CompiledExpr(Expr(sym_root, env))
    return kernels.get_or_build(sym_root, build), names


class _Block:
    """A blockwise task function: run kernel `k` on one block of every operand."""

    __slots__ = ("k",)

    def __init__(self, k: Any):
        self.k = k

    def __call__(self, *blocks: Any) -> np.ndarray:
        k = self.k
        if k._pcheck is not None:  # integer powers' negative exponents, block by block
            k.check_powers(blocks)
        steps = k.program.steps
        if len(steps) != 1 or steps[0].mean or type(blocks[0]) is not np.ndarray or \
                len(blocks) != len(k.params):
            for b in blocks:
                _refuse_masked(b)
            return k(*blocks)
        # NOTE: alignment is part of a kernel's key, and blocks that come from other workers
        # often are not 8-byte aligned: every block runs the unaligned variant of the
        # kernel (one compile per worker; as fast on x86-64), with no copy.
        step = steps[0]
        where = {name: i for i, name in enumerate(k.params)}
        arrays = [np.asarray(blocks[where[r]]) for r in step.inputs]
        k._check_shapes([b.shape for b in blocks])
        return _run_unaligned(step, arrays)

    def __reduce__(self):
        return (_Block, (self.k,))

    def __dask_tokenize__(self):
        return ("lazyk.block",) + self.k.__dask_tokenize__()


unaligned_specs = LRU(256, "unaligned specs")


def _run_unaligned(step: Any, arrays: list) -> np.ndarray:
    """One planned step on `arrays` through the kernel compiled for unaligned inputs."""
    dts = tuple(a.dtype for a in arrays)
    key = (step.spec, dts)
    spec = unaligned_specs.get_or_build(key, lambda: replace(step.spec, inputs=dts,
                                                              aligned=(False,) * len(dts)))
    shape = runtime.step_shape(arrays)
    if step.axes is None:
        out = runtime.empty_out(shape, step.dtype)
        if out.size:
            runtime.launch(spec, shape, out,
                           runtime.broadcast_strides(shape, out.shape, out.strides), arrays,
                           None, step.consts)
        return out
    axes = step.axes
    rshape = tuple((1 if d in axes else n) for d, n in enumerate(shape)
                   if step.keepdims or d not in axes)
    if any(shape[d] == 0 for d in axes) or 0 in rshape:
        return runtime.run_step(step, arrays, None)  # identities, empty results: usual path
    out = np.empty(rshape, step.dtype)
    runtime.launch(spec, shape, out, runtime.out_strides(out, shape, axes, step.keepdims),
                   arrays, axes, step.consts)
    return out


class _Fold:
    """Combine / aggregate step: `op` over `axis` of the partial results, a lazyk kernel."""

    __slots__ = ("dtype", "op")

    def __init__(self, op: str, dtype: str):
        self.op, self.dtype = op, dtype

    def __call__(self, x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
        axes = tuple(range(x.ndim)) if axis is None else \
            tuple(sorted(a % x.ndim for a in (axis if isinstance(axis, tuple) else (axis,))))
        return _fold_kernel(self.op, self.dtype, x.ndim, axes, bool(keepdims))(x)

    def __reduce__(self):
        return (_Fold, (self.op, self.dtype))

    def __dask_tokenize__(self):
        return ("lazyk.fold", self.op, self.dtype)


@functools.lru_cache(maxsize=256)
def _fold_kernel(op: str, dtype: str, ndim: int, axes: tuple, keepdims: bool) -> Any:
    p = lx.placeholder("p", " * ".join([f"D{i}" for i in range(ndim)] + [np.dtype(dtype).name]))
    dt = None if op in ("any", "all") else np.dtype(dtype)
    return CompiledExpr(lx.reduce(op, p, axis=axes, keepdims=keepdims, dtype=dt))


def _rounded(fold: Any, to: str, x: np.ndarray, axis: Any = None,
             keepdims: bool = False) -> np.ndarray:
    """`fold`'s result (added in a wider type) rounded once to the result's dtype `to`."""
    return np.asarray(fold(x, axis=axis, keepdims=keepdims)).astype(to)


def _divide_after(fold: _Fold, count: int, x: np.ndarray, axis: Any = None,
                  keepdims: bool = False) -> np.ndarray:
    r = fold(x, axis=axis, keepdims=keepdims)
    return np.true_divide(r, count, out=r, casting="unsafe")


register_tokens()
compiled.install_dask(call_compiled)  # `k(dask_array)` for compiled expressions

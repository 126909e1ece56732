"""Expressions over ragged (`var`) and missing-value (`?T`, `?var`) arrays: the entry.

Every such expression runs in one generated loop nest that follows the result type
(`lazyk.runtime.nest_run`, `lazyk.codegen.nest`): fixed and var dims in any order and at any depth,
missing values and missing rows, elementwise work, `where`, and reductions (sum, prod, min,
max, any, all, mean; `skipna=`, `initial=`, `keepdims=`) over any axes, fused into the
kernel. The semantics are those of `tests/ragged_reference.py`. What the nest does not take
raises NotSupportedError naming the types and the operation. String operations in ragged
data run first where the nest does not fuse them (`lazyk.runtime.text_steps`); `out=` of a var /
option type is stored in place by `lazyk.runtime.ragged_out`.
"""
from __future__ import annotations

import numpy as np

from lazyk import types as T
from lazyk.arrays.array import Array, masked
from lazyk.errors import CastingError, NotSupportedError, ShapeError
from lazyk.frontend.expression import Expr, typed_dump
from lazyk.frontend.graph import PICK_OP, REDUCE_OP, Node, rewrite, toposort
from lazyk.frontend.indexing import index_by
from lazyk.frontend.leaves import describe_ragged as describe
from lazyk.frontend.leaves import is_ragged, is_text, leaf_data
from lazyk.frontend.missing import option_flags
from lazyk.frontend.numpy_rules import broadcast_shapes
from lazyk.frontend.operands import as_expr
from lazyk.frontend.ops import ARG_REDUCTIONS
from lazyk.frontend.rowops import local_index
from lazyk.passes.fuse import cut_points
from lazyk.runtime import launch as runtime
from lazyk.runtime.device import common_device
from lazyk.runtime.launch import as_out, refuse_lazy_out
from lazyk.runtime.nest_run import explain_nests
from lazyk.runtime.nest_select import needs_nest, take_kept_rows
from lazyk.runtime.nest_steps import evaluate_nest
from lazyk.runtime.picks import lower_picks
from lazyk.runtime.ragged_out import is_ragged_type, store
from lazyk.runtime.ragged_rules import RECORDERS
from lazyk.runtime.text_steps import (  # noqa: F401
    computed,
    evaluate_text_where,
    has_text_where,
    text_result,
)
from lazyk.runtime.text_steps import fused as fuse_strings
from lazyk.runtime.text_steps import lower as lower_strings


def evaluate_if_ragged(expr, out=None, casting: str = "same_kind"):
    """`evaluate(expr, out, casting)` when a leaf is a var / option array or the graph
    holds work only the loop nest runs (`x[mask]`, `x[positions]`, `argmax`), else
    NotImplemented (the "ragged" evaluation path of `lazyk.runtime.launch.evaluate`). Over
    NumPy leaves only, a result of fixed dims without missing values is a NumPy array."""
    dense = not any(is_ragged(leaf_data(v)) for v in expr.env.values())
    if dense and not needs_nest(expr.node):
        return NotImplemented
    if dense and out is None and dense_position(expr.node, expr.env):
        # argmax / argmin of fixed data: the values computed by the flat kernels, then
        # NumPy's (its vectorised scan, where the loop nest would take one thread)
        node, x = expr.node, expr.node.srcs[0]
        data = leaf_data(expr.env[x.arg]) if x.op == "input" else None  # (an array: as it is)
        values = data if isinstance(data, np.ndarray) and data.ndim == len(x.shape) else \
            np.asarray(runtime.evaluate(Expr(x, expr.env)))
        axes = tuple(node.arg[1])
        axis = None if len(axes) == values.ndim != 1 else axes[0]
        return np.asarray(getattr(np, node.arg[0])(values, axis=axis, keepdims=bool(node.arg[2])),
                          np.int64)
    got = missing_where(expr) if out is None else None
    if got is not None:
        return got
    where = common_device({n: leaf_data(v) for n, v in expr.env.items()})
    if where != "cpu":  # (var / option data never is)
        raise NotSupportedError(f"x[mask], x[positions] and argmax / argmin run on the CPU; "
                                f"the operands are on {where}: move them with .to('cpu')")
    got = evaluate(expr, out, casting)
    return runtime.numpy_if_fixed(got) if dense and out is None else got


def dense_position(node: Node, env: dict) -> bool:
    """Whether `node` is an argmax / argmin of one axis or all of them over work the
    flat kernels compute (fixed dims, none empty: the loop nest names an empty row; no
    missing values), whose positions NumPy's scan finds faster than the loop nest: not
    along the first axis of rows read along (`_by_columns`)."""
    if node.op != REDUCE_OP or node.arg[0] not in ARG_REDUCTIONS:
        return False
    x = node.srcs[0]
    if not (len(node.arg[1]) == 1 or len(node.arg[1]) == len(x.shape)) or None in x.shape or \
            0 in x.shape or is_text(x.dtype) or needs_nest(x) or _by_columns(node, env):
        return False
    rows, values = option_flags(x, env)
    return not any(rows) and not values


# Values an argmax / argmin along the first axis must fold, and columns, for the loop nest's
# fold by columns to run it (threads on columns, each row read along) where NumPy walks each
# column: float32, one thread, min of 7: (2000, 2000) 1.9 ms against NumPy's 19.7, (1e5, 16)
# 1.2 against 4.3, (256, 256) 0.16 against 0.09, (1e5, 8) 0.9 against 1.2, (1e6, 3) 8.5
# against 2.2.
COLUMN_FOLD_VALUES, COLUMN_FOLD_COLUMNS = 1 << 17, 8


def _by_columns(node: Node, env: dict) -> bool:
    """Whether the arg-reduction `node` (along one axis of fixed dims) runs in the loop
    nest's fold by columns: along the first of two or more axes, enough values and columns,
    each NumPy leaf's last axis contiguous (or broadcast)."""
    x = node.srcs[0]
    if tuple(node.arg[1]) != (0,) or len(x.shape) < 2:
        return False
    shapes = []  # (the values' sizes: a compiled expression's dims may be names)
    for n in toposort(x):
        v = leaf_data(env[n.arg]) if n.op == "input" else None
        if isinstance(v, np.ndarray):
            if v.ndim == len(x.shape) and v.shape[-1] > 1 and v.strides[-1] != v.itemsize:
                return False
            shapes.append(v.shape)
    shape = np.broadcast_shapes(*shapes) if shapes else ()
    return len(shape) == len(x.shape) and shape[-1] >= COLUMN_FOLD_COLUMNS and \
        int(np.prod(shape)) >= COLUMN_FOLD_VALUES


def missing_where(expr) -> Array | None:
    """`where(c, v, None)` (or `where(c, None, v)`) at the root over NumPy data, the form of
    `nanmax`, `nanmean`, ... over fixed dims: c and v computed by the flat kernels (threaded,
    no loop nest), the result missing where c says; None for any other form."""
    node, env = expr.node, expr.env
    if node.op != "where" or not all(isinstance(n, int) for n in node.shape):
        return None
    srcs = node.srcs
    at = 1 if srcs[1].op == "input" and _nothing(env[srcs[1].arg]) else \
        2 if srcs[2].op == "input" and _nothing(env[srcs[2].arg]) else 0
    if not at or srcs[3 - at].op == "input" and _nothing(env[srcs[3 - at].arg]):
        return None
    used = {n: v for n, v in env.items() if n != srcs[at].arg}
    if not all(type(leaf_data(v)) is np.ndarray for v in used.values()) or needs_nest(node):
        return None
    cond, value = (np.broadcast_to(np.asarray(runtime.evaluate(Expr(part, used))), node.shape)
                   for part in (srcs[0], srcs[3 - at]))
    return masked(value.astype(node.dtype, copy=False), ~cond if at == 1 else cond)


def _nothing(leaf) -> bool:
    """Whether `leaf` holds one missing value (`lazyk.frontend.masks.missing`)."""
    a = getattr(leaf, "array", None)
    return isinstance(a, Array) and isinstance(a.type, T.Option) and a.to_list() is None


def evaluate(expr, out=None, casting: str = "same_kind"):
    """Compute an expression with var / option leaves; returns a new lazyk Array, or `out`.

    `out` (NumPy or fixed lazyk array) takes results without var dims or missing values:
    the kernel's per-row results are stored into it as assignment does (broadcasting,
    `casting`). A lazyk array `out` with var dims or `?T` elements takes a result of the
    same structure: the same dims, the same row lengths (ShapeError naming the row and
    both lengths otherwise), a dtype `casting` allows (CastingError), `?T` when the
    result has missing values; its values and validity are written in place.
    """
    done = text_result(expr) if out is None else None  # a string array alone: itself
    if done is not None:
        return done
    node = expr.node
    if node.op == PICK_OP and is_text(node.dtype) and not node.arg[3]:
        # strings at a slot of combinations or a product: the same pick of the positions
        # in the slot's lists (local_index), then the strings at those positions
        axis, at = node.arg[2], node.arg[1] if len(node.srcs) > 1 else 0
        value = Expr(node.srcs[at], expr.env)
        index = local_index(value, axis)
        pos = node.replace(dtype=index.dtype, shape=node.shape[:axis + 1],
                           srcs=node.srcs[:at] + (index.node,) + node.srcs[at + 1:])
        return runtime.evaluate(index_by(value, Expr(pos, {**expr.env, **index.env})),
                                out=out, casting=casting)
    if node.op == "with_rows" and is_text(node.dtype):
        return runtime.evaluate(_paired_strings(node, expr.env), out=out, casting=casting)
    expr = take_kept_rows(expr)  # rows selected from arrays: their rows taken first
    expr = lower_picks(expr)  # combinations / cartesian: tuple levels of the nest
    done = evaluate_text_where(expr, out, casting=casting)  # where() over strings first
    if done is not NotImplemented:
        return done
    # String operations run in the loop nest with the numeric work where it takes them,
    # else they become numeric leaves first (lazyk.runtime.text_steps).
    done = fuse_strings(expr) if out is None else None
    if done is not None:
        return done
    expr, before = lower_strings(expr), expr
    done = computed(before, expr) if out is None else None
    if done is not None:
        return done
    if is_text(expr.node.dtype) and out is not None:
        raise NotSupportedError(f"out= for a string result ({expr.node.type_text()}): "
                                "strings come back as a new array; evaluate without out=")
    if is_text(expr.node.dtype):  # (the kernel writes numbers; strings move by rows)
        raise NotSupportedError(
            f"a string result of type {expr.node.type_text()} from this work is not "
            "computed yet: evaluate the fields one by one, or compute numbers from the "
            "strings (==, str_len, startswith, ...)")
    if out is None:
        return _evaluate(expr)
    if isinstance(out, Array) and is_ragged_type(out.type):
        if out.readonly:
            raise ValueError("out= is read-only: pass a writeable array")
        return store(_evaluate(expr), out, casting)

    refuse_lazy_out(out)
    try:  # (a foreign object: as_out's TypeError, as for every result)
        target = as_out(out)
    except NotSupportedError:
        raise NotSupportedError(f"out= of type '{out.type}' for a var / option expression"
                                ) from None
    if not target.flags.writeable:
        raise ValueError("out= is read-only: pass a writeable array")
    result = _evaluate(expr)
    try:
        value = result.to_numpy()
    except Exception:
        value = None
    if value is None and not result.type.missing_values:
        try:  # var dims whose rows happen to fit (e.g. the one row of x.sum(axis=0))
            _, dt, _ = describe(result)
            value = np.array(result.to_list(), dtype=dt)
        except Exception:
            value = None
    if value is None:
        what = f"'{out.type}'" if isinstance(out, Array) else \
            f"{target.dtype} array{list(target.shape)}"
        why = " (its values may be missing: out= must be able to hold None)" \
            if result.type.missing_values else ""
        raise NotSupportedError(f"out= of type {what} for a '{result.type}' result{why}: "
                                "pass a lazyk array of the result's type and row lengths "
                                "(e.g. lazyk.full(type, 0, lengths=...) or "
                                "lazyk.from_offsets(offsets, np.empty(n)))")
    if not np.can_cast(value.dtype, target.dtype, casting):

        raise CastingError(f"cannot store the {value.dtype} result into out of dtype "
                           f"{target.dtype} under casting={casting!r}")
    try:
        runtime.copy_cast(target, value)
    except ValueError as err:
        raise ShapeError(f"result {result.type} does not broadcast into out with shape "
                         f"{target.shape}: {err}") from None
    return out


def _paired_strings(node, env: dict) -> Expr:
    """`with_rows(x, y)` of strings (lazy records' fields lined up): x gathered, level by
    level from the top, at the positions in its own lists paired with y's rows, so that
    its dims and rows of 1 stretch and y's missing rows are missing (strings move by
    gathers, never through the kernel's body)."""
    x, y = node.srcs
    value, d = Expr(x, env), node.arg or node.ndim
    for k in range(d):
        if k < d - 1 and value.shape[k] is not None and value.shape[k] == node.shape[k]:
            continue  # (a fixed dim of the node's size: nothing to pair there)
        index = as_expr(local_index(value, k).eval())  # (its own lists: a new leaf)
        shape = broadcast_shapes("zip", [index.shape, y.shape[:k + 1]])
        pos = Node("with_rows", index.dtype, shape, (index.node, y), k + 1)
        value = index_by(value, Expr(pos, {**env, **value.env, **index.env}))
    return value


def _evaluate(expr):
    """Compute an expression with var / option leaves in the loop nest; a new lazyk Array.

    A graph of more than `lazyk.frontend.graph.MAX_KERNEL_OPS` operations runs in parts: each node
    fusion would materialise (`passes.fuse.cut_points`) is computed first, into an array
    the rest reads as a leaf."""
    cuts = cut_points(expr.node)
    if cuts:
        expr = _in_parts(expr, cuts)
    return evaluate_nest(expr)


def _in_parts(expr, cuts: set):
    env = dict(expr.env)

    def visit(node, srcs):
        new = node.replace(srcs=srcs) if srcs != node.srcs else node
        if id(node) not in cuts:
            return new
        part = Expr(new, {n.arg: env[n.arg] for n in toposort(new) if n.op == "input"})
        leaf = as_expr(_evaluate(part))
        env.update(leaf.env)
        return leaf.node
    root = rewrite(expr.node, visit)
    return Expr(root, {n.arg: env[n.arg] for n in toposort(root) if n.op == "input"})


def explain(expr, declared=None, ir: bool = True, asm: bool = True) -> str:
    """How a var / option expression runs: the graph, then each loop-nest kernel (levels,
    operands, spec, LLVM IR, assembly). Runs the expression once on its data; `declared`
    (the same graph over placeholders, `expr` then over sample arrays) gives the types
    shown."""
    e = as_expr(expr)
    shown = as_expr(declared) if declared is not None else e
    record: list = []
    RECORDERS.append(record)
    try:
        evaluate(e)
    finally:
        RECORDERS.remove(record)
    nests = [r[1:] for r in record if r[0] == "nest"]

    def text(v):
        d = leaf_data(v)
        if is_ragged(v):
            return str(v.array.type)
        if hasattr(d, "type_text"):  # a placeholder: its declared type
            return d.type_text()
        return " * ".join([*map(str, np.shape(d)), str(np.asarray(d).dtype)])
    inputs = ", ".join(f"{name}: {text(v)}" for name, v in shown.env.items())
    sample = "" if declared is None else \
        "\n== (run on sample arrays: 8 per symbolic dim, rows of 2 values)"
    return "\n".join([f"== ragged expression over ({inputs}) -> {shown.type}{sample}",
                      f"== graph as built\n{typed_dump(shown)}",
                      explain_nests(nests, ir, asm)])


runtime.install_path("ragged", evaluate_if_ragged)

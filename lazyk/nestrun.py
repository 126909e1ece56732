"""Expressions over var / option arrays in one generated loop nest (`codegen.nest`,
`lazyk.nestkernel`): fixed and var dims in any order and at any depth (`var * var * T`,
`N * var * 4 * T`, `var * var * var * T`) over `T` or `?T` (or strings, their
`{begin, size}` elements read in place for the string operations), missing rows (`?var`)
at any level; elementwise work with the seed broadcasting rules (`where` too) and
reductions over any axis or tuple of axes, in one pass (with missing rows: one axis,
every axis, or several axes below every `?var` dim). Rows (of stepping views too) are read
in place from the arrmeta (every byte it lets the kernel address is checked inside its
memory block first) and checked and paired inside the kernel; leaves in another numeric
dtype than the body's are converted where loaded; ragged results are written by the kernel
after a pass that counts their row lengths (none where the result has an operand's offsets;
a last-axis reduction of `N * var * var` rows that follow each other runs over the inner
rows as `M * var`). Folds over several axes at or above the `?var`
dim of fixed dims over one trailing `?var` dim, folds over `?n` rows (a missing row
against a fixed dim) and a missing row folded along its own axis above fixed dims run the
elementwise part first (`_rows_first`); where() operands that combine a missing row with
other rows are computed first (`_parts_first`). What the nest does not take raises
NotSupportedError naming the types and the operation."""
from __future__ import annotations

import ctypes
from dataclasses import replace

import numpy as np

from lazyk.array import Array, array
from lazyk.backend.outputs import empty as fresh
from lazyk.codegen.nest import OP_WORDS, nest_layout
from lazyk.errors import ArrayConstructionError, NotSupportedError, ShapeError
from lazyk.expr import Expr, as_expr, leaf_data
from lazyk.graph import REDUCE_OP, rewrite, toposort
from lazyk.interchange import masked, offsets_array, regular
from lazyk.leaves import is_ragged, text_rows
from lazyk.memory import MemoryBlock
from lazyk.nestkernel import nest_kernel
from lazyk.nestkernel import split as nest_split
from lazyk.ops import BYTES, STRING
from lazyk.rowrules import (
    RECORDERS,
    branch_masks,
    fused_step,
    inline_reductions,
    seed,
    selects,
)
from lazyk.rows import check_extent
from lazyk.spec import format_spec
from lazyk.types import FixedDim

# Any nesting of fixed and var dims runs in one generated loop nest (`codegen.nest`): rows
# read in place from the arrmeta, checked and paired inside the kernel, results written by
# the kernel (a count pass first gives the lengths of result var rows).

class _NestOperand:
    """One leaf as the nest reads it: per own dim ('f', size, stride) or ('v' / 'q' for
    `?var`, width, (stop_delta, content, index_stride, stride, length, row mask_offset));
    its address, dtype, mask."""

    def __init__(self, dims, ptr, dtype, mask_offset, aligned):
        self.dims, self.ptr, self.dtype = dims, ptr, dtype
        self.mask_offset, self.aligned = mask_offset, aligned


def _nest_operand(leaf):
    """A `_NestOperand`, or None for a leaf the nest does not read (records, ...)."""
    if isinstance(leaf, np.ndarray):
        al = leaf.dtype.alignment
        ptr = leaf.__array_interface__["data"][0]
        dims = [("f", n, s) for n, s in zip(leaf.shape, leaf.strides)]
        aligned = ptr % al == 0 and all(s % al == 0 for s in leaf.strides)
        return _NestOperand(dims, ptr, leaf.dtype, None, aligned)
    if not is_ragged(leaf):
        return None
    arr = leaf.array
    t, meta, k, dims = arr.type, arr.meta, 0, []
    addrs = [arr.ptr]
    while _dim_kind(t):
        if type(t).__name__ == "FixedDim":
            dims.append(("f", meta[k], meta[k + 1]))
            addrs.append(meta[k + 1])
            k += 2
        else:
            row_moff, qv = 0, type(t).__name__ == "Option"
            if qv:  # ?var: the row mask_offset word first
                row_moff, t, k = meta[k], t.elem, k + 1
            _, width, delta, content, istride, stride, length = meta[k:k + 7]
            if width not in (4, 8):
                return None
            dims.append(("q" if qv else "v", width,
                         (delta, content, istride, stride, length, row_moff)))
            addrs += [content, istride, stride]
            k += 7
        t = t.elem
    moff = None
    if type(t).__name__ == "Option":
        moff, t = meta[k], t.elem
    if type(t).__name__ != "Scalar":
        return None
    if t.name in ("string", "bytes"):  # `{begin, size}` elements (lazyk.textrows fuses them)
        check_extent(text_rows(arr, nested=True))
        dt = STRING if t.name == "string" else BYTES
        return _NestOperand(dims, arr.ptr, dt, moff, all(a % 8 == 0 for a in addrs))
    dt = t.to_numpy()
    if dt.kind not in "biufc":
        return None
    check_extent(arr)  # the kernel trusts the arrmeta's addresses and lengths
    return _NestOperand(dims, arr.ptr, dt, moff, all(a % dt.alignment == 0 for a in addrs))


def _dim_kind(t):
    """'f', 'v' or 'q' (`?var`) for a dim type, None for anything else."""
    name = type(t).__name__
    if name == "Option":
        return "q" if type(t.elem).__name__ == "VarDim" else None
    return {"FixedDim": "f", "VarDim": "v"}.get(name)


def _nest_plan(ops_):
    """Result levels ('f' / 'v'), fixed sizes, and per operand its kind at each level."""
    nlev = max(len(o.dims) for o in ops_)
    levels, sizes = [], []
    for k in range(nlev):
        ds = [o.dims[k - nlev + len(o.dims)] for o in ops_ if k - nlev + len(o.dims) >= 0]
        fixed = {d[1] for d in ds if d[0] == "f" and d[1] != 1}
        if len(fixed) > 1:
            raise ShapeError(f"dim {k}: fixed sizes {sorted(fixed)} do not broadcast")
        if fixed:
            levels.append("f")
            sizes.append(fixed.pop())
        elif any(d[0] in "vq" for d in ds):
            levels.append("v")
            sizes.append(0)
        else:
            levels.append("f")
            sizes.append(1)
    def var(d):  # index width, 's' for a stepping view's rows, 'q' for `?var`
        return str(d[1]) + ("s" if d[2][3] != d[2][2] else "") + ("q" if d[0] == "q" else "")
    kinds = []
    for o in ops_:
        lead = nlev - len(o.dims)
        # a fixed 1 broadcasts: stride 0 at a fixed level (no other structure for size 1),
        # the operand stays where the result level is var
        kinds.append(tuple("n" if k < lead or (o.dims[k - lead][0] == "f" and
                                               o.dims[k - lead][1] == 1 and levels[k] == "v")
                           else "f" if o.dims[k - lead][0] == "f" else var(o.dims[k - lead])
                           for k in range(nlev)))
    return tuple(levels), sizes, kinds


def _positions(r0: int, levels, sizes, offsets: dict, upto: int) -> list:
    """X[k]: how many level-k iterations come before level-0 row r0 (k < upto), from the
    fixed sizes and the result var levels' offsets known so far."""
    xs = []
    for k in range(upto):
        if k == 0:
            x = r0 if levels[0] == "f" else 0
        elif levels[k] == "f":
            x = xs[-1] * sizes[k]
        else:
            x = int(offsets[k][xs[-1]])
        if k == 0 and levels[0] == "v":
            x = int(offsets[0][1]) if r0 else 0
        xs.append(x)
    return xs


def evaluate_nest(expr):
    """Evaluate `expr` with one generated loop nest (a few forms in two: the elementwise
    part, then the reduction of its result); NotSupportedError naming the types and the
    operation for what the nest does not take."""
    first = _parts_first(expr, where_only=True)
    if first is not None:
        return evaluate_nest(first)
    try:
        return _evaluate_nest(expr)
    except ShapeError:
        first = _parts_first(expr, where_only=False)
        if first is None:
            raise
        return evaluate_nest(first)


def _parts_first(expr, where_only: bool):
    """`expr` with the parts that combine a `?var` operand with others computed first, or
    None when there is none: the reference computes each operation's operands before it,
    so a row missing there is missing whatever the length of the other operands' rows,
    which one nest would still pair. `where_only`: the operands of where() (one nest
    would pair the rows of a branch it does not take, or give an empty row where the
    reference's row is missing); else every part (after one nest raised ShapeError)."""
    qvar = {n for n, v in expr.env.items()
            if is_ragged(leaf_data(v)) and "?var" in str(leaf_data(v).array.type)}
    if not qvar:
        return None
    env, done = dict(expr.env), []

    def combines(node):
        names = {n.arg for n in toposort(node) if n.op == "input"}
        return node.op not in ("input", REDUCE_OP) and len(names) > 1 and bool(names & qvar)

    def visit(node, srcs):
        node = node.replace(srcs=srcs) if srcs != node.srcs else node
        if where_only and not selects(node):
            return node
        new = list(node.srcs)
        for i, src in enumerate(new):
            if combines(src):
                value = evaluate_nest(Expr(src, env))
                if any(d.startswith("?") and d != "?var"
                       for d in str(value.type).split(" * ")[:-1]):
                    continue  # `?n` rows: no leaf the nest reads (the one nest pairs them)
                leaf = as_expr(value)
                env.update(leaf.env)
                if "?var" in str(value.type):
                    qvar.add(leaf.node.arg)
                new[i] = leaf.node
                done.append(i)
        return node.replace(srcs=tuple(new)) if new != list(node.srcs) else node
    root = rewrite(expr.node, visit)
    return Expr(root, env) if done else None


def _evaluate_nest(expr):
    root, red_node, reduce_arg = expr.node, expr.node, None
    if root.op == REDUCE_OP:
        reduce_arg, root = root.arg, root.srcs[0]
    if any(n.op == REDUCE_OP for n in toposort(root)):
        root, expr = inline_reductions(root, expr)
    used = {n.arg for n in toposort(root) if n.op == "input"}
    names = [n for n in expr.env if n in used]
    root, names = _one_leaf_per_array(root, names, expr.env)
    leaves = [leaf_data(expr.env[n]) for n in names]
    got = None
    if leaves and not branch_masks(root, names, leaves):
        got = _nest_run(root, red_node, reduce_arg, names, leaves)
    elif leaves:
        # where() takes the missing state of the branch it selects: the elementwise part
        # runs first (its mask follows the body), then the reduction of its result
        got = _nest_run(root, root, None, names, leaves, where_masks=True)
        if got is not None and reduce_arg is not None and any(
                d.startswith("?") and d != "?var" for d in str(got.type).split(" * ")[:-1]):
            # `?n` rows: no leaf the nest reads
            got = _rows_first(root, red_node, reduce_arg, names, leaves)
        elif got is not None and reduce_arg is not None:
            inner = as_expr(got)
            got = evaluate_nest(Expr(red_node.replace(srcs=(inner.node,)), inner.env))
    if got is None and reduce_arg is not None and leaves:
        got = _rows_first(root, red_node, reduce_arg, names, leaves)
    if got is None:
        types = ", ".join(str(v.array.type) if is_ragged(v) else f"{np.shape(v)} array"
                          for v in leaves)
        what = f"{reduce_arg[0]} over axes {list(reduce_arg[1])}" if reduce_arg else \
            "this expression"
        why = "with missing rows (?var) under var dims, reductions run over one axis, " \
            "all axes, or several axes below every ?var dim; a missing row against a " \
            "fixed dim (?n rows) folds only with fixed dims above it; folded along its own " \
            "axis, a ?var dim takes fixed dims below it" if any(
            is_ragged(v) and "?var" in str(v.array.type) for v in leaves) else \
            "elementwise work and reductions run as one fused step over numeric (or " \
            "string) leaves and the operations the loop nest compiles"
        raise NotSupportedError(f"{what} of {types}: {why}")
    return got


def _rows_first(root, red_node, reduce_arg, names, leaves):
    """A fold of fixed dims over one trailing dim of missing rows that the nest does not
    take in one pass (several axes at or above a `?var` dim; a middle or every axis over
    `?n` rows): the elementwise part runs first, each missing row of its result becomes a
    row of missing values (one for `?var`: it stretches; n for `?n`), which the fold skips
    under skipna, and then the nest folds that. Without skipna a missing row makes its
    group's result row missing; under skipna a `?var` group with no present row gives an
    empty row (the rules of `tests/ragged_reference.py`). None for other forms."""
    got = _nest_run(root, root, None, names, leaves,
                    where_masks=branch_masks(root, names, leaves), parts_only=True)
    if got is None:
        return None
    values, flags, dims, offsets, validity, present = got
    last = len(dims) - 1
    if len(reduce_arg[1]) == 1 and reduce_arg[1][0] < last and not present:
        return _own_axis_first(got, red_node, reduce_arg)
    if last < 1 or "v" in dims[:-1] or last not in (present if dims[-1] != "v" else validity):
        return None
    outer = tuple(int(d) for d in dims[:-1])
    if dims[-1] == "v":
        rows, starts = validity[last], offsets[last]
        lens = np.where(rows, np.diff(starts), 1)
        off = np.zeros(len(lens) + 1, np.int64)
        np.cumsum(lens, out=off[1:])
        seg = np.repeat(np.arange(len(lens)), lens)
        old = starts[seg] + np.arange(int(off[-1])) - off[seg]
        ok = rows[seg]
        vals = np.zeros(len(ok), values.dtype)
        vals[ok] = values[old[ok]]
        if flags is not None:
            ok[ok] = flags[old[ok]]
        inner = offsets_array(off, masked(vals, ok), outer=outer, check=None)
    else:
        n = int(dims[-1])
        rows = present[last].astype(bool)
        ok = np.repeat(rows, n) if flags is None else np.repeat(rows, n) & flags
        inner = masked(values.reshape(outer + (n,)), ok.reshape(outer + (n,)))
    e = as_expr(inner)
    got = evaluate_nest(Expr(red_node.replace(srcs=(e.node,)), e.env))
    axes = tuple(reduce_arg[1])
    if axes == (last,):  # a missing row reduced along its own axis: missing
        return _missing_at(got, ~rows.ravel(), len(outer))
    if last in axes:
        return got  # one value per group: missing values do the work
    rows = rows.reshape(outer)
    p = last if reduce_arg[2] else last - len(axes)
    if not (len(reduce_arg) > 3 and reduce_arg[3]):
        return _fixed_rows(got, {p: np.logical_and.reduce(rows, axis=axes).ravel()})
    none = ~np.logical_or.reduce(rows, axis=axes).ravel()
    if dims[-1] != "v" or not none.any():
        return got
    return _emptied(got, p, none)


def _own_axis_first(parts, red_node, reduce_arg):
    """A fold along the axis of a `?var` dim with fixed dims under it, from the elementwise
    result `parts`: each missing row becomes one row of missing values, the nest folds
    that, and the result row under a missing row is missing (skipna too, as a missing row
    reduced along its own axis). None for other forms."""
    values, flags, dims, offsets, validity, _ = parts
    a = reduce_arg[1][0]
    below = dims[a + 1:]
    if dims[a] != "v" or set(validity) != {a} or "v" in below or 0 in below or \
            0 in dims[1:a]:
        return None
    blk = int(np.prod(below, dtype=np.int64))
    rows, starts = validity[a], offsets[a]
    lens = np.where(rows, np.diff(starts), 1)
    off = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(lens, out=off[1:])
    seg = np.repeat(np.arange(len(lens)), lens)
    old = starts[seg] + np.arange(int(off[-1])) - off[seg]
    old = (old[:, None] * blk + np.arange(blk)).reshape(-1)
    ok = np.repeat(rows[seg], blk)
    vals = np.zeros(len(ok), values.dtype)
    vals[ok] = values[old[ok]]
    if flags is not None:
        ok[ok] = flags[old[ok]]
    inner = _nest_result(vals, ok, dims, {**offsets, a: off}, [0] * a + [int(off[-1])])
    e = as_expr(inner)
    got = evaluate_nest(Expr(red_node.replace(srcs=(e.node,)), e.env))
    return _fixed_rows(got, {a + bool(reduce_arg[2]): rows.astype(np.uint8)})


def _missing_at(result, gone, depth: int):
    """`result` (outer dims of `depth`, then values or rows of one) with the values under
    its outer element i missing where `gone[i]` is True; its values `?T`."""
    at = [0]

    def walk(x, level):
        if level == depth:
            at[0] += 1
            return (None if not isinstance(x, list) else [None] * len(x)) \
                if gone[at[0] - 1] else x
        return [walk(v, level + 1) for v in x]
    parts = str(result.type).split(" * ")
    parts[-1] = parts[-1] if parts[-1].startswith("?") else "?" + parts[-1]
    return array(walk(result.to_list(), 0), type=" * ".join(parts))


def _emptied(result, p: int, empty):
    """`result` with the rows of result level p empty where `empty` is True (in order)."""
    at = [0]

    def walk(x, level):
        if level == p:
            at[0] += 1
            return [] if empty[at[0] - 1] else x
        return [walk(v, level + 1) for v in x]
    return array(walk(result.to_list(), 0), type=str(result.type))


def _one_leaf_per_array(root, names, env):
    """`x * x`: each use of a ragged array is a leaf of its own; one operand reads its rows
    once (one row check, no pairing with itself)."""
    first, alias = {}, {}
    for n in names:
        v = env[n]
        if is_ragged(v):
            alias[n] = first.setdefault((id(v.array), v.option), n)
    alias = {n: a for n, a in alias.items() if n != a}
    if not alias:
        return root, names

    def rename(node, srcs):
        if node.op == "input" and node.arg in alias:
            return node.replace(arg=alias[node.arg])
        return node.replace(srcs=srcs) if srcs != node.srcs else node
    return rewrite(root, rename), [n for n in names if n not in alias]


class NestFill:
    """The fill pass of a loop nest planned for one set of arrays (its count passes run):
    kernel, kernel data words, parts, and the result's structure (`plan_fill`)."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def finish(self, values, flags):
        """(values in the result dtype, present mask or None) from the fill pass's values
        and flag bytes: the rules `evaluate_nest` applies."""
        if self.reduce_arg is None:
            mask = flags.view(bool) if self.option else None
            return values.astype(self.dtype, copy=False), mask
        values, mask = _nest_reduced(values, flags, self.reduce_arg,
                                     self.option or self.qrows, self.skipna)
        if self.last_q:  # a missing row reduced along its axis
            mask = (flags & 4) == 0 if mask is None else mask & ((flags & 4) == 0)
        if self.qrows and self.mean and mask is not None:
            mask = mask & ((flags & 2) != 0)
        return values.astype(self.dtype, copy=False), mask

    def skeleton(self, dims):
        """The result's structure over `dims` with each element its position in the
        values the fill pass writes (int64)."""
        return _nest_result(np.arange(self.nvals, dtype=np.int64), None, dims,
                            self.offsets, self.xs_end, self.validity)


def plan_fill(expr):
    """A `NestFill` for `expr` over its leaves (the count passes run now), or a text
    saying why its fill pass cannot be planned ahead of the values."""
    root, red_node, reduce_arg = expr.node, expr.node, None
    if root.op == REDUCE_OP:
        reduce_arg, root = root.arg, root.srcs[0]
    if any(n.op == REDUCE_OP for n in toposort(root)):
        return "a reduction feeding further work is computed first, from the values"
    used = {n.arg for n in toposort(root) if n.op == "input"}
    names = [n for n in expr.env if n in used]
    leaves = [leaf_data(expr.env[n]) for n in names]
    if not leaves:
        return "no array operands"
    if branch_masks(root, names, leaves):
        return "where() over missing values takes each element's missing state from " \
            "the branch it selects, in two steps"
    got = _nest_run(root, red_node, reduce_arg, names, leaves, plan=True)
    return "the loop nest does not take it in one pass" if got is None else got


def _nest_run(root, red_node, reduce_arg, names, leaves, where_masks=False, parts_only=False,
              flat=None, plan=False):
    """The nest's result, or None where it does not take the form. `parts_only` (elementwise
    work only): (values, present flags, result dims, offsets, present rows of var levels,
    present bytes of `?n` levels) instead of the Array. `flat`: (operands, offsets) from
    `_flat_rows`: the rows of the last two levels as one `M * var` level; the result gets
    the offsets above it. `plan`: a `NestFill` after the count passes."""
    ops_ = flat[0] if flat else [_nest_operand(v) for v in leaves]
    if any(o is None for o in ops_):
        return None
    scalar = not any(o.dims for o in ops_)  # 0-d leaves (`?T` ones): one level of size 1
    if scalar:
        if reduce_arg is not None:
            return None
        ops_ = [_NestOperand([("f", 1, 0)], o.ptr, o.dtype, o.mask_offset, o.aligned)
                for o in ops_]
    levels, sizes, kinds = _nest_plan(ops_)
    nlev = len(levels)
    if len(root.shape) != nlev - scalar + bool(flat):
        return None
    mode = "map" if reduce_arg is None else "reduce"
    axes = () if reduce_arg is None else (nlev - 1,) if flat else tuple(reduce_arg[1])
    if mode == "reduce" and not (flat or where_masks or plan) and axes == (nlev - 1,):
        rows = _flat_rows(ops_, levels, kinds, sizes)
        if rows is not None:
            try:
                return _nest_run(root, red_node, reduce_arg, names, leaves, flat=rows)
            except (ArrayConstructionError, ShapeError):
                pass  # the full nest names the row [i, j] of the error
    if mode == "reduce" and axes == tuple(range(nlev)) and nlev > 1:
        mode = "all"  # every axis: one partial fold per thread
    elif mode == "reduce" and axes != (nlev - 1,):
        # any other axes: each result element folds its group (every element of the
        # folded levels; rows of the kept levels below the first one fold element by
        # element, rows of length 1 stretching)
        mode = "fold" + ",".join(str(a) for a in axes)
    node = root if reduce_arg is None else red_node.replace(srcs=(root,))
    got = fused_step(node, dict(zip(names, range(len(names)))), reduce=mode != "map",
                     int_mean=True)
    if got is None:
        return None
    step, by_name = got
    spec = step.spec
    acc = np.dtype(spec.outputs[0][1])
    sel = [ops_[by_name[n]] for n in step.inputs]
    sel_kinds = [kinds[by_name[n]] for n in step.inputs]
    labels = [by_name[n] for n in step.inputs]  # errors name the user's operand numbers
    # leaves stored in another dtype than the body computes in are converted where loaded
    spec = replace(spec, inputs=tuple(o.dtype for o in sel),
                   aligned=tuple(bool(o.aligned) for o in sel))
    maskd = tuple(o.mask_offset is not None for o in sel)
    # ?var levels: missing rows at any level; a missing row folded along a middle axis
    # makes the result row below it missing (a var one; a fixed one, `?n`, and folds over
    # several axes at or above them: `_rows_first`, their group walk does not track
    # missing rows)
    qlev = {k for kd in sel_kinds for k in range(nlev) if "q" in kd[k]}
    # against a fixed dim of n: `?n` rows (elementwise work and last-axis reductions;
    # rows of `?0` have no room for their present byte)
    qfix = {k for k in qlev if levels[k] == "f"}
    if any(sizes[k] == 0 for k in qfix):
        types = ", ".join(str(v.array.type) if is_ragged(v) else f"{np.shape(v)} array"
                          for v in leaves)
        raise NotSupportedError(f"missing rows against a fixed dim of size 0 (`?0` rows, "
                                f"no room for their missing flag) in an expression over "
                                f"{types}")
    if qfix and mode not in ("map", "reduce"):
        return None  # folds over `?n` rows: `_rows_first`
    if qlev and len(axes) > 1 and mode.startswith("fold") and max(qlev) >= axes[0]:
        return None
    if qlev and ((mode == "all" and 0 in qlev) or
                 (mode.startswith("fold") and axes[0] in qlev and levels[axes[0] + 1] != "v")):
        return None
    # where() over missing rows: a row is missing where an element takes a branch's
    # missing row; the last count pass marks those rows ("mark"), then they are pruned
    wq = bool(where_masks and qlev)
    skipna = bool(reduce_arg is not None and len(reduce_arg) > 3 and reduce_arg[3])
    if mode == "all" and plan:
        return "a reduction over every axis combines per-thread partials after the kernel"
    if mode == "all":
        return _nest_all(spec, step, levels, sizes, sel, sel_kinds, maskd, skipna, labels,
                         leaves, reduce_arg, red_node, bool(qlev))
    # the result's levels (their level numbers in the nest), their kinds and sizes
    res = list(range(nlev)) if mode == "map" else list(range(nlev - 1)) if \
        mode == "reduce" else [k for k in range(nlev) if k not in axes]
    nres = len(res)
    rl, rs = [levels[k] for k in res], [sizes[k] for k in res]
    rvar = [p for p in range(nres) if rl[p] == "v"]
    words, lay = _nest_words(levels, sizes, sel, sel_kinds)
    n0 = sizes[0] if levels[0] == "f" else 1
    r_end = (rs[0] if rl[0] == "f" else 1) if nres else 1
    offsets: dict = {}  # result level -> offsets of its rows
    validity: dict = {}  # result ?var level -> which of its rows are present
    # the result's ?var levels: a missing row stays missing above a folded axis, makes the
    # row below it missing at the axis, and below it is skipped under skipna
    if mode.startswith("fold"):
        qres = {k for k in qlev if k < axes[0] or (k > axes[0] and not skipna)}
        qres |= {axes[0] + 1} if axes[0] in qlev else set()
    else:
        qres = qlev
    keep = [leaves]
    raw: dict = {}  # where() over missing rows: each level's marked lengths
    # elementwise over `N * var` rows of one offsets array: the result has its rows
    same = _offsets_rows(sel, sel_kinds, levels, sizes) if mode == "map" and not qlev \
        else None
    if same is not None:
        offsets[1] = same
    # count passes: result var rows' lengths, one var level at a time (rows of a level are
    # the iterations of the level above, known once the levels above are counted)
    for p in rvar:
        if same is not None:
            break
        nrows = _positions(r_end, rl, rs, offsets, p)[-1] if p else 1
        lens = np.empty(nrows, np.int64)
        w = words.copy()
        # earlier levels are written again with the same lengths: give them scratch copies
        scratch = {q: np.empty(len(offsets[q]) - 1, np.int64) for q in rvar if q < p}
        for q in rvar:
            if q <= p:
                w[lay["lens"] + 2 * res[q]] = (lens if q == p else scratch[q]).ctypes.data
        npass = f"{'mark' if wq and p == rvar[-1] else 'count'}{res[p]}"
        kern = nest_kernel(spec, levels, sel_kinds, maskd, mode, npass, skipna, step.mean, wq)
        parts = _count_parts(levels, sizes, offsets, rvar, res, p, n0)
        kern.run(w, step.consts, parts, (keep, lens, scratch), labels)
        if wq and p == rvar[-1]:
            raw = {**scratch, p: lens}
        for rec in RECORDERS:
            rec.append(("nest", kern, len(parts)))
        off = np.zeros(nrows + 1, np.int64)
        np.cumsum(np.maximum(lens, 0), out=off[1:])  # -1: a missing row, no elements
        offsets[p] = off
        if res[p] in qres:
            validity[p] = lens >= 0
    if wq:
        offsets, validity = _pruned(raw, rl, rs, rvar, {p for p in rvar if res[p] in qres})
    xs_end = _positions(r_end, rl, rs, offsets, nres) if nres else []
    nvals = xs_end[-1] if xs_end else 1
    if plan:  # `lazyk.ragbind`: the fill pass planned, run later on the same arrays
        if any(res[p] in qfix for p in range(nres)):
            return "the result has `?n` rows (missing rows against a fixed dim)"
        for p in rvar:
            words[lay["lens"] + 2 * res[p]] = offsets[p].ctypes.data
        dims = [] if scalar else [("v" if rl[p] == "v" else rs[p]) for p in range(nres)]
        return NestFill(
            kern=nest_kernel(spec, levels, sel_kinds, maskd, mode, "fill", skipna, step.mean,
                             False),
            parts=_nest_parts(levels, sizes, offsets, rvar, sel, sel_kinds, mode, res, n0),
            words=words, consts=step.consts, labels=labels, leaves=leaves, nvals=nvals,
            acc=acc, dtype=(root if reduce_arg is None else red_node).dtype,
            flagged=any(maskd) or mode != "map", option=any(maskd), qrows=bool(qlev),
            last_q=nlev - 1 in qlev and mode == "reduce", mean=step.mean, skipna=skipna,
            reduce_arg=reduce_arg, keep_axes=axes if reduce_arg and reduce_arg[2] else (),
            mode=mode, dims=dims, offsets=offsets, xs_end=xs_end, validity=validity)
    out = fresh((nvals,), acc)  # large outputs reuse faulted-in blocks
    option = any(maskd)
    flags = np.empty(nvals, np.uint8) if option or mode != "map" else None
    words[3] = out.ctypes.data
    words[4] = 0 if flags is None else flags.ctypes.data
    for p in rvar:  # the fill pass checks every result row against these
        words[lay["lens"] + 2 * res[p]] = offsets[p].ctypes.data
    # `?n` levels of the result: the fill pass writes each row's present byte
    rfix = [p for p in range(nres) if res[p] in qfix]
    present = {p: np.empty(_positions(r_end, rl, rs, offsets, p)[-1] if p else 1, np.uint8)
               for p in rfix}
    for p in rfix:
        words[lay["lens"] + 2 * res[p]] = present[p].ctypes.data
    kern = nest_kernel(spec, levels, sel_kinds, maskd, mode, "fill", skipna, step.mean,
                       where_masks and (any(maskd) or wq))
    parts = _nest_parts(levels, sizes, offsets, rvar + rfix, sel, sel_kinds, mode, res, n0)
    kern.run(words, step.consts, parts, (keep, out, flags, offsets, present), labels)
    for rec in RECORDERS:
        rec.append(("nest", kern, len(parts)))
    dims = [] if scalar else [("v" if rl[p] == "v" else rs[p]) for p in range(nres)]
    if parts_only:
        return (out.astype(root.dtype, copy=False), None if flags is None else
                flags.view(bool), dims, offsets, validity, present)
    if reduce_arg is None:
        mask = flags.view(bool) if option else None
        return _fixed_rows(_nest_result(out.astype(root.dtype, copy=False), mask, dims,
                                        offsets, xs_end, validity), present)
    values, mask = _nest_reduced(out, flags, reduce_arg, option or bool(qlev), skipna)
    if nlev - 1 in qlev and mode == "reduce":  # a missing row reduced along its axis
        mask = (flags & 4) == 0 if mask is None else mask & ((flags & 4) == 0)
    if qlev and step.mean and mask is not None:  # an empty mean of ?var input: missing
        mask = mask & ((flags & 2) != 0)
    if reduce_arg[2] and mode == "reduce":
        dims.append(1)
    got = _fixed_rows(_nest_result(values.astype(red_node.dtype, copy=False), mask, dims,
                                   offsets, xs_end, validity), present)
    if flat:
        got = offsets_array(flat[1], got, check=None)
    if reduce_arg[2] and mode != "reduce":  # keepdims: a fixed 1 where each axis was
        for a in axes:
            got = got[(slice(None),) * a + (None,)]
    return got


def _flat_rows(ops_, levels, kinds, sizes):
    """A reduction over the last axis of `N * var * var` rows, where the inner rows of
    outer row i + 1 follow those of row i (offsets, or index pairs that touch), is one
    reduction over the inner rows they cover: (the operands as `M * var`, the result's
    offsets), or None: another form, outer rows that differ between operands, or bad
    rows (the full nest names them). Operands without the two outer dims stay (`n`)."""
    if tuple(levels) != ("f", "v", "v"):
        return None
    off, flat = None, list(ops_)
    for j, (o, kd) in enumerate(zip(ops_, kinds)):
        if kd[:2] == ("n", "n"):
            continue
        if kd[0] != "f" or kd[1] not in ("4", "8"):
            return None
        (_, n0, s0), (_, width, (delta, content, istride, stride, length, _)) = o.dims[:2]
        if stride != istride or not n0 or s0 <= 0 or n0 != sizes[0]:
            return None
        # row r's start and stop: bytes the nest reads too (inside the operand's block:
        # `check_extent`)
        buf = (ctypes.c_char * ((n0 - 1) * s0 + delta + width)).from_address(o.ptr)
        dt = np.int32 if width == 4 else np.int64
        starts = np.ndarray((n0,), dt, buf, 0, (s0,))
        stops = np.ndarray((n0,), dt, buf, delta, (s0,))
        lo, hi = int(starts[0]), int(stops[-1])
        if lo < 0 or hi > length or (s0 != delta and (starts[1:] != stops[:-1]).any()):
            return None
        mine = np.empty(n0 + 1, np.int64)
        mine[0] = 0
        np.subtract(stops, lo, out=mine[1:])
        if (mine[1:] < mine[:-1]).any() or (off is not None and not np.array_equal(off, mine)):
            return None
        off = mine
        flat[j] = _NestOperand([("f", hi - lo, istride)] + o.dims[2:], content + lo * istride,
                               o.dtype, o.mask_offset, o.aligned)
    return None if off is None else (flat, off)


def _offsets_rows(ops_, kinds, levels, sizes):
    """The offsets (from 0) of `N * var` rows that every var operand reads through one
    offsets array, or None (no count pass needed: the fill pass checks each row's length
    against them, and the kernel each row's indices)."""
    if tuple(levels) != ("f", "v"):
        return None
    ref = None
    for o, kd in zip(ops_, kinds):
        if kd[1] in ("n", "f"):
            continue
        if kd[0] != "f" or kd[1] not in ("4", "8"):
            return None
        (_, n0, s0), (_, width, (delta, *_)) = o.dims[:2]
        key = (o.ptr, n0, s0, width)
        if s0 != delta or n0 != sizes[0] or not n0 or (ref or key) != key:
            return None
        ref = key
    if ref is None:
        return None
    ptr, n0, s0, width = ref
    buf = (ctypes.c_char * (n0 * s0 + width)).from_address(ptr)  # the bytes the nest reads
    off = np.ndarray((n0 + 1,), np.int32 if width == 4 else np.int64, buf, 0, (s0,))
    return np.subtract(off, off[0], dtype=np.int64)


def _fixed_rows(result, present: dict):
    """`result` with the rows of result level p missing where `present[p]` is 0 (rows in
    nest order: every row of a level counted, also under a missing fixed row): a `?n`
    dim, built through nested lists (lazyk's `?n` layout keeps a mask byte per row)."""
    if not present:
        return result
    count = dict.fromkeys(present, 0)
    gone = {p: v == 0 for p, v in present.items()}

    def walk(x, level):
        if level in gone:
            i = count[level]
            count[level] += 1
        if isinstance(x, list):
            x = [walk(v, level + 1) for v in x]
        return None if level in gone and gone[level][i] else x
    data = walk(result.to_list(), 0)
    parts = str(result.type).split(" * ")
    text = " * ".join(("?" + t) if k in present else t for k, t in enumerate(parts))
    return array(data, type=text)


def _pruned(raw, rl, rs, rvar, qres):
    """Offsets and present rows of every result var level from the mark pass's lengths
    (n, -1 missing, -2 - n missing after a where() took a missing row): the rows under a
    missing row are dropped."""
    offsets, validity, alive = {}, {}, None
    prev = None
    for p in rvar:
        lens = raw[p]
        n = np.where(lens >= 0, lens, np.where(lens == -1, 0, -2 - lens))
        if prev is None:
            alive = np.ones(len(lens), bool)
        else:
            pn, pok, palive, pp = prev
            mult = int(np.prod([rs[q] for q in range(pp + 1, p)], dtype=np.int64))
            alive = np.repeat(palive & pok, pn * mult)
            if len(alive) != len(lens):
                raise ShapeError("rows changed length while they were read")
        ok = lens >= 0
        prev = (n, ok, alive, p)
        kept = np.where(ok, n, 0)[alive]
        off = np.zeros(len(kept) + 1, np.int64)
        np.cumsum(kept, out=off[1:])
        offsets[p] = off
        if p in qres:
            validity[p] = ok[alive]
    return offsets, validity


def _nest_words(levels, sizes, sel, kinds):
    """The kernel data words that do not change between parts and passes."""
    lay = nest_layout(len(levels), len(sel))
    words = np.zeros(lay["params"] // 8, np.int64)
    for k, (lv, n) in enumerate(zip(levels, sizes)):
        words[lay["sizes"] + k] = n if lv == "f" else 0
    for j, (o, kind) in enumerate(zip(sel, kinds)):
        at = lay["ops"] + j * lay["per_op"]
        words[at] = o.ptr
        words[at + 1] = o.mask_offset or 0
        lead = len(levels) - len(o.dims)
        for k in range(len(levels)):
            if kind[k] == "n":
                continue
            d = o.dims[k - lead]
            base = at + 2 + OP_WORDS * k
            if d[0] == "f":
                words[base] = 0 if d[1] == 1 else d[2]
            else:
                words[base:base + OP_WORDS] = d[2]
    return words, lay


def _nest_parts(levels, sizes, offsets, rvar, sel, kinds, mode, res, n0):
    """(lo, hi, first output, {var level: first row}) per thread, level-0 rows split by
    content (offsets are content prefix sums: a bisection, no pass over the rows).
    `offsets` and `rvar` count result levels; `res` gives their levels in the nest."""
    nres = len(res)
    if levels[0] != "f" or not nres or res[0] != 0 or (mode == "reduce" and len(levels) < 2):
        return [(0, n0, 0, {res[p]: 0 for p in rvar})]  # level 0 is not split
    rl, rs = [levels[k] for k in res], [sizes[k] for k in res]
    before = None
    if mode == "reduce" and not rvar and len(levels) == 2:
        before = _index_weight(sel, kinds, n0)  # one result per row: weigh by content
    if before is None:
        def before(r):
            return _positions(r, rl, rs, offsets, nres)[-1]
    bounds = nest_split(n0, before(n0), before)
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        xs = _positions(lo, rl, rs, offsets, nres)
        parts.append((lo, hi, xs[-1], {res[p]: (xs[p - 1] if p else 0) for p in rvar}))
    return parts


def _count_parts(levels, sizes, offsets, rvar, res, p, n0):
    """Parts of the count pass of result var level `p`, level-0 rows split by how many
    level-`p` rows they hold (known from the fixed sizes and the levels counted before)."""
    counted = [q for q in rvar if q <= p]
    if levels[0] != "f" or not p or res[0] != 0:
        return [(0, n0, 0, {res[q]: 0 for q in counted})]  # level 0 is not split
    rl, rs = [levels[k] for k in res], [sizes[k] for k in res]

    def before(r):
        return _positions(r, rl, rs, offsets, p)[-1]  # level-p rows before level-0 row r

    bounds = nest_split(n0, before(n0), before)
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        xs = _positions(lo, rl, rs, offsets, p)
        parts.append((lo, hi, 0, {res[q]: (xs[q - 1] if q else 0) for q in counted}))
    return parts


def _index_weight(sel, kinds, n0):
    """Content before level-0 row r of the first var operand at level 1 (its start index;
    a bad index only unbalances the split: the kernel checks every row)."""
    for o, kind in zip(sel, kinds):
        # (an operand of its own level-0 size: a broadcast one has fewer index entries)
        if kind[0] == "f" and kind[1] in ("4", "8") and o.dims[0][1] == n0:
            width, (delta, *_) = o.dims[1][1], o.dims[1][2]
            stride = o.dims[0][2]
            dt = np.dtype(np.int32 if width == 4 else np.int64)
            addr = o.ptr

            def start(r, a=addr, s=stride, d=delta, dt=dt, w=width):
                at = a + (r * s if r < n0 else (n0 - 1) * s + d)
                return int(np.frombuffer((ctypes.c_char * w).from_address(at), dt)[0])
            if n0 == 0:
                return None
            s0 = start(0)
            return lambda r: start(r) - s0
    return None


def _nest_reduced(out, flags, reduce_arg, any_mask: bool, skipna: bool, whole=False):
    """Values and present flags of a reduction (the rules of `tests/ragged_reference.py`)."""
    op = reduce_arg[0]
    extremum = op in ("min", "max")
    seeded = extremum and len(reduce_arg) > 4
    if not (any_mask or extremum or (op == "mean" and out.dtype.kind in "iu")):
        return out, None  # a sum over plain values: every row has one (no pass over flags)
    valid, nonempty = (flags & 1).astype(bool), (flags & 2).astype(bool)
    values = out
    if seeded:
        values, valid = seed(values, valid, reduce_arg, ~nonempty, any_mask and not skipna)
    if not any_mask:
        if extremum and not valid.all():
            where = "array" if whole else f"row {int(np.argmin(valid))}"
            raise ValueError(f"zero-size {where} in reduction {op}, which has no identity")
        if op == "mean" and out.dtype.kind in "iu" and not nonempty.all():
            where = "array" if whole else f"row {int(np.argmin(nonempty))}"
            raise ValueError(f"zero-size {where} in a mean of dtype {out.dtype}: an "
                             "integer has no NaN")
        return values, None
    if skipna:
        return values, (valid if (extremum and not seeded) or op == "mean" else None)
    return values, valid


def _nest_result(values, mask, dims, offsets, xs, validity=None):
    """The lazyk Array of a nest's result: fixed dims, var dims over their offsets (`?var`
    where `validity` has the level's present rows)."""
    var_at = [k for k, d in enumerate(dims) if d == "v"]
    if not var_at:
        shape = tuple(int(d) for d in dims)
        values = np.asarray(values, order="C").reshape(shape)
        return array(values) if mask is None else \
            masked(values, mask.reshape(shape))
    d = var_at[-1]
    tail = tuple(int(n) for n in dims[d + 1:])
    shape = (xs[d] if d < len(xs) else len(values),) + tail
    values = values.reshape(shape)
    cur = array(np.ascontiguousarray(values)) if mask is None else \
        masked(values, mask.reshape(shape))
    for k in range(d, -1, -1):
        if dims[k] == "v":
            outer = None if k != var_at[0] else tuple(int(n) for n in dims[:k])
            cur = offsets_array(offsets[k], cur, (validity or {}).get(k), outer=outer,
                                check=False)
        elif k > var_at[0] and dims[k]:
            cur = regular(cur, int(dims[k]))
        elif k > var_at[0]:  # `m * 0 * X`: m (the elements of the level above) from xs
            t = FixedDim(xs[k - 1], FixedDim(0, cur.type.elem))
            owner = cur.owner if isinstance(cur.owner, MemoryBlock) else cur.to_numpy()
            cur = Array.from_parts(t, (xs[k - 1], 0, 0, cur.meta[1]) + tuple(cur.meta[2:]),
                                   cur.ptr, owner)
    return cur


def explain_nests(nests) -> str:
    """explain() text of the loop-nest kernels that ran: levels, operands, IR."""
    out = [f"== loop-nest kernels: {len(nests)} (the loop nest follows the result type; "
           "elementwise body and reduction fused)"]
    for k, (kern, nparts) in enumerate(nests):
        levels = " * ".join("var" if lv == "v" else "fixed" for lv in kern.levels)
        out.append(f"== nest {k + 1}: {kern.mode}, pass {kern.npass!r}, levels {levels}, "
                   f"{nparts} part(s) over threads")
        for j, kinds in enumerate(kern.kinds):
            def what(c):
                return {"n": "stays (broadcast)", "f": "strided"}.get(c) or \
                    ("?var" if "q" in c else "var") + " rows" + \
                    (" of a stepping view" if "s" in c else "") + \
                    f", int{8 * int(c[0])} indices"
            out.append(f"   input {j}{' (?T)' if kern.masked[j] else ''}: " +
                       ", ".join(what(c) for c in kinds))
        out.append(format_spec(kern.spec))
        out.append(f"== LLVM IR\n{kern.ir}")
    return "\n".join(out)


_FOLD = {"sum": np.add, "mean": np.add, "prod": np.multiply, "min": np.minimum,
         "max": np.maximum, "any": np.logical_or, "all": np.logical_and}


def _nest_all(spec, step, levels, sizes, sel, kinds, maskd, skipna, labels, leaves,
              reduce_arg, red_node, qrows=False):
    """A reduction over every axis: each part folds its level-0 rows into one partial
    result; the partials combine here (the reference's rules for the total). `qrows`:
    missing rows (`?var`), skipped under skipna, else the result is missing."""
    words, _ = _nest_words(levels, sizes, sel, kinds)
    n0 = sizes[0] if levels[0] == "f" else 1
    bounds = [0, n0]
    if levels[0] == "f":
        before = _index_weight(sel, kinds, n0)
        if before is not None:
            bounds = nest_split(n0, before(n0), before)
    acc = np.dtype(spec.outputs[0][1])
    out, flags = np.empty(len(bounds) - 1, acc), np.zeros(len(bounds) - 1, np.uint8)
    words[3], words[4] = out.ctypes.data, flags.ctypes.data
    kern = nest_kernel(spec, levels, kinds, maskd, "all", "fill", skipna, step.mean)
    parts = [(lo, hi, t, {}) for t, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:]))]
    statuses = kern.run(words, step.consts, parts, (leaves, out, flags), labels)
    for rec in RECORDERS:
        rec.append(("nest", kern, len(parts)))
    op = reduce_arg[0]
    count = sum(int(st[6]) for st in statuses)
    bad, seen = bool((flags & 1).any()), bool((flags & 2).any())
    with np.errstate(all="ignore"):
        value = _FOLD[op].reduce(out).astype(acc)
        anym = any(maskd) or qrows
        valid = not bad if anym and not skipna else True
        if op in ("min", "max") or (step.mean and (skipna or anym)):
            valid = valid and count > 0
        if step.mean:  # as NumPy: in float64, truncated back for an integer dtype
            value = (value / (max(count, 1) if acc.kind in "iu" else count)).astype(acc)
    values, mask = _nest_reduced(np.array([value], acc),
                                 np.array([int(valid) | (int(seen) << 1)], np.uint8),
                                 reduce_arg, anym, skipna, whole=True)
    dims = [1] * len(levels) if reduce_arg[2] else []
    return _nest_result(values.astype(red_node.dtype, copy=False), mask, dims, {}, [])

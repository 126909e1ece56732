"""Rules of ragged evaluation (the generated loop nest, `lazyk.runtime.nest_run`; the string step,
`lazyk.runtime.text_steps`): `initial=` for min / max, where() over missing values, inner reductions
computed first, the graph over the row iteration space, and the recorders `explain`
listens with."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from lazyk.arrays.array import masked
from lazyk.arrays.columns import build_columns, columns
from lazyk.arrays.trees import Leaf, Lists, Masked
from lazyk.frontend import ops
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import REDUCE_OP, graph_ops, input_names, rewrite, toposort
from lazyk.frontend.leaves import PickLeaf, is_ragged, leaf_data, leaf_key
from lazyk.frontend.operands import as_expr, wrap_array
from lazyk.frontend.reductions import seeded_fold
from lazyk.runtime import launch as runtime

# explain(): while it runs an expression, each ragged kernel launch of its thread is
# appended to every list in here as ("nest", kernel, parts)
RECORDERS = runtime.Recorders()


def seed(values, valid, reduce_arg, empty, missing_seen: bool):
    """min/max with `initial`: fold it into every result (in place: `values` and `valid`
    are the caller's own, fresh arrays); a result with nothing folded
    (`empty`: no element along the reduced axes) is `initial`, not missing nor an error.
    Without skipna over ?T data an invalid result that saw elements saw a missing one
    and stays missing."""
    init = np.asarray(reduce_arg[4]).astype(values.dtype)
    fill = ~valid
    if missing_seen:
        fill &= empty
    # in place: `values` and `valid` are this call's own (fresh arrays of a million
    # results cost more in page faults than the folds)
    with np.errstate(invalid="ignore"):
        ops.get(reduce_arg[0]).combine_ufunc()(values, init, out=values)
    np.copyto(values, init, where=fill)
    valid |= fill
    return values, valid


def branch_masks(root, names, leaves) -> bool:
    """Whether a `where` in `root` selects between branches that read `?T` leaves."""
    masked = {n for n, v in zip(names, leaves) if getattr(v, "option", False)}
    if not masked:
        return False

    def reads(node):
        return not masked.isdisjoint(input_names(node))
    return "where" in graph_ops(root) and any(
        selects(n) and (reads(n.srcs[1]) or reads(n.srcs[2])) for n in toposort(root))


def inline_branches(root, expr, picks: tuple):
    """`root` with each where() below it that selects between branches reading `?T` leaves
    computed first (its missing state is the selected branch's) and read as a leaf; one
    that reads a `picks` op (a selection, a gather) only where it is itself a mask or
    positions (else it stays fused in the nest of its selection); (root, expr) as they are
    when there is none. A selection of such a where() then reads its values and missing
    state."""
    masked = {n for n, v in expr.env.items() if getattr(leaf_data(v), "option", False)}
    if not masked or "where" not in graph_ops(root):
        return root, expr
    env = dict(expr.env)
    keys = {id(n.srcs[1]) for n in toposort(root) if n.op in picks}

    def visit(node, srcs):
        key = id(node) in keys
        node = node.replace(srcs=srcs) if srcs != node.srcs else node
        if node is root or not selects(node) or \
                all(masked.isdisjoint(input_names(s)) for s in node.srcs[1:]) or \
                not key and any(n.op in picks for n in toposort(node)) or \
                any(isinstance(env[n], PickLeaf) for n in input_names(node)):
            return node  # (items of tuples: read in the tuples' nest, with every slot)
        return computed_leaf(node, env)
    new_root = rewrite(root, visit)
    return (root, expr) if new_root is root else (new_root, Expr(new_root, env))


def computed_leaf(node, env: dict):
    """An input node over the value of `node` (computed now from the leaves in `env`,
    which takes the new leaf's entry)."""
    leaf = as_expr(runtime.evaluate(Expr(node, {n: env[n] for n in input_names(node)})))
    env.update(leaf.env)
    return leaf.node


def selects(node) -> bool:
    """A `where` with a computed condition. `where(True, k, x)` is how `imag` and
    comparisons with a str spell a value of x's shape: missing where x is (all masks)."""
    return node.op == "where" and node.srcs[0].op not in ("const", "scalar")


def inline_reductions(root, expr, empty_missing: bool = False):
    """Evaluate inner reductions (innermost first) and replace each by an input leaf.
    `empty_missing`: a min / max's result that folds nothing is a missing value, as in
    Awkward (a result of fixed dims), instead of the ValueError."""

    env = dict(expr.env)

    def visit(node, srcs):
        node = node.replace(srcs=srcs) if srcs != node.srcs else node
        if node.op != REDUCE_OP:
            return node
        seeded = seeded_fold(Expr(node, {n: env[n] for n in input_names(node)})) \
            if empty_missing else None  # (its own leaves: another fold's may be missing)
        value = None if seeded is None else _missing_where(runtime.evaluate(seeded[0]),
                                                            runtime.evaluate(seeded[1]))
        if value is None:
            value = runtime.evaluate(Expr(node, env))
        leaf = wrap_array(value) if isinstance(value, np.ndarray) else as_expr(value)
        env.update(leaf.env)
        return leaf.node

    new_root = rewrite(root, visit)
    return new_root, Expr(new_root, env)


def _missing_where(values, counts):
    """`values` missing where `counts` (how many values each folded: the same dims) is 0,
    or None where their items do not line up (then the fold is computed as written)."""
    if isinstance(values, np.ndarray):
        return masked(values, np.asarray(counts) > 0)

    def mark(v, n):
        if isinstance(v, Leaf) and isinstance(n, Leaf) and len(v.values) == len(n.values):
            return Masked(np.asarray(n.values) > 0, v)
        if isinstance(v, Lists) and isinstance(n, Lists) and int(v.offsets[0]) == 0 and \
                np.array_equal(v.offsets, n.offsets):
            child = mark(v.child, n.child)
            return None if child is None else Lists(v.offsets, child)
        return None
    got = mark(columns(values), columns(counts))
    return None if got is None else build_columns(got)


def rows_graph(root):
    """The graph over the row iteration space `R * L` (symbols, never sizes): every
    operand is lined up element by element, so the spec (and the kernel cache key) does not
    depend on the row count or the outer dims."""

    def visit(node, srcs):
        if node.op == REDUCE_OP:
            arg = (node.arg[0], (1,), node.arg[2]) + tuple(node.arg[3:])
            return node.replace(srcs=srcs, shape=("R", 1) if node.arg[2] else ("R",), arg=arg)
        if node.shape == ():
            return node.replace(srcs=srcs) if srcs != node.srcs else node
        return node.replace(srcs=srcs, shape=("R", "L"))
    return rewrite(root, visit)


def fused_step(node, leaves: dict, reduce: bool, int_mean: bool = False, extra: tuple = ()):
    """(the one fused step computing `node` over the row space, its canonical input names
    -> `leaves` values), or None when that is not one kernel: several steps, a reduction
    missing or unexpected, an input that is not a leaf, a mean accumulated in an integer
    dtype (unless `int_mean`: the caller divides as NumPy does). Canonical names make the
    same structure the same spec (one compile). `extra`: elementwise graphs over the same
    leaves the step computes too, as spec outputs 1, 2, ... (`nest_run.Picks`)."""
    names: dict = {}

    def rename(n, srcs):  # leaves `$0, $1, ...` in order of appearance over every root
        if n.op == "input":
            return n.replace(arg=names.setdefault(n.arg, f"${len(names)}"))
        return n.replace(srcs=srcs) if srcs != n.srcs else n
    roots = [rewrite(r, rename) for r in (node, *extra)]
    by_name = {names[k]: v for k, v in leaves.items() if k in names}
    steps = []
    for i, r in enumerate(roots):
        prog = runtime.plan(rows_graph(r))
        if len(prog.steps) != 1 or (prog.steps[0].spec.reduce is not None) != (reduce and
                                                                                not i):
            return None
        steps.append(prog.steps[0])
    step = steps[0]
    if any(n not in by_name for s in steps for n in s.inputs):
        return None
    if step.mean and np.dtype(step.spec.outputs[0][1]).kind not in \
            ("fciu" if int_mean else "fc"):
        return None
    return (_with_outputs(step, steps[1:]) if extra else step), by_name


def _with_outputs(step, more):
    """`step` also computing the outputs of the elementwise steps `more` (their inputs
    merged by name, their parameter slots after its own)."""
    inputs, body = list(step.inputs), list(step.spec.body)
    dtypes, outs = list(step.spec.inputs), list(step.spec.outputs)
    nparam, consts = len(step.spec.params), step.consts
    for part in more:
        base = len(body)
        for ins in part.spec.body:
            if ins.op == "load":
                name = part.inputs[ins.attr]
                if name not in inputs:
                    inputs.append(name)
                    dtypes.append(part.spec.inputs[ins.attr])
                ins = replace(ins, attr=inputs.index(name))
            elif ins.op == "param":
                ins = replace(ins, attr=ins.attr + nparam)
            ins = replace(ins, args=tuple(a + base for a in ins.args))
            body.append(ins)
        outs.append((part.spec.outputs[0][0] + base, part.spec.outputs[0][1]))
        nparam += len(part.spec.params)
        consts += part.consts
    spec = replace(step.spec, inputs=tuple(dtypes), aligned=(True,) * len(dtypes),
                   body=tuple(body), outputs=tuple(outs))
    return replace(step, spec=spec, inputs=tuple(inputs), consts=consts)


def one_leaf_per_array(roots: list, env: dict, names: list | None = None) -> tuple:
    """(roots, names) with each array read through one input name: `x * x` is one operand
    of a nest, which reads its rows once (one row check, no pairing with itself). `names`:
    the input names in operand order (else the roots' order); the names left are returned
    in that order."""
    if names is None:
        names = list(dict.fromkeys(n for r in roots for n in input_names(r)))
    first, alias = {}, {}
    for n in names:
        v = env[n]
        key = leaf_key(v) if is_ragged(v) else ("data", id(leaf_data(v)))
        a = first.setdefault(key, n)
        if a != n:
            alias[n] = a
    if not alias:
        return roots, names

    def rename(node, srcs):
        if node.op == "input" and node.arg in alias:
            return node.replace(arg=alias[node.arg])
        return node.replace(srcs=srcs) if srcs != node.srcs else node
    return [rewrite(r, rename) for r in roots], [n for n in names if n not in alias]

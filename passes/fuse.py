"""Elementwise fusion: cut the graph at reductions, one `KernelSpec` per piece (Contract 3).

Each step is the whole elementwise DAG under one reduction (or under the root), so a
node used twice is one SSA value; a reduction feeding more elementwise work ends one
kernel and its result is an input of the next. A graph of more than
`lazyk.frontend.graph.MAX_KERNEL_OPS` operations is cut further (`cut_points`): its topological order in
segments of that many operations, each node a later segment uses materialised as a step
of its own, so no kernel holds more (LLVM's compile time and stack grow with a kernel).

Constants become kernel parameters (`param` instructions; their values travel in
`Step.consts` and are written into kernel data at bind), so a new value is a new bind,
never a new compile. Only a small integer exponent of `**` is baked into the code
(`x**2` becomes `x*x`): see "What is baked into a kernel" in docs/design.md.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lazyk.frontend import graph
from lazyk.frontend.graph import REDUCE_OP, Node, graph_ops, input_names, toposort
from lazyk.frontend.ops import ARG_REDUCTIONS
from lazyk.frontend.spec import Instr, KernelSpec, pack_params


@dataclass(frozen=True)
class Step:
    """One kernel launch: its spec, where its inputs come from, and how its output is shaped.

    `inputs` holds leaf names (str) or earlier step numbers (int). For a reduction,
    `axes` are the reduced axes of the iteration shape and `mean` asks for a division
    by the number of reduced elements after the kernel; `seeded` marks a min / max whose
    `initial` is folded in after it (over dims sized only at run time), so that a fold over
    nothing gives its identity instead of NumPy's error. `consts` are the values of the
    spec's parameter slots as kernel-data bytes (`lazyk.frontend.spec.pack_params`).
    """

    spec: KernelSpec
    inputs: tuple
    shape: tuple
    dtype: np.dtype
    axes: tuple[int, ...] | None = None
    keepdims: bool = False
    mean: bool = False
    consts: bytes = b""
    seeded: bool = False


@dataclass(frozen=True)
class Program:
    """Steps in order; the last one (or the constant `value` when there are none) is the result."""

    steps: tuple[Step, ...]
    params: tuple[str, ...]
    shape: tuple
    dtype: np.dtype
    value: object = None


# One object per distinct spec: the launch caches key on id(spec), and the specs of
# `a * 2.0` and `a * 3.0` are equal (the values are parameters).
_interned: dict = {}


def _spec(body, inputs, out_index, out_dtype, reduce) -> KernelSpec:
    dtypes = tuple(body[i].dtype for i in _load_positions(body, len(inputs)))
    spec = KernelSpec(inputs=dtypes, aligned=(True,) * len(inputs), body=body,
                      outputs=((out_index, np.dtype(out_dtype)),), reduce=reduce)
    hit = _interned.get(spec)
    if hit is None:
        if len(_interned) > 4096:
            _interned.clear()
        hit = _interned.setdefault(spec, spec)
    return hit


def _baked(node: Node) -> bool:
    """A constant exponent of `**` worth baking: a small integer (or 0.5) lets LLVM turn the
    power into a few multiplications (or a square root)."""
    v = node.arg
    if isinstance(v, complex):
        if v.imag:
            return False
        v = v.real
    return v == 0.5 or (float(v).is_integer() and abs(v) <= 16)


def _load_positions(body, n) -> list[int]:
    pos = [0] * n
    for i, ins in enumerate(body):
        if ins.op == "load":
            pos[ins.attr] = i
    return pos


def fuse_elementwise(root: Node) -> Program:
    """Cut the graph into kernel steps: one per reduction, one for trailing elementwise work."""
    steps: list[Step] = []
    steps_of: dict[int, int] = {}
    params = list(input_names(root))
    if root.op in ("const", "scalar"):
        return Program((), (), root.shape, root.dtype, root.arg)
    cuts = cut_points(root)
    for node in toposort(root):
        if id(node) in cuts:  # an intermediate result of a graph too large for one kernel
            body, inputs, out, consts = _body_under(node, steps_of, own=True)
            spec = _spec(body, inputs, out, node.dtype, None)
            steps_of[id(node)] = len(steps)
            steps.append(Step(spec, inputs, node.shape, node.dtype,
                              consts=pack_params(spec.params, consts)))
            continue
        if node.op != REDUCE_OP:
            continue
        op, axes, keep = node.arg[:3]
        src = node.srcs[0]
        body, inputs, out, consts = _body_under(src, steps_of)
        reduce = "sum" if op == "mean" else op
        # an arg-reduction folds values of their own dtype into a position (int64)
        spec = _spec(body, inputs, out, src.dtype if op in ARG_REDUCTIONS else node.dtype,
                     reduce)
        steps_of[id(node)] = len(steps)
        steps.append(Step(spec, inputs, node.shape, node.dtype, axes, keep, op == "mean",
                          pack_params(spec.params, consts),
                          len(node.arg) > 4 and node.arg[4] is not None))
    if root.op != REDUCE_OP:
        body, inputs, out, consts = _body_under(root, steps_of)
        spec = _spec(body, inputs, out, root.dtype, None)
        steps.append(Step(spec, inputs, root.shape, root.dtype,
                          consts=pack_params(spec.params, consts)))
    return Program(tuple(steps), tuple(params), root.shape, root.dtype)


def cut_points(root: Node) -> set[int]:
    """Ids of the nodes materialised as steps of their own so that no kernel holds more
    than MAX_KERNEL_OPS operations: the topological order in segments of that many
    operations; a node of one segment that a later one uses is cut (each kernel then
    computes within its segment). Empty for graphs within the limit."""
    order = toposort(root)
    limit = graph.MAX_KERNEL_OPS
    if len(order) <= limit:
        return set()
    ops = [n for n in order if not n.is_leaf and n.op != REDUCE_OP]
    if len(ops) <= limit:
        return set()
    pos = {id(n): i for i, n in enumerate(order)}
    last_use: dict[int, int] = {}
    for i, n in enumerate(order):
        for s in n.srcs:
            last_use[id(s)] = i
    cuts: set[int] = set()
    segment: list[Node] = []
    for n in ops:
        segment.append(n)
        if len(segment) == limit:
            end = pos[id(n)]
            cuts.update(id(m) for m in segment if last_use.get(id(m), -1) > end)
            segment = []
    return cuts


def fuse_outputs(roots: list[Node]) -> tuple:
    """One body computing every node of `roots` (elementwise DAGs over leaves; a node they
    share is one SSA value): (body, input names, output index of each root, parameter
    values). For kernels with several outputs (the loop nest's histograms)."""
    if any(REDUCE_OP in graph_ops(r) for r in roots):
        raise ValueError("fuse_outputs: elementwise roots only")
    body, inputs, _, consts, index = _body_under(tuple(roots), {})
    return body, inputs, tuple(index[id(r)] for r in roots), consts


def _body_under(node, steps_of: dict[int, int], own: bool = False):
    """Body of the elementwise DAG rooted at `node` (stopping at reductions, materialised
    nodes and leaves; `own`: `node` is the materialised node this step computes), its
    inputs, output index and parameter values (one slot per distinct constant node). A
    tuple of nodes gives one body for all, and the index of every node too."""
    index: dict[int, int] = {}
    body: list[Instr] = []
    inputs: list = []
    where: dict = {}
    consts: list = []
    order = _elementwise_order(node, steps_of, own)
    baked = {id(n.srcs[1]) for n in order if n.op == "power"
             and n.srcs[1].op in ("const", "scalar") and _baked(n.srcs[1])}
    for n in order:
        stepped = n.op == REDUCE_OP or (id(n) in steps_of and not (own and n is node))
        if n.op == "input" or stepped:
            key = n.arg if n.op == "input" else steps_of[id(n)]
            if key not in where:
                where[key] = len(inputs)
                inputs.append(key)
            instr = Instr("load", n.dtype, (), where[key])
        elif n.op in ("const", "scalar") and id(n) in baked:
            instr = Instr("const", n.dtype, (), n.arg)
        elif n.op in ("const", "scalar"):
            instr = Instr("param", n.dtype, (), len(consts))
            consts.append(n.arg)
        elif n.op == "astype":
            instr = Instr("astype", n.dtype, (index[id(n.srcs[0])],), n.dtype)
        else:
            instr = Instr(n.op, n.dtype, tuple(index[id(s)] for s in n.srcs), n.arg)
        index[id(n)] = len(body)
        body.append(instr)
    if isinstance(node, tuple):
        return tuple(body), tuple(inputs), None, tuple(consts), index
    return tuple(body), tuple(inputs), index[id(node)], tuple(consts)


def _elementwise_order(root, steps_of: dict[int, int], own: bool) -> list[Node]:
    """Topological order of the DAG under `root` (a node or a tuple of them), not
    descending below reductions and materialised nodes (but into `root` itself when
    `own`)."""
    if not steps_of and isinstance(root, Node) and REDUCE_OP not in graph_ops(root):
        return toposort(root)  # (nothing to stop at: the graph's kept order)
    return toposort(root, descend=lambda n: n.op != REDUCE_OP and (
        id(n) not in steps_of or (own and n is root)))

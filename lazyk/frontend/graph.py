"""Immutable, hash-consed expression nodes: `Node(op, dtype, shape, srcs, arg)` and `dump()`.

Equal nodes are one object (`Node(...) is Node(...)`), so CSE is identity and a graph's
structure can be a cache key. `shape` holds ints and symbolic dim names (str).
"""
from __future__ import annotations

import os
import threading
import weakref

import numpy as np

from lazyk.errors import NotSupportedError
from lazyk.types import FixedDim, Option, SymbolicDim, VarDim, dshape

# Ops that are not rows of lazyk.frontend.ops.OPS but graph structure.
LEAF_OPS = ("input", "scalar", "const")
REDUCE_OP = "reduce"
# x[mask] and x[positions] (Awkward's selection and gather): srcs (x, mask or positions),
# arg = the level of x they act at (the mask's / positions' last dim; their dims line up
# with x's first dims)
SELECT_OP, TAKE_OP = "select", "take"

_table: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_lock = threading.Lock()
os.register_at_fork(after_in_child=_lock._at_fork_reinit)  # never held by a parent's thread


def arg_key(arg):
    """Hash key for `arg` that keeps 1, True and 1.0 (and NaNs) apart."""
    if arg is None or type(arg) is str:
        return arg
    if isinstance(arg, tuple):
        return tuple(arg_key(a) for a in arg)
    if isinstance(arg, (bool, int, float, complex, np.generic)):
        return (type(arg).__name__, repr(arg))
    if isinstance(arg, np.dtype):
        return ("dtype", arg.str, arg.name)
    return arg




class Node:
    """One graph node; construct with `Node(op, dtype, shape, srcs, arg)` (interned).

    Leaves: `input` (arg = parameter name), `scalar` (a weak Python scalar, NEP 50;
    arg = value), `const` (a strong NumPy scalar; arg = value). `reduce` has
    arg = (op, axes, keepdims); `select` / `take` have arg = the level they act at. Every
    other op names a row of `lazyk.frontend.ops.OPS`.
    """

    __slots__ = ("op", "dtype", "shape", "srcs", "arg", "_key", "__weakref__")

    def __new__(cls, op: str, dtype: np.dtype, shape: tuple = (), srcs: tuple = (),
                arg=None) -> Node:
        if not isinstance(dtype, np.dtype):
            dtype = np.dtype(dtype)
        if type(shape) is not tuple:
            shape = tuple(shape)
        if type(srcs) is not tuple:
            srcs = tuple(srcs)
        # dtype.str keeps byte order and merges equal aliases (int64 / longlong on Linux).
        key = (op, dtype.str if dtype.kind != "V" else str(dtype), shape, tuple(map(id, srcs)),
               arg_key(arg))
        with _lock:
            node = _table.get(key)
            if node is None:
                node = object.__new__(cls)
                object.__setattr__(node, "op", op)
                object.__setattr__(node, "dtype", dtype)
                object.__setattr__(node, "shape", shape)
                object.__setattr__(node, "srcs", srcs)
                object.__setattr__(node, "arg", arg)
                object.__setattr__(node, "_key", key)
                _table[key] = node
        return node

    def __setattr__(self, name, value):
        raise AttributeError("Node is immutable")

    def __reduce__(self):
        return (Node, (self.op, self.dtype, self.shape, self.srcs, self.arg))

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other) -> bool:
        return self is other

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def is_leaf(self) -> bool:
        """True for input, scalar and const nodes."""
        return self.op in LEAF_OPS

    @property
    def weak(self) -> bool:
        """True for a Python scalar whose dtype yields to the other operand (NEP 50)."""
        return self.op == "scalar"

    def replace(self, **changes) -> Node:
        """A node like this one with some fields changed (interned)."""
        fields = dict(op=self.op, dtype=self.dtype, shape=self.shape, srcs=self.srcs,
                      arg=self.arg)
        fields.update(changes)
        return Node(**fields)

    def type_text(self) -> str:
        """Datashape text of this node's type, e.g. `N * 3 * float64`."""
        return type_text(self.shape, self.dtype)

    def __repr__(self) -> str:
        return f"Node({self.op}, {self.type_text()})"


def type_text(shape: tuple, dtype: np.dtype) -> str:
    """Datashape text for a shape (ints and symbol names) and a NumPy dtype."""
    dt = np.dtype(dtype)
    if dt.kind in "SUV":  # text dtypes of the op table (lazyk.frontend.ops.STRING, NumPy S / U)
        name = "string" if dt.names and dt.names[0].startswith("utf") else \
            "bytes" if dt.names and dt.names[0].startswith("bytes") else \
            f"fixed_string[{dt.itemsize}]" if dt.kind == "S" else \
            f"fixed_string[{dt.itemsize // 4}, 'utf32']" if dt.kind == "U" else dt.name
        return " * ".join([str(d) for d in shape] + [name])
    name = np.dtype(dtype).name
    order = np.dtype(dtype).byteorder
    if order in "<>" and order != ("<" if np.little_endian else ">"):
        name = order + name
    return " * ".join([str(d) for d in shape] + [name])


def build_type(shape: tuple, dtype: np.dtype, rows: tuple = (), option: bool = False):
    """The lazyk type of a shape (ints, "var", symbol names) over a NumPy dtype: dims whose
    flag in `rows` is set may be missing (`?var`), and so may the elements (`option`)."""
    t = dshape(type_text((), dtype))
    if option:
        t = Option(t)
    for k in range(len(shape) - 1, -1, -1):
        d = shape[k]
        t = FixedDim(d, t) if isinstance(d, int) else VarDim(t) if d == "var" else \
            SymbolicDim(d, t)
        if k < len(rows) and rows[k]:
            t = Option(t)
    return t


def toposort(roots, descend=None) -> list[Node]:
    """All nodes reachable from `roots`, sources before users (iterative, no recursion limit).

    `descend(node)` False keeps `node` but does not visit its sources (e.g. stop at reductions).
    """
    if isinstance(roots, Node):
        roots = (roots,)
    seen: set[int] = set()
    order: list[Node] = []
    stack = [(r, False) for r in reversed(tuple(roots))]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        if descend is not None and not descend(node):
            continue
        for s in reversed(node.srcs):
            if id(s) not in seen:
                stack.append((s, False))
    return order


def rewrite(root: Node, fn) -> Node:
    """Bottom-up rebuild: `fn(node, new_srcs) -> Node` is called once per node."""
    new: dict[int, Node] = {}
    for node in toposort(root):
        srcs = tuple(new[id(s)] for s in node.srcs)
        new[id(node)] = fn(node, srcs)
    return new[id(root)]


# The most operations one kernel may hold. LLVM's compile time grows faster than the kernel
# (2,000 ops: ~1 s; 10,000: ~3 s of LLVM after ~5 s of Python; 30,000: ~15 s of instruction
# selection alone) and a 100,000-op chain overflowed the stack inside LLVM's optimizer.
MAX_KERNEL_OPS = 10_000


def kernel_ops(root: Node) -> int:
    """Operations (non-leaf nodes) in the largest kernel that fusing `root` gives: one kernel
    per reduction and one for the elementwise work above them (as passes/fuse.py cuts)."""
    order = toposort(root)
    total = sum(1 for n in order if not n.is_leaf and n.op != REDUCE_OP)
    if total <= MAX_KERNEL_OPS:
        return total  # no kernel is larger than the whole graph
    tops = [root] + [n.srcs[0] for n in order if n.op == REDUCE_OP]
    return max(sum(1 for n in toposort(t, descend=lambda n: n.op != REDUCE_OP)
                   if not n.is_leaf and n.op != REDUCE_OP) for t in tops)


def check_size(root: Node) -> None:
    """NotSupportedError when a kernel of `root` would exceed MAX_KERNEL_OPS operations
    (checked before the passes and LLVM see it)."""
    n = kernel_ops(root)
    if n > MAX_KERNEL_OPS:
        raise NotSupportedError(
            f"expression has {n:,} operations in one kernel; the limit is {MAX_KERNEL_OPS:,} "
            "(LLVM's compile time and stack use grow with the kernel): evaluate it in parts, "
            "e.g. `.eval()` an intermediate result and continue from that")


def _arg_text(node: Node) -> str:
    if node.op == "input":
        return f" {node.arg}"
    if node.op in ("scalar", "const"):
        return f" {node.arg!r}"
    if node.op == REDUCE_OP:
        op, axes, keep = node.arg[:3]
        skipna = len(node.arg) > 3 and bool(node.arg[3])
        initial = f" initial={node.arg[4]!r}" if len(node.arg) > 4 else ""
        return f" {op} axes={list(axes)} keepdims={bool(keep)} skipna={skipna}{initial}"
    if node.op in (SELECT_OP, TAKE_OP):
        return f" level={node.arg}"
    if node.arg is not None:
        return f" {node.arg}"
    return ""


def dump(root: Node) -> str:
    """Text form, one SSA line per node: `%3 = add(%1, %2) : N * float64`."""
    names: dict[int, str] = {}
    lines = []
    for i, node in enumerate(toposort(root)):
        names[id(node)] = f"%{i}"
        args = ", ".join(names[id(s)] for s in node.srcs)
        call = f"{node.op}({args})" if node.srcs or not node.is_leaf else node.op
        lines.append(f"%{i} = {call}{_arg_text(node)} : {node.type_text()}")
    return "\n".join(lines)

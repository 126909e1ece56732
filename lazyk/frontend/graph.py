"""Immutable, hash-consed expression nodes: `Node(op, dtype, shape, srcs, arg)` and `dump()`.

Equal nodes are one object (`Node(...) is Node(...)`), so CSE is identity and a graph's
structure can be a cache key; each node also knows the structure below it with its inputs
by position (`Node.skey`), so graphs built anew over new arrays share one key. `shape`
holds ints and symbolic dim names (str).
"""
from __future__ import annotations

import itertools
import weakref
from _weakref import _remove_dead_weakref

import numpy as np

from lazyk.lru import Memo
from lazyk.types import FixedDim, Option, SymbolicDim, VarDim, dshape

# Ops that are not rows of lazyk.frontend.ops.OPS but graph structure.
LEAF_OPS = ("input", "scalar", "const")
REDUCE_OP = "reduce"
# A row operation (`lazyk.frontend.rowops`: num, flatten, sort, cumsum, ...): arg = (name,
# params, missing-row flag per result dim, missing values?); the runtime computes it
# before the kernels that read it (`lazyk.runtime.row_steps`).
ROWS_OP = "rows"
# The item at one slot of each tuple of the rows at an axis (combinations, cartesian):
# arg = (tuples, slot, axis, position); `lazyk.frontend.tuples` builds it
PICK_OP = "pick"
# x[mask] and x[positions] (Awkward's selection and gather): srcs (x, mask or positions),
# arg = the level of x they act at (the mask's / positions' last dim; their dims line up
# with x's first dims)
SELECT_OP, TAKE_OP = "select", "take"

# Interning: key -> weak reference to the one node of that key; no lock. A node's death
# removes its entry (`_forget`) with `_remove_dead_weakref` (CPython's, as WeakValueDictionary
# uses it), which deletes an entry only if its node is dead, atomically: a live node another
# thread stored under the key meanwhile is never dropped.
_table: dict = {}

# Structure keys: (op, dtype, shape, arg, the sources' structure keys, how their leaves
# coincide) -> a small int, so a graph's structure with its leaves by position is known when
# its root is made (`Node.skey`). Ints are never reused: the table may be dropped when full,
# and two threads making one structure at once may each get one (a structure then gets a new
# key: a cache miss, never a wrong hit).
_structs = Memo(1 << 15, "graph structures")
_struct_ids = itertools.count(1)
# Graphs with more distinct inputs than this have no structure key (a walk gives theirs).
MAX_KEYED_INPUTS = 32


def arg_key(arg):
    """Hash key for `arg` that keeps 1, True and 1.0 (and NaNs) apart."""
    if arg is None or type(arg) is str:
        return arg
    if isinstance(arg, tuple):
        return tuple(arg_key(a) for a in arg)
    if isinstance(arg, (bool, int, float, complex, np.generic)):
        if arg != arg:  # NaN: its sign and payload too (every NaN's repr is "nan")
            return (type(arg).__name__, np.asarray(arg).tobytes())
        return (type(arg).__name__, repr(arg))
    if isinstance(arg, np.dtype):
        return ("dtype", arg.str, arg.name)
    return arg


def _intern_key(arg):
    """`arg_key` for the interning table, faster for the common scalars: ints and bools by
    type and value; a float by value unless NaN or a zero (their repr tells -0.0 apart);
    a tuple item by item (a row operation's flags: no repr of each bool)."""
    t = type(arg)
    if arg is None or t is str:
        return arg
    if t is int or t is bool:
        return (t, arg)
    if t is float and arg == arg and arg != 0.0:
        return (t, arg)
    if t is tuple:
        return tuple([_intern_key(a) for a in arg])
    return arg_key(arg)


class _Ref(weakref.ref):
    """A weak reference to an interned node that knows the node's key."""

    __slots__ = ("key",)


def _forget(ref: _Ref) -> None:
    _remove_dead_weakref(_table, ref.key)


def _structure(op: str, dtype: np.dtype, shape: tuple, srcs: tuple, key, arg) -> tuple:
    """(structure key, input names in order of first appearance) of a new node, or
    (None, None) past MAX_KEYED_INPUTS inputs."""
    if op == "input":
        s, names = ("input", dtype, shape), (arg,)
    elif not srcs:
        s, names = (op, dtype, shape, key), ()
    elif len(srcs) == 1:
        src = srcs[0]
        if src.skey is None:
            return None, None
        s, names = (op, dtype, shape, key, src.skey), src.names
    elif len(srcs) == 2 and srcs[0].skey is not None and srcs[1].skey is not None and \
            (len(srcs[0].names) + len(srcs[1].names) < 2 or
             (len(srcs[0].names) == 1 == len(srcs[1].names) and
              srcs[0].names[0] != srcs[1].names[0])):
        a, b = srcs  # (the common case: no input read twice)
        s, names = (op, dtype, shape, key, a.skey, b.skey), a.names + b.names
    else:
        keys, joined = [], ()
        for src in srcs:
            if src.skey is None:
                return None, None
            keys.append(src.skey)
            joined += src.names
        names = joined
        same = None
        first = dict.fromkeys(joined) if len(joined) > 1 else joined
        if len(first) < len(joined):
            names = tuple(first)
            # which sources read the same input: the positions of each source's inputs
            same = tuple(map(names.index, joined))
        if len(names) > MAX_KEYED_INPUTS:
            return None, None
        s = (op, dtype, shape, key, tuple(keys), same)
    got = _structs.get(s)
    if got is None:
        got = _structs.put(s, next(_struct_ids))
    return got, names


def _intern(op: str, dtype: np.dtype, shape: tuple, srcs: tuple, arg=None) -> Node:
    """`Node(op, dtype, shape, srcs, arg)` for fields already in their form (an np.dtype,
    tuples)."""
    key = (op, dtype, shape, srcs, _intern_key(arg))  # (the sources by identity)
    ref = _table.get(key)
    if ref is not None:
        node = ref()
        if node is not None:
            return node
        _remove_dead_weakref(_table, key)
    node = _Fields.__new__(_Fields)
    node.op, node.dtype, node.shape, node.srcs, node.arg = op, dtype, shape, srcs, arg
    node.skey, node.names = _structure(op, dtype, shape, srcs, key[4], arg)
    node.__class__ = Node
    mine = _Ref(node, _forget)
    mine.key = key
    ref = _table.setdefault(key, mine)
    while ref is not mine:  # another thread's node, or (then) its dead entry
        other = ref()
        if other is not None:
            return other
        _remove_dead_weakref(_table, key)
        ref = _table.setdefault(key, mine)
    return node


class _Fields:
    """A node's fields: `_intern` fills them in with plain stores (a quarter of the cost
    of `object.__setattr__`), then makes the object a `Node`, which refuses changes."""

    __slots__ = ("op", "dtype", "shape", "srcs", "arg", "skey", "names", "__weakref__")


class Node(_Fields):
    """One graph node; construct with `Node(op, dtype, shape, srcs, arg)` (interned).

    Leaves: `input` (arg = parameter name), `scalar` (a weak Python scalar, NEP 50;
    arg = value), `const` (a strong NumPy scalar; arg = value). `reduce` has
    arg = (op, axes, keepdims); `select` / `take` have arg = the level they act at. Every
    other op names a row of `lazyk.frontend.ops.OPS`.

    `skey` is the structure of the graph below the node with its inputs by position
    (equal for graphs that differ only in their inputs' names) and `names` those inputs'
    names in that order; both None for graphs of more than MAX_KEYED_INPUTS inputs.
    Nodes compare and hash by identity (equal nodes are one object).
    """

    __slots__ = ()

    def __new__(cls, op: str, dtype: np.dtype, shape: tuple = (), srcs: tuple = (),
                arg=None) -> Node:
        if not isinstance(dtype, np.dtype):
            dtype = np.dtype(dtype)
        # A dtype key keeps byte order and merges equal aliases (int64 / longlong on Linux).
        return _intern(op, dtype, shape if type(shape) is tuple else tuple(shape),
                         srcs if type(srcs) is tuple else tuple(srcs), arg)

    def __setattr__(self, name, value):
        raise AttributeError("Node is immutable")

    def __reduce__(self):  # (flat, sources before users: a deep graph pickles and copies)
        order = toposort(self)
        at = {id(n): k for k, n in enumerate(order)}
        return (_rebuilt, ([(n.op, n.dtype, n.shape, tuple(at[id(s)] for s in n.srcs), n.arg)
                            for n in order],))

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
        if len(changes) == 1 and type(changes.get("srcs")) is tuple:  # (most rewrites)
            return _intern(self.op, self.dtype, self.shape, changes["srcs"], self.arg)
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
    """Datashape text for a shape (ints, None for var, symbol names) and a NumPy dtype."""
    dims = ["var" if d is None else str(d) for d in shape]
    dt = np.dtype(dtype)
    if dt.kind in "SUV":  # text dtypes of the op table (lazyk.frontend.ops.STRING, NumPy S / U)
        name = "string" if dt.names and dt.names[0].startswith("utf") else \
            "bytes" if dt.names and dt.names[0].startswith("bytes") else \
            f"fixed_string[{dt.itemsize}]" if dt.kind == "S" else \
            f"fixed_string[{dt.itemsize // 4}, 'utf32']" if dt.kind == "U" else dt.name
        return " * ".join(dims + [name])
    name = np.dtype(dtype).name
    order = np.dtype(dtype).byteorder
    if order in "<>" and order != ("<" if np.little_endian else ">"):
        name = order + name
    return " * ".join(dims + [name])


def picked_shape(op: str, x: tuple, key: tuple, at: int) -> tuple:
    """The shape of `x[key]` at x's dim `at`: a selection makes that dim var; a gather
    gives the positions' dims, then x's below them."""
    return x[:at] + (None,) + x[at + 1:] if op == SELECT_OP else key + x[at + 1:]


def shared_reductions(root: "Node") -> frozenset:
    """The ids of the reductions, and of the masks that gather (`x[m]` with m reading
    `y[positions]`), that two or more parts of `root` computed apart read: the masks of
    row selections (`x[mask]`, a mask of one dim) and the sources of row operations are
    computed on their own, before the rest (`x[lazyk.num(y) > 0]` with x computed from the
    same reduction of y; `firsts(pairs.i[m])` and `firsts(pairs.j[m])`): computing those
    once first saves their work twice. Kept per graph."""
    got = _shared.get(root)
    if got is None:
        got = _shared.put(root, _shared_reductions(root))
    return got


def _shared_reductions(root: Node) -> frozenset:
    count: dict = {}
    todo, parts = [root], set()
    while todo:
        top = todo.pop()
        seen, found, stack = set(), set(), [top]
        while stack:
            n = stack.pop()
            if n in seen:  # (nodes hash by identity)
                continue
            seen.add(n)
            op = n.op
            if op == REDUCE_OP:
                found.add(id(n))
            elif op == SELECT_OP and n.arg and TAKE_OP in graph_ops(n.srcs[1]):
                found.add(id(n.srcs[1]))
            apart = n.srcs if op == ROWS_OP else \
                n.srcs[1:] if op == SELECT_OP and n.arg == 0 else ()
            if not apart:  # (most nodes: every source in this part)
                stack.extend(n.srcs)
                continue
            for s in n.srcs:
                if any(s is a for a in apart):
                    if id(s) not in parts:
                        parts.add(id(s))
                        todo.append(s)
                else:
                    stack.append(s)
        for r in found:
            count[r] = count.get(r, 0) + 1
    return frozenset(r for r, k in count.items() if k > 1)


def build_type(shape: tuple, dtype: np.dtype, rows: tuple = (), option: bool = False):
    """The lazyk type of a shape (ints, None for var, symbol names) over a NumPy dtype: dims whose
    flag in `rows` is set may be missing (`?var`), and so may the elements (`option`)."""
    # (types are interned: a kept one is the one built again; the dims' types are in the
    # key, as 1 and True are equal keys but not equal dims)
    key = (dtype, tuple(shape), tuple(map(type, shape)), tuple(map(bool, rows)), bool(option))
    got = _types.get(key)
    if got is None:
        got = _types.put(key, _build_type(shape, dtype, rows, option))
    return got


def _build_type(shape: tuple, dtype: np.dtype, rows: tuple, option: bool):
    t = dshape(type_text((), dtype))
    if option:
        t = Option(t)
    for k in range(len(shape) - 1, -1, -1):
        d = shape[k]
        t = FixedDim(d, t) if isinstance(d, int) else VarDim(t) if d is None else \
            SymbolicDim(d, t)
        if k < len(rows) and rows[k]:
            t = Option(t)
    return t


# Orders of the graphs walked (every evaluation walks its graph many times while it plans,
# lowers and checks): root -> its `toposort` order, and root -> the ops in its graph.
# Nodes are immutable, so neither goes stale; graphs of more than MAX_KEPT_ORDER nodes are
# walked each time (the memo holds at most its size of roots, and their graphs, alive).
_orders = Memo(1 << 10, "graph orders")
_ops = Memo(1 << 10, "graph ops")
_shared = Memo(1 << 10, "shared reductions")
_types = Memo(1 << 12, "built types")
MAX_KEPT_ORDER = 4096


def _rebuilt(rows: list) -> Node:
    """The last node of `Node.__reduce__`'s rows, each built over the ones before it."""
    nodes: list = []
    for op, dtype, shape, srcs, arg in rows:
        nodes.append(Node(op, dtype, shape, tuple(nodes[k] for k in srcs), arg))
    return nodes[-1]


def toposort(roots, descend=None) -> list[Node]:
    """All nodes reachable from `roots`, sources before users (iterative, no recursion limit).

    `descend(node)` False keeps `node` but does not visit its sources (e.g. stop at reductions).
    """
    if descend is None and type(roots) is Node:
        got = _orders.get(roots)
        if got is None:
            got = _walk((roots,), None)
            if len(got) <= MAX_KEPT_ORDER:
                _orders.put(roots, tuple(got))
            return got
        return list(got)
    return _walk((roots,) if isinstance(roots, Node) else tuple(roots), descend)


def _walk(roots: tuple, descend) -> list[Node]:
    # Depth first with an iterator per open node, sets of nodes (identity hashes): a third
    # of the cost of pushing (node, done) pairs.
    seen: set = set()
    order: list[Node] = []
    add, app = seen.add, order.append
    for root in roots:
        if root in seen:
            continue
        add(root)
        stack = [(root, iter(root.srcs if descend is None or descend(root) else ()))]
        push, pop = stack.append, stack.pop
        while stack:
            node, it = stack[-1]
            for s in it:
                if s not in seen:
                    add(s)
                    push((s, iter(s.srcs if descend is None or descend(s) else ())))
                    break
            else:
                pop()
                app(node)
    return order


def graph_ops(root: Node) -> frozenset:
    """The ops of the nodes in the graph of `root` (kept per graph: every evaluation asks
    whether its graph holds a reduction, a row operation, a selection, ...)."""
    got = _ops.get(root)
    if got is None:
        got = _ops.put(root, frozenset(n.op for n in toposort(root)))
    return got


def input_names(root: Node) -> tuple:
    """The names of the inputs of the graph of `root`, in order of first appearance (the
    order of `toposort`)."""
    if root.names is not None:
        return root.names
    return tuple(dict.fromkeys(n.arg for n in toposort(root) if n.op == "input"))


def has_rows(root: Node) -> bool:
    """Whether a row operation (`ROWS_OP`) is in the graph of `root`."""
    return ROWS_OP in graph_ops(root)


def rewrite(root: Node, fn) -> Node:
    """Bottom-up rebuild: `fn(node, new_srcs) -> Node` is called once per node."""
    new: dict[Node, Node] = {}
    order = _orders.get(root)  # (the kept order itself: read, not copied)
    for node in toposort(root) if order is None else order:
        srcs = node.srcs  # (a leaf's: the empty tuple, as is)
        new[node] = fn(node, tuple([new[s] for s in srcs]) if srcs else srcs)
    return new[root]


# The most operations one kernel holds: a larger graph is cut into several kernels
# (passes/fuse.py). LLVM's compile time grows with the kernel (10,000 ops: ~1 s of Python
# and ~3 s of LLVM; 30,000: ~15 s of instruction selection alone) and a 100,000-op chain
# overflowed the stack inside LLVM's optimizer.
MAX_KERNEL_OPS = 10_000


def _arg_text(node: Node) -> str:
    if node.op == "input":
        return f" {node.arg}"
    if node.op in ("scalar", "const"):
        return f" {node.arg!r}"
    if node.op == ROWS_OP:
        name, params = node.arg[:2]
        return f" {name}{list(params)}"
    if node.op == REDUCE_OP:
        op, axes, keep = node.arg[:3]
        skipna = len(node.arg) > 3 and bool(node.arg[3])
        initial = f" initial={node.arg[4]!r}" if len(node.arg) > 4 else ""
        return f" {op} axes={list(axes)} keepdims={bool(keep)} skipna={skipna}{initial}"
    if node.op == PICK_OP:
        tuples, slot, axis, position = node.arg
        return f" {'index' if position else 'item'} {slot} of the {tuples} at axis {axis}"
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

"""String operations over ragged and missing strings (`var * string`, `?string`,
`N * var * ?string`, `var * var * string`, `N * ?var * string`, string fields of records),
and the same over `bytes` / `?bytes` elements (`ops.BYTES`: byte order, `str_len` their
byte length; `lazyk.frontend.expr` refuses bytes against str before anything runs).

`fused` runs an expression with its string operations inside the loop nest
(`lazyk.runtime.nest_run` reads the `{begin, size}` elements in place). Where the nest does not take
it (stepping views, `where` over missing strings, reductions it refuses), before the ragged
path (`lazyk.runtime.ragged`) runs the expression, every string operation in it
(comparisons, `str_len`, `startswith`, `endswith`) is computed here and replaced by a
numeric leaf with the operands' row structure: the 16-byte `{begin, size}` elements of each
string operand are gathered flat (`rows.gather`; the characters are not copied), the
operands are lined up row by row as numbers are (`rows.line_up`), the fixed string kernel
runs once over the flat elements, and the result is rebuilt into rows (`build_rows`)
with the AND of the operands' masks (missing in, missing out). A missing string's element
is never read: it is gathered as the empty string and its result is masked. The rest of
the expression (numeric work, reductions) then runs on the ragged path as for any
numeric `T` / `?T` leaf. Strings under several var dims or missing rows take the nested
path at the end of this module (the loop nest lines their rows up first).

`where(c, s, t)` over strings (or bytes) runs before all of this (`select_text`): the
branches are viewed as `{begin, size}` records, both halves go through a numeric where()
(the loop nest for var / option data), and the selected elements become a new string
array over the sources' character blocks (no character is copied).
"""
from __future__ import annotations

import ctypes
import weakref

import numpy as np

from lazyk.arrays import arrmeta as M
from lazyk.arrays import memory
from lazyk.arrays.array import Array, array, masked
from lazyk.arrays.buffers import build_rows, offsets_array, regular, text_from_numpy
from lazyk.arrays.columns import columns
from lazyk.arrays.trees import Leaf, Lists, Regular
from lazyk.errors import NotSupportedError
from lazyk.frontend import ops
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import Node, rewrite, toposort
from lazyk.frontend.leaves import is_ragged, leaf_data, text_element, text_rows
from lazyk.frontend.operands import as_expr
from lazyk.frontend.ufuncs import where
from lazyk.runtime import launch as runtime
from lazyk.runtime.launch import canonical, plan, run_program
from lazyk.runtime.nest_steps import evaluate_nest
from lazyk.runtime.ragged_rules import computed_leaf
from lazyk.runtime.rows import (
    Operand,
    Structure,
    check_extent,
    from_numpy,
    gather,
    line_up,
    row_view,
)
from lazyk.types import FixedDim, Option, Scalar, VarDim, with_value

_TEXT = frozenset(ops.TEXT)


def lower(expr: Expr) -> Expr:
    """`expr` with every string operation over ragged / missing string leaves (and any
    other string operation next to them) computed and replaced by a numeric leaf; `expr`
    itself when it has none."""
    nodes = toposort(expr.node)
    if not any(n.op in _TEXT for n in nodes):
        return expr
    env = dict(expr.env)

    def visit(node: Node, srcs: tuple) -> Node:
        node = node.replace(srcs=srcs) if srcs != node.srcs else node
        if node.op not in _TEXT or not any(s.op == "input" for s in node.srcs):
            return node  # numeric work, or a string operation on constants only
        leaf = as_expr(_compute(node, env))
        env.update(leaf.env)
        return leaf.node

    root = rewrite(expr.node, visit)
    used = {n.arg for n in toposort(root) if n.op == "input"}
    return Expr(root, {k: v for k, v in env.items() if k in used})


def fused(expr: Expr):
    """The lazyk Array of `expr`, its string operations and numeric work in one loop-nest
    kernel (`lazyk.runtime.nest_run`), or None when the nest does not take it (the string step then
    runs first, `lower`). A `where` over missing strings is not fused: its branches are
    computed for missing elements too, and a missing string's element is never read."""
    nodes = toposort(expr.node)
    if not any(n.op in _TEXT for n in nodes):
        return None
    names = {n.arg for n in nodes if n.op == "input"}
    if any(n.op == "where" and n.srcs[0].op not in ("const", "scalar") for n in nodes) and \
            any(getattr(leaf_data(v), "option", False) for k, v in expr.env.items()
                if k in names):
        return None
    try:
        return evaluate_nest(expr)
    except NotSupportedError:  # what the nest refuses may still run after the string step
        return None


def computed(expr: Expr, lowered: Expr):
    """The lazyk Array that `lowered = lower(expr)` is when it is just the leaf computed
    for a string operation (`x == 'a'` itself), else None."""
    if lowered is expr or lowered.node.op != "input":
        return None
    value = lowered.env[lowered.node.arg]
    array = getattr(value, "array", None)  # a RaggedLeaf, else an OwnedView
    return array if array is not None else getattr(value, "owner", None)


def _elements(arr: Array) -> np.dtype:
    """`ops.STRING` or `ops.BYTES`: the `{begin, size}` dtype of a string / bytes array."""
    t = arr.type.dtype
    return text_element(t.elem if isinstance(t, Option) else t)


def _operand(value):
    """One string leaf flattened (`rows.Operand`) with its elements as `ops.STRING` (or
    `ops.BYTES`)."""
    if not is_ragged(value):
        return from_numpy(value)  # fixed strings: lazyk `string` / `bytes`, NumPy S / U
    proxy = text_rows(value.array)
    dt = _elements(value.array)
    v = row_view(proxy)
    if v.mask_offset is None:
        dense = _dense(v, dt)
        if dense is not None:  # rows back to back (offsets over content): no copy
            starts = np.cumsum(v.lengths) - v.lengths
            return Operand(v.outer, v.lengths, starts, dense, None, v.var, v.last)
    op = gather(proxy, np.dtype(np.complex128))
    op.values = op.values.view(dt)  # missing elements were zeroed: "" (size 0)
    return op


def _dense(v, dt: np.dtype) -> np.ndarray | None:
    """The elements of rows that follow each other in memory, as one read-only view."""
    ptr, ln = v.rowptr, v.lengths
    if v.stride != 16 or not len(ptr):
        return None
    if not bool(np.all(ptr[1:] == ptr[:-1] + ln[:-1] * 16)):  # offsets pass at once
        keep = ln > 0  # empty rows may start anywhere
        ptr, ln = ptr[keep], ln[keep]
        if not len(ptr) or not bool(np.all(ptr[1:] == ptr[:-1] + ln[:-1] * 16)):
            return None
    total = int(ln.sum())
    raw = np.ctypeslib.as_array((ctypes.c_uint8 * (16 * total)).from_address(int(ptr[0])))
    out = raw.view(dt)
    out.flags.writeable = False
    return out


def _compute(node: Node, env: dict):
    """The lazyk Array of string operation `node` over its leaves' data."""
    leaves = list(dict.fromkeys(s.arg for s in node.srcs if s.op == "input"))
    if any(_nested(leaf_data(env[name])) for name in leaves):
        return _compute_nested(node, leaves, env)
    operands = [_operand(leaf_data(env[name])) for name in leaves]
    if len(operands) == 1:  # against constants: the operand's own rows
        op = operands[0]
        struct, index = Structure(op.outer, op.lengths, op.var, op.last), [slice(None)]
    else:
        struct, index = line_up([f"operand {k}" for k in range(len(leaves))], operands)
    total = int(struct.lengths.sum())
    data, mask = {}, None
    for name, op, ix in zip(leaves, operands, index):
        data[name] = np.ascontiguousarray(op.values[ix])
        if op.mask is not None:
            m = op.mask[ix]
            mask = m if mask is None else mask & m
    flat = node.replace(shape=(total,), srcs=tuple(
        s.replace(shape=(total,)) if s.op == "input" else s for s in node.srcs))
    flat, data = canonical(flat, data)
    values = run_program(plan(flat), data)
    has_last = struct.var or struct.last is not None
    last = None if not has_last else "var" if struct.var else struct.last
    return build_rows(values, mask, struct.outer, last, struct.lengths)


# ---------------------------------------------------------------- var dims at any depth
# Strings under several var dims (`var * var * string`, `N * ?var * string`): each string
# operand becomes an int64 "index" array of its own structure (its index buffers are used
# in place; only the last var dim's content is new: the number of each element), and the
# loop nest lines the index arrays up (`i + 0 * j`), so it checks and pairs every row. The
# string kernel then runs over the lined-up elements gathered flat, and its values become
# the content of that structure.

def _nested(value) -> bool:
    """Whether a ragged string leaf needs the nested path (var dims above the last, ?var)."""
    if not is_ragged(value):
        return False
    try:
        text_rows(value.array)
    except NotSupportedError:
        return True
    return False


def _region(arr: Array):
    """The last var dim of `arr`: (its arrmeta position, the fixed dims under it [(size,
    stride)], the element mask offset or None)."""
    words, t, k = M.dims_words(arr.type, arr.meta)
    at, inner = None, []
    for d in words:
        if isinstance(d, M.RowsWords):
            at, inner = d.at, []
        else:
            inner.append((d.size, d.stride))
    return at, inner, arr.meta[k] if isinstance(t, Option) else None


def _under_last_var(t, elem):
    """`t` (with a var dim) with what lies under its last var dim replaced by `elem`."""
    if isinstance(t, Option):  # (a `?var` dim)
        return Option(_under_last_var(t.elem, elem))
    if isinstance(t, VarDim) and not _has_var(t.elem):
        return VarDim(elem)
    inner = _under_last_var(t.elem, elem)
    return FixedDim(t.size, inner) if isinstance(t, FixedDim) else VarDim(inner)


def _has_var(t) -> bool:
    while isinstance(t, (FixedDim, VarDim, Option)):
        if isinstance(t, VarDim):
            return True
        t = t.elem
    return False


def _content_view(arr: Array, dtype: np.dtype, at: int, inner: list, extra: int = 0):
    """The last var dim's `length` content elements (times the fixed dims under it) as one
    read-only NumPy view of `dtype` at `extra` bytes from each element (C order)."""
    rows = M.rows_at(arr.meta, at)
    content, istride, length = rows.content, rows.index_stride, rows.length
    shape = (length,) + tuple(n for n, _ in inner)
    strides = (istride,) + tuple(s for _, s in inner)
    if 0 in shape:
        return np.zeros(shape, dtype)
    lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + dtype.itemsize
    start = content + extra + lo
    raw = np.ctypeslib.as_array((ctypes.c_uint8 * (hi - lo)).from_address(start))
    out = np.ndarray(shape, dtype, raw, -lo, strides)
    out.flags.writeable = False
    return out


def _with_content(arr: Array, at: int, content: Array,
                  readonly: bool = False) -> Array:
    """`arr` with its last var dim's content replaced by `content` (`L * inner * X`, C
    order, one element per old content element): the same index buffers, new elements."""
    rows = M.rows_at(arr.meta, at)
    stride, istride = rows.stride, rows.index_stride
    new_istride = content.meta[1]
    if stride == istride:
        new_stride = new_istride
    elif istride and stride % istride == 0:  # a stepping view: every k-th element
        new_stride = stride // istride * new_istride
    else:
        raise NotSupportedError(f"string operations on {arr.type}: rows with a step that is "
                                "not a whole number of elements")
    block = content.owner
    if not isinstance(block, memory.MemoryBlock):  # NumPy values: a block over them
        block = memory.foreign(content.to_numpy())
    head = (block.ref, rows.width, rows.stop_delta, content.ptr, new_istride, new_stride,
            content.meta[0])
    meta = arr.meta[:at] + head + tuple(content.meta[2:])
    t = _under_last_var(arr.type, content.type.elem)
    owner = arr.owner
    if isinstance(owner, memory.MemoryBlock) and owner.buffer is not None:
        # a block over the same index bytes that keeps the new content alive too
        owner = memory.foreign(owner.buffer, keep=[owner, block])
    else:
        owner = (owner, block)
    return Array.from_parts(t, meta, arr.ptr, owner, readonly, check_strings=False)


def _indexed(value):
    """(the elements of one string operand, flat: lazyk `{begin, size}` elements as
    complex128, so they are copied bit for bit; an index array of the operand's structure
    numbering them, missing where the string is; the elements' dtype)."""
    if not is_ragged(value):  # fixed dims: NumPy S / U, or lazyk strings' elements
        flat = np.ascontiguousarray(value).reshape(-1)
        dt = flat.dtype
        bits = flat.view(np.complex128) if dt in (ops.STRING, ops.BYTES) else flat
        return bits, np.arange(flat.size, dtype=np.int64).reshape(np.shape(value)), dt
    proxy = text_rows(value.array, nested=True)
    check_extent(proxy)  # every content element (and mask byte) lies inside its block
    at, inner, moff = _region(proxy)
    elems = _content_view(proxy, np.dtype(np.complex128), at, inner)
    numbers = np.arange(elems.size, dtype=np.int64).reshape(elems.shape)
    if moff is None:
        content = array(numbers)
    else:
        present = _content_view(proxy, np.dtype(np.uint8), at, inner, moff) != 0
        content = masked(numbers, present)
    return elems.reshape(-1), _with_content(proxy, at, content, readonly=True), \
        _elements(value.array)


def _compute_nested(node: Node, leaves: list, env: dict):
    """`_compute` when a string operand has var dims above the last one or ?var rows."""
    elems, index, dtypes = zip(*(_indexed(leaf_data(env[name])) for name in leaves))
    exprs = [as_expr(i) for i in index]
    lined = []
    for k, e in enumerate(exprs):  # every index array over the common structure (fresh)
        e = e + 0
        for j, other in enumerate(exprs):
            if j != k:
                e = e + 0 * other
        lined.append(e.eval())
    if not isinstance(lined[0], Array) or not any(
            isinstance(d.elem if isinstance(d, Option) else d, VarDim)
            for d in lined[0].type.dims):
        raise NotSupportedError(f"string operations on {node.type_text()}: the operands "
                                "have no var dims in common")
    at, inner, moff = _region(lined[0])
    mask = None
    if moff is not None:  # missing where any operand is: its element is never read
        mask = _content_view(lined[0], np.dtype(np.uint8), at, inner, moff).reshape(-1) != 0
    data = {}
    for name, flat, got, dt in zip(leaves, elems, lined, dtypes):
        idx = _content_view(got, np.dtype(np.int64), at, inner).reshape(-1)
        # a present element's number is one of the operand's; a missing one may be any
        vals = np.take(flat, idx, mode="clip") if len(flat) else np.zeros(len(idx), flat.dtype)
        if mask is not None:
            vals[~mask] = 0  # the empty string
        data[name] = vals.view(dt) if vals.dtype == np.complex128 else vals
    total = len(next(iter(data.values())))
    flat = node.replace(shape=(total,), srcs=tuple(
        s.replace(shape=(total,)) if s.op == "input" else s for s in node.srcs))
    flat, data = canonical(flat, data)
    values = run_program(plan(flat), data)
    shape = (M.rows_at(lined[0].meta, at).length,) + tuple(n for n, _ in inner)
    values = np.asarray(values).reshape(shape)
    content = array(np.ascontiguousarray(values)) if mask is None else \
        masked(values, mask.reshape(shape))
    return _with_content(lined[0], at, content)


# ------------------------------------------------ where(c, s, t) over strings and bytes
def has_text_where(expr: Expr) -> bool:
    """Whether `expr` selects strings (or bytes) with where() (a look-up per graph: every
    evaluation asks)."""
    root = expr.node
    got = _HAS_TEXT_WHERE.get(root)
    if got is None:
        # by structure, not by the nodes where() made: a graph rewritten (Dask partitions,
        # passes) or unpickled in another process has new nodes
        got = _HAS_TEXT_WHERE[root] = any(
            n.op == "where" and n.dtype in (ops.STRING, ops.BYTES) for n in toposort(root))
    return got


_HAS_TEXT_WHERE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def select_text(expr: Expr, record: list | None = None) -> Expr:
    """`expr` with each where() over strings (or bytes) computed first and replaced by a
    string leaf: the result's `{begin, size}` elements are those of the branch each
    condition selects (no character is copied: the result keeps every source's character
    blocks alive), and its missing strings follow the where() rule for missing values.
    The condition and both branches' `begin` and `size` halves run as numeric where()s,
    in the loop nest for var / option data (their rows lined up, broadcast and checked
    there). `record` (explain) gets the (begins, sizes) where() Exprs of each."""
    if not has_text_where(expr):
        return expr
    env = dict(expr.env)

    def visit(node: Node, srcs: tuple) -> Node:
        node = node.replace(srcs=srcs) if srcs != node.srcs else node
        if node.op != "where" or not ops.text_unit(node.dtype):
            return node
        # (a computed string branch, a lined-up records field say: its strings first)
        node = node.replace(srcs=node.srcs[:1] + tuple(
            s if s.op in ("const", "input") else computed_leaf(s, env) for s in node.srcs[1:]))
        leaf = as_expr(_select(node, env, record))
        env.update(leaf.env)
        return leaf.node

    root = rewrite(expr.node, visit)
    used = {n.arg for n in toposort(root) if n.op == "input"}
    return Expr(root, {k: v for k, v in env.items() if k in used})


def text_result(expr: Expr):
    """The lazyk Array a `select_text` result is when it is just a string leaf, else None."""
    if expr.node.op != "input" or not ops.text_unit(expr.node.dtype):
        return None
    value = expr.env[expr.node.arg]
    found = getattr(value, "array", None)  # a RaggedLeaf, else an OwnedView
    return found if found is not None else getattr(value, "owner", None)


def _halves(node: Node, env: dict, kind: str, home: memory.MemoryBlock) -> tuple:
    """(begin, size) Exprs of a where() branch: a string leaf viewed as two number arrays
    of its dims and missing values (`_half`), or a constant's characters in a new block."""
    if node.op == "const":
        text = node.arg.encode("utf-8") if isinstance(node.arg, str) else bytes(node.arg)
        block = memory.MemoryBlock(len(text))
        block.buffer[:] = np.frombuffer(text, np.uint8)
        home.keep.append(block)
        return (as_expr(np.array(block.address, np.uint64)),
                as_expr(np.array(len(text), np.int64)))
    value = env[node.arg] if node.op == "input" else None
    arr = getattr(value, "array", None)  # a RaggedLeaf, else an OwnedView
    arr = getattr(value, "owner", None) if arr is None else arr
    if isinstance(leaf_data(value), np.ndarray) and leaf_data(value).dtype.kind in "SU":
        x = leaf_data(value)  # NumPy text: packed (a copy)
        arr = text_from_numpy(x, kind) if x.size else \
            array(x.tolist(), type=" * ".join([str(n) for n in x.shape] + [kind]))
    if not isinstance(arr, Array) or not _elements_of(arr.type):
        raise NotSupportedError(f"where() over strings: a branch of type {node.type_text()} "
                                "(string or bytes arrays and Python str / bytes constants)")
    home.keep.extend(M.string_blocks(memory.lookup(arr.meta[-1])))
    return as_expr(_half(arr, "uint64", 0)), as_expr(_half(arr, "int64", 8))


def _half(arr: Array, dtype: str, at: int) -> Array:
    """The `begin` (at 0) or `size` (at 8) half of each `{begin, size}` element of a string
    array, as a number array of its dims and missing values (no copy): the addresses below
    the innermost var dim (all of them without one) move `at` bytes on, and the mask
    offsets of the options there move back as much (a mask byte lies apart from its
    element)."""
    t, meta, k, found = arr.type, list(arr.meta[:-1]), 0, []  # (meta index, what)
    while not isinstance(t, Scalar):
        if isinstance(t, FixedDim):
            at = at if meta[k] else 0  # no elements: nothing is read
            k += 2
        elif isinstance(t, Option):
            found.append((k, "option"))
            k += 1
        else:
            found.append((k + 3, "var"))  # its content address
            k += M.VAR_META
        t = t.elem
    last = max([i for i, (_, what) in enumerate(found) if what == "var"], default=-1)
    if last >= 0:
        meta[found[last][0]] += at
    for k, what in found[last + 1:]:
        if what == "option":
            meta[k] -= at
    typ = with_value(arr.type, Scalar(dtype))
    return Array.from_parts(typ, tuple(meta), arr.ptr + (at if last < 0 else 0), arr.owner,
                            arr.readonly, check_strings=False)


def _elements_of(t) -> bool:
    while isinstance(t, (FixedDim, VarDim, Option)):
        t = t.elem
    return text_element(t) is not None


def _select(node: Node, env: dict, record: list | None = None) -> Array:
    """The string Array of where() node `node` over its operands' data."""
    kind = "bytes" if node.dtype == ops.BYTES else "string"
    home = memory.MemoryBlock(0, keep=[])  # the result's blockref: every source block
    cond = Expr(node.srcs[0], env)
    (b1, n1), (b2, n2) = (_halves(s, env, kind, home) for s in node.srcs[1:])
    begins, sizes = where(cond, b1, b2), where(cond, n1, n2)
    if record is not None:
        record.append((begins, sizes))
    begins, sizes = runtime.evaluate(begins), runtime.evaluate(sizes)
    if isinstance(begins, np.ndarray):  # fixed dims, no missing values
        return _text_leaf(begins, np.asarray(sizes), None, kind, home)
    top = isinstance(begins.type, FixedDim)
    tb = columns(begins if top else begins[None])
    ts = columns(sizes if top else sizes[None])
    while not isinstance(ts, Leaf):
        ts = ts.child

    def build(x, n: int):
        """The string Array of tree node `x` of n rows (elements)."""
        valid, inner = x.unwrap()
        if isinstance(inner, Leaf):
            return _text_leaf(inner.values, ts.values, valid, kind, home)
        if isinstance(inner, Lists):
            return offsets_array(inner.offsets, build(inner.child, int(inner.offsets[-1])),
                                 validity=valid, check=None)
        if isinstance(x, Regular) and x.size:
            return regular(build(x.child, n * x.size), x.size)
        if isinstance(x, Regular):  # rows of size 0
            c = build(x.child, 0)
            return Array.from_parts(FixedDim(n, FixedDim(0, c.type.elem)),
                                    (n, 0, 0, c.meta[1]) + tuple(c.meta[2:]), c.ptr,
                                    c.owner, c.readonly, check_strings=False)
        raise NotSupportedError(f"where() over strings with a {begins.type} result "
                                "(missing rows of a fixed size)")
    got = build(tb, (begins.type.size if top else 1))
    # a var result (`var * string`, `?var * string`): the one row of `1 * ...`, as it is
    return got if top else Array.from_parts(got.type.elem, tuple(got.meta[2:]), got.ptr,
                                            got.owner, got.readonly, check_strings=False)


def _text_leaf(begins, sizes, valid, kind: str, home) -> Array:
    """A C-ordered string array of the shape of `begins` (`?string` where `valid` says)
    of the elements {begins, sizes}; a missing element is {0, 0}."""
    shape = np.shape(begins)
    begins, sizes = np.reshape(begins, -1), np.reshape(sizes, -1)
    n = len(begins)
    region = 16 * n
    block = memory.MemoryBlock(max(region * (1 if valid is None else 2), 16), keep=[home])
    pairs = block.buffer[:region].view(M.POINTER_SIZE_DTYPE)
    pairs["begin"] = begins
    pairs["size"] = sizes
    meta, step = (), 16
    for size in reversed(shape):
        meta, step = (size, step) + meta, step * size
    t = Scalar(kind)
    if valid is not None:  # the mask byte sits `region` bytes after each element
        valid = np.asarray(valid, bool).reshape(-1)
        pairs["begin"][~valid] = 0
        pairs["size"][~valid] = 0
        block.buffer[region:2 * region:16] = valid
        t, meta = Option(t), meta + (region,)
    for size in reversed(shape):
        t = FixedDim(size, t)
    return Array.from_parts(t, meta + (home.ref,), block.address, block, check_strings=False)


def evaluate_text_where(expr: Expr, out=None, order: str = "K", casting: str = "same_kind"):
    """`runtime.evaluate` of an expression with where() over strings (the "text_where"
    evaluation path): that where() first (`select_text`), then the rest; a string result
    is the lazyk Array itself. NotImplemented for other expressions."""
    if not has_text_where(expr):
        return NotImplemented
    lowered = select_text(expr)
    got = text_result(lowered)
    if got is None:
        return runtime.evaluate(lowered, out=out, order=order, casting=casting)
    if out is not None:
        raise NotSupportedError(f"out= for a {got.type} result: where() over strings gives "
                                "a new string array")
    return got


runtime.install_path("text_where", evaluate_text_where)

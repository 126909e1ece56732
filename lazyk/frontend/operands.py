"""Operands of expressions: arrays, scalars and placeholders wrapped as input leaves
(`as_expr`, zero-copy), the input name of each array, and the errors that name an operand.
"""
from __future__ import annotations

import builtins
import weakref
from _weakref import _remove_dead_weakref
from typing import Any

import numpy as np

from lazyk import hooks
from lazyk import types as T
from lazyk.arrays.array import Array
from lazyk.arrays.array import array as lazyk_array
from lazyk.arrays.buffers import ColumnArray
from lazyk.arrays.columns import fixed_text_rows
from lazyk.arrays.foreign import is_foreign, is_pandas
from lazyk.errors import DTypeError, NotSupportedError, UnsupportedOperandError
from lazyk.frontend import leaves, ops
from lazyk.frontend.expression import SYMBOLS, Expr, has_options
from lazyk.frontend.graph import Node
from lazyk.frontend.leaves import (
    DaskLeaf,
    OwnedView,
    Placeholder,
    RaggedLeaf,
    RaggedPlaceholder,
    check_dtype,
    describe_ragged,
    fresh_name,
    is_dask_array,
    is_text,
    leaf_data,
    parse_placeholder_type,
    text_view,
)
from lazyk.frontend.numpy_rules import describe_node
from lazyk.lru import Memo
from lazyk.types.parse import dshape

_STRING_TYPES = (dshape("string"), dshape("?string"), dshape("bytes"), dshape("?bytes"))


def is_operand(x: Any) -> bool:
    """Whether `x` can take part in an expression (for NotImplemented in operators)."""
    if isinstance(x, (Expr, np.ndarray, np.generic, bool, int, float, complex)):
        return True
    return isinstance(x, Array) or hasattr(x, "__cuda_array_interface__") or \
        is_dask_array(x) or is_pandas(x) or is_foreign(x) or \
        hasattr(type(x), "__lazyk_expr__")


def _wrap_dask(x: Any) -> Expr:
    name = fresh_name()
    leaf = DaskLeaf(name, x)
    return Expr(Node("input", leaf.dtype, leaf.shape, (), name), {name: leaf})


def wrap_array(arr: np.ndarray, owner: Any = None) -> Expr:
    """A leaf over NumPy array `arr` (zero-copy); `owner` is the lazyk Array that owns it.

    `{begin, size}` string elements (`ops.STRING`) come only from a lazyk string array
    (`leaves.text_view`): their pointers are read by kernels, so NumPy records are refused.
    """
    dt = arr.dtype
    if dt not in NATIVE_NUMERIC:  # (those need no check and are typed as they are)
        if not (owner is not None and dt in (ops.STRING, ops.BYTES)):
            check_dtype(dt, text=True)
        # Byte order and alignment belong to the data, not the type: the leaf is typed
        # native and the kernel spec is specialised to the actual array at bind time.
        dt = dt.newbyteorder("=")
    # (lazyk arrays over one NumPy array are one input, as that array used twice is)
    name = _leaf_name(arr if owner is None or owner.numpy_view() is arr else owner)
    node = Node("input", dt, arr.shape, (), name)
    return Expr(node, {name: arr if owner is None else OwnedView(arr, owner)})


NATIVE_NUMERIC = frozenset(ops.NUMERIC)


class _NameRef(weakref.ref):
    """A weak reference to an array that has an input name (`_leaf_name`)."""

    __slots__ = ("key", "name")


def _forget_name(ref: _NameRef) -> None:
    _remove_dead_weakref(_names, ref.key)  # (only while the entry is this dead one)


def _leaf_name(source: Any) -> str:
    """The input name of an array in expressions: the same for every use of the same array
    object (`x - x.mean()` reads one input), new for any other."""
    key = id(source)
    got = _names.get(key)
    if got is not None and got() is source:
        return got.name
    name = fresh_name()
    try:
        ref = _NameRef(source, _forget_name)
    except TypeError:  # not weakly referable: a new input each time
        return name
    ref.key, ref.name = key, name
    _names[key] = ref
    return name


_names: dict = {}  # id(array) -> weak reference to it (`_NameRef`: its input name)


def _same_source(a: Any, b: Any) -> bool:
    """Whether two env entries of one input name read the same array (`_leaf_name`)."""
    va = a.view if isinstance(a, OwnedView) else a if type(a) is np.ndarray else None
    vb = b.view if isinstance(b, OwnedView) else b if type(b) is np.ndarray else None
    if va is not None and va is vb:  # (lazyk arrays over one NumPy array, or it itself)
        return True
    if isinstance(a, OwnedView) and isinstance(b, OwnedView):
        return a.owner is b.owner and a.view.dtype == b.view.dtype and \
            a.view.shape == b.view.shape and a.view.strides == b.view.strides
    if isinstance(a, RaggedLeaf) and isinstance(b, RaggedLeaf):
        ra, rb = getattr(a, "rows", None), getattr(b, "rows", None)
        if ra is not None and rb is not None:  # (Dask collections: one name, one graph)
            return ra.name == rb.name and a.option == b.option
        return a.array is b.array and a.option == b.option
    return False


def _wrap_ragged(arr: Any) -> Expr:
    low, sizes = hooks.var_rows(arr)  # (the loop nest's module imports this one)
    if sizes:  # `?n` rows: `?var` rows of n elements, paired with a fixed n (exactly x)
        e, top = _wrap_ragged(low), builtins.min(sizes)
        fixed = tuple(sizes.get(j, 1) for j in range(top, len(e.node.shape)))
        if e.node.dtype == np.bool_:
            e = e * np.ones(fixed, bool)
        else:
            e = e - np.zeros(fixed, bool)  # x - 0 is x, -0.0 and NaN too
        if 1 not in sizes.values():
            return e
        # a fixed 1 stretches over var rows, so the pairing alone types `?1` dims as var:
        # its node says the fixed 1 (which the loop nest's plan keeps, `nest_plan`)
        shape = tuple(1 if sizes.get(j) == 1 else n for j, n in enumerate(e.node.shape))
        return Expr(e.node.replace(shape=shape), e.env)
    shape, dtype, option = describe_ragged(arr)
    name = _leaf_name(arr)
    return Expr(Node("input", dtype, shape, (), name), {name: RaggedLeaf(arr, option)})


def _wrap_text_rows(arr: Any) -> Expr:
    """A leaf over string rows (`var * string`, `?string`): typed `ops.STRING` like fixed
    string leaves, so the string builders accept it; `lazyk.runtime.text_steps` computes the string
    operations over it before the ragged path sees the expression."""
    arr = hooks.var_rows(arr)[0]  # `?n` rows: `?var` rows of n strings (results: var rows)
    shape, _, option = describe_ragged(leaves.text_rows(arr, nested=True))
    name = _leaf_name(arr)
    elem = arr.type.dtype
    dtype = leaves.text_element(elem.elem if isinstance(elem, T.Option) else elem)
    return Expr(Node("input", dtype, shape, (), name), {name: RaggedLeaf(arr, option)})


def as_expr(x: Any) -> Expr:
    """Wrap an operand: Expr as is, arrays zero-copy, Python scalars weak (NEP 50)."""
    t = type(x)
    if t is Expr:
        return x
    if t is int or (t is float and x == x and x != 0.0):  # (NaN and -0.0: below)
        node = _weak_nodes.get((t, x))
        if node is None:
            node = Node("scalar", np.dtype(np.int64 if t is int else np.float64), (), (), x)
            _weak_nodes.put((t, x), node)
        return Expr(node, {})
    if t is Array:  # fixed dims of numbers: the NumPy view
        view = x.numpy_view()
        if view is not None and view.dtype in NATIVE_NUMERIC:
            return wrap_array(view, x)
    elif t is np.ndarray:
        return wrap_array(x)
    if isinstance(x, Expr):
        return x
    if isinstance(x, (str, bytes)):  # a string constant: a kernel parameter (spec.text_param)
        value = str(x) if isinstance(x, str) else bytes(x)
        if isinstance(value, str) and not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as err:
                raise UnsupportedOperandError(
                    f"the string {value!r:.40} has no UTF-8 form ({err.reason} at {err.start}): "
                    "lazyk strings are UTF-8 text") from None
        return Expr(Node("const", ops.STRING, (), (), value), {})
    # NOTE: before the Python checks: np.float64 subclasses float but is strong.
    if isinstance(x, np.generic):
        check_dtype(x.dtype, "scalar")
        return Expr(Node("const", x.dtype.newbyteorder("="), (), (), x.item()), {})
    if isinstance(x, bool):  # NEP 50: Python bool is not weak, it is np.bool_
        return Expr(Node("const", np.dtype(bool), (), (), bool(x)), {})
    if isinstance(x, (int, float, complex)):
        kind = int if isinstance(x, int) else float if isinstance(x, float) else complex
        default = {int: np.int64, float: np.float64, complex: np.complex128}[kind]
        return Expr(Node("scalar", np.dtype(default), (), (), kind(x)), {})
    if isinstance(x, np.ndarray):
        if isinstance(x, np.ma.MaskedArray):  # masked entries missing: `?T`
            return as_expr(lazyk_array(x))
        return wrap_array(x)
    if isinstance(x, Array):
        if isinstance(x, ColumnArray):  # records read from columns: refused unbuilt
            _refuse_records(x.type)
        elem = x.type.dtype
        if isinstance(elem.elem if isinstance(elem, T.Option) else elem, T.FixedBytes):
            x = fixed_text_rows(x)  # `bytes` elements over the fixed bytes (in place)
        try:
            view = x.to_numpy()
        except NotSupportedError:  # var dims / options: the ragged path (lazyk.runtime.ragged)
            _refuse_records(x.type)
            elem = x.type.dtype
            if isinstance(elem.elem if isinstance(elem, T.Option) else elem, T.FixedString):
                x = fixed_text_rows(x)  # rows of string elements (a copy of those)
            if x.type.dtype in _STRING_TYPES:  # `{begin, size}` elements, zero-copy
                try:
                    return wrap_array(text_view(x), x)
                except NotSupportedError:  # var dims / ?string: rows (lazyk.runtime.text_steps)
                    return _wrap_text_rows(x)
            return _wrap_ragged(x)
        if view.dtype.fields is not None:
            _refuse_records(x.type, view.dtype)
        return wrap_array(view, x)
    if hasattr(x, "__cuda_array_interface__"):  # GPU arrays: lazyk.runtime.device runs them
        return wrap_array(hooks.as_device_array(x))
    if is_dask_array(x):  # a leaf that remembers the Dask array (lazyk.dask runs it)
        return _wrap_dask(x)
    if is_pandas(x) or is_foreign(x):  # as lazyk.array reads it (nulls: `?T`)
        return as_expr(lazyk_array(x))
    cls = type(x)
    if hasattr(cls, "__lazyk_expr__"):  # collections with rules of their own (lazyk.dask)
        return cls.__lazyk_expr__(x)
    what = f"{cls.__module__}.{cls.__qualname__}"
    hint = ("convert it with numpy.asarray(x) or lazyk.array(x) first"
            if hasattr(x, "__array__") else
            "use a NumPy array, a lazyk array, a Dask array or a Python scalar")
    raise TypeError(f"cannot use a {what} in a lazyk expression: {hint}")


# Python scalars seen recently -> their node, held so that an expression built again
# finds its constants interned (`(2 * a).node` is then one look-up).
_weak_nodes = Memo(1024, "Python scalar nodes")


def _refuse_records(t: T.Type, dtype: np.dtype | None = None) -> None:
    """NotSupportedError for arrays of records or tuples, which are not operands: their
    fields are (`r["x"] + 1`). `dtype`: the NumPy dtype holding them, named too. The hint
    indexes by name: `r.type`, `r.min`, `r.meta` are the array's own attributes."""
    while isinstance(t, (T.Dim, T.Option)):
        t = t.elem
    held = "" if dtype is None else f" (NumPy dtype {dtype})"
    if isinstance(t, T.Record):
        name = t.names[0] if t.names else "x"
        raise NotSupportedError(f"records are not operands of expressions{held}: use their "
                                f"fields, e.g. r[{name!r}] + 1 (fields: "
                                f"{', '.join(t.names)})")
    if isinstance(t, T.Tuple):
        keys = ", ".join(repr(str(k)) for k in range(len(t.types)))
        raise NotSupportedError(f"tuples are not operands of expressions{held}: use their "
                                f"fields, named by position as in Awkward Array, e.g. "
                                f"t['0'] + 1 (fields: {keys})")


def placeholder(name: str, type: Any) -> Expr:
    """A named typed parameter; `N` in `'N * float64'` unifies across operands.

    Example: `a = lazyk.placeholder('a', 'N * float64')`.

    Args:
        name: the parameter name in `lazyk.compile(...).signature`.
        type: fixed, symbolic and var dims over a numeric dtype or an option of one, e.g.
            `'N * 3 * float32'` or `'N * var * ?float64'` (ragged and missing-value
            parameters run through `lazyk.compile`, on lazyk arrays of that type); or
            dims over `string` / `?string` (`'N * var * ?string'`) or `bytes` /
            `?bytes`, for the string operations (comparisons, `str_len`, `startswith`,
            `endswith`, `where`).

    The type is read by `lazyk.dshape` (the one type language: `'N * int'` is int32,
    `'N * real'` float64, `'N * complex[float32]'` complex64, `'>float64'` big-endian).
    Byte order describes data, not the parameter: the node and the compiled signature
    are native and a call accepts either byte order of the same dtype.

    Raises:
        ValueError: a name that is not a Python identifier, `out` / `casting` (the
            keywords of a compiled call) or `_0`, `_1`, ... (lazyk's names of arrays).
        TypeParseError: malformed type text (with line, column and a caret).
        NotSupportedError: what a placeholder cannot hold yet: ellipsis dims, records /
            tuples and other non-numeric element types.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"placeholder name {name!r} is not a Python identifier (compiled "
                         "calls take parameters by name, as keywords)")
    if name in ("out", "casting"):
        raise ValueError(f"placeholder name {name!r} is taken: a compiled call's {name}= "
                         "keyword has that name; choose another name")
    if name[0] == "_" and name[1:].isdigit():
        raise ValueError(f"placeholder name {name!r} is taken: lazyk names the arrays in an "
                         "expression _0, _1, ...; choose another name")
    shape, dtype, option, rows = parse_placeholder_type(type, with_rows=True)
    node = Node("input", dtype, shape, (), name)
    if option or None in shape:  # run by lazyk.compile on lazyk arrays of that type
        return Expr(node, {name: RaggedPlaceholder(name, shape, dtype, option, rows)})
    return Expr(node, {name: Placeholder(name, shape, dtype)})


def merge_env(exprs) -> dict:
    # (an env is never changed once made, so expressions may share one)
    if len(exprs) == 2:
        a, b = exprs[0].env, exprs[1].env
        if not b or a is b:
            return a
        if not a:
            return b
        if a.keys().isdisjoint(b):
            return {**a, **b}
        if all(a.get(k, a) is v for k, v in b.items()):
            return a  # (b reads only what a reads: the merge is a)
    env: dict = {}
    for e in exprs:
        for k, v in e.env.items():
            old = env.get(k)
            if old is not None and old is not v and not _same_source(old, v):
                a, b = leaf_data(old), leaf_data(v)
                if not (isinstance(a, Placeholder) and isinstance(b, Placeholder)
                        and (a.shape, a.dtype) == (b.shape, b.dtype)):
                    raise TypeError(f"two different inputs are named {k!r}")
            env[k] = v
    return env


def operand_text(a: Any) -> str:
    if isinstance(a, (str, bytes)):
        return f"Python {type(a).__name__} {a!r:.40}"
    try:
        return str(getattr(a, "type", None) or getattr(a, "dtype", None) or type(a).__name__)
    except (KeyError, ValueError, TypeError, NotImplementedError):  # a type with no text
        return type(a).__name__


def op_text(name: str) -> str:
    return f"{name} ({SYMBOLS[name]})" if name in SYMBOLS else name


def operands(name: str, args: tuple) -> list[Expr]:
    """`as_expr` on each argument; a non-numeric operand raises UnsupportedOperandError
    (a DTypeError and a NotSupportedError) naming the op and the types."""
    try:
        return [as_expr(a) for a in args]
    except (DTypeError, NotSupportedError) as err:
        types = ", ".join(operand_text(a) for a in args)
        raise UnsupportedOperandError(
            f"{op_text(name)}: unsupported operand type(s) {types} ({err})") from None


def refuse_container(name: str, x: Any, other: Any, reflected: bool = False) -> None:
    """UnsupportedOperandError for operator `name` between a lazy value `x` and a Python
    list, tuple, dict, set or None (Python's own TypeError would not name the array's type).
    """
    what = type(other).__name__
    pair = (what, operand_text(x)) if reflected else (operand_text(x), what)
    hint = "wrap a sequence as an array first, e.g. lazyk.array([1, 2]) or np.asarray(...)" \
        if isinstance(other, (list, tuple)) else \
        "use a NumPy array, a lazyk array (e.g. lazyk.array([1, 2])) or a Python scalar"
    raise UnsupportedOperandError(
        f"{op_text(name)}: unsupported operand type(s) {pair[0]} and {pair[1]} ({hint})")


def _text_name(node: Node) -> str:
    if node.op == "const" and is_text(node.dtype):
        return f"Python {type(node.arg).__name__}"
    if node.dtype.kind in "SU":  # NumPy's name too: `fixed_string[3, 'utf32']` is `<U3`
        return f"{node.type_text()} (NumPy {node.dtype.str})"
    return describe_node(node)


def operand_name(e: Expr) -> str:
    """`_text_name` of an operand; a `?string` leaf says `?string`."""
    if e.node.op == "input" and has_options(e):
        return str(e.type)
    return _text_name(e.node)


def refuse_text(name: str, exprs) -> None:
    """UnsupportedOperandError (a NotSupportedError) if any operand is a string."""
    if builtins.any(is_text(e.dtype) for e in exprs):
        types = ", ".join(operand_name(e) for e in exprs)
        raise UnsupportedOperandError(
            f"{op_text(name)} is not supported on strings (operand types {types}); strings "
            "support ==, !=, <, <=, >, >=, lazyk.str_len, lazyk.startswith and "
            "lazyk.endswith")

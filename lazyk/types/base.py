"""The type base class and the types the others are built from: dimensions, options,
scalars and function signatures. `lazyk.types` gathers every type; see there.

Every constructor interns (`intern_type`): equal arguments give the very same object, so `==`
is `is` and hashing is identity-cheap. Dimension types nest DyND-style through `.elem`.
"""
from __future__ import annotations

import operator
import re
import sys
from typing import Any

import numpy as np

from lazyk.errors import NotSupportedError

# NOTE: deeper types would make str()/itemsize recurse past Python's stack; the parser
# reports the same limit with a position.
MAX_DEPTH = 128
# The largest byte size (and element count) of an addressable array: int64 strides.
MAX_SIZE = 2**63 - 1

NATIVE = "<" if sys.byteorder == "little" else ">"

INTERN: dict[tuple, Type] = {}

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def intern_type(cls: type, key: tuple, **attrs: Any) -> Any:
    """Build and register one instance of `cls` under `key` (already normalised)."""
    t = INTERN.get(key)
    if t is None:
        t = object.__new__(cls)
        for name, value in attrs.items():
            object.__setattr__(t, name, value)
        depth = 1 + max((getattr(c, "_depth", 0) for c in t._children()), default=0)
        if depth > MAX_DEPTH:
            raise ValueError(f"type nested deeper than {MAX_DEPTH} levels")
        object.__setattr__(t, "_depth", depth)
        object.__setattr__(t, "_str", None)
        # setdefault: if another thread interned the same type meanwhile, both get its copy.
        t = INTERN.setdefault(key, t)
    return t


def check_type(value: Any, what: str) -> None:
    if not isinstance(value, Type):
        raise TypeError(f"{what} must be a lazyk type, got {value!r}")
    if isinstance(value, Function):
        raise TypeError(f"{what} cannot be a function type")
    _check_not_void(value, what)


def _check_not_void(value: Type, what: str) -> None:
    if value.__class__ is Scalar and value.name == "void":
        raise TypeError(f"{what} cannot be void: void is only a function's return type")


def check_bytes(nbytes: Any) -> None:
    """Refuse a type of more than MAX_SIZE bytes (`nbytes` is a callable: symbolic types
    have no size and pass)."""
    try:
        n = nbytes()
    except TypeError:  # symbolic: sized when bound
        return
    if n > MAX_SIZE:
        raise ValueError(f"the type takes {n} bytes, more than 2**63-1: it would not be "
                         "addressable")


def check_size(value: Any, what: str, minimum: int = 0) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an int, got {value!r}")
    value = operator.index(value)  # TypeError for floats and strings
    if not minimum <= value < 2**63:
        raise ValueError(f"{what} must be in [{minimum}, 2**63), got {value}")
    return value


def quote_name(name: str) -> str:
    """Print a field name bare when it is an identifier, else single-quoted with escapes."""
    if _IDENT.match(name):
        return name
    out = []
    for ch in name:
        code = ord(ch)
        if ch in "\\'":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        else:
            out.append(ch)
    return "'" + "".join(out) + "'"


class Type:
    """Base of every type. Immutable; construction interns; compares by identity."""

    __slots__ = ("_str", "_depth", "__weakref__")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _args(self) -> tuple:
        """Constructor arguments, for pickling and copying (which re-intern)."""
        raise NotImplementedError

    def _children(self) -> tuple[Type, ...]:
        return ()

    def __reduce__(self) -> tuple:
        return (type(self), self._args())

    def __copy__(self) -> Type:
        return self

    def __deepcopy__(self, memo: dict) -> Type:
        return self

    def __str__(self) -> str:
        s = self._str
        if s is None:
            # Format the parts deepest first so _format never recurses more than one level.
            pending, order = [self], []
            while pending:
                t = pending.pop()
                if t._str is None:
                    order.append(t)
                    pending.extend(t._children())
            for t in reversed(order):
                if t._str is None:
                    object.__setattr__(t, "_str", t._format())
            s = self._str
        return s

    def __repr__(self) -> str:
        return f"dshape({str(self)!r})"

    def _format(self) -> str:
        raise NotImplementedError

    # --- properties shared by all types; dimension types override ---
    @property
    def ndim(self) -> int:
        """Number of dimensions (an ellipsis counts as none)."""
        return 0

    @property
    def shape(self) -> tuple:
        """Sizes of the dimensions; None for var/symbolic, `...` for an ellipsis."""
        return ()

    @property
    def dtype(self) -> Type:
        """The element type under all dimensions (options over dimensions stripped)."""
        return self

    @property
    def dims(self) -> tuple:
        """The dimensions, outermost first; a dimension whose rows may be missing (`?var`,
        `?3`) is its Option. `dshape('3 * ?var * int32').dims[1]` is `?var * int32`."""
        out, t = [], self
        while isinstance(t, Dim) or (isinstance(t, Option) and isinstance(t.elem, Dim)):
            out.append(t)
            t = t.elem.elem if isinstance(t, Option) else t.elem
        return tuple(out)

    @property
    def missing_rows(self) -> bool:
        """True if rows of some dimension may be missing (`?var`, `?n`)."""
        return any(isinstance(d, Option) for d in self.dims)

    @property
    def missing_var_rows(self) -> bool:
        """True if rows of some var dimension may be missing (`?var`)."""
        return any(isinstance(d, Option) and isinstance(d.elem, VarDim) for d in self.dims)

    @property
    def missing_fixed_rows(self) -> bool:
        """True if rows of some fixed dimension may be missing (`?3`)."""
        return any(isinstance(d, Option) and isinstance(d.elem, FixedDim) for d in self.dims)

    @property
    def missing_values(self) -> bool:
        """True if rows or elements may be missing (`?var`, `?n`, `?T` elements)."""
        return self.missing_rows or isinstance(self.dtype, Option)

    @property
    def is_symbolic(self) -> bool:
        """True if the type holds type variables, symbolic dimensions or ellipses."""
        return any(c.is_symbolic for c in self._children())

    @property
    def is_numeric(self) -> bool:
        """True if the element type (options stripped) is bool, integer, float or complex."""
        d = self.dtype
        if isinstance(d, Option):
            d = d.elem
        return isinstance(d, Scalar) and d.name in _NUMERIC

    @property
    def itemsize(self) -> int:
        """Bytes one element of this type takes in memory."""
        raise TypeError(f"{self} has no itemsize (symbolic or abstract)")

    @property
    def alignment(self) -> int:
        """Required byte alignment of this type in memory."""
        raise TypeError(f"{self} has no alignment (symbolic or abstract)")

    def to_numpy(self) -> np.dtype:
        """The equivalent NumPy dtype; raises NotSupportedError where there is none."""
        raise NotSupportedError(f"{self} has no NumPy equivalent")


# ---------------------------------------------------------------- dimensions
class Dim(Type):
    """A dimension over `.elem`."""

    __slots__ = ()

    def _children(self) -> tuple[Type, ...]:
        return (self.elem,)

    @property
    def ndim(self) -> int:
        return 1 + self.elem.ndim

    @property
    def dtype(self) -> Type:
        return self.elem.dtype

    def to_numpy(self) -> np.dtype:
        raise NotSupportedError(f"{self} has no NumPy dtype (only fixed dimensions do)")


class FixedDim(Dim):
    """`3 * T`: a dimension of known size."""

    __slots__ = ("size", "elem")

    def __new__(cls, size: int, elem: Type) -> FixedDim:
        if size.__class__ is int:  # (True == 1 would otherwise find FixedDim(1, ...))
            t = INTERN.get((cls, size, elem))
            if t is not None:
                return t
        size = check_size(size, "dimension size")
        check_type(elem, "element")
        count, inner = size, elem
        while isinstance(inner, FixedDim):
            count *= inner.size
            inner = inner.elem
        if count > MAX_SIZE:
            raise ValueError(f"the dimensions multiply to {count} elements, more than "
                             "2**63-1: the array would not be addressable")
        check_bytes(lambda: size * elem.itemsize)
        return intern_type(cls, (cls, size, elem), size=size, elem=elem)

    def _args(self) -> tuple:
        return (self.size, self.elem)

    def _format(self) -> str:
        return f"{self.size} * {self.elem}"

    @property
    def shape(self) -> tuple:
        return (self.size,) + self.elem.shape

    @property
    def itemsize(self) -> int:
        return self.size * self.elem.itemsize

    @property
    def alignment(self) -> int:
        return self.elem.alignment

    def to_numpy(self) -> np.dtype:
        base = self.elem.to_numpy()
        return np.dtype((base.base, (self.size,) + base.shape))


class VarDim(Dim):
    """`var * T`: a ragged dimension; each element is `{char *begin; int64 size}`."""

    __slots__ = ("elem",)

    def __new__(cls, elem: Type) -> VarDim:
        t = INTERN.get((cls, elem))
        if t is not None:
            return t
        check_type(elem, "element")
        return intern_type(cls, (cls, elem), elem=elem)

    def _args(self) -> tuple:
        return (self.elem,)

    def _format(self) -> str:
        return f"var * {self.elem}"

    @property
    def shape(self) -> tuple:
        return (None,) + self.elem.shape

    @property
    def itemsize(self) -> int:
        return 16

    @property
    def alignment(self) -> int:
        return 8


def check_dim_name(name: Any, what: str) -> str:
    if not isinstance(name, str) or not _IDENT.match(name) or not name[0].isupper():
        raise ValueError(f"{what} must be a capitalised identifier, got {name!r}")
    return name


class SymbolicDim(Dim):
    """`N * T`: a dimension whose size is a variable in a pattern."""

    __slots__ = ("name", "elem")

    def __new__(cls, name: str, elem: Type) -> SymbolicDim:
        t = INTERN.get((cls, name, elem))
        if t is not None:
            return t
        check_dim_name(name, "symbolic dimension name")
        check_type(elem, "element")
        return intern_type(cls, (cls, name, elem), name=name, elem=elem)

    def _args(self) -> tuple:
        return (self.name, self.elem)

    def _format(self) -> str:
        return f"{self.name} * {self.elem}"

    @property
    def shape(self) -> tuple:
        return (None,) + self.elem.shape

    @property
    def is_symbolic(self) -> bool:
        return True


class EllipsisDim(Dim):
    """`... * T` or `Dims... * T`: any number of dimensions (at most one per dim list)."""

    __slots__ = ("name", "elem")

    def __new__(cls, name: str | None, elem: Type) -> EllipsisDim:
        t = INTERN.get((cls, name, elem))
        if t is not None:
            return t
        if name is not None:
            check_dim_name(name, "ellipsis name")
        check_type(elem, "element")
        d = elem
        while isinstance(d, (Dim, Option)):
            if isinstance(d, EllipsisDim):
                raise ValueError("two ellipses in one dimension list")
            d = d.elem
        return intern_type(cls, (cls, name, elem), name=name, elem=elem)

    def _args(self) -> tuple:
        return (self.name, self.elem)

    def _format(self) -> str:
        return f"{self.name or ''}... * {self.elem}"

    @property
    def ndim(self) -> int:
        return self.elem.ndim

    @property
    def shape(self) -> tuple:
        return (...,) + self.elem.shape

    @property
    def is_symbolic(self) -> bool:
        return True


class Option(Type):
    """`?T`: values that may be missing (a separate validity mask, never a sentinel)."""

    __slots__ = ("elem",)

    def __new__(cls, elem: Type) -> Option:
        t = INTERN.get((cls, elem))
        if t is not None:
            return t
        if isinstance(elem, Option):  # built ??T collapses to ?T (the parser refuses it)
            return elem
        check_type(elem, "option element")
        if isinstance(elem, EllipsisDim):
            raise ValueError("an ellipsis cannot be optional")
        return intern_type(cls, (cls, elem), elem=elem)

    def _args(self) -> tuple:
        return (self.elem,)

    def _children(self) -> tuple[Type, ...]:
        return (self.elem,)

    def _format(self) -> str:
        return f"?{self.elem}"

    @property
    def ndim(self) -> int:
        return self.elem.ndim

    @property
    def shape(self) -> tuple:
        return self.elem.shape

    @property
    def dtype(self) -> Type:
        return self.elem.dtype if isinstance(self.elem, Dim) else self

    @property
    def itemsize(self) -> int:
        # `?0 * T` holds no value but each row needs an address of its own for its present
        # byte (at the row + mask_offset): one alignment unit of padding
        return self.elem.itemsize or self.elem.alignment

    @property
    def alignment(self) -> int:
        return self.elem.alignment


# ---------------------------------------------------------------- scalars
# name -> (itemsize, alignment, numpy code or None, kind)
SCALAR_INFO: dict[str, tuple[int, int, str | None, str]] = {
    "bool": (1, 1, "?", "b"),
    "int8": (1, 1, "i1", "i"), "int16": (2, 2, "i2", "i"),
    "int32": (4, 4, "i4", "i"), "int64": (8, 8, "i8", "i"),
    "uint8": (1, 1, "u1", "u"), "uint16": (2, 2, "u2", "u"),
    "uint32": (4, 4, "u4", "u"), "uint64": (8, 8, "u8", "u"),
    "float16": (2, 2, "f2", "f"), "float32": (4, 4, "f4", "f"), "float64": (8, 8, "f8", "f"),
    "complex64": (8, 4, "c8", "c"), "complex128": (16, 8, "c16", "c"),
    "intptr": (np.dtype(np.intp).itemsize,) * 2 + ("p", "i"),
    "uintptr": (np.dtype(np.uintp).itemsize,) * 2 + ("P", "u"),
    "char": (4, 4, "U1", "U"),             # one UTF-32 code point
    "string": (16, 8, None, "T"),          # {char *begin; int64 size}, UTF-8
    "bytes": (16, 8, None, "S"),           # {char *begin; int64 size}
    "void": (0, 1, "V0", "V"),
    "date": (8, 8, "M8[D]", "M"),          # int64 days, as NumPy
    "time": (8, 8, "m8[us]", "m"),         # int64 microseconds since midnight
    "datetime": (8, 8, "M8[us]", "M"),     # int64 microseconds since the epoch
}
_NUMERIC = frozenset(n for n, v in SCALAR_INFO.items() if v[3] in "biufc")
SCALAR_NAMES = tuple(SCALAR_INFO)


class Scalar(Type):
    """A named element type with a byte order: '=' native, '<', '>', or '|' (not applicable)."""

    __slots__ = ("name", "byteorder")

    def __new__(cls, name: str, byteorder: str = "=") -> Scalar:
        t = INTERN.get((cls, name, byteorder))
        if t is not None:
            return t
        info = SCALAR_INFO.get(name)
        if info is None:
            raise ValueError(f"unknown scalar type {name!r}")
        if byteorder not in ("=", "<", ">", "|"):
            raise ValueError(f"byte order must be one of '=<>|', got {byteorder!r}")
        # As NumPy: single bytes and variable-size records have no byte order; '|' on a
        # multi-byte number and the machine's own order both mean native.
        if info[0] <= 1 or info[3] in "TSV":
            order = "|"
        elif byteorder in ("|", NATIVE):
            order = "="
        else:
            order = byteorder
        t = intern_type(cls, (cls, name, order), name=name, byteorder=order)
        return INTERN.setdefault((cls, name, byteorder), t)

    def _args(self) -> tuple:
        return (self.name, self.byteorder)

    def _format(self) -> str:
        return self.name if self.byteorder in "=|" else self.byteorder + self.name

    @property
    def kind(self) -> str:
        """NumPy-style kind character: b i u f c U T S V M m."""
        return SCALAR_INFO[self.name][3]

    @property
    def itemsize(self) -> int:
        return SCALAR_INFO[self.name][0]

    @property
    def alignment(self) -> int:
        return SCALAR_INFO[self.name][1]

    @property
    def native(self) -> Scalar:
        """The same scalar in native byte order."""
        return Scalar(self.name)

    def to_numpy(self) -> np.dtype:
        code = SCALAR_INFO[self.name][2]
        if code is None:
            raise NotSupportedError(f"{self.name} (variable-size) has no NumPy dtype")
        dt = np.dtype(code)
        return dt.newbyteorder(self.byteorder) if self.byteorder in "<>" else dt


# ---------------------------------------------------------------- signatures
# Here, with the base: every constructor refuses a function type as a part (check_type).
def with_element(t: Type, leaf: Any) -> Type:
    """`t` with the element type under its fixed, var and `?var` dims replaced by `leaf`
    (a type, or a function of the old element: `?T` included, so `lambda e: e.elem` drops the
    option)."""
    if isinstance(t, Option) and isinstance(t.elem, (FixedDim, VarDim)):
        return Option(with_element(t.elem, leaf))
    if isinstance(t, FixedDim):
        return FixedDim(t.size, with_element(t.elem, leaf))
    if isinstance(t, VarDim):
        return VarDim(with_element(t.elem, leaf))
    return leaf(t) if callable(leaf) else leaf


def with_value(t: Type, value: Type) -> Type:
    """`t` with its element's value type replaced by `value`, its dims and options kept
    (`3 * ?var * ?string` -> `3 * ?var * ?complex128`)."""
    return with_element(t, lambda e: Option(value) if isinstance(e, Option) else value)


class Function(Type):
    """`(N * float64, scale: float64) -> N * float64`: a signature."""

    __slots__ = ("args", "kwargs", "ret")

    def __new__(cls, args: tuple[Type, ...], kwargs: tuple[tuple[str, Type], ...] = (),
                ret: Type | None = None) -> Function:
        args, kwargs = tuple(args), tuple((n, x) for n, x in kwargs)
        t = INTERN.get((cls, args, kwargs, ret))
        if t is not None:
            return t
        if not isinstance(ret, Type):
            raise TypeError(f"return type must be a lazyk type, got {ret!r}")
        for x in args + tuple(x for _, x in kwargs):
            if not isinstance(x, Type):
                raise TypeError(f"argument type must be a lazyk type, got {x!r}")
            _check_not_void(x, "an argument")
        names = [n for n, _ in kwargs]
        for n in names:
            if not isinstance(n, str) or not _IDENT.match(n):
                raise ValueError(f"keyword argument name must be an identifier, got {n!r}")
        if len(set(names)) != len(names):
            raise ValueError("duplicate keyword argument name")
        return intern_type(cls, (cls, args, kwargs, ret), args=args, kwargs=kwargs, ret=ret)

    def _args(self) -> tuple:
        return (self.args, self.kwargs, self.ret)

    def _children(self) -> tuple[Type, ...]:
        return self.args + tuple(x for _, x in self.kwargs) + (self.ret,)

    def _format(self) -> str:
        items = [str(a) for a in self.args] + [f"{n}: {x}" for n, x in self.kwargs]
        return "(" + ", ".join(items) + ") -> " + str(self.ret)

"""Frozen, interned datashape type objects; `str(t)` is canonical and parses back to `t`.

Every constructor interns: equal arguments give the very same object, so `==` is `is`
and hashing is identity-cheap. Dimension types nest DyND-style through `.elem`.
"""
from __future__ import annotations

import operator
import re
import sys
from typing import Any

import numpy as np

from lazyk.errors import NotSupportedError, UnsupportedOperandError

# NOTE: deeper types would make str()/itemsize recurse past Python's stack; the parser
# reports the same limit with a position.
MAX_DEPTH = 128
# The largest byte size (and element count) of an addressable array: int64 strides.
MAX_SIZE = 2**63 - 1

NATIVE = "<" if sys.byteorder == "little" else ">"

_INTERN: dict[tuple, Type] = {}

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _intern(cls: type, key: tuple, **attrs: Any) -> Any:
    """Build and register one instance of `cls` under `key` (already normalised)."""
    t = _INTERN.get(key)
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
        t = _INTERN.setdefault(key, t)
    return t


def _check_type(value: Any, what: str) -> None:
    if not isinstance(value, Type):
        raise TypeError(f"{what} must be a lazyk type, got {value!r}")
    if isinstance(value, Function):
        raise TypeError(f"{what} cannot be a function type")
    _check_not_void(value, what)


def _check_not_void(value: Type, what: str) -> None:
    if value.__class__ is Scalar and value.name == "void":
        raise TypeError(f"{what} cannot be void: void is only a function's return type")


def _check_bytes(nbytes: Any) -> None:
    """Refuse a type of more than MAX_SIZE bytes (`nbytes` is a callable: symbolic types
    have no size and pass)."""
    try:
        n = nbytes()
    except TypeError:  # symbolic: sized when bound
        return
    if n > MAX_SIZE:
        raise ValueError(f"the type takes {n} bytes, more than 2**63-1: it would not be "
                         "addressable")


def _check_size(value: Any, what: str, minimum: int = 0) -> int:
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
            t = _INTERN.get((cls, size, elem))
            if t is not None:
                return t
        size = _check_size(size, "dimension size")
        _check_type(elem, "element")
        count, inner = size, elem
        while isinstance(inner, FixedDim):
            count *= inner.size
            inner = inner.elem
        if count > MAX_SIZE:
            raise ValueError(f"the dimensions multiply to {count} elements, more than "
                             "2**63-1: the array would not be addressable")
        _check_bytes(lambda: size * elem.itemsize)
        return _intern(cls, (cls, size, elem), size=size, elem=elem)

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
        t = _INTERN.get((cls, elem))
        if t is not None:
            return t
        _check_type(elem, "element")
        return _intern(cls, (cls, elem), elem=elem)

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


def _check_dim_name(name: Any, what: str) -> str:
    if not isinstance(name, str) or not _IDENT.match(name) or not name[0].isupper():
        raise ValueError(f"{what} must be a capitalised identifier, got {name!r}")
    return name


class SymbolicDim(Dim):
    """`N * T`: a dimension whose size is a variable in a pattern."""

    __slots__ = ("name", "elem")

    def __new__(cls, name: str, elem: Type) -> SymbolicDim:
        t = _INTERN.get((cls, name, elem))
        if t is not None:
            return t
        _check_dim_name(name, "symbolic dimension name")
        _check_type(elem, "element")
        return _intern(cls, (cls, name, elem), name=name, elem=elem)

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
        t = _INTERN.get((cls, name, elem))
        if t is not None:
            return t
        if name is not None:
            _check_dim_name(name, "ellipsis name")
        _check_type(elem, "element")
        d = elem
        while isinstance(d, (Dim, Option)):
            if isinstance(d, EllipsisDim):
                raise ValueError("two ellipses in one dimension list")
            d = d.elem
        return _intern(cls, (cls, name, elem), name=name, elem=elem)

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
        t = _INTERN.get((cls, elem))
        if t is not None:
            return t
        if isinstance(elem, Option):  # built ??T collapses to ?T (the parser refuses it)
            return elem
        _check_type(elem, "option element")
        if isinstance(elem, EllipsisDim):
            raise ValueError("an ellipsis cannot be optional")
        return _intern(cls, (cls, elem), elem=elem)

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
        return self.elem.itemsize

    @property
    def alignment(self) -> int:
        return self.elem.alignment


# ---------------------------------------------------------------- scalars
# name -> (itemsize, alignment, numpy code or None, kind)
_SCALARS: dict[str, tuple[int, int, str | None, str]] = {
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
_NUMERIC = frozenset(n for n, v in _SCALARS.items() if v[3] in "biufc")
SCALAR_NAMES = tuple(_SCALARS)


class Scalar(Type):
    """A named element type with a byte order: '=' native, '<', '>', or '|' (not applicable)."""

    __slots__ = ("name", "byteorder")

    def __new__(cls, name: str, byteorder: str = "=") -> Scalar:
        t = _INTERN.get((cls, name, byteorder))
        if t is not None:
            return t
        info = _SCALARS.get(name)
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
        t = _intern(cls, (cls, name, order), name=name, byteorder=order)
        return _INTERN.setdefault((cls, name, byteorder), t)

    def _args(self) -> tuple:
        return (self.name, self.byteorder)

    def _format(self) -> str:
        return self.name if self.byteorder in "=|" else self.byteorder + self.name

    @property
    def kind(self) -> str:
        """NumPy-style kind character: b i u f c U T S V M m."""
        return _SCALARS[self.name][3]

    @property
    def itemsize(self) -> int:
        return _SCALARS[self.name][0]

    @property
    def alignment(self) -> int:
        return _SCALARS[self.name][1]

    @property
    def native(self) -> Scalar:
        """The same scalar in native byte order."""
        return Scalar(self.name)

    def to_numpy(self) -> np.dtype:
        code = _SCALARS[self.name][2]
        if code is None:
            raise NotSupportedError(f"{self.name} (variable-size) has no NumPy dtype")
        dt = np.dtype(code)
        return dt.newbyteorder(self.byteorder) if self.byteorder in "<>" else dt


_UNITS = ("Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as")


def _check_unit(unit: Any) -> str:
    if unit not in _UNITS:
        raise ValueError(f"unit must be one of {', '.join(_UNITS)}; got {unit!r}")
    return unit


class Timedelta(Type):
    """`timedelta[unit='us']`: int64 ticks of `unit`, as NumPy's m8."""

    __slots__ = ("unit",)

    def __new__(cls, unit: str = "us") -> Timedelta:
        t = _INTERN.get((cls, unit))
        if t is not None:
            return t
        return _intern(cls, (cls, _check_unit(unit)), unit=unit)

    def _args(self) -> tuple:
        return (self.unit,)

    def _format(self) -> str:
        return f"timedelta[unit='{self.unit}']"

    itemsize = property(lambda self: 8, doc="Eight bytes.")
    alignment = property(lambda self: 8, doc="Eight bytes.")

    def to_numpy(self) -> np.dtype:
        return np.dtype(f"m8[{self.unit}]")


class Datetime(Type):
    """`datetime[unit='ns']`: int64 ticks since the epoch; unit 'us' is plain `datetime` and
    unit 'D' is `date` (NumPy's M8[us] and M8[D]: one type each)."""

    __slots__ = ("unit",)

    def __new__(cls, unit: str = "us") -> Type:
        t = _INTERN.get((cls, unit))
        if t is not None:
            return t
        if unit == "us":
            return Scalar("datetime")
        if unit == "D":
            return Scalar("date")
        return _intern(cls, (cls, _check_unit(unit)), unit=unit)

    def _args(self) -> tuple:
        return (self.unit,)

    def _format(self) -> str:
        return f"datetime[unit='{self.unit}']"

    itemsize = property(lambda self: 8, doc="Eight bytes.")
    alignment = property(lambda self: 8, doc="Eight bytes.")

    def to_numpy(self) -> np.dtype:
        return np.dtype(f"M8[{self.unit}]")


_ENCODINGS = {"utf8": 1, "ascii": 1, "utf16": 2, "utf32": 4}


class FixedString(Type):
    """`fixed_string[N, 'enc']`: N code units of a fixed encoding (utf8 by default)."""

    __slots__ = ("size", "encoding")

    def __new__(cls, size: int, encoding: str = "utf8") -> FixedString:
        t = _INTERN.get((cls, size, encoding))
        if t is not None:
            return t
        size = _check_size(size, "fixed_string size", 1)
        if encoding not in _ENCODINGS:
            raise ValueError(f"encoding must be one of {', '.join(map(repr, _ENCODINGS))}")
        _check_bytes(lambda: size * _ENCODINGS[encoding])
        return _intern(cls, (cls, size, encoding), size=size, encoding=encoding)

    def _args(self) -> tuple:
        return (self.size, self.encoding)

    def _format(self) -> str:
        if self.encoding == "utf8":
            return f"fixed_string[{self.size}]"
        return f"fixed_string[{self.size}, '{self.encoding}']"

    @property
    def itemsize(self) -> int:
        return self.size * _ENCODINGS[self.encoding]

    @property
    def alignment(self) -> int:
        return _ENCODINGS[self.encoding]

    def to_numpy(self) -> np.dtype:
        if self.encoding == "utf32":
            return np.dtype(f"U{self.size}")
        if self.encoding == "ascii":
            return np.dtype(f"S{self.size}")
        raise NotSupportedError(f"{self} has no NumPy dtype (NumPy has ascii and utf32 only)")


class FixedBytes(Type):
    """`fixed_bytes[N, align=A]`: N raw bytes aligned to A (a power of two, <= 16)."""

    __slots__ = ("size", "align")

    def __new__(cls, size: int, align: int = 1) -> FixedBytes:
        t = _INTERN.get((cls, size, align))
        if t is not None:
            return t
        size = _check_size(size, "fixed_bytes size", 1)
        align = _check_size(align, "fixed_bytes alignment", 1)
        if align > 16 or align & (align - 1):
            raise ValueError(f"fixed_bytes alignment must be a power of two <= 16, got {align}")
        if size % align:
            raise ValueError(f"fixed_bytes size {size} is not a multiple of alignment {align}")
        return _intern(cls, (cls, size, align), size=size, align=align)

    def _args(self) -> tuple:
        return (self.size, self.align)

    def _format(self) -> str:
        if self.align == 1:
            return f"fixed_bytes[{self.size}]"
        return f"fixed_bytes[{self.size}, align={self.align}]"

    itemsize = property(lambda self: self.size, doc="N bytes.")
    alignment = property(lambda self: self.align, doc="The `align` argument.")

    def to_numpy(self) -> np.dtype:
        return np.dtype(f"V{self.size}")


class Pointer(Type):
    """`pointer[T]`: a pointer to one T elsewhere in memory."""

    __slots__ = ("target",)

    def __new__(cls, target: Type) -> Pointer:
        t = _INTERN.get((cls, target))
        if t is not None:
            return t
        _check_type(target, "pointer target")
        return _intern(cls, (cls, target), target=target)

    def _args(self) -> tuple:
        return (self.target,)

    def _children(self) -> tuple[Type, ...]:
        return (self.target,)

    def _format(self) -> str:
        return f"pointer[{self.target}]"

    itemsize = property(lambda self: 8, doc="A pointer.")
    alignment = property(lambda self: 8, doc="A pointer.")


class TypeVar(Type):
    """`T`: a dtype variable in patterns and signatures."""

    __slots__ = ("name",)

    def __new__(cls, name: str) -> TypeVar:
        t = _INTERN.get((cls, name))
        if t is not None:
            return t
        _check_dim_name(name, "type variable name")
        return _intern(cls, (cls, name), name=name)

    def _args(self) -> tuple:
        return (self.name,)

    def _format(self) -> str:
        return self.name

    @property
    def is_symbolic(self) -> bool:
        return True


# ---------------------------------------------------------------- compounds
def _layout(types: tuple[Type, ...]) -> tuple[tuple[int, ...], int, int]:
    """C-struct layout: (field offsets, padded itemsize, alignment)."""
    offsets, end, align = [], 0, 1
    for t in types:
        a = t.alignment
        end = (end + a - 1) // a * a
        offsets.append(end)
        end += t.itemsize
        align = max(align, a)
    return tuple(offsets), (end + align - 1) // align * align, align


class Tuple(Type):
    """`(int32, float64)`: a C-struct of unnamed fields."""

    __slots__ = ("types",)

    def __new__(cls, types: tuple[Type, ...]) -> Tuple:
        if type(types) is not tuple:
            types = tuple(types)
        t = _INTERN.get((cls, types))
        if t is not None:
            return t
        types = tuple(types)
        for x in types:
            _check_type(x, "tuple field")
        _check_bytes(lambda: _layout(types)[1])
        return _intern(cls, (cls, types), types=types)

    def _args(self) -> tuple:
        return (self.types,)

    def _children(self) -> tuple[Type, ...]:
        return self.types

    def _format(self) -> str:
        if len(self.types) == 1:
            return f"({self.types[0]},)"
        return "(" + ", ".join(map(str, self.types)) + ")"

    @property
    def offsets(self) -> tuple[int, ...]:
        """Byte offset of each field (C-struct layout)."""
        return _layout(self.types)[0]

    @property
    def itemsize(self) -> int:
        return _layout(self.types)[1]

    @property
    def alignment(self) -> int:
        return _layout(self.types)[2]

    def to_numpy(self) -> np.dtype:
        return np.dtype({"names": [f"f{i}" for i in range(len(self.types))],
                         "formats": [t.to_numpy() for t in self.types],
                         "offsets": list(self.offsets), "itemsize": self.itemsize})


class Record(Type):
    """`{x: int32, 'a name': float64}`: a C-struct of named fields."""

    __slots__ = ("fields", "_index")

    def __new__(cls, fields: tuple[tuple[str, Type], ...]) -> Record:
        try:
            t = _INTERN.get((cls, fields))
        except TypeError:  # lists inside: normalise below
            t = None
        if t is not None:
            return t
        fields = tuple((n, x) for n, x in fields)
        t = _INTERN.get((cls, fields))
        if t is not None:
            return t
        for n, x in fields:
            if not isinstance(n, str):
                raise TypeError(f"field name must be a str, got {n!r}")
            _check_type(x, f"field {n!r}")
        index = {n: i for i, (n, _) in enumerate(fields)}
        if len(index) != len(fields):
            dup = next(n for i, (n, _) in enumerate(fields) if index[n] != i)
            raise ValueError(f"duplicate field name {dup!r}")
        _check_bytes(lambda: _layout(tuple(x for _, x in fields))[1])
        return _intern(cls, (cls, fields), fields=fields, _index=index)

    def _args(self) -> tuple:
        return (self.fields,)

    def _children(self) -> tuple[Type, ...]:
        return self.types

    def _format(self) -> str:
        return "{" + ", ".join(f"{quote_name(n)}: {x}" for n, x in self.fields) + "}"

    @property
    def names(self) -> tuple[str, ...]:
        """Field names in order."""
        return tuple(n for n, _ in self.fields)

    @property
    def types(self) -> tuple[Type, ...]:
        """Field types in order."""
        return tuple(x for _, x in self.fields)

    def field(self, name: str) -> Type:
        """The type of field `name` (KeyError if absent)."""
        return self.fields[self._index[name]][1]

    @property
    def offsets(self) -> tuple[int, ...]:
        """Byte offset of each field (C-struct layout)."""
        return _layout(self.types)[0]

    @property
    def itemsize(self) -> int:
        return _layout(self.types)[1]

    @property
    def alignment(self) -> int:
        return _layout(self.types)[2]

    def to_numpy(self) -> np.dtype:
        return np.dtype({"names": list(self.names),
                         "formats": [t.to_numpy() for t in self.types],
                         "offsets": list(self.offsets), "itemsize": self.itemsize})


class Function(Type):
    """`(N * float64, scale: float64) -> N * float64`: a signature."""

    __slots__ = ("args", "kwargs", "ret")

    def __new__(cls, args: tuple[Type, ...], kwargs: tuple[tuple[str, Type], ...] = (),
                ret: Type | None = None) -> Function:
        args, kwargs = tuple(args), tuple((n, x) for n, x in kwargs)
        t = _INTERN.get((cls, args, kwargs, ret))
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
        return _intern(cls, (cls, args, kwargs, ret), args=args, kwargs=kwargs, ret=ret)

    def _args(self) -> tuple:
        return (self.args, self.kwargs, self.ret)

    def _children(self) -> tuple[Type, ...]:
        return self.args + tuple(x for _, x in self.kwargs) + (self.ret,)

    def _format(self) -> str:
        items = [str(a) for a in self.args] + [f"{n}: {x}" for n, x in self.kwargs]
        return "(" + ", ".join(items) + ") -> " + str(self.ret)


# ---------------------------------------------------------------- NumPy
_FROM_CODE = {v[2]: n for n, v in _SCALARS.items() if v[2] and v[3] in "biufc"}


def from_numpy(dtype: Any, shape: tuple[int, ...] = ()) -> Type:
    """The lazyk type of a NumPy dtype (and optional outer shape).

    Raises:
        NotSupportedError: for object dtypes and packed records lazyk cannot lay out.
    """
    dt = np.dtype(dtype)
    t = _elem_from_numpy(dt.base)
    for n in reversed(tuple(shape) + dt.shape):
        t = FixedDim(n, t)
    return t


def _elem_from_numpy(dt: np.dtype) -> Type:
    order = dt.byteorder
    if dt.fields is not None:
        names = dt.names
        t = Record(tuple((n, from_numpy(dt.fields[n][0])) for n in names))
        if t.offsets != tuple(dt.fields[n][1] for n in names) or t.itemsize != dt.itemsize:
            raise NotSupportedError(f"packed or padded NumPy record {dt} (lazyk records are "
                                    "C-aligned; use align=True)")
        return t
    if dt.kind in "biufc":
        code = "?" if dt.kind == "b" else f"{dt.kind}{dt.itemsize}"
        if code not in _FROM_CODE:  # long double and complex long double
            what = "complex long double" if dt.kind == "c" else "long double"
            raise UnsupportedOperandError(f"NumPy dtype {dt} ({what}) has no lazyk type; "
                                          "convert it to float64 / complex128 first")
        return Scalar(_FROM_CODE[code], order)
    if dt.kind in "USV" and not dt.itemsize:
        raise NotSupportedError(f"NumPy dtype {dt} has no size (lazyk has no empty strings, "
                                "bytes or void elements)")
    if dt.kind == "U":
        return FixedString(dt.itemsize // 4, "utf32")
    if dt.kind == "S":
        return FixedString(dt.itemsize, "ascii")
    if dt.kind == "V":
        return FixedBytes(dt.itemsize)
    if dt.kind in "mM":
        unit, count = np.datetime_data(dt)
        if unit not in _UNITS or count != 1:
            raise NotSupportedError(f"NumPy dtype {dt} (unit {count} {unit}) has no lazyk "
                                    "equivalent")
        if dt.kind == "m":
            return Timedelta(unit)
        return Scalar("date") if unit == "D" else Datetime(unit)
    raise NotSupportedError(f"NumPy dtype {dt} has no lazyk equivalent")


# NOTE: `promote`, `dshape`, `match`, `solve` and `broadcast` are also names of this module,
# so `lazyk.types` is the one place to look; they live in the later modules of the stage
# (types <- typeparse <- promote <- unify: no module imports a later one), which set them
# here when imported. `import lazyk` imports them all.
__all__ = [  # noqa: F822 - promote, dshape, match, solve, broadcast: set by later modules
    "Type", "Dim", "FixedDim", "VarDim", "SymbolicDim", "EllipsisDim", "Option", "Scalar",
    "Timedelta", "Datetime", "FixedString", "FixedBytes", "Pointer", "TypeVar", "Tuple",
    "Record", "Function", "from_numpy", "promote", "dshape", "match", "solve", "broadcast",
    "MAX_DEPTH", "SCALAR_NAMES",
]

"""Element types with parameters (temporal units, fixed strings and bytes, pointers, type
variables), compounds (tuples, records) and `from_numpy`. `lazyk.types` gathers every type.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from lazyk.errors import NotSupportedError, UnsupportedOperandError
from lazyk.types.base import (
    INTERN,
    SCALAR_INFO,
    FixedDim,
    Scalar,
    Type,
    check_bytes,
    check_dim_name,
    check_size,
    check_type,
    intern_type,
    quote_name,
)

_UNITS = ("Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as")


def _check_unit(unit: Any) -> str:
    if unit not in _UNITS:
        raise ValueError(f"unit must be one of {', '.join(_UNITS)}; got {unit!r}")
    return unit


class Timedelta(Type):
    """`timedelta[unit='us']`: int64 ticks of `unit`, as NumPy's m8."""

    __slots__ = ("unit",)

    def __new__(cls, unit: str = "us") -> Timedelta:
        t = INTERN.get((cls, unit))
        if t is not None:
            return t
        return intern_type(cls, (cls, _check_unit(unit)), unit=unit)

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
        t = INTERN.get((cls, unit))
        if t is not None:
            return t
        if unit == "us":
            return Scalar("datetime")
        if unit == "D":
            return Scalar("date")
        return intern_type(cls, (cls, _check_unit(unit)), unit=unit)

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
        t = INTERN.get((cls, size, encoding))
        if t is not None:
            return t
        size = check_size(size, "fixed_string size", 1)
        if encoding not in _ENCODINGS:
            raise ValueError(f"encoding must be one of {', '.join(map(repr, _ENCODINGS))}")
        check_bytes(lambda: size * _ENCODINGS[encoding])
        return intern_type(cls, (cls, size, encoding), size=size, encoding=encoding)

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
        t = INTERN.get((cls, size, align))
        if t is not None:
            return t
        size = check_size(size, "fixed_bytes size", 1)
        align = check_size(align, "fixed_bytes alignment", 1)
        if align > 16 or align & (align - 1):
            raise ValueError(f"fixed_bytes alignment must be a power of two <= 16, got {align}")
        if size % align:
            raise ValueError(f"fixed_bytes size {size} is not a multiple of alignment {align}")
        return intern_type(cls, (cls, size, align), size=size, align=align)

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
        t = INTERN.get((cls, target))
        if t is not None:
            return t
        check_type(target, "pointer target")
        return intern_type(cls, (cls, target), target=target)

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
        t = INTERN.get((cls, name))
        if t is not None:
            return t
        check_dim_name(name, "type variable name")
        return intern_type(cls, (cls, name), name=name)

    def _args(self) -> tuple:
        return (self.name,)

    def _format(self) -> str:
        return self.name

    @property
    def is_symbolic(self) -> bool:
        return True


# ---------------------------------------------------------------- compounds
@lru_cache(maxsize=4096)  # (types are interned: nested records lay out each level once)
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
        t = INTERN.get((cls, types))
        if t is not None:
            return t
        types = tuple(types)
        for x in types:
            check_type(x, "tuple field")
        check_bytes(lambda: _layout(types)[1])
        return intern_type(cls, (cls, types), types=types)

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
            t = INTERN.get((cls, fields))
        except TypeError:  # lists inside: normalise below
            t = None
        if t is not None:
            return t
        fields = tuple((n, x) for n, x in fields)
        t = INTERN.get((cls, fields))
        if t is not None:
            return t
        for n, x in fields:
            if not isinstance(n, str):
                raise TypeError(f"field name must be a str, got {n!r}")
            check_type(x, f"field {n!r}")
        index = {n: i for i, (n, _) in enumerate(fields)}
        if len(index) != len(fields):
            dup = next(n for i, (n, _) in enumerate(fields) if index[n] != i)
            raise ValueError(f"duplicate field name {dup!r}")
        check_bytes(lambda: _layout(tuple(x for _, x in fields))[1])
        return intern_type(cls, (cls, fields), fields=fields, _index=index)

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


# ---------------------------------------------------------------- NumPy
_FROM_CODE = {v[2]: n for n, v in SCALAR_INFO.items() if v[2] and v[3] in "biufc"}


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

"""Owned memory blocks and zero-copy NumPy views over raw pointers."""
from __future__ import annotations

import ctypes
import itertools
import weakref
from typing import Any

import numpy as np

from lazyk.arrays.outputs import REUSE_MIN_BYTES
from lazyk.arrays.outputs import empty as fresh

# 64 bytes: a cache line and the widest AVX-512 vector, so kernels may use aligned loads.
BLOCK_ALIGNMENT = 64
_BYTES = np.dtype(np.uint8)

_next_ref = itertools.count(1)
# blockref (the opaque id in var/string arrmeta) -> block; weak so a dropped array frees it.
_registry: weakref.WeakValueDictionary[int, MemoryBlock] = weakref.WeakValueDictionary()
blocks = _registry  # the live blocks by blockref: `ref in blocks` checks one is open
# the registry's own dict, blockref -> weak reference: a block is open while its entry is
# there and alive (`ref in blocks`, read with no method call on a hot path)
open_refs = _registry.data


def _probe_data_offset() -> int | None:
    # PyArrayObject is {PyObject_HEAD; char *data; ...}: reading the field directly costs
    # ~0.2 us against ~1.7 us for `a.ctypes.data`. Verified here, else we use the slow way.
    a = np.arange(3.0)[1:]
    try:
        if ctypes.c_void_p.from_address(id(a) + 16).value == a.ctypes.data:
            return 16
    except Exception:  # pragma: no cover
        pass
    return None  # pragma: no cover


_DATA_OFFSET = _probe_data_offset()
_from_address = ctypes.c_void_p.from_address


def data_pointer(a: np.ndarray) -> int:
    """Address of element 0 of a NumPy array."""
    if _DATA_OFFSET is not None and type(a) is np.ndarray:
        return _from_address(id(a) + _DATA_OFFSET).value or 0
    return a.ctypes.data


def next_block() -> int:
    """A number below the `ref` of every block made from now on."""
    return next(_next_ref)


class MemoryBlock:
    """A zero-initialised, 64-byte aligned byte block that lazyk arrays point into
    (`zeroed=False`: a large block's bytes are left as they are, for a caller that writes
    every one).

    `ref` is the integer written as `blockref` in arrmeta; `lookup(ref)` finds the block.
    """

    __slots__ = ("buffer", "address", "size", "ref", "keep", "__weakref__")

    def __init__(self, size: int, keep: Any = None, zeroed: bool = True):
        size = max(int(size), 0)
        if size < REUSE_MIN_BYTES:
            raw = np.zeros(size + BLOCK_ALIGNMENT, dtype=np.uint8)
        else:  # (a reused block, already faulted in: zeroed here unless the caller fills it)
            raw = fresh(size + BLOCK_ALIGNMENT, _BYTES)
            if zeroed:
                raw[...] = 0
        start = (-raw.ctypes.data) % BLOCK_ALIGNMENT
        self.buffer: np.ndarray | None = raw[start:start + size]
        self.address: int = raw.ctypes.data + start
        self.size: int = size
        self.ref: int = next(_next_ref)
        # Blocks this one holds pointers into (e.g. a rows block pointing at a string block).
        self.keep = keep
        _registry[self.ref] = self

    def close(self) -> None:
        """Drop this block's reference to its memory (views made earlier stay valid)."""
        self.buffer = None
        self.keep = None
        _registry.pop(self.ref, None)

    def __enter__(self) -> MemoryBlock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryBlock(ref={self.ref}, size={self.size}, address={self.address:#x})"


def lookup(ref: int) -> MemoryBlock:
    """Return the live block for a `blockref` id."""
    try:
        return _registry[ref]
    except KeyError:
        raise ValueError(f"blockref {ref} does not name a live memory block") from None


class _Holder:
    """Carries `__array_interface__` and keeps the memory's owner alive as the view's base."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, interface: dict, owner: Any):
        self.__array_interface__ = interface
        self.owner = owner


def view(address: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: np.dtype,
         owner: Any, readonly: bool = False) -> np.ndarray:
    """A NumPy array over raw memory; `owner` stays alive as long as the view does.

    The caller guarantees that every addressed byte lies inside memory `owner` keeps alive.
    """
    dtype = np.dtype(dtype)
    if isinstance(owner, MemoryBlock):
        # Hold the bytes themselves too, so `owner.close()` cannot free memory under a view.
        owner = (owner, owner.buffer)
    interface = {
        "version": 3,
        "shape": tuple(shape),
        "strides": tuple(strides),
        "data": (address, readonly),
    }
    if dtype.fields is not None or dtype.subdtype is not None:
        # Opaque bytes, then a view: a `descr` round trip renames padding and can collide.
        interface["typestr"] = f"|V{dtype.itemsize}"
        arr = np.asarray(_Holder(interface, owner))
        return arr.view(dtype) if dtype.subdtype is None else arr.view(dtype.base).reshape(
            arr.shape + dtype.shape)
    interface["typestr"] = dtype.str
    return np.asarray(_Holder(interface, owner))


def extent(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> tuple[int, int]:
    """Lowest and one-past-highest byte offsets a strided array touches (relative to its pointer)."""
    if any(n == 0 for n in shape):
        return 0, 0
    low = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    return low, high + itemsize


def foreign(arr: np.ndarray, keep: Any = None) -> MemoryBlock:
    """A block over the bytes of an existing NumPy array (no copy; it keeps `arr` alive).

    Var arrmeta names the block that holds a dim's content or indices (`blockref`), so
    arrays over NumPy, Arrow or Awkward buffers are read through blocks like lazyk's own.
    Read-only arrays give a read-only buffer.
    """
    block = MemoryBlock.__new__(MemoryBlock)
    if arr.flags.c_contiguous and arr.dtype.itemsize:  # the common case, in a few us
        block.buffer = arr.reshape(-1).view(np.uint8)  # (read-only stays read-only)
        block.address, block.size = data_pointer(arr), arr.nbytes
    else:
        lo, hi = extent(arr.shape, arr.strides, arr.dtype.itemsize)
        address = arr.__array_interface__["data"][0] + lo
        block.buffer = view(address, (hi - lo,), (1,), np.uint8, arr,
                            readonly=not arr.flags.writeable)
        block.address, block.size = address, hi - lo
    block.ref = next(_next_ref)
    block.keep = [arr] + list(keep or [])
    _registry[block.ref] = block
    return block

"""Fresh large arrays: `empty(shape, dtype)` is `np.empty`, except that large arrays reuse the
idle blocks of earlier ones (already faulted in, no zeroing). Kernel outputs, row copies and
lazyk's own memory blocks (`memory.MemoryBlock`) take theirs here. The memory order of a
fresh result under NumPy's `order=` rules is decided here too (`fortran_result`,
`kept_layout`).
"""
from __future__ import annotations

import ctypes
import os
from math import prod as _prod

import numpy as _np

from lazyk.lru import lock

_np_empty = _np.empty

# A new 80 MB output costs more page faults than arithmetic (first touch: ~2-4 ms per 10 MB here,
# huge pages measured no better on this VM). So large outputs come from blocks that earlier
# outputs gave back when they died: already faulted in, no zeroing, like a caching allocator.
# From 2 MiB: malloc would reuse a freed block of that size too, but only until something
# else in the process (a library's own large temporaries) makes glibc trim its heap or map
# fresh pages; measured between Awkward Array calls, a ragged query then took ~2,600-5,400
# page faults a call (~10-15% of its time), ~25 with these blocks. (np.empty: 0.7 us; here
# ~5 us.)
REUSE_MIN_BYTES = 1 << 21
# At most this many bytes of idle blocks are kept (beyond, memory goes back to the system):
# 1 GiB unless the environment variable LAZYK_IDLE_OUTPUT_MB says (0: none kept); set it at
# run time here, and `release_idle()` gives every idle block back.
REUSE_MAX_IDLE = int(os.environ.get("LAZYK_IDLE_OUTPUT_MB", "1024")) << 20
_BLOCK_ROUND = 1 << 21
_np_dtype = _np.dtype
_idle: dict[int, list[int]] = {}
_idle_bytes = 0
_idle_lock = lock()  # (fresh in a forked child)
_libc = None


def _mm():
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(None, use_errno=True)
        lib.mmap.restype = ctypes.c_void_p
        lib.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                             ctypes.c_int, ctypes.c_long]
        lib.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        _libc = lib
    return _libc


class _Block:
    """Owns one anonymous mapping; when the last array over it dies the block goes idle."""

    __slots__ = ("address", "size")

    def __init__(self, address: int, size: int) -> None:
        self.address, self.size = address, size

    def __del__(self) -> None:
        global _idle_bytes
        try:
            with _idle_lock:
                if _idle_bytes + self.size <= REUSE_MAX_IDLE:
                    _idle.setdefault(self.size, []).append(self.address)
                    _idle_bytes += self.size
                    return
            _mm().munmap(self.address, self.size)
        except Exception:  # interpreter shutdown: the OS reclaims the mapping
            pass


def empty(shape, dtype):
    """Like `np.empty`, but large arrays reuse idle blocks of earlier outputs (no page faults)."""
    global _idle_bytes
    # NOTE: on every fresh-output call: small arrays must cost no more than np.empty (~0.1 us).
    if type(shape) is int and isinstance(dtype, _np_dtype):
        if shape * dtype.itemsize < REUSE_MIN_BYTES:
            return _np_empty(shape, dtype)
        shape = (shape,)
    if type(shape) is tuple and isinstance(dtype, _np_dtype):
        count = _prod(shape)
        if count * dtype.itemsize < REUSE_MIN_BYTES:
            return _np_empty(shape, dtype)
    else:
        dtype = _np.dtype(dtype)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        count = _prod(shape)
    nbytes = count * dtype.itemsize
    if nbytes < REUSE_MIN_BYTES or dtype.hasobject:
        return _np_empty(shape, dtype)
    np = _np
    size = -(-nbytes // _BLOCK_ROUND) * _BLOCK_ROUND
    with _idle_lock:
        free = _idle.get(size)
        address = free.pop() if free else None
        if address is not None:
            _idle_bytes -= size
    if address is None:
        # PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS
        address = _mm().mmap(None, size, 3, 0x22, -1, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            return np.empty(shape, dtype)
    buf = (ctypes.c_char * size).from_address(address)
    buf.block = _Block(address, size)  # dies with the last array that uses the buffer
    return np.frombuffer(buf, dtype, count).reshape(shape)


def idle_bytes() -> int:
    """Bytes held in idle output blocks."""
    return _idle_bytes


def release_idle() -> int:
    """Give every idle output block back to the system (a long-lived process after a peak:
    the blocks serve later large results without page faults until then); returns the bytes
    released."""
    global _idle_bytes
    with _idle_lock:
        blocks = [(a, size) for size, addresses in _idle.items() for a in addresses]
        released, _idle_bytes = _idle_bytes, 0
        _idle.clear()
    for address, size in blocks:
        _mm().munmap(address, size)
    return released


# ---------------------------------------------------------------- memory order
def fortran_result(order: str, data: dict) -> bool:
    """Whether a fresh result is Fortran-ordered: 'F', or 'A'/'K' over Fortran inputs."""
    if order == "F":
        return True
    arrays = [a for a in data.values() if isinstance(a, _np.ndarray) and a.ndim >= 2]
    return bool(arrays) and all(a.flags.f_contiguous for a in arrays) \
        and not all(a.flags.c_contiguous for a in arrays)


def kept_layout(order: str, data: dict, shape: tuple) -> _np.ndarray | None:
    """With order 'K', an input of the result's `shape` whose axes lie in memory in
    another order than C or F (a transposed view): a fresh result takes its layout, as
    NumPy's; else None."""
    if order != "K" or len(shape) < 3:  # (of 2 dims, C or F order is every order)
        return None
    for a in data.values():
        if isinstance(a, _np.ndarray) and a.shape == tuple(shape) and permuted(a):
            return a
    return None


def permuted(a: _np.ndarray) -> bool:
    """Whether `a`'s axes lie in memory in neither C nor F order (strides not falling, nor
    rising, over its dims longer than 1)."""
    if a.ndim < 3 or a.flags.c_contiguous or a.flags.f_contiguous:
        return False
    s = [abs(st) for st, n in zip(a.strides, a.shape) if n > 1]
    return any(x < y for x, y in zip(s, s[1:])) and any(x > y for x, y in zip(s, s[1:]))

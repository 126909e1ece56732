"""The ckernel ABI (Contract 4): prefix struct, request signatures and a kernel-data builder.

```
struct ckernel_prefix { void *function; void (*destructor)(ckernel_prefix *); };
single:  void (*)(char *dst, char *const *src, ckernel_prefix *self)
strided: void (*)(char *dst, intptr_t dst_stride, char *const *src,
                  const intptr_t *src_stride, size_t count, ckernel_prefix *self)
```
Kernel data is zero-initialised and memcpy-movable (offsets, never interior pointers);
children sit at 16-byte aligned offsets; the root destructor runs exactly once, and it is
safe to run after a construction that failed half-way because unset fields are zero.
"""
from __future__ import annotations

import ctypes
from typing import Any

ALIGN = 16


class CKernelPrefix(ctypes.Structure):
    """`ckernel_prefix`: the function pointer (request-specific) and the destructor."""

    _fields_ = [("function", ctypes.c_void_p), ("destructor", ctypes.c_void_p)]


DestructorFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
SingleFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
StridedFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_void_p,
                             ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)

C_DECLARATIONS = """\
#include <stddef.h>
#include <stdint.h>
typedef struct ckernel_prefix {
    void *function;
    void (*destructor)(struct ckernel_prefix *self);
} ckernel_prefix;
typedef void (*ckernel_single_t)(char *dst, char *const *src, ckernel_prefix *self);
typedef void (*ckernel_strided_t)(char *dst, intptr_t dst_stride, char *const *src,
                                  const intptr_t *src_stride, size_t count,
                                  ckernel_prefix *self);
"""


def align_up(n: int, a: int = ALIGN) -> int:
    """Round `n` up to a multiple of `a` (children start at 16-byte boundaries)."""
    return (n + a - 1) & -a


class CKernelBuilder:
    """Owns a growable, zero-initialised kernel-data buffer, like DyND's ckernel_builder.

    Everything inside is addressed by offset, so growing may move the buffer (memcpy).
    `close()` runs the root destructor exactly once; also usable as a context manager.
    """

    def __init__(self, size: int = 64):
        self._buf = ctypes.create_string_buffer(align_up(max(size, ctypes.sizeof(CKernelPrefix))))
        self._used = 0
        self._closed = False

    @property
    def address(self) -> int:
        """Address of the root `ckernel_prefix` (offset 0); valid until the next growth."""
        return ctypes.addressof(self._buf)

    @property
    def capacity(self) -> int:
        """Bytes currently allocated."""
        return ctypes.sizeof(self._buf)

    def reserve(self, size: int) -> None:
        """Grow to at least `size` bytes; new bytes are zero, old bytes are moved as-is."""
        if size > self.capacity:
            new = ctypes.create_string_buffer(align_up(max(size, 2 * self.capacity)))
            ctypes.memmove(new, self._buf, self.capacity)
            self._buf = new

    def alloc(self, size: int) -> int:
        """Reserve `size` bytes at the next 16-byte aligned offset and return that offset."""
        off = align_up(self._used)
        self.reserve(off + size)
        self._used = off + size
        return off

    def prefix(self, offset: int = 0) -> CKernelPrefix:
        """The `ckernel_prefix` at `offset` (a view; do not keep it across growth)."""
        return CKernelPrefix.from_address(self.address + offset)

    def view(self, ctype: Any, offset: int = 0) -> Any:
        """A ctypes view of `ctype` at `offset` inside the buffer."""
        return ctype.from_address(self.address + offset)

    def buffer(self) -> Any:
        """The writable ctypes buffer (for struct.pack_into)."""
        return self._buf

    def close(self) -> None:
        """Run the root destructor once (if set), then zero the prefix so it cannot run again."""
        if self._closed:
            return
        self._closed = True
        p = self.prefix(0)
        if p.destructor:
            DestructorFn(p.destructor)(self.address)
        p.function = None
        p.destructor = None

    @property
    def closed(self) -> bool:
        """Whether close() has run."""
        return self._closed

    def __enter__(self) -> CKernelBuilder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

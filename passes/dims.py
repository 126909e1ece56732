"""Bind-time "multistride" step: drop, reorder, flip and coalesce loop dimensions.

Input is the iteration shape, per-operand byte strides over it (output first by
convention, 0 where an operand is broadcast or reduced into) and which dims are
reduced. The result walks memory in order and, for C- or F-contiguous operands,
is one flat loop. Pure functions on tuples: no arrays, no LLVM.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Layout:
    """Loop nest after simplification, outermost dim first; strides in bytes per operand."""

    shape: tuple[int, ...]
    strides: tuple[tuple[int, ...], ...]
    offsets: tuple[int, ...]
    reduced: tuple[bool, ...]

    @property
    def ndim(self) -> int:
        """Number of loops left."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Total iteration count."""
        n = 1
        for s in self.shape:
            n *= s
        return n

    def inner_contiguous(self, itemsizes: tuple[int, ...]) -> tuple[bool, ...]:
        """Per operand: is the innermost stride equal to its itemsize (part of the cache key)."""
        if not self.shape:
            return tuple(True for _ in itemsizes)
        return tuple(st[-1] == isz for st, isz in zip(self.strides, itemsizes))


def drop_trivial_dims(shape, strides, reduced):
    """Drop size-1 dims and dims broadcast (stride 0) in every operand that are not reduced."""
    # NOTE: a reduced dim with zero stride everywhere is NOT trivial: summing a broadcast
    # value n times is n * value, so it must stay a loop.
    keep = [d for d, n in enumerate(shape)
            if n != 1 and (reduced[d] or any(st[d] != 0 for st in strides))]
    return (tuple(shape[d] for d in keep),
            tuple(tuple(st[d] for d in keep) for st in strides),
            tuple(reduced[d] for d in keep))


def _should_swap(strides, outer: int, inner: int) -> bool:
    """NumPy's nditer vote: swap when some operand wants it and none objects."""
    want = False
    for st in strides:
        a, b = abs(st[outer]), abs(st[inner])
        if a == 0 or b == 0:
            continue  # broadcast or reduced: this operand has no opinion
        if a < b:
            want = True
        elif a > b:
            return False
    return want


def reorder_dims(shape, strides, reduced):
    """Stable insertion sort so the innermost dim has the smallest strides (memory order)."""
    order = list(range(len(shape)))
    # Insertion sort from inner to outer keeps C order wherever operands disagree.
    for i in range(len(order) - 2, -1, -1):
        j = i
        while j + 1 < len(order) and _should_swap(strides, order[j], order[j + 1]):
            order[j], order[j + 1] = order[j + 1], order[j]
            j += 1
    return (tuple(shape[d] for d in order),
            tuple(tuple(st[d] for d in order) for st in strides),
            tuple(reduced[d] for d in order))


def flip_negative_dims(shape, strides, offsets):
    """Walk a dim backwards when every operand that moves along it has a negative stride."""
    strides = [list(st) for st in strides]
    offsets = list(offsets)
    for d, n in enumerate(shape):
        moving = [st[d] for st in strides if st[d] != 0]
        if moving and all(s < 0 for s in moving):
            for k, st in enumerate(strides):
                offsets[k] += (n - 1) * st[d]
                st[d] = -st[d]
    return tuple(tuple(st) for st in strides), tuple(offsets)


def coalesce_dims(shape, strides, reduced):
    """Merge adjacent dims that are contiguous in every operand (outer = inner * size)."""
    if not shape:
        return shape, strides, reduced
    out_shape = [shape[-1]]
    out_strides = [[st[-1]] for st in strides]
    out_reduced = [reduced[-1]]
    for d in range(len(shape) - 2, -1, -1):
        n_in = out_shape[0]
        if reduced[d] == out_reduced[0] and all(
                st[d] == ost[0] * n_in for st, ost in zip(strides, out_strides)):
            out_shape[0] *= shape[d]
        else:
            out_shape.insert(0, shape[d])
            for st, ost in zip(strides, out_strides):
                ost.insert(0, st[d])
            out_reduced.insert(0, reduced[d])
    return tuple(out_shape), tuple(tuple(s) for s in out_strides), tuple(out_reduced)


def simplify_dims(shape: tuple[int, ...], strides: tuple[tuple[int, ...], ...],
                  reduced: tuple[bool, ...] | None = None) -> Layout:
    """Drop, reorder, flip and coalesce dims; `offsets` are bytes to add to each base pointer.

    Example: shape (3, 4), strides ((32, 8), (8, 24)) -> Fortran operand wins where the
    output has no opinion; a C-contiguous pair collapses to shape (12,).
    """
    shape = tuple(int(n) for n in shape)
    strides = tuple(tuple(int(s) for s in st) for st in strides)
    if any(len(st) != len(shape) for st in strides):
        raise ValueError(f"strides {strides} do not match shape {shape}")
    reduced = tuple(bool(r) for r in reduced) if reduced is not None else (False,) * len(shape)
    offsets = (0,) * len(strides)
    if any(n == 0 for n in shape):
        # NOTE: nothing to iterate; callers handle empty reductions (identity) before binding.
        return Layout((0,), tuple((0,) for _ in strides), offsets, (False,))
    shape, strides, reduced = drop_trivial_dims(shape, strides, reduced)
    strides, offsets = flip_negative_dims(shape, strides, offsets)
    shape, strides, reduced = reorder_dims(shape, strides, reduced)
    shape, strides, reduced = coalesce_dims(shape, strides, reduced)
    return Layout(shape, strides, offsets, reduced)

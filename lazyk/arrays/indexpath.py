"""Index paths for error messages: which item of nested input data a flat item number is.

Inference, packing and assignment walk nested data one level at a time over flat lists;
a `Where` maps item k of the current level back to its path (`[1, 'x', 2]`).
"""
from __future__ import annotations

from typing import Any

import numpy as np


class Where:
    """Maps a flat item number at the current nesting level back to its index path."""

    __slots__ = ("levels",)

    def __init__(self, levels: tuple = ()):
        self.levels = levels

    def rows(self, starts: np.ndarray) -> Where:
        """One level deeper: item k of the new level lies in the row whose start is <= k."""
        return Where(self.levels + (("rows", starts),))

    def field(self, key: str | int) -> Where:
        """Into a record field: same items, the path gains the field name."""
        return Where(self.levels + (("field", key),))

    def path(self, k: int) -> list:
        """Index path (ints and field names) of item k."""
        out: list = []
        for kind, data in reversed(self.levels):
            if kind == "field":
                out.append(data)
            else:
                row = int(np.searchsorted(data, k, side="right")) - 1
                out.append(k - int(data[row]))
                k = row
        return out[::-1]

    def name(self, k: int) -> str:
        """Readable location of item k: `[1, 'x', 2]`, or `(top level)`."""
        p = self.path(k)
        return "[" + ", ".join(map(repr, p)) + "]" if p else "(top level)"


class Subset(Where):
    """Where for the present items of an option level: item k is items[keep[k]] above."""

    __slots__ = ("inner", "keep")

    def __init__(self, inner: Where, keep: np.ndarray):
        super().__init__()
        self.inner, self.keep = inner, keep

    def rows(self, starts: np.ndarray) -> Where:
        return Chain(self, starts)

    def field(self, key: str | int) -> Where:
        return Chain(self, None, key)

    def path(self, k: int) -> list:
        return self.inner.path(int(self.keep[k]))


class Chain(Where):
    """A level below a `Subset`."""

    __slots__ = ("parent", "starts", "key")

    def __init__(self, parent: Where, starts: np.ndarray | None, key: Any = None):
        super().__init__()
        self.parent, self.starts, self.key = parent, starts, key

    def rows(self, starts: np.ndarray) -> Where:
        return Chain(self, starts)

    def field(self, key: str | int) -> Where:
        return Chain(self, None, key)

    def path(self, k: int) -> list:
        if self.starts is None:
            return self.parent.path(k) + [self.key]
        row = int(np.searchsorted(self.starts, k, side="right")) - 1
        return self.parent.path(row) + [k - int(self.starts[row])]

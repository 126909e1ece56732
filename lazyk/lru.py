"""Bounded caches, the two every stage uses: `LRU` (least recently used goes first) for
compiled code and costly plans, `Memo` (emptied when full) for what is cheap to make again.

Thread-safe (one lock per map, held only for the dictionary work: values are built and
dropped outside it, so the last reference to a compiled kernel never frees its code under
the lock) and fork-safe (a child process gets fresh locks: a parent's thread may have held
one at the fork).
"""
from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from typing import Any, Callable, Hashable

_MISSING = object()
_all: weakref.WeakSet = weakref.WeakSet()
_locks: list = []  # module-level locks (`lock()`), reinitialised in a forked child


def lock() -> threading.Lock:
    """A lock for module-level state, fresh in a forked child (a parent's thread may have
    held it at the fork)."""
    new = threading.Lock()
    _locks.append(new)
    return new


class LRU:
    """A map of at most `size` entries; the least recently used goes first (`on_evict`
    is called with it, outside the lock).

    `get` counts as a use; `put` keeps an entry another thread stored first (so racing
    builders agree on one value) and returns the value kept.
    """

    def __init__(self, size: int, name: str = "",
                 on_evict: Callable[[Any], None] | None = None) -> None:
        self.size, self.name, self.on_evict = size, name, on_evict
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self.evictions = 0
        _all.add(self)

    def get(self, key: Hashable, default: Any = None) -> Any:
        # NOTE: the look-up takes no lock (one C call under the GIL); recency is recorded
        # only once the map is half full, where an eviction could pick this entry.
        value = self._data.get(key, _MISSING)
        if value is _MISSING:
            return default
        if len(self._data) > self.size // 2:
            with self._lock:
                if key in self._data:
                    self._data.move_to_end(key)
        return value

    def put(self, key: Hashable, value: Any) -> Any:
        dropped = []
        with self._lock:
            kept = self._data.setdefault(key, value)
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                dropped.append(self._data.popitem(last=False)[1])
                self.evictions += 1
        if self.on_evict is not None:
            for value in dropped:
                self.on_evict(value)
        del dropped  # outside the lock: the last reference may free native code
        return kept

    def get_or_build(self, key: Hashable, build: Callable[[], Any]) -> Any:
        """The entry for `key`, built (outside the lock) and stored on a miss."""
        value = self.get(key, _MISSING)
        return self.put(key, build()) if value is _MISSING else value

    def pop(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            return self._data.pop(key, default)

    def clear(self) -> None:
        with self._lock:
            dropped = list(self._data.values())
            self._data.clear()
        del dropped

    def values(self) -> list:
        with self._lock:
            return list(self._data.values())

    def __contains__(self, key: Hashable) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"LRU({self.name or 'cache'}: {len(self)} of {self.size})"


class Memo(dict):
    """A bounded memo of values that are cheap to make again (parses, type rules, plans):
    a plain dict whose `put` empties it once it holds `size` entries. A look-up is one dict
    look-up, with no lock and no recency kept; use `LRU` for values that hold native code
    or are costly to rebuild."""

    __slots__ = ("size", "name")

    def __init__(self, size: int, name: str = "") -> None:
        super().__init__()
        self.size, self.name = size, name

    def put(self, key: Hashable, value: Any) -> Any:
        """Store `value` (emptying a full memo first) and return it."""
        if len(self) >= self.size:
            self.clear()
        self[key] = value
        return value

    def __repr__(self) -> str:
        return f"Memo({self.name or 'memo'}: {len(self)} of {self.size})"


def _after_fork_child() -> None:
    for held in _locks:
        held._at_fork_reinit()
    for cache in list(_all):
        cache._lock._at_fork_reinit()


os.register_at_fork(after_in_child=_after_fork_child)

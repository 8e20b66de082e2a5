"""The one bounded LRU cache every layer keeps its results in; thread-safe, no I/O.

At most `entries` values and, with a `size` function, at most `max_bytes` of their summed sizes; reading makes a
value the most recently used, adding evicts the least recently used.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class BoundedCache(Generic[V]):
    """A thread-safe LRU map bounded by a count of entries and, optionally, by the summed `size` of its values."""

    def __init__(self, entries: int, *, max_bytes: int | None = None, size: Callable[[V], int] | None = None):
        if (max_bytes is None) != (size is None):
            raise ValueError("max_bytes and size go together")
        self.entries = entries
        self.max_bytes = max_bytes
        self._size = size
        self._items: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        """The value under `key` (now the most recently used), or None."""
        with self._lock:
            held = self._items.get(key)
            if held is None:
                return None
            self._items.move_to_end(key)
            return held[0]

    def peek(self, key: Hashable) -> V | None:
        """The value under `key` without changing the order, or None."""
        with self._lock:
            held = self._items.get(key)
            return None if held is None else held[0]

    def put(self, key: Hashable, value: V) -> None:
        """Keep `value` under `key` unless it alone is over the byte bound; evict the oldest past either bound."""
        size = self._size(value) if self._size is not None else 0
        if self.max_bytes is not None and size > self.max_bytes:
            return
        with self._lock:
            self._items[key] = (value, size)
            self._items.move_to_end(key)
            while len(self._items) > self.entries or (self.max_bytes is not None and self._bytes() > self.max_bytes):
                self._items.popitem(last=False)

    def _bytes(self) -> int:
        return sum(size for _, size in self._items.values())

    def held_bytes(self) -> int:
        """The summed size of the values kept now (0 without a size function)."""
        with self._lock:
            return self._bytes()

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

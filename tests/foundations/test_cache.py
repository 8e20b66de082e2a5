"""The one bounded LRU cache: recency, the entry bound and the byte bound."""

from __future__ import annotations

import pytest

from explorer.foundations.cache import BoundedCache


def test_the_cache_keeps_the_most_recently_used_entries_only():
    cache = BoundedCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "a" is now the most recent
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)
    assert len(cache) == 2
    cache.clear()
    assert len(cache) == 0


def test_the_byte_bound_evicts_the_oldest_and_never_keeps_a_value_larger_than_it():
    cache = BoundedCache(10, max_bytes=10, size=len)
    cache.put("a", "xxxx")
    cache.put("b", "yyyy")
    assert cache.held_bytes() == 8
    cache.put("c", "zzzz")  # 12 bytes: "a" goes
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (None, "yyyy", "zzzz")
    cache.put("d", "w" * 11)  # alone over the bound: not kept, nothing evicted for it
    assert (cache.get("d"), len(cache), cache.held_bytes()) == (None, 2, 8)


def test_peek_leaves_the_order_alone():
    cache = BoundedCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.peek("a") == 1
    cache.put("c", 3)  # "a" stayed the oldest
    assert (cache.peek("a"), cache.peek("b"), cache.peek("c")) == (None, 2, 3)


def test_a_byte_bound_needs_a_size():
    with pytest.raises(ValueError, match="go together"):
        BoundedCache(2, max_bytes=10)

"""Caches bounded by the weight of what they keep, not their count: ``cachetools.LRUCache`` whose
values are ``(value, weight)`` pairs, and the one rule cachetools leaves to its callers.

A count bound says nothing about memory when entries differ in size by orders of magnitude (a
catalog is a few hundred bytes of tool definitions or, at the egress cap, sixteen megabytes).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, TypeVar

from cachetools import LRUCache

__all__ = ["Weighed", "find", "keep", "weighed"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: key -> (value, weight)
Weighed = LRUCache[K, tuple[V, int]]


def _weight(kept: tuple[Any, int]) -> int:
    return kept[1]


def weighed(budget: int) -> LRUCache[Any, tuple[Any, int]]:
    """An empty cache of at most ``budget`` total weight, least recently used out first."""
    return LRUCache(budget, getsizeof=_weight)


def keep(cache: LRUCache[K, tuple[V, int]], key: K, value: V, weight: int) -> None:
    """``value`` kept under ``key`` unless it outweighs the whole cache: then it is used and not
    kept (cachetools would raise ``ValueError``, and it would push out everything else anyway)."""
    if weight <= cache.maxsize:
        cache[key] = (value, weight)


def find(cache: LRUCache[K, tuple[V, int]], key: K) -> V | None:
    """The value kept under ``key`` (now the most recently used), or None.

    One lookup: ``cache.get`` asks ``key in cache`` first and then looks again, and hashing the
    key (a view's signature is a tuple of every entry's columns) is most of what a hit costs."""
    try:
        return cache[key][0]
    except KeyError:
        return None

"""Compiled policies cached per principal, keyed by the principal's ``grants_version``.

The version is read from the database on every request (authentication loads the principal row),
so a grant change committed by any replica invalidates every replica's entry at once: the cache can
change how many queries a decision costs, never its result (DESIGN §8).

Bounded twice: at most ``max_entries`` principals, and at most ``max_rules`` grants across the
policies kept (a compiled grant holds about 430 bytes: the rule and its place in the index,
measured with ``tracemalloc``). A count alone let 10,000 principals of 1,000 grants each hold
about 4 GB. A policy of more grants than the whole budget is compiled for each request and not
kept. The least recently used policies go first; the hit path is the one it was (an
``OrderedDict`` lookup and move), since every authenticated request takes it.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict

from hub.grants.policy import CompiledPolicy

__all__ = ["PolicyCache"]


def _weight(policy: CompiledPolicy) -> int:
    return max(policy.size, 1)


class PolicyCache:
    def __init__(self, max_entries: int = 10_000, max_rules: int = 200_000) -> None:
        self._entries: OrderedDict[uuid.UUID, tuple[int, CompiledPolicy]] = OrderedDict()
        self._max = max_entries
        self._max_rules = max_rules
        self._rules = 0
        self.hits = 0
        self.misses = 0

    @property
    def kept_rules(self) -> int:
        """The grants in the policies kept now (never above ``max_rules``)."""
        return self._rules

    def get(self, principal_id: uuid.UUID, version: int) -> CompiledPolicy | None:
        entry = self._entries.get(principal_id)
        if entry is None or entry[0] != version:
            self.misses += 1
            return None
        self._entries.move_to_end(principal_id)
        self.hits += 1
        return entry[1]

    def put(self, principal_id: uuid.UUID, version: int, policy: CompiledPolicy) -> None:
        old = self._entries.pop(principal_id, None)
        if old is not None:
            self._rules -= _weight(old[1])
        weight = _weight(policy)
        if weight > self._max_rules:
            return
        self._entries[principal_id] = (version, policy)
        self._rules += weight
        while len(self._entries) > self._max or self._rules > self._max_rules:
            _, (_, dropped) = self._entries.popitem(last=False)
            self._rules -= _weight(dropped)

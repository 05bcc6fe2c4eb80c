"""Compiled policies cached per principal, keyed by the principal's ``grants_version``.

The version is read from the database on every request (authentication loads the principal row),
so a grant change committed by any replica invalidates every replica's entry at once: the cache can
change how many queries a decision costs, never its result (DESIGN §8).
"""

from __future__ import annotations

import uuid
from collections import OrderedDict

from hub.grants.policy import CompiledPolicy

__all__ = ["PolicyCache"]


class PolicyCache:
    def __init__(self, max_entries: int = 10_000) -> None:
        self._entries: OrderedDict[uuid.UUID, tuple[int, CompiledPolicy]] = OrderedDict()
        self._max = max_entries
        self.hits = 0
        self.misses = 0

    def get(self, principal_id: uuid.UUID, version: int) -> CompiledPolicy | None:
        entry = self._entries.get(principal_id)
        if entry is None or entry[0] != version:
            self.misses += 1
            return None
        self._entries.move_to_end(principal_id)
        self.hits += 1
        return entry[1]

    def put(self, principal_id: uuid.UUID, version: int, policy: CompiledPolicy) -> None:
        self._entries[principal_id] = (version, policy)
        self._entries.move_to_end(principal_id)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

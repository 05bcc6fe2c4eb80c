"""Per-origin concurrency slots and the per-operation byte budget (SECURITY §1.6, §1.7).

:class:`OriginLimiter` bounds concurrent upstream requests per origin
(``HUB_EGRESS_MAX_PER_ORIGIN``) so one slow upstream cannot take every connection: a request holds
its origin's slot from before the connection is opened until its response is closed. Callers wait
for a slot inside their own operation deadline, so waiting ends in ``timeout``, never in a queue
that outlives the caller.
Idle entries are dropped so the table does not grow with every origin ever contacted.

:class:`ByteBudget` is the total number of decoded body bytes one logical operation may read
(``HUB_MAX_OPERATION_BYTES``: all requests, all pages, all SSE events); passing it raises
:class:`ResponseTooLarge` with scope ``operation``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from hub.egress.errors import ResponseTooLarge

__all__ = ["ByteBudget", "OriginLimiter"]


class ByteBudget:
    """A running total of bytes read against a fixed limit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    @property
    def remaining(self) -> int:
        return max(self.limit - self.used, 0)

    def charge(self, count: int) -> None:
        self.used += count
        if self.used > self.limit:
            raise ResponseTooLarge("operation")


@dataclass
class _Slots:
    semaphore: asyncio.Semaphore
    users: int = field(default=0)


class OriginLimiter:
    """At most ``limit`` concurrent holders per origin."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._origins: dict[str, _Slots] = {}

    @contextlib.asynccontextmanager
    async def slot(self, origin: str) -> AsyncIterator[None]:
        entry = self._origins.get(origin)
        if entry is None:
            entry = self._origins[origin] = _Slots(asyncio.Semaphore(self.limit))
        entry.users += 1
        try:
            async with entry.semaphore:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0:
                del self._origins[origin]

    def in_use(self, origin: str) -> int:
        """Holders plus waiters for ``origin`` (for tests and metrics)."""
        entry = self._origins.get(origin)
        return 0 if entry is None else entry.users

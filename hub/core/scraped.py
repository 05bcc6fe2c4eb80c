"""Gauges of what the database holds, read when ``/metrics`` is scraped (DESIGN §11).

Some metrics are not events a replica counts but state every replica shares: fields left for
``hub crypto rotate``, approvals waiting for a person, tools drifted now. Each is a query over
every tenant, so a scrape reads them at most every ``refresh_s`` and the scrapes in between answer
from memory without touching the database. The readers run concurrently under one deadline; if
one fails (the database is down), its gauge keeps its last value, a warning names it, and the next
scrape tries again — ``/metrics`` itself never fails for it. One read at a time: a scrape that
arrives while another reads waits for that read instead of making its own (two Prometheus
servers scraping a replica together, during an outage, each waited the deadline on a query).
Every replica reports the same values: aggregate them with ``max``, not ``sum``.

Written by hand: the refresh is a few lines around the domains' own counting queries.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime

from hub.core import clock
from hub.core.db import Database

__all__ = ["Reader", "ScrapedState"]

log = logging.getLogger("hub.metrics")

#: reads some state from the database and sets its gauges
Reader = Callable[[Database], Awaitable[None]]


class ScrapedState:
    """The replica's readers of shared state, refreshed by :meth:`refresh` when due."""

    def __init__(self, refresh_s: float = 30.0, timeout_s: float = 5.0) -> None:
        self.refresh_s = refresh_s
        self.timeout_s = timeout_s
        self._readers: list[tuple[str, Reader]] = []
        self._read_at: datetime | None = None
        self._reading = asyncio.Lock()

    def add(self, what: str, reader: Reader) -> None:
        """Read ``what`` (a failure's warning names it) with ``reader``."""
        self._readers.append((what, reader))

    def due(self) -> bool:
        read_at = self._read_at
        return read_at is None or (clock.now() - read_at).total_seconds() > self.refresh_s

    async def refresh(self, db: Database) -> None:
        """Run every reader if the last complete read is older than ``refresh_s``."""
        if not self._readers or not self.due():
            return
        if self._reading.locked():  # another scrape is reading: its outcome is this one's
            async with self._reading:
                return
        async with self._reading:
            await self._read(db)

    async def _read(self, db: Database) -> None:
        try:
            async with asyncio.timeout(self.timeout_s):
                outcomes = await asyncio.gather(
                    *(reader(db) for _, reader in self._readers), return_exceptions=True
                )
        except TimeoutError:
            log.warning("metrics: reading the database's state took over %ss", self.timeout_s)
            return
        failed = [
            what
            for (what, _), out in zip(self._readers, outcomes, strict=True)
            if isinstance(out, BaseException)
        ]
        for what in failed:
            log.warning("metrics: could not read %s", what)
        if not failed:
            self._read_at = clock.now()

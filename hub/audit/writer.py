"""Group commit of audit events written after the answer (the gateway's ``tools/call`` rows).

A tool call's audit row (DESIGN §10.2 step 7) used to cost the call a write transaction of its
own — begin, scope, chain-head lock, insert, commit — before its answer left, and concurrent calls
of one tenant queued on that lock one commit at a time. :class:`AuditWriter` takes the events
instead (:meth:`AuditWriter.submit`) and one task per event loop appends everything queued for a
chain at once, in submission order: on PostgreSQL each event in one statement that commits on its
own and moves the chain's head only from the head this replica last wrote (read again when another
writer moved it; see :func:`~hub.audit.service.record_entries`), on SQLite in one transaction with
one head lock and one commit for every event that arrived while the previous one ran.

Nothing is lost that the old way kept: the caller awaits its events (:meth:`Pending.wait`) in the
request's own ASGI cycle, after the answer is sent (a Starlette background task), so a graceful
shutdown still waits for them and an in-process client sees the rows when its request returns.
A crash between the answer and the commit loses the row, as a crash between the upstream call and
the old commit did. A batch that fails is retried one event per transaction, so one bad event
cannot take the others with it; an event that still fails is logged by action, never by content,
and the call's answer is not changed — as :func:`~hub.audit.service.record_failure` behaves.

Written by hand: this is the hub's own chain and transaction shape; no library does it.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from hub.audit.repository import Head
from hub.audit.service import Entry, record_entries
from hub.core.db import Database
from hub.core.tenancy import TenantId

__all__ = ["AuditWriter", "Pending"]

log = logging.getLogger("hub.audit")

#: most events appended in one transaction
MAX_BATCH = 200


@dataclass
class Pending:
    """Events submitted by one request; :meth:`wait` returns once each is committed or logged."""

    done: list[asyncio.Future[None]] = field(default_factory=list)

    async def wait(self) -> None:
        if self.done:
            await asyncio.gather(*self.done)


@dataclass
class _Queued:
    db: Database
    entry: Entry
    done: asyncio.Future[None]


class AuditWriter:
    """One per replica; its flushing task belongs to the event loop that submitted."""

    def __init__(self) -> None:
        self._queue: list[_Queued] = []
        self._task: asyncio.Task[None] | None = None
        self._heads: dict[str, Head] = {}  # the last head this replica wrote, per chain

    def submit(self, db: Database, entry: Entry, pending: Pending) -> None:
        """Queue ``entry`` on ``db``; ``pending`` learns when it is written."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        task = self._task
        if task is not None and task.get_loop() is not loop:
            # an event loop that ended (tests run one per test): what it queued cannot be
            # awaited by anyone any more
            self._queue = [q for q in self._queue if q.done.get_loop() is loop]
            task = None
        self._queue.append(_Queued(db, entry, done))
        pending.done.append(done)
        if task is None or task.done():
            # a context of its own: not the first submitter's (its request id, its RLS scope)
            self._task = loop.create_task(self._flush(), context=contextvars.Context())

    async def drain(self) -> None:
        """Wait until everything submitted so far is written (the app's shutdown)."""
        task = self._task
        if task is not None and not task.done() and task.get_loop() is asyncio.get_running_loop():
            await asyncio.shield(task)

    async def _flush(self) -> None:
        while self._queue:
            batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
            for chain in _by_chain(batch):
                await _write(chain, self._heads)


def _by_chain(batch: Sequence[_Queued]) -> list[list[_Queued]]:
    """The batch split per (database, chain), each in submission order."""
    chains: dict[tuple[int, TenantId | None], list[_Queued]] = {}
    for queued in batch:
        chains.setdefault((id(queued.db), queued.entry.tenant_id), []).append(queued)
    return list(chains.values())


async def _write(chain: list[_Queued], heads: dict[str, Head]) -> None:
    db, tenant_id = chain[0].db, chain[0].entry.tenant_id
    try:
        await record_entries(db, tenant_id, [q.entry for q in chain], heads)
    except Exception:
        if len(chain) == 1:
            log.exception("could not record audit event for %s", chain[0].entry.action)
        else:
            for queued in chain:
                await _write([queued], heads)
            return
    for queued in chain:
        if not queued.done.done():
            queued.done.set_result(None)

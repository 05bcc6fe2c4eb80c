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

**A database that is away** (a restart, refused connections, a full disk: see
:func:`~hub.core.db_errors.database_unavailable`) loses nothing: the events are kept, their
requests are let go (they wait for no retry), and the writer tries again after
:data:`RETRY_S` until the database is back. At most :data:`MAX_RETAINED` events are kept; past
that the oldest are dropped, counted (``hub_audit_events_lost_total``) and logged at ERROR, as
are those still kept when the process stops (:meth:`AuditWriter.drain` waits ``grace_s``).
Found by an SRE's walk (stop 50): two calls answered as successes while PostgreSQL restarted left
no row at all.

Written by hand: this is the hub's own chain and transaction shape; no library does it.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from prometheus_client import Counter

from hub.audit.repository import Head
from hub.audit.service import Entry, record_entries
from hub.core.db import Database
from hub.core.db_errors import database_unavailable
from hub.core.tenancy import TenantId

__all__ = ["AuditWriter", "Pending"]

log = logging.getLogger("hub.audit")

#: most events appended in one transaction
MAX_BATCH = 200
#: events kept while the database is away, at most (then the oldest are dropped and counted)
MAX_RETAINED = 10_000
#: the waits between attempts while the database is away (the last one repeats)
RETRY_S = (0.5, 1.0, 2.0, 5.0)


class _Away(Exception):
    """The database is away: the chain's events are kept for the next attempt."""


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
    written: bool = False


class AuditWriter:
    """One per replica; its flushing task belongs to the event loop that submitted."""

    def __init__(self, lost: Counter | None = None) -> None:
        self._queue: list[_Queued] = []
        self._task: asyncio.Task[None] | None = None
        self._heads: dict[str, Head] = {}  # the last head this replica wrote, per chain
        self._lost = lost
        self._away = 0  # failed attempts in a row while the database is away

    @property
    def retained(self) -> int:
        """Events not written yet (queued, or kept while the database is away)."""
        return len(self._queue)

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

    async def drain(self, grace_s: float | None = None) -> None:
        """Wait until everything submitted so far is written (the app's shutdown); with
        ``grace_s``, at most that long while the database is away, then what is left is lost
        and said so."""
        task = self._task
        if task is None or task.done() or task.get_loop() is not asyncio.get_running_loop():
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), grace_s)
        except TimeoutError:
            task.cancel()
            self._queue = [q for q in self._queue if not q.written]
            self._drop(len(self._queue), "the process stopped")

    async def _flush(self) -> None:
        while self._queue:
            # the batch stays queued while it is written: a drain that gives up meanwhile counts
            # what is not written yet; events submitted meanwhile are appended behind it
            batch = self._queue[:MAX_BATCH]
            kept: list[_Queued] = []
            for chain in _by_chain(batch):
                try:
                    await _write(chain, self._heads)
                except _Away:  # those of the chain written one by one before it went stay so
                    kept.extend(q for q in chain if not q.written)
            del self._queue[: len(batch)]
            if not kept:
                if self._away:
                    log.warning("audit: the database is back; the rows kept were written")
                self._away = 0
                continue
            for queued in kept:  # their requests need not wait for the database to come back
                if not queued.done.done():
                    queued.done.set_result(None)
            self._queue[:0] = kept  # first again, in submission order
            if not self._away:
                log.error("audit: the database is away; %d events kept to write later", len(kept))
            self._drop(len(self._queue) - MAX_RETAINED, "too many kept")
            await asyncio.sleep(RETRY_S[min(self._away, len(RETRY_S) - 1)])
            self._away += 1

    def _drop(self, count: int, why: str) -> None:
        if count <= 0:
            return
        dropped, self._queue = self._queue[:count], self._queue[count:]
        actions = sorted({q.entry.action for q in dropped})
        log.error("audit: %d events lost (%s): %s", count, why, ", ".join(actions))
        if self._lost is not None:
            self._lost.inc(count)
        for queued in dropped:
            if not queued.done.done():
                queued.done.set_result(None)


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
    except Exception as exc:
        if database_unavailable(exc):
            raise _Away from None
        if len(chain) == 1:
            log.exception("could not record audit event for %s", chain[0].entry.action)
        else:
            for queued in chain:
                await _write([queued], heads)
            return
    for queued in chain:
        queued.written = True
        if not queued.done.done():
            queued.done.set_result(None)

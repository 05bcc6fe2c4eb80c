"""Recording audit events, reading them, and checking their hash chains (DESIGN §11, §13).

A successful mutation records its event with :func:`record` in the request's own transaction, so
the event commits (or rolls back) with the change. A denied or failed attempt is recorded with
:func:`record_failure` in a fresh short transaction after the request's rollback, so it survives.
Details hold identifiers and fingerprints only; callers must never put a secret in them.

Every event is appended to its tenant's chain (or the platform's, ``tenant_id`` None) under the
chain head's lock (:func:`hub.audit.repository.lock_head`); the lock is held until the writer's
transaction ends, so appends to one chain are serialised on every replica and a chain never forks.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, get_args

from sqlalchemy.ext.asyncio import AsyncSession

from hub.audit import repository
from hub.audit.actions import Action, Outcome
from hub.audit.chain import (
    Anchor,
    ChainCheck,
    Verification,
    link_hash,
    normalise_details,
)
from hub.audit.repository import AuditFilters
from hub.audit.schemas import AuditEventRead
from hub.auth.caller import TenantAccess
from hub.core import bulklane, clock, rls
from hub.core.db import Database
from hub.core.logging import current_client_request_id
from hub.core.pagination import Page, PageParams
from hub.core.tenancy import TenantId
from hub.models import AuditEvent

__all__ = [
    "AuditFilters",
    "Entry",
    "Outcome",
    "Verification",
    "entry_of",
    "export_lines",
    "list_events",
    "record",
    "record_entries",
    "record_failure",
    "record_for",
    "verify_chain",
]

log = logging.getLogger("hub.audit")


@dataclass(frozen=True, slots=True)
class Entry:
    """One event, as recorded: everything but its place in the chain."""

    tenant_id: TenantId | None
    actor_id: uuid.UUID | None
    action: Action
    resource: str
    request_id: str | None
    outcome: Outcome
    details: dict[str, Any] | None
    at: datetime


_OUTCOMES: frozenset[str] = frozenset(get_args(Outcome))
#: rows read per query when walking or exporting a chain: each batch is a turn of the bulk lane,
#: about 3 ms of the event loop's time to decode, and as long again to hash or to serialise
BATCH = 200


async def record(
    session: AsyncSession,
    *,
    tenant_id: TenantId | None,
    actor_id: uuid.UUID | None,
    action: Action,
    resource: str,
    request_id: str | None,
    outcome: Outcome = "success",
    details: dict[str, Any] | None = None,
) -> None:
    """Append an event to its chain inside the caller's transaction.

    ``action`` must be one of :class:`~hub.audit.actions.Action` (anything else is a
    ``ValueError``: the vocabulary is closed)."""
    entry = entry_of(
        tenant_id=tenant_id,
        actor_id=actor_id,
        action=action,
        resource=resource,
        request_id=request_id,
        outcome=outcome,
        details=details,
    )
    async with rls.within(session, tenant_id or rls.PLATFORM):  # the chain's own scope
        head = await repository.lock_head(session, tenant_id)
        await _append_at(session, head, entry)


async def _append_at(session: AsyncSession, head: repository.Head, entry: Entry) -> repository.Head:
    """Append ``entry`` after ``head`` (locked by this transaction); the chain's new head."""
    event = _event_after(head, entry)
    await repository.append_event(session, entry.tenant_id, event)
    return repository.Head(event.seq, event.hash, event.id)


def _event_after(head: repository.Head, entry: Entry) -> repository.NewEvent:
    """``entry`` as the row after ``head``, hashed on it."""
    event = repository.NewEvent(
        id=uuid.uuid4(),
        tenant_id=entry.tenant_id.value if entry.tenant_id is not None else None,
        at=entry.at,
        actor_id=entry.actor_id,
        action=entry.action.value,
        resource=entry.resource[:512],
        outcome=entry.outcome,
        request_id=entry.request_id,
        details=normalise_details(entry.details),
        seq=head.seq + 1,
        prev_hash=head.last_hash,
    )
    event.hash = link_hash(head.last_hash, event)
    return event


def entry_of(
    *,
    tenant_id: TenantId | None,
    actor_id: uuid.UUID | None,
    action: Action,
    resource: str,
    request_id: str | None,
    outcome: Outcome,
    details: dict[str, Any] | None = None,
) -> Entry:
    """An event to record later (:class:`~hub.audit.writer.AuditWriter`), checked and stamped
    now: its time and the client's request id are the caller's, not the writer's."""
    action = Action(action)
    if outcome not in _OUTCOMES:
        raise ValueError(f"unknown audit outcome {outcome!r}")
    client_request_id = current_client_request_id()
    if client_request_id is not None:
        details = {**(details or {}), "client_request_id": client_request_id}
    return Entry(tenant_id, actor_id, action, resource, request_id, outcome, details, clock.now())


#: how often one event is retried against a head another replica keeps moving
APPEND_ATTEMPTS = 20


async def record_entries(
    db: Database,
    tenant_id: TenantId | None,
    entries: Sequence[Entry],
    heads: dict[str, repository.Head] | None = None,
) -> None:
    """Append ``entries`` (all of chain ``tenant_id``) in order. Raises what the database raises.

    SQLite, or with no ``heads``: one short write transaction, one head lock and one commit for
    all of them. PostgreSQL with ``heads`` (the writer's last known head of each chain): each
    event in one statement that commits on its own and moves the head only from the head it was
    hashed on (:func:`~hub.audit.repository.append_if_head`); when another writer moved it
    meanwhile, the head is read again and the event re-hashed on it. A chain with no head row
    yet, or one that stays contended, takes the locking transaction."""
    if db.is_sqlite or heads is None:
        await _record_locked(db, tenant_id, entries)
        return
    key = repository.chain_key(tenant_id)
    with rls.scope(tenant_id or rls.PLATFORM):
        async with db.reads() as session:  # autocommit: one statement, one commit
            head = heads.pop(key, None) or await repository.read_head(session, tenant_id)
            for index, entry in enumerate(entries):
                moved = await _append_if_head(session, head, entry)
                if moved is None:
                    head = await _record_locked(db, tenant_id, entries[index:])
                    break
                head = moved
    heads[key] = head  # committed: the head the next event of this chain is hashed on


async def _append_if_head(
    session: AsyncSession, head: repository.Head, entry: Entry
) -> repository.Head | None:
    """``entry`` appended after the chain's current head (re-read while another writer moves
    it); None when it could not be (no head row yet, or the head kept moving)."""
    for _ in range(APPEND_ATTEMPTS):
        event = _event_after(head, entry)
        if await repository.append_if_head(session, entry.tenant_id, event, head):
            return repository.Head(event.seq, event.hash, event.id)
        latest = await repository.read_head(session, entry.tenant_id)
        if latest == head:  # not moved by anyone: there is no head row to move
            return None
        head = latest
    return None


async def _record_locked(
    db: Database, tenant_id: TenantId | None, entries: Sequence[Entry]
) -> repository.Head:
    """``entries`` in one write transaction under the chain head's lock; the head it left."""
    with rls.scope(tenant_id or rls.PLATFORM):
        async with db.session(write=True) as session:  # begins in the chain's scope
            head = await repository.lock_head(session, tenant_id)
            for entry in entries:
                head = await _append_at(session, head, entry)
    return head


async def record_for(
    session: AsyncSession,
    access: TenantAccess,
    action: Action,
    resource: str,
    details: dict[str, Any] | None = None,
) -> None:
    """Record a successful mutation by the caller of a tenant route, in its transaction."""
    await record(
        session,
        tenant_id=access.tenant_id,
        actor_id=access.actor_id,
        action=action,
        resource=resource,
        request_id=access.request_id,
        details=details,
    )


async def record_failure(
    db: Database,
    *,
    tenant_id: TenantId | None,
    actor_id: uuid.UUID | None,
    action: Action,
    resource: str,
    request_id: str | None,
    outcome: Outcome,
    details: dict[str, Any] | None = None,
) -> None:
    """Record an event in a fresh short transaction of its own (never raises): a denied or
    failed attempt after its request rolled back, or a tool call after it ran."""
    try:
        with rls.scope(tenant_id or rls.PLATFORM):
            async with db.session(write=True) as session:
                await record(
                    session,
                    tenant_id=tenant_id,
                    actor_id=actor_id,
                    action=action,
                    resource=resource,
                    request_id=request_id,
                    outcome=outcome,
                    details=details,
                )
    except Exception:  # the audit of a failure must not turn it into a 500
        log.exception("could not record audit event for %s", action)


async def list_events(
    session: AsyncSession,
    tenant_id: TenantId | None,
    filters: AuditFilters,
    page: PageParams,
    *,
    newest_first: bool = False,
) -> Page[AuditEvent]:
    """One page of a chain's events, oldest first (or newest first), filtered."""
    return await repository.list_events(
        session, tenant_id, filters, page, newest_first=newest_first
    )


async def verify_chain(
    db: Database, tenant_id: TenantId | None, start: Anchor | None = None
) -> Verification:
    """Walk one chain from its first row (or from ``start``, a place an earlier check reported)
    to its head and report the first row that breaks it.

    No snapshot is held for the walk: the head is read first, and the rows up to it cannot
    change under the hub (a row and the head's move commit together), so they are read in keyset
    batches of :data:`BATCH`, each in a short read transaction of its own. One snapshot held for
    the length of a long chain (minutes, for millions of rows) kept PostgreSQL's vacuum from
    every row changed meanwhile. Each batch is read and hashed in a turn of the bulk lane
    (:mod:`hub.core.bulklane`), so walks and exports take turns on the event loop instead of
    delaying every other request together. The look for rows beyond the head reads the head
    again and past it in one short snapshot at the end."""
    with rls.scope(tenant_id or rls.PLATFORM):
        async with db.session(write=False) as session:
            head = await repository.read_head(session, tenant_id)
        check = ChainCheck(start)
        after = check.last_seq
        while after < head.seq:
            async with bulklane.turn():
                async with db.session(write=False) as session:
                    rows = await repository.chain_rows(
                        session, tenant_id, after_seq=after, up_to_seq=head.seq, limit=BATCH
                    )
                # hashed in a slice of the loop of its own: the read's end was a wait
                intact = all(check.feed(row) for row in rows)
            if not intact or len(rows) < BATCH:
                break
            after = rows[-1].seq
        result = check.finish(head.seq, head.last_hash, head.last_id)
        if result.ok:
            async with db.snapshot() as session:
                latest = await repository.read_head(session, tenant_id)
                extra = await repository.first_row_beyond(session, tenant_id, latest.seq)
            if extra is not None:
                checked = result.checked + 1
                return Verification(False, checked, extra, "beyond_head", head.last_hash, head.seq)
        return result


async def export_lines(
    db: Database, tenant_id: TenantId | None, filters: AuditFilters
) -> AsyncIterator[bytes]:
    """A chain's events in ``seq`` order as NDJSON, batch by batch, each batch read in its own
    short read transaction (a slow client never holds one open), and read and serialised in a
    turn of the bulk lane (:mod:`hub.core.bulklane`)."""
    after = 0
    while True:
        with rls.scope(tenant_id or rls.PLATFORM):
            async with bulklane.turn():
                async with db.session(write=False) as session:
                    rows = await repository.chain_rows(
                        session, tenant_id, after_seq=after, limit=BATCH, filters=filters
                    )
                # serialised in a slice of the loop of its own: the read's end was a wait
                lines = "".join(
                    json.dumps(AuditEventRead.model_validate(row).model_dump(mode="json")) + "\n"
                    for row in rows
                )
        if rows:
            yield lines.encode()
        if len(rows) < BATCH:
            return
        after = rows[-1].seq

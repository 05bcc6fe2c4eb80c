"""Every query of the audit trail. ``audit_events`` is append-only: rows are inserted and read,
never updated or deleted (on PostgreSQL a trigger refuses both); ``audit_chain_heads`` is moved
forward by the writer that appends to a chain, under a lock."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from sqlalchemy import Select, Table, bindparam, insert, literal_column, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from hub.audit.chain import GENESIS, ChainRow, NewEvent
from hub.core.pagination import Page, PageParams, fetch_page
from hub.core.statements import write_alone
from hub.core.tenancy import TenantId, scoped
from hub.models import AuditChainHead, AuditEvent
from hub.models.audit_event import COMMON_ACTION, COMMON_OUTCOME

__all__ = [
    "AuditFilters",
    "Head",
    "NewEvent",
    "append_if_head",
    "chain_key",
    "chain_rows",
    "first_row_beyond",
    "insert_event",
    "list_events",
    "lock_head",
    "move_head",
    "read_head",
]


@dataclass(frozen=True)
class Head:
    seq: int
    last_hash: str
    last_id: uuid.UUID | None


@dataclass(frozen=True)
class AuditFilters:
    action: str | None = None
    actor_id: uuid.UUID | None = None
    outcome: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    after_seq: int | None = None


def chain_key(tenant_id: TenantId | None) -> str:
    return "platform" if tenant_id is None else f"tenant:{tenant_id.value}"


def _chain(tenant_id: TenantId | None) -> Select[AuditEvent]:
    if tenant_id is None:
        return select(AuditEvent).where(AuditEvent.tenant_id.is_(None))
    return scoped(AuditEvent, tenant_id)


# Built once: every audited write runs these (a tool call is one), and building a statement
# costs more than running a cached one.
_HEAD = select(AuditChainHead.seq, AuditChainHead.last_hash, AuditChainHead.last_id).where(
    AuditChainHead.chain == bindparam("chain")
)
_HEAD_FOR_UPDATE = _HEAD.with_for_update()
_HEADS = cast(Table, AuditChainHead.__table__)
_EVENTS = cast(Table, AuditEvent.__table__)
_MOVE_HEAD = (
    update(_HEADS)
    .where(_HEADS.c.chain == bindparam("b_chain"))
    .values(
        seq=bindparam("b_seq"), last_id=bindparam("b_last_id"), last_hash=bindparam("b_last_hash")
    )
)
_INSERT_EVENT = insert(_EVENTS)
_EVENT_COLUMNS = tuple(column.key for column in _EVENTS.columns)
# PostgreSQL: the head moves in the insert's own statement (a data-modifying WITH runs exactly
# once), one round trip fewer per audited write; SQLite has no DML in WITH and runs the two.
# Every bind is named apart from every column (``e_…``, ``b_…``): a statement's parameter keys
# that name a column would otherwise be added to the nested UPDATE's SET as well.
_INSERT_EVENT_MOVING_HEAD = (
    insert(_EVENTS)
    .values({key: bindparam(f"e_{key}") for key in _EVENT_COLUMNS})
    .add_cte(_MOVE_HEAD.cte("moved_head"))
)


# PostgreSQL, outside a transaction: the head moves only if it is still where the writer saw it
# (``seq`` and hash unchanged), and the event is inserted only from the moved row, in one
# statement that commits on its own. A writer that lost a race moves nothing and inserts
# nothing; under READ COMMITTED the UPDATE waits for a concurrent mover and re-checks the row
# that mover left.
_MOVE_HEAD_IF = (
    update(_HEADS)
    .where(
        _HEADS.c.chain == bindparam("b_chain"),
        _HEADS.c.seq == bindparam("b_expected"),
        _HEADS.c.last_hash == bindparam("b_expected_hash"),
    )
    .values(
        seq=bindparam("b_seq"), last_id=bindparam("b_last_id"), last_hash=bindparam("b_last_hash")
    )
    .returning(_HEADS.c.chain)
    .cte("moved_head")
)
_INSERT_EVENT_IF_MOVED = insert(_EVENTS).from_select(
    list(_EVENT_COLUMNS),
    select(
        *(bindparam(f"e_{key}", type_=_EVENTS.c[key].type) for key in _EVENT_COLUMNS)
    ).select_from(_MOVE_HEAD_IF),
)


async def lock_head(session: AsyncSession, tenant_id: TenantId | None) -> Head:
    """The chain's head, locked until the transaction ends (created at genesis if absent).

    PostgreSQL: ``SELECT … FOR UPDATE`` — a second writer waits here until the first commits and
    then reads the head that writer left. SQLite: the write transaction (``BEGIN IMMEDIATE``)
    already excludes every other writer, so the plain read is the latest head.
    """
    chain = chain_key(tenant_id)
    params = {"chain": chain}
    row = (await session.execute(_HEAD_FOR_UPDATE, params)).first()
    if row is None:
        values = {
            "chain": chain,
            "tenant_id": None if tenant_id is None else tenant_id.value,
            "seq": 0,
            "last_id": None,
            "last_hash": GENESIS,
        }
        # two first writers of a chain race here: one inserts, the other's insert does nothing
        # (waiting for the first to commit on PostgreSQL), and both then lock the same row
        dialect = session.get_bind().dialect.name
        stmt = (pg_insert if dialect == "postgresql" else sqlite_insert)(AuditChainHead)
        await session.execute(stmt.values(**values).on_conflict_do_nothing())
        row = (await session.execute(_HEAD_FOR_UPDATE, params)).one()
    return Head(row.seq, row.last_hash, row.last_id)


async def move_head(
    session: AsyncSession, tenant_id: TenantId | None, seq: int, last_id: uuid.UUID, last_hash: str
) -> None:
    params = {"b_chain": chain_key(tenant_id), "b_seq": seq, "b_last_id": last_id}
    await session.execute(_MOVE_HEAD, {**params, "b_last_hash": last_hash})


async def read_head(session: AsyncSession, tenant_id: TenantId | None) -> Head:
    row = (await session.execute(_HEAD, {"chain": chain_key(tenant_id)})).first()
    return Head(0, GENESIS, None) if row is None else Head(row.seq, row.last_hash, row.last_id)


async def insert_event(session: AsyncSession, event: NewEvent) -> None:
    await session.execute(_INSERT_EVENT, {key: getattr(event, key) for key in _EVENT_COLUMNS})


async def append_event(session: AsyncSession, tenant_id: TenantId | None, event: NewEvent) -> None:
    """Insert ``event`` and move its chain's head to it (the head locked by :func:`lock_head`)."""
    if session.get_bind().dialect.name != "postgresql":
        await insert_event(session, event)
        await move_head(session, tenant_id, event.seq, event.id, event.hash)
        return
    params = {f"e_{key}": getattr(event, key) for key in _EVENT_COLUMNS}
    params.update(
        b_chain=chain_key(tenant_id), b_seq=event.seq, b_last_id=event.id, b_last_hash=event.hash
    )
    await session.execute(_INSERT_EVENT_MOVING_HEAD, params)


async def append_if_head(
    session: AsyncSession, tenant_id: TenantId | None, event: NewEvent, expected: Head
) -> bool:
    """PostgreSQL, on a connection in autocommit: insert ``event`` and move its chain's head to
    it if the head is still ``expected``, in one statement; False when it is not (another writer
    moved it first, or the chain has no head row yet): nothing was written."""
    params = {f"e_{key}": getattr(event, key) for key in _EVENT_COLUMNS}
    params.update(
        b_chain=chain_key(tenant_id),
        b_expected=expected.seq,
        b_expected_hash=expected.last_hash,
        b_seq=event.seq,
        b_last_id=event.id,
        b_last_hash=event.hash,
    )
    return bool(await write_alone(session, _INSERT_EVENT_IF_MOVED, params))


# The partial indexes' predicates (migration 0905), written into a query as literals: a filter's
# value is a bound parameter, and a plan made for any value (PostgreSQL's generic plan after five
# executions of a prepared statement; SQLite's always) cannot tell that ``action = $1`` excludes
# the rows the index leaves out. Said outright, the index is usable in every plan.
_RARE_OUTCOME = AuditEvent.outcome != literal_column(f"'{COMMON_OUTCOME}'")
_RARE_ACTION = AuditEvent.action != literal_column(f"'{COMMON_ACTION}'")


def _filtered(tenant_id: TenantId | None, filters: AuditFilters) -> Select[AuditEvent]:
    query = _chain(tenant_id)
    if filters.action is not None:
        query = query.where(AuditEvent.action == filters.action)
        if filters.action != COMMON_ACTION:
            query = query.where(_RARE_ACTION)
    if filters.actor_id is not None:
        query = query.where(AuditEvent.actor_id == filters.actor_id)
    if filters.outcome is not None:
        query = query.where(AuditEvent.outcome == filters.outcome)
        if filters.outcome != COMMON_OUTCOME:
            query = query.where(_RARE_OUTCOME)
    if filters.since is not None:
        query = query.where(AuditEvent.at >= filters.since)
    if filters.until is not None:
        query = query.where(AuditEvent.at < filters.until)
    if filters.after_seq is not None:
        query = query.where(AuditEvent.seq > filters.after_seq)
    return query


async def list_events(
    session: AsyncSession,
    tenant_id: TenantId | None,
    filters: AuditFilters,
    params: PageParams,
    *,
    newest_first: bool = False,
) -> Page[AuditEvent]:
    query = _filtered(tenant_id, filters)
    order = (AuditEvent.at, AuditEvent.id)
    return await fetch_page(session, query, params, order=order, newest_first=newest_first)


#: the columns a chain's rows are read with (every column a hash covers, and the two hashes)
_LINK_COLUMNS = (
    AuditEvent.id,
    AuditEvent.tenant_id,
    AuditEvent.seq,
    AuditEvent.at,
    AuditEvent.actor_id,
    AuditEvent.action,
    AuditEvent.resource,
    AuditEvent.outcome,
    AuditEvent.request_id,
    AuditEvent.details,
    AuditEvent.prev_hash,
    AuditEvent.hash,
)


async def chain_rows(
    session: AsyncSession,
    tenant_id: TenantId | None,
    *,
    after_seq: int,
    limit: int,
    up_to_seq: int | None = None,
    filters: AuditFilters | None = None,
) -> Sequence[ChainRow]:
    """The chain's rows after ``after_seq`` (up to ``up_to_seq``) in ``seq`` order, at most
    ``limit``: a keyset page for a check or an export, as plain rows of the columns (a walk of
    millions of rows spent most of its time building ORM objects it only reads)."""
    query = (
        _filtered(tenant_id, filters or AuditFilters())
        .with_only_columns(*_LINK_COLUMNS)
        .where(AuditEvent.seq > after_seq)
    )
    if up_to_seq is not None:
        query = query.where(AuditEvent.seq <= up_to_seq)
    rows = (await session.execute(query.order_by(AuditEvent.seq).limit(limit))).all()
    return cast("Sequence[ChainRow]", rows)  # a Row has every column as an attribute


async def first_row_beyond(
    session: AsyncSession, tenant_id: TenantId | None, seq: int
) -> uuid.UUID | None:
    """A row numbered past the head (appended without moving it: not written by the hub)."""
    query = _chain(tenant_id).where(AuditEvent.seq > seq).order_by(AuditEvent.seq).limit(1)
    return (await session.execute(query.with_only_columns(AuditEvent.id))).scalar_one_or_none()

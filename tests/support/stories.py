"""Setup shared by the one-scenario API tests: a tenant with its admin, and the audit rows.

The factories of :mod:`tests.support.factories` write single rows; these helpers put together
what most API tests start from, so that a test body is only the scenario it proves.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, text

from hub.audit.actions import Action
from hub.audit.service import Entry, record_entries
from hub.core.db import Database
from hub.models import AuditEvent
from tests.support.databases import as_owner, owner_session
from tests.support.factories import Actor, make_principal, make_tenant, scope_of

__all__ = [
    "TenantAdmin",
    "append_late_tool_call",
    "audit_count",
    "audit_events",
    "audit_events_written",
    "change_audit_row",
    "make_tenant_admin",
]


@dataclass(frozen=True)
class TenantAdmin:
    """A tenant and its ``tenant_admin``."""

    tenant_id: uuid.UUID
    admin: Actor

    def url(self, *parts: object) -> str:
        """``/tenants/{tenant_id}/<parts joined by />``."""
        return "/".join([f"/tenants/{self.tenant_id}", *(str(p) for p in parts)])


async def make_tenant_admin(db: Database) -> TenantAdmin:
    tenant = await make_tenant(db)
    return TenantAdmin(tenant.id, await make_principal(db, tenant.id))


async def audit_events(db: Database, **where: Any) -> list[AuditEvent]:
    """The audit rows whose columns equal ``where`` (``action="grant.create"``…), oldest first."""
    query = select(AuditEvent).order_by(AuditEvent.at, AuditEvent.id)
    for column, value in where.items():
        query = query.where(getattr(AuditEvent, column) == value)
    async with owner_session(db, write=False) as session:
        return list((await session.execute(query)).scalars().all())


async def audit_events_written(db: Database, expected: int, **where: Any) -> list[AuditEvent]:
    """:func:`audit_events`, once ``expected`` rows match (at most 10 s): a live hub writes a tool
    call's row just after the call's answer (:mod:`hub.audit.writer`), so a client that got the
    answer may read the trail a moment before the row is there."""
    deadline = time.monotonic() + 10
    while True:
        rows = await audit_events(db, **where)
        if len(rows) >= expected or time.monotonic() > deadline:
            return rows
        await asyncio.sleep(0.02)


async def append_late_tool_call(
    db: Database, tenant_id: uuid.UUID, at: datetime, request_id: str = "written-late"
) -> None:
    """Append to the tenant's chain a ``tool.call`` row stamped ``at`` — earlier than rows
    already there, as a call's row written after its answer can be."""
    late = Entry(
        tenant_id=scope_of(tenant_id),
        actor_id=None,
        action=Action.TOOL_CALL,
        resource="tool:up.echo",
        request_id=request_id,
        outcome="success",
        details={},
        at=at,
    )
    await record_entries(db, late.tenant_id, [late])


_CHANGE_BY_ID = text("UPDATE audit_events SET resource = 'changed' WHERE id = :id RETURNING id")
_CHANGE_BY_SEQ = text(
    "UPDATE audit_events SET resource = 'changed' WHERE tenant_id = :t AND seq = :s RETURNING id"
)


async def change_audit_row(
    db: Database,
    *,
    row_id: uuid.UUID | None = None,
    tenant_id: uuid.UUID | None = None,
    seq: int = 0,
) -> uuid.UUID:
    """Change one audit row's ``resource`` as the database owner could, past the append-only
    trigger: the row ``row_id``, or row ``seq`` of ``tenant_id``'s chain. Its id."""

    def stored(value: uuid.UUID) -> object:  # SQLite keeps ids as 32 hex digits
        return value.hex if db.is_sqlite else value

    if row_id is not None:
        statement, params = _CHANGE_BY_ID, {"id": stored(row_id)}
    else:
        statement, params = _CHANGE_BY_SEQ, {"t": stored(tenant_id or uuid.UUID(int=0)), "s": seq}
    async with as_owner(db.engine) as owner, owner.begin() as conn:
        if not db.is_sqlite:
            await conn.execute(text("ALTER TABLE audit_events DISABLE TRIGGER USER"))
        found = (await conn.execute(statement, params)).scalar_one()
        if not db.is_sqlite:
            await conn.execute(text("ALTER TABLE audit_events ENABLE TRIGGER USER"))
    return found if isinstance(found, uuid.UUID) else uuid.UUID(str(found))


async def audit_count(db: Database) -> int:
    async with owner_session(db, write=False) as session:
        return int(
            (await session.execute(select(func.count()).select_from(AuditEvent))).scalar_one()
        )

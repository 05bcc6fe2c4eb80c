"""The direct-mode decisions handed out, and their outcomes reported once each (DESIGN §10.5, §15).

A decision id is sealed, not stored (:mod:`hub.gateway.decisions`), so without a record a
sidecar could report one call's outcome twice and write two ``tool.call`` rows, or never report it
and leave none. The hub records the SHA-256 of each id as it hands it out (:func:`open_outcome`:
state ``open``, with the audit fields of the call it allowed, never argument values), and the
report claims it (:func:`claim_outcome`) in one conditional statement keyed by the unique
``(tenant_id, decision_sha256)``: one report wins, on any replica, however raced; a second, or a
report of a call the sweep already audited as ``unreported``
(:mod:`hub.gateway.adapters.unreported`), finds nothing to claim. An id handed out before the
table recorded open decisions (migration 0908) has no row: its first report inserts one.

On PostgreSQL each of the two is one statement that commits on its own (as the approvals' use
and the audit writer's appends): the decision path gains one round trip, with no ``BEGIN`` and
``COMMIT`` around it. On SQLite it takes the write lock in a short transaction of its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from datetime import datetime
from typing import Any, Final, cast

from sqlalchemy import Insert, Table, bindparam, insert, literal_column
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from hub.core import clock
from hub.core.db import Database
from hub.core.statements import write_alone, write_alone_returning
from hub.core.tenancy import TENANT_PARAM, TenantId, tenant_params
from hub.gateway.engine.ports import CallRecord
from hub.models import DecisionOutcome

__all__ = [
    "OPEN",
    "REPORTED",
    "UNREPORTED",
    "call_fields",
    "claim_outcome",
    "open_outcome",
    "record_of",
]

#: a row's states: handed out; its outcome reported; audited by the sweep, never reported
OPEN: Final = "open"
REPORTED: Final = "reported"
UNREPORTED: Final = "unreported"

_T = cast(Table, DecisionOutcome.__table__)
_ROW = {
    "id": bindparam("id", type_=_T.c.id.type),
    "tenant_id": bindparam(TENANT_PARAM, type_=_T.c.tenant_id.type),
    "decision_sha256": bindparam("digest", type_=_T.c.decision_sha256.type),
    "expires_at": bindparam("expires_at", type_=_T.c.expires_at.type),
    "created_at": bindparam("created_at", type_=_T.c.created_at.type),
}
#: the decision handed out
_OPEN = insert(_T).values(
    **_ROW, state=literal_column(f"'{OPEN}'"), call=bindparam("call", type_=_T.c.call.type)
)


def _claim(make: Any) -> Insert:
    """The report's claim: insert the id as ``reported`` (an id of before 0908 has no row), or
    move its ``open`` row to ``reported``; a row already ``reported`` or ``unreported`` is left
    as it is and nothing is returned."""
    statement = make(_T).values(**_ROW, state=literal_column(f"'{REPORTED}'"))
    return statement.on_conflict_do_update(  # type: ignore[no-any-return]
        index_elements=[_T.c.tenant_id, _T.c.decision_sha256],
        set_={"state": literal_column(f"'{REPORTED}'")},
        where=_T.c.state == literal_column(f"'{OPEN}'"),
    ).returning(_T.c.id)


_CLAIMS = {"postgresql": _claim(pg_insert), "sqlite": _claim(sqlite_insert)}


def _digest(decision_id: str) -> str:
    return hashlib.sha256(decision_id.encode()).hexdigest()


def _params(
    tenant_id: TenantId, decision_id: str, expires_at: datetime, **more: Any
) -> dict[str, Any]:
    return tenant_params(
        tenant_id,
        id=uuid.uuid4(),
        digest=_digest(decision_id),
        expires_at=expires_at,
        created_at=clock.now(),
        **more,
    )


def _alone(db: Database) -> contextlib.AbstractAsyncContextManager[AsyncSession]:
    """Where one conditional write runs alone: a statement committing on its own (PostgreSQL),
    or a short write transaction (SQLite: its write lock)."""
    return db.session(write=True) if db.is_sqlite else db.reads()


def call_fields(record: CallRecord, request_id: str) -> dict[str, Any]:
    """What the row keeps of the call a decision allowed: its audit row's fields before the
    outcome (never argument values), and the decision's request id."""
    return {
        "deployment_id": str(record.deployment_id),
        "agent_id": str(record.agent_id),
        "wire_name": record.wire_name,
        "grant_key": record.grant_key,
        "decision": record.decision,
        "reasons": list(record.reasons),
        "approval_id": str(record.approval_id) if record.approval_id else None,
        "arguments_sha256": record.arguments_sha256,
        "tool_sha256": record.tool_sha256,
        "catalog_version": record.catalog_version,
        "grants_version": record.grants_version,
        "request_id": request_id,
    }


def record_of(fields: dict[str, Any]) -> CallRecord:
    """The call :func:`call_fields` kept, as its audit row is written."""
    record = CallRecord(
        uuid.UUID(fields["deployment_id"]), uuid.UUID(fields["agent_id"]), fields["wire_name"]
    )
    record.grant_key, record.decision = fields["grant_key"], fields["decision"]
    record.reasons = tuple(fields["reasons"])
    record.approval_id = uuid.UUID(fields["approval_id"]) if fields["approval_id"] else None
    record.arguments_sha256, record.tool_sha256 = fields["arguments_sha256"], fields["tool_sha256"]
    record.catalog_version = fields["catalog_version"]
    record.grants_version = fields["grants_version"]
    return record


async def open_outcome(
    db: Database,
    tenant_id: TenantId,
    decision_id: str,
    expires_at: datetime,
    record: CallRecord,
    request_id: str,
) -> None:
    """Record ``decision_id`` as handed out, with the call it allowed (one insert)."""
    params = _params(tenant_id, decision_id, expires_at, call=call_fields(record, request_id))
    async with _alone(db) as session:
        await write_alone(session, _OPEN, params)


async def claim_outcome(
    db: Database, tenant_id: TenantId, decision_id: str, expires_at: datetime
) -> bool:
    """Claim ``decision_id``'s outcome for this report; False if it was reported already, or
    audited as never reported."""
    statement = _CLAIMS["sqlite" if db.is_sqlite else "postgresql"]
    async with _alone(db) as session:
        rows = await write_alone_returning(
            session, statement, _params(tenant_id, decision_id, expires_at)
        )
    return bool(rows)

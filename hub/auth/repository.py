"""Queries authentication needs: a key with its principal and tenant, and the throttled touch.

:func:`find_key` runs on every authenticated request, so its statement is built once, selects
plain columns (no ORM entities to construct and track) and takes the key id as a bound parameter.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import String, bindparam, column, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from hub.core import rls
from hub.core.db import read_row
from hub.models import ApiKey, Principal, Tenant

__all__ = ["KeyRecord", "find_key", "touch_last_used"]


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """A key row with what authenticating it needs of its principal and tenant."""

    api_key_id: uuid.UUID
    key_hash: str
    revoked_at: datetime | None
    expires_at: datetime | None
    last_used_at: datetime | None
    principal_id: uuid.UUID
    tenant_id: uuid.UUID | None
    kind: str
    role: str | None
    is_platform_admin: bool
    disabled_at: datetime | None
    grants_version: int
    tenant_status: str | None

    def __repr__(self) -> str:  # the hash is not a secret, but has no business in a log line
        return f"KeyRecord(api_key_id={self.api_key_id!r}, principal_id={self.principal_id!r})"


_FIND_KEY = (
    select(
        ApiKey.id,
        ApiKey.key_hash,
        ApiKey.revoked_at,
        ApiKey.expires_at,
        ApiKey.last_used_at,
        Principal.id,
        Principal.tenant_id,
        Principal.kind,
        Principal.role,
        Principal.is_platform_admin,
        Principal.disabled_at,
        Principal.grants_version,
        Tenant.status,
    )
    .join(Principal, Principal.id == ApiKey.principal_id)
    .outerjoin(Tenant, Tenant.id == Principal.tenant_id)
    .where(ApiKey.key_id == bindparam("key_id"))
)


# On PostgreSQL the key is read before its tenant is known, so row-level security would hide it:
# the same query runs in a SECURITY DEFINER function (migration 0401), typed like _FIND_KEY.
# It also sets the connection's RLS scope to the key's tenant and returns it (``scope``).
_FIND_KEY_DEFINER = text(
    "SELECT api_key_id, key_hash, revoked_at, expires_at, last_used_at, principal_id,"
    " tenant_id, kind, role, is_platform_admin, disabled_at, grants_version, tenant_status,"
    " scope FROM hub_auth_key(:key_id)"
).columns(
    *(
        column(f"c{i}", selected.type)  # matched by position, typed like _FIND_KEY's
        for i, selected in enumerate(_FIND_KEY.selected_columns)
    ),
    column("scope", String()),
)


async def find_key(session: AsyncSession, key_id: str) -> KeyRecord | None:
    """The key ``key_id`` with its principal (``grants_version`` included) and tenant status,
    in one query."""
    if session.get_bind().dialect.name != "postgresql":
        row = await read_row(session, _FIND_KEY, {"key_id": key_id})
        return None if row is None else KeyRecord(*cast("tuple[Any, ...]", row))
    values = await session.run_sync(_find_key_definer, key_id)
    return None if values[0] is None else KeyRecord(*values[:-1])


def _find_key_definer(session: Session, key_id: str) -> tuple[Any, ...]:
    """The definer's row, with the scope it set noted on the connection: one greenlet hop for
    the statement and the note (this runs on every authenticated request)."""
    connection = session.connection()  # Core: plain columns, no ORM layer (see read_row)
    values = cast(
        "tuple[Any, ...]", connection.execute(_FIND_KEY_DEFINER, {"key_id": key_id}).one()
    )
    rls.set_by_statement(session, connection, str(values[-1]))
    return values


async def touch_last_used(
    session: AsyncSession, api_key_id: uuid.UUID, now: datetime, interval: timedelta
) -> bool:
    """Set last_used_at unless it was set within ``interval``; True when a row was written."""
    result = await session.execute(
        update(ApiKey)
        .where(
            ApiKey.id == api_key_id,
            or_(ApiKey.last_used_at.is_(None), ApiKey.last_used_at < now - interval),
        )
        .values(last_used_at=now)
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]

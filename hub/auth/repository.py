"""Queries authentication needs: a key with its principal and tenant, and the throttled touch.

:func:`find_key` runs on every authenticated request, so its statement is built once, selects
plain columns (no ORM entities to construct and track) and takes the key id as a bound parameter.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import String, Uuid, bindparam, column, delete, insert, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from hub.core.dbtypes import UTCDateTime
from hub.core.statements import read_row, read_scoping_rows
from hub.models import ApiKey, ConsoleSession, Principal, Tenant

__all__ = [
    "DEFINER_KEY_COLUMNS",
    "DEFINER_KEY_NAMES",
    "ConsoleSessionRecord",
    "KeyRecord",
    "delete_console_session",
    "delete_console_sessions_of_key",
    "delete_idle_console_sessions",
    "find_console_session",
    "find_key",
    "find_key_by_row",
    "insert_console_session",
    "key_record_of",
    "touch_console_session",
    "touch_last_used",
]


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


_KEY_COLUMNS = (
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
)
_FIND_KEY = _KEY_COLUMNS.where(ApiKey.key_id == bindparam("key_id"))
_FIND_KEY_BY_ROW = _KEY_COLUMNS.where(ApiKey.id == bindparam("row_id"))


# On PostgreSQL the key is read before its tenant is known, so row-level security would hide it:
# the same query runs in a SECURITY DEFINER function (migration 0401), typed like _FIND_KEY.
# It also sets the connection's RLS scope to the key's tenant and returns it (``scope``).
#: ``hub_auth_key``'s result columns by name, in order (migration 0401)
DEFINER_KEY_NAMES = (
    "api_key_id",
    "key_hash",
    "revoked_at",
    "expires_at",
    "last_used_at",
    "principal_id",
    "tenant_id",
    "kind",
    "role",
    "is_platform_admin",
    "disabled_at",
    "grants_version",
    "tenant_status",
    "scope",
)
_FIND_KEY_DEFINER = text(
    f"SELECT {', '.join(DEFINER_KEY_NAMES)} FROM hub_auth_key(:key_id)"  # noqa: S608 - fixed names
).columns(
    *(
        column(f"c{i}", selected.type)  # matched by position, typed like _FIND_KEY's
        for i, selected in enumerate(_FIND_KEY.selected_columns)
    ),
    column("scope", String()),
)


#: ``hub_auth_key``'s columns, typed: the first ones of every definer that returns its row too
#: (the gateway's ``hub_gateway_read``)
DEFINER_KEY_COLUMNS = tuple(_FIND_KEY_DEFINER.selected_columns)


def key_record_of(values: Sequence[Any]) -> KeyRecord | None:
    """The :class:`KeyRecord` of a definer row's first columns (None for an unknown key)."""
    return None if values[0] is None else KeyRecord(*values[: len(DEFINER_KEY_COLUMNS) - 1])


async def find_key(session: AsyncSession, key_id: str) -> KeyRecord | None:
    """The key ``key_id`` with its principal (``grants_version`` included) and tenant status,
    in one query."""
    if session.get_bind().dialect.name != "postgresql":
        row = await read_row(session, _FIND_KEY, {"key_id": key_id})
        return None if row is None else KeyRecord(*cast("tuple[Any, ...]", row))
    rows = await read_scoping_rows(session, _FIND_KEY_DEFINER, {"key_id": key_id}, -1)
    return key_record_of(tuple(rows[0]))


async def find_key_by_row(session: AsyncSession, api_key_id: uuid.UUID) -> KeyRecord | None:
    """The key whose row id is ``api_key_id`` (a console session's key), as :func:`find_key`."""
    row = await read_row(session, _FIND_KEY_BY_ROW, {"row_id": api_key_id})
    return None if row is None else KeyRecord(*cast("tuple[Any, ...]", row))


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


# --- console sessions (DESIGN §14, §15) ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsoleSessionRecord:
    id: uuid.UUID
    api_key_id: uuid.UUID
    last_seen_at: datetime


async def insert_console_session(
    session: AsyncSession,
    *,
    tenant_id: uuid.UUID | None,
    principal_id: uuid.UUID,
    api_key_id: uuid.UUID,
    token_hash: str,
    now: datetime,
) -> None:
    await session.execute(
        insert(ConsoleSession).values(
            id=uuid.uuid4(),
            tenant_id=tenant_id,
            principal_id=principal_id,
            api_key_id=api_key_id,
            token_hash=token_hash,
            last_seen_at=now,
            created_at=now,
        )
    )


# On PostgreSQL the cookie is read before its tenant is known: the lookup runs in a SECURITY
# DEFINER function (migration 0601) that also sets the connection's RLS scope to the session's
# tenant and returns it (``scope``), as ``hub_auth_key`` does for a key.
_FIND_CONSOLE_SESSION_DEFINER = text(
    "SELECT id, api_key_id, last_seen_at, scope FROM hub_console_session(:token_hash)"
).columns(
    column("id", Uuid()),
    column("api_key_id", Uuid()),
    column("last_seen_at", UTCDateTime()),
    column("scope", String()),
)


async def find_console_session(
    session: AsyncSession, token_hash: str
) -> ConsoleSessionRecord | None:
    """The console session whose token hashes to ``token_hash``; on PostgreSQL its tenant's RLS
    scope is entered on the way (the requests after it read that tenant's rows)."""
    if session.get_bind().dialect.name == "postgresql":
        rows = await read_scoping_rows(
            session, _FIND_CONSOLE_SESSION_DEFINER, {"token_hash": token_hash}, -1
        )
        values = tuple(rows[0])
        return None if values[0] is None else ConsoleSessionRecord(*values[:-1])
    row = (
        await session.execute(
            select(ConsoleSession.id, ConsoleSession.api_key_id, ConsoleSession.last_seen_at).where(
                ConsoleSession.token_hash == token_hash
            )
        )
    ).one_or_none()
    return None if row is None else ConsoleSessionRecord(*cast("tuple[Any, ...]", row))


async def touch_console_session(
    session: AsyncSession, session_id: uuid.UUID, now: datetime, interval: timedelta
) -> None:
    await session.execute(
        update(ConsoleSession)
        .where(ConsoleSession.id == session_id, ConsoleSession.last_seen_at < now - interval)
        .values(last_seen_at=now)
        .execution_options(synchronize_session=False)
    )


async def delete_console_session(session: AsyncSession, token_hash: str) -> None:
    await session.execute(
        delete(ConsoleSession)
        .where(ConsoleSession.token_hash == token_hash)
        .execution_options(synchronize_session=False)
    )


async def delete_console_sessions_of_key(session: AsyncSession, api_key_id: uuid.UUID) -> int:
    result = await session.execute(
        delete(ConsoleSession)
        .where(ConsoleSession.api_key_id == api_key_id)
        .execution_options(synchronize_session=False)
    )
    return int(result.rowcount)  # type: ignore[attr-defined]


async def delete_idle_console_sessions(
    session: AsyncSession, api_key_id: uuid.UUID, seen_before: datetime
) -> None:
    """The key's sessions idle since ``seen_before`` (signed out already; their rows go)."""
    await session.execute(
        delete(ConsoleSession)
        .where(ConsoleSession.api_key_id == api_key_id, ConsoleSession.last_seen_at < seen_before)
        .execution_options(synchronize_session=False)
    )

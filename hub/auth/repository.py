"""Queries authentication needs: a key with its principal and tenant, and the throttled touch."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from hub.models import ApiKey, Principal, Tenant

__all__ = ["KeyRecord", "find_key", "touch_last_used"]


@dataclass(frozen=True)
class KeyRecord:
    key: ApiKey
    principal: Principal
    tenant_status: str | None


async def find_key(session: AsyncSession, key_id: str) -> KeyRecord | None:
    query = (
        select(ApiKey, Principal, Tenant.status)
        .join(Principal, Principal.id == ApiKey.principal_id)
        .outerjoin(Tenant, Tenant.id == Principal.tenant_id)
        .where(ApiKey.key_id == key_id)
    )
    row = (await session.execute(query)).one_or_none()
    if row is None:
        return None
    return KeyRecord(key=row[0], principal=row[1], tenant_status=row[2])


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

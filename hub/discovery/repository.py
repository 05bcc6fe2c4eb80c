"""The remembered era per (tenant, origin)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from hub.core import clock
from hub.core.tenancy import TenantId, scoped
from hub.models import McpOriginEra

__all__ = ["get_era", "remember_era"]


async def get_era(session: AsyncSession, tenant_id: TenantId, origin: str) -> McpOriginEra | None:
    query = scoped(McpOriginEra, tenant_id).where(McpOriginEra.origin == origin)
    return (await session.execute(query)).scalar_one_or_none()


async def remember_era(
    session: AsyncSession, tenant_id: TenantId, origin: str, era: str, protocol_version: str
) -> None:
    row = await get_era(session, tenant_id, origin)
    if row is None:
        session.add(
            McpOriginEra(
                tenant_id=tenant_id.value,
                origin=origin,
                era=era,
                protocol_version=protocol_version,
                updated_at=clock.now(),
            )
        )
    elif row.era != era or row.protocol_version != protocol_version:
        row.era = era
        row.protocol_version = protocol_version
        row.updated_at = clock.now()
    await session.flush()

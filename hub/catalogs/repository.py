"""Every catalogs query. Tenant-owned queries start from ``scoped(…, TenantId)``."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from hub.core.pagination import Page, PageParams, fetch_page
from hub.core.tenancy import TenantId, scoped
from hub.models import Catalog

__all__ = ["get_by_id", "get_version", "latest", "list_catalogs"]


async def latest(
    session: AsyncSession, tenant_id: TenantId, server_id: uuid.UUID
) -> Catalog | None:
    query = (
        scoped(Catalog, tenant_id)
        .where(Catalog.server_id == server_id)
        .order_by(Catalog.version.desc())
        .limit(1)
    )
    return (await session.execute(query)).scalar_one_or_none()


async def get_version(
    session: AsyncSession, tenant_id: TenantId, server_id: uuid.UUID, version: int
) -> Catalog | None:
    query = scoped(Catalog, tenant_id).where(
        Catalog.server_id == server_id, Catalog.version == version
    )
    return (await session.execute(query)).scalar_one_or_none()


async def get_by_id(
    session: AsyncSession, tenant_id: TenantId, catalog_id: uuid.UUID
) -> Catalog | None:
    query = scoped(Catalog, tenant_id).where(Catalog.id == catalog_id)
    return (await session.execute(query)).scalar_one_or_none()


async def list_catalogs(
    session: AsyncSession, tenant_id: TenantId, server_id: uuid.UUID, params: PageParams
) -> Page[Catalog]:
    query = scoped(Catalog, tenant_id).where(Catalog.server_id == server_id)
    return await fetch_page(session, query, params, order=(Catalog.discovered_at, Catalog.id))

"""Every tenants query (the platform admin's table: not tenant-scoped by nature)."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from hub.core.pagination import Page, PageParams, fetch_page
from hub.models import Tenant

__all__ = ["get_by_slug", "get_tenant", "list_tenants"]


async def get_tenant(session: AsyncSession, tenant_id: uuid.UUID) -> Tenant | None:
    return await session.get(Tenant, tenant_id)


async def get_by_slug(session: AsyncSession, slug: str) -> Tenant | None:
    return (await session.execute(select(Tenant).where(Tenant.slug == slug))).scalar_one_or_none()


async def list_tenants(session: AsyncSession, params: PageParams) -> Page[Tenant]:
    return await fetch_page(session, select(Tenant), params, order=(Tenant.created_at, Tenant.id))

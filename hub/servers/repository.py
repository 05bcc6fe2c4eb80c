"""Every servers query. Tenant-owned queries start from ``scoped(…, TenantId)``."""

from __future__ import annotations

import uuid

from sqlalchemy import exists, select
from sqlalchemy.ext.asyncio import AsyncSession

from hub.core.pagination import Page, PageParams, fetch_page
from hub.core.tenancy import TenantId, scoped
from hub.models import DeploymentEntry, Server

__all__ = [
    "get_by_credential",
    "get_by_handle",
    "get_by_id",
    "get_by_ids",
    "handle_ever_used",
    "is_referenced",
    "list_servers",
]


async def get_by_handle(
    session: AsyncSession, tenant_id: TenantId, handle: str, *, for_update: bool = False
) -> Server | None:
    query = scoped(Server, tenant_id).where(Server.handle == handle, Server.deleted_at.is_(None))
    if for_update:
        query = query.with_for_update()
    return (await session.execute(query)).scalar_one_or_none()


async def get_by_id(
    session: AsyncSession, tenant_id: TenantId, server_id: uuid.UUID, *, for_update: bool = False
) -> Server | None:
    query = scoped(Server, tenant_id).where(Server.id == server_id)
    if for_update:
        query = query.with_for_update()
    return (await session.execute(query)).scalar_one_or_none()


async def get_by_credential(
    session: AsyncSession, tenant_id: TenantId, credential_id: uuid.UUID
) -> Server | None:
    query = (
        scoped(Server, tenant_id)
        .where(Server.credential_id == credential_id, Server.deleted_at.is_(None))
        .order_by(Server.created_at, Server.id)
        .limit(1)
    )
    return (await session.execute(query)).scalar_one_or_none()


async def get_by_ids(
    session: AsyncSession, tenant_id: TenantId, server_ids: list[uuid.UUID]
) -> list[Server]:
    if not server_ids:
        return []
    query = scoped(Server, tenant_id).where(Server.id.in_(server_ids))
    return list((await session.execute(query)).scalars().all())


async def handle_ever_used(session: AsyncSession, tenant_id: TenantId, handle: str) -> bool:
    query = scoped(Server, tenant_id).where(Server.handle == handle)
    return (await session.execute(query)).first() is not None


async def list_servers(
    session: AsyncSession, tenant_id: TenantId, params: PageParams
) -> Page[Server]:
    query = scoped(Server, tenant_id).where(Server.deleted_at.is_(None))
    return await fetch_page(session, query, params, order=(Server.created_at, Server.id))


async def is_referenced(session: AsyncSession, tenant_id: TenantId, server_id: uuid.UUID) -> bool:
    query = select(
        exists().where(
            DeploymentEntry.tenant_id == tenant_id.value, DeploymentEntry.server_id == server_id
        )
    )
    return bool((await session.execute(query)).scalar())

"""Every servers query. Tenant-owned queries start from ``scoped(…, TenantId)``."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from hub.core.pagination import Page, PageParams, fetch_page
from hub.core.paths import HANDLE_RE
from hub.core.readahead import ReadAhead
from hub.core.statements import read_row
from hub.core.tenancy import TENANT_PARAM, TenantId, scoped, scoped_template, tenant_params
from hub.models import DeploymentEntry, Server

__all__ = [
    "ROW_BY_HANDLE_AHEAD",
    "get_by_credential",
    "get_by_handle",
    "get_by_id",
    "get_by_ids",
    "handle_ever_used",
    "list_servers",
    "referencing_deployments",
    "row_by_handle",
]


_BY_HANDLE = scoped_template(Server).where(
    Server.handle == bindparam("handle"), Server.deleted_at.is_(None)
)
_BY_HANDLE_FOR_UPDATE = _BY_HANDLE.with_for_update()


_ROW_BY_HANDLE = select(Server.__table__).where(
    Server.__table__.c.tenant_id == bindparam(TENANT_PARAM),
    Server.__table__.c.handle == bindparam("handle"),
    Server.__table__.c.deleted_at.is_(None),
)


#: ``GET …/servers/{handle}``'s read, sent with the caller's key (:mod:`hub.core.readahead`)
ROW_BY_HANDLE_AHEAD = ReadAhead(
    _ROW_BY_HANDLE, path={"handle": "handle"}, patterns={"handle": HANDLE_RE}
)


async def row_by_handle(session: AsyncSession, tenant_id: TenantId, handle: str) -> Any:
    """The live server's columns as a row by name (None when absent), without an ORM object
    (for reads that only show it)."""
    params = tenant_params(tenant_id, handle=handle)
    return await read_row(session, _ROW_BY_HANDLE, params)


async def get_by_handle(
    session: AsyncSession, tenant_id: TenantId, handle: str, *, for_update: bool = False
) -> Server | None:
    query = _BY_HANDLE_FOR_UPDATE if for_update else _BY_HANDLE
    params = tenant_params(tenant_id, handle=handle)
    return (await session.execute(query, params)).scalar_one_or_none()


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


async def referencing_deployments(
    session: AsyncSession, tenant_id: TenantId, server_id: uuid.UUID, limit: int
) -> list[uuid.UUID]:
    """Up to ``limit + 1`` ids of the deployments with an entry for the server (the extra one
    says there are more than ``limit``)."""
    query = (
        select(DeploymentEntry.deployment_id)
        .where(DeploymentEntry.tenant_id == tenant_id.value, DeploymentEntry.server_id == server_id)
        .order_by(DeploymentEntry.deployment_id)
        .limit(limit + 1)
    )
    return list((await session.execute(query)).scalars())

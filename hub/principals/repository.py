"""Every principals and api_keys query. Tenant-owned queries start from ``scoped(…)``."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from hub.core.pagination import Page, PageParams, fetch_page
from hub.core.tenancy import TenantId, scoped
from hub.models import ApiKey, Deployment, Grant, Principal

__all__ = [
    "active_admin_ids",
    "deployments_of_agent",
    "get_key",
    "get_platform_admin_key",
    "get_principal",
    "grants_of",
    "list_keys",
    "list_principals",
    "platform_admins",
]


async def get_principal(
    session: AsyncSession, tenant_id: TenantId, principal_id: uuid.UUID
) -> Principal | None:
    query = scoped(Principal, tenant_id).where(Principal.id == principal_id)
    return (await session.execute(query)).scalar_one_or_none()


async def active_admin_ids(session: AsyncSession, tenant_id: TenantId) -> Sequence[uuid.UUID]:
    """The tenant's active tenant_admins, their rows locked until the transaction ends
    (PostgreSQL; SQLite's writes are serialised already), so two removals of admins cannot
    both see the other still there."""
    query = (
        scoped(Principal, tenant_id)
        .where(Principal.role == "tenant_admin", Principal.disabled_at.is_(None))
        .with_for_update()
    )
    return list((await session.execute(query.with_only_columns(Principal.id))).scalars())


async def list_principals(
    session: AsyncSession, tenant_id: TenantId, params: PageParams
) -> Page[Principal]:
    return await fetch_page(
        session, scoped(Principal, tenant_id), params, order=(Principal.created_at, Principal.id)
    )


async def ids_named(session: AsyncSession, tenant_id: TenantId, name: str) -> Sequence[uuid.UUID]:
    """The ids of the tenant's principals named ``name`` (names need not be unique), at most
    two: one answers, two say the name is ambiguous."""
    query = scoped(Principal, tenant_id).where(Principal.name == name).limit(2)
    return (await session.execute(query.with_only_columns(Principal.id))).scalars().all()


async def get_key(
    session: AsyncSession, tenant_id: TenantId, principal_id: uuid.UUID, key_id: uuid.UUID
) -> ApiKey | None:
    query = scoped(ApiKey, tenant_id).where(
        ApiKey.principal_id == principal_id, ApiKey.id == key_id
    )
    return (await session.execute(query)).scalar_one_or_none()


async def list_keys(
    session: AsyncSession, tenant_id: TenantId, principal_id: uuid.UUID, params: PageParams
) -> Page[ApiKey]:
    query = scoped(ApiKey, tenant_id).where(ApiKey.principal_id == principal_id)
    return await fetch_page(session, query, params, order=(ApiKey.created_at, ApiKey.id))


async def grants_of(
    session: AsyncSession, tenant_id: TenantId, principal_id: uuid.UUID
) -> Sequence[Grant]:
    query = scoped(Grant, tenant_id).where(Grant.principal_id == principal_id)
    return (await session.execute(query.order_by(Grant.created_at, Grant.id))).scalars().all()


# --- the platform admin lives outside tenants: these queries are explicitly unscoped ---


async def platform_admins(session: AsyncSession) -> Sequence[Principal]:
    query = select(Principal).where(
        Principal.is_platform_admin.is_(True), Principal.tenant_id.is_(None)
    )
    return (await session.execute(query)).scalars().all()


async def get_platform_principal(
    session: AsyncSession, principal_id: uuid.UUID
) -> Principal | None:
    query = select(Principal).where(
        Principal.id == principal_id, Principal.is_platform_admin.is_(True)
    )
    return (await session.execute(query)).scalar_one_or_none()


async def platform_ids_named(session: AsyncSession, name: str) -> Sequence[uuid.UUID]:
    """The ids of the platform admins named ``name``, at most two (as :func:`ids_named`)."""
    query = (
        select(Principal.id)
        .where(Principal.name == name, Principal.is_platform_admin.is_(True))
        .limit(2)
    )
    return (await session.execute(query)).scalars().all()


async def get_platform_admin_key(
    session: AsyncSession, principal_id: uuid.UUID, key_id: uuid.UUID
) -> ApiKey | None:
    query = select(ApiKey).where(
        ApiKey.id == key_id, ApiKey.principal_id == principal_id, ApiKey.tenant_id.is_(None)
    )
    return (await session.execute(query)).scalar_one_or_none()


async def list_platform_admin_keys(
    session: AsyncSession, principal_id: uuid.UUID, params: PageParams
) -> Page[ApiKey]:
    query = select(ApiKey).where(ApiKey.principal_id == principal_id, ApiKey.tenant_id.is_(None))
    return await fetch_page(session, query, params, order=(ApiKey.created_at, ApiKey.id))


#: At most this many deployments are listed in ``/whoami`` (an agent has a handful).
WHOAMI_DEPLOYMENTS = 200


async def deployments_of_agent(
    session: AsyncSession, tenant_id: TenantId, agent_id: uuid.UUID
) -> Sequence[Deployment]:
    """The deployments whose agent is ``agent_id``, oldest first, for ``/whoami``.

    A read of another domain's table from below it (principals sits under deployments, which
    imports it), like ``hub.authz``'s tenant lookup: ids and names only, tenant-scoped."""
    query = (
        scoped(Deployment, tenant_id)
        .where(Deployment.agent_id == agent_id)
        .order_by(Deployment.created_at, Deployment.id)
        .limit(WHOAMI_DEPLOYMENTS)
    )
    return (await session.execute(query)).scalars().all()

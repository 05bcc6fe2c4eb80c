"""Every drift-watch query. Tenant-owned queries start from ``scoped(…, TenantId)``; the one
cross-tenant query (which servers are due, for the system job) returns tenant ids for the job to
scope each server's work with."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, column, delete, or_, select, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncSession

from hub.core.tenancy import TenantId, scoped
from hub.models import Catalog, CatalogDrift, DeploymentEntry, Server, ServerProbe

__all__ = [
    "catalog_drift",
    "deployments_pinning",
    "drift_marks_all_tenants",
    "drift_marks_every_tenant",
    "due_servers",
    "forget_drift",
    "forget_unpinned",
    "get_probe",
    "pinned_catalogs",
]


async def due_servers(
    session: AsyncSession, tenant_id: TenantId, now: datetime, limit: int
) -> Sequence[uuid.UUID]:
    """The tenant's live servers some deployment references whose probe is due, the longest
    due first (never probed before all): the system job's work list for the tenant."""
    query = (
        select(Server.id)
        .where(
            Server.tenant_id == tenant_id.value,
            Server.deleted_at.is_(None),
            select(DeploymentEntry.id)
            .where(
                DeploymentEntry.tenant_id == Server.tenant_id,
                DeploymentEntry.server_id == Server.id,
            )
            .exists(),
        )
        .outerjoin(
            ServerProbe,
            and_(ServerProbe.tenant_id == Server.tenant_id, ServerProbe.server_id == Server.id),
        )
        .where(or_(ServerProbe.id.is_(None), ServerProbe.next_probe_at <= now))
        .order_by(ServerProbe.next_probe_at.is_not(None), ServerProbe.next_probe_at, Server.id)
        .limit(limit)
    )
    return list((await session.execute(query)).scalars().all())


async def get_probe(
    session: AsyncSession, tenant_id: TenantId, server_id: uuid.UUID, *, for_update: bool = False
) -> ServerProbe | None:
    query = scoped(ServerProbe, tenant_id).where(ServerProbe.server_id == server_id)
    if for_update:
        query = query.with_for_update()
    return (await session.execute(query)).scalar_one_or_none()


async def pinned_catalogs(
    session: AsyncSession, tenant_id: TenantId, server_id: uuid.UUID
) -> Sequence[Catalog]:
    """The catalog versions of ``server_id`` that some deployment entry pins."""
    pinned = (
        select(DeploymentEntry.catalog_id)
        .where(DeploymentEntry.tenant_id == tenant_id.value, DeploymentEntry.server_id == server_id)
        .distinct()
    )
    query = scoped(Catalog, tenant_id).where(Catalog.id.in_(pinned)).order_by(Catalog.version)
    return (await session.execute(query)).scalars().all()


async def deployments_pinning(
    session: AsyncSession, tenant_id: TenantId, catalog_id: uuid.UUID
) -> list[str]:
    query = (
        select(DeploymentEntry.deployment_id)
        .where(
            DeploymentEntry.tenant_id == tenant_id.value,
            DeploymentEntry.catalog_id == catalog_id,
        )
        .order_by(DeploymentEntry.deployment_id)
    )
    return [str(d) for d in (await session.execute(query)).scalars().all()]


async def catalog_drift(
    session: AsyncSession, tenant_id: TenantId, catalog_id: uuid.UUID
) -> CatalogDrift | None:
    query = scoped(CatalogDrift, tenant_id).where(CatalogDrift.catalog_id == catalog_id)
    return (await session.execute(query)).scalar_one_or_none()


async def forget_drift(
    session: AsyncSession,
    tenant_id: TenantId,
    server_id: uuid.UUID,
    keep: Sequence[uuid.UUID],
) -> None:
    """Drop the marks of the server's catalog versions no deployment pins any more."""
    await session.execute(
        delete(CatalogDrift)
        .where(
            CatalogDrift.tenant_id == tenant_id.value,
            CatalogDrift.server_id == server_id,
            CatalogDrift.catalog_id.not_in(list(keep)),
        )
        .execution_options(synchronize_session=False)
    )


async def forget_unpinned(session: AsyncSession) -> None:
    """Drop, in every tenant, the marks of catalog versions no deployment pins any more (a
    server no deployment references is not probed again, so its marks would otherwise stay)."""
    pinned = select(DeploymentEntry.catalog_id).where(
        DeploymentEntry.tenant_id == CatalogDrift.tenant_id,
        DeploymentEntry.catalog_id == CatalogDrift.catalog_id,
    )
    await session.execute(
        delete(CatalogDrift).where(~pinned.exists()).execution_options(synchronize_session=False)
    )


_MARKS_OF_EVERY_TENANT = text("SELECT marks FROM hub_pinned_drift_marks() AS marks").columns(
    column("marks", JSONB)
)


async def drift_marks_every_tenant(session: AsyncSession) -> list[dict[str, Any]]:
    """:func:`drift_marks_all_tenants` over every tenant at once, by the ``SECURITY DEFINER``
    ``hub_pinned_drift_marks()`` (PostgreSQL, migration 0904)."""
    return [dict(marks) for marks in (await session.execute(_MARKS_OF_EVERY_TENANT)).scalars()]


async def drift_marks_all_tenants(session: AsyncSession) -> list[dict[str, Any]]:
    """The marks (``{tool: record}``) of every catalog version some deployment pins, in every
    tenant the session may see (one tenant under row-level security)."""
    pinned = select(DeploymentEntry.id).where(
        DeploymentEntry.tenant_id == CatalogDrift.tenant_id,
        DeploymentEntry.catalog_id == CatalogDrift.catalog_id,
    )
    query = select(CatalogDrift.tools).where(pinned.exists())
    return [dict(tools) for tools in (await session.execute(query)).scalars().all()]

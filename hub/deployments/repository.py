"""Every deployments query. Tenant-owned queries start from ``scoped(…, TenantId)``."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from hub.core.pagination import Page, PageParams, fetch_page
from hub.core.tenancy import TenantId, scoped
from hub.models import Deployment, DeploymentEntry

__all__ = ["delete_entries", "entries_of", "get_deployment", "list_deployments"]


async def get_deployment(
    session: AsyncSession, tenant_id: TenantId, deployment_id: uuid.UUID
) -> Deployment | None:
    query = scoped(Deployment, tenant_id).where(Deployment.id == deployment_id)
    return (await session.execute(query)).scalar_one_or_none()


async def list_deployments(
    session: AsyncSession, tenant_id: TenantId, params: PageParams
) -> Page[Deployment]:
    return await fetch_page(
        session, scoped(Deployment, tenant_id), params, order=(Deployment.created_at, Deployment.id)
    )


async def entries_of(
    session: AsyncSession, tenant_id: TenantId, deployment_ids: Sequence[uuid.UUID]
) -> Sequence[DeploymentEntry]:
    if not deployment_ids:
        return ()
    query = (
        scoped(DeploymentEntry, tenant_id)
        .where(DeploymentEntry.deployment_id.in_(list(deployment_ids)))
        .order_by(DeploymentEntry.deployment_id, DeploymentEntry.position)
    )
    return (await session.execute(query)).scalars().all()


async def delete_entries(
    session: AsyncSession, tenant_id: TenantId, deployment_id: uuid.UUID
) -> None:
    await session.execute(
        delete(DeploymentEntry)
        .where(
            DeploymentEntry.tenant_id == tenant_id.value,
            DeploymentEntry.deployment_id == deployment_id,
        )
        .execution_options(synchronize_session=False)
    )

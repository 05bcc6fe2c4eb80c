"""Every deployments query. Tenant-owned queries start from ``scoped(…, TenantId)``."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, and_, bindparam, delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from hub.core.pagination import Page, PageParams, fetch_page
from hub.core.statements import read_row, read_rows
from hub.core.tenancy import TENANT_PARAM, TenantId, scoped, tenant_params
from hub.models import CatalogDrift, Deployment, DeploymentEntry, Principal, Server

#: one row of :data:`_VIEW_ROWS` (plain columns, read by name)
ViewRow = Row[*tuple[Any, ...]]

__all__ = [
    "VIEW_COLUMNS",
    "ViewRow",
    "delete_entries",
    "drift_marks",
    "entries_of",
    "get_deployment",
    "list_deployments",
    "view_rows",
]

_D, _E, _S = Deployment.__table__.c, DeploymentEntry.__table__.c, Server.__table__.c
_C = CatalogDrift.__table__.c
#: A deployment with its entries, their servers and the drift marks of their pinned catalog
#: versions in one statement, plain columns (the gateway reads it on every call): one row per
#: entry in order, or one row of NULL entry columns for a deployment without entries. ``drift``
#: maps each drifted tool of the entry's pinned version to its diff (NULL: none drifted), and a
#: tool is ``drifted`` exactly when it is a key there. Every table is joined on the tenant as well
#: as the id.
_VIEW_ROWS = (
    select(
        _D.agent_id,
        _E.catalog_id,
        _E.allow_without_ask,
        _E.arguments,
        _E.tool_names,
        _E.mode,
        _S.id.label("server_id"),
        _S.handle,
        _S.created_at,
        _S.url,
        _S.credential_id,
        _S.era,
        _C.tools.label("drift"),
        _C.updated_at.label("drift_at"),
    )
    .select_from(
        Deployment.__table__.outerjoin(
            DeploymentEntry.__table__,
            and_(_E.tenant_id == _D.tenant_id, _E.deployment_id == _D.id),
        )
        .outerjoin(Server.__table__, and_(_S.tenant_id == _E.tenant_id, _S.id == _E.server_id))
        .outerjoin(
            CatalogDrift.__table__,
            and_(_C.tenant_id == _E.tenant_id, _C.catalog_id == _E.catalog_id),
        )
    )
    .where(_D.tenant_id == bindparam(TENANT_PARAM), _D.id == bindparam("deployment_id"))
    .order_by(_E.position)
)


#: the typed columns of :data:`_VIEW_ROWS`, in order (the gateway's one read returns them too)
VIEW_COLUMNS = tuple(_VIEW_ROWS.selected_columns)


async def get_deployment(
    session: AsyncSession,
    tenant_id: TenantId,
    deployment_id: uuid.UUID,
    *,
    for_update: bool = False,
) -> Deployment | None:
    query = scoped(Deployment, tenant_id).where(Deployment.id == deployment_id)
    if for_update:  # a conditional update: the version compared is the one written over
        query = query.with_for_update()
    return (await session.execute(query)).scalar_one_or_none()


async def list_deployments(
    session: AsyncSession,
    tenant_id: TenantId,
    params: PageParams,
    *,
    agent_id: uuid.UUID | None = None,
) -> Page[Deployment]:
    query = scoped(Deployment, tenant_id)
    if agent_id is not None:
        query = query.where(Deployment.agent_id == agent_id)
    return await fetch_page(session, query, params, order=(Deployment.created_at, Deployment.id))


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


async def view_rows(
    session: AsyncSession, tenant_id: TenantId, deployment_id: uuid.UUID
) -> Sequence[ViewRow]:
    """The rows of :data:`_VIEW_ROWS` for one deployment (none when it does not exist)."""
    params = tenant_params(tenant_id, deployment_id=deployment_id)
    return await read_rows(session, _VIEW_ROWS, params)  # Core: on every gateway call


async def drift_marks(
    session: AsyncSession, tenant_id: TenantId, catalog_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, dict[str, Any]]:
    """The drift marks (``{tool name: diff}``) of these catalog versions that have any."""
    if not catalog_ids:
        return {}
    query = scoped(CatalogDrift, tenant_id).where(CatalogDrift.catalog_id.in_(list(catalog_ids)))
    rows = (await session.execute(query)).scalars().all()
    return {row.catalog_id: dict(row.tools) for row in rows}


_P = Principal.__table__.c
_SIDECAR = (
    select(_P.id, _P.grants_version)
    .select_from(
        Deployment.__table__.join(
            Principal.__table__, and_(_P.tenant_id == _D.tenant_id, _P.id == _D.sidecar_id)
        )
    )
    .where(
        _D.tenant_id == bindparam(TENANT_PARAM),
        _D.id == bindparam("deployment_id"),
        _P.disabled_at.is_(None),
    )
)


async def sidecar_of(
    session: AsyncSession, tenant_id: TenantId, deployment_id: uuid.UUID
) -> tuple[uuid.UUID, int] | None:
    """The deployment's sidecar principal and its ``grants_version``: None when it names none,
    or the principal is disabled (one plain read)."""
    row = await read_row(session, _SIDECAR, tenant_params(tenant_id, deployment_id=deployment_id))
    return None if row is None else (uuid.UUID(str(row[0])), int(row[1]))

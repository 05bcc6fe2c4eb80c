"""Tenant rules: unique slugs, disable instead of delete, every change audited."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from hub.audit.actions import Action
from hub.audit.service import record
from hub.core import clock
from hub.core.errors import Conflict, NotFound
from hub.core.pagination import Page, PageParams
from hub.core.paths import is_canonical_id, is_slug
from hub.core.tenancy import TenantId, system_scope
from hub.models import Tenant
from hub.tenants import repository
from hub.tenants.schemas import TenantCreate, TenantUpdate

__all__ = [
    "create_tenant",
    "disable_tenant",
    "get_tenant",
    "list_tenants",
    "resolve_tenant",
    "tenant_exists",
    "update_tenant",
]


async def tenant_exists(session: AsyncSession, tenant_id: uuid.UUID) -> bool:
    return await repository.get_tenant(session, tenant_id) is not None


def _scope(tenant: Tenant) -> TenantId:
    return system_scope(tenant.id, reason="platform admin acts on this tenant")


async def create_tenant(
    session: AsyncSession, actor_id: uuid.UUID, request_id: str, data: TenantCreate
) -> Tenant:
    if await repository.get_by_slug(session, data.slug) is not None:
        raise Conflict("a tenant with this slug exists")
    tenant = Tenant(
        id=uuid.uuid4(), slug=data.slug, name=data.name, status="active", created_at=clock.now()
    )
    session.add(tenant)
    await session.flush()
    await record(
        session,
        tenant_id=_scope(tenant),
        actor_id=actor_id,
        action=Action.TENANT_CREATE,
        resource=f"tenant:{tenant.id}",
        request_id=request_id,
        details={"slug": tenant.slug},
    )
    return tenant


async def get_tenant(session: AsyncSession, tenant_id: uuid.UUID) -> Tenant:
    tenant = await repository.get_tenant(session, tenant_id)
    if tenant is None:
        raise NotFound("tenant not found")
    return tenant


async def resolve_tenant(session: AsyncSession, ref: str) -> Tenant:
    """The tenant a platform path's ``{t}`` names, by canonical id or by slug (DESIGN §14);
    anything else reads as 404."""
    tenant = None
    if is_canonical_id(ref):
        tenant = await repository.get_tenant(session, uuid.UUID(ref))
    elif is_slug(ref):
        tenant = await repository.get_by_slug(session, ref)
    if tenant is None:
        raise NotFound("tenant not found")
    return tenant


async def list_tenants(session: AsyncSession, params: PageParams) -> Page[Tenant]:
    return await repository.list_tenants(session, params)


async def update_tenant(
    session: AsyncSession,
    actor_id: uuid.UUID,
    request_id: str,
    tenant: Tenant,
    data: TenantUpdate,
) -> Tenant:
    """Rename (name or slug), disable or re-enable; a slug another tenant has is 409."""
    changes = data.model_dump(exclude_unset=True, exclude_none=True)
    slug = changes.get("slug")
    renaming = slug is not None and slug != tenant.slug
    if renaming and await repository.get_by_slug(session, str(slug)) is not None:
        raise Conflict("a tenant with this slug exists")
    for field, value in changes.items():
        setattr(tenant, field, value)
    await session.flush()
    await record(
        session,
        tenant_id=_scope(tenant),
        actor_id=actor_id,
        action=Action.TENANT_UPDATE,
        resource=f"tenant:{tenant.id}",
        request_id=request_id,
        details={"fields": sorted(changes), "slug": tenant.slug},
    )
    return tenant


async def disable_tenant(
    session: AsyncSession, actor_id: uuid.UUID, request_id: str, tenant: Tenant
) -> None:
    tenant.status = "disabled"
    await session.flush()
    await record(
        session,
        tenant_id=_scope(tenant),
        actor_id=actor_id,
        action=Action.TENANT_DISABLE,
        resource=f"tenant:{tenant.id}",
        request_id=request_id,
    )

"""Platform routes: tenants (platform admin only; tenant principals get 403)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Response

from hub.authz.deps import PlatformAdminDep
from hub.authz.throttle import rest_router
from hub.core.deps import SessionDep
from hub.core.pagination import PageParamsDep
from hub.core.schemas import Envelope, ListEnvelope
from hub.tenants import service
from hub.tenants.schemas import TenantCreate, TenantRead, TenantUpdate

router = rest_router(prefix="/tenants", tags=["tenants"])

#: ``{t}`` takes a tenant's id or its slug (DESIGN §14).
TenantRef = Annotated[str, Path(description="Tenant id or slug")]


@router.post("", status_code=201, name="tenant.create")
async def create_tenant(
    body: TenantCreate, caller: PlatformAdminDep, session: SessionDep
) -> Envelope[TenantRead]:
    """Create a tenant."""
    tenant = await service.create_tenant(session, caller.principal_id, caller.request_id, body)
    return Envelope(data=TenantRead.model_validate(tenant))


@router.get("", name="tenant.list")
async def list_tenants(
    caller: PlatformAdminDep, session: SessionDep, page: PageParamsDep
) -> ListEnvelope[TenantRead]:
    """List tenants."""
    return ListEnvelope.of(await service.list_tenants(session, page), TenantRead)


@router.get("/{t}", name="tenant.get")
async def get_tenant(
    t: TenantRef, caller: PlatformAdminDep, session: SessionDep
) -> Envelope[TenantRead]:
    """Get a tenant."""
    tenant = await service.resolve_tenant(session, t)
    return Envelope(data=TenantRead.model_validate(tenant))


@router.patch("/{t}", name="tenant.update")
async def update_tenant(
    t: TenantRef, body: TenantUpdate, caller: PlatformAdminDep, session: SessionDep
) -> Envelope[TenantRead]:
    """Rename a tenant (its name or slug), disable or re-enable it."""
    tenant = await service.resolve_tenant(session, t)
    tenant = await service.update_tenant(
        session, caller.principal_id, caller.request_id, tenant, body
    )
    return Envelope(data=TenantRead.model_validate(tenant))


@router.delete("/{t}", status_code=204, name="tenant.disable")
async def disable_tenant(t: TenantRef, caller: PlatformAdminDep, session: SessionDep) -> Response:
    """Disable a tenant (tenants are never deleted); its keys stop working at once."""
    tenant = await service.resolve_tenant(session, t)
    await service.disable_tenant(session, caller.principal_id, caller.request_id, tenant)
    return Response(status_code=204)

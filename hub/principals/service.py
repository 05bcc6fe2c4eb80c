"""Principal rules: role templates become grants, no escalation, soft delete, audit."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from hub.audit.service import record_for
from hub.auth.caller import TenantAccess
from hub.core import clock
from hub.core.errors import NotFound
from hub.core.pagination import Page, PageParams, page_of
from hub.grants import service as grants_service
from hub.grants.cache import PolicyCache
from hub.models import Grant, Principal
from hub.principals import repository
from hub.principals.schemas import PrincipalCreate, PrincipalUpdate

__all__ = [
    "create_principal",
    "delete_principal",
    "get_principal",
    "list_principals",
    "principal_grants",
    "update_principal",
]


async def create_principal(
    session: AsyncSession, cache: PolicyCache, access: TenantAccess, data: PrincipalCreate
) -> Principal:
    await grants_service.ensure_may_assign_role(session, cache, access, data.role)
    principal = Principal(
        id=uuid.uuid4(),
        tenant_id=access.tenant_id.value,
        kind=data.kind,
        name=data.name,
        role=data.role,
        is_platform_admin=False,
        grants_version=0,
        created_at=clock.now(),
    )
    session.add(principal)
    await session.flush()
    await grants_service.apply_role_template(
        session, access.tenant_id, principal.id, data.role, access.actor_id
    )
    await session.refresh(principal)
    await record_for(
        session,
        access,
        "principal.create",
        f"principal:{principal.id}",
        {"kind": data.kind, "role": data.role},
    )
    return principal


async def get_principal(
    session: AsyncSession, access: TenantAccess, principal_id: uuid.UUID
) -> Principal:
    principal = await repository.get_principal(session, access.tenant_id, principal_id)
    if principal is None:
        raise NotFound("principal not found")
    return principal


async def list_principals(
    session: AsyncSession, access: TenantAccess, params: PageParams
) -> Page[Principal]:
    rows = await repository.list_principals(session, access.tenant_id, params)
    return page_of(rows, params, lambda p: (p.created_at, p.id))


async def update_principal(
    session: AsyncSession, access: TenantAccess, principal_id: uuid.UUID, data: PrincipalUpdate
) -> Principal:
    principal = await get_principal(session, access, principal_id)
    changes = data.model_dump(exclude_unset=True, exclude_none=True)
    for field, value in changes.items():
        setattr(principal, field, value)
    await session.flush()
    await record_for(
        session,
        access,
        "principal.update",
        f"principal:{principal.id}",
        {"fields": sorted(changes)},
    )
    return principal


async def delete_principal(
    session: AsyncSession, access: TenantAccess, principal_id: uuid.UUID
) -> None:
    """Soft delete: the principal stays readable with status ``disabled``; its keys stop working."""
    principal = await get_principal(session, access, principal_id)
    if principal.disabled_at is None:
        principal.disabled_at = clock.now()
        await session.flush()
    await record_for(
        session,
        access,
        "principal.delete",
        f"principal:{principal.id}",
    )


async def principal_grants(
    session: AsyncSession, access: TenantAccess, principal_id: uuid.UUID
) -> list[Grant]:
    return list(await repository.grants_of(session, access.tenant_id, principal_id))

"""Principal rules: role templates become grants, no escalation, soft delete, audit."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from hub.audit.actions import Action
from hub.audit.service import record_for
from hub.auth.caller import Caller, TenantAccess
from hub.core import clock
from hub.core.errors import BadRequest, Conflict, NotFound, Unauthorized
from hub.core.pagination import Page, PageParams
from hub.core.tenancy import TenantId
from hub.grants import service as grants_service
from hub.grants.cache import PolicyCache
from hub.grants.schemas import GrantRead
from hub.models import Grant, Principal
from hub.principals import repository
from hub.principals.schemas import (
    OwnDeployment,
    PrincipalCreate,
    PrincipalRead,
    PrincipalUpdate,
    WhoAmI,
)
from hub.tenants import service as tenants_service

__all__ = [
    "create_principal",
    "delete_principal",
    "get_principal",
    "list_principals",
    "principal_grants",
    "principal_label",
    "update_principal",
    "whoami",
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
        Action.PRINCIPAL_CREATE,
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


async def principal_label(
    session: AsyncSession, tenant_id: TenantId, principal_id: uuid.UUID
) -> str | None:
    """The name of a principal of ``tenant_id``, or of the platform admin (who acts in every
    tenant); ``None`` when there is neither (for pages that name who started something)."""
    principal = await repository.get_principal(session, tenant_id, principal_id)
    if principal is None:
        principal = await repository.get_platform_principal(session, principal_id)
    return principal.name if principal is not None else None


async def caller_name(session: AsyncSession, caller: Caller) -> str | None:
    """The signed-in caller's own name (the console's header says who is signed in)."""
    if caller.tenant_id is None:
        principal = await repository.get_platform_principal(session, caller.principal_id)
        return principal.name if principal is not None else None
    return await principal_label(session, caller.tenant_id, caller.principal_id)


async def principal_named(session: AsyncSession, tenant_id: TenantId, name: str) -> uuid.UUID:
    """The id of the tenant's one principal named ``name``; 400 when none or several are."""
    found = await repository.ids_named(session, tenant_id, name)
    if not found:
        raise BadRequest(f"no principal is named {name!r}")
    if len(found) > 1:
        raise BadRequest(f"several principals are named {name!r}; give the id")
    return found[0]


async def actor_ids_named(
    session: AsyncSession, tenant_id: TenantId, name: str
) -> Sequence[uuid.UUID]:
    """Who ``name`` may name as an audit row's actor: the tenant's principals so named, else the
    platform admins so named (who act in every tenant, as :func:`principal_label` names them);
    at most two, as :func:`hub.principals.repository.ids_named`."""
    found = await repository.ids_named(session, tenant_id, name)
    return found or await repository.platform_ids_named(session, name)


async def list_principals(
    session: AsyncSession, access: TenantAccess, params: PageParams
) -> Page[Principal]:
    return await repository.list_principals(session, access.tenant_id, params)


async def update_principal(
    session: AsyncSession, access: TenantAccess, principal_id: uuid.UUID, data: PrincipalUpdate
) -> Principal:
    principal = await get_principal(session, access, principal_id)
    await grants_service.ensure_may_manage(session, access, principal)
    changes = data.model_dump(exclude_unset=True, exclude_none=True)
    for field, value in changes.items():
        setattr(principal, field, value)
    await session.flush()
    await record_for(
        session,
        access,
        Action.PRINCIPAL_UPDATE,
        f"principal:{principal.id}",
        {"fields": sorted(changes)},
    )
    return principal


async def delete_principal(
    session: AsyncSession, access: TenantAccess, principal_id: uuid.UUID
) -> None:
    """Soft delete: the principal stays readable with status ``disabled``; its keys stop working.
    The tenant's last active tenant_admin is kept (409 ``last_admin``): without one, only the
    platform admin could manage the tenant again."""
    principal = await get_principal(session, access, principal_id)
    await grants_service.ensure_may_manage(session, access, principal)
    if principal.disabled_at is None and principal.role == "tenant_admin":
        admins = await repository.active_admin_ids(session, access.tenant_id)
        if [a for a in admins if a != principal.id] == []:
            raise Conflict(
                "a tenant keeps at least one active tenant_admin: make another first "
                "(to end the tenant itself, delete the tenant)",
                reason="last_admin",
            )
    if principal.disabled_at is None:
        principal.disabled_at = clock.now()
        await session.flush()
    await record_for(
        session,
        access,
        Action.PRINCIPAL_DELETE,
        f"principal:{principal.id}",
    )


async def principal_grants(
    session: AsyncSession, access: TenantAccess, principal_id: uuid.UUID
) -> list[Grant]:
    return list(await repository.grants_of(session, access.tenant_id, principal_id))


async def whoami(session: AsyncSession, caller: Caller) -> WhoAmI:
    """The calling principal, its tenant (id and slug), its grants (none for the platform admin)
    and, for an agent, the deployments it is the agent of (DESIGN §14)."""
    slug = None
    deployments: list[OwnDeployment] = []
    if caller.tenant_id is None:
        principal = await repository.get_platform_principal(session, caller.principal_id)
        grants: list[Grant] = []
    else:
        principal = await repository.get_principal(session, caller.tenant_id, caller.principal_id)
        grants = list(await repository.grants_of(session, caller.tenant_id, caller.principal_id))
        slug = (await tenants_service.get_tenant(session, caller.tenant_id.value)).slug
        if caller.kind == "agent":
            rows = await repository.deployments_of_agent(
                session, caller.tenant_id, caller.principal_id
            )
            deployments = [
                OwnDeployment(
                    id=row.id,
                    name=row.name,
                    mcp_path=f"/tenants/{caller.tenant_id.value}/deployments/{row.id}/mcp",
                    created_at=row.created_at,
                    updated_at=row.updated_at,
                )
                for row in rows
            ]
    if principal is None:  # deleted between authentication and now
        raise Unauthorized()
    return WhoAmI(
        principal=PrincipalRead.model_validate(principal),
        tenant_id=caller.tenant_id.value if caller.tenant_id else None,
        tenant_slug=slug,
        is_platform_admin=caller.is_platform_admin,
        grants=[GrantRead.model_validate(g) for g in grants],
        deployments=deployments,
    )

"""Who may grant what: role protection and no escalation (DESIGN §8)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from hub.auth.caller import TenantAccess
from hub.core import clock
from hub.core.errors import Forbidden
from hub.grants import repository
from hub.grants.cache import PolicyCache
from hub.grants.loading import load_policy
from hub.grants.policy import may_confer
from hub.grants.templates import ROLE_TEMPLATES
from hub.models import Principal

__all__ = [
    "ensure_may_act_as",
    "ensure_may_assign_role",
    "ensure_may_confer",
    "ensure_may_manage",
    "is_tenant_admin",
]


def is_tenant_admin(principal: Principal) -> bool:
    """Who counts as a tenant_admin (DESIGN §8): created with that role and not disabled."""
    return principal.role == "tenant_admin" and principal.disabled_at is None


async def ensure_may_manage(
    session: AsyncSession, access: TenantAccess, principal: Principal | uuid.UUID
) -> None:
    """Role protection (DESIGN §8): only a tenant_admin (or the platform admin) may create,
    change or delete the grants, keys or principal row of a tenant_admin."""
    if access.caller.is_platform_admin or access.caller.is_tenant_admin:
        return
    if isinstance(principal, uuid.UUID):
        found = await repository.get_principal(session, access.tenant_id, principal)
        if found is None:
            return  # the caller's own lookup answers 404
        principal = found
    if is_tenant_admin(principal):
        raise Forbidden("only a tenant_admin may act on a tenant_admin")


async def ensure_may_confer(
    session: AsyncSession,
    cache: PolicyCache,
    access: TenantAccess,
    grants: Sequence[tuple[str, str, str]],
    expires_at: object = None,
) -> None:
    if access.caller.is_platform_admin:
        return
    holder = await load_policy(session, cache, access.tenant_id, access.caller.principal_id)
    now = clock.now()
    for resource, action, effect in grants:
        if effect == "deny":
            continue  # a deny confers nothing
        if not may_confer(holder, resource, action, now, expires_at=expires_at):  # type: ignore[arg-type]
            raise Forbidden("a grant may only confer what its creator holds")


async def ensure_may_assign_role(
    session: AsyncSession, cache: PolicyCache, access: TenantAccess, role: str | None
) -> None:
    """Creating a principal with ``role`` needs everything the role confers; only a
    tenant_admin (or the platform admin) may create a tenant_admin."""
    if role is None or access.caller.is_platform_admin:
        return
    if role == "tenant_admin" and not access.caller.is_tenant_admin:
        raise Forbidden("only a tenant_admin may create a tenant_admin")
    await ensure_may_confer(session, cache, access, ROLE_TEMPLATES[role])


async def ensure_may_act_as(
    session: AsyncSession, cache: PolicyCache, access: TenantAccess, principal_id: uuid.UUID
) -> None:
    """Minting a key for another principal hands on all of its power: the caller must hold it."""
    if access.caller.is_platform_admin or principal_id == access.actor_id:
        return
    await ensure_may_manage(session, access, principal_id)
    _version, rows = await repository.rule_rows_of(session, access.tenant_id, principal_id)
    now = clock.now()
    live = [
        (resource, action, effect)
        for _id, resource, action, effect, expires_at, _conditions in rows
        if expires_at is None or expires_at > now
    ]
    await ensure_may_confer(session, cache, access, live)

"""Whether a claimed authorization may still complete: its tenant and its initiator, read again.

An authorization lives up to ``HUB_OAUTH_STATE_TTL_S`` between its start and its callback, and
the callback has no API key: the state is its only capability. Whatever allowed the start could
change meanwhile — the tenant disabled, the initiating principal deleted (disabled), a grant it
relied on removed — and the callback then stored and bound a credential nobody may make any more
(a walk, stop 53). So after the claim, before any token request, :func:`refusal` reads them again
and names the refusal, as a new request would be refused:

- the tenant is not ``active``: ``tenant_disabled``;
- the initiator is disabled or gone: ``initiator_disabled``;
- the initiator no longer holds, now, each permission :mod:`hub.oauth.flow` required when it
  started (``credential:*`` write, the route's; ``server:<handle>`` write for a server's flow;
  ``credential:<id>`` write for a credential re-authorised in place, and its ``use`` for a
  step-up): ``initiator_forbidden``. The platform admin, not disabled, holds every permission.

A server deleted since the start is not checked here (nothing is bound to it then).
"""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from hub.core import clock, rls
from hub.core.db import Database
from hub.core.tenancy import TenantId
from hub.grants import service as grants_service
from hub.grants.cache import PolicyCache
from hub.models import OAuthAuthorization
from hub.oauth import repository
from hub.servers import service as servers_service
from hub.tenants import service as tenants_service

__all__ = ["refusal"]


async def _needed(
    session: AsyncSession, tenant_id: TenantId, row: OAuthAuthorization
) -> list[tuple[str, str]]:
    """The ``(resource, action)`` pairs the flow's start required (:mod:`hub.oauth.flow`)."""
    needed = [("credential:*", "write")]
    if row.server_id is not None:
        server = await servers_service.get_server_by_id(session, tenant_id, row.server_id)
        if server is not None:
            needed.append((f"server:{server.handle}", "write"))
    if row.credential_id is not None:
        needed.append((f"credential:{row.credential_id}", "write"))
        if row.step_up:
            needed.append((f"credential:{row.credential_id}", "use"))
    return needed


async def _platform_admin_active(db: Database, principal_id: uuid.UUID) -> bool | None:
    """``None`` when ``principal_id`` is no platform admin; else whether it is not disabled
    (its row belongs to no tenant: read in the platform's row-level-security scope)."""
    with rls.scope(rls.PLATFORM):
        async with db.session(write=False) as read:
            admin = await repository.get_platform_principal(read, principal_id)
    return None if admin is None else admin.disabled_at is None


async def refusal(
    db: Database, policies: PolicyCache, tenant_id: TenantId, row: OAuthAuthorization
) -> str | None:
    """The reason the claimed flow ``row`` may not complete now, or ``None`` (module docstring)."""
    async with db.session(write=False) as read:
        tenant = await tenants_service.get_tenant(read, tenant_id.value)
        if tenant.status != "active":
            return "tenant_disabled"
        principal = await repository.get_principal(read, tenant_id, row.initiator_id)
        if principal is not None:
            if principal.disabled_at is not None:
                return "initiator_disabled"
            policy = await grants_service.load_policy(read, policies, tenant_id, principal.id)
            now = clock.now()
            for resource, action in await _needed(read, tenant_id, row):
                if policy.decide(resource, action, now).effect != "allow":
                    return "initiator_forbidden"
            return None
    admin_active = await _platform_admin_active(db, row.initiator_id)
    return None if admin_active else "initiator_disabled"

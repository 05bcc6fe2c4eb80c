"""Authorisation dependencies, in the order of DESIGN §8.

Item routes check ``kind:<id>``; list and create routes check ``kind:*``; the platform admin
passes every tenant route and only the platform admin passes platform routes. Every read they need
(does the tenant exist, the caller's grants when its compiled policy is not cached) runs on the
request's session, as :func:`hub.core.db.preliminary_reads`.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Annotated, Any

from fastapi import Depends, Path, Request, Response
from sqlalchemy.ext.asyncio import AsyncSession

from hub.auth.caller import Caller, TenantAccess
from hub.auth.deps import CallerDep, caller_of
from hub.authz import repository
from hub.authz.decider import Effect, RouteDecider
from hub.authz.throttle import enforce
from hub.core import rls
from hub.core.components import components_of
from hub.core.db import preliminary_reads
from hub.core.deps import session_of
from hub.core.errors import Forbidden, NotFound
from hub.core.metrics import Metrics
from hub.core.paths import canonical_handle, canonical_id, is_canonical_id, is_slug
from hub.core.tenancy import TenantId
from hub.ratelimit import LimitKind

__all__ = [
    "PlatformAdminDep",
    "TenantAccessDep",
    "authorize",
    "decide_for_route",
    "get_tenant_access",
    "item_resource",
    "require",
    "tenant_access_of",
    "tenant_of_path",
]

#: the path parameter every tenant route names its tenant with
TenantPath = Annotated[str, Path(description="Tenant id or slug")]


async def require_platform_admin(caller: CallerDep) -> Caller:
    if not caller.is_platform_admin:
        raise Forbidden("platform admin only")
    return caller


PlatformAdminDep = Annotated[Caller, Depends(require_platform_admin)]


async def tenant_of_path(session: AsyncSession, t: str) -> uuid.UUID | None:
    """The existing tenant ``{t}`` names — by canonical id or by slug (DESIGN §14) — or None.
    Slugs never parse as a UUID, so the two cannot be confused; a non-canonical id spelling is
    neither (404, as for every path id)."""
    async with preliminary_reads(session):
        if is_canonical_id(t):
            tenant_uuid = uuid.UUID(t)
            return tenant_uuid if await repository.tenant_exists(session, tenant_uuid) else None
        if is_slug(t):
            return await repository.tenant_id_by_slug(session, t)
    return None


async def get_tenant_access(request: Request, caller: CallerDep, t: TenantPath) -> TenantAccess:
    """The tenant ``{t}`` the caller acts in (a dependency; 404 for one it may not see)."""
    return await tenant_access_of(request, caller, t)


async def tenant_access_of(request: Request, caller: Caller, t: str) -> TenantAccess:
    """:func:`get_tenant_access` as a plain call, on the request's session."""
    session = session_of(request)  # the caller's dependency opened it
    own = caller.tenant_id
    if own is not None and t == str(own.value):  # its own tenant by id: no query needed
        return _with_checker(request, session, TenantAccess(caller, own))
    if not caller.is_platform_admin and is_canonical_id(t):
        raise NotFound("tenant not found")  # another tenant's id (no query: nothing to learn)
    tenant_uuid = await tenant_of_path(session, t)
    if tenant_uuid is None:
        raise NotFound("tenant not found")
    if caller.is_platform_admin:
        # the platform admin's path resolution mints the tenant it acts in, and enters its scope
        tenant = TenantId._mint(tenant_uuid)
        await rls.enter(session, tenant)
        return _with_checker(request, session, TenantAccess(caller, tenant))
    if own is None or own.value != tenant_uuid:
        raise NotFound("tenant not found")  # another tenant's id or slug reads as an absent one
    return _with_checker(request, session, TenantAccess(caller, own))


def _with_checker(request: Request, session: AsyncSession, access: TenantAccess) -> TenantAccess:
    """``access`` that can ask about further objects the request names, as routes do."""

    async def check(resource: str, action: str) -> str:
        return await decide_for_route(request, session, access, resource, action)

    return dataclasses.replace(access, checker=check)


TenantAccessDep = Annotated[TenantAccess, Depends(get_tenant_access)]


async def decide_for_route(
    request: Request, session: AsyncSession, access: TenantAccess, resource: str, action: str
) -> Effect:
    """The caller's grant decision for a hub route (counted by effect in the metrics)."""
    parts = components_of(request.app)
    effect = await parts.get(RouteDecider).decide(session, access, resource, action)
    parts.get(Metrics).decisions.labels(effect=effect).inc()
    return effect


#: Kinds whose objects are named by handle in paths (servers, and catalogs by their server).
HANDLE_KINDS = frozenset({"server", "catalog"})


def item_resource(kind: str, raw: str) -> str:
    """``kind:<canonical id>`` for a path's object; a non-canonical spelling is 404 here, before
    any decision, so a decision is never taken on text other than the object's own id."""
    qualifier = canonical_handle(raw) if kind in HANDLE_KINDS else canonical_id(raw)
    return f"{kind}:{qualifier}"


async def require(
    request: Request, session: AsyncSession, access: TenantAccess, resource: str, action: str
) -> None:
    """403, naming what was refused, unless the caller's decision is ``allow``."""
    if await decide_for_route(request, session, access, resource, action) != "allow":
        raise Forbidden.refused(resource, action)


def authorize(
    kind: str,
    action: str,
    item: str | None = None,
    *,
    tenant_admin_passes: bool = False,
    limit: LimitKind | None = None,
) -> Any:
    """A dependency admitting the caller when its decision on the route's resource is ``allow``.

    ``item`` names the path parameter holding the object (checked as ``kind:<canonical id>``);
    without it the route checks ``kind:*`` (``audit`` is a resource without a qualifier).
    ``tenant_admin_passes`` admits a tenant_admin whatever its grants say (deleting a grant: no
    grant may lock every admin out, DESIGN §8). ``limit`` then counts the request in that
    per-tenant rate-limit class (``discovery``, ``snapshot``): after the decision, so a refused
    caller never spends the tenant's budget.
    """

    async def authorize_dependency(
        request: Request, response: Response, t: TenantPath
    ) -> TenantAccess:
        # one node of the route's dependency tree: the caller was authenticated by the
        # router's first dependency (hub.authz.throttle.rest_rate_limit), on the request's
        # session, which it opened
        access = await tenant_access_of(request, await caller_of(request), t)
        session = session_of(request)
        if kind == "audit":
            resource = "audit"
        elif item is not None:
            resource = item_resource(kind, request.path_params[item])
        else:
            resource = f"{kind}:*"
        if not (tenant_admin_passes and access.caller.is_tenant_admin):
            await require(request, session, access, resource, action)
        if limit is not None:
            await enforce(request, response, limit, str(access.tenant_id.value))
        return access

    return Depends(authorize_dependency)

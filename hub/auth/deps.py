"""Authentication and authorisation dependencies, in the order of DESIGN §8.

401 (no valid key) → 404 if the caller's tenant is not ``{t}`` → 403 if the grant decision is not
``allow`` → (in the service) 404 if the object is absent from ``{t}``. Item routes check
``kind:<id>``; list and create routes check ``kind:*``; the platform admin passes every tenant
route and only the platform admin passes platform routes.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import Depends, Path, Request

from hub.auth.caller import Caller, TenantAccess
from hub.auth.service import authenticate
from hub.core.deps import get_database
from hub.core.errors import Forbidden, NotFound, Unauthorized
from hub.core.logging import bind_context
from hub.core.tenancy import TenantId
from hub.grants import service as grants_service
from hub.grants.cache import PolicyCache
from hub.grants.policy import Decision
from hub.tenants import service as tenants_service

__all__ = [
    "CallerDep",
    "PlatformAdminDep",
    "PolicyCacheDep",
    "TenantAccessDep",
    "authorize",
    "decide_for_route",
    "get_caller",
    "get_tenant_access",
    "parse_id",
]


def parse_id(value: str) -> uuid.UUID:
    """A path id; a malformed one reads as 404, like an absent one (DESIGN §13)."""
    try:
        return uuid.UUID(value)
    except ValueError:
        raise NotFound() from None


def _presented_key(request: Request) -> str | None:
    authorization = request.headers.get("authorization")
    api_key = request.headers.get("x-api-key")
    bearer = None
    if authorization is not None:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise Unauthorized()
        bearer = value.strip()
    if bearer is not None and api_key is not None and bearer != api_key:
        raise Unauthorized()
    return bearer if bearer is not None else api_key


async def get_caller(request: Request) -> Caller:
    cached: Caller | None = getattr(request.state, "caller", None)
    if cached is not None:
        return cached
    settings = request.app.state.settings
    pepper = settings.api_key_pepper.get_secret_value().encode()
    caller = await authenticate(
        get_database(request), pepper, _presented_key(request), request.state.request_id
    )
    request.state.caller = caller
    bind_context(
        principal_id=str(caller.principal_id),
        tenant_id=str(caller.tenant_id) if caller.tenant_id else None,
    )
    return caller


CallerDep = Annotated[Caller, Depends(get_caller)]


async def require_platform_admin(caller: CallerDep) -> Caller:
    if not caller.is_platform_admin:
        raise Forbidden("platform admin only")
    return caller


PlatformAdminDep = Annotated[Caller, Depends(require_platform_admin)]


async def get_tenant_access(
    request: Request,
    caller: CallerDep,
    t: Annotated[str, Path(description="Tenant id")],
) -> TenantAccess:
    tenant_uuid = parse_id(t)
    if caller.is_platform_admin:
        async with get_database(request).session(write=False) as session:
            if not await tenants_service.tenant_exists(session, tenant_uuid):
                raise NotFound()
        # the platform admin's path resolution mints the tenant it acts in
        return TenantAccess(caller, TenantId._mint(tenant_uuid))
    if caller.tenant_id is None or caller.tenant_id.value != tenant_uuid:
        raise NotFound()
    return TenantAccess(caller, caller.tenant_id)


TenantAccessDep = Annotated[TenantAccess, Depends(get_tenant_access)]


def policy_cache(request: Request) -> PolicyCache:
    cache: PolicyCache = request.app.state.policy_cache
    return cache


async def decide_for_route(
    request: Request, access: TenantAccess, resource: str, action: str
) -> Decision:
    """The caller's grant decision for a hub route (counted by effect in the metrics)."""
    decision = await grants_service.decide(
        get_database(request), policy_cache(request), access, resource, action
    )
    request.app.state.metrics.decisions.labels(effect=decision.effect).inc()
    return decision


PolicyCacheDep = Annotated[PolicyCache, Depends(policy_cache)]


def authorize(kind: str, action: str, item: str | None = None) -> Any:
    """A dependency admitting the caller when its decision on the route's resource is ``allow``.

    ``item`` names the path parameter holding the object (checked as ``kind:<value>``); without it
    the route checks ``kind:*`` (``audit`` is a resource without a qualifier).
    """

    async def dependency(request: Request, access: TenantAccessDep) -> TenantAccess:
        if kind == "audit":
            resource = "audit"
        elif item is not None:
            resource = f"{kind}:{request.path_params[item]}"
        else:
            resource = f"{kind}:*"
        decision = await decide_for_route(request, access, resource, action)
        if decision.effect != "allow":
            raise Forbidden()
        return access

    return Depends(dependency)


FailureHook = Callable[[Request, Exception], Awaitable[None]]

"""Router wiring: every domain's routes, mounted once.

Every authenticated REST router is mounted with :func:`~hub.authz.throttle.rest_rate_limit`
(class ``rest``, per principal, after authentication) and documents its 429; the probes and
``/metrics`` are not limited. The agents' MCP endpoint is not a REST router: it limits tool calls
itself (class ``tool_call``) and answers in JSON-RPC.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends

from hub.approvals.endpoints import router as approvals_router
from hub.audit.endpoints import platform_router as platform_audit_router
from hub.audit.endpoints import router as audit_router
from hub.authz.throttle import rest_rate_limit
from hub.catalogs.endpoints import router as catalogs_router
from hub.core.openapi import RATE_LIMITED
from hub.credentials.endpoints import router as credentials_router
from hub.deployments.endpoints import router as deployments_router
from hub.discovery.endpoints import router as discovery_router
from hub.gateway.endpoint import router as gateway_router
from hub.grants.endpoints import router as grants_router
from hub.health.endpoints import router as health_router
from hub.oauth.endpoints import public_router as oauth_public_router
from hub.oauth.endpoints import router as oauth_router
from hub.principals.endpoints import platform_router, whoami_router
from hub.principals.endpoints import router as principals_router
from hub.servers.endpoints import router as servers_router
from hub.tenants.endpoints import router as tenants_router

__all__ = ["api_router"]

api_router = APIRouter()
api_router.include_router(health_router)
for _router in (
    whoami_router,
    platform_router,
    tenants_router,
    principals_router,
    grants_router,
    credentials_router,
    discovery_router,
    servers_router,
    catalogs_router,
    deployments_router,
    audit_router,
    platform_audit_router,
    approvals_router,
    oauth_router,
):
    api_router.include_router(
        _router, dependencies=[Depends(rest_rate_limit)], responses={429: RATE_LIMITED}
    )
# the agents' endpoint counts tool calls per agent itself (JSON-RPC 42900); the OAuth callback
# is reached by a browser with no key
api_router.include_router(gateway_router)
api_router.include_router(oauth_public_router)

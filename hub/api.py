"""Router wiring: every domain's routes, mounted once.

The routes are added to the app flat, as the routers declared them (each router's prefix, tags,
dependencies and documented responses are already in its routes). FastAPI matches a request by
scanning routes in order, and an included router is a level of its own: it is matched as a whole
and then scanned again inside, for every router it includes. Flat, a request costs one scan of
the route table.

Every authenticated REST router is made by :func:`~hub.authz.throttle.rest_router`, which puts
:func:`~hub.authz.throttle.rest_rate_limit` (class ``rest``, per principal, after authentication)
and its documented 429 on each of its routes; the probes and ``/metrics`` are not limited. The
agents' MCP endpoint is not a REST router: it limits tool calls itself (class ``tool_call``) and
answers in JSON-RPC; the OAuth callback is reached by a browser with no key.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI

from hub.approvals.endpoints import router as approvals_router
from hub.audit.endpoints import platform_router as platform_audit_router
from hub.audit.endpoints import router as audit_router
from hub.catalogs.endpoints import router as catalogs_router
from hub.console.routes import ROUTERS as CONSOLE_ROUTERS
from hub.credentials.endpoints import router as credentials_router
from hub.deployments.endpoints import router as deployments_router
from hub.discovery.endpoints import router as discovery_router
from hub.drift.endpoints import router as drift_router
from hub.gateway.decisions import router as decisions_router
from hub.gateway.endpoint import router as gateway_router
from hub.gateway.lease import router as lease_router
from hub.grants.endpoints import router as grants_router
from hub.health.endpoints import router as health_router
from hub.oauth.endpoints import public_router as oauth_public_router
from hub.oauth.endpoints import router as oauth_router
from hub.principals.endpoints import platform_router, whoami_router
from hub.principals.endpoints import router as principals_router
from hub.servers.endpoints import router as servers_router
from hub.tenants.endpoints import router as tenants_router

__all__ = ["ROUTERS", "install_routes"]

ROUTERS: tuple[APIRouter, ...] = (
    # first: the route of every tool call, matched before the ~60 REST patterns a request is
    # otherwise tried against in order; no other route matches its paths (tests/test_api_order.py)
    gateway_router,
    health_router,
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
    drift_router,
    audit_router,
    platform_audit_router,
    approvals_router,
    oauth_router,
    lease_router,
    decisions_router,
    oauth_public_router,
    *CONSOLE_ROUTERS,  # HTML pages under /console, out of the OpenAPI schema
)


def install_routes(app: FastAPI) -> None:
    """Add every domain's routes to ``app``, in this order."""
    for router in ROUTERS:
        app.router.routes.extend(router.routes)

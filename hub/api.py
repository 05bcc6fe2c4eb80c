"""Router wiring: every domain's routes, mounted once."""

from __future__ import annotations

from fastapi import APIRouter

from hub.approvals.endpoints import router as approvals_router
from hub.catalogs.endpoints import router as catalogs_router
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
api_router.include_router(whoami_router)
api_router.include_router(platform_router)
api_router.include_router(tenants_router)
api_router.include_router(principals_router)
api_router.include_router(grants_router)
api_router.include_router(credentials_router)
api_router.include_router(discovery_router)
api_router.include_router(servers_router)
api_router.include_router(catalogs_router)
api_router.include_router(deployments_router)
api_router.include_router(approvals_router)
api_router.include_router(gateway_router)
api_router.include_router(oauth_router)
api_router.include_router(oauth_public_router)

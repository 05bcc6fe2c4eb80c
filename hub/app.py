"""The app factory: ``create_app(settings)`` builds one hub replica (DESIGN §1)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from hub import __version__
from hub.api import api_router
from hub.auth.failures import audit_failed_request
from hub.catalogs.service import CatalogContext, Discovered
from hub.core.crypto import Keyring
from hub.core.db import Database
from hub.core.devsecrets import with_dev_secrets
from hub.core.errors import ServiceUnavailable
from hub.core.handlers import install_exception_handlers
from hub.core.logging import install_log_redaction
from hub.core.middleware import RequestContextMiddleware
from hub.core.openapi import install_openapi
from hub.core.settings import Settings, get_settings
from hub.credentials.readiness import keyring_covers_rows
from hub.credentials.service import CredentialContext
from hub.egress import EgressConfig
from hub.grants.cache import PolicyCache
from hub.health.service import ReadinessCheck
from hub.servers.service import ServerContext

__all__ = ["create_app"]


async def _discovery_pending(target: object, era: object) -> Discovered:  # TODO(lead): MCP client
    raise ServiceUnavailable("discovery is not available yet")


def create_app(settings: Settings | None = None, *, database: Database | None = None) -> FastAPI:
    """Build the ASGI app. ``database`` lets tests share an engine; otherwise one is made here."""
    settings = with_dev_secrets(settings or get_settings())
    keyring = Keyring.from_settings(settings)  # a malformed keyring stops the hub here
    install_log_redaction()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        db = database or Database.from_url(
            settings.database_url, pool_size=settings.database_pool_size
        )
        app.state.db = db
        try:
            yield
        finally:
            if database is None:
                await db.dispose()

    app = FastAPI(
        title="MCP Hub",
        version=__version__,
        description="Multi-tenant control plane for Model Context Protocol tools.",
        lifespan=lifespan,
        docs_url="/docs",
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.keyring = keyring
    app.state.policy_cache = PolicyCache()
    app.state.failure_hooks = [audit_failed_request]
    egress = EgressConfig.from_settings(settings)
    app.state.egress_config = egress
    pepper = settings.api_key_pepper.get_secret_value().encode() if settings.api_key_pepper else b""
    app.state.credential_context = CredentialContext(keyring, egress, pepper)
    app.state.server_context = ServerContext(keyring, egress)
    app.state.catalog_context = CatalogContext(app.state.server_context, _discovery_pending)
    readiness: list[ReadinessCheck] = [keyring_covers_rows(keyring)]
    app.state.readiness_checks = readiness
    install_exception_handlers(app)
    install_openapi(app)
    app.include_router(api_router)
    app.add_middleware(RequestContextMiddleware)
    return app

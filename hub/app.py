"""The app factory: ``create_app(settings)`` builds one hub replica (DESIGN §1)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from hub import __version__
from hub.api import install_routes
from hub.audit.writer import AuditWriter
from hub.core.db import Database
from hub.core.devsecrets import with_dev_secrets
from hub.core.docs import install_docs
from hub.core.fastlane import install_fast_lanes
from hub.core.handlers import install_exception_handlers
from hub.core.logging import install_log_redaction
from hub.core.looplag import LoopLag
from hub.core.metrics import Metrics
from hub.core.middleware import RequestEdgeMiddleware
from hub.core.openapi import install_openapi
from hub.core.route_index import install_route_index
from hub.core.route_shape import ShapedRoute
from hub.core.settings import Settings, get_settings
from hub.core.workers import Workers
from hub.egress import Fetcher
from hub.ratelimit import RateLimiter
from hub.wiring import build_components

__all__ = ["create_app"]


def create_app(
    settings: Settings | None = None,
    *,
    database: Database | None = None,
    fetcher: Fetcher | None = None,
) -> FastAPI:
    """Build the ASGI app. Tests may pass a shared ``database`` or a ``fetcher`` with an injected
    resolver; otherwise both are made here and closed at shutdown."""
    settings = with_dev_secrets(settings or get_settings())
    components = build_components(settings, fetcher)
    install_log_redaction()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        db = database or Database.from_url(
            settings.database_url,
            pool_size=settings.database_pool_size,
            statement_timeout_s=settings.database_statement_timeout_s,
        )
        metrics = components.get(Metrics)
        db.observe_pool_waits(metrics.pool_waited)
        app.state.db = db
        workers = components.get(Workers)
        if settings.workers:
            await workers.start(db, settings.database_url)
        lag = LoopLag(metrics.loop_lag.observe)
        lag.start()
        try:
            yield
        finally:
            await lag.stop()  # first: nothing after it may leave its task pending
            # after uvicorn drained the requests (HUB_SHUTDOWN_GRACE_S): audit rows still queued
            # are written, the jobs in flight finish their current run (hub serve asked them to
            # stop at SIGTERM already)
            await components.get(AuditWriter).drain(settings.shutdown_grace_s)
            await workers.stop(settings.shutdown_grace_s)
            await components.get(RateLimiter).aclose()
            if fetcher is None:
                await components.get(Fetcher).aclose()
            if database is None:
                await db.dispose()
            else:  # the caller's: it outlives this app, which no longer counts its waits
                db.observe_pool_waits(None)

    app = FastAPI(
        title="MCP Hub",
        version=__version__,
        description="Multi-tenant control plane for Model Context Protocol tools.",
        lifespan=lifespan,
        docs_url=None,  # served by install_docs from vendored assets, not a CDN
        redoc_url=None,
        # The hub's telemetry is its Prometheus metrics and JSON logs (DESIGN §11). FastAPI's own
        # OpenTelemetry hooks, unconfigured, still looked up the global providers on every
        # request (the environment included).
        telemetry={"tracing": False, "metrics": False, "logs": False},
        # ``/x/`` is a 404 like any unknown path: Starlette's 307 to ``/x`` answered before any
        # authentication, told anonymous callers which routes exist, and built its Location
        # from the client's Host header.
        redirect_slashes=False,
    )
    app.router.route_class = ShapedRoute  # the docs' routes too (hub.core.route_shape)
    app.state.components = components
    install_exception_handlers(app)
    install_openapi(app)
    install_docs(app)
    install_routes(app)
    install_route_index(app)  # first in the table, once every route is in it
    install_fast_lanes(app, ["gateway.mcp"])  # the agents' calls, inside the edge below
    app.add_middleware(  # ids, timing, the body limit and the last resort, for everything
        RequestEdgeMiddleware,
        metrics=components.get(Metrics),
        max_bytes=settings.max_request_bytes,
    )
    return app

"""``hub serve``: the REST API and the gateway endpoint under uvicorn.

Behind a load balancer, ``X-Forwarded-For`` and ``X-Forwarded-Proto`` are believed only from the
peers in ``HUB_TRUSTED_PROXIES`` (uvicorn's proxy-header middleware, which takes the right-most
untrusted address of the chain as the client). With the setting empty, the default, the headers are
ignored and the client is the TCP peer. Either way the request middleware logs the client it sees
as ``client`` on every line of the request.

Shutdown (DESIGN §11): on SIGTERM (or SIGINT) uvicorn stops accepting connections and lets the
requests in flight — tool calls included — finish within ``HUB_SHUTDOWN_GRACE_S`` (30 s; then it
cancels them); the workers are asked to stop at the signal, finish their current job, and are
waited for in the app's lifespan shutdown. A SIGTERM'd hub then exits 0 (uvicorn re-raises the
signal it caught; the handler installed here turns that into a clean exit rather than death by
signal, which orchestrators would report as a failure).
"""

from __future__ import annotations

import signal
import sys
from types import FrameType
from typing import TYPE_CHECKING, Any

import typer

from hub.cli.database import require_database
from hub.cli.runtime import runtime_settings
from hub.core.settings import Settings

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["proxy_options", "serve", "serve_app"]


def proxy_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's proxy-header options for ``settings``.

    The list is always passed explicitly, so uvicorn never falls back to its own default
    (loopback) or its ``FORWARDED_ALLOW_IPS`` environment variable.
    """
    trusted = list(settings.trusted_proxies)
    return {"proxy_headers": bool(trusted), "forwarded_allow_ips": trusted}


def _exit_cleanly(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(0)


def serve_app(application: FastAPI, settings: Settings, host: str, port: int) -> None:
    """Run ``application`` under uvicorn until SIGTERM/SIGINT, draining as described above."""
    import uvicorn

    from hub.core.components import components_of
    from hub.core.workers import Workers

    workers = components_of(application).get(Workers)

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            workers.request_stop()  # no new job from now on; the current ones finish
            super().handle_exit(sig, frame)

    config = uvicorn.Config(
        application,
        host=host,
        port=port,
        log_config=None,
        server_header=False,
        timeout_graceful_shutdown=max(1, round(settings.shutdown_grace_s)),
        **proxy_options(settings),
    )
    signal.signal(signal.SIGTERM, _exit_cleanly)
    server = Server(config)
    server.run()
    if not server.started:
        sys.exit(3)  # uvicorn's own "startup failed" status


def serve(
    host: str | None = typer.Option(None, help="Listen address (default HUB_HOST)."),
    port: int | None = typer.Option(None, help="Listen port (default HUB_PORT)."),
) -> None:
    """Serve the REST API and the gateway endpoint."""
    from hub.app import create_app

    settings = runtime_settings()
    require_database(settings.database_url)  # refuse to start on a database it cannot use
    application = create_app(settings)
    serve_app(application, settings, host or settings.host, settings.port if port is None else port)

"""``hub serve``: the REST API and the gateway endpoint under uvicorn.

The app is built by :func:`served_app`, a factory uvicorn imports by name, so ``--workers N``
can start N processes that each build their own replica (engine, pool, caches): replicas share
nothing but the database (DESIGN §1), so N workers behave as N replicas on one port
(:mod:`hub.cli.workers` says how connections are spread). Settings are read, development secrets
generated and the database checked once, before any worker starts.

Behind a load balancer, ``X-Forwarded-For`` and ``X-Forwarded-Proto`` are believed only from the
peers in ``HUB_TRUSTED_PROXIES`` (uvicorn's proxy-header middleware, which takes the right-most
untrusted address of the chain as the client). With the setting empty, the default, the headers are
ignored and the client is the TCP peer. Either way the request middleware logs the client it sees
as ``client`` on every line of the request.

Shutdown (DESIGN §11): on SIGTERM (or SIGINT) uvicorn stops accepting connections and lets the
requests in flight — tool calls included — finish within ``HUB_SHUTDOWN_GRACE_S`` (30 s; then it
cancels them); ``ask`` calls waiting for a person's decision answer ``approval_pending`` at once
(the approval stays, the agent repeats the call elsewhere); a call still running when the grace
ends is answered JSON-RPC ``50300`` (the hub is shutting down, the call's outcome unknown:
:mod:`hub.gateway.endpoint`), not uvicorn's plain 500; the background workers are asked to stop
at the signal, finish their current job, and are waited for in the app's lifespan shutdown. A
SIGTERM'd hub then exits 0 (uvicorn re-raises the signal it caught; the handler installed here turns
that into a clean exit rather than death by signal, which orchestrators would report as a failure).
"""

from __future__ import annotations

import gc
import signal
import socket
import sys
from types import FrameType
from typing import TYPE_CHECKING, Any

import typer

from hub.cli.database import require_database, safe_url
from hub.cli.runtime import runtime_settings
from hub.core.connection_bound import limit_connections
from hub.core.http_protocol import HubHttpToolsProtocol, limit_pending_requests

if TYPE_CHECKING:  # every ``hub`` command imports this module: the app's stack when it serves
    from fastapi import FastAPI

    from hub.core.settings import Settings

__all__ = [
    "APP",
    "UVICORN_OPTIONS",
    "proxy_options",
    "run_server",
    "serve",
    "served_app",
    "uvicorn_options",
]


APP = "hub.cli.serve:served_app"

#: How uvicorn runs the hub, whatever the settings (and, for a fair baseline, ``bench._bare``):
#: httptools' C parser and uvloop's event loop, not the pure-Python h11 and asyncio's selector
#: loop. Measured with ``python -m bench rest`` (SQLite, one worker, same machine and run): the
#: hub's authenticated GET went from 608 to 945 req/s and its CPU per request from 1,673 to
#: 1,046 µs; the bare route from 2,926 to 5,276 req/s (docs/decisions.md).
UVICORN_OPTIONS: dict[str, Any] = {
    "http": HubHttpToolsProtocol,
    "loop": "uvloop",
    "log_config": None,  # the hub's JSON logging (hub.core.logging), not uvicorn's
    "server_header": False,
    "proxy_headers": False,
}


def proxy_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's proxy-header options for ``settings``.

    The list is always passed explicitly, so uvicorn never falls back to its own default
    (loopback) or its ``FORWARDED_ALLOW_IPS`` environment variable.
    """
    trusted = list(settings.trusted_proxies)
    return {"proxy_headers": bool(trusted), "forwarded_allow_ips": trusted}


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """Every uvicorn option of a served hub: the fixed ones, the proxies and the grace period."""
    return {
        **UVICORN_OPTIONS,
        **proxy_options(settings),
        "timeout_graceful_shutdown": max(1, round(settings.shutdown_grace_s)),
    }


#: allocations between two collections of the youngest generation (see :func:`served_app`)
GC_YOUNG_THRESHOLD = 20_000

#: the app this process serves, once :func:`served_app` built it (its workers are stopped at
#: the signal)
_served: list[FastAPI] = []


def served_app() -> FastAPI:
    """The app of one ``hub serve`` process (uvicorn's factory; each worker calls it).

    Once it is built, everything made so far (modules, models, routes, the app) lives as long as
    the process: ``gc.freeze()`` takes it out of the collector's generations, so a full
    collection no longer walks it (measured: p99 at 16 connections about halved).

    The youngest generation is then collected after :data:`GC_YOUNG_THRESHOLD` allocations
    rather than Python's 700: requests in flight hold a few hundred container objects each
    (freed by reference counting when they end, not by the collector), so at 700 every few
    requests started a collection that found nothing to free. Measured on ``GET …/servers/
    {handle}`` at 16 connections: 2,450 collections for 18,000 requests, 0.43 s of the
    process's time (24 µs a request); at 20,000, one collection in the same time.
    """
    from hub.app import create_app

    settings = runtime_settings()
    limit_pending_requests(settings.max_pending_request_bytes)
    limit_connections(settings.max_connections)
    app = create_app(settings)
    _served.append(app)
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, older, oldest)
    return app


def _exit_cleanly(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(0)


def run_server(
    host: str, port: int, options: dict[str, Any], sockets: list[socket.socket] | None = None
) -> None:
    """Run the factory app under uvicorn until SIGTERM/SIGINT, draining as described above."""
    import uvicorn

    from hub.approvals.service import ApprovalContext
    from hub.core.components import components_of
    from hub.core.workers import Workers
    from hub.gateway.shutdown import Stopping

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            for app in _served:
                components = components_of(app)
                components.get(Workers).request_stop()  # no new job; the current ones finish
                components.get(ApprovalContext).watch.release()  # ask calls wait no more
                if Stopping not in components:  # a call cut by the grace's end is answered
                    components.provide(Stopping, Stopping())
            super().handle_exit(sig, frame)

    config = uvicorn.Config(APP, factory=True, host=host, port=port, **options)
    signal.signal(signal.SIGTERM, _exit_cleanly)
    server = Server(config)
    server.run(sockets=sockets)
    if not server.started:
        sys.exit(3)  # uvicorn's own "startup failed" status


def serve(
    host: str | None = typer.Option(None, help="Listen address (default HUB_HOST)."),
    port: int | None = typer.Option(None, min=0, max=65535, help="Listen port (default HUB_PORT)."),
    workers: int = typer.Option(1, min=1, help="Server processes on the one port."),
) -> None:
    """Serve the REST API and the gateway endpoint."""
    settings = runtime_settings()  # fail fast, and generate development secrets only once
    # refuse to start on a database it cannot use; start on an unmigrated one, but say so
    if not require_database(settings.database_url):
        typer.echo(
            f"hub: warning: the database {safe_url(settings.database_url)} holds no hub schema"
            " yet: /readyz answers 503 and requests fail until `hub db upgrade` runs",
            err=True,
        )
    host = host or settings.host
    port = settings.port if port is None else port
    options = uvicorn_options(settings)
    if workers > 1:
        from hub.cli.workers import run_workers

        if settings.rate_limit_storage_url.get_secret_value().startswith("memory://"):
            typer.echo(
                f"hub: warning: each of the {workers} workers counts its own rate limits"
                " (HUB_RATE_LIMIT_STORAGE_URL is memory://), so each admits the whole limit;"
                " set it to redis://… to share them",
                err=True,
            )

        status = run_workers(run_server, host=host, port=port, workers=workers, options=options)
        raise typer.Exit(status)
    run_server(host, port, options)

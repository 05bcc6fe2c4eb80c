"""``hub serve``: the REST API and the gateway endpoint under uvicorn.

The app is built by :func:`served_app`, a factory uvicorn imports by name, so ``--workers N``
can start N processes that each build their own replica (engine, pool, caches): replicas share
nothing but the database (DESIGN §1), so N workers behave as N replicas on one port
(:mod:`hub.cli.workers` says how connections are spread). Settings are read, and development
secrets generated, once before any worker starts.
"""

from __future__ import annotations

import asyncio
import gc
import socket
from typing import Any

import typer
from fastapi import FastAPI
from uvicorn.protocols.http.h11_impl import H11Protocol

from hub.cli.runtime import runtime_settings

__all__ = ["APP", "UVICORN_OPTIONS", "NoDelayH11Protocol", "serve", "served_app"]


class NoDelayH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with ``TCP_NODELAY`` on every connection.

    asyncio turns Nagle's algorithm off only on sockets whose protocol field says TCP, and the
    listening socket uvicorn creates for ``--workers N`` says 0: its connections would then hold
    a response's second write until the client's delayed ACK, 40 ms a response.
    """

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)


APP = "hub.cli.serve:served_app"

#: How uvicorn runs the hub (and, for a fair baseline, ``bench._bare``).
UVICORN_OPTIONS: dict[str, Any] = {
    "http": NoDelayH11Protocol,
    "log_config": None,  # the hub's JSON logging (hub.core.logging), not uvicorn's
    "proxy_headers": False,
    "server_header": False,
    "timeout_graceful_shutdown": 20,
}


def served_app() -> FastAPI:
    """The app of one ``hub serve`` process (uvicorn's factory; each worker calls it).

    Once it is built, everything made so far (modules, models, routes, the app) lives as long as
    the process: ``gc.freeze()`` takes it out of the collector's generations, so a full
    collection no longer walks it (measured: p99 at 16 connections about halved).
    """
    from hub.app import create_app

    app = create_app(runtime_settings())
    gc.collect()
    gc.freeze()
    return app


def serve(
    host: str | None = typer.Option(None, help="Listen address (default HUB_HOST)."),
    port: int | None = typer.Option(None, help="Listen port (default HUB_PORT)."),
    workers: int = typer.Option(1, min=1, help="Worker processes (uvicorn workers)."),
) -> None:
    """Serve the REST API and the gateway endpoint."""
    import uvicorn

    settings = runtime_settings()  # fail fast, and generate development secrets only once
    host = host or settings.host
    port = settings.port if port is None else port
    if workers > 1:
        from hub.cli.workers import run_workers

        status = run_workers(APP, host=host, port=port, workers=workers, options=UVICORN_OPTIONS)
        raise typer.Exit(status)
    uvicorn.run(APP, factory=True, host=host, port=port, **UVICORN_OPTIONS)

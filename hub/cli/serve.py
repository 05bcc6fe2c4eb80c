"""``hub serve``: the REST API and the gateway endpoint under uvicorn."""

from __future__ import annotations

import typer

from hub.cli.runtime import runtime_settings

__all__ = ["serve"]


def serve(
    host: str | None = typer.Option(None, help="Listen address (default HUB_HOST)."),
    port: int | None = typer.Option(None, help="Listen port (default HUB_PORT)."),
) -> None:
    """Serve the REST API and the gateway endpoint."""
    import uvicorn

    from hub.app import create_app

    settings = runtime_settings()
    application = create_app(settings)
    uvicorn.run(
        application,
        host=host or settings.host,
        port=settings.port if port is None else port,
        log_config=None,
        proxy_headers=False,
        server_header=False,
        timeout_graceful_shutdown=20,
    )

"""``hub serve``: the REST API and the gateway endpoint under uvicorn.

Behind a load balancer, ``X-Forwarded-For`` and ``X-Forwarded-Proto`` are believed only from the
peers in ``HUB_TRUSTED_PROXIES`` (uvicorn's proxy-header middleware, which takes the right-most
untrusted address of the chain as the client). With the setting empty, the default, the headers are
ignored and the client is the TCP peer. Either way the request middleware logs the client it sees
as ``client`` on every line of the request.
"""

from __future__ import annotations

from typing import Any

import typer

from hub.cli.database import require_database
from hub.cli.runtime import runtime_settings
from hub.core.settings import Settings

__all__ = ["proxy_options", "serve"]


def proxy_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's proxy-header options for ``settings``.

    The list is always passed explicitly, so uvicorn never falls back to its own default
    (loopback) or its ``FORWARDED_ALLOW_IPS`` environment variable.
    """
    trusted = list(settings.trusted_proxies)
    return {"proxy_headers": bool(trusted), "forwarded_allow_ips": trusted}


def serve(
    host: str | None = typer.Option(None, help="Listen address (default HUB_HOST)."),
    port: int | None = typer.Option(None, help="Listen port (default HUB_PORT)."),
) -> None:
    """Serve the REST API and the gateway endpoint."""
    import uvicorn

    from hub.app import create_app

    settings = runtime_settings()
    require_database(settings.database_url)  # refuse to start on a database it cannot use
    application = create_app(settings)
    uvicorn.run(
        application,
        host=host or settings.host,
        port=settings.port if port is None else port,
        log_config=None,
        server_header=False,
        timeout_graceful_shutdown=20,
        **proxy_options(settings),
    )

"""``hub sidecar``: a deployment's tools for a local agent, over stdio or loopback HTTP (§10.5).

The agent's key comes from ``HUB_AGENT_KEY`` only, and in direct mode the sidecar principal's
from ``HUB_SIDECAR_KEY`` (never a flag: it would show in process
listings). Logs are JSON lines on stderr — nothing but MCP ever reaches stdout. A failure to
start is one line on stderr and exit status 1; SIGTERM, SIGINT and (stdio) stdin EOF end it with
status 0.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated

import typer

from hub.core.logging import configure_logging, redacting
from hub.sidecar.config import SidecarConfig, default_cache_dir, parse_listen
from hub.sidecar.errors import SidecarError

__all__ = ["sidecar"]

KEY_ENV = "HUB_AGENT_KEY"
SIDECAR_KEY_ENV = "HUB_SIDECAR_KEY"


def _die(message: str) -> None:
    typer.echo(f"hub sidecar: {message}", err=True)
    raise typer.Exit(1)


def sidecar(
    hub: Annotated[str, typer.Option("--hub", help="The hub's base URL (https unless loopback).")],
    tenant: Annotated[str, typer.Option("--tenant", help="Tenant id or slug.")],
    deployment: Annotated[str, typer.Option("--deployment", help="Deployment id or name.")],
    stdio: Annotated[
        bool, typer.Option("--stdio", help="Serve the agent on stdin/stdout.")
    ] = False,
    listen: Annotated[
        str | None,
        typer.Option("--listen", help="Serve Streamable HTTP at http://HOST:PORT/mcp (loopback)."),
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file", help="With --listen: where the bearer token is written (0600)."
        ),
    ] = None,
    mode: Annotated[str, typer.Option("--mode", help="relay (default) or direct.")] = "relay",
    sync_interval: Annotated[
        float, typer.Option("--sync-interval", help="Seconds between bundle syncs.")
    ] = 30.0,
    max_stale: Annotated[
        float, typer.Option("--max-stale", help="Seconds the cached bundle may be served.")
    ] = 600.0,
    cache_dir: Annotated[
        Path | None, typer.Option("--cache-dir", help="Bundle cache directory.")
    ] = None,
    call_timeout: Annotated[
        float, typer.Option("--call-timeout", help="Seconds a relayed call may take in all.")
    ] = 90.0,
    hub_ca: Annotated[
        str | None, typer.Option("--hub-ca", help="CA bundle (PEM) for the hub's certificate.")
    ] = None,
    log_level: Annotated[str, typer.Option("--log-level", help="DEBUG, INFO, WARNING …")] = "INFO",
) -> None:
    """Serve a deployment's tools to a local agent (key in HUB_AGENT_KEY)."""
    # here, not at the top: every ``hub`` command imports this module, and the sidecar's
    # server and client stacks are most of a command's start-up otherwise
    from hub.sidecar.run import Serve, run_sidecar

    configure_logging(log_level.upper())
    if stdio == (listen is not None):
        _die("give exactly one of --stdio and --listen HOST:PORT")
    try:
        config = SidecarConfig.checked(
            hub=hub,
            tenant=tenant,
            deployment=deployment,
            agent_key=os.environ.get(KEY_ENV),
            mode=mode,
            sync_interval_s=sync_interval,
            max_stale_s=max_stale,
            cache_dir=cache_dir or default_cache_dir(os.environ.get("XDG_CACHE_HOME")),
            hub_ca=hub_ca,
            call_timeout_s=call_timeout,
            sidecar_key=os.environ.get(SIDECAR_KEY_ENV),
        )
        serve = Serve()
        if listen is not None:
            if token_file is None:
                _die("--listen needs --token-file FILE (the bearer token is written there)")
            serve = Serve(parse_listen(listen), token_file)
        with redacting(config.agent_key, *([config.sidecar_key] if config.sidecar_key else [])):
            asyncio.run(run_sidecar(config, serve))
    except SidecarError as exc:
        _die(str(exc))
    except KeyboardInterrupt:
        pass

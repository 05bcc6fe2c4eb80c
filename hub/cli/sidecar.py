"""``hub sidecar``: a deployment's tools for a local agent, over stdio or loopback HTTP (§10.5).

The agent's key comes from ``HUB_AGENT_KEY`` only, and in direct mode the sidecar principal's
from ``HUB_SIDECAR_KEY`` (never a flag: it would show in process
listings). Logs are JSON lines on stderr — nothing but MCP ever reaches stdout. An option value
it cannot take (``--mode``, ``--log-level``: choices; ``--hub-ca``: a file) is typer's usage
error, status 2, before anything is configured; a failure to start is one line on stderr and exit
status 1; SIGTERM, SIGINT and (stdio) stdin EOF end it with status 0.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated, Literal

import typer

from hub.cli.options import HubCaOpt
from hub.core.logging import configure_logging, redacting
from hub.sidecar.config import Mode, SidecarConfig, default_cache_dir, parse_listen
from hub.sidecar.errors import SidecarError

__all__ = ["sidecar"]

KEY_ENV = "HUB_AGENT_KEY"
SIDECAR_KEY_ENV = "HUB_SIDECAR_KEY"


def _die(message: str) -> None:
    typer.echo(f"hub sidecar: {message}", err=True)
    raise typer.Exit(1)


#: as ``HUB_LOG_LEVEL`` takes them
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]


def sidecar(
    hub: Annotated[
        str,
        typer.Option("--hub", metavar="URL", help="The hub's base URL (https unless loopback)."),
    ],
    tenant: Annotated[
        str, typer.Option("--tenant", "-t", metavar="SLUG", help="Tenant slug or id.")
    ],
    deployment: Annotated[
        str, typer.Option("--deployment", metavar="DEPLOYMENT", help="Name or id.")
    ],
    stdio: Annotated[
        bool, typer.Option("--stdio", help="Serve the agent on stdin/stdout.")
    ] = False,
    listen: Annotated[
        str | None,
        typer.Option(
            "--listen",
            metavar="HOST:PORT",
            help="Serve Streamable HTTP at http://HOST:PORT/mcp (loopback).",
        ),
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file",
            dir_okay=False,
            help="With --listen: where the bearer token is written (0600).",
        ),
    ] = None,
    mode: Annotated[
        Mode,
        typer.Option(
            "--mode",
            help="relay: every call through the hub; direct: direct-mode entries' calls from here.",
        ),
    ] = "relay",
    sync_interval: Annotated[
        float,
        typer.Option("--sync-interval", metavar="SECONDS", help="Between bundle syncs."),
    ] = 30.0,
    max_stale: Annotated[
        float,
        typer.Option(
            "--max-stale", metavar="SECONDS", help="How old a cached bundle may be served."
        ),
    ] = 600.0,
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            "--cache-dir",
            file_okay=False,
            help="Bundle cache directory (default: $XDG_CACHE_HOME/mcp-hub/sidecar).",
        ),
    ] = None,
    call_timeout: Annotated[
        float,
        typer.Option(
            "--call-timeout", metavar="SECONDS", help="How long a relayed call may take in all."
        ),
    ] = 90.0,
    hub_ca: HubCaOpt = None,
    log_level: Annotated[
        LogLevel,
        typer.Option("--log-level", case_sensitive=False, help="Of the JSON logs on stderr."),
    ] = "INFO",
) -> None:
    """Serve a deployment's tools to a local agent (key in HUB_AGENT_KEY)."""
    # here, not at the top: every ``hub`` command imports this module, and the sidecar's
    # server and client stacks are most of a command's start-up otherwise
    from hub.sidecar.run import Serve, run_sidecar

    configure_logging(log_level)
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
            hub_ca=str(hub_ca) if hub_ca else None,
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

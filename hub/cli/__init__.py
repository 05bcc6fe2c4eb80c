"""The ``hub`` command (typer), one module per command group (DESIGN §2).

- :mod:`~hub.cli.serve` — ``hub serve``;
- :mod:`~hub.cli.db` — ``hub db upgrade``;
- :mod:`~hub.cli.bootstrap` — ``hub bootstrap``;
- :mod:`~hub.cli.crypto` — ``hub crypto rotate``;
- :mod:`~hub.cli.audit` — ``hub audit verify --local``, the audit hash chains in the database;
- :mod:`~hub.cli.worker` — ``hub worker``, the background workers without HTTP;
- :mod:`~hub.cli.mcp` — ``hub mcp probe|call``, the hub's MCP client for support;
- :mod:`~hub.cli.sidecar` — ``hub sidecar``, a deployment's tools for a local agent;
- :mod:`~hub.cli.database` — the database check (one line, never a traceback);
- :mod:`~hub.cli.runtime` — settings for a real run;
- :mod:`~hub.cli.remote` — the operators' remote client: ``hub login``, ``hub whoami``, ``hub
  tenants|principals|keys|credentials|servers|oauth|catalogs|deployments|grants|approvals|audit``.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

import typer

from hub import __version__
from hub.cli.bootstrap import bootstrap
from hub.cli.crypto import crypto_app
from hub.cli.db import db_app
from hub.cli.mcp import mcp_app
from hub.cli.remote import register as register_remote
from hub.cli.serve import serve
from hub.cli.sidecar import sidecar
from hub.cli.worker import worker

__all__ = ["app", "main"]

app = typer.Typer(no_args_is_help=True, add_completion=False, help="MCP Hub control plane.")
app.add_typer(db_app, name="db")
app.add_typer(crypto_app, name="crypto")
app.add_typer(mcp_app, name="mcp")
app.command()(serve)
app.command()(bootstrap)
app.command()(worker)
app.command()(sidecar)
register_remote(app)


@app.command()
def version() -> None:
    """Print the hub's version."""
    typer.echo(__version__)


def _terminated(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def main() -> None:
    from hub.core.settings import ConfigError

    # A process with no SIGTERM handler ignores SIGTERM when it is a PID namespace's first
    # process, as `hub` is in its image (ENTRYPOINT ["hub"]): `docker stop` and a deleted Job
    # then waited their whole grace period for SIGKILL. Commands that stop cleanly on it
    # (`serve`, `worker`, `sidecar`) install their own handler over this one.
    signal.signal(signal.SIGTERM, _terminated)
    try:
        app()
    except ConfigError as exc:
        typer.echo(f"hub: {exc}", err=True)
        sys.exit(2)

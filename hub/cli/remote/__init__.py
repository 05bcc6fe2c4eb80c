"""The ``hub`` command as the operators' remote client (DESIGN §14), over the REST API.

- :mod:`~hub.cli.remote.profiles` — login profiles (``profiles.json``) and 0600 key files;
- :mod:`~hub.cli.remote.client` — a plain httpx2 client for the operator's own hub (not the
  tenant-egress fetcher), one-line :class:`~hub.cli.remote.client.RemoteError` failures;
- :mod:`~hub.cli.remote.output` — rich tables or ``--json``, terminal-safe values, progress bars;
- :mod:`~hub.cli.remote.context` — shared options and the logged-in :class:`Remote` of a command;
- :mod:`~hub.cli.remote.resolve` — names accepted wherever unique (resolved by list calls);
- one module per resource group: ``login`` (login, logout, whoami), ``tenants``,
  ``principals``, ``keys``, ``credentials``, ``servers``, ``oauth``, ``catalogs``, ``deployments``,
  ``grants``, ``approvals``, ``audit``.
"""

from __future__ import annotations

import typer

from hub.cli.remote.approvals import approvals_app
from hub.cli.remote.audit import audit_app
from hub.cli.remote.catalogs import catalogs_app
from hub.cli.remote.credentials import credentials_app
from hub.cli.remote.deployments import deployments_app
from hub.cli.remote.grants import grants_app
from hub.cli.remote.keys import keys_app
from hub.cli.remote.login import login, logout, whoami
from hub.cli.remote.oauth import oauth_app
from hub.cli.remote.principals import principals_app
from hub.cli.remote.servers import servers_app
from hub.cli.remote.tenants import tenants_app

__all__ = ["GROUPS", "register"]

#: Command groups in the order ``hub --help`` lists them (a first session's order).
GROUPS: dict[str, typer.Typer] = {
    "tenants": tenants_app,
    "principals": principals_app,
    "keys": keys_app,
    "credentials": credentials_app,
    "servers": servers_app,
    "oauth": oauth_app,
    "catalogs": catalogs_app,
    "deployments": deployments_app,
    "grants": grants_app,
    "approvals": approvals_app,
    "audit": audit_app,
}


def register(app: typer.Typer) -> None:
    """Add the remote commands to the ``hub`` command."""
    app.command()(login)
    app.command()(logout)
    app.command()(whoami)
    for name, group in GROUPS.items():
        app.add_typer(group, name=name)

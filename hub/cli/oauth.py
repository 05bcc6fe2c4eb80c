"""``hub oauth connect HANDLE``: connect a registered server by OAuth (DESIGN §9, §14, §15).

    HUB_API_KEY=hub_… hub oauth connect linear --tenant acme --url https://hub.example.com

It talks to a running hub over its REST API with the operator's key (from ``HUB_API_KEY``, never a
flag: ``ps`` and shell history would show it): ``POST /tenants/{t}/oauth/authorizations
{"server": HANDLE}``, prints the authorization URL to open in a browser (alone on stdout), then
polls ``GET /tenants/{t}/oauth/authorizations/{id}`` every ``--interval`` seconds until the
authorization is completed (exit 0), failed (exit 1, with its reason) or ``--timeout`` passes
(exit 2). ``--scope`` (repeatable) asks for given scopes; ``--credential ID`` re-authorises a
credential instead (a step-up). Errors print the hub's message and request id, never a traceback.

The client is a plain verified-TLS ``httpx2`` client: the operator's own hub is not tenant egress
(as the sidecar's client to its hub, DESIGN §10.5). ``--url`` defaults to ``HUB_PUBLIC_URL``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any, NoReturn

import httpx2
import typer

__all__ = ["ConnectFailed", "connect", "oauth_app"]

KEY_ENV = "HUB_API_KEY"

oauth_app = typer.Typer(
    no_args_is_help=True, add_completion=False, help="Connect servers by OAuth."
)


class ConnectFailed(Exception):
    """The hub refused, or the authorization did not complete; ``exit_code`` says how."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _hub_error(response: httpx2.Response) -> ConnectFailed:
    try:
        error = response.json()["error"]
        reason = f" ({error['reason']})" if error.get("reason") else ""
        text = f"{error['message']}{reason} [request {error['request_id']}]"
    except (ValueError, KeyError, TypeError):
        text = f"the hub answered {response.status_code}"
    return ConnectFailed(text)


async def connect(
    client: httpx2.AsyncClient,
    tenant: str,
    body: dict[str, Any],
    *,
    announce: Callable[[str], None],
    timeout_s: float = 600.0,
    interval_s: float = 2.0,
) -> dict[str, Any]:
    """Start the authorization, ``announce`` its URL, poll until it ends; its final status."""
    base = f"/tenants/{tenant}/oauth/authorizations"
    try:
        started = await client.post(base, json=body)
    except httpx2.HTTPError:
        raise ConnectFailed("could not reach the hub") from None
    if started.status_code != 201:
        raise _hub_error(started)
    data = started.json()["data"]
    announce(data["authorization_url"])
    loop = asyncio.get_running_loop()
    give_up = loop.time() + timeout_s
    while True:
        try:
            polled = await client.get(f"{base}/{data['id']}")
        except httpx2.HTTPError:
            raise ConnectFailed("could not reach the hub") from None
        if polled.status_code != 200:
            raise _hub_error(polled)
        status: dict[str, Any] = polled.json()["data"]
        if status["status"] == "completed":
            return status
        if status["status"] == "failed":
            raise ConnectFailed(f"the authorization failed ({status.get('reason')})", exit_code=1)
        if loop.time() >= give_up:
            raise ConnectFailed("timed out waiting for the authorization")
        await asyncio.sleep(interval_s)


def _die(message: str, code: int = 2) -> NoReturn:
    typer.echo(f"hub oauth: {message}", err=True)
    raise typer.Exit(code)


def _default_url() -> str:
    from hub.core.settings import ConfigError, get_settings  # here: see hub.cli.mcp

    try:
        return get_settings().public_base_url
    except ConfigError as exc:
        _die(str(exc))


@oauth_app.command("connect")
def connect_command(
    handle: str = typer.Argument(None, help="The server's handle (or use --credential)."),
    tenant: str = typer.Option(..., "--tenant", help="Tenant id or slug."),
    url: str | None = typer.Option(None, "--url", help="The hub (default HUB_PUBLIC_URL)."),
    credential: str | None = typer.Option(
        None, "--credential", help="Re-authorise this credential id (step-up) instead."
    ),
    scope: list[str] = typer.Option([], "--scope", help="Scopes to ask for (repeatable)."),
    timeout: float = typer.Option(600.0, "--timeout", min=1, help="Seconds to wait."),
    interval: float = typer.Option(2.0, "--interval", min=0.1, help="Seconds between polls."),
) -> None:
    """Print the authorization URL to open, and wait until the hub has the token."""
    key = os.environ.get(KEY_ENV)
    if not key:
        _die(f"set {KEY_ENV} to your API key")
    if (handle is None) == (credential is None):
        _die("name a server HANDLE or --credential, one of them")
    body: dict[str, Any] = {"credential_id": credential} if credential else {"server": handle}
    if scope:
        body["scopes"] = scope

    def announce(authorization_url: str) -> None:
        typer.echo("Open this URL in a browser to authorise the hub:", err=True)
        typer.echo(authorization_url)

    async def run() -> dict[str, Any]:
        headers = {"authorization": f"Bearer {key}"}
        async with httpx2.AsyncClient(
            base_url=url or _default_url(), headers=headers, timeout=30, follow_redirects=False
        ) as client:
            return await connect(
                client, tenant, body, announce=announce, timeout_s=timeout, interval_s=interval
            )

    try:
        status = asyncio.run(run())
    except ConnectFailed as exc:
        _die(str(exc), exc.exit_code)
    typer.echo(f"Connected: credential {status['credential_id']}", err=True)

"""``hub oauth connect``: connect a registered server by OAuth (DESIGN §9, §14, §15).

    hub oauth connect linear                       # the login profile's hub, key and tenant

Like every remote command it acts with the login profile (``--profile``, ``--tenant``): ``POST
/tenants/{t}/oauth/authorizations {"server": HANDLE}`` (or ``{"credential_id": …}`` for
``--credential NAME``, a step-up that keeps and widens the credential's scopes, or ``{"url",
"credential_name"}`` for ``--url URL --name NAME``, a new credential no server uses yet), prints the
authorization URL alone on stdout for the operator to open, then polls ``GET …/{id}`` every
``--interval`` seconds until the hub has the token (exit 0, naming the credential), the
authorization failed (exit 1, with its reason) or ``--timeout`` passed (exit 2). A refusal by
the hub is its one line and request id, exit 1. When the authorization server will send the
browser back to an origin other than the profile's hub (``HUB_PUBLIC_URL`` left at a local
default on a remote hub), the command says so before waiting.

A client registered with the authorization server beforehand (a server that offers neither
client-ID metadata documents nor dynamic registration): ``--client-id`` with
``--client-auth-method``; its secret comes from a hidden prompt or ``--client-secret-stdin``,
never a flag.
"""

from __future__ import annotations

import time
import urllib.parse
from enum import StrEnum
from typing import Annotated, Any

import typer

from hub.cli.remote import resolve
from hub.cli.remote.client import HubFailure
from hub.cli.remote.context import ProfileOpt, Remote, TenantOpt, remote
from hub.cli.remote.credentials import read_secret
from hub.cli.remote.output import fail, note, progress, safe, when
from hub.cli.remote.profiles import DEFAULT_PROFILE

__all__ = ["TIMED_OUT", "oauth_app"]

oauth_app = typer.Typer(no_args_is_help=True, help="Connect servers by OAuth.")

#: The exit status when ``--timeout`` passes before the authorization ends.
TIMED_OUT = 2


class ClientAuthMethod(StrEnum):
    client_secret_basic = "client_secret_basic"  # noqa: S105 - a method's name, not a secret
    client_secret_post = "client_secret_post"  # noqa: S105 - a method's name, not a secret
    none = "none"


def _client(
    client_id: str | None, method: ClientAuthMethod | None, secret_stdin: bool
) -> dict[str, Any] | None:
    """The pre-registered client of the request, or None; the secret is never a flag."""
    if client_id is None:
        if method is not None or secret_stdin:
            fail("--client-auth-method and --client-secret-stdin go with --client-id")
        return None
    client: dict[str, Any] = {"client_id": client_id}
    if method is not None:
        client["token_endpoint_auth_method"] = method.value
    needs_secret = method in (
        ClientAuthMethod.client_secret_basic,
        ClientAuthMethod.client_secret_post,
    )
    if secret_stdin or needs_secret:
        if method is ClientAuthMethod.none:
            fail("a public client (--client-auth-method none) has no secret")
        client["client_secret"] = read_secret(secret_stdin)
    return client


def _wait(r: Remote, authorization: str, timeout_s: float, interval_s: float) -> dict[str, Any]:
    """Poll the authorization until it completes; a failure or the timeout exits."""
    give_up = time.monotonic() + timeout_s
    while True:
        status: dict[str, Any] = r.client.get(r.path("oauth", "authorizations", authorization))
        if status["status"] == "completed":
            return status
        if status["status"] == "failed":
            fail(f"the authorization failed ({status.get('reason') or 'no reason given'})")
        if time.monotonic() >= give_up:
            fail(
                "timed out waiting for the authorization (its URL works until "
                f"{when(status.get('expires_at'))}: the hub still takes the token if it is "
                "used by then)",
                TIMED_OUT,
            )
        time.sleep(interval_s)


def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def _callback_note(r: Remote, authorization_url: str) -> None:
    """Say so when the browser will be sent back somewhere other than the hub logged in to: the
    callback is ``HUB_PUBLIC_URL/oauth/callback``, and a hub whose ``HUB_PUBLIC_URL`` was left at
    its local default sends a remote operator's browser to an address it cannot reach."""
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(authorization_url).query)
    redirect = (query.get("redirect_uri") or [""])[0]
    if redirect and _origin(redirect) != _origin(r.profile.url):
        note(
            safe(
                f"after you consent, your browser is sent to {redirect} (the hub's "
                f"HUB_PUBLIC_URL), not to {r.profile.url}; if it cannot reach that address, "
                "ask whoever runs the hub to set HUB_PUBLIC_URL"
            )
        )


def _credential_name(r: Remote, credential_id: str) -> str:
    """The credential's name, or its id when the caller may not read it."""
    try:
        return str(r.client.get(r.path("credentials", credential_id))["name"])
    except HubFailure as exc:
        if exc.status in (403, 404):
            return credential_id
        raise


@oauth_app.command("connect")
def connect(
    handle: Annotated[
        str | None,
        typer.Argument(
            metavar="HANDLE", help="The server's handle (or --credential, or --url and --name)."
        ),
    ] = None,
    credential: Annotated[
        str | None,
        typer.Option(
            "--credential",
            metavar="CREDENTIAL",
            help="Re-authorise this OAuth credential (name or id) instead: a step-up.",
        ),
    ] = None,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            metavar="URL",
            help="Connect this MCP server's URL to a new credential, bound to no server yet "
            "(with --name).",
        ),
    ] = None,
    name: Annotated[
        str | None,
        typer.Option("--name", metavar="NAME", help="The new credential's name (with --url)."),
    ] = None,
    scope: Annotated[
        list[str] | None,
        typer.Option("--scope", metavar="SCOPE", help="A scope to ask for (repeatable)."),
    ] = None,
    client_id: Annotated[
        str | None,
        typer.Option("--client-id", metavar="ID", help="A client registered beforehand."),
    ] = None,
    client_auth_method: Annotated[
        ClientAuthMethod | None,
        typer.Option("--client-auth-method", help="How that client authenticates."),
    ] = None,
    client_secret_stdin: Annotated[
        bool,
        typer.Option("--client-secret-stdin", help="Read that client's secret from stdin."),
    ] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", min=1, metavar="SECONDS", help="How long to wait.")
    ] = 600.0,
    interval: Annotated[
        float,
        typer.Option("--interval", min=0.1, metavar="SECONDS", help="Seconds between polls."),
    ] = 2.0,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
) -> None:
    """Print the authorization URL to open, and wait until the hub has the token.

    Exit 0: connected. 1: refused, or the authorization failed. 2: --timeout passed."""
    if (url is None) != (name is None):
        fail("--url and --name go together: the server's URL and the new credential's name")
    if [handle, credential, url].count(None) != 2:
        fail("name a server HANDLE, --credential, or --url with --name: one of them")
    body: dict[str, Any] = {}
    if scope:
        body["scopes"] = scope
    with remote(profile, False, tenant) as r:  # logged in before anything is asked for
        client = _client(client_id, client_auth_method, client_secret_stdin)
        if client is not None:
            body["client"] = client
        if credential is not None:
            body["credential_id"] = resolve.credential(r, credential)["id"]
        elif url is not None:
            body["url"], body["credential_name"] = url, name
        else:
            body["server"] = handle
        with progress("finding the authorization server"):  # probes, metadata, registration
            started = r.client.post(r.path("oauth", "authorizations"), body)
        note("Open this URL in a browser to authorise the hub:")
        typer.echo(safe(started["authorization_url"]))
        _callback_note(r, str(started["authorization_url"]))
        done = _wait(r, str(started["id"]), timeout, interval)
        server = f"{done['server']}: " if done.get("server") else ""
        made = _credential_name(r, str(done["credential_id"]))
        note(safe(f"connected {server}credential {made} ({done['credential_id']})"))
        if url is not None:
            note(safe(f"use it with: hub servers add HANDLE {url} --credential {made}"))

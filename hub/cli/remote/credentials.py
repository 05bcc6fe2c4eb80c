"""``hub credentials``: a tenant's encrypted secrets for upstream servers (DESIGN §3, §14).

The secret is read from a hidden prompt (asked twice) or, with ``--secret-stdin`` or when standard
input is a pipe, from standard input — never from a flag, where ``ps`` and shell history would
keep it. It is sent to the hub once and never shown again by anything. Types: ``api_key`` and
``oauth_token`` are sent upstream as a bearer (to the origin of ``--base-url`` only); ``secret``
is stored and never sent anywhere.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated, Any

import typer

from hub.cli.remote import resolve
from hub.cli.remote.client import HubFailure
from hub.cli.remote.context import JsonOpt, ProfileOpt, Remote, TenantOpt, remote
from hub.cli.remote.output import Column, fail, note, safe
from hub.cli.remote.profiles import DEFAULT_PROFILE

__all__ = ["credentials_app", "read_secret"]

credentials_app = typer.Typer(no_args_is_help=True, help="Credentials (write-only secrets).")

CredentialArg = Annotated[str, typer.Argument(metavar="CREDENTIAL", help="Name or id.")]
SecretStdinOpt = Annotated[
    bool, typer.Option("--secret-stdin", help="Read the secret from standard input.")
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option("--base-url", metavar="URL", help="The provider's URL; its origin is the pin."),
]
ExpiresOpt = Annotated[
    str | None, typer.Option("--expires-at", metavar="TIME", help="ISO 8601, with a zone.")
]
COLUMNS = [
    Column.of("NAME", "name", 40),
    Column.of("TYPE", "type"),
    Column.of("BASE URL", "api_base_url", 50),
    Column.of("STATUS", "status"),
    Column("AUTH", lambda c: ((c.get("metadata") or {}).get("mcp") or {}).get("auth")),
    Column.of("SECRET", "has_secret"),
    Column.of("VERSION", "version"),
    Column.of("ID", "id"),
    Column.time("EXPIRES", "expires_at"),
]


class CredentialType(StrEnum):
    api_key = "api_key"
    oauth_token = "oauth_token"  # noqa: S105 - a type's name, not a secret
    secret = "secret"  # noqa: S105 - a type's name, not a secret


class AuthMode(StrEnum):
    none = "none"
    token = "token"  # noqa: S105 - a mode's name, not a secret
    oauth = "oauth"


def read_secret(from_stdin: bool) -> str:
    """The secret, from stdin (one value; a trailing newline is dropped) or a hidden prompt.

    Standard input is read without ``--secret-stdin`` too when it is not a terminal (a pipe or a
    file), as ``hub login`` reads a key: a hidden prompt cannot read a pipe, and would only print
    a warning about echo before it reads the secret anyway.
    """
    if from_stdin or (sys.stdin is not None and not sys.stdin.isatty()):
        value = sys.stdin.read()
        value = value[:-1] if value.endswith("\n") else value
        value = value[:-1] if value.endswith("\r") else value
    else:
        value = typer.prompt("Secret", hide_input=True, confirmation_prompt=True, err=True)
    if not value:
        fail("the secret is empty")
    return value


def _piped() -> str | None:
    """What standard input holds when it is a pipe or a file with something in it (one value,
    a trailing newline dropped); None for a terminal or nothing."""
    if sys.stdin is None or sys.stdin.isatty():
        return None
    value = sys.stdin.read().removesuffix("\n").removesuffix("\r")
    return value or None


@credentials_app.command("list")
def list_credentials(
    tenant: TenantOpt = None, profile: ProfileOpt = DEFAULT_PROFILE, as_json: JsonOpt = False
) -> None:
    """List credentials (never their secrets)."""
    with remote(profile, as_json, tenant) as r:
        items = r.client.list_all(r.path("credentials"))
        r.out.table(items, COLUMNS)
        _reconnect_notes(r, items)


@credentials_app.command("show")
def show_credential(
    credential: CredentialArg,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Show a credential (never its secret)."""
    with remote(profile, as_json, tenant) as r:
        found = resolve.credential(r, credential)
        r.out.record(found, COLUMNS)
        _reconnect_notes(r, [found])


def _reconnect_notes(r: Remote, items: list[dict[str, Any]]) -> None:
    """For each OAuth credential in ``error`` (its refresh token refused: nothing can use it
    until someone consents again), the command that connects it again."""
    broken = [c for c in items if c.get("type") == "oauth_token" and c.get("status") == "error"]
    if not broken:
        return
    try:
        servers = r.client.list_all(r.path("servers"))
    except HubFailure:
        servers = []
    for credential in broken:
        handles = [s["handle"] for s in servers if s.get("credential_id") == credential["id"]]
        again = (
            f"hub oauth connect {handles[0]}"
            if handles
            else f"hub oauth connect --credential {credential['name']}"
        )
        note(
            safe(
                f"{credential['name']}: its authorization server refused the refresh token or "
                f"the hub's client, so nothing can use it until you connect again: {again}"
            )
        )


@credentials_app.command("create")
def create_credential(
    name: Annotated[
        str, typer.Argument(metavar="NAME", help="A name, unique in the tenant to use it as one.")
    ],
    kind: Annotated[CredentialType, typer.Option("--type", help="What the secret is.")] = (
        CredentialType.api_key
    ),
    base_url: BaseUrlOpt = None,
    auth: Annotated[
        AuthMode | None,
        typer.Option("--auth", help="MCP auth mode; 'none' stores no secret (a keyless server)."),
    ] = None,
    expires_at: ExpiresOpt = None,
    secret_stdin: SecretStdinOpt = False,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Store a credential; the secret comes from a prompt or --secret-stdin."""
    body: dict[str, Any] = {"name": name, "type": kind.value}
    if base_url is not None:
        body["api_base_url"] = base_url
    if expires_at is not None:
        body["expires_at"] = expires_at
    if auth is not None:
        body["metadata"] = {"mcp": {"auth": auth.value}}
    if auth is not AuthMode.none:
        body["secret"] = read_secret(secret_stdin)
    with remote(profile, as_json, tenant) as r:
        made = r.client.post(r.path("credentials"), body)
        r.out.done(made, f"credential {made['name']} created ({made['id']})")
        resolve.warn_shared_name(r, "credentials", made)


@credentials_app.command("update")
def update_credential(
    credential: CredentialArg,
    name: Annotated[str | None, typer.Option("--name", help="New name.")] = None,
    base_url: BaseUrlOpt = None,
    new_secret: Annotated[
        bool, typer.Option("--new-secret", help="Replace the secret (asked for, hidden).")
    ] = False,
    secret_stdin: SecretStdinOpt = False,
    expires_at: ExpiresOpt = None,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Rename, move (a new --base-url needs a new secret) or re-key a credential."""
    body: dict[str, Any] = {
        k: v
        for k, v in {"name": name, "api_base_url": base_url, "expires_at": expires_at}.items()
        if v is not None
    }
    if new_secret or secret_stdin:
        body["secret"] = read_secret(secret_stdin)
    elif (piped := _piped()) is not None:  # a secret on a pipe is a new secret, as for create
        body["secret"] = piped
    if not body:
        fail("nothing to change: give --name, --base-url, --expires-at or a new secret")
    with remote(profile, as_json, tenant) as r:
        found = resolve.credential(r, credential)
        body["version"] = found["version"]  # compare-and-swap on what was just read
        made = r.client.patch(r.path("credentials", found["id"]), body)
        r.out.done(made, f"credential {made['name']} updated (version {made['version']})")


@credentials_app.command("delete")
def delete_credential(
    credential: CredentialArg, tenant: TenantOpt = None, profile: ProfileOpt = DEFAULT_PROFILE
) -> None:
    """Revoke a credential: final, and its encrypted secret is wiped."""
    with remote(profile, False, tenant) as r:
        found = resolve.credential(r, credential)
        r.client.delete(r.path("credentials", found["id"]))
        typer.echo(f"credential {found['name']} revoked")
        try:
            servers = r.client.list_all(r.path("servers"))
        except HubFailure:  # may not list servers: nothing more to say
            servers = []
        users = sorted(s["handle"] for s in servers if s.get("credential_id") == found["id"])
        if users:
            note(
                safe(
                    f"servers {', '.join(users)} used it: their calls fail until each gets"
                    f" another, e.g. `hub servers update {users[0]} --credential NAME`"
                    " (or --no-credential)"
                )
            )

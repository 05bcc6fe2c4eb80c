"""``hub servers``: registered MCP servers, named by handle (immutable, never reused)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from hub.cli.remote import resolve
from hub.cli.remote.context import JsonOpt, ProfileOpt, Remote, TenantOpt, remote
from hub.cli.remote.output import Column, fail
from hub.cli.remote.profiles import DEFAULT_PROFILE

__all__ = ["servers_app"]

servers_app = typer.Typer(no_args_is_help=True, help="Registered MCP servers.")

HandleArg = Annotated[str, typer.Argument(metavar="HANDLE", help="The server's handle.")]
CredentialOpt = Annotated[
    str | None,
    typer.Option("--credential", "-c", metavar="NAME", help="Credential to reach it: name or id."),
]


def _columns(r: Remote) -> list[Column]:
    names = resolve.names(r, "credentials")
    return [
        Column.of("HANDLE", "handle"),
        Column.of("URL", "url", 60),
        Column("CREDENTIAL", lambda s: names.get(s.get("credential_id"), s.get("credential_id"))),
        Column.of("ERA", "era"),
        Column.of("PROTOCOL", "protocol_version"),
        Column.time("CREATED", "created_at"),
    ]


@servers_app.command("list")
def list_servers(
    tenant: TenantOpt = None, profile: ProfileOpt = DEFAULT_PROFILE, as_json: JsonOpt = False
) -> None:
    """List registered servers."""
    with remote(profile, as_json, tenant) as r:
        r.out.table(r.client.list_all(r.path("servers")), _columns(r))


@servers_app.command("show")
def show_server(
    handle: HandleArg,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Show a server."""
    with remote(profile, as_json, tenant) as r:
        r.out.record(r.client.get(r.path("servers", handle)), [*_columns(r), Column.of("ID", "id")])


@servers_app.command("add")
def add_server(
    handle: HandleArg,
    url: Annotated[str, typer.Argument(metavar="URL", help="Its MCP endpoint (https).")],
    credential: CredentialOpt = None,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Register a server under HANDLE (checked as discovery checks it)."""
    with remote(profile, as_json, tenant) as r:
        body: dict[str, Any] = {"handle": handle, "url": url}
        if credential is not None:
            body["credential_id"] = resolve.credential(r, credential)["id"]
        made = r.client.post(r.path("servers"), body)
        r.out.done(made, f"server {made['handle']} registered ({made['url']})")


@servers_app.command("update")
def update_server(
    handle: HandleArg,
    url: Annotated[str | None, typer.Option("--url", help="A new MCP endpoint.")] = None,
    credential: CredentialOpt = None,
    no_credential: Annotated[
        bool, typer.Option("--no-credential", help="Reach it with no credential.")
    ] = False,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Change a server's URL or credential (the handle never changes)."""
    if credential is not None and no_credential:
        fail("--credential and --no-credential exclude each other")
    with remote(profile, as_json, tenant) as r:
        body: dict[str, Any] = {} if url is None else {"url": url}
        if credential is not None:
            body["credential_id"] = resolve.credential(r, credential)["id"]
        if no_credential:
            body["credential_id"] = None
        if not body:
            fail("nothing to change (see --help)")
        made = r.client.patch(r.path("servers", handle), body)
        r.out.done(made, f"server {made['handle']} updated")


@servers_app.command("delete")
def delete_server(
    handle: HandleArg, tenant: TenantOpt = None, profile: ProfileOpt = DEFAULT_PROFILE
) -> None:
    """Delete a server (refused while a deployment uses it; the handle stays reserved)."""
    with remote(profile, False, tenant) as r:
        r.client.delete(r.path("servers", handle))
        typer.echo(f"server {handle} deleted")

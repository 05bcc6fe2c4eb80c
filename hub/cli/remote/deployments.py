"""``hub deployments``: an agent plus pinned catalog versions of servers (DESIGN §10, §12).

``hub deployments create AGENT --server github --server jira@3`` pins each server's latest
catalog version unless ``@VERSION`` names one; ``--allow-without-ask github.search`` lets that
tool skip an ``ask`` (never a tool declaring ``destructiveHint``).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from hub.cli.remote import resolve
from hub.cli.remote.context import JsonOpt, ProfileOpt, Remote, TenantOpt, remote
from hub.cli.remote.output import Column, fail
from hub.cli.remote.profiles import DEFAULT_PROFILE

__all__ = ["deployments_app"]

deployments_app = typer.Typer(no_args_is_help=True, help="Deployments of catalogs to agents.")

DeploymentArg = Annotated[str, typer.Argument(metavar="DEPLOYMENT", help="Name or id.")]
ServerOpt = Annotated[
    list[str] | None,
    typer.Option("--server", "-s", metavar="HANDLE[@VERSION]", help="A server to deploy."),
]
AllowOpt = Annotated[
    list[str] | None,
    typer.Option("--allow-without-ask", metavar="HANDLE.TOOL", help="A tool that skips ask."),
]


def _servers(deployment: dict[str, Any]) -> str:
    return ", ".join(f"{e['server']}@{e['catalog_version']}" for e in deployment["entries"])


def _columns(r: Remote) -> list[Column]:
    names = resolve.names(r, "principals")
    return [
        Column.of("ID", "id"),
        Column.of("NAME", "name", 40),
        Column.named("AGENT", "agent_id", names),
        Column("SERVERS", _servers, 60),
        Column.time("UPDATED", "updated_at"),
    ]


def _entries(r: Remote, servers: list[str], allow: list[str]) -> list[dict[str, Any]]:
    entries: dict[str, dict[str, Any]] = {}
    for spec in servers:
        handle, _, version = spec.partition("@")
        if version and not version.isdigit():
            fail(f"--server {spec}: VERSION must be a number")
        pinned = (
            int(version)
            if version
            else int(r.client.get(r.path("servers", handle, "catalogs", "latest"))["version"])
        )
        entries[handle] = {"server": handle, "catalog_version": pinned, "allow_without_ask": []}
    for tool in allow:
        handle, dot, name = tool.partition(".")
        if not dot or handle not in entries:
            fail(f"--allow-without-ask {tool}: name a tool of a --server as HANDLE.TOOL")
        entries[handle]["allow_without_ask"].append(name)
    return list(entries.values())


@deployments_app.command("list")
def list_deployments(
    tenant: TenantOpt = None, profile: ProfileOpt = DEFAULT_PROFILE, as_json: JsonOpt = False
) -> None:
    """List deployments."""
    with remote(profile, as_json, tenant) as r:
        r.out.table(r.client.list_all(r.path("deployments")), _columns(r))


@deployments_app.command("show")
def show_deployment(
    deployment: DeploymentArg,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Show a deployment, its entries and its agents' MCP endpoint."""
    with remote(profile, as_json, tenant) as r:
        found = resolve.deployment(r, deployment)
        if r.out.as_json:
            r.out.json(found)
            return
        endpoint = Column(
            "MCP ENDPOINT", lambda d: r.client.url + r.path("deployments", d["id"], "mcp")
        )
        r.out.record(found, [*_columns(r), endpoint])
        r.out.table(
            found["entries"],
            [
                Column.of("SERVER", "server"),
                Column.of("VERSION", "catalog_version"),
                Column.of("ALLOW WITHOUT ASK", "allow_without_ask"),
            ],
        )


@deployments_app.command("create")
def create_deployment(
    agent: Annotated[str, typer.Argument(metavar="AGENT", help="The agent principal: name or id.")],
    server: ServerOpt = None,
    allow_without_ask: AllowOpt = None,
    name: Annotated[str | None, typer.Option("--name", help="A name for the deployment.")] = None,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Deploy servers' catalogs (latest unless @VERSION) to an agent."""
    with remote(profile, as_json, tenant) as r:
        body: dict[str, Any] = {
            "agent_id": resolve.principal(r, agent)["id"],
            "entries": _entries(r, server or [], allow_without_ask or []),
        }
        if name is not None:
            body["name"] = name
        made = r.client.post(r.path("deployments"), body)
        r.out.done(made, f"deployment {made['id']} created: {_servers(made) or 'no servers'}")


@deployments_app.command("delete")
def delete_deployment(
    deployment: DeploymentArg, tenant: TenantOpt = None, profile: ProfileOpt = DEFAULT_PROFILE
) -> None:
    """Delete a deployment."""
    with remote(profile, False, tenant) as r:
        found = resolve.deployment(r, deployment)
        r.client.delete(r.path("deployments", found["id"]))
        typer.echo(f"deployment {found['id']} deleted")

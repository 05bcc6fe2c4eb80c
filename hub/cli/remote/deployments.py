"""``hub deployments``: an agent plus pinned catalog versions of servers (DESIGN §10, §12).

``hub deployments create AGENT --server github --server jira@3`` pins each server's latest
catalog version unless ``@VERSION`` names one; ``--allow-without-ask github.search`` lets that
tool skip an ``ask`` (never a tool declaring ``destructiveHint``).

``hub deployments update D --server github`` re-pins that entry to the latest version (or
``@VERSION``), keeping its other settings — but a tool whose definition changed between the two
versions no longer skips ask unless named again with ``--allow-without-ask`` (the command says
which); a server not yet deployed is added, ``--remove-server`` drops one, and
``--allow-without-ask`` replaces the list of the servers it names. The entries are
read, changed and written back whole (``PATCH`` replaces them); the others stay as they are.
``hub deployments drift D`` lists the tools whose live definition left their pin.

``--set HANDLE.FIELD=VALUE`` sets one of an entry's settings (``mode`` relay|direct,
``arguments`` strict|schema, ``tool_names`` prefixed|plain; DESIGN §10.2, §10.5), and
``--sidecar NAME`` names the service principal that may lease direct-mode credentials
(``--sidecar none`` removes it on update). The hub checks each, as it does over REST; a
direct-mode entry whose credential the sidecar may not use yet is named after the write, with
the grant it needs (:mod:`~hub.cli.remote.leases`).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from hub.cli.remote import resolve
from hub.cli.remote.context import JsonOpt, ProfileOpt, Remote, TenantOpt, is_id, remote
from hub.cli.remote.leases import warn_unleasable
from hub.cli.remote.output import Column, fail, note
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
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="HANDLE.FIELD=VALUE",
        help="An entry's setting: mode=relay|direct, arguments=strict|schema, "
        "tool_names=prefixed|plain.",
    ),
]
SidecarOpt = Annotated[
    str | None,
    typer.Option(
        "--sidecar",
        metavar="PRINCIPAL",
        help="The service principal that may lease direct-mode credentials (name or id; "
        "'none' on update removes it).",
    ),
]
#: the entry settings ``--set`` may change, and their values
ENTRY_SETTINGS = {
    "mode": ("relay", "direct"),
    "arguments": ("strict", "schema"),
    "tool_names": ("prefixed", "plain"),
}


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


def _pin(r: Remote, spec: str) -> tuple[str, int]:
    """``HANDLE[@VERSION]`` → the handle and the version (the latest when none is named)."""
    handle, _, version = spec.partition("@")
    if version and not version.isdigit():
        fail(f"--server {spec}: VERSION must be a number")
    if version:
        return handle, int(version)
    return handle, int(r.client.get(r.path("servers", handle, "catalogs", "latest"))["version"])


def _allow(entries: dict[str, dict[str, Any]], allow: list[str]) -> None:
    """Each named server's ``allow_without_ask`` becomes exactly the tools named for it."""
    named: dict[str, list[str]] = {}
    for tool in allow:
        handle, dot, name = tool.partition(".")
        if not dot or handle not in entries:
            fail(f"--allow-without-ask {tool}: name a tool of a deployed server as HANDLE.TOOL")
        named.setdefault(handle, []).append(name)
    for handle, tools in named.items():
        entries[handle]["allow_without_ask"] = tools


def _unchanged_skip_ask(r: Remote, entry: dict[str, Any], pinned: int) -> dict[str, Any]:
    """``entry`` re-pinned to ``pinned`` keeps skipping ask only for the tools whose definition
    did not change (DESIGN §8: a changed tool's ``allow_without_ask`` stops applying until
    renewed); the others are named, with the flag that renews them. A red-team walk (stop 50):
    a re-pin carried the list over, so a tool rewritten upstream ran with no ask."""
    skipping: list[str] = entry.get("allow_without_ask") or []
    old = entry.get("catalog_version")
    if not skipping or old is None or old == pinned:
        return entry
    handle = entry["server"]
    diff = r.client.get(
        r.path("servers", handle, "catalogs", str(pinned), "diff"), **{"from": str(old)}
    )
    gone = set(diff["removed"]) | {tool["name"] for tool in diff["changed"]}
    dropped = [name for name in skipping if name in gone]
    if dropped:
        tools = " ".join(f"--allow-without-ask {handle}.{name}" for name in dropped)
        note(
            f"{', '.join(f'{handle}.{name}' for name in dropped)} changed or went between "
            f"versions {old} and {pinned}: it asks again (to skip ask still: {tools})"
        )
    return {**entry, "allow_without_ask": [name for name in skipping if name not in gone]}


def _settings(entries: dict[str, dict[str, Any]], settings: list[str]) -> None:
    """``HANDLE.FIELD=VALUE`` for each of ``settings``, on that server's entry."""
    for spec in settings:
        target, equals, value = spec.partition("=")
        handle, dot, name = target.partition(".")
        if not equals or not dot or name not in ENTRY_SETTINGS:
            fields = ", ".join(ENTRY_SETTINGS)
            fail(f"--set {spec}: expected HANDLE.FIELD=VALUE, FIELD one of {fields}")
        if value not in ENTRY_SETTINGS[name]:
            fail(f"--set {spec}: {name} is one of {', '.join(ENTRY_SETTINGS[name])}")
        if handle not in entries:
            fail(f"--set {spec}: the deployment has no server {handle!r}")
        entries[handle][name] = value


def _entries(
    r: Remote, servers: list[str], allow: list[str], settings: list[str]
) -> list[dict[str, Any]]:
    entries: dict[str, dict[str, Any]] = {}
    for spec in servers:
        handle, pinned = _pin(r, spec)
        entries[handle] = {"server": handle, "catalog_version": pinned, "allow_without_ask": []}
    _allow(entries, allow)
    _settings(entries, settings)
    return list(entries.values())


AgentOpt = Annotated[
    str | None,
    typer.Option(
        "--agent",
        metavar="AGENT",
        help="Only this agent's deployments (name or id; an agent lists its own by its id).",
    ),
]


@deployments_app.command("list")
def list_deployments(
    agent: AgentOpt = None,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """List deployments (or one agent's)."""
    with remote(profile, as_json, tenant) as r:
        params: dict[str, Any] = {}
        if agent is not None:  # an id is sent as it is: an agent may not read principals
            params["agent_id"] = agent if is_id(agent) else resolve.principal(r, agent)["id"]
        r.out.table(r.client.list_all(r.path("deployments"), **params), _columns(r))


@deployments_app.command("show")
def show_deployment(
    deployment: DeploymentArg,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Show a deployment, its entries, its agent's MCP endpoint and the tools it offers."""
    with remote(profile, as_json, tenant) as r:
        found = resolve.deployment(r, deployment)
        if r.out.as_json:
            r.out.json(found)
            return
        endpoint = Column(
            "MCP ENDPOINT", lambda d: r.client.url + r.path("deployments", d["id"], "mcp")
        )
        sidecar = Column.named("SIDECAR", "sidecar_id", resolve.names(r, "principals"))
        r.out.record(found, [*_columns(r), sidecar, endpoint])
        r.out.table(
            found["entries"],
            [
                Column.of("SERVER", "server"),
                Column.of("VERSION", "catalog_version"),
                Column.of("ALLOW WITHOUT ASK", "allow_without_ask"),
                Column.of("MODE", "mode"),
                Column.of("ARGUMENTS", "arguments"),
                Column.of("TOOL NAMES", "tool_names"),
            ],
        )
        _offered(r, found["id"])


def _offered(r: Remote, deployment_id: str) -> None:
    """The tools the agent is offered, as its bundle says (what it sees in ``tools/list``):
    each with its effective decision and drift; denied tools are not offered."""
    bundle = r.client.get(r.path("deployments", deployment_id, "bundle"))
    tools = [
        {**tool, "server": server["handle"]}
        for server in bundle.get("servers") or []
        for tool in server.get("tools") or []
    ]
    typer.echo("tools offered to the agent (denied ones are not):")
    r.out.table(
        tools,
        [
            Column.of("TOOL", "wire_name"),
            Column.of("GRANT KEY", "grant_key"),
            Column.of("EFFECT", "effect"),
            Column.of("DRIFTED", "drifted"),
        ],
    )


@deployments_app.command("create")
def create_deployment(
    agent: Annotated[str, typer.Argument(metavar="AGENT", help="The agent principal: name or id.")],
    server: ServerOpt = None,
    allow_without_ask: AllowOpt = None,
    set_: SetOpt = None,
    sidecar: SidecarOpt = None,
    name: Annotated[str | None, typer.Option("--name", help="A name for the deployment.")] = None,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Deploy servers' catalogs (latest unless @VERSION) to an agent."""
    with remote(profile, as_json, tenant) as r:
        body: dict[str, Any] = {
            "agent_id": resolve.principal(r, agent)["id"],
            "entries": _entries(r, server or [], allow_without_ask or [], set_ or []),
        }
        if name is not None:
            body["name"] = name
        if sidecar is not None:
            body["sidecar_id"] = resolve.principal(r, sidecar)["id"]
        made = r.client.post(r.path("deployments"), body)
        r.out.done(made, f"deployment {made['id']} created: {_servers(made) or 'no servers'}")
        resolve.warn_shared_name(r, "deployments", made)
        warn_unleasable(r, made)


@deployments_app.command("update")
def update_deployment(
    deployment: DeploymentArg,
    server: Annotated[
        list[str] | None,
        typer.Option(
            "--server",
            "-s",
            metavar="HANDLE[@VERSION]",
            help="Re-pin a server (latest unless @VERSION), or add one.",
        ),
    ] = None,
    remove_server: Annotated[
        list[str] | None,
        typer.Option("--remove-server", metavar="HANDLE", help="A server to take out."),
    ] = None,
    allow_without_ask: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-without-ask",
            metavar="HANDLE.TOOL",
            help="The tools of that server that skip ask (replaces its list).",
        ),
    ] = None,
    set_: SetOpt = None,
    sidecar: SidecarOpt = None,
    name: Annotated[str | None, typer.Option("--name", help="A new name.")] = None,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Re-pin, add or remove servers, change entries' settings or what skips ask, name the
    sidecar, or rename a deployment."""
    with remote(profile, as_json, tenant) as r:
        # the entries are read, changed and written back whole: the write names the read's
        # ETag, so a change someone made in between is refused (412), never overwritten
        path = r.path("deployments", resolve.deployment(r, deployment)["id"])
        found, etag = r.client.read_tagged(path)
        body: dict[str, Any] = {} if name is None else {"name": name}
        if sidecar is not None:
            none = sidecar == "none"
            body["sidecar_id"] = None if none else resolve.principal(r, sidecar)["id"]
        if server or remove_server or allow_without_ask or set_:
            entries = {e["server"]: dict(e) for e in found["entries"]}
            for handle in remove_server or []:
                if entries.pop(handle, None) is None:
                    fail(f"--remove-server {handle}: the deployment has no such server")
            renewed = {tool.partition(".")[0] for tool in allow_without_ask or []}
            for spec in server or []:
                handle, pinned = _pin(r, spec)
                kept = entries.get(handle, {"server": handle, "allow_without_ask": []})
                if handle not in renewed:
                    kept = _unchanged_skip_ask(r, kept, pinned)
                entries[handle] = {**kept, "catalog_version": pinned}
            _allow(entries, allow_without_ask or [])
            _settings(entries, set_ or [])
            body["entries"] = list(entries.values())
        if not body:
            fail(
                "nothing to change: give --server, --remove-server, --allow-without-ask, --set, "
                "--sidecar or --name"
            )
        made = r.client.patch(path, body, if_match=etag)
        r.out.done(made, f"deployment {made['id']} updated: {_servers(made) or 'no servers'}")
        warn_unleasable(r, made)


@deployments_app.command("drift")
def show_drift(
    deployment: DeploymentArg,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """The deployment's drifted tools (changed, gone or renamed since pinned) and each server's
    last probe."""
    with remote(profile, as_json, tenant) as r:
        found = resolve.deployment(r, deployment)
        drift = r.client.get(r.path("deployments", found["id"], "drift"))
        if r.out.as_json:
            r.out.json(drift)
            return
        r.out.table(
            drift["servers"],
            [
                Column.of("SERVER", "server"),
                Column.of("PROBE", "status"),
                Column.time("CHECKED", "checked_at"),
                Column.of("REASON", "reason"),
            ],
        )
        if not drift["tools"]:
            typer.echo("no tool has drifted from its pin")
            return
        r.out.table(
            drift["tools"],
            [
                Column.of("TOOL", "grant_key"),
                Column.of("VERSION", "catalog_version"),
                Column.of("DRIFT", "kind"),
                Column("FIELDS", lambda t: ", ".join(t["changed"])),
                Column.of("RENAMED TO", "renamed_to"),
                Column.time("DETECTED", "detected_at"),
            ],
        )


@deployments_app.command("delete")
def delete_deployment(
    deployment: DeploymentArg, tenant: TenantOpt = None, profile: ProfileOpt = DEFAULT_PROFILE
) -> None:
    """Delete a deployment."""
    with remote(profile, False, tenant) as r:
        found = resolve.deployment(r, deployment)
        r.client.delete(r.path("deployments", found["id"]))
        typer.echo(f"deployment {found['id']} deleted")

"""``hub catalogs``: snapshots of a server's tools, their versions and their drift."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from hub.cli.remote import resolve
from hub.cli.remote.client import HubFailure
from hub.cli.remote.context import JsonOpt, ProfileOpt, Remote, TenantOpt, remote
from hub.cli.remote.output import Column, fail, note, progress
from hub.cli.remote.profiles import DEFAULT_PROFILE

__all__ = ["catalogs_app"]

catalogs_app = typer.Typer(no_args_is_help=True, help="Catalog snapshots and their diffs.")

HandleArg = Annotated[str, typer.Argument(metavar="HANDLE", help="The server's handle.")]


def _summary(names: dict[Any, Any]) -> list[Column]:
    return [
        Column.of("VERSION", "version"),
        Column("SHA256", lambda c: str(c.get("sha256", ""))[:12]),
        Column.of("PROTOCOL", "protocol_version"),
        Column.time("DISCOVERED", "discovered_at"),
        Column.named("BY", "discovered_by", names),
    ]


TOOLS = [
    Column.of("TOOL", "name", 40),
    Column("DESCRIPTION", lambda t: str(t.get("description") or "").partition("\n")[0], 60),
    Column("DESTRUCTIVE", lambda t: bool((t.get("annotations") or {}).get("destructiveHint"))),
]


def _version(value: str) -> str:
    if value != "latest" and not (value.isdigit() and int(value) > 0):
        fail("a version is a positive number or 'latest'")
    return value


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True, sort_keys=True, separators=(",", ":"))


def _diff_rows(diff: dict[str, Any]) -> list[dict[str, Any]]:
    rows = [{"change": "added", "tool": name} for name in diff["added"]]
    rows += [{"change": "removed", "tool": name} for name in diff["removed"]]
    for tool in diff["changed"]:
        for field in tool["fields"]:
            rows.append(
                {
                    "change": "changed",
                    "tool": tool["name"],
                    "field": field,
                    "before": _compact(tool["before"][field]) if field in tool["before"] else None,
                    "after": _compact(tool["after"][field]) if field in tool["after"] else None,
                }
            )
    return rows


@catalogs_app.command("snapshot")
def snapshot(
    handle: HandleArg,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Discover the server and snapshot its tools (a new version only if something changed)."""
    with remote(profile, as_json, tenant) as r:
        try:
            with progress(f"discovering {handle}"):
                made = r.client.post(r.path("servers", handle, "catalogs"))
        except HubFailure as exc:
            if exc.fields.get("oauth") is True:
                note(f"{handle} wants OAuth: hub oauth connect {handle}, then snapshot again")
            raise
        count = len(made.get("tools") or [])
        said = "created" if made.get("created") else "unchanged: still"
        tools = f"{count} tool" + ("" if count == 1 else "s")
        r.out.done(made, f"{handle}: catalog {said} version {made['version']} ({tools})")


@catalogs_app.command("list")
def list_catalogs(
    handle: HandleArg,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """List a server's catalog versions."""
    with remote(profile, as_json, tenant) as r:
        catalogs = r.client.list_all(r.path("servers", handle, "catalogs"))
        r.out.table(catalogs, _summary(resolve.names(r, "principals")))


@catalogs_app.command("show")
def show_catalog(
    handle: HandleArg,
    version: Annotated[
        str, typer.Argument(metavar="[VERSION]", help="A version number or 'latest'.")
    ] = "latest",
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Show one catalog version and its tools."""
    with remote(profile, as_json, tenant) as r:
        found = r.client.get(r.path("servers", handle, "catalogs", _version(version)))
        if r.out.as_json:
            r.out.json(found)
            return
        r.out.record(found, _summary(resolve.names(r, "principals")))
        r.out.table(found.get("tools") or [], TOOLS)


def _latest(r: Remote, handle: str) -> int:
    return int(r.client.get(r.path("servers", handle, "catalogs", "latest"))["version"])


@catalogs_app.command("diff")
def diff_catalogs(
    handle: HandleArg,
    from_: Annotated[
        int | None, typer.Option("--from", min=1, help="Older version (default: TO - 1).")
    ] = None,
    to: Annotated[int | None, typer.Option("--to", min=1, help="Newer version (latest).")] = None,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Tools added, removed and changed between two versions, with each field's before/after."""
    with remote(profile, as_json, tenant) as r:
        newer = to if to is not None else _latest(r, handle)
        older = from_ if from_ is not None else newer - 1
        if older < 1:
            fail(f"{handle} has only version {newer}: nothing to compare it with")
        path = r.path("servers", handle, "catalogs", newer, "diff")
        diff = r.client.get(path, **{"from": older})
        if r.out.as_json:
            r.out.json(diff)
            return
        typer.echo(f"{handle}: version {older} → {newer}")
        r.out.table(
            _diff_rows(diff),
            [
                Column.of("CHANGE", "change"),
                Column.of("TOOL", "tool", 40),
                Column.of("FIELD", "field"),
                # whole, never shortened: what changed may be the end of a description
                Column.of("BEFORE", "before"),
                Column.of("AFTER", "after"),
            ],
        )

"""``hub approvals``: calls waiting for a person's decision (DESIGN §10.3, §15).

Against the approvals API: ``GET /tenants/{t}/approvals`` (filters ``status``, ``deployment_id``,
``agent_id``), ``GET …/{a}`` and ``POST …/{a}/decision {"decision": "approve"|"deny", "note"?}``.
``show`` prints the exact arguments the call would forward (escaped, so control and bidi
characters in them are visible instead of acting on the terminal), with their sha256, and the
tool as the call's catalog version holds it (``GET …/servers/{handle}/catalogs/{version}``,
when the caller may read it), so a person sees what the server says the tool does.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any

import typer

from hub.cli.remote import resolve
from hub.cli.remote.client import HubFailure
from hub.cli.remote.context import JsonOpt, ProfileOpt, Remote, TenantOpt, remote
from hub.cli.remote.output import Column
from hub.cli.remote.profiles import DEFAULT_PROFILE

__all__ = ["approvals_app"]

approvals_app = typer.Typer(no_args_is_help=True, help="Approvals of ask-gated tool calls.")

ApprovalArg = Annotated[str, typer.Argument(metavar="APPROVAL", help="The approval's id.")]
NoteOpt = Annotated[
    str | None, typer.Option("--note", help="Why (kept with the decision and audited).")
]


def _columns(names: dict[Any, Any]) -> list[Column]:
    return [
        Column.of("ID", "id"),
        Column.of("STATUS", "status"),
        Column.of("TOOL", "grant_key", 50),
        Column.named("AGENT", "agent_id", names),
        Column.time("REQUESTED", "requested_at"),
        Column.time("EXPIRES", "expires_at"),
    ]


def _detail(names: dict[Any, Any], deployments: dict[Any, Any]) -> list[Column]:
    return [
        *_columns(names),
        Column.named("DEPLOYMENT", "deployment_id", deployments),
        Column.of("CATALOG", "catalog_version"),
        Column.of("ARGUMENTS SHA256", "arguments_sha256"),
        Column.named("DECIDED BY", "decided_by", names),
        Column.time("DECIDED", "decided_at"),
        Column.of("NOTE", "note"),
        Column.of("DRIFT", "drift"),
    ]


class Status(StrEnum):
    pending = "pending"
    approved = "approved"
    denied = "denied"
    expired = "expired"
    used = "used"


@approvals_app.command("list")
def list_approvals(
    status: Annotated[Status | None, typer.Option("--status", help="Only these.")] = None,
    deployment: Annotated[
        str | None, typer.Option("--deployment", metavar="DEPLOYMENT", help="Name or id.")
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", metavar="AGENT", help="Name or id.")
    ] = None,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """List approvals (pending first is the hub's order), with filters."""
    with remote(profile, as_json, tenant) as r:
        items = r.client.list_all(
            r.path("approvals"),
            status=status.value if status else None,
            deployment_id=resolve.deployment(r, deployment)["id"] if deployment else None,
            agent_id=resolve.principal(r, agent)["id"] if agent else None,
        )
        r.out.table(items, _columns(resolve.names(r, "principals")))


@approvals_app.command("show")
def show_approval(
    approval: ApprovalArg,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Show an approval and the exact arguments the call would forward."""
    with remote(profile, as_json, tenant) as r:
        found = r.client.get(r.path("approvals", approval))
        if r.out.as_json:
            r.out.json(found)
            return
        names = resolve.names(r, "principals")
        r.out.record(found, _detail(names, resolve.names(r, "deployments")))
        arguments = found.get("arguments")
        if arguments is None:
            typer.echo("arguments: unreadable (their encryption key has left the hub's keyring)")
        else:
            typer.echo("arguments (exactly as they would be forwarded):")
            typer.echo(json.dumps(arguments, indent=2, ensure_ascii=True, sort_keys=True))
        tool = _pinned_tool(r, found)
        if tool is not None:
            annotations = tool.get("annotations")
            destructive = isinstance(annotations, dict) and annotations.get("destructiveHint")
            flag = "; it declares itself destructive" if destructive is True else ""
            typer.echo(f"the tool, as catalog version {found['catalog_version']} holds it{flag}:")
            typer.echo(json.dumps(tool, indent=2, ensure_ascii=True, sort_keys=True))


def _pinned_tool(r: Remote, found: dict[str, Any]) -> dict[str, Any] | None:
    """The approval's tool in its catalog version; ``None`` when the caller may not read the
    catalog or it is gone (the rest of the approval is shown all the same)."""
    path = r.path("servers", found["server"], "catalogs", str(found["catalog_version"]))
    try:
        catalog = r.client.get(path)
    except HubFailure as exc:
        if exc.status in (403, 404):
            return None
        raise
    tools = catalog.get("tools") if isinstance(catalog, dict) else None
    return next(
        (t for t in tools or [] if isinstance(t, dict) and t.get("name") == found["tool"]), None
    )


def _decide(r: Remote, approval: str, decision: str, note: str | None) -> None:
    body = {"decision": decision} if note is None else {"decision": decision, "note": note}
    made = r.client.post(r.path("approvals", approval, "decision"), body)
    r.out.done(made, f"approval {made['id']}: {made['status']}")


@approvals_app.command("approve")
def approve(
    approval: ApprovalArg,
    note: NoteOpt = None,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Approve a pending call (people only; needs the tool's call yourself)."""
    with remote(profile, as_json, tenant) as r:
        _decide(r, approval, "approve", note)


@approvals_app.command("deny")
def deny(
    approval: ApprovalArg,
    note: NoteOpt = None,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Deny a pending call."""
    with remote(profile, as_json, tenant) as r:
        _decide(r, approval, "deny", note)

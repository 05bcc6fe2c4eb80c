"""``hub grants``: allow, ask or deny for a principal on a resource pattern (DESIGN §8).

Resources are ``kind:qualifier`` patterns — ``tool:github.*``, ``tool:github.search``,
``credential:*``, ``audit`` — and actions are per kind (``tool`` takes ``call``). A pattern that
names a principal, credential or deployment takes its name or its id (``credential:gh-token`` is
sent as ``credential:<its id>``); principals are named by name or id.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any

import typer

from hub.cli.remote import resolve
from hub.cli.remote.context import JsonOpt, ProfileOpt, Remote, TenantOpt, remote
from hub.cli.remote.output import Column, fail
from hub.cli.remote.profiles import DEFAULT_PROFILE
from hub.core import portable_json

__all__ = ["grants_app"]

grants_app = typer.Typer(no_args_is_help=True, help="Grants: who may do what.")

PrincipalArg = Annotated[str, typer.Argument(metavar="PRINCIPAL", help="Name or id.")]
ResourceArg = Annotated[
    str,
    typer.Argument(
        metavar="RESOURCE", help="A pattern: tool:github.*, credential:*, credential:NAME, …"
    ),
]


class Action(StrEnum):
    read = "read"
    write = "write"
    use = "use"
    decide = "decide"
    call = "call"
    any = "*"


class Effect(StrEnum):
    allow = "allow"
    ask = "ask"
    deny = "deny"


ActionArg = Annotated[Action, typer.Argument(metavar="ACTION", help="call, read, write, …")]
#: after ID, PRINCIPAL and RESOURCE (those need the tenant's names)
COLUMNS = [
    Column.of("ACTION", "action"),
    Column.of("EFFECT", "effect"),
    Column("CONDITIONS", lambda g: g.get("conditions") or None),
    Column.time("EXPIRES", "expires_at"),
]


@grants_app.command("add")
def add_grant(
    principal: PrincipalArg,
    resource: ResourceArg,
    action: ActionArg,
    effect: Annotated[Effect, typer.Option("--effect", help="What the grant says.")] = Effect.allow,
    expires_at: Annotated[
        str | None, typer.Option("--expires-at", metavar="TIME", help="ISO 8601, with a zone.")
    ] = None,
    conditions: Annotated[
        str | None,
        typer.Option("--conditions", metavar="JSON", help='e.g. {"time_window": {…}}'),
    ] = None,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Grant PRINCIPAL an effect for ACTION on RESOURCE."""
    body: dict[str, Any] = {"resource": resource, "action": action.value, "effect": effect.value}
    if expires_at is not None:
        body["expires_at"] = expires_at
    if conditions is not None:
        from hub.core.schemas import MAX_BODY_DEPTH

        try:  # NaN, or nesting past any body's bound, is refused here and not by a traceback
            body["conditions"] = portable_json.loads(conditions, max_depth=MAX_BODY_DEPTH)
        except portable_json.NotPortableJson as refused:
            said = portable_json.why(refused) or ": it is not valid JSON"
            fail(f"--conditions must be a JSON object{said}")
        if not isinstance(body["conditions"], dict):
            fail(
                "--conditions must be a JSON object, e.g."
                ' \'{"time_window": {"start": "09:00", "end": "17:00", "tz": "UTC"}}\''
            )
    with remote(profile, as_json, tenant) as r:
        found = resolve.principal(r, principal)
        body["resource"] = resolve.resource(r, resource)
        made = r.client.post(r.path("grants"), {"principal_id": found["id"], **body})
        r.out.done(
            made,
            f"grant {made['id']}: {found['name']} {made['effect']} {made['action']} "
            f"on {made['resource']}",
        )


@grants_app.command("list")
def list_grants(
    principal: Annotated[
        str | None, typer.Option("--principal", "-p", metavar="PRINCIPAL", help="Only theirs.")
    ] = None,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """List grants (of one principal with --principal)."""
    with remote(profile, as_json, tenant) as r:
        principal_id = resolve.principal(r, principal)["id"] if principal else None
        grants = r.client.list_all(r.path("grants"), principal_id=principal_id)
        people = resolve.names(r, "principals")
        who = Column.named("PRINCIPAL", "principal_id", people)
        resource = Column("RESOURCE", _named_resource(r, people), 60)
        r.out.table(grants, [Column.of("ID", "id"), who, resource, *COLUMNS])


def _named_resource(r: Remote, people: dict[Any, Any]) -> Callable[[dict[str, Any]], str]:
    """A pattern as a person reads it: ``credential:gh-token`` for ``credential:<its id>``
    (a principal's, credential's or deployment's id shown by name, as ``add`` takes it)."""
    by_kind = {
        "principal": people,
        "credential": resolve.names(r, "credentials"),  # each empty with --json: ids are data
        "deployment": resolve.names(r, "deployments"),
    }

    def cell(row: dict[str, Any]) -> str:
        pattern = str(row.get("resource"))
        kind, _, qualifier = pattern.partition(":")
        name = by_kind.get(kind, {}).get(qualifier)
        return f"{kind}:{name}" if name else pattern

    return cell


@grants_app.command("delete")
def delete_grant(
    grant: Annotated[str, typer.Argument(metavar="GRANT", help="The grant's id.")],
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
) -> None:
    """Delete a grant; every replica honours it on the next request."""
    with remote(profile, False, tenant) as r:
        r.client.delete(r.path("grants", grant))
        typer.echo(f"grant {grant} deleted")


@grants_app.command("check")
def check_grant(
    principal: PrincipalArg,
    resource: Annotated[str, typer.Argument(metavar="RESOURCE", help="tool:github.search, …")],
    action: ActionArg,
    deployment: Annotated[
        str | None,
        typer.Option(
            "--deployment",
            metavar="DEPLOYMENT",
            help="Name or id: a tool's effective decision there (ask ceiling, destructive "
            "tools, drift), with the reasons.",
        ),
    ] = None,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """The decision PRINCIPAL gets for ACTION on RESOURCE, and the grant that decides it."""
    with remote(profile, as_json, tenant) as r:
        found = resolve.principal(r, principal)
        resource = resolve.resource(r, resource)
        body = {"principal_id": found["id"], "resource": resource, "action": action.value}
        if deployment is not None:
            body["deployment_id"] = resolve.deployment(r, deployment)["id"]
        decision = r.client.post(r.path("grants", "check"), body)
        columns = [
            Column.of("principal", "principal"),
            Column.of("resource", "resource"),
            Column.of("action", "action"),
            Column.of("effect", "effect"),
            Column.of("grant", "grant_id"),
        ]
        if deployment is not None:
            columns += [
                Column.of("grant effect", "grant_effect"),
                Column("reasons", lambda row: "; ".join(row.get("reasons") or [])),
            ]
        r.out.record(
            {"principal": found["name"], "resource": resource, "action": action.value, **decision},
            columns,
        )

"""``hub principals``: people, agents and services of a tenant (named by name or id)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from hub.cli.remote import resolve
from hub.cli.remote.context import JsonOpt, ProfileOpt, TenantOpt, remote
from hub.cli.remote.output import Column
from hub.cli.remote.profiles import DEFAULT_PROFILE

__all__ = ["principals_app"]

principals_app = typer.Typer(no_args_is_help=True, help="Principals: people, agents, services.")

PrincipalArg = Annotated[str, typer.Argument(metavar="PRINCIPAL", help="Name or id.")]
COLUMNS = [
    Column.of("NAME", "name", 40),
    Column.of("KIND", "kind"),
    Column.of("ROLE", "role"),
    Column.of("STATUS", "status"),
    Column.of("ID", "id"),
    Column.time("CREATED", "created_at"),
]


class Kind(StrEnum):
    user = "user"
    agent = "agent"
    service = "service"


class Role(StrEnum):
    tenant_admin = "tenant_admin"
    operator = "operator"
    deployer = "deployer"
    agent = "agent"


@principals_app.command("list")
def list_principals(
    tenant: TenantOpt = None, profile: ProfileOpt = DEFAULT_PROFILE, as_json: JsonOpt = False
) -> None:
    """List the tenant's principals."""
    with remote(profile, as_json, tenant) as r:
        r.out.table(r.client.list_all(r.path("principals")), COLUMNS)


@principals_app.command("show")
def show_principal(
    principal: PrincipalArg,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Show a principal and its grants."""
    with remote(profile, as_json, tenant) as r:
        found = resolve.principal(r, principal)
        grants = r.client.list_all(r.path("grants"), principal_id=found["id"])
        if r.out.as_json:
            r.out.json({**found, "grants": grants})
            return
        r.out.record(found, COLUMNS)
        r.out.table(
            grants,
            [
                Column.of("RESOURCE", "resource"),
                Column.of("ACTION", "action"),
                Column.of("EFFECT", "effect"),
                Column.of("GRANT", "id"),
            ],
        )


@principals_app.command("create")
def create_principal(
    name: Annotated[
        str, typer.Argument(metavar="NAME", help="A name, unique in the tenant to use it as one.")
    ],
    kind: Annotated[Kind, typer.Option("--kind", help="What the principal is.")] = Kind.user,
    role: Annotated[
        Role | None, typer.Option("--role", help="Role template applied as grants.")
    ] = None,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Create a principal; --role applies its grant template (DESIGN §8)."""
    body = {"kind": kind.value, "name": name, "role": role.value if role else None}
    with remote(profile, as_json, tenant) as r:
        made = r.client.post(r.path("principals"), body)
        r.out.done(made, f"principal {made['name']} created ({made['id']})")
        resolve.warn_shared_name(r, "principals", made)


@principals_app.command("delete")
def delete_principal(
    principal: PrincipalArg, tenant: TenantOpt = None, profile: ProfileOpt = DEFAULT_PROFILE
) -> None:
    """Delete (disable) a principal; its keys stop working at once."""
    with remote(profile, False, tenant) as r:
        found = resolve.principal(r, principal)
        r.client.delete(r.path("principals", found["id"]))
        typer.echo(f"principal {found['name']} deleted")

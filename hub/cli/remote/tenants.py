"""``hub tenants``: the platform admin's tenants (a tenant is named by its slug or id)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import typer

from hub.cli.remote.context import JsonOpt, ProfileOpt, remote, segment
from hub.cli.remote.output import Column, fail, note
from hub.cli.remote.profiles import DEFAULT_PROFILE, save_profile

__all__ = ["tenants_app"]

tenants_app = typer.Typer(no_args_is_help=True, help="Tenants (platform admin).")

TenantArg = Annotated[str, typer.Argument(metavar="TENANT", help="Slug or id.")]
COLUMNS = [
    Column.of("SLUG", "slug"),
    Column.of("NAME", "name", 40),
    Column.of("STATUS", "status"),
    Column.of("ID", "id"),
    Column.time("CREATED", "created_at"),
]


def _path(tenant: str) -> str:
    return "/tenants/" + segment(tenant)


@tenants_app.command("list")
def list_tenants(profile: ProfileOpt = DEFAULT_PROFILE, as_json: JsonOpt = False) -> None:
    """List tenants."""
    with remote(profile, as_json) as r:
        r.out.table(r.client.list_all("/tenants"), COLUMNS)


@tenants_app.command("show")
def show_tenant(
    tenant: TenantArg, profile: ProfileOpt = DEFAULT_PROFILE, as_json: JsonOpt = False
) -> None:
    """Show one tenant."""
    with remote(profile, as_json) as r:
        r.out.record(r.client.get(_path(tenant)), COLUMNS)


@tenants_app.command("create")
def create_tenant(
    slug: Annotated[
        str, typer.Argument(metavar="SLUG", help="lower case, digits and '-'; never UUID-shaped")
    ],
    name: Annotated[
        str | None, typer.Option("--name", help="Display name (default: slug).")
    ] = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Create a tenant."""
    with remote(profile, as_json) as r:
        made = r.client.post("/tenants", {"slug": slug, "name": name or slug})
        r.out.done(made, f"tenant {made['slug']} created ({made['id']})")


@tenants_app.command("update")
def update_tenant(
    tenant: TenantArg,
    name: Annotated[str | None, typer.Option("--name", help="New display name.")] = None,
    slug: Annotated[str | None, typer.Option("--slug", help="New slug.")] = None,
    enable: Annotated[
        bool | None, typer.Option("--enable/--disable", help="Re-enable or disable.")
    ] = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Rename a tenant (name or slug), or disable / re-enable it."""
    body: dict[str, Any] = {"name": name, "slug": slug}
    if enable is not None:
        body["status"] = "active" if enable else "disabled"
    changes = {k: v for k, v in body.items() if v is not None}
    if not changes:
        fail("nothing to change: give --name, --slug, --enable or --disable")
    with remote(profile, as_json) as r:
        made = r.client.patch(_path(tenant), changes)
        r.out.done(made, f"tenant {made['slug']} updated")


@tenants_app.command("delete")
def delete_tenant(tenant: TenantArg, profile: ProfileOpt = DEFAULT_PROFILE) -> None:
    """Disable a tenant (tenants are never deleted; its keys stop working at once)."""
    with remote(profile) as r:
        r.client.delete(_path(tenant))
        typer.echo(f"tenant {tenant} disabled")


@tenants_app.command("use")
def use_tenant(tenant: TenantArg, profile: ProfileOpt = DEFAULT_PROFILE) -> None:
    """Make TENANT the profile's default for tenant commands (checked first)."""
    with remote(profile) as r:
        found = r.client.get(_path(tenant))
        # by id: a slug renamed later would leave the profile naming no tenant
        save_profile(dataclasses.replace(r.profile, tenant=str(found["id"])), None)
        note(f"profile {profile!r} now acts in tenant {found['slug']}")

"""``hub keys``: API keys of a principal, or (``--platform``) the platform admin's own.

``hub keys list|create PRINCIPAL`` and ``hub keys show|roll|delete KEY --principal PRINCIPAL``
(a key is named by its id or its display prefix ``hub_<kid>``); ``list`` and ``create`` take
``--principal`` too, as the other commands do; ``--platform`` instead of a principal for the
calling platform admin's keys.

A new key is printed alone on stdout (so ``hub keys create bot > bot.key`` stores exactly it);
the note saying it is shown once goes to stderr. ``--json`` prints the whole answer instead.
Rolling the key the profile itself uses stores the new one in the profile, since the old one
stops at once by default.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from hub.cli.remote import resolve
from hub.cli.remote.context import JsonOpt, ProfileOpt, Remote, TenantOpt, remote
from hub.cli.remote.output import Column, fail, note
from hub.cli.remote.profiles import DEFAULT_PROFILE, ProfileError, load_key, save_profile

__all__ = ["keys_app"]

keys_app = typer.Typer(no_args_is_help=True, help="API keys.")

PrincipalArg = Annotated[
    str | None,
    typer.Argument(metavar="[PRINCIPAL]", help="Name or id (omit with --platform)."),
]
KeyArg = Annotated[str, typer.Argument(metavar="KEY", help="Key id or display prefix (hub_…).")]
PrincipalOpt = Annotated[
    str | None,
    typer.Option("--principal", "-p", metavar="PRINCIPAL", help="Whose key: name or id."),
]
PlatformOpt = Annotated[
    bool, typer.Option("--platform", help="The calling platform admin's own keys.")
]
ExpiresOpt = Annotated[
    str | None, typer.Option("--expires-at", metavar="TIME", help="ISO 8601, with a zone.")
]
COLUMNS = [
    Column.of("PREFIX", "prefix"),
    Column.of("LAST4", "last4"),
    Column.of("ID", "id"),
    Column.time("CREATED", "created_at"),
    Column.time("EXPIRES", "expires_at"),
    Column.time("LAST USED", "last_used_at"),
    Column.time("REVOKED", "revoked_at"),
]


def _base(r: Remote, principal: str | None, platform: bool, *, flag: bool = False) -> str:
    """The keys' collection of ``principal`` (named as an argument, or with ``--principal``
    where ``flag``) or of the calling platform admin."""
    named = "--principal NAME" if flag else "the principal"
    if platform:
        if principal is not None:
            fail(f"--platform takes no {'--principal' if flag else 'PRINCIPAL'}")
        if r.tenant_ref is not None and r.tenant_ref != r.profile.tenant:
            fail("--platform keys belong to no tenant: drop --tenant")
        return "/platform/keys"
    if principal is None:
        fail(f"whose key? give {named} (or --platform for your own platform keys)")
    return r.path("principals", resolve.principal(r, principal)["id"], "keys")


def _either(argument: str | None, option: str | None) -> str | None:
    """The principal named as ``list``'s or ``create``'s argument, or with ``--principal``."""
    if argument is not None and option is not None and argument != option:
        fail("name the principal once: as PRINCIPAL or with --principal")
    return argument if argument is not None else option


def _issued(r: Remote, made: dict[str, Any]) -> None:
    if r.out.as_json:
        r.out.json(made)
        return
    note(f"key {made['prefix']}…{made['last4']} ({made['id']}), shown once — store it now:")
    typer.echo(made["key"])


@keys_app.command("list")
def list_keys(
    principal: PrincipalArg = None,
    principal_opt: PrincipalOpt = None,
    platform: PlatformOpt = False,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """List keys (prefix, last four characters, dates; never the key)."""
    with remote(profile, as_json, tenant) as r:
        named = _either(principal, principal_opt)
        r.out.table(r.client.list_all(_base(r, named, platform)), COLUMNS)


@keys_app.command("show")
def show_key(
    key: KeyArg,
    principal: PrincipalOpt = None,
    platform: PlatformOpt = False,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Show one key."""
    with remote(profile, as_json, tenant) as r:
        found = resolve.key(r.client.list_all(_base(r, principal, platform, flag=True)), key)
        r.out.record(found, COLUMNS)


@keys_app.command("create")
def create_key(
    principal: PrincipalArg = None,
    principal_opt: PrincipalOpt = None,
    expires_at: ExpiresOpt = None,
    platform: PlatformOpt = False,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Issue a key; it is printed once, alone on stdout."""
    with remote(profile, as_json, tenant) as r:
        base = _base(r, _either(principal, principal_opt), platform)
        _issued(r, r.client.post(base, {"expires_at": expires_at}))


@keys_app.command("roll")
def roll_key(
    key: KeyArg,
    principal: PrincipalOpt = None,
    old_expires_at: Annotated[
        str | None,
        typer.Option("--old-expires-at", metavar="TIME", help="When the old key stops (now)."),
    ] = None,
    expires_at: ExpiresOpt = None,
    platform: PlatformOpt = False,
    tenant: TenantOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Replace a key: a new one now, the old one valid until --old-expires-at (default now)."""
    with remote(profile, as_json, tenant) as r:
        base = _base(r, principal, platform, flag=True)
        found = resolve.key(r.client.list_all(base), key)
        stops = old_expires_at or datetime.now(UTC).isoformat()  # the hub clamps "now" itself
        body = {"old_key_expires_at": stops, "expires_at": expires_at}
        made = r.client.post(f"{base}/{found['id']}/roll", body)
        _issued(r, made)
        if _is_the_profiles(r, found):  # else the very next command would be refused
            save_profile(r.profile, str(made["key"]))
            note(f"profile '{r.profile.name}' now uses the new key")


def _is_the_profiles(r: Remote, key: dict[str, Any]) -> bool:
    """Whether ``key`` is the one this command's profile authenticates with."""
    try:
        return load_key(r.profile.name).startswith(f"{key['prefix']}_")
    except ProfileError:
        return False


@keys_app.command("delete")
def delete_key(
    key: KeyArg,
    principal: PrincipalOpt = None,
    platform: PlatformOpt = False,
    tenant: TenantOpt = None,
    own: Annotated[
        bool,
        typer.Option("--own", help="Allow revoking the key this profile signs in with."),
    ] = False,
    profile: ProfileOpt = DEFAULT_PROFILE,
) -> None:
    """Revoke a key; the very next request with it is refused."""
    with remote(profile, False, tenant) as r:
        base = _base(r, principal, platform, flag=True)
        found = resolve.key(r.client.list_all(base), key)
        if _is_the_profiles(r, found) and not own:
            fail(
                f"that is the key profile '{r.profile.name}' signs in with: revoking it locks"
                " this profile out (pass --own to revoke it anyway, or `hub keys roll` it)"
            )
        r.client.delete(f"{base}/{found['id']}")
        typer.echo(f"key {found['prefix']}…{found['last4']} revoked")

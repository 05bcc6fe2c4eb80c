"""``hub login``, ``hub logout`` and ``hub whoami``: profiles of the remote client (DESIGN §14).

``hub login --url URL`` takes the API key from ``HUB_API_KEY`` or a hidden prompt — never from a
flag, where ``ps`` and shell history would keep it — checks it with ``GET /whoami`` and saves
the profile (see :mod:`~hub.cli.remote.profiles`). A tenant principal's tenant becomes the
profile's default tenant. Plain ``http`` is refused except to a loopback address: the key would
cross the network readable.
"""

from __future__ import annotations

import ipaddress
import os
import sys
from typing import Annotated, Any
from urllib.parse import urlsplit

import typer

from hub.cli.options import HubCaOpt
from hub.cli.remote.client import HubClient, HubFailure, RemoteError
from hub.cli.remote.context import JsonOpt, ProfileOpt, Remote, TenantOpt, remote, segment
from hub.cli.remote.output import Column, Output, fail, note
from hub.cli.remote.profiles import (
    DEFAULT_PROFILE,
    Profile,
    ProfileError,
    delete_profile,
    save_profile,
)

__all__ = ["login", "logout", "whoami"]

KEY_ENV = "HUB_API_KEY"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.query or parts.fragment:
        fail("--url must be the hub's base URL, e.g. https://hub.example.com")
    if parts.scheme == "http" and not _loopback(parts.hostname):
        fail("--url must be https: over plain http (allowed to loopback only) the key is readable")
    return url.rstrip("/")


def _key() -> str:
    """``HUB_API_KEY``, else standard input's first line when it is not a terminal (a pipe or a
    file: read as is, with no prompt and no "input may be echoed" warning), else a hidden
    prompt."""
    key = os.environ.get(KEY_ENV)
    if not key:
        piped = sys.stdin is not None and not sys.stdin.isatty()
        key = sys.stdin.readline() if piped else typer.prompt("API key", hide_input=True, err=True)
    key = key.strip()
    if not key:
        fail("no API key given")
    return key


def _describe(me: dict[str, Any]) -> str:
    principal = me["principal"]
    if me.get("is_platform_admin"):
        return f"{principal['name']} (platform admin)"
    role = f", {principal['role']}" if principal.get("role") else ""
    return f"{principal['name']} ({principal['kind']}{role}) in tenant {me.get('tenant_slug')}"


def _default_tenant(client: HubClient, me: dict[str, Any], tenant: str | None) -> str | None:
    """The tenant the profile acts in, by id (a slug renamed later would leave the profile
    naming no tenant): the principal's own, or the platform admin's ``--tenant``, checked."""
    if me.get("tenant_id") is not None:
        if tenant and tenant not in {str(me["tenant_id"]), str(me.get("tenant_slug"))}:
            fail(
                f"this key's principal acts only in tenant {me.get('tenant_slug')}:"
                " drop --tenant, or log in with a key of that tenant"
            )
        return str(me["tenant_id"])
    if not tenant:
        return None
    try:
        found = client.get(f"/tenants/{segment(tenant)}")
    except HubFailure as exc:
        fail(f"tenant {tenant!r}: {exc}")
    return str(found["id"])


def _acting(r: Remote, me: dict[str, Any]) -> str:
    """The tenant the profile acts in, by slug and id."""
    ref = r.profile.tenant
    if not ref:
        return "-"
    if ref in {str(me.get("tenant_id")), str(me.get("tenant_slug"))}:
        return f"{me.get('tenant_slug')} ({me.get('tenant_id')})"
    try:
        found = r.client.get(f"/tenants/{segment(ref)}")
    except HubFailure:
        return f"{ref} (not found: `hub tenants use SLUG` to choose another)"
    return f"{found['slug']} ({found['id']})"


def login(
    url: Annotated[str, typer.Option("--url", help="The hub's base URL.")],
    profile: ProfileOpt = DEFAULT_PROFILE,
    hub_ca: HubCaOpt = None,
    tenant: TenantOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Log in to a hub: the key from HUB_API_KEY or a prompt, checked, kept in a 0600 file."""
    base = _check_url(url)
    key = _key()
    ca = str(hub_ca) if hub_ca else None
    try:
        with HubClient(base, key, hub_ca=ca) as client:
            me = client.get("/whoami")
            default_tenant = _default_tenant(client, me, tenant)
    except RemoteError as exc:
        fail(str(exc))
    try:
        key_file = save_profile(Profile(profile, base, ca, default_tenant), key)
    except (ProfileError, OSError) as exc:
        fail(f"cannot save the profile: {exc}")
    note(f"profile {profile!r} saved; its key is in {key_file} (mode 0600)")
    Output(as_json).done(me, f"logged in to {base} as {_describe(me)}")


def logout(profile: ProfileOpt = DEFAULT_PROFILE) -> None:
    """Forget a profile and delete its key file (the key itself stays valid: revoke it with
    `hub keys delete`)."""
    try:
        removed = delete_profile(profile)
    except ProfileError as exc:
        fail(str(exc))
    typer.echo(f"profile {profile!r} {'removed' if removed else 'was not there'}")


def _tenant(me: dict[str, Any]) -> str | None:
    """The principal's own tenant, by slug and id (none for the platform admin)."""
    if me.get("tenant_id") is None:
        return None
    return f"{me.get('tenant_slug')} ({me['tenant_id']})"


def whoami(profile: ProfileOpt = DEFAULT_PROFILE, as_json: JsonOpt = False) -> None:
    """Who the profile's key is: principal, tenant, grants and (for an agent) deployments."""
    with remote(profile, as_json) as r:
        me = r.client.get("/whoami")
        if r.out.as_json:
            r.out.json(me)
            return
        r.out.record(
            me,
            [
                Column("hub", lambda _m: r.profile.url),
                Column("principal", _describe),
                Column("id", lambda m: m["principal"]["id"]),
                Column("tenant", _tenant),
                Column("acts in", lambda m: _acting(r, m)),
                Column("grants", lambda m: len(m.get("grants") or [])),
            ],
        )
        if me.get("grants"):
            r.out.table(
                me["grants"],
                [
                    Column.of("RESOURCE", "resource"),
                    Column.of("ACTION", "action"),
                    Column.of("EFFECT", "effect"),
                ],
            )
        if me.get("deployments"):
            r.out.table(
                me["deployments"],
                [
                    Column.of("DEPLOYMENT", "id"),
                    Column.of("NAME", "name"),
                    Column.of("MCP", "mcp_path"),
                ],
            )

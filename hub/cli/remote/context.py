"""What every remote command shares: its options, the logged-in client, the tenant it acts in.

``with remote(profile, as_json, tenant) as r:`` loads the profile and its key, opens the client,
and turns every :class:`~hub.cli.remote.client.RemoteError` (and a missing login) into one line
on stderr and exit 1. ``r.path("principals", p)`` builds ``/tenants/<tenant>/principals/<p>``
with each segment quoted; the tenant is ``--tenant`` (a slug or an id: the hub accepts both in
paths), else the profile's.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated
from urllib.parse import quote

import typer

from hub.cli.remote.client import HubClient, HubFailure, RemoteError
from hub.cli.remote.output import Output, fail
from hub.cli.remote.profiles import DEFAULT_PROFILE, Profile, ProfileError, load_key, load_profile

__all__ = [
    "JsonOpt",
    "ProfileOpt",
    "Remote",
    "TenantOpt",
    "is_id",
    "remote",
    "segment",
]

ProfileOpt = Annotated[
    str, typer.Option("--profile", metavar="NAME", help="Login profile to use (hub login).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
TenantOpt = Annotated[
    str | None,
    typer.Option(
        "--tenant", "-t", metavar="SLUG", help="Tenant slug or id (default: the profile's)."
    ),
]


def segment(value: str) -> str:
    """``value`` as one quoted path segment. ``.`` and ``..`` are refused: quoting leaves them
    as they are and the HTTP client then resolves them as steps, so ``hub servers delete ..``
    was a ``DELETE /tenants/<t>``, which disables the tenant."""
    if value in {"", ".", ".."}:
        fail(f"{value!r} is not a name or an id")
    return quote(value, safe="")


def is_id(value: str) -> bool:
    """Whether ``value`` is a canonical id (else it is a name to look up)."""
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


@dataclass
class Remote:
    """A logged-in client, the output mode and the tenant of one command."""

    client: HubClient
    profile: Profile
    out: Output
    tenant_ref: str | None

    @property
    def tenant(self) -> str:
        if not self.tenant_ref:
            fail(
                "no tenant: pass --tenant SLUG (a platform admin can set a default with "
                "`hub tenants use SLUG`)"
            )
        return self.tenant_ref

    def path(self, *parts: object) -> str:
        """``/tenants/<tenant>/<parts>``, each segment quoted."""
        segments = [self.tenant, *(str(p) for p in parts)]
        return "/tenants/" + "/".join(segment(s) for s in segments)


@contextlib.contextmanager
def remote(
    profile: str = DEFAULT_PROFILE, as_json: bool = False, tenant: str | None = None
) -> Iterator[Remote]:
    """The command's :class:`Remote`; any remote failure becomes one line and exit 1."""
    try:
        loaded = load_profile(profile)
        key = load_key(profile)
    except ProfileError as exc:
        fail(str(exc))
    try:
        client = HubClient(loaded.url, key, hub_ca=loaded.hub_ca)
    except RemoteError as exc:
        fail(str(exc))
    try:
        yield Remote(client, loaded, Output(as_json), tenant or loaded.tenant)
    except HubFailure as exc:
        if exc.status == 401:
            fail(f"{exc}; {_refused_key(profile, loaded.url)}")
        if exc.status in (400, 409, 422):
            fail(str(exc) + _flags_named(str(exc)))
        if exc.status == 404 and exc.message == "tenant not found":
            given = (
                f"--tenant {tenant}" if tenant else f"profile '{profile}' acts in {loaded.tenant}"
            )
            fail(f"{exc}: {given}; the key's principal sees no such tenant")
        fail(str(exc))
    except RemoteError as exc:
        fail(str(exc))
    finally:
        client.close()


#: the API's field names a refusal may quote, and the flag that sets each
API_FIELD_FLAGS = {
    "api_base_url": "--base-url",
    "sidecar_id": "--sidecar",
    "expires_at": "--expires-at",
    "old_key_expires_at": "--old-expires-at",
    "allow_without_ask": "--allow-without-ask",
    "credential_id": "--credential",
    "agent_id": "the AGENT argument",
    "client_id": "--client-id",
}


def _flags_named(message: str) -> str:
    """`` [--base-url is api_base_url]`` for the API fields a hub's refusal names: the hub
    speaks its API, the operator typed flags."""
    named = [
        f"{flag} is {field}"
        for field, flag in API_FIELD_FLAGS.items()
        if re.search(rf"\b{field}\b", message)
    ]
    return f" [{'; '.join(named)}]" if named else ""


def _refused_key(profile: str, url: str) -> str:
    """What a 401 means for the profile (the hub says no more: one answer for every cause)."""
    return (
        f"the key of profile '{profile}' was refused: revoked, expired, or its principal or "
        f"tenant disabled; log in again with a valid key (hub login --url {url} "
        f"--profile {profile})"
    )

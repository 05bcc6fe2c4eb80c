"""Resolving an upstream target before any I/O (DESIGN §5).

Order: static URL checks (400) → the credential, if any, must be usable (404, all cases alike;
a server's own credential, when the caller named the server: 422 ``credential_unavailable``
with its cause) →
the pin: the origin of the credential's ``api_base_url``, or the URL's own origin with no credential
or the keyless sentinel; a URL outside it is 422 ``origin_refused``. Discovery, server registration,
catalog snapshots and the gateway all resolve their targets here, so they validate the same way.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from hub.core.errors import BadRequest
from hub.core.tenancy import TenantId
from hub.credentials.vault import load_server_credential, load_usable_credential
from hub.egress import UrlRejected, validate_url
from hub.models import Credential
from hub.upstream.context import UpstreamContext
from hub.upstream.pinning import ensure_within_pin, pin_origin

__all__ = ["INVALID_URL_MESSAGE", "Target", "resolve_keyless", "resolve_target"]

#: The fallback text of a refused URL (each rule of ``validate_url`` has its own fixed text).
INVALID_URL_MESSAGE = "url must be absolute https"


@dataclass(frozen=True)
class Target:
    """A checked upstream: normalised URL, the origin requests are pinned to, the credential."""

    url: str
    pin: str
    credential: Credential | None


async def resolve_target(
    session: AsyncSession,
    ctx: UpstreamContext,
    tenant_id: TenantId,
    url: str,
    credential_id: uuid.UUID | None,
    *,
    servers_own: bool = False,
) -> Target:
    """400 for a bad URL, 404 for an unusable credential, 422 for a URL off the credential's pin.

    ``servers_own``: the credential is a registered server's own, used because the caller named
    the server (a snapshot): an unusable one is 422 ``credential_unavailable`` with its cause."""
    if credential_id is None:
        return resolve_keyless(ctx, url)
    checked = _checked(ctx, url)
    load = load_server_credential if servers_own else load_usable_credential
    credential = await load(session, tenant_id, credential_id)
    pin = pin_origin(ctx.keyring, credential, checked)
    ensure_within_pin(ctx.egress, pin, checked)
    return Target(url=checked, pin=pin, credential=credential)


def resolve_keyless(ctx: UpstreamContext, url: str) -> Target:
    """The target of a server with no credential: no database read (400 for a bad URL, 422 for
    one its own origin's policy refuses), the same answer :func:`resolve_target` gives."""
    checked = _checked(ctx, url)
    pin = pin_origin(ctx.keyring, None, checked)
    ensure_within_pin(ctx.egress, pin, checked)
    return Target(url=checked, pin=pin, credential=None)


def _checked(ctx: UpstreamContext, url: str) -> str:
    try:
        return validate_url(url, ctx.egress)
    except UrlRejected as exc:
        # the rule's own fixed text (it never quotes the URL), e.g. naming HUB_ALLOW_LOOPBACK
        raise BadRequest(exc.message or INVALID_URL_MESSAGE) from None

"""Using a credential upstream with its OAuth lifecycle: fresh first, one refresh on a 401.

:func:`with_fresh_credential` is the one entry point every upstream use goes through (discovery,
snapshots, and the gateway's ``tools/call`` when it lands)::

    result = await with_fresh_credential(ctx, db, tenant_id, target, use)

where ``use(bearer)`` makes the upstream request(s) with the plaintext secret (``None`` for no
credential or the keyless sentinel). Around it (DESIGN §9, §15 "OAuth lifecycle"):

1. an OAuth credential that expires within 60 s and holds a refresh token is refreshed first
   (single-flight across replicas: :meth:`TokenKeeper.fresh`);
2. an upstream **401** (``McpError`` ``unauthorized``, status 401) gets exactly one refresh
   (:meth:`TokenKeeper.renew`: reusing a token another caller just obtained) and one retry;
3. an upstream **403** with ``error="insufficient_scope"`` records the union of the scopes
   (:meth:`TokenKeeper.challenged`) and fails with :class:`InsufficientScope`. The hub never
   starts an authorisation by itself: a step-up is a new authorisation naming the credential.

The refresh machinery lives in :mod:`hub.oauth` (a domain above this package); the wiring plugs
it in as ``UpstreamContext.tokens`` (a :class:`~hub.upstream.keeper.TokenKeeper`), as it plugs
the grant engine into :mod:`hub.authz`. Without one (tests, tools) credentials are sent as stored.

No database transaction may be open while this runs: the keeper opens its own short ones.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from hub.core.db import Database
from hub.core.tenancy import TenantId
from hub.credentials.vault import decrypt_for_use, is_expired
from hub.mcp import McpError
from hub.upstream.context import UpstreamContext
from hub.upstream.target import Target

__all__ = [
    "InsufficientScope",
    "TokenUnavailable",
    "with_fresh_credential",
]

T = TypeVar("T")


class TokenUnavailable(Exception):
    """The credential's token is expired (or was refused) and no fresh one could be obtained.

    ``reason``: ``credential_unavailable`` (cannot be refreshed: no refresh token, or the
    authorization server refused it and the credential is now ``error``) or
    ``token_refresh_failed`` (the refresh failed for now; the credential stays ``active``)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"the credential's token is unavailable ({reason})")


class InsufficientScope(Exception):
    """The upstream refused the token for lack of scope (RFC 6750 §3.1); the scopes it asked
    for are recorded on the credential, and a new authorisation naming it steps up."""

    reason = "insufficient_scope"

    def __init__(self) -> None:
        super().__init__("the upstream needs more scopes than the token holds")


Use = Callable[[str | None], Awaitable[T]]


async def with_fresh_credential(
    ctx: UpstreamContext,
    db: Database | None,
    tenant_id: TenantId,
    target: Target,
    use: Use[T],
) -> T:
    """Run ``use(bearer)`` against ``target`` with a fresh credential (see the module docstring).

    Raises :class:`TokenUnavailable` (an expired token that cannot be refreshed),
    :class:`InsufficientScope`, and whatever ``use`` raises (``EgressError``, ``McpError``)."""
    credential = target.credential
    keeper = ctx.tokens
    if credential is None or keeper is None or db is None or not credential.is_oauth:
        if credential is None:
            return await use(None)
        return await decrypt_for_use(ctx.keyring, credential, use)
    credential = await keeper.fresh(db, tenant_id, credential)
    if is_expired(credential):
        raise TokenUnavailable("credential_unavailable")
    try:
        return await decrypt_for_use(ctx.keyring, credential, use)
    except McpError as exc:
        challenge = exc.challenge
        if exc.reason != "unauthorized":
            raise
        if exc.status == 403 and challenge is not None and challenge.insufficient_scope:
            await keeper.challenged(db, tenant_id, credential, challenge.scopes)
            raise InsufficientScope() from None
        if exc.status != 401:
            raise
        renewed = await keeper.renew(db, tenant_id, credential)
        if renewed is None:
            raise
    # one retry, with the renewed token; a second 401 is the caller's failure
    try:
        return await decrypt_for_use(ctx.keyring, renewed, use)
    except McpError as exc:
        challenge = exc.challenge
        if exc.status == 403 and challenge is not None and challenge.insufficient_scope:
            await keeper.challenged(db, tenant_id, renewed, challenge.scopes)
            raise InsufficientScope() from None
        raise

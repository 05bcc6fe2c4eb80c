"""Refreshing OAuth tokens, single-flight across replicas, by lease (DESIGN §9, §15).

:class:`TokenRefresher` is the :class:`hub.upstream.TokenKeeper` the wiring plugs into every
upstream use, and the worker's engine. One refresh of one credential, on any replica:

1. **Claim**, in a short transaction: lock the row (``FOR UPDATE SKIP LOCKED`` on PostgreSQL;
   SQLite serialises writers with ``BEGIN IMMEDIATE``), re-read it — if someone else already
   refreshed (the stored secret changed, or it is no longer due) use that; if another caller
   holds a live lease, wait — else set ``refresh_lease_until`` and a fresh ``holder``, commit.
2. **Ask** the token endpoint (RFC 6749 §6 with RFC 8707 ``resource``) with **no transaction
   open**, within the flow deadline; the lease outlives that deadline, so it cannot expire
   while its holder is still asking.
3. **Write** by compare-and-swap on the holder, in one statement: the new access token, the
   rotated refresh token (or the old one kept when none came back, RFC 6749 §6) and the expiry,
   the lease released. A holder whose lease was taken over (expired, or ended by a PATCH of the
   secret or a re-authorisation) writes nothing and reads what is there.
4. **Hold back** after a failure that is not terminal (the server down, slow, or answering an
   error other than those of :data:`TERMINAL`): the lease is set again without a holder, for
   one refresher interval (``HUB_OAUTH_REFRESH_INTERVAL_S``, at most :data:`MAX_HOLD_S`). Until
   it ends, no caller and no replica asks again: a use gets the old token while it is valid and
   ``token_refresh_failed`` at once after, an upstream 401 gets no renewal (and so no retry),
   and the worker skips the row. A re-authorisation or a pasted secret ends it.

Other callers — on this replica or another — poll the row within their deadline and reuse the
result, so N concurrent uses right after expiry make exactly one request to the authorization
server. ``invalid_grant`` — or ``invalid_client``, the client registration forgotten by the
authorization server (whose kept dynamic registration is then forgotten too, so the next connect
registers again) — first re-reads the row (another replica may have rotated the refresh token,
or an operator re-authorised), and only then marks the credential ``error`` (audited): it is
then refused like an absent credential, and says to connect again. Other failures hold
further tries back (4.); the old token is used while it is still valid. Every refresh is audited
(``credential.refresh``); tokens never appear in audit details, logs or errors.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, Literal

from hub.audit.actions import Action
from hub.audit.service import record
from hub.core import clock
from hub.core.crypto import Keyring
from hub.core.db import Database
from hub.core.logging import current_request_id
from hub.core.tenancy import TenantId
from hub.credentials.service import sealed_columns
from hub.credentials.vault import decrypt_field, is_expired, is_refreshable
from hub.egress import EgressError, Fetcher
from hub.models import Credential
from hub.oauth import repository
from hub.oauth.config import OAuthConfig
from hub.oauth.scopes import union
from hub.oauth.token_requests import Client, TokenError, refresh_grant, request_token
from hub.upstream import TokenUnavailable

__all__ = ["TokenRefresher"]

log = logging.getLogger("hub.oauth.refresh")

Busy = Literal["busy"]
#: token endpoint answers after which the credential is dead until re-authorised: the refresh
#: token refused, or the client itself no longer known (a registration the server forgot)
TERMINAL = frozenset({"invalid_grant", "invalid_client"})
MAX_SCOPE_TEXT = 4096  # what the scope column holds
#: the longest a failed refresh holds the next try back (the interval may be set to an hour)
MAX_HOLD_S = 60.0
Claim = tuple[Credential, str]


def _scopes(value: str | None) -> tuple[str, ...]:
    return tuple((value or "").split())


class TokenRefresher:
    """Single-flight OAuth refresh (see the module docstring); implements ``TokenKeeper``."""

    def __init__(
        self, fetcher: Fetcher, keyring: Keyring, config: OAuthConfig, *, poll_s: float = 0.1
    ) -> None:
        self.fetcher = fetcher
        self.keyring = keyring
        self.config = config
        self.poll_s = poll_s
        # a holder asks within ``deadline_s``; its lease lasts longer, so it never lapses mid-ask
        self.lease_s = config.deadline_s + 10.0
        # after a failure that is not terminal: one pass of the refresher, at most a minute
        self.retry_after_s = min(config.refresh_interval_s, MAX_HOLD_S)

    def __repr__(self) -> str:
        return "<TokenRefresher>"

    def due(self, credential: Credential, within_s: float | None = None) -> bool:
        """Refreshable and expiring within the leeway (or ``within_s``)."""
        if not is_refreshable(credential) or credential.expires_at is None:
            return False
        window = timedelta(seconds=self.config.leeway_s if within_s is None else within_s)
        return credential.expires_at <= clock.now() + window

    # ------------------------------------------------------------------ TokenKeeper
    async def fresh(self, db: Database, tenant_id: TenantId, credential: Credential) -> Credential:
        if not self.due(credential):
            return credential
        return await self._refresh(db, tenant_id, credential, force=False)

    async def renew(
        self, db: Database, tenant_id: TenantId, credential: Credential
    ) -> Credential | None:
        if not credential.is_oauth:
            return None
        try:
            current = await self._refresh(db, tenant_id, credential, force=True)
        except TokenUnavailable:
            return None
        return current if current.secret_nonce != credential.secret_nonce else None

    async def challenged(
        self, db: Database, tenant_id: TenantId, credential: Credential, scopes: Sequence[str]
    ) -> None:
        async with db.session(write=True) as session:
            row = await repository.get_credential(session, tenant_id, credential.id)
            if row is None:
                return
            recorded = _scopes(row.oauth_scopes)
            merged = union(recorded, scopes)
            if merged == recorded or len(" ".join(merged)) > MAX_SCOPE_TEXT:
                return  # nothing new, or more than a step-up could ever ask for
            await repository.update_credential(
                session, tenant_id, row.id, {"oauth_scopes": " ".join(merged)}
            )
            await self._audit(
                session,
                tenant_id,
                row.id,
                Action.CREDENTIAL_INSUFFICIENT_SCOPE,
                {"scopes": list(merged), "challenged": list(scopes)},
            )

    # ------------------------------------------------------------------ the lease
    async def _refresh(
        self, db: Database, tenant_id: TenantId, seen: Credential, *, force: bool
    ) -> Credential:
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self.lease_s
        while True:
            outcome = await self._claim(db, tenant_id, seen, force=force)
            if isinstance(outcome, Credential):
                return outcome
            if outcome != "busy":
                row, holder = outcome
                return await self.run_claimed(db, tenant_id, row, holder)
            if loop.time() >= give_up:
                return await self._current(db, tenant_id, seen.id)
            await asyncio.sleep(self.poll_s)

    async def _claim(
        self, db: Database, tenant_id: TenantId, seen: Credential, *, force: bool
    ) -> Credential | Busy | Claim:
        """The row to use as it is, ``"busy"`` (someone else is refreshing), or our claim."""
        async with db.session(write=True) as session:
            row = await repository.lock_credential(session, tenant_id, seen.id)
            if row is None:
                if await repository.get_credential(session, tenant_id, seen.id) is None:
                    raise TokenUnavailable("credential_unavailable")
                return "busy"  # another transaction holds the row for a moment
            changed = row.secret_nonce != seen.secret_nonce
            if changed or not is_refreshable(row) or not (force or self.due(row)):
                return row
            now = clock.now()
            lease = row.refresh_lease_until
            if lease is not None and lease > now:
                if row.refresh_lease_holder is not None:
                    return "busy"
                # held back after a failed refresh: the old token while it lasts, then a refusal
                if is_expired(row):
                    raise TokenUnavailable("token_refresh_failed")
                return row
            holder = uuid.uuid4().hex
            until = now + timedelta(seconds=self.lease_s)
            values = {"refresh_lease_until": until, "refresh_lease_holder": holder}
            await repository.update_credential(session, tenant_id, row.id, values)
        return row, holder

    async def _current(
        self, db: Database, tenant_id: TenantId, credential_id: uuid.UUID
    ) -> Credential:
        async with db.session(write=False) as session:
            row = await repository.get_credential(session, tenant_id, credential_id)
        if row is None:
            raise TokenUnavailable("credential_unavailable")
        return row

    # ------------------------------------------------------------------ the request
    async def run_claimed(
        self, db: Database, tenant_id: TenantId, row: Credential, holder: str
    ) -> Credential:
        """Refresh a credential this caller holds the lease of (no transaction open)."""
        refresh_token = decrypt_field(self.keyring, row, "refresh_token")
        client = Client(
            row.oauth_client_id or "",
            row.oauth_auth_method or "none",  # type: ignore[arg-type]
            decrypt_field(self.keyring, row, "client_secret"),
        )
        if refresh_token is None or row.oauth_token_endpoint is None:
            return await self._failed(db, tenant_id, row, holder, "credential_unavailable")
        try:
            answer = await request_token(
                self.fetcher,
                row.oauth_token_endpoint,
                "refresh_token",
                refresh_grant(refresh_token, resource=row.oauth_resource),
                client,
                deadline_s=self.config.deadline_s,
                scope=str(tenant_id),
            )
        except TokenError as exc:
            if exc.error in TERMINAL:
                return await self._refused(db, tenant_id, row, holder, exc.error)
            return await self._failed(db, tenant_id, row, holder, exc.error)
        except EgressError as exc:
            return await self._failed(db, tenant_id, row, holder, exc.reason)
        values: dict[str, Any] = {
            **sealed_columns(self.keyring, row.tenant_id, row.id, "secret", answer.access_token),
            "expires_at": (
                clock.now() + timedelta(seconds=answer.expires_in)
                if answer.expires_in is not None
                else None
            ),
            "updated_at": clock.now(),
        }
        if answer.refresh_token is not None:  # rotated: stored in the same statement
            values.update(
                sealed_columns(
                    self.keyring, row.tenant_id, row.id, "refresh_token", answer.refresh_token
                )
            )
        async with db.session(write=True) as session:
            if await repository.write_by_holder(session, tenant_id, row.id, holder, values):
                await self._audit(
                    session,
                    tenant_id,
                    row.id,
                    Action.CREDENTIAL_REFRESH,
                    {"rotated": answer.refresh_token is not None, "expires_in": answer.expires_in},
                )
            current = await repository.get_credential(session, tenant_id, row.id)
        if current is None:
            raise TokenUnavailable("credential_unavailable")
        return current

    async def _refused(
        self, db: Database, tenant_id: TenantId, row: Credential, holder: str, error: str
    ) -> Credential:
        """A :data:`TERMINAL` answer: unless the row was rotated meanwhile, the credential goes
        to ``error``; for ``invalid_client``, its kept dynamic registration is forgotten."""
        async with db.session(write=True) as session:
            current = await repository.get_credential(session, tenant_id, row.id)
            if current is None:
                raise TokenUnavailable("credential_unavailable")
            rotated = (
                current.refresh_token_nonce != row.refresh_token_nonce
                or current.secret_nonce != row.secret_nonce
            )
            if rotated:  # another replica rotated it, or it was re-authorised: use theirs
                await repository.write_by_holder(session, tenant_id, row.id, holder, {})
                return current
            marked = await repository.write_by_holder(
                session, tenant_id, row.id, holder, {"status": "error", "updated_at": clock.now()}
            )
            if marked:
                details: dict[str, Any] = {"error": error, "status": "error"}
                if error == "invalid_client" and row.oauth_issuer and row.oauth_client_id:
                    details["client_forgotten"] = await repository.forget_dynamic_client(
                        session, tenant_id, row.oauth_issuer, row.oauth_client_id
                    )
                await self._audit(
                    session,
                    tenant_id,
                    row.id,
                    Action.CREDENTIAL_REFRESH,
                    details,
                    outcome="failed",
                )
        raise TokenUnavailable("credential_unavailable")

    async def _failed(
        self, db: Database, tenant_id: TenantId, row: Credential, holder: str, reason: str
    ) -> Credential:
        # the next try, by any caller or replica, waits one refresher interval (held back by a
        # lease without a holder): an authorization server that is down is not asked on every
        # tool call and every pass, each waiting its deadline and writing an audit row
        retry = {"refresh_lease_until": clock.now() + timedelta(seconds=self.retry_after_s)}
        async with db.session(write=True) as session:
            if await repository.write_by_holder(session, tenant_id, row.id, holder, retry):
                await self._audit(
                    session,
                    tenant_id,
                    row.id,
                    Action.CREDENTIAL_REFRESH,
                    {"error": reason},
                    outcome="failed",
                )
        log.warning("oauth refresh of credential %s failed: %s", row.id, reason)
        if is_expired(row):
            raise TokenUnavailable("token_refresh_failed")
        return row  # the old token is still valid for a while

    async def _audit(
        self,
        session: Any,
        tenant_id: TenantId,
        credential_id: uuid.UUID,
        action: Action,
        details: dict[str, Any],
        outcome: Literal["success", "failed"] = "success",
    ) -> None:
        await record(
            session,
            tenant_id=tenant_id,
            actor_id=None,
            action=action,
            resource=f"credential:{credential_id}",
            request_id=current_request_id(),
            outcome=outcome,
            details=details,
        )

"""Completing an authorization: ``GET /oauth/callback?code&state&iss`` (DESIGN §9, §15).

The callback has no API key: the ``state`` is the capability. In order, each refusal happening
**before any token request** (SECURITY checklist 37):

1. ``state`` is looked up by its SHA-256; unknown (forged) → ``state_invalid``. The row names
   its tenant, which the rest of the callback acts in.
2. The row is claimed ``pending`` → ``redeeming`` by one conditional update: a replayed or
   concurrently redeemed state loses → ``state_invalid``; a pending state past its expiry is
   claimed by another (only to fail it) → ``state_expired``. From here the flow is spent,
   whatever happens next.
3. The tenant and the initiator, read again (:mod:`hub.oauth.standing`): ``tenant_disabled``,
   ``initiator_disabled``, ``initiator_forbidden``.
4. RFC 9207 ``iss`` (:func:`~hub.oauth.authorization_request.check_response_issuer`), then the
   authorization server's ``error`` (only its presence counts: ``authorization_denied``), then
   the ``code`` (``code_missing``, ``code_too_long``).
5. The code is redeemed (RFC 6749 §4.1.3 with the PKCE verifier and RFC 8707 ``resource``,
   authenticated as registered) with no transaction open. ``invalid_client`` there forgets a
   kept dynamic registration (:mod:`hub.oauth.clients`).
6. In one short transaction: the tokens are stored as an ``oauth_token`` credential — the access
   token as its secret, the refresh token and client secret in their own encrypted fields, the
   OAuth columns, ``api_base_url`` the server's origin — either the credential being
   re-authorised, **in place** (same id, version + 1, so deployments keep working), or a new
   one, bound to the server when one was named; a pre-registered client, now proven, is kept
   for the tenant and issuer; the flow is marked completed; one audit row.

A failure after the claim marks the flow ``failed`` with its reason (the CLI polls it) and is
audited. The outcome names the tenant, the server and the initiator for the fixed-text page
(:mod:`hub.oauth.page`); it never carries a token or anything the authorization server wrote.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from hub.audit.actions import Action
from hub.audit.service import record
from hub.core import clock, rls
from hub.core.db import Database
from hub.core.errors import OAuthFailed
from hub.core.logging import current_request_id
from hub.core.tenancy import TenantId, system_scope
from hub.credentials.service import sealed_columns, update_if_version
from hub.egress import EgressError, origin_of
from hub.grants.cache import PolicyCache
from hub.models import Credential, OAuthAuthorization
from hub.oauth import repository, standing
from hub.oauth.authorization_request import check_response_issuer
from hub.oauth.clients import keep_client
from hub.oauth.context import OAuthContext
from hub.oauth.exceptions import CALLBACK_REFUSALS, failure, from_egress
from hub.oauth.pkce import state_digest
from hub.oauth.sealed import STATE_AAD, open_field
from hub.oauth.token_requests import Client, TokenError, TokenResponse, code_grant, request_token
from hub.principals import service as principals_service
from hub.servers import service as servers_service
from hub.tenants import service as tenants_service

__all__ = ["CallbackOutcome", "complete_callback"]

MAX_PARAM = 4096


@dataclass(frozen=True)
class CallbackOutcome:
    status_code: int
    reason: str | None = None
    tenant: str | None = None
    server: str | None = None
    initiator: str | None = None


@dataclass(frozen=True)
class _Labels:
    tenant: str | None
    server: str | None
    initiator: str | None


def _refused(reason: str, labels: _Labels | None = None) -> CallbackOutcome:
    status = 400 if reason in CALLBACK_REFUSALS else 422
    if labels is None:
        return CallbackOutcome(status, reason)
    return CallbackOutcome(status, reason, labels.tenant, labels.server, labels.initiator)


@dataclass(frozen=True)
class _Claimed:
    tenant_id: TenantId
    row: OAuthAuthorization
    expired: bool  # the state is known but past its expiry: the flow only fails


async def _claim(db: Database, state: str) -> _Claimed | None:
    digest = state_digest(state)
    async with db.session(write=False) as read:
        # before its tenant is known (a SECURITY DEFINER function on PostgreSQL)
        owner = await repository.tenant_of_state(read, digest)
    if owner is None:
        return None
    # the state is the capability, and its row names the tenant the callback acts in
    tenant_id = system_scope(owner, reason="oauth callback: the state row's tenant")
    await rls.enter(None, tenant_id)  # the rest of the callback acts in that tenant
    async with db.session(write=True) as session:
        row = await repository.find_by_state_all_tenants(session, digest)
        if row is None:
            return None
        expires_at = await repository.claim_authorization(session, tenant_id, row.id)
        if expires_at is not None:
            # known and pending, but expired: said so to whoever holds the state (its capability)
            return _Claimed(tenant_id, row, expired=expires_at <= clock.now())
    return None


async def _labels(db: Database, tenant_id: TenantId, row: OAuthAuthorization) -> _Labels:
    async with db.session(write=False) as read:
        tenant = await tenants_service.get_tenant(read, tenant_id.value)
        server = None
        if row.server_id is not None:
            found = await servers_service.get_server_by_id(read, tenant_id, row.server_id)
            server = found.handle if found is not None else None
        initiator = await principals_service.principal_label(read, tenant_id, row.initiator_id)
    return _Labels(tenant.name, server or origin_of(row.server_url), initiator)


async def _redeem(
    db: Database, ctx: OAuthContext, tenant_id: TenantId, row: OAuthAuthorization, code: str
) -> tuple[TokenResponse, str | None]:
    verifier = open_field(ctx.keyring, STATE_AAD, row, "verifier")
    secret = open_field(ctx.keyring, STATE_AAD, row, "client_secret")
    if verifier is None:
        raise failure("state_invalid")
    client = Client(row.client_id, row.auth_method, secret)  # type: ignore[arg-type]
    params = code_grant(
        code, redirect_uri=row.redirect_uri, verifier=verifier, resource=row.resource
    )
    try:
        tokens = await request_token(
            ctx.fetcher,
            row.token_endpoint,
            "authorization_code",
            params,
            client,
            deadline_s=ctx.config.deadline_s,
            scope=str(tenant_id),
        )
    except TokenError as exc:
        if exc.error == "invalid_client":
            await _forget_dead_client(db, tenant_id, row)
            raise failure("client_refused") from None
        raise failure("token_request_failed") from None
    except EgressError as exc:
        raise from_egress(exc) from None
    return tokens, secret


def _token_values(
    ctx: OAuthContext,
    row: OAuthAuthorization,
    credential_id: uuid.UUID,
    tokens: TokenResponse,
    client_secret: str | None,
) -> dict[str, Any]:
    now = clock.now()

    def sealed(field: str, value: str | None) -> dict[str, Any]:
        if value is None:
            return {f"{field}_key_id": None, f"{field}_nonce": None, f"{field}_ciphertext": None}
        return sealed_columns(ctx.keyring, row.tenant_id, credential_id, field, value)

    return {
        **sealed("secret", tokens.access_token),
        **sealed("refresh_token", tokens.refresh_token),
        **sealed("client_secret", client_secret),
        "status": "active",
        "api_base_url": origin_of(row.server_url),
        "expires_at": (
            now + timedelta(seconds=tokens.expires_in) if tokens.expires_in is not None else None
        ),
        "oauth_issuer": row.issuer,
        "oauth_token_endpoint": row.token_endpoint,
        "oauth_client_id": row.client_id,
        "oauth_auth_method": row.auth_method,
        "oauth_resource": row.resource,
        "oauth_scopes": row.scopes,
        "oauth_server_url": row.server_url,
        "refresh_lease_until": None,
        "refresh_lease_holder": None,
        "updated_at": now,
    }


async def _server_oauth_credential(
    session: AsyncSession, tenant_id: TenantId, row: OAuthAuthorization
) -> uuid.UUID | None:
    """For a server's first connect: the OAuth credential another flow of the same server bound
    to it since this one started (Connect pressed twice, a timed-out CLI connect run again),
    updated in place rather than left beside a second one, orphaned and refreshed for ever (an
    OAuth walk, stop 53); None otherwise."""
    if row.server_id is None:
        return None
    server = await servers_service.get_server_by_id(session, tenant_id, row.server_id)
    if server is None or server.credential_id is None:
        return None
    bound = await repository.get_credential(session, tenant_id, server.credential_id)
    if bound is None or bound.type != "oauth_token" or bound.status == "revoked":
        return None
    return bound.id


async def _store(
    db: Database,
    ctx: OAuthContext,
    tenant_id: TenantId,
    row: OAuthAuthorization,
    tokens: TokenResponse,
    client_secret: str | None,
) -> uuid.UUID:
    async with db.session(write=True) as session:
        target = row.credential_id or await _server_oauth_credential(session, tenant_id, row)
        created = target is None
        if target is not None:
            current = await repository.get_credential(session, tenant_id, target)
            if current is None or current.status == "revoked":
                raise failure("state_invalid")
            credential_id = current.id
            values = _token_values(ctx, row, credential_id, tokens, client_secret)
            if not await update_if_version(
                session, tenant_id, credential_id, current.version, values
            ):
                raise failure("state_invalid")
        else:
            credential_id = uuid.uuid4()  # known before sealing: the AAD binds it
            values = _token_values(ctx, row, credential_id, tokens, client_secret)
            session.add(
                Credential(
                    id=credential_id,
                    tenant_id=row.tenant_id,
                    name=row.credential_name or "oauth",
                    type="oauth_token",
                    meta={"mcp": {"auth": "oauth"}},
                    version=1,
                    created_at=values["updated_at"],
                    **values,
                )
            )
            await session.flush()
        if row.client_registration == "pre_registered":  # proven by the redeemed code
            await keep_client(
                session,
                ctx,
                tenant_id,
                row.issuer,
                kind="pre_registered",
                client_id=row.client_id,
                auth_method=row.auth_method,  # type: ignore[arg-type]
                client_secret=client_secret,
            )
        if row.server_id is not None:
            await servers_service.bind_credential(session, tenant_id, row.server_id, credential_id)
        await repository.finish_authorization(
            session,
            tenant_id,
            row.id,
            status="completed",
            now=clock.now(),
            credential_id=credential_id,
        )
        await record(
            session,
            tenant_id=tenant_id,
            actor_id=row.initiator_id,
            action=Action.OAUTH_CALLBACK,
            resource=f"credential:{credential_id}",
            request_id=current_request_id(),
            details={
                "authorization_id": str(row.id),
                "created": created,
                "issuer": row.issuer,
                "scopes": (row.scopes or "").split(),
                "has_refresh_token": tokens.refresh_token is not None,
            },
        )
    return credential_id


async def _fail(db: Database, tenant_id: TenantId, row: OAuthAuthorization, reason: str) -> None:
    async with db.session(write=True) as session:
        await repository.finish_authorization(
            session, tenant_id, row.id, status="failed", now=clock.now(), reason=reason
        )
        await record(
            session,
            tenant_id=tenant_id,
            actor_id=row.initiator_id,
            action=Action.OAUTH_CALLBACK,
            resource=f"oauth_authorization:{row.id}",
            request_id=current_request_id(),
            outcome="failed",
            details={"authorization_id": str(row.id), "reason": reason},
        )


def _param(value: str | None) -> str | None:
    return value if value is not None and 0 < len(value) <= MAX_PARAM else None


def _code(code: str | None) -> str:
    if code is not None and len(code) > MAX_PARAM:
        raise failure("code_too_long")
    if not code:
        raise failure("code_missing")
    return code


async def _forget_dead_client(db: Database, tenant_id: TenantId, row: OAuthAuthorization) -> None:
    """The token endpoint answered ``invalid_client``: a dynamic registration the authorization
    server no longer knows is forgotten, so the next connect registers the hub again."""
    async with db.session(write=True) as session:
        await repository.forget_dynamic_client(session, tenant_id, row.issuer, row.client_id)


async def complete_callback(
    db: Database,
    ctx: OAuthContext,
    policies: PolicyCache,
    *,
    state: str | None,
    code: str | None,
    iss: str | None,
    error: str | None,
) -> CallbackOutcome:
    """Validate the redirect, redeem the code, store the tokens (see the module docstring)."""
    state = _param(state)
    claimed = await _claim(db, state) if state is not None else None
    if claimed is None:
        return _refused("state_invalid")
    tenant_id, row = claimed.tenant_id, claimed.row
    labels = await _labels(db, tenant_id, row)
    try:
        if claimed.expired:
            raise failure("state_expired")
        refused = await standing.refusal(db, policies, tenant_id, row)
        if refused is not None:
            raise failure(refused)
        check_response_issuer(row.issuer, iss, required=row.iss_required)
        if error is not None:
            raise failure("authorization_denied")
        tokens, client_secret = await _redeem(db, ctx, tenant_id, row, _code(code))
        await _store(db, ctx, tenant_id, row, tokens, client_secret)
    except OAuthFailed as exc:
        await _fail(db, tenant_id, row, exc.reason)
        return _refused(exc.reason, labels)
    return CallbackOutcome(200, None, labels.tenant, labels.server, labels.initiator)

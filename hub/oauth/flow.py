"""Starting an authorization: ``POST /tenants/{t}/oauth/authorizations`` (DESIGN §9, §15).

1. **Subject**, read in a short session: a server (``server:<handle>`` : write; its own
   ``oauth_token`` credential is then re-authorised in place), a URL and a name for a new
   credential, or a credential to re-authorise (``credential:<c>`` : use and write; a step-up,
   at most ``step_up_limit`` per credential in ``step_up_window_s`` — but a credential in
   ``error``, its refresh token refused, is never capped: re-authorising is its only repair).
2. **Discovery**, with no transaction open and one deadline for all of it: an unauthenticated
   MCP probe of the server for its ``WWW-Authenticate`` challenge, the protected resource
   metadata (:mod:`~hub.oauth.protected_resource`), the authorization server metadata
   (:mod:`~hub.oauth.server_metadata`), the client registration (:mod:`~hub.oauth.registration`).
   Each refusal there (resource mismatch, issuer mismatch, no S256…) ends the flow before any
   authorization request exists, let alone a token request.
3. **The request**, written in the request's own transaction: scopes
   (:mod:`~hub.oauth.scopes`), a PKCE verifier (sealed) and a state (hashed), the flow row, a
   new dynamic registration kept (a pre-registered client is kept by the callback, once it has
   redeemed a code: :mod:`~hub.oauth.clients`), one audit row. The answer carries the
   authorization URL.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from hub.audit.actions import Action
from hub.audit.service import record_for
from hub.auth.caller import TenantAccess
from hub.core import clock
from hub.core.db import Database
from hub.core.errors import BadRequest, NotFound
from hub.egress import EgressError, UrlRejected, origin_of, validate_url
from hub.mcp import BearerChallenge, McpError, era_from_hint
from hub.models import Credential, OAuthAuthorization, OAuthClient, Server
from hub.oauth import repository
from hub.oauth.authorization_request import authorization_url
from hub.oauth.clients import keep_client
from hub.oauth.context import OAuthContext
from hub.oauth.exceptions import failure, from_egress
from hub.oauth.http import FlowClock
from hub.oauth.pkce import new_state, new_verifier, s256_challenge, state_digest
from hub.oauth.protected_resource import discover_resource
from hub.oauth.registration import (
    AUTH_METHODS,
    ClientRegistration,
    choose_auth_method,
    register_dynamic,
)
from hub.oauth.schemas import AuthorizationCreate
from hub.oauth.scopes import join_scopes, select_scopes
from hub.oauth.sealed import CLIENT_AAD, STATE_AAD, open_field, seal_field
from hub.oauth.server_metadata import ServerMetadata, discover_server
from hub.servers import service as servers_service
from hub.tenants import service as tenants_service

__all__ = ["Started", "create_authorization"]

INVALID_URL = "url must be absolute https (http only to loopback when allowed)"
MAX_SCOPE_TEXT = 4096  # what the scope columns hold


@dataclass(frozen=True)
class Subject:
    url: str
    era_hint: str | None
    server: Server | None
    credential: Credential | None  # re-authorised in place
    credential_name: str | None  # a new credential's name
    recorded_scopes: tuple[str, ...]
    step_up: bool
    tenant_name: str


@dataclass(frozen=True)
class Started:
    row: OAuthAuthorization
    authorization_url: str


async def _oauth_credential(
    session: AsyncSession, access: TenantAccess, credential_id: uuid.UUID
) -> Credential:
    await access.require(f"credential:{credential_id}", "use")
    await access.require(f"credential:{credential_id}", "write")
    credential = await repository.get_credential(session, access.tenant_id, credential_id)
    if credential is None or credential.status == "revoked":
        raise NotFound("credential not found")
    if not credential.is_oauth or not credential.oauth_server_url:
        raise failure("credential_not_oauth")
    return credential


async def _subject(
    db: Database, ctx: OAuthContext, access: TenantAccess, data: AuthorizationCreate
) -> Subject:
    async with db.session(write=False) as read:
        tenant = await tenants_service.get_tenant(read, access.tenant_id.value)
        if data.server is not None:
            await access.require(f"server:{data.server}", "write")
            server = await servers_service.get_server(read, access.tenant_id, data.server)
            current = None
            if server.credential_id is not None:
                found = await repository.get_credential(
                    read, access.tenant_id, server.credential_id
                )
                if found is not None and found.type == "oauth_token" and found.status != "revoked":
                    await access.require(f"credential:{found.id}", "write")
                    current = found
            return Subject(
                url=server.url,
                era_hint=server.era,
                server=server,
                credential=current,
                credential_name=None if current else f"{server.handle}-oauth",
                recorded_scopes=tuple((current.oauth_scopes or "").split()) if current else (),
                step_up=False,
                tenant_name=tenant.name,
            )
        if data.credential_id is not None:
            credential = await _oauth_credential(read, access, data.credential_id)
            if credential.status != "error":  # a dead credential's re-authorisation is a repair
                since = clock.now() - timedelta(seconds=ctx.config.step_up_window_s)
                count = await repository.count_reauthorizations(
                    read, access.tenant_id, credential.id, since
                )
                if count >= ctx.config.step_up_limit:
                    raise failure("step_up_limit")
            bound = await servers_service.server_using_credential(
                read, access.tenant_id, credential.id
            )
            return Subject(
                url=credential.oauth_server_url or "",
                era_hint=bound.era if bound else None,
                server=None,
                credential=credential,
                credential_name=None,
                recorded_scopes=tuple((credential.oauth_scopes or "").split()),
                step_up=True,
                tenant_name=tenant.name,
            )
    try:
        url = validate_url(data.url or "", ctx.egress)
    except UrlRejected:
        raise BadRequest(INVALID_URL) from None
    return Subject(url, None, None, None, data.credential_name, (), False, tenant.name)


async def _probe(
    ctx: OAuthContext, subject: Subject, clock_: FlowClock, scope: str
) -> BearerChallenge | None:
    """An unauthenticated MCP discovery: the server's 401/403 challenge, if it sends one."""
    era = era_from_hint(subject.era_hint)
    try:
        await ctx.client.discover(
            subject.url,
            pin=origin_of(subject.url),
            bearer=None,
            deadline_s=clock_.remaining(),
            era_hint=era,
            scope=scope,
        )
    except McpError as exc:
        return exc.challenge if exc.reason == "unauthorized" else None
    return None


async def _registration(
    db: Database,
    ctx: OAuthContext,
    access: TenantAccess,
    data: AuthorizationCreate,
    subject: Subject,
    server: ServerMetadata,
    clock_: FlowClock,
) -> ClientRegistration:
    """Pre-registered, kept, metadata document, dynamic — in that order (module docstring of
    :mod:`hub.oauth.registration`)."""
    if data.client is not None:
        secret = data.client.client_secret.get_secret_value() if data.client.client_secret else None
        method = data.client.token_endpoint_auth_method or choose_auth_method(
            server.auth_methods_supported, has_secret=secret is not None
        )
        return ClientRegistration(data.client.client_id, method, "pre_registered", secret)
    async with db.session(write=False) as read:
        kept = await repository.get_client(read, access.tenant_id, server.issuer)
    cimd = ctx.config.metadata_document_client_id if server.metadata_document_supported else None
    if kept is not None and kept.registration == "pre_registered":
        return _kept(ctx, kept)
    if cimd is not None:
        return ClientRegistration(cimd, "none", "metadata_document")
    if kept is not None and kept.redirect_uri == ctx.config.redirect_uri:
        return _kept(ctx, kept)
    if server.registration_endpoint is None:
        raise failure("registration_unavailable")
    return await register_dynamic(
        ctx.fetcher,
        server.registration_endpoint,
        supported_methods=server.auth_methods_supported,
        client_name=f"{ctx.config.client_name} ({subject.tenant_name})"[:200],
        redirect_uri=ctx.config.redirect_uri,
        clock=clock_,
        scope=str(access.tenant_id),
    )


def _kept(ctx: OAuthContext, kept: OAuthClient) -> ClientRegistration:
    secret = open_field(ctx.keyring, CLIENT_AAD, kept, "client_secret")
    method = kept.auth_method if kept.auth_method in AUTH_METHODS else "none"
    return ClientRegistration(kept.client_id, method, "stored", secret)


async def _discover(
    db: Database,
    ctx: OAuthContext,
    access: TenantAccess,
    data: AuthorizationCreate,
    subject: Subject,
) -> tuple[BearerChallenge | None, tuple[str, ...] | None, str, ServerMetadata, ClientRegistration]:
    clock_ = FlowClock(ctx.config.deadline_s)
    scope = str(access.tenant_id)
    try:
        challenge = await _probe(ctx, subject, clock_, scope)
        resource = await discover_resource(
            ctx.fetcher, ctx.egress, subject.url, challenge, clock=clock_, scope=scope
        )
        server = await discover_server(
            ctx.fetcher, ctx.egress, resource.authorization_servers[0], clock=clock_, scope=scope
        )
        registration = await _registration(db, ctx, access, data, subject, server, clock_)
    except EgressError as exc:
        raise from_egress(exc) from None
    return challenge, resource.scopes_supported, resource.resource, server, registration


async def create_authorization(
    db: Database,
    session: AsyncSession,
    ctx: OAuthContext,
    access: TenantAccess,
    data: AuthorizationCreate,
) -> Started:
    """Discover, register, and record a new authorization (see the module docstring)."""
    subject = await _subject(db, ctx, access, data)
    challenge, supported, resource, server, registration = await _discover(
        db, ctx, access, data, subject
    )
    scopes = select_scopes(
        requested=data.scopes,
        recorded=subject.recorded_scopes,
        challenge=challenge.scopes if challenge else (),
        resource_supported=supported,
        server_supported=server.scopes_supported,
    )
    if len(join_scopes(scopes) or "") > MAX_SCOPE_TEXT:
        raise failure("invalid_scope")
    verifier, state = new_verifier(), new_state()
    now = clock.now()
    row = OAuthAuthorization(
        id=uuid.uuid4(),
        tenant_id=access.tenant_id.value,
        state_hash=state_digest(state),
        status="pending",
        expires_at=now + timedelta(seconds=ctx.config.state_ttl_s),
        created_at=now,
        initiator_id=access.actor_id,
        server_id=subject.server.id if subject.server else None,
        credential_id=subject.credential.id if subject.credential else None,
        credential_name=subject.credential_name,
        step_up=subject.step_up,
        server_url=subject.url,
        resource=resource,
        issuer=server.issuer,
        iss_required=server.iss_parameter_supported,
        token_endpoint=server.token_endpoint,
        client_id=registration.client_id,
        auth_method=registration.auth_method,
        client_registration=registration.kind,
        scopes=join_scopes(scopes),
        redirect_uri=ctx.config.redirect_uri,
    )
    for field, value in (("verifier", verifier), ("client_secret", registration.client_secret)):
        for name, sealed in seal_field(
            ctx.keyring, STATE_AAD, row.tenant_id, row.id, field, value
        ).items():
            setattr(row, name, sealed)
    if registration.kind == "dynamic":  # a pre-registered client waits for the callback
        await keep_client(
            session,
            ctx,
            access.tenant_id,
            server.issuer,
            kind="dynamic",
            client_id=registration.client_id,
            auth_method=registration.auth_method,
            client_secret=registration.client_secret,
        )
    session.add(row)
    await session.flush()
    await record_for(
        session,
        access,
        Action.OAUTH_AUTHORIZE,
        f"oauth_authorization:{row.id}",
        {
            "server": subject.server.handle if subject.server else None,
            "credential_id": str(subject.credential.id) if subject.credential else None,
            "issuer": server.issuer,
            "registration": registration.kind,
            "scopes": list(scopes),
            "step_up": subject.step_up,
        },
    )
    url = authorization_url(
        server.authorization_endpoint,
        client_id=registration.client_id,
        redirect_uri=ctx.config.redirect_uri,
        scopes=scopes,
        state=state,
        code_challenge=s256_challenge(verifier),
        resource=resource,
    )
    return Started(row, url)

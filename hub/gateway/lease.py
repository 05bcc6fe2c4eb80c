"""``POST /tenants/{t}/credentials/{c}/lease``: a direct-mode credential for a sidecar (§10.5, §15).

Only the ``service`` principal named as the deployment's ``sidecar_id`` gets one — never the
agent's key, nor any other principal, whatever its grants — and only for a credential that a
**direct-mode** entry of that deployment uses; the caller also needs ``credential:<c>`` : ``use``.
Order: the deployment must exist in the tenant (404); then the caller must be its sidecar (403);
the credential must belong to one of its entries (403) in direct mode (403, ``not_direct``); the
use grant (403); the credential must be usable (404, as everywhere). Every refusal is a
``credential.lease`` audit row (the failure audit: 403 ``denied``), and so is every lease, with the
secret's fingerprint (sha256, 16 hex digits), never the secret.

The answer: ``secret`` (``null`` for the keyless sentinel), the ``origin`` it may be sent to
(the pin, as discovery resolves it), ``url``, ``expires_at`` (at most ``LEASE_S`` = 300 s, and
never after the credential's own expiry) and the hub's ``egress`` policy for the call, which the
sidecar applies instead of its own. An OAuth token due for refresh is refreshed first; so is
one whose fingerprint the sidecar names as ``refused_fingerprint`` (the upstream answered it 401)
while it is still the credential's token: the sidecar's one refresh and one retry on a 401, as
the hub's own calls have (DESIGN §9). A fingerprint of an older token renews nothing (another
caller renewed it already: the current one is leased), so a sidecar cannot make the hub refresh
a token at will.

``POST …/credentials/{c}/challenges`` (same caller, same order of refusals): the upstream answered
a leased OAuth token 403 ``insufficient_scope``; the credential records the union of its scopes
and the challenge's, audited ``credential.insufficient_scope``, as on the hub's own calls (DESIGN
§9), so the next ``hub oauth connect --credential`` steps up. Only for the credential's current
token, named by its fingerprint (``recorded: false`` otherwise: it was replaced since), so a
sidecar can add scopes only on a token it holds, and only RFC 6749 scope tokens (at most 64; the
recorded text is capped as the hub's own).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Annotated

from fastapi import Path, Request
from pydantic import BaseModel, Field
from sqlalchemy.ext.asyncio import AsyncSession

from hub.audit.actions import Action
from hub.audit.service import record_for
from hub.auth.caller import TenantAccess
from hub.authz.deps import TenantAccessDep
from hub.authz.throttle import rest_router
from hub.core import clock
from hub.core.components import components_of
from hub.core.deps import SessionDep, get_database, reads_only
from hub.core.errors import Forbidden, NotFound
from hub.core.paths import parse_id
from hub.core.schemas import Envelope, RequestModel
from hub.credentials import NO_TOKEN
from hub.credentials.service import CredentialContext
from hub.credentials.vault import decrypt_field, is_expired
from hub.deployments import service as deployments_service
from hub.deployments.service import ResolvedEntry
from hub.mcp.challenge import MAX_SCOPES, SCOPE_TOKEN
from hub.models import Credential, Deployment
from hub.upstream import Target, UpstreamContext, resolve_target

__all__ = ["LEASE_S", "router"]

LEASE_S = 300

router = rest_router(prefix="/tenants/{t}/credentials", tags=["sidecar"])


class LeaseCreate(RequestModel):
    deployment_id: uuid.UUID
    # the fingerprint of a leased secret the upstream answered 401: an OAuth token still
    # current is renewed first, as the hub's own calls renew it on a 401 (DESIGN §9)
    refused_fingerprint: str | None = Field(default=None, pattern=r"^[0-9a-f]{16}$")


class ChallengeCreate(RequestModel):
    deployment_id: uuid.UUID
    # the leased secret the upstream answered 403 ``insufficient_scope``, and the scopes its
    # challenge named (RFC 6750 §3.1; RFC 6749 §3.3 scope tokens)
    fingerprint: str = Field(pattern=r"^[0-9a-f]{16}$")
    scopes: list[Annotated[str, Field(pattern=f"^{SCOPE_TOKEN.pattern}$")]] = Field(
        min_length=1, max_length=MAX_SCOPES
    )


class ChallengeRead(BaseModel):
    # False when the fingerprint is not the credential's current token (it was replaced since
    # the call: nothing is recorded) or the credential is not an OAuth token
    recorded: bool


class LeaseEgress(BaseModel):
    allow_loopback: bool
    allow_cidrs: list[str]
    extra_origins: list[str]  # origins besides ``origin`` this credential may also reach
    # the hub's byte caps and per-origin slots (HUB_MAX_RESPONSE_BYTES, HUB_MAX_OPERATION_BYTES,
    # HUB_EGRESS_MAX_PER_ORIGIN, HUB_EGRESS_MAX_PER_TENANT_ORIGIN), which bound the sidecar's
    # call as they bound the hub's own
    max_response_bytes: int | None = None
    max_operation_bytes: int | None = None
    max_per_origin: int | None = None
    max_per_tenant_origin: int | None = None


class LeaseRead(BaseModel):
    credential_id: uuid.UUID
    deployment_id: uuid.UUID
    secret: str | None
    origin: str
    url: str
    expires_at: datetime
    fingerprint: str | None
    egress: LeaseEgress
    # an OAuth token the hub can refresh: a 401 is worth a lease with ``refused_fingerprint``
    renewable: bool = False
    # the credential's version leased: a decision naming a newer one (the secret rotated since)
    # makes the sidecar lease again
    version: int | None = None


@router.post("/{c}/lease", name="credential.lease")
@reads_only  # no transaction held across an OAuth refresh; the audit row is its own
async def lease_credential(
    request: Request,
    c: Annotated[str, Path(description="Credential id")],
    body: LeaseCreate,
    session: SessionDep,
    access: TenantAccessDep,
) -> Envelope[LeaseRead]:
    """Lease a direct-mode credential to the deployment's sidecar (≤ 300 s, in memory only)."""
    credential_id = parse_id(c)
    deployment, target = await _sidecar_target(
        request, session, access, credential_id, body.deployment_id
    )
    credential = target.credential
    assert credential is not None  # noqa: S101 - resolve_target loaded it
    parts = components_of(request.app)
    ctx = parts.get(UpstreamContext)
    fingerprints = parts.get(CredentialContext)
    renewed = False
    if credential.is_oauth and ctx.tokens is not None:
        db = get_database(request)
        credential = await ctx.tokens.fresh(db, access.tenant_id, credential)
        refused = body.refused_fingerprint
        if refused is not None and _fingerprint(ctx, fingerprints, credential) == refused:
            current = await ctx.tokens.renew(db, access.tenant_id, credential)
            renewed = current is not None
            credential = current or credential
        if is_expired(credential):
            raise NotFound(
                "the credential cannot be used just now", reason="credential_unavailable"
            )
    secret = _secret(ctx, credential)
    now = clock.now()
    expires_at = now + timedelta(seconds=LEASE_S)
    if credential.expires_at is not None:
        expires_at = min(expires_at, credential.expires_at)
    fingerprint = fingerprints.fingerprint(secret) if secret else None
    egress = ctx.egress
    async with get_database(request).session(write=True) as written:  # before the secret goes
        await record_for(
            written,
            access,
            Action.CREDENTIAL_LEASE,
            f"credential:{credential_id}",
            {
                "deployment_id": str(deployment.id),
                "fingerprint": fingerprint,
                "origin": target.pin,
                "expires_at": expires_at.isoformat(),
                **({"renewed": True} if renewed else {}),
            },
        )
    return Envelope(
        data=LeaseRead(
            credential_id=credential_id,
            deployment_id=deployment.id,
            secret=secret,
            origin=target.pin,
            url=target.url,
            expires_at=expires_at,
            fingerprint=fingerprint,
            renewable=credential.is_oauth and ctx.tokens is not None,
            version=credential.version,
            egress=LeaseEgress(
                allow_loopback=egress.allow_loopback,
                allow_cidrs=[str(n) for n in egress.allow_cidrs],
                extra_origins=sorted(
                    o for o in egress.allowed_origins(target.pin) if o != target.pin
                ),
                max_response_bytes=egress.max_response_bytes,
                max_operation_bytes=egress.max_operation_bytes,
                max_per_origin=egress.max_per_origin,
                max_per_tenant_origin=egress.max_per_tenant_origin,
            ),
        )
    )


@router.post("/{c}/challenges", name="credential.challenge")
@reads_only  # the keeper writes the scopes and their audit row in a session of its own
async def report_challenge(
    request: Request,
    c: Annotated[str, Path(description="Credential id")],
    body: ChallengeCreate,
    session: SessionDep,
    access: TenantAccessDep,
) -> Envelope[ChallengeRead]:
    """A direct-mode call's upstream answered the leased OAuth token 403 ``insufficient_scope``:
    the credential records the scopes, as on the hub's own calls (DESIGN §9), for a step-up."""
    _, target = await _sidecar_target(request, session, access, parse_id(c), body.deployment_id)
    credential = target.credential
    assert credential is not None  # noqa: S101 - resolve_target loaded it
    parts = components_of(request.app)
    ctx = parts.get(UpstreamContext)
    current = _fingerprint(ctx, parts.get(CredentialContext), credential) == body.fingerprint
    recorded = current and credential.is_oauth and ctx.tokens is not None
    if recorded and ctx.tokens is not None:
        await ctx.tokens.challenged(
            get_database(request), access.tenant_id, credential, tuple(dict.fromkeys(body.scopes))
        )
    return Envelope(data=ChallengeRead(recorded=recorded))


async def _sidecar_target(
    request: Request,
    session: AsyncSession,
    access: TenantAccess,
    credential_id: uuid.UUID,
    deployment_id: uuid.UUID,
) -> tuple[Deployment, Target]:
    """The deployment and the upstream target (with its credential) of its direct-mode entry
    that uses ``credential_id``, when the caller is the deployment's sidecar and may use the
    credential (the order of the module docstring)."""
    deployment, direct = await _sidecar_entry(session, access, credential_id, deployment_id)
    ctx = components_of(request.app).get(UpstreamContext)
    target = await resolve_target(session, ctx, access.tenant_id, direct.server.url, credential_id)
    return deployment, target


async def _sidecar_entry(
    session: AsyncSession, access: TenantAccess, credential_id: uuid.UUID, deployment_id: uuid.UUID
) -> tuple[Deployment, ResolvedEntry]:
    """The deployment and its direct-mode entry using ``credential_id``, when the caller is the
    deployment's sidecar and may use the credential (the order of the module docstring)."""
    deployment = await deployments_service.get_deployment_or_none(
        session, access.tenant_id, deployment_id
    )
    if deployment is None:
        raise NotFound("deployment not found")
    caller = access.caller
    if caller.kind != "service" or deployment.sidecar_id != caller.principal_id:
        raise Forbidden(
            "only the deployment's sidecar (its sidecar_id service principal) may lease",
            reason="not_sidecar",
        )
    entries = (await deployments_service.resolved_entries(session, access.tenant_id, [deployment]))[
        deployment.id
    ]
    using = [e for e in entries if e.server.credential_id == credential_id]
    if not using:
        raise Forbidden(
            "no entry of this deployment uses this credential", reason="not_in_deployment"
        )
    direct = next((e for e in using if e.entry.mode == "direct"), None)
    if direct is None:
        raise Forbidden(
            "this credential's entries are relay mode: it never leaves the hub", reason="not_direct"
        )
    await access.require(f"credential:{credential_id}", "use")
    return deployment, direct


def _secret(ctx: UpstreamContext, credential: Credential) -> str | None:
    plaintext = decrypt_field(ctx.keyring, credential, "secret")
    return None if plaintext in (None, NO_TOKEN) else plaintext


def _fingerprint(
    ctx: UpstreamContext, fingerprints: CredentialContext, credential: Credential
) -> str | None:
    """The fingerprint a lease of ``credential`` carries: keyed by the pepper, as the
    credential's own ``secret_fp`` (SECURITY.md: never a bare hash)."""
    secret = _secret(ctx, credential)
    return fingerprints.fingerprint(secret) if secret else None

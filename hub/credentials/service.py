"""Credential rules: validation, encryption with row-bound AAD, optimistic locking, revocation.

The secret is write-only. It is encrypted under the active key with AAD binding tenant, credential
id (generated before encrypting) and field name, and it never appears in a response, a log line,
an error message or an audit row; audit rows carry an HMAC fingerprint at most.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from hub.audit.actions import Action
from hub.audit.service import record_for
from hub.auth.caller import TenantAccess
from hub.core import clock
from hub.core.crypto import Keyring, credential_aad
from hub.core.errors import BadRequest, Conflict, NotFound
from hub.core.pagination import Page, PageParams
from hub.core.tenancy import TenantId
from hub.credentials import repository
from hub.credentials.constants import CREDENTIAL_TYPES_FOR_MCP, NO_TOKEN
from hub.credentials.schemas import CredentialCreate, CredentialUpdate
from hub.egress import EgressConfig, UrlRejected, is_header_safe_secret, validate_url
from hub.models import Credential
from hub.models.credential import ENCRYPTED_FIELDS

__all__ = [
    "CredentialContext",
    "create_credential",
    "get_credential",
    "list_credentials",
    "revoke_credential",
    "sealed_columns",
    "update_credential",
    "update_if_version",
]


class CredentialContext:
    """What credential rules need from the app: the keyring, the URL rules, the pepper."""

    def __init__(self, keyring: Keyring, egress: EgressConfig, pepper: bytes) -> None:
        self.keyring = keyring
        self.egress = egress
        self.pepper = pepper

    def fingerprint(self, secret: str) -> str:
        return hmac.new(self.pepper, secret.encode(), hashlib.sha256).hexdigest()[:16]


def sealed_columns(
    keyring: Keyring, tenant_id: uuid.UUID, credential_id: uuid.UUID, field: str, plaintext: str
) -> dict[str, Any]:
    sealed = keyring.encrypt(plaintext, credential_aad(tenant_id, credential_id, field))
    return {
        f"{field}_key_id": sealed.key_id,
        f"{field}_nonce": sealed.nonce,
        f"{field}_ciphertext": sealed.ciphertext,
    }


async def update_if_version(
    session: AsyncSession,
    tenant_id: TenantId,
    credential_id: uuid.UUID,
    expected_version: int,
    values: dict[str, Any],
) -> bool:
    """Apply ``values`` (already sealed columns) and bump ``version``, only if the row still has
    ``expected_version``: the compare-and-swap every rewrite of a credential goes through (an
    OAuth re-authorisation in place too)."""
    return await repository.compare_and_swap(
        session, tenant_id, credential_id, expected_version, values
    )


def _cleared(field: str) -> dict[str, Any]:
    return {f"{field}_key_id": None, f"{field}_nonce": None, f"{field}_ciphertext": None}


def _check_url(ctx: CredentialContext, url: str | None, kind: str) -> str | None:
    if url is None:
        if kind in CREDENTIAL_TYPES_FOR_MCP:
            raise BadRequest("api_base_url is required for api_key and oauth_token credentials")
        return None
    try:
        return validate_url(url, ctx.egress)
    except UrlRejected as exc:
        raise BadRequest(f"api_base_url: {exc}") from None


def _auth_mode(metadata: dict[str, Any] | None) -> str | None:
    mcp = (metadata or {}).get("mcp") or {}
    mode = mcp.get("auth")
    return mode if isinstance(mode, str) else None


MIN_SECRET_LENGTH = 16


def _check_secret(secret: str | None, metadata: dict[str, Any] | None, kind: str) -> str:
    if _auth_mode(metadata) == "none":
        if secret not in (None, NO_TOKEN):
            raise BadRequest("a credential with metadata.mcp.auth 'none' stores no secret")
        return NO_TOKEN
    if secret is None:
        raise BadRequest("secret is required")
    if not is_header_safe_secret(secret):
        raise BadRequest("the secret is not a valid header value")
    if kind in CREDENTIAL_TYPES_FOR_MCP and len(secret) < MIN_SECRET_LENGTH:
        # redaction matches a secret's forms in tool results: a short one would be neither safe
        # to send nor possible to find reliably (DESIGN §15)
        raise BadRequest(f"the secret must be at least {MIN_SECRET_LENGTH} characters")
    return secret


async def create_credential(
    session: AsyncSession, ctx: CredentialContext, access: TenantAccess, data: CredentialCreate
) -> Credential:
    url = _check_url(ctx, data.api_base_url, data.type)
    secret = _check_secret(
        data.secret.get_secret_value() if data.secret else None, data.metadata, data.type
    )
    credential_id = uuid.uuid4()  # known before encrypting: the AAD binds it
    now = clock.now()
    credential = Credential(
        id=credential_id,
        tenant_id=access.tenant_id.value,
        name=data.name,
        type=data.type,
        api_base_url=url,
        status=data.status or "active",
        expires_at=data.expires_at,
        meta=data.metadata or {},
        version=1,
        created_at=now,
        updated_at=now,
        **sealed_columns(ctx.keyring, access.tenant_id.value, credential_id, "secret", secret),
    )
    session.add(credential)
    await session.flush()
    await record_for(
        session,
        access,
        Action.CREDENTIAL_CREATE,
        f"credential:{credential_id}",
        {"name": data.name, "type": data.type, "secret_fp": ctx.fingerprint(secret)},
    )
    return credential


async def get_credential(
    session: AsyncSession, tenant_id: TenantId, credential_id: uuid.UUID
) -> Credential:
    credential = await repository.get_credential(session, tenant_id, credential_id)
    if credential is None:
        raise NotFound("credential not found")
    return credential


async def list_credentials(
    session: AsyncSession, access: TenantAccess, params: PageParams
) -> Page[Credential]:
    return await repository.list_credentials(session, access.tenant_id, params)


def _check_retarget(credential: Credential, data: CredentialUpdate) -> None:
    """Moving the pin moves where the secret is sent: the stored secret never follows it.

    An ``oauth_token`` is bound to its server's origin (re-authorise instead: 409); any other
    credential holding a secret needs a new ``secret`` in the same PATCH (400)."""
    if credential.type == "oauth_token":
        raise Conflict("an oauth_token credential cannot change api_base_url; re-authorise it")
    metadata = data.metadata if "metadata" in data.model_fields_set else credential.meta
    keyless = _auth_mode(metadata) == "none"  # nothing is ever sent for the keyless sentinel
    if data.secret is None and not keyless and credential.secret_ciphertext is not None:
        raise BadRequest("changing api_base_url needs a new secret in the same request")


def _update_values(
    ctx: CredentialContext, credential: Credential, data: CredentialUpdate
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The columns to write and the audit details (field names and a fingerprint, no secret)."""
    changes = data.model_dump(exclude_unset=True, exclude={"version", "secret"})
    values: dict[str, Any] = {}
    details: dict[str, Any] = {"fields": sorted(data.model_fields_set - {"version"})}
    if "name" in changes and changes["name"] is not None:
        values["name"] = changes["name"]
    if "api_base_url" in changes:
        url = _check_url(ctx, changes["api_base_url"], credential.type)
        if url != credential.api_base_url:
            _check_retarget(credential, data)
        values["api_base_url"] = url
    if "status" in changes and changes["status"] is not None:
        values["status"] = changes["status"]
    if "expires_at" in changes:
        values["expires_at"] = changes["expires_at"]
    metadata = credential.meta
    if "metadata" in changes:
        metadata = changes["metadata"] or {}
        values["meta"] = metadata
    leaving_keyless = (
        "metadata" in changes
        and _auth_mode(credential.meta) == "none"
        and _auth_mode(metadata) != "none"
    )
    entering_keyless = "metadata" in changes and _auth_mode(metadata) == "none"
    if data.secret is not None or entering_keyless or leaving_keyless:
        # leaving auth "none" without a new secret is a 400: NO_TOKEN would silently stay keyless
        secret = _check_secret(
            data.secret.get_secret_value() if data.secret else None, metadata, credential.type
        )
        sealed = sealed_columns(ctx.keyring, credential.tenant_id, credential.id, "secret", secret)
        values.update(sealed)
        details["secret_fp"] = ctx.fingerprint(secret)
        if credential.type == "oauth_token":
            # a pasted token is not the one the refresh token belongs to: never refresh it into
            # something else, and end any refresh in flight (its write-back checks the holder)
            values.update(_cleared("refresh_token"))
            values.update(_cleared("client_secret"))
            values.update(refresh_lease_until=None, refresh_lease_holder=None)
    if values.get("status") == "revoked":
        for field in ENCRYPTED_FIELDS:
            values.update(_cleared(field))
    return values, details


async def update_credential(
    session: AsyncSession,
    ctx: CredentialContext,
    access: TenantAccess,
    credential_id: uuid.UUID,
    data: CredentialUpdate,
) -> Credential:
    credential = await get_credential(session, access.tenant_id, credential_id)
    if credential.status == "revoked":
        raise Conflict("the credential is revoked; revocation is final")
    read_version = credential.version
    if data.version is not None and data.version != read_version:
        raise Conflict("the credential changed since it was read (version mismatch)")
    values, details = _update_values(ctx, credential, data)
    values["updated_at"] = clock.now()
    if not await repository.compare_and_swap(
        session, access.tenant_id, credential_id, read_version, values
    ):
        raise Conflict("the credential changed since it was read (version mismatch)")
    await session.refresh(credential)
    await record_for(
        session,
        access,
        Action.CREDENTIAL_UPDATE,
        f"credential:{credential_id}",
        details,
    )
    return credential


async def revoke_credential(
    session: AsyncSession, access: TenantAccess, credential_id: uuid.UUID
) -> None:
    """DELETE: status ``revoked`` (final), encrypted secrets wiped; the row stays readable."""
    credential = await get_credential(session, access.tenant_id, credential_id)
    if credential.status != "revoked":
        values: dict[str, Any] = {"status": "revoked", "updated_at": clock.now()}
        for field in ENCRYPTED_FIELDS:
            values.update(_cleared(field))
        if not await repository.compare_and_swap(
            session, access.tenant_id, credential_id, credential.version, values
        ):
            raise Conflict("the credential changed since it was read (version mismatch)")
    await record_for(
        session,
        access,
        Action.CREDENTIAL_DELETE,
        f"credential:{credential_id}",
    )

"""Using a secret: look the credential up as usable, then decrypt only for the call that sends it.

``decrypt_for_use`` hands the plaintext to one callable (the code that puts it in an
``Authorization`` header) while it is registered for log redaction, and keeps no reference to it
afterwards. Callers fetch the row in a short session first and call out after the session ended
(never a transaction open across outbound HTTP).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from hub.core import clock
from hub.core.crypto import CredentialUnavailable, Keyring, Sealed, credential_aad
from hub.core.errors import DiscoveryFailed, NotFound
from hub.core.logging import redacting
from hub.core.tenancy import TenantId
from hub.credentials import repository
from hub.credentials.constants import CREDENTIAL_TYPES_FOR_MCP, NO_TOKEN
from hub.credentials.exceptions import CredentialUnusable
from hub.models import Credential

__all__ = [
    "UNUSABLE_MESSAGE",
    "decrypt_field",
    "decrypt_for_use",
    "is_expired",
    "is_refreshable",
    "load_server_credential",
    "load_usable_credential",
]

UNUSABLE_MESSAGE = (
    "credential not found or not usable upstream (it must be an active, unexpired api_key or "
    "oauth_token; a secret is never sent)"
)

T = TypeVar("T")


async def load_usable_credential(
    session: AsyncSession, tenant_id: TenantId, credential_id: uuid.UUID
) -> Credential:
    """The credential if it can be used for MCP now; every other case reads as the same 404:
    unknown, another tenant's, a type other than api_key/oauth_token (``secret`` is never sent),
    not active, or expired. The message names the causes so an operator knows where to look.

    An expired OAuth credential that holds a refresh token is usable: the caller refreshes it
    before sending it (DESIGN §5, §9; :mod:`hub.upstream.tokens`)."""
    credential = await repository.get_credential(session, tenant_id, credential_id)
    if (
        credential is None
        or credential.type not in CREDENTIAL_TYPES_FOR_MCP
        or credential.status != "active"
        or credential.secret_ciphertext is None
        or (is_expired(credential) and not is_refreshable(credential))
    ):
        raise NotFound(UNUSABLE_MESSAGE)
    return credential


def _why_unusable(credential: Credential | None) -> str:
    if credential is None:
        return "it no longer exists"
    if credential.status == "error" and credential.is_oauth:
        return (
            "its authorization server refused the refresh token or the hub's client: connect "
            "the server again"
        )
    if credential.status != "active":
        return f"it is {credential.status}"
    if credential.type not in CREDENTIAL_TYPES_FOR_MCP:
        return f"a {credential.type} credential is never sent upstream"
    if credential.secret_ciphertext is None:
        return "it holds no secret"
    return "it expired and cannot be refreshed"


async def load_server_credential(
    session: AsyncSession, tenant_id: TenantId, credential_id: uuid.UUID
) -> Credential:
    """A registered server's own credential, if it can be used now; else 422
    ``credential_unavailable`` saying why. The caller named the server, not the credential, and
    may see which credential it is bound to, so the cause is told rather than read as absent
    (DESIGN §9: "422 ``credential_unavailable`` where a server's own credential is used")."""
    try:
        return await load_usable_credential(session, tenant_id, credential_id)
    except NotFound:
        credential = await repository.get_credential(session, tenant_id, credential_id)
        raise DiscoveryFailed(
            "credential_unavailable",
            f"the server's credential cannot be used: {_why_unusable(credential)}",
        ) from None


def is_expired(credential: Credential) -> bool:
    return credential.expires_at is not None and credential.expires_at <= clock.now()


def is_refreshable(credential: Credential) -> bool:
    """An OAuth credential the hub can refresh by itself (active, with a refresh token)."""
    return credential.is_oauth and credential.has_refresh_token and credential.status == "active"


def is_keyless(keyring: Keyring, credential: Credential) -> bool:
    """Whether the stored secret is the keyless sentinel (decrypts, compares, forgets)."""
    return _plaintext(keyring, credential) == NO_TOKEN


def _plaintext(keyring: Keyring, credential: Credential) -> str:
    plaintext = decrypt_field(keyring, credential, "secret")
    if plaintext is None:
        raise CredentialUnusable()
    return plaintext


def decrypt_field(keyring: Keyring, credential: Credential, field: str) -> str | None:
    """One encrypted field in the clear (``None`` when the row has none); a field that does not
    decrypt is :class:`CredentialUnusable`. Callers keep the plaintext only while they use it."""
    key_id = getattr(credential, f"{field}_key_id")
    nonce = getattr(credential, f"{field}_nonce")
    ciphertext = getattr(credential, f"{field}_ciphertext")
    if key_id is None or nonce is None or ciphertext is None:
        return None
    sealed = Sealed(key_id=key_id, nonce=bytes(nonce), ciphertext=bytes(ciphertext))
    raw: bytes | None
    try:
        raw = keyring.decrypt(sealed, credential_aad(credential.tenant_id, credential.id, field))
    except CredentialUnavailable:
        raw = None
    if raw is None:  # raised outside the handler: no cause, no context
        raise CredentialUnusable()
    return raw.decode()


async def decrypt_for_use(
    keyring: Keyring, credential: Credential, use: Callable[[str | None], Awaitable[T]]
) -> T:
    """Call ``use(bearer)`` with the decrypted secret (``None`` for the keyless sentinel)."""
    plaintext = _plaintext(keyring, credential)
    if plaintext == NO_TOKEN:
        return await use(None)
    with redacting(plaintext):
        return await use(plaintext)

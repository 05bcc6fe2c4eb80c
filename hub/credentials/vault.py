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
from hub.core.errors import NotFound
from hub.core.logging import redacting
from hub.core.tenancy import TenantId
from hub.credentials import repository
from hub.credentials.constants import CREDENTIAL_TYPES_FOR_MCP, NO_TOKEN
from hub.credentials.exceptions import CredentialUnusable
from hub.models import Credential

__all__ = ["UNUSABLE_MESSAGE", "decrypt_for_use", "load_usable_credential"]

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
    not active, or expired. The message names the causes so an operator knows where to look."""
    credential = await repository.get_credential(session, tenant_id, credential_id)
    if (
        credential is None
        or credential.type not in CREDENTIAL_TYPES_FOR_MCP
        or credential.status != "active"
        or credential.secret_ciphertext is None
        or (credential.expires_at is not None and credential.expires_at <= clock.now())
    ):
        raise NotFound(UNUSABLE_MESSAGE)
    return credential


def is_keyless(keyring: Keyring, credential: Credential) -> bool:
    """Whether the stored secret is the keyless sentinel (decrypts, compares, forgets)."""
    return _plaintext(keyring, credential) == NO_TOKEN


def _plaintext(keyring: Keyring, credential: Credential) -> str:
    if (
        credential.secret_key_id is None
        or credential.secret_nonce is None
        or credential.secret_ciphertext is None
    ):
        raise CredentialUnusable()
    sealed = Sealed(
        key_id=credential.secret_key_id,
        nonce=bytes(credential.secret_nonce),
        ciphertext=bytes(credential.secret_ciphertext),
    )
    raw: bytes | None
    try:
        raw = keyring.decrypt(sealed, credential_aad(credential.tenant_id, credential.id, "secret"))
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

"""Encrypted fields of the OAuth tables: the PKCE verifier and client secrets (DESIGN §15).

Sealed like credential fields (AES-256-GCM under the keyring's active key, see
:mod:`hub.core.crypto`), with each table's own AAD prefix, so a value copied between tables,
rows or columns does not open: ``hub/oauth-state/v1`` for ``oauth_authorizations`` (the verifier
and the client secret a flow will authenticate with) and ``hub/oauth-client/v1`` for
``oauth_clients``.
"""

from __future__ import annotations

import uuid
from typing import Any, Final

from hub.core.crypto import CredentialUnavailable, Keyring, Sealed, row_aad
from hub.oauth.exceptions import failure

__all__ = ["CLIENT_AAD", "STATE_AAD", "open_field", "seal_field"]

STATE_AAD: Final = b"hub/oauth-state/v1"
CLIENT_AAD: Final = b"hub/oauth-client/v1"


def seal_field(
    keyring: Keyring,
    prefix: bytes,
    tenant_id: uuid.UUID,
    row_id: uuid.UUID,
    field: str,
    plaintext: str | None,
) -> dict[str, Any]:
    """The three columns of ``field`` (all ``None`` when there is no value)."""
    if plaintext is None:
        return {f"{field}_key_id": None, f"{field}_nonce": None, f"{field}_ciphertext": None}
    sealed = keyring.encrypt(plaintext, row_aad(prefix, tenant_id, row_id, field))
    return {
        f"{field}_key_id": sealed.key_id,
        f"{field}_nonce": sealed.nonce,
        f"{field}_ciphertext": sealed.ciphertext,
    }


def open_field(keyring: Keyring, prefix: bytes, row: Any, field: str) -> str | None:
    """The plaintext of ``row.<field>`` (``None`` when absent); a value that does not decrypt
    fails the flow as ``state_invalid`` (a tampered or foreign row is no valid flow)."""
    key_id = getattr(row, f"{field}_key_id")
    nonce = getattr(row, f"{field}_nonce")
    ciphertext = getattr(row, f"{field}_ciphertext")
    if key_id is None or nonce is None or ciphertext is None:
        return None
    sealed = Sealed(key_id=key_id, nonce=bytes(nonce), ciphertext=bytes(ciphertext))
    raw: bytes | None
    try:
        raw = keyring.decrypt(sealed, row_aad(prefix, row.tenant_id, row.id, field))
    except CredentialUnavailable:
        raw = None
    if raw is None:
        raise failure("state_invalid")
    return raw.decode()

"""PKCE (RFC 7636) and the ``state`` parameter (RFC 6749 §10.12, RFC 9700 §4.7).

- The **code verifier** (RFC 7636 §4.1) is 86 characters of ``secrets.token_urlsafe`` — 512 bits
  from the OS generator, all in the unreserved set ``[A-Za-z0-9-._~]``, inside the 43..128 range.
- The **code challenge** is ``S256`` only (§4.2): ``BASE64URL(SHA256(ASCII(verifier)))``, computed
  by authlib. ``plain`` is never sent (MCP authorization: "MUST use S256").
- **state** is 256 bits from ``secrets``, single use and short-lived; the hub stores only its
  SHA-256 (:func:`state_digest`), so the state row in the database is not a usable callback.
"""

from __future__ import annotations

import hashlib
import secrets

from authlib.oauth2.rfc7636 import create_s256_code_challenge

__all__ = ["S256", "new_state", "new_verifier", "s256_challenge", "state_digest"]

S256 = "S256"


def new_verifier() -> str:
    return secrets.token_urlsafe(64)


def s256_challenge(verifier: str) -> str:
    challenge: str = create_s256_code_challenge(verifier)
    return challenge


def new_state() -> str:
    return secrets.token_urlsafe(32)


def state_digest(state: str) -> str:
    """The stored form of ``state`` (hex SHA-256): enough to find the row, useless to replay."""
    return hashlib.sha256(state.encode("utf-8", "surrogatepass")).hexdigest()

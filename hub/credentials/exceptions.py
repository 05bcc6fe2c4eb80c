"""Credential errors."""

from __future__ import annotations

from hub.core.errors import HubError

__all__ = ["CredentialUnusable"]


class CredentialUnusable(HubError):
    """A stored secret cannot be decrypted (a key missing from the ring, or tampering)."""

    status_code = 409
    code = "credential_unavailable"
    default_message = "the credential's secret cannot be used"

"""The OAuth flow's failures: one stable ``reason`` per failure, the hub's own fixed message.

Every failure of an authorisation (creating it, its callback, a refresh) is an
:class:`~hub.core.errors.OAuthFailed` (422, or 400 for a callback refused before any token
request) whose ``reason`` is listed here with its message. Messages never quote the
authorization server (no ``error_description``), never a URL it sent, never a token or secret.
"""

from __future__ import annotations

from typing import Final

from hub.core.errors import OAuthFailed
from hub.egress import EgressError

__all__ = ["CALLBACK_REFUSALS", "MESSAGES", "failure", "from_egress"]

MESSAGES: Final[dict[str, str]] = {
    # discovery (RFC 9728, RFC 8414)
    "prm_not_found": "no protected resource metadata was found for the server",
    "prm_invalid": "the server's protected resource metadata is not usable",
    "resource_mismatch": "the protected resource metadata names another resource than the server",
    "as_metadata_not_found": "no authorization server metadata was found for the issuer",
    "as_metadata_invalid": "the authorization server metadata is not usable",
    "issuer_mismatch": "the authorization server metadata names another issuer than its URL",
    "pkce_unsupported": "the authorization server does not support PKCE with S256",
    # registration
    "registration_unavailable": (
        "the authorization server offers no way to register the hub; pass a pre-registered client"
    ),
    "registration_failed": "the authorization server refused to register the hub as a client",
    # the request itself
    "invalid_scope": "the scopes to ask for are too many or too long",
    "step_up_limit": "this credential was re-authorised too often; try again later",
    "credential_not_oauth": "the credential was not made by the hub's OAuth flow",
    # the callback
    "state_invalid": "the authorization is unknown, expired or already used",
    "iss_mismatch": "the authorization response does not come from the expected issuer",
    "authorization_denied": "the authorization server did not grant the authorization",
    "code_missing": "the authorization response carries no code",
    "code_too_long": "the authorization response's code is longer than the hub accepts",
    "token_request_failed": "the authorization server did not issue a token",
    "client_refused": (
        "the authorization server refused the hub's client (invalid_client): a pre-registered "
        "client's id or secret is wrong or no longer known there, so connect with the current "
        "one; a dynamic registration is made again on the next connect"
    ),
    "state_expired": "the authorization expired before it was completed",
    "tenant_disabled": "the tenant this authorization was started in is disabled",
    "initiator_disabled": "the principal who started this authorization is disabled",
    "initiator_forbidden": (
        "the principal who started this authorization may no longer connect this server or "
        "credential"
    ),
    # egress (the fetcher's reasons, as in discovery)
    "redirect_refused": "upstream redirected; redirects are not followed",
    "origin_refused": "the url is outside the origin the request may be sent to",
    "destination_refused": "destination not allowed",
    "response_too_large": "upstream response too large",
    "timeout": "upstream did not answer in time",
    "connect_failed": "could not connect to upstream",
    "tls_failed": "upstream TLS verification failed",
    "malformed_response": "upstream response could not be decoded",
    "invalid_url": "an OAuth endpoint url is not allowed (https only; http only to loopback)",
}

#: Callback refusals decided before any token request: 400 (the browser's request was bad).
CALLBACK_REFUSALS: Final = frozenset(
    {
        "state_invalid",
        "state_expired",
        "tenant_disabled",
        "initiator_disabled",
        "initiator_forbidden",
        "iss_mismatch",
        "authorization_denied",
        "code_missing",
        "code_too_long",
    }
)


def failure(reason: str) -> OAuthFailed:
    """The :class:`OAuthFailed` for ``reason`` with its fixed message."""
    return OAuthFailed(reason, MESSAGES.get(reason, "the OAuth authorization failed"))


def from_egress(exc: EgressError) -> OAuthFailed:
    """A fetcher failure during the flow, as the flow's failure (same reason code)."""
    reason = exc.reason if exc.reason in MESSAGES else "connect_failed"
    return failure(reason)

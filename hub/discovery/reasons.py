"""Turning egress and MCP client failures into the 422 of DESIGN §5.

A 422 carries the hub's own fixed message for its ``reason`` and nothing else: never the upstream
status, never upstream text, never the secret.
"""

from __future__ import annotations

from typing import Final

from hub.core.errors import BadRequest, DiscoveryFailed, HubError
from hub.egress import EgressError
from hub.mcp import McpError
from hub.upstream import InsufficientScope, TokenUnavailable

__all__ = ["MESSAGES", "UNAUTHORIZED_UNSENT", "as_discovery_failure"]

MESSAGES: Final[dict[str, str]] = {
    "redirect_refused": "upstream redirected; redirects are not followed",
    "origin_refused": "the url is outside the origin the credential may be sent to",
    "destination_refused": "destination not allowed",
    "response_too_large": "upstream response too large",
    "timeout": "upstream did not answer in time",
    "connect_failed": "could not connect to upstream",
    "tls_failed": "upstream TLS verification failed",
    "unauthorized": "upstream refused the credential",
    "not_mcp": "upstream did not answer as an MCP server",
    "protocol_error": "upstream sent a malformed MCP response",
    "duplicate_tool": "upstream listed two tools with the same name",
    "invalid_result": "upstream answered with a result of the wrong shape",
    "invalid_secret": "the credential secret is not a valid header value",
    "handshake_failed": "upstream refused the MCP handshake",
    "insufficient_scope": (
        "upstream needs more scopes; the credential recorded them: re-authorise it to step up"
    ),
    "credential_unavailable": "the credential's token expired and cannot be refreshed",
    "token_refresh_failed": "the credential's token expired and could not be refreshed now",
}
_ALIASES: Final[dict[str, str]] = {
    "malformed_response": "protocol_error",
    "input_required": "invalid_result",  # an MRTR result where a plain one is due
}
#: ``unauthorized`` when no secret went out (no credential, or the keyless sentinel).
UNAUTHORIZED_UNSENT: Final = "upstream requires authorization, and no credential was sent"
#: … and its challenge names its OAuth protected resource metadata (RFC 9728 §5.1).
UNAUTHORIZED_OAUTH: Final = (
    "upstream requires authorization, and no credential was sent; it names an OAuth "
    "authorization server: connect the server by OAuth (POST /tenants/{t}/oauth/authorizations)"
)


def as_discovery_failure(
    exc: EgressError | McpError | TokenUnavailable | InsufficientScope,
    *,
    credential_sent: bool = True,
) -> HubError:
    """The 400 or 422 for ``exc``. An ``unauthorized`` says whether a credential was sent at all
    (DESIGN §14): "refused the credential" is wrong advice when there was none to refuse; and,
    when none was and the challenge points to OAuth metadata, that the server wants OAuth."""
    reason = _ALIASES.get(exc.reason, exc.reason)
    if reason == "invalid_url" and isinstance(exc, EgressError):
        return BadRequest(exc.message)  # the URL rules' own fixed text, never the URL
    if reason not in MESSAGES:
        reason = "protocol_error"
    if reason == "unauthorized":
        message = MESSAGES[reason] if credential_sent else UNAUTHORIZED_UNSENT
        challenge = exc.challenge if isinstance(exc, McpError) else None
        if not credential_sent and challenge is not None and challenge.resource_metadata:
            return DiscoveryFailed(reason, UNAUTHORIZED_OAUTH, credential_sent=False, oauth=True)
        return DiscoveryFailed(reason, message, credential_sent=credential_sent)
    return DiscoveryFailed(reason, MESSAGES[reason])

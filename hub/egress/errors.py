"""The egress error tree: one base class, one stable ``reason`` code per failure.

Every failure of an outbound fetch surfaces as an :class:`EgressError` subclass; domain code never
sees an ``httpx2``/``httpcore2`` exception (the transport and the fetcher translate them here).

Rules, because these errors travel into API responses, logs and audit rows:

- The message is the hub's own fixed text. It never quotes the URL, an upstream body, an upstream
  header or a library's error text, and it never names a secret.
- Translations are raised *outside* the ``except`` block that caught the library exception (or
  ``from None``), so neither ``__cause__`` nor ``__context__`` carries a library exception (which
  may hold the request, and so the ``Authorization`` header).
- ``reason`` is a stable code other layers map to their own responses (DESIGN §5, §13).
"""

from __future__ import annotations

from typing import ClassVar, Literal

__all__ = [
    "ConnectFailed",
    "ConnectionLost",
    "DestinationRefused",
    "EgressError",
    "EgressTimeout",
    "InvalidJson",
    "InvalidSecret",
    "MalformedResponse",
    "OriginRefused",
    "RedirectRefused",
    "ResponseTooLarge",
    "TlsFailed",
    "UrlRejected",
]

SizeScope = Literal["body", "event", "operation"]


class EgressError(Exception):
    """Base of every outbound-fetch failure; ``reason`` is a stable code, the message fixed text."""

    reason: ClassVar[str] = "egress_failed"
    default_message: ClassVar[str] = "the outbound request failed"

    def __init__(self, message: str | None = None) -> None:
        self.message = message or self.default_message
        super().__init__(self.message)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(reason={self.reason!r}, message={self.message!r})"


class UrlRejected(EgressError):
    """The URL fails the static rules (absolute https, no userinfo, no fragment, a host)."""

    reason = "invalid_url"
    default_message = "url must be absolute https"


class InvalidSecret(EgressError):
    """The bearer secret is not a valid header value; refused before any I/O."""

    reason = "invalid_secret"
    default_message = "the credential secret is not a valid header value"


class OriginRefused(EgressError):
    """The URL's origin is neither the operation's pinned origin nor one of its extra origins."""

    reason = "origin_refused"
    default_message = "url origin is not allowed for this operation"


class DestinationRefused(EgressError):
    """The host resolves to an address the destination policy blocks (or to nothing usable)."""

    reason = "destination_refused"
    default_message = "destination not allowed"


class RedirectRefused(EgressError):
    """The upstream answered with a 3xx; redirects are never followed."""

    reason = "redirect_refused"
    default_message = "upstream redirected; redirects are not followed"


class ResponseTooLarge(EgressError):
    """A body, one SSE event or the whole operation passed its byte cap; the stream was closed."""

    reason = "response_too_large"
    default_message = "response too large"

    def __init__(self, scope: SizeScope) -> None:
        self.scope: SizeScope = scope
        super().__init__(_SIZE_MESSAGES[scope])


_SIZE_MESSAGES: dict[SizeScope, str] = {
    "body": "response too large: the upstream body exceeds the size cap",
    "event": "response too large: an upstream event exceeds the size cap",
    "operation": "response too large: the operation exceeded its byte budget",
}


class EgressTimeout(EgressError):
    """The operation's total deadline (or a per-phase timeout, or the wait for a slot) expired."""

    reason = "timeout"
    default_message = "upstream did not answer in time"


class ConnectFailed(EgressError):
    """The host did not resolve, or no connection to it could be made: nothing was sent."""

    reason = "connect_failed"
    default_message = "could not connect to upstream"


class ConnectionLost(EgressError):
    """The connection broke once it carried the request: while it was sent, before the answer,
    or in the middle of it. The upstream may have received the request and acted on it, so its
    outcome is unknown (unlike :class:`ConnectFailed`, where nothing left the hub)."""

    reason = "connection_lost"
    default_message = "the connection to upstream broke after the request was sent"


class TlsFailed(EgressError):
    """The TLS handshake failed: untrusted certificate, wrong name, or protocol failure."""

    reason = "tls_failed"
    default_message = "upstream TLS verification failed"


class MalformedResponse(EgressError):
    """The upstream body could not be decoded (corrupt content encoding, not an event stream)."""

    reason = "malformed_response"
    default_message = "upstream response could not be decoded"


class InvalidJson(ValueError):
    """An upstream body or event is not valid JSON (a ``ValueError``; quotes nothing of it)."""

    def __init__(self) -> None:
        super().__init__("upstream body is not valid JSON")

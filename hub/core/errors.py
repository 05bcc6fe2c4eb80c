"""The one error tree of the hub and the body every error response has (DESIGN §4, §13).

Every failure a client can see is a :class:`HubError`; one handler turns it into
``{"error": {"code", "message", "request_id", …}}``. Messages are the hub's own fixed text:
they never quote request input, upstream text or a secret.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "BadRequest",
    "Conflict",
    "DiscoveryFailed",
    "Forbidden",
    "HubError",
    "InternalError",
    "NotFound",
    "OAuthFailed",
    "PayloadTooLarge",
    "PreconditionFailed",
    "RateLimited",
    "ServiceUnavailable",
    "Unauthorized",
    "UnsupportedMediaType",
    "error_body",
]


class HubError(Exception):
    """Base of every error the API reports; carries a status, a stable code and a safe message."""

    status_code: ClassVar[int] = 500
    code: ClassVar[str] = "internal_error"
    default_message: ClassVar[str] = "internal server error"

    def __init__(self, message: str | None = None, **extra: Any) -> None:
        self.message = message or self.default_message
        self.extra = extra
        #: response headers the error carries (``Retry-After``, the rate-limit fields…)
        self.headers: dict[str, str] = {}
        super().__init__(self.message)

    def body(self, request_id: str) -> dict[str, Any]:
        return error_body(self.code, self.message, request_id, **self.extra)


class BadRequest(HubError):
    """The request body or parameters are invalid (never FastAPI's 422)."""

    status_code = 400
    code = "invalid_request"
    default_message = "the request is invalid"


class Unauthorized(HubError):
    """No valid API key. One identical body for every cause (missing, garbage, revoked, …)."""

    status_code = 401
    code = "unauthorized"
    default_message = "a valid API key is required"


class Forbidden(HubError):
    """The caller is authenticated but a grant decision does not allow the action."""

    status_code = 403
    code = "forbidden"
    default_message = "not permitted"

    @classmethod
    def refused(cls, resource: str, action: str) -> Forbidden:
        """A refused grant decision, naming the resource and action (both the hub's own text:
        canonical ids, handles or ``kind:*``, never raw input)."""
        return cls(f"not permitted: {action} on {resource}", resource=resource, action=action)


class NotFound(HubError):
    """Absent, or owned by another tenant: both read the same."""

    status_code = 404
    code = "not_found"
    default_message = "not found"


class Conflict(HubError):
    """The request conflicts with the current state (duplicate, stale version, still referenced)."""

    status_code = 409
    code = "conflict"
    default_message = "conflict"


class PreconditionFailed(HubError):
    """An ``If-Match`` names a version that is no longer current (RFC 9110 §13.1.1)."""

    status_code = 412
    code = "precondition_failed"
    default_message = "the resource changed since it was read"


class PayloadTooLarge(HubError):
    """The request body is larger than the hub accepts (``HUB_MAX_REQUEST_BYTES``)."""

    status_code = 413
    code = "payload_too_large"
    default_message = "the request body is too large"


class UnsupportedMediaType(HubError):
    """The request body is in an encoding the hub does not read (a ``Content-Encoding``, a
    charset other than UTF-8)."""

    status_code = 415
    code = "unsupported_media_type"
    default_message = "unsupported media type"


class DiscoveryFailed(HubError):
    """An upstream MCP server could not be discovered; ``reason`` is a stable code (DESIGN §5)."""

    status_code = 422
    code = "discovery_failed"
    default_message = "discovery failed"

    def __init__(self, reason: str, message: str | None = None, **extra: Any) -> None:
        super().__init__(message, reason=reason, **extra)
        self.reason = reason


class OAuthFailed(HubError):
    """A step of an OAuth authorization to an upstream server failed; ``reason`` is a stable code
    (``prm_not_found``, ``issuer_mismatch``, ``pkce_unsupported``, …) and the message the hub's own
    fixed text: never the authorization server's words, never a token or secret (DESIGN §9)."""

    status_code = 422
    code = "oauth_failed"
    default_message = "the OAuth authorization failed"

    def __init__(self, reason: str, message: str | None = None) -> None:
        super().__init__(message, reason=reason)
        self.reason = reason


class RateLimited(HubError):
    """A rate limit refused the request; the headers say when to retry (DESIGN §11)."""

    status_code = 429
    code = "rate_limited"
    default_message = "rate limited: retry later"

    def __init__(self, kind: str, retry_after_s: int, headers: dict[str, str]) -> None:
        super().__init__(retry_after_s=retry_after_s, limit=kind)
        self.headers = dict(headers)


class ServiceUnavailable(HubError):
    """A dependency of the hub (its database) is unavailable."""

    status_code = 503
    code = "service_unavailable"
    default_message = "service unavailable"


class InternalError(HubError):
    """An unexpected failure; the client sees only this fixed message and the request id."""


def error_body(code: str, message: str, request_id: str, **extra: Any) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    error.update(extra)
    error["request_id"] = request_id
    return {"error": error}

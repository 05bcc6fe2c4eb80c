"""The sidecar's failures: each one line, fit to print as the command's only output."""

from __future__ import annotations

from typing import Any

__all__ = ["HubRefused", "HubUnreachable", "SidecarError"]


class SidecarError(Exception):
    """A failure the sidecar stops on (at start) or logs (later); ``str`` is one line."""


class HubUnreachable(SidecarError):
    """No usable answer from the hub: refused, timed out, TLS, too large, not JSON.

    ``sent``: the request may have reached the hub (it was being written, or the hub had begun to
    answer) before the failure, so what it asked for may have been done; False when it was never
    sent (no connection, TLS refused). ``tls``: the failure was the hub's TLS (its certificate).
    """

    def __init__(self, message: str, *, sent: bool = False, tls: bool = False) -> None:
        super().__init__(message)
        self.sent = sent
        self.tls = tls


class HubRefused(SidecarError):
    """The hub answered with a refusal (401, 403, 404, 429 …).

    ``retry_after_s``: when a 429 (or 503) said when to try again (its ``Retry-After`` or the
    error body's ``retry_after_s``); ``fields``: the hub's error body's extra fields (``limit``,
    ``max_bytes`` …), never its ``request_id``."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        retry_after_s: float | None = None,
        fields: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after_s = retry_after_s
        self.fields = fields or {}

"""The sidecar's failures: each one line, fit to print as the command's only output."""

from __future__ import annotations

__all__ = ["HubRefused", "HubUnreachable", "SidecarError"]


class SidecarError(Exception):
    """A failure the sidecar stops on (at start) or logs (later); ``str`` is one line."""


class HubUnreachable(SidecarError):
    """No usable answer from the hub: refused, timed out, TLS, too large, not JSON."""


class HubRefused(SidecarError):
    """The hub answered with a refusal (401, 403, 404 …): retrying will not help."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status

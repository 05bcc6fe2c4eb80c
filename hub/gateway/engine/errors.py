"""The error classes of the data plane and how each reaches an agent (DESIGN §10.2, §15).

Every error result and JSON-RPC error carries its class: ``_meta["io.mcphub/error"] =
{"class": …}`` on results, ``error.data = {"class": …}`` on errors.

================  ======================================  ====================
class             form                                    HTTP (the endpoint)
================  ======================================  ====================
unauthenticated   JSON-RPC ``40100``                      401
forbidden         JSON-RPC ``40300``                      200 (403 for a caller
                                                          that is not the agent)
approval_denied   JSON-RPC ``40300``                      200
unknown_tool      JSON-RPC ``-32602``                     200
rate_limited      JSON-RPC ``42900``, ``retry_after_s``   200 + ``Retry-After``
invalid_arguments result with ``isError: true``           200
approval_pending  result with ``isError: true``           200
upstream_failed   result with ``isError: true``           200
tool_changed      result with ``isError: true``           200
================  ======================================  ====================
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

__all__ = [
    "ERROR_META",
    "FORBIDDEN",
    "RATE_LIMITED",
    "UNAUTHENTICATED",
    "UNKNOWN_TOOL",
    "ErrorClass",
    "RpcFailure",
    "error_result",
]

ErrorClass = Literal[
    "unknown_tool",
    "invalid_arguments",
    "forbidden",
    "approval_pending",
    "approval_denied",
    "upstream_failed",
    "tool_changed",
    "rate_limited",
    "unauthenticated",
    "unavailable",
]

ERROR_META: Final = "io.mcphub/error"
UNAUTHENTICATED: Final = 40100
FORBIDDEN: Final = 40300
RATE_LIMITED: Final = 42900
UNAVAILABLE: Final = 50300
UNKNOWN_TOOL: Final = -32602


class RpcFailure(Exception):
    """A call that ends as a JSON-RPC error (not a result): code, fixed message, class."""

    def __init__(
        self,
        code: int,
        message: str,
        error_class: ErrorClass,
        data: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.error_class: ErrorClass = error_class
        self.data = {"class": error_class, **(data or {})}

    def error(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "data": dict(self.data)}


def error_result(
    error_class: ErrorClass, text: str, extra_meta: Mapping[str, Any] | None = None, **fields: Any
) -> dict[str, Any]:
    """A ``CallToolResult`` with ``isError: true``, the hub's text and the class marker."""
    meta: dict[str, Any] = {ERROR_META: {"class": error_class, **fields}}
    meta.update(extra_meta or {})
    return {"content": [{"type": "text", "text": text}], "isError": True, "_meta": meta}

"""JSON-RPC 2.0 messages as the endpoint receives them (MCP-PROTOCOL §5).

A request has ``jsonrpc: "2.0"``, a string or integer ``id`` (never null), a string ``method``
and object ``params`` (optional in the handshake eras, required in 2026-07-28). A notification has
no ``id``. A response (``result`` or ``error``, no ``method``) is what a client answers a server
request with; the hub never sends any, so it only acknowledges them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

from hub.mcp.server.answers import RpcError

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "PARSE_ERROR",
    "Message",
    "parse_message",
]

PARSE_ERROR: Final = -32700
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
INVALID_REQUEST: Final = -32600


@dataclass(frozen=True)
class Message:
    kind: Literal["request", "notification", "response"]
    method: str | None
    id: Any
    params: dict[str, Any]


def parse_message(raw: Any) -> Message:
    """One JSON-RPC message, or ``-32600`` (invalid request)."""
    if not isinstance(raw, dict) or raw.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, "Invalid Request", status=400)
    if "method" not in raw:
        if "id" in raw and ("result" in raw) != ("error" in raw):
            return Message("response", None, raw["id"], {})
        raise RpcError(INVALID_REQUEST, "Invalid Request", status=400)
    method = raw["method"]
    params = raw.get("params", {})
    if not isinstance(method, str) or not isinstance(params, dict):
        raise RpcError(INVALID_REQUEST, "Invalid Request", status=400)
    if "id" not in raw:
        return Message("notification", method, None, params)
    request_id = raw["id"]
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        raise RpcError(
            INVALID_REQUEST, "Invalid Request: the id must be a string or an integer", status=400
        )
    return Message("request", method, request_id, params)

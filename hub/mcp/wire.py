"""Wire vocabulary shared by both eras: versions, header names, JSON-RPC messages, result checks.

- Versions and eras (MCP-PROTOCOL §1, §1a): ``2026-07-28`` is the one *modern* version (no
  handshake, per-request ``_meta``); ``2025-11-25``, ``2025-06-18`` and ``2025-03-26`` are the
  *legacy* (handshake) versions the client speaks. ``2024-11-05`` (HTTP+SSE) is not spoken yet.
- JSON-RPC 2.0 (MCP-PROTOCOL §5): requests carry a fresh integer id, notifications none, and
  no batch is ever sent.
- ``resultType`` (MCP-PROTOCOL §1a): absent means ``complete``; ``input_required`` is an MRTR
  interim result the hub does not fulfil yet; anything else is invalid.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, Literal

from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
)
from mcp_types.version import LATEST_MODERN_VERSION

from hub.mcp.errors import McpError

__all__ = [
    "ACCEPT",
    "HEADER_MISMATCH",
    "INVALID_REQUEST",
    "JSON",
    "LEGACY_VERSIONS",
    "METHOD_NOT_FOUND",
    "MISSING_CLIENT_CAPABILITY",
    "MODERN_VERSION",
    "MODERN_VERSIONS",
    "SERVER_INFO_META_KEY",
    "UNSUPPORTED_VERSION",
    "Era",
    "Json",
    "check_result_type",
    "default_version",
    "encode",
    "era_from_hint",
    "era_of",
    "error_response",
    "modern_meta",
    "notification",
    "request",
    "result_response",
]

Era = Literal["modern", "legacy"]
Json = Any
"""Any JSON value, as ``json.loads`` returns it."""

MODERN_VERSION: Final[str] = LATEST_MODERN_VERSION
MODERN_VERSIONS: Final[tuple[str, ...]] = (MODERN_VERSION,)
LEGACY_VERSIONS: Final[tuple[str, ...]] = ("2025-11-25", "2025-06-18", "2025-03-26")
"""Handshake versions the client accepts, newest (the one offered by default) first."""

ACCEPT: Final[str] = "application/json, text/event-stream"
JSON: Final[str] = "application/json"

INVALID_REQUEST: Final[int] = -32600
METHOD_NOT_FOUND: Final[int] = -32601
HEADER_MISMATCH: Final[int] = -32020
MISSING_CLIENT_CAPABILITY: Final[int] = -32021
UNSUPPORTED_VERSION: Final[int] = -32022


def era_from_hint(era_hint: str | None) -> Era | None:
    """The remembered era of a server row, an origin or a bundle entry (``None`` when never
    found out)."""
    if era_hint == "modern":
        return "modern"
    return "legacy" if era_hint else None


def era_of(version: str) -> Era:
    """The era of a version the client speaks; ``ValueError`` for any other."""
    if version in MODERN_VERSIONS:
        return "modern"
    if version in LEGACY_VERSIONS:
        return "legacy"
    raise ValueError(
        "unsupported protocol version; use one of " + ", ".join(MODERN_VERSIONS + LEGACY_VERSIONS)
    )


def default_version(era: Era) -> str:
    return MODERN_VERSION if era == "modern" else LEGACY_VERSIONS[0]


def request(request_id: int, method: str, params: Mapping[str, Json]) -> dict[str, Json]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": dict(params)}


def notification(method: str, params: Mapping[str, Json] | None = None) -> dict[str, Json]:
    message: dict[str, Json] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = dict(params)
    return message


def result_response(request_id: Json, result: Mapping[str, Json]) -> dict[str, Json]:
    return {"jsonrpc": "2.0", "id": request_id, "result": dict(result)}


def error_response(request_id: Json, code: int, message: str) -> dict[str, Json]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def encode(message: Mapping[str, Json]) -> bytes:
    """Compact UTF-8 JSON, the body of one POST."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()


def modern_meta(version: str, client_info: Mapping[str, Json]) -> dict[str, Json]:
    """The per-request ``params._meta`` of the 2026-07-28 wire (MCP-PROTOCOL §1a).

    The client declares no optional capability (no sampling, elicitation or roots), hence ``{}``.
    """
    return {
        PROTOCOL_VERSION_META_KEY: version,
        CLIENT_CAPABILITIES_META_KEY: {},
        CLIENT_INFO_META_KEY: dict(client_info),
    }


def check_result_type(result: Mapping[str, Json]) -> None:
    """Refuse any ``resultType`` but an absent one or ``complete`` (``invalid_result``).

    ``input_required`` (MRTR, SEP-2322) is refused too: the hub offers the server nothing to ask
    for (no sampling, elicitation or roots), so it cannot fulfil the request; the gateway may
    grow support later.
    """
    kind = result.get("resultType", "complete")
    if kind == "input_required":
        raise McpError("input_required")
    if kind != "complete":
        raise McpError("invalid_result")

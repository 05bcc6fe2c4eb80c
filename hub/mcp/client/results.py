"""What the client hands back: :class:`DiscoveryResult` and :class:`CallResult` (DESIGN §5, §13).

Everything the server sent is kept **raw** (the JSON objects received: ``server_info``,
``capabilities``, each tool, the call result), so unknown fields survive into the catalog hash;
``mcp-types`` only validated them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types
from pydantic import BaseModel, ValidationError

from hub.mcp.errors import McpError
from hub.mcp.wire import Era, Json, check_result_type

__all__ = ["CallResult", "DiscoveryResult", "ServerFacts", "check_call_result", "valid_model"]


@dataclass(frozen=True)
class ServerFacts:
    """What ``initialize`` or ``server/discover`` told about the server, raw."""

    protocol_version: str
    server_info: dict[str, Json]
    capabilities: dict[str, Json]
    instructions: str | None


@dataclass(frozen=True)
class DiscoveryResult:
    """A server's description and tools, as discovered in one operation.

    ``tools``: the raw Tool objects in server order (malformed ones dropped, duplicates refused);
    ``dropped_tools``: ``{"name": str | None, "reason": str}`` for the first entries left out
    (at most ``MAX_DROPPED_LISTED``), ``dropped_total``: how many were left out in all;
    ``requests``: the HTTP requests the discovery made (probe, handshake, pages, DELETE…).
    """

    era: Era
    protocol_version: str
    server_info: dict[str, Json]
    capabilities: dict[str, Json]
    instructions: str | None
    tools: list[dict[str, Json]]
    dropped_tools: list[dict[str, Json]]
    dropped_total: int
    requests: int


@dataclass(frozen=True)
class CallResult:
    """One ``tools/call``: the raw ``CallToolResult`` (``isError`` preserved) and how it went."""

    era: Era
    protocol_version: str
    result: dict[str, Json]
    requests: int

    @property
    def is_error(self) -> bool:
        return self.result.get("isError") is True


def valid_model(model: type[BaseModel], data: Mapping[str, Any]) -> bool:
    """Whether ``data`` passes an ``mcp-types`` model (the raw dict is what the hub keeps)."""
    try:
        model.model_validate(data)
    except ValidationError:
        return False
    return True


def check_call_result(result: Mapping[str, Json]) -> None:
    """A complete ``CallToolResult``, or ``invalid_result`` (``input_required`` included)."""
    check_result_type(result)
    if not valid_model(mcp_types.CallToolResult, result):
        raise McpError("invalid_result")

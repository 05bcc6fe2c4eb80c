"""Shortcuts for the MCP client tests: discover or call a peer by URL, pinned to its origin."""

from __future__ import annotations

from typing import Any

import pytest

from hub.mcp import CallResult, DiscoveryResult, McpClient, McpError
from hub.mcp.errors import REASONS
from tests.peers.handmade import HandmadePeer
from tests.peers.handmade_wire import RecordedRequest
from tests.support.leaks import chain

DEADLINE = 5.0

TOOLS: list[dict[str, Any]] = [
    {
        "name": "echo",
        "description": "Echoes.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    },
    {
        "name": "search_region",
        "inputSchema": {
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "limit": {"type": "integer", "x-mcp-header": "Limit"},
                "exact": {"type": "boolean", "x-mcp-header": "Exact"},
                "query": {"type": "string"},
            },
        },
        "x-vendor-extension": {"kept": True},
    },
    {"name": "fail", "inputSchema": {"type": "object"}},
]


async def discover(
    client: McpClient, peer: HandmadePeer, *, bearer: str | None = None, **options: Any
) -> DiscoveryResult:
    options.setdefault("deadline_s", DEADLINE)
    return await client.discover(peer.url, pin=peer.url, bearer=bearer, **options)


async def call(
    client: McpClient,
    peer: HandmadePeer,
    name: str,
    arguments: dict[str, Any],
    *,
    bearer: str | None = None,
    **options: Any,
) -> CallResult:
    options.setdefault("deadline_s", DEADLINE)
    return await client.call_tool(peer.url, name, arguments, pin=peer.url, bearer=bearer, **options)


def tool(name: str) -> dict[str, Any]:
    return next(t for t in TOOLS if t["name"] == name)


def only(requests: list[RecordedRequest]) -> RecordedRequest:
    (request,) = requests
    return request


async def failure_of(client: McpClient, peer: Any, **options: Any) -> McpError:
    with pytest.raises(McpError) as caught:
        await discover(client, peer, **options)
    error = caught.value
    assert error.reason in REASONS
    assert chain(error) == [error]
    return error

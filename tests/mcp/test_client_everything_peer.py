"""Discovery and a call against ``@modelcontextprotocol/server-everything`` (legacy-only, Node).

It answers the modern probe with a 400 ``-32000`` ("Server not initialized"), which is not a
recognised modern error, so the client falls back to the handshake; its answers are SSE streams
in a session.
"""

from __future__ import annotations

import pytest

from hub.mcp import LEGACY_VERSIONS, McpClient
from tests.peers.fixtures import EverythingPeer

pytestmark = pytest.mark.slow

DEADLINE = 20.0


async def test_discovers_server_everything_in_the_legacy_era(
    everything_peer: EverythingPeer, client: McpClient
) -> None:
    url = everything_peer.url
    found = await client.discover(url, pin=url, bearer=None, deadline_s=DEADLINE)
    assert found.era == "legacy"
    assert found.protocol_version == LEGACY_VERSIONS[0]
    assert found.server_info["name"]
    assert "tools" in found.capabilities
    names = [tool["name"] for tool in found.tools]
    assert {"echo", "get-sum"} <= set(names)
    assert len(names) == len(set(names))
    for tool in found.tools:
        assert tool["inputSchema"]["type"] == "object"
    # probe, initialize, notifications/initialized, tools/list, DELETE
    assert found.requests == 5

    again = await client.discover(url, pin=url, bearer=None, deadline_s=DEADLINE, era_hint="legacy")
    assert again.tools == found.tools
    assert again.requests == found.requests - 1


async def test_calls_a_server_everything_tool(
    everything_peer: EverythingPeer, client: McpClient
) -> None:
    url = everything_peer.url
    done = await client.call_tool(
        url, "echo", {"message": "hé there"}, pin=url, bearer=None, deadline_s=DEADLINE
    )
    assert done.era == "legacy"
    assert done.result["content"][0]["text"].endswith("hé there")

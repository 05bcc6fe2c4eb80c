"""Discovery and calls against the official Python SDK server (a subprocess), in every mode.

The SDK server is dual-era, so the default (modern) discovery exercises ``server/discover`` and
the 2026-07-28 envelope, and only forcing the legacy era exercises ``initialize``, sessions, SSE
answers, priming events and ``DELETE``.
"""

from __future__ import annotations

import json

import pytest

from hub.mcp import LEGACY_VERSIONS, MODERN_VERSION, CallResult, Era, McpClient, McpError
from tests.peers.fixtures import SdkPeer, SdkPeerStarter, many_tools

pytestmark = pytest.mark.slow

DEADLINE = 15.0


def served_tools(peer: SdkPeer) -> list[dict[str, object]]:
    tools: list[dict[str, object]] = json.loads(peer.tools_file.read_text())
    return tools


@pytest.mark.parametrize("mode", ["sse", "stateless", "json"])
async def test_discovers_the_sdk_peer_in_both_eras(
    sdk_peer: SdkPeerStarter, client: McpClient, mode: str
) -> None:
    peer = await sdk_peer(mode)
    eras: list[tuple[Era | None, Era, str]] = [
        (None, "modern", MODERN_VERSION),
        ("legacy", "legacy", LEGACY_VERSIONS[0]),
    ]
    for force, era, version in eras:
        found = await client.discover(
            peer.url, pin=peer.url, bearer=None, deadline_s=DEADLINE, force_era=force
        )
        assert found.era == era
        assert found.protocol_version == version
        assert found.server_info == {"name": "hub-test-sdk-peer", "version": "1.0.0"}
        assert found.capabilities["tools"] == {"listChanged": False}
        assert found.instructions == "A test peer serving tools from a file."
        assert found.tools == served_tools(peer)
        assert found.dropped_tools == []


async def test_legacy_discovery_with_sessions_deletes_its_session(
    sdk_peer: SdkPeerStarter, client: McpClient
) -> None:
    peer = await sdk_peer("sse")
    found = await client.discover(
        peer.url, pin=peer.url, bearer=None, deadline_s=DEADLINE, force_era="legacy"
    )
    # initialize, notifications/initialized, tools/list, DELETE
    assert found.requests == 4


@pytest.mark.parametrize("version", ["2025-06-18", "2025-03-26"])
async def test_an_older_handshake_version_is_offered_and_answered(
    sdk_peer: SdkPeerStarter, client: McpClient, version: str
) -> None:
    peer = await sdk_peer("json")
    found = await client.discover(
        peer.url, pin=peer.url, bearer=None, deadline_s=DEADLINE, protocol_version=version
    )
    assert (found.era, found.protocol_version) == ("legacy", version)
    assert found.tools == served_tools(peer)


@pytest.mark.parametrize("force", [None, "legacy"])
async def test_a_thousand_tools_fifty_per_page_arrive_all_in_order(
    sdk_peer: SdkPeerStarter, client: McpClient, force: Era | None
) -> None:
    tools = many_tools(1000)
    peer = await sdk_peer("stateless", tools, page_size=50)
    found = await client.discover(
        peer.url, pin=peer.url, bearer=None, deadline_s=DEADLINE, force_era=force
    )
    assert found.tools == tools
    assert found.requests == (1 if force is None else 2) + 20


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_calls_sdk_peer_tools_in_both_eras(
    sdk_peer: SdkPeerStarter, client: McpClient, era: Era
) -> None:
    peer = await sdk_peer("sse")

    async def call(name: str, arguments: dict[str, object]) -> CallResult:
        return await client.call_tool(
            peer.url, name, arguments, pin=peer.url, bearer=None, deadline_s=DEADLINE, era_hint=era
        )

    done = await call("add", {"a": 2, "b": 3})
    assert done.era == era
    assert done.result["structuredContent"] == {"a": 2, "b": 3}
    assert done.result.get("isError", False) is False

    failed = await call("fail", {})
    assert failed.is_error
    assert failed.result["content"][0]["text"].startswith("tool failed")

    with pytest.raises(McpError) as caught:
        await call("no_such_tool", {})
    assert (caught.value.reason, caught.value.code) == ("tool_error", -32602)
    assert "no_such_tool" not in str(caught.value)

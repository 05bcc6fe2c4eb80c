"""Era detection and memory against handmade legacy-only, modern-only and dual-era peers."""

from __future__ import annotations

import pytest

from hub.mcp import LEGACY_VERSIONS, MODERN_VERSION, McpClient, McpError
from tests.mcp.support import TOOLS, discover
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade_wire import META_PROTOCOL_VERSION, Reply


async def test_a_legacy_only_peer_is_discovered_and_the_remembered_era_skips_the_probe(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="legacy", tools=TOOLS)
    first = await discover(client, peer)
    assert (first.era, first.protocol_version) == ("legacy", LEGACY_VERSIONS[0])
    assert first.tools == TOOLS
    assert first.server_info == {"name": "handmade-peer", "version": "0.1.0"}
    assert first.instructions == "A scriptable test peer."
    # probe (refused), initialize, notifications/initialized, tools/list, DELETE
    assert first.requests == len(peer.requests) == 5

    seen = len(peer.requests)
    second = await discover(client, peer, era_hint=first.era)
    assert second.requests == len(peer.requests) - seen == 4
    assert peer.count("server/discover") == 1
    assert second.tools == first.tools


async def test_a_modern_only_peer_is_discovered_with_its_probe_as_first_step(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="modern", tools=TOOLS)
    first = await discover(client, peer)
    assert (first.era, first.protocol_version) == ("modern", MODERN_VERSION)
    assert first.tools == TOOLS
    assert first.server_info == {"name": "handmade-peer", "version": "0.1.0"}
    assert first.capabilities == {"tools": {}}
    # server/discover (the probe *is* the first step of a modern discovery), tools/list
    assert first.requests == len(peer.requests) == 2

    second = await discover(client, peer, era_hint=first.era)
    assert second.requests == 2
    assert peer.count("initialize") == 0


@pytest.mark.parametrize(("era", "wrong"), [("legacy", "modern"), ("modern", "legacy")])
async def test_a_wrong_hint_still_succeeds_by_probing_the_other_era(
    handmade_peer: HandmadePeerStarter, client: McpClient, era: str, wrong: str
) -> None:
    peer = await handmade_peer(era=era, tools=TOOLS)
    found = await discover(client, peer, era_hint=wrong)
    assert found.era == era
    assert found.tools == TOOLS
    assert peer.count("initialize" if wrong == "legacy" else "server/discover") == 1


async def test_a_dual_era_peer_is_discovered_in_the_modern_era_unless_legacy_is_forced(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="dual", tools=TOOLS)
    assert (await discover(client, peer)).era == "modern"
    forced = await discover(client, peer, force_era="legacy")
    assert (forced.era, forced.protocol_version) == ("legacy", LEGACY_VERSIONS[0])
    assert peer.count("server/discover") == 1


async def test_forcing_the_modern_era_on_a_legacy_peer_never_tries_the_handshake(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="legacy", tools=TOOLS)
    with pytest.raises(McpError) as caught:
        await discover(client, peer, force_era="modern")
    assert caught.value.reason == "handshake_failed"
    assert peer.count("initialize") == 0


async def test_minus_32022_is_retried_once_with_a_version_from_supported(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="modern", tools=TOOLS, reject_first_modern=True)
    found = await discover(client, peer)
    assert (found.era, found.protocol_version) == ("modern", MODERN_VERSION)
    first, retry = peer.rpc_requests("server/discover")
    assert first.rpc_id != retry.rpc_id
    assert retry.headers["mcp-protocol-version"] == MODERN_VERSION
    assert retry.params["_meta"][META_PROTOCOL_VERSION] == MODERN_VERSION
    assert peer.count("initialize") == 0


async def test_a_modern_server_sharing_no_version_fails_without_a_fallback(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="modern", modern_versions=["2027-01-01"])
    with pytest.raises(McpError) as caught:
        await discover(client, peer)
    assert caught.value.reason == "handshake_failed"
    assert peer.count("server/discover") == 1
    assert peer.count("initialize") == 0


async def test_a_modern_404_method_not_found_to_discover_is_modern_not_legacy(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="dual", tools=TOOLS)
    error = {"code": -32601, "message": "Method not found"}
    peer.override(
        "server/discover", lambda r: Reply(404, {"jsonrpc": "2.0", "id": r.rpc_id, "error": error})
    )
    with pytest.raises(McpError) as caught:
        await discover(client, peer)
    assert caught.value.reason == "handshake_failed"
    assert peer.count("initialize") == 0


@pytest.mark.parametrize(
    "answer",
    [
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"supportedVersions": ["2025-11-25"], "capabilities": {}},
        },
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}},
    ],
    ids=["not-a-discover-result", "no-modern-version", "200-method-not-found"],
)
async def test_discover_answers_that_are_no_modern_evidence_fall_back_to_the_handshake(
    handmade_peer: HandmadePeerStarter, client: McpClient, answer: dict[str, object]
) -> None:
    peer = await handmade_peer(era="legacy", tools=TOOLS)
    peer.override("server/discover", Reply(200, answer))
    found = await discover(client, peer)
    assert found.era == "legacy"
    assert found.tools == TOOLS


async def test_a_counter_offered_older_version_is_used_for_every_later_request(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="legacy", tools=TOOLS, legacy_versions=["2025-06-18"])
    found = await discover(client, peer, era_hint="legacy")
    assert found.protocol_version == "2025-06-18"
    initialize, *later = [r for r in peer.requests if r.http_method in ("POST", "DELETE")]
    assert initialize.params["protocolVersion"] == LEGACY_VERSIONS[0]
    assert "mcp-protocol-version" not in initialize.headers
    assert {r.headers["mcp-protocol-version"] for r in later} == {"2025-06-18"}


async def test_a_counter_offer_the_client_does_not_speak_fails_the_handshake(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="legacy", tools=TOOLS, legacy_versions=["2024-11-05"])
    with pytest.raises(McpError) as caught:
        await discover(client, peer)
    assert caught.value.reason == "handshake_failed"
    assert peer.count("tools/list") == 0
    assert peer.requests[-1].http_method == "DELETE"  # the session it opened is closed
    assert peer.sessions == {}


async def test_an_older_version_can_be_asked_for(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="dual", tools=TOOLS)
    found = await discover(client, peer, protocol_version="2025-03-26")
    assert (found.era, found.protocol_version) == ("legacy", "2025-03-26")
    assert peer.count("server/discover") == 0


async def test_bad_era_options_are_refused_before_any_request(client: McpClient) -> None:
    url = "http://127.0.0.1:9/mcp"
    with pytest.raises(ValueError, match="unsupported protocol version"):
        await client.discover(
            url, pin=url, bearer=None, deadline_s=1, protocol_version="2024-11-05"
        )
    with pytest.raises(ValueError, match="era"):
        await client.discover(
            url,
            pin=url,
            bearer=None,
            deadline_s=1,
            protocol_version=MODERN_VERSION,
            force_era="legacy",
        )
    with pytest.raises(ValueError, match="an era is"):
        await client.discover(url, pin=url, bearer=None, deadline_s=1, era_hint="stateless")  # type: ignore[arg-type]


async def test_an_unknown_result_type_from_discover_is_invalid_result_without_fallback(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="dual", tools=TOOLS)
    result = {"resultType": "partial", "supportedVersions": [MODERN_VERSION], "capabilities": {}}
    peer.override(
        "server/discover",
        lambda r: Reply(200, {"jsonrpc": "2.0", "id": r.rpc_id, "result": result}),
    )
    with pytest.raises(McpError) as caught:
        await discover(client, peer)
    assert caught.value.reason == "invalid_result"
    assert peer.count("initialize") == 0

"""Hostile and broken peers on an SSE stream or a session: server requests and notifications
before the answer, a lost session initialized again once, the session's ``DELETE`` tolerated."""

from __future__ import annotations

import asyncio
import time

from hub.egress import EgressConfig, Fetcher
from hub.mcp import McpClient
from tests.mcp.conftest import CLIENT_INFO
from tests.mcp.support import TOOLS, discover, failure_of, only
from tests.peers.fixtures import HandmadePeerStarter, many_tools
from tests.peers.handmade import HandmadePeer
from tests.peers.handmade_wire import (
    RecordedRequest,
    Reply,
    SseEvent,
    comment,
    notification,
    priming,
    progress,
    server_request,
)


async def _asking_peer(handmade_peer: HandmadePeerStarter, prelude: list[SseEvent]) -> HandmadePeer:
    """A legacy peer whose SSE answers start with ``prelude`` (server requests among them), and
    that waits for the client's answers to them."""
    return await handmade_peer(
        era="legacy",
        tools=TOOLS,
        response_style="sse",
        sse_prelude=prelude,
        wait_for_client_responses=True,
        client_response_timeout=3.0,
    )


# ------------------------------------------------------------------------------- SSE streams
async def test_priming_notifications_and_a_server_request_precede_the_answer(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    prelude = [
        priming(retry=500),
        comment(),
        progress("tok", 0.5, 1),
        notification("notifications/message", {"level": "info", "data": "hi"}),
        server_request("srv-1", "roots/list"),
        server_request("srv-2", "ping"),
    ]
    peer = await _asking_peer(handmade_peer, prelude)
    found = await discover(client, peer, era_hint="legacy")
    assert found.tools == TOOLS
    session = only(peer.rpc_requests("tools/list")).headers["mcp-session-id"]
    replies = peer.client_responses
    by_id = {r.rpc_id: r for r in replies}
    assert by_id["srv-1"].message["error"] == {"code": -32601, "message": "Method not found"}
    assert by_id["srv-2"].message["result"] == {}
    assert all(r.headers.get("mcp-session-id") == session for r in replies)
    assert {r.headers.get("mcp-protocol-version") for r in replies} == {None, "2025-11-25"}
    # initialize and tools/list each got their two server requests answered
    assert len(peer.client_responses) == 4


async def test_server_requests_are_answered_with_one_slot_per_origin(
    handmade_peer: HandmadePeerStarter,
) -> None:
    """The answer to a server request is POSTed while the response stream holds the origin's
    slot; with one slot per origin it must not wait for a second one until the deadline."""
    prelude = [server_request("srv-1", "ping")]
    peer = await _asking_peer(handmade_peer, prelude)
    config = EgressConfig(allow_loopback=True, max_per_origin=1)
    started = time.monotonic()
    async with Fetcher(config) as fetcher:
        found = await discover(
            McpClient(fetcher, client_info=CLIENT_INFO), peer, era_hint="legacy", deadline_s=2.0
        )
    assert time.monotonic() - started < 2.0
    assert found.tools == TOOLS
    assert len(peer.client_responses) == 2


async def test_a_modern_sse_answer_after_priming_and_notifications(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    prelude = [
        priming(),
        comment(),
        notification("notifications/message", {"level": "info", "data": "x"}),
    ]
    peer = await handmade_peer(era="modern", tools=TOOLS, response_style="sse", sse_prelude=prelude)
    found = await discover(client, peer)
    assert (found.era, found.tools) == ("modern", TOOLS)


# ------------------------------------------------------------------------------- sessions
async def test_a_lost_session_is_initialized_again_once_and_the_listing_restarts(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    tools = many_tools(120)
    peer = await handmade_peer(era="legacy", tools=tools, page_size=50)

    lost: list[RecordedRequest] = []

    def lose_session_on_page_two_once(request: RecordedRequest) -> None:
        if request.params.get("cursor") == "page-1" and not lost:
            lost.append(request)
            peer.logic.sessions.clear()

    peer.override("tools/list", lose_session_on_page_two_once)
    found = await discover(client, peer, era_hint="legacy")
    assert found.tools == tools
    assert peer.count("initialize") == 2
    assert [r.params.get("cursor") for r in peer.rpc_requests("tools/list")] == [
        None,
        "page-1",  # answered 404: the session is gone
        None,
        "page-1",
        "page-2",
    ]
    first, second = peer.rpc_requests("initialize")
    assert "mcp-session-id" not in first.headers
    assert "mcp-session-id" not in second.headers
    assert peer.sessions == {}


async def test_a_session_lost_again_after_initializing_again_fails_the_handshake(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="legacy", tools=TOOLS)

    def always_lose(request: RecordedRequest) -> None:
        peer.logic.sessions.clear()

    peer.override("tools/list", always_lose)
    error = await failure_of(client, peer, era_hint="legacy")
    assert error.reason == "handshake_failed"
    assert peer.count("initialize") == 2


async def test_the_session_is_deleted_at_the_end(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="legacy", tools=TOOLS)
    await discover(client, peer, era_hint="legacy")
    delete = peer.requests[-1]
    assert delete.http_method == "DELETE"
    listing = only(peer.rpc_requests("tools/list"))
    assert delete.headers["mcp-session-id"] == listing.headers["mcp-session-id"]
    assert delete.headers["mcp-protocol-version"] == "2025-11-25"
    assert peer.sessions == {}


async def test_a_405_to_delete_is_tolerated(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="legacy", tools=TOOLS, delete_status=405)
    found = await discover(client, peer, era_hint="legacy")
    assert found.tools == TOOLS
    assert peer.requests[-1].http_method == "DELETE"


async def test_a_delete_that_hangs_does_not_fail_a_finished_discovery(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    async def hang(request: RecordedRequest) -> Reply:
        await asyncio.sleep(30)
        return Reply(200)

    peer = await handmade_peer(era="legacy", tools=TOOLS)
    peer.override("DELETE", hang)
    started = time.monotonic()
    found = await discover(client, peer, era_hint="legacy", deadline_s=4.0)
    assert found.tools == TOOLS
    # within the discovery's deadline (+1.5 s, the house bound), not the DELETE's 30 s hang
    assert time.monotonic() - started < 4.0 + 1.5


async def test_no_session_means_no_delete(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="legacy", tools=TOOLS, legacy_sessions=False)
    found = await discover(client, peer, era_hint="legacy")
    assert found.requests == 3
    assert "DELETE" not in [r.http_method for r in peer.requests]

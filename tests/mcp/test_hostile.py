"""Hostile and broken peers: each failure has the right reason and only the hub's own message.

SSE streams and sessions: ``test_hostile_streams.py``.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any

import pytest

from hub.egress import EgressConfig, EgressTimeout, Fetcher, ResponseTooLarge
from hub.mcp import McpClient
from hub.mcp.errors import REASONS
from tests.mcp.conftest import CLIENT_INFO
from tests.mcp.support import TOOLS, discover, failure_of
from tests.peers.fixtures import HandmadePeerStarter, many_tools
from tests.peers.handmade_wire import (
    RecordedRequest,
    Reply,
    message_event,
)
from tests.support.leaks import exposed_text


# ------------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("status", [401, 403])
async def test_an_upstream_401_or_403_is_unauthorized_at_once(
    handmade_peer: HandmadePeerStarter, client: McpClient, status: int
) -> None:
    peer = await handmade_peer(era="dual", tools=TOOLS)
    peer.override("*", Reply(status, "go away", headers={"www-authenticate": "Bearer"}))
    error = await failure_of(client, peer)
    assert error.reason == "unauthorized"
    assert len(peer.requests) == 1


async def test_a_500_echoing_the_bearer_is_handshake_failed_and_the_bearer_leaks_nowhere(
    handmade_peer: HandmadePeerStarter, client: McpClient, caplog: pytest.LogCaptureFixture
) -> None:
    canary = f"canary-{uuid.uuid4().hex}"

    def echo(request: RecordedRequest) -> Reply:
        sent = request.headers.get("authorization", "")
        if request.rpc_method == "server/discover":
            return Reply(500, f"internal error, you sent {sent}", headers={"x-echo": sent})
        error = {"code": -32603, "message": f"bad token {sent}", "data": {"echo": sent}}
        return Reply(500, {"jsonrpc": "2.0", "id": request.rpc_id, "error": error})

    peer = await handmade_peer(era="dual", tools=TOOLS)
    peer.override("*", echo)
    caplog.set_level(logging.DEBUG)
    error = await failure_of(client, peer, bearer=canary)
    assert error.reason == "handshake_failed"
    assert all(r.headers["authorization"] == f"Bearer {canary}" for r in peer.requests)
    assert canary not in exposed_text(error)
    assert canary not in caplog.text
    assert "you sent" not in exposed_text(error)
    assert peer.count("initialize") == 1
    assert any(record.name.startswith("hub.mcp") for record in caplog.records)


@pytest.mark.parametrize("status", [200, 404])
async def test_an_html_page_is_not_mcp(
    handmade_peer: HandmadePeerStarter, client: McpClient, status: int
) -> None:
    peer = await handmade_peer(era="dual", tools=TOOLS)
    page = "<!doctype html><html><body>Welcome</body></html>"
    peer.override("*", Reply(status, page, headers={"content-type": "text/html; charset=utf-8"}))
    error = await failure_of(client, peer)
    assert error.reason == "not_mcp"
    assert peer.count("initialize") == 1


async def test_an_http_sse_only_server_of_2024_11_05_is_not_mcp_for_now(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="dual", tools=TOOLS)
    peer.override("POST", Reply(405, b"", headers={"allow": "GET"}))
    endpoint = b"event: endpoint\ndata: /messages?session=1\n\n"
    peer.override("GET", Reply(200, endpoint, headers={"content-type": "text/event-stream"}))
    error = await failure_of(client, peer)
    assert error.reason == "not_mcp"


# ------------------------------------------------------------------------------- broken JSON-RPC
@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, b"{not json", headers={"content-type": "application/json"}),
        Reply(200, {"hello": "world"}),
        Reply(200, {"jsonrpc": "2.0", "id": 99, "result": {}}),
        Reply(200, b": only a comment\n\n", headers={"content-type": "text/event-stream"}),
        Reply(200, b"data: {broken\n\n", headers={"content-type": "text/event-stream"}),
    ],
    ids=["not-json", "not-json-rpc", "wrong-id", "sse-without-answer", "sse-not-json"],
)
async def test_malformed_json_rpc_is_a_protocol_error(
    handmade_peer: HandmadePeerStarter, client: McpClient, reply: Reply
) -> None:
    peer = await handmade_peer(era="dual", tools=TOOLS)
    peer.override("*", reply)
    error = await failure_of(client, peer)
    assert error.reason == "protocol_error"


async def test_a_server_that_never_sends_the_right_id_is_stopped_by_the_deadline(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    wrong = message_event({"jsonrpc": "2.0", "id": 424242, "result": {}}).encode()
    peer = await handmade_peer(era="dual", tools=TOOLS)
    peer.override(
        "*",
        Reply(
            200,
            headers={"content-type": "text/event-stream"},
            chunks=[wrong] * 400,
            chunk_delay=0.05,
        ),
    )
    started = time.monotonic()
    with pytest.raises(EgressTimeout):
        await discover(client, peer, deadline_s=2.0)
    assert time.monotonic() - started < 3.5


@pytest.mark.parametrize(
    "result",
    [
        {"tools": [], "resultType": "partial"},
        {"tools": "none"},
        {"tools": [], "nextCursor": 3},
    ],
)
async def test_a_tools_page_of_the_wrong_shape_is_invalid_result(
    handmade_peer: HandmadePeerStarter, client: McpClient, result: dict[str, Any]
) -> None:
    peer = await handmade_peer(era="modern", tools=TOOLS)
    peer.override(
        "tools/list", lambda r: Reply(200, {"jsonrpc": "2.0", "id": r.rpc_id, "result": result})
    )
    error = await failure_of(client, peer)
    assert error.reason == "invalid_result"


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_an_error_answer_to_tools_list_is_a_protocol_error(
    handmade_peer: HandmadePeerStarter, client: McpClient, era: str
) -> None:
    peer = await handmade_peer(era=era, tools=TOOLS)
    peer.override("tools/list", Reply(500, b""))
    error = await failure_of(client, peer, era_hint=era)
    assert error.reason == "protocol_error"


async def test_a_malformed_session_id_is_a_protocol_error(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="legacy", tools=TOOLS)
    result = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "serverInfo": {"name": "x", "version": "1"},
    }
    peer.override(
        "initialize",
        lambda r: Reply(
            200,
            {"jsonrpc": "2.0", "id": r.rpc_id, "result": result},
            headers={"mcp-session-id": "has space"},
        ),
    )
    error = await failure_of(client, peer, force_era="legacy")
    assert error.reason == "protocol_error"


# ------------------------------------------------------------------------------- the tool list
@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_duplicate_tool_names_fail_the_discovery(
    handmade_peer: HandmadePeerStarter, client: McpClient, era: str
) -> None:
    tools = [*TOOLS, {"name": "echo", "inputSchema": {"type": "object"}}]
    peer = await handmade_peer(era=era, tools=tools, page_size=2)
    error = await failure_of(client, peer, era_hint=era)
    assert error.reason == "duplicate_tool"
    if era == "legacy":
        assert peer.requests[-1].http_method == "DELETE"
        assert peer.sessions == {}


async def test_tools_with_invalid_markings_are_dropped_with_their_reasons(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    def marked(kind: str, name: str) -> dict[str, Any]:
        return {"type": "object", "properties": {"v": {"type": kind, "x-mcp-header": name}}}

    bad = [
        {"name": "number_header", "inputSchema": marked("number", "Score")},
        {"name": "spaced_header", "inputSchema": marked("string", "My Region")},
        {"name": "no_schema"},
        {"name": "array_schema", "inputSchema": {"type": "array"}},
        {"description": "no name", "inputSchema": {"type": "object"}},
    ]
    peer = await handmade_peer(era="modern", tools=[TOOLS[0], *bad, *TOOLS[1:]])
    found = await discover(client, peer)
    assert found.tools == TOOLS
    assert found.dropped_tools == [
        {"name": "number_header", "reason": "invalid_x_mcp_header"},
        {"name": "spaced_header", "reason": "invalid_x_mcp_header"},
        {"name": "no_schema", "reason": "invalid_input_schema"},
        {"name": "array_schema", "reason": "invalid_input_schema"},
        {"name": None, "reason": "missing_name"},
    ]


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_pagination_with_an_empty_string_cursor_collects_every_page(
    handmade_peer: HandmadePeerStarter, client: McpClient, era: str
) -> None:
    tools = many_tools(120)
    peer = await handmade_peer(era=era, tools=tools, page_size=50, empty_cursor=True)
    found = await discover(client, peer, era_hint=era)
    assert found.tools == tools
    assert [r.params.get("cursor") for r in peer.rpc_requests("tools/list")] == [None, "", "page-2"]


def endless(pad: int, *, cursor: str | None = None) -> Any:
    """Empty pages forever: each with a fresh cursor, or always ``cursor``."""

    def reply(request: RecordedRequest) -> Reply:
        next_cursor = cursor if cursor is not None else f"page-{uuid.uuid4()}"
        result = {"tools": [], "nextCursor": next_cursor, "pad": "x" * pad}
        return Reply(200, {"jsonrpc": "2.0", "id": request.rpc_id, "result": result})

    return reply


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_pagination_that_repeats_a_cursor_is_a_protocol_error_at_once(
    handmade_peer: HandmadePeerStarter, client: McpClient, era: str
) -> None:
    peer = await handmade_peer(era=era, tools=TOOLS)
    peer.override("tools/list", endless(0, cursor="again"))
    error = await failure_of(client, peer, era_hint=era)
    assert error.reason == "protocol_error"
    assert peer.count("tools/list") == 2


async def test_endless_pagination_is_stopped_by_the_operation_byte_budget(
    handmade_peer: HandmadePeerStarter,
) -> None:
    peer = await handmade_peer(era="modern", tools=TOOLS)
    peer.override("tools/list", endless(8 * 1024))
    config = EgressConfig(allow_loopback=True, max_operation_bytes=64 * 1024)
    async with Fetcher(config) as fetcher:
        with pytest.raises(ResponseTooLarge) as caught:
            await discover(McpClient(fetcher, client_info=CLIENT_INFO), peer)
    assert caught.value.scope == "operation"
    assert peer.count("tools/list") < 10


async def test_endless_pagination_is_stopped_by_the_deadline(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="modern", tools=TOOLS)
    peer.override("tools/list", endless(0))
    started = time.monotonic()
    with pytest.raises(EgressTimeout):
        await discover(client, peer, deadline_s=1.0)
    assert time.monotonic() - started < 2.5


def test_reasons_are_the_documented_set() -> None:
    assert json.loads(json.dumps(sorted(REASONS))) == [
        "duplicate_tool",
        "handshake_failed",
        "input_required",
        "invalid_result",
        "not_mcp",
        "protocol_error",
        "tool_error",
        "unauthorized",
    ]

"""The handmade peer behaves as its module docstring documents (raw httpx2 requests)."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator

import httpx2
import pytest

from tests.peers.fixtures import HandmadePeerStarter, default_tools, many_tools
from tests.peers.handmade_wire import (
    RecordedRequest,
    Reply,
    comment,
    notification,
    priming,
    server_request,
)
from tests.peers.raw import (
    ACCEPT,
    LEGACY,
    MODERN,
    answer,
    initialize_params,
    modern_meta,
    open_legacy_session,
    post_legacy,
    post_modern,
    sse_events,
)


@pytest.fixture
async def http() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(timeout=10, trust_env=False) as client:
        yield client


# ---------------------------------------------------------------------------- modern era
async def test_modern_discover_and_list_carry_the_2026_envelope(
    handmade_peer: HandmadePeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await handmade_peer(era="modern", tools=default_tools(), ttl_ms=5000)
    found = answer(await post_modern(http, peer.url, "server/discover"), 1)["result"]
    assert found["supportedVersions"] == [MODERN]
    assert found["resultType"] == "complete"
    assert (found["ttlMs"], found["cacheScope"]) == (5000, "private")
    assert found["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "handmade-peer"
    listed = answer(await post_modern(http, peer.url, "tools/list"), 1)["result"]
    assert listed["tools"] == default_tools()
    assert "nextCursor" not in listed
    assert {"resultType", "ttlMs", "cacheScope", "_meta"} <= listed.keys()


@pytest.mark.parametrize(
    ("case", "status", "code"),
    [
        ("no_meta", 400, -32602),
        ("header_mismatch", 400, -32020),
        ("no_method_header", 400, -32020),
        ("unsupported", 400, -32022),
        ("unknown_method", 404, -32601),
        ("initialize", 400, -32022),
        ("no_mcp_name", 400, -32020),
    ],
)
async def test_modern_errors_map_to_status_and_code(
    handmade_peer: HandmadePeerStarter, http: httpx2.AsyncClient, case: str, status: int, code: int
) -> None:
    peer = await handmade_peer(era="modern", tools=default_tools())
    if case == "no_meta":
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        headers = {"accept": ACCEPT, "mcp-protocol-version": MODERN, "mcp-method": "tools/list"}
        response = await http.post(peer.url, json=body, headers=headers)
    elif case == "header_mismatch":
        extra = {"mcp-protocol-version": "2025-11-25"}
        response = await post_modern(http, peer.url, "tools/list", headers=extra)
    elif case == "no_method_header":
        response = await post_modern(http, peer.url, "tools/list", headers={"mcp-method": ""})
    elif case == "unsupported":
        response = await post_modern(http, peer.url, "server/discover", version="2030-01-01")
    elif case == "unknown_method":
        response = await post_modern(http, peer.url, "prompts/list")
    elif case == "initialize":
        response = await post_legacy(http, peer.url, "initialize", initialize_params())
    else:
        params = {"name": "echo", "arguments": {"text": "x"}}
        response = await post_modern(http, peer.url, "tools/call", params, headers={"mcp-name": ""})
    assert response.status_code == status
    error = answer(response, 1)["error"]
    assert error["code"] == code
    if code == -32022:
        assert error["data"]["supported"] == [MODERN]


async def test_modern_peer_refuses_get_and_delete(
    handmade_peer: HandmadePeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await handmade_peer(era="modern")
    assert (await http.get(peer.url, headers={"accept": "text/event-stream"})).status_code == 405
    assert (await http.delete(peer.url)).status_code == 405


async def test_reject_first_modern_then_accept(
    handmade_peer: HandmadePeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await handmade_peer(era="modern", reject_first_modern=True)
    first = await post_modern(http, peer.url, "server/discover")
    assert first.status_code == 400
    error = answer(first, 1)["error"]
    assert error["code"] == -32022
    assert MODERN in error["data"]["supported"]
    second = await post_modern(http, peer.url, "server/discover", request_id=2)
    assert answer(second, 2)["result"]["supportedVersions"] == [MODERN]


async def test_mcp_name_may_use_the_base64_sentinel(
    handmade_peer: HandmadePeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await handmade_peer(era="modern", tools=many_tools(1, prefix="ünï"))
    name = peer.knobs.tools[0]["name"]
    encoded = "=?base64?" + base64.b64encode(name.encode()).decode() + "?="
    response = await post_modern(
        http, peer.url, "tools/call", {"name": name, "arguments": {}}, headers={"mcp-name": encoded}
    )
    assert answer(response, 1)["result"]["structuredContent"] == {}
    assert peer.rpc_requests("tools/call")[0].headers["mcp-name"] == encoded


# ---------------------------------------------------------------------------- legacy era
async def test_legacy_handshake_session_and_delete(
    handmade_peer: HandmadePeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await handmade_peer(era="legacy", tools=default_tools())
    session = await open_legacy_session(http, peer.url, "2025-06-18")
    assert session.version == "2025-06-18"
    assert session.session_id in peer.sessions
    assert peer.sessions[session.session_id].initialized
    listed = await post_legacy(
        http, peer.url, "tools/list", session_id=session.session_id, version="2025-06-18"
    )
    result = answer(listed, 1)["result"]
    assert result["tools"] == default_tools()
    assert "resultType" not in result
    headers = {"mcp-session-id": session.session_id or "", "mcp-protocol-version": "2025-06-18"}
    assert (await http.delete(peer.url, headers=headers)).status_code == 200
    gone = await post_legacy(
        http, peer.url, "tools/list", session_id=session.session_id, version="2025-06-18"
    )
    assert gone.status_code == 404


async def test_legacy_counter_offers_and_refuses_bad_headers(
    handmade_peer: HandmadePeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await handmade_peer(era="legacy", delete_status=405)
    init = await post_legacy(http, peer.url, "initialize", initialize_params(MODERN))
    assert answer(init, 1)["result"]["protocolVersion"] == LEGACY
    sid = init.headers["mcp-session-id"]
    no_session = await post_legacy(http, peer.url, "tools/list")
    assert (no_session.status_code, no_session.content) == (400, b"")
    unknown = await post_legacy(http, peer.url, "tools/list", session_id="nope")
    assert unknown.status_code == 404
    no_version = await post_legacy(http, peer.url, "tools/list", session_id=sid, version=None)
    assert no_version.status_code == 400
    wrong_version = await post_legacy(
        http, peer.url, "tools/list", session_id=sid, version="2025-03-26"
    )
    assert wrong_version.status_code == 400
    headers = {"mcp-session-id": sid, "mcp-protocol-version": LEGACY}
    assert (await http.delete(peer.url, headers=headers)).status_code == 405


async def test_legacy_answers_modern_requests_with_an_empty_400(
    handmade_peer: HandmadePeerStarter, http: httpx2.AsyncClient
) -> None:
    for sessions in (True, False):
        peer = await handmade_peer(era="legacy", legacy_sessions=sessions)
        response = await post_modern(http, peer.url, "server/discover")
        assert (response.status_code, response.content) == (400, b"")


async def test_dual_era_speaks_both(
    handmade_peer: HandmadePeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await handmade_peer(era="dual", tools=default_tools())
    modern = answer(await post_modern(http, peer.url, "tools/list"), 1)["result"]
    session = await open_legacy_session(http, peer.url)
    legacy_response = await post_legacy(http, peer.url, "tools/list", session_id=session.session_id)
    legacy = answer(legacy_response, 1)["result"]
    assert modern["tools"] == legacy["tools"] == default_tools()
    assert modern["resultType"] == "complete"
    assert "resultType" not in legacy


# ---------------------------------------------------------------------------- cursors
@pytest.mark.parametrize("empty_cursor", [False, True])
async def test_pages_follow_cursors_until_absent(
    handmade_peer: HandmadePeerStarter, http: httpx2.AsyncClient, empty_cursor: bool
) -> None:
    tools = many_tools(7)
    peer = await handmade_peer(era="modern", tools=tools, page_size=3, empty_cursor=empty_cursor)
    cursors: list[str] = []
    seen: list[dict[str, object]] = []
    params: dict[str, str] = {}
    for i in range(10):
        result = answer(await post_modern(http, peer.url, "tools/list", params, request_id=i), i)
        seen += result["result"]["tools"]
        if "nextCursor" not in result["result"]:
            break
        cursors.append(result["result"]["nextCursor"])
        params = {"cursor": cursors[-1]}
    assert seen == tools
    assert cursors == (["", "page-2"] if empty_cursor else ["page-1", "page-2"])
    bad = await post_modern(http, peer.url, "tools/list", {"cursor": "page-9"})
    assert (bad.status_code, answer(bad, 1)["error"]["code"]) == (400, -32602)


# ---------------------------------------------------------------------------- SSE
async def test_sse_prelude_precedes_the_answer(
    handmade_peer: HandmadePeerStarter, http: httpx2.AsyncClient
) -> None:
    prelude = [
        priming("p0", retry=500),
        comment("keep-alive"),
        notification("notifications/message", {"level": "info", "data": "hi"}),
        server_request("srv-1", "roots/list"),
    ]
    peer = await handmade_peer(
        era="legacy", tools=default_tools(), response_style="sse", sse_prelude=prelude
    )
    session = await open_legacy_session(http, peer.url)
    response = await post_legacy(http, peer.url, "tools/list", session_id=session.session_id)
    assert response.headers["content-type"].startswith("text/event-stream")
    events = sse_events(response.text)
    assert [(e.id, e.data, e.retry) for e in events[:1]] == [("p0", "", "500")]
    assert events[1].comments == ("keep-alive",)
    assert json.loads(events[2].data)["method"] == "notifications/message"
    assert json.loads(events[3].data) == {"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"}
    assert json.loads(events[4].data)["result"]["tools"] == default_tools()
    assert len(events) == 5


async def test_answer_waits_for_the_clients_reply_to_a_server_request(
    handmade_peer: HandmadePeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await handmade_peer(
        era="legacy",
        response_style="sse",
        sse_prelude=[server_request("srv-7", "sampling/createMessage", {"messages": []})],
        sse_prelude_methods={"tools/list"},
        wait_for_client_responses=True,
    )
    session = await open_legacy_session(http, peer.url)
    sid = session.session_id or ""
    headers = {"accept": ACCEPT, "mcp-session-id": sid, "mcp-protocol-version": LEGACY}
    body = {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}
    received: list[dict[str, object]] = []
    async with http.stream("POST", peer.url, json=body, headers=headers) as stream:
        async for line in stream.aiter_lines():
            if not line.startswith("data:"):
                continue
            msg = json.loads(line[5:])
            received.append(msg)
            if msg.get("method") == "sampling/createMessage":
                reply = {
                    "jsonrpc": "2.0",
                    "id": msg["id"],
                    "error": {"code": -32601, "message": "no"},
                }
                posted = await http.post(peer.url, json=reply, headers=headers)
                assert posted.status_code == 202
    assert received[-1]["id"] == 5
    assert "result" in received[-1]
    assert [r.rpc_id for r in peer.client_responses] == ["srv-7"]
    assert peer.client_responses[0].message["error"]["code"] == -32601


async def test_unanswered_server_request_turns_into_an_error(
    handmade_peer: HandmadePeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await handmade_peer(
        era="legacy",
        response_style="sse",
        sse_prelude=[server_request()],
        sse_prelude_methods={"tools/list"},
        wait_for_client_responses=True,
        client_response_timeout=0.2,
    )
    session = await open_legacy_session(http, peer.url)
    response = await post_legacy(http, peer.url, "tools/list", session_id=session.session_id)
    assert answer(response, 1)["error"]["code"] == -32603


# ---------------------------------------------------------------------------- overrides & log
async def test_overrides_answer_with_anything(
    handmade_peer: HandmadePeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await handmade_peer(era="modern", tools=default_tools())
    peer.override("tools/list", Reply(200, "<html>nope</html>", {"content-type": "text/html"}))

    def echo_auth(req: RecordedRequest) -> Reply:
        return Reply(401, {"detail": f"bad token {req.headers.get('authorization')}"})

    peer.override("server/discover", echo_auth, times=1)
    peer.override("tools/call", lambda req: None)  # falls through to the normal answer

    html = await post_modern(http, peer.url, "tools/list")
    assert (html.status_code, html.text) == (200, "<html>nope</html>")
    assert html.headers["content-type"] == "text/html"
    denied = await post_modern(
        http, peer.url, "server/discover", headers={"authorization": "Bearer canary-123"}
    )
    assert denied.status_code == 401
    assert "canary-123" in denied.text
    again = await post_modern(http, peer.url, "server/discover")  # times=1 used up
    assert again.status_code == 200
    called = await post_modern(http, peer.url, "tools/call", {"name": "echo", "arguments": {}})
    assert answer(called, 1)["result"]["structuredContent"] == {}

    peer.clear_overrides()
    peer.override("*", Reply(500, b"{not json"))
    broken = await post_modern(http, peer.url, "tools/list")
    assert (broken.status_code, broken.content) == (500, b"{not json")


async def test_tools_are_served_as_given_even_duplicates(
    handmade_peer: HandmadePeerStarter, http: httpx2.AsyncClient
) -> None:
    echo = default_tools()[0]
    nameless = {"description": "no name", "inputSchema": {"type": "object"}}
    peer = await handmade_peer(era="dual", tools=[echo, echo, nameless])
    listed = answer(await post_modern(http, peer.url, "tools/list"), 1)["result"]["tools"]
    assert listed == [echo, echo, nameless]


async def test_slow_drip_and_wrong_id(
    handmade_peer: HandmadePeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await handmade_peer(era="modern")
    wrong = {"jsonrpc": "2.0", "id": 999, "result": {"resultType": "complete"}}
    peer.override("server/discover", Reply(200, wrong), times=1)
    response = await post_modern(http, peer.url, "server/discover")
    assert response.json()["id"] == 999

    chunks = [b'{"jsonrpc": "2.0", ', b'"id": 1, ', b'"result": {}}']
    peer.override("server/discover", Reply(200, chunks=chunks, chunk_delay=0.15))
    started = time.monotonic()
    dripped = await post_modern(http, peer.url, "server/discover")
    assert time.monotonic() - started >= 0.3
    assert dripped.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}


async def test_request_log_records_headers_and_bodies(
    handmade_peer: HandmadePeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await handmade_peer(era="modern", tools=default_tools())
    params = {"name": "search_region", "arguments": {"region": "eu-west", "query": "q"}}
    await post_modern(http, peer.url, "tools/call", params, headers={"mcp-param-region": "eu-west"})
    await http.post(peer.url, content=b"not json", headers={"content-type": "application/json"})
    assert len(peer.requests) == 2
    call = peer.rpc_requests("tools/call")[0]
    assert call.http_method == "POST"
    assert "authorization" not in call.headers
    assert call.headers["mcp-name"] == "search_region"
    assert call.headers["mcp-param-region"] == "eu-west"
    assert call.params["_meta"] == modern_meta()
    assert peer.requests[1].json is None
    assert peer.requests[1].body == b"not json"
    assert peer.count("tools/call") == 1


async def test_knobs_change_between_requests_and_ipv6_works(
    handmade_peer: HandmadePeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await handmade_peer(host="::1", era="modern")
    assert peer.url.startswith("http://[::1]:")
    assert (await post_modern(http, peer.url, "server/discover")).status_code == 200
    peer.knobs.era = "legacy"
    assert (await post_modern(http, peer.url, "server/discover")).status_code == 400
    await asyncio.sleep(0)

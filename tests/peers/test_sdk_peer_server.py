"""The official SDK server peer answers both eras in every mode, with raw requests."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx2
import pytest

from tests.peers.fixtures import SdkPeerStarter, default_tools, many_tools
from tests.peers.raw import (
    LEGACY,
    MODERN,
    answer,
    initialize_params,
    open_legacy_session,
    post_legacy,
    post_modern,
    sse_events,
)

MODES = ["sse", "stateless", "json", "stateless-json"]


@pytest.fixture
async def http() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(timeout=10, trust_env=False) as client:
        yield client


@pytest.mark.parametrize("mode", MODES)
async def test_each_mode_answers_initialize_and_discover(
    sdk_peer: SdkPeerStarter, http: httpx2.AsyncClient, mode: str
) -> None:
    peer = await sdk_peer(mode)

    init = await post_legacy(http, peer.url, "initialize", initialize_params(LEGACY))
    assert init.status_code == 200
    result = answer(init, 1)["result"]
    assert result["protocolVersion"] == LEGACY
    assert result["serverInfo"]["name"] == "hub-test-sdk-peer"
    expected_type = "application/json" if mode.endswith("json") else "text/event-stream"
    assert init.headers["content-type"].startswith(expected_type)
    assert ("mcp-session-id" in init.headers) == (not mode.startswith("stateless"))

    discover = await post_modern(http, peer.url, "server/discover")
    assert discover.status_code == 200, discover.text
    found = answer(discover, 1)["result"]
    assert found["supportedVersions"] == [MODERN]
    assert found["resultType"] == "complete"
    assert found["capabilities"]["tools"] == {"listChanged": False}
    assert found["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "hub-test-sdk-peer"
    # The SDK answers the 2026 wire with JSON whatever the mode.
    assert discover.headers["content-type"].startswith("application/json")


async def test_unsupported_modern_version_is_32022(
    sdk_peer: SdkPeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await sdk_peer("stateless")
    response = await post_modern(http, peer.url, "server/discover", version="2030-01-01")
    assert response.status_code == 400
    error = answer(response, 1)["error"]
    assert error["code"] == -32022
    assert error["data"] == {"supported": [MODERN], "requested": "2030-01-01"}


async def test_modern_initialize_is_counter_offered_the_latest_handshake_version(
    sdk_peer: SdkPeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await sdk_peer("json")
    init = await post_legacy(http, peer.url, "initialize", initialize_params(MODERN))
    assert answer(init, 1)["result"]["protocolVersion"] == LEGACY


async def test_editing_the_tools_file_changes_the_next_listing(
    sdk_peer: SdkPeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await sdk_peer("stateless")
    first = answer(await post_modern(http, peer.url, "tools/list"), 1)["result"]["tools"]
    tools = default_tools()
    tools[1]["inputSchema"]["properties"]["c"] = {"type": "integer"}
    peer.set_tools(tools)
    second = answer(await post_modern(http, peer.url, "tools/list"), 1)["result"]["tools"]
    assert first == default_tools()
    assert second == tools
    assert [t for t in second if t not in first] == [tools[1]]


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_1000_tools_come_in_20_pages_of_50(
    sdk_peer: SdkPeerStarter, http: httpx2.AsyncClient, era: str
) -> None:
    tools = many_tools(1000)
    peer = await sdk_peer("sse" if era == "legacy" else "stateless", tools, page_size=50)
    session = await open_legacy_session(http, peer.url) if era == "legacy" else None
    seen: list[dict[str, object]] = []
    pages = 0
    cursor: str | None = None
    while True:
        params = {} if cursor is None else {"cursor": cursor}
        if session is None:
            response = await post_modern(http, peer.url, "tools/list", params, request_id=pages)
        else:
            response = await post_legacy(
                http,
                peer.url,
                "tools/list",
                params,
                request_id=pages,
                session_id=session.session_id,
            )
        result = answer(response, pages)["result"]
        pages += 1
        seen += result["tools"]
        cursor = result.get("nextCursor")
        if cursor is None:
            break
    assert pages == 20
    assert seen == tools


async def test_an_invalid_cursor_is_32602(
    sdk_peer: SdkPeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await sdk_peer("stateless", many_tools(10), page_size=4)
    response = await post_modern(http, peer.url, "tools/list", {"cursor": "bogus"})
    assert response.status_code == 400
    assert answer(response, 1)["error"]["code"] == -32602


ODD_TOOL = {
    "name": "odd",
    "inputSchema": {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "R"}}},
    "x-vendor": {"kept": True},
    "_meta": {"example.com/k": 1},
    "annotations": {"destructiveHint": False, "vendorHint": "x"},
    "outputSchema": {"type": "object"},
    "execution": {"taskSupport": "optional"},
}


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_raw_tools_are_served_verbatim(
    sdk_peer: SdkPeerStarter, http: httpx2.AsyncClient, era: str
) -> None:
    peer = await sdk_peer("json", [ODD_TOOL])
    if era == "modern":
        response = await post_modern(http, peer.url, "tools/list")
    else:
        session = await open_legacy_session(http, peer.url)
        response = await post_legacy(http, peer.url, "tools/list", session_id=session.session_id)
    assert answer(response, 1)["result"]["tools"] == [ODD_TOOL]


async def test_sieve_mode_shows_what_the_sdk_drops(
    sdk_peer: SdkPeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await sdk_peer("json", [ODD_TOOL], sieve=True)
    modern = answer(await post_modern(http, peer.url, "tools/list"), 1)["result"]["tools"][0]
    session = await open_legacy_session(http, peer.url)
    legacy_response = await post_legacy(
        http, peer.url, "tools/list", request_id=2, session_id=session.session_id
    )
    legacy = answer(legacy_response, 2)["result"]["tools"][0]
    # Unknown top-level fields and unknown annotation keys are dropped on both wires, and
    # `execution` (2025-11-25 only) on the 2026 wire; inputSchema internals and _meta survive.
    expected_modern = {
        "name": "odd",
        "inputSchema": ODD_TOOL["inputSchema"],
        "_meta": ODD_TOOL["_meta"],
        "annotations": {"destructiveHint": False},
        "outputSchema": {"type": "object"},
    }
    assert modern == expected_modern
    assert legacy == {**expected_modern, "execution": {"taskSupport": "optional"}}


async def test_tool_calls_echo_fail_and_reject_unknown_tools(
    sdk_peer: SdkPeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await sdk_peer("stateless")
    echo = await post_modern(http, peer.url, "tools/call", {"name": "add", "arguments": {"a": 1}})
    result = answer(echo, 1)["result"]
    assert result["structuredContent"] == {"a": 1}
    assert result["content"] == [{"type": "text", "text": '{"a": 1}'}]
    assert result["isError"] is False

    fail = await post_modern(http, peer.url, "tools/call", {"name": "fail", "arguments": {}})
    assert answer(fail, 1)["result"]["isError"] is True

    unknown = await post_modern(http, peer.url, "tools/call", {"name": "nope", "arguments": {}})
    assert unknown.status_code == 400
    assert answer(unknown, 1)["error"]["code"] == -32602


async def test_the_sdk_checks_mcp_param_headers_on_the_modern_wire(
    sdk_peer: SdkPeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await sdk_peer("stateless")
    args = {"name": "search_region", "arguments": {"region": "eu", "query": "q"}}
    missing = await post_modern(http, peer.url, "tools/call", args)
    assert missing.status_code == 400
    assert answer(missing, 1)["error"]["code"] == -32020
    ok = await post_modern(http, peer.url, "tools/call", args, headers={"mcp-param-region": "eu"})
    assert answer(ok, 1)["result"]["structuredContent"] == args["arguments"]


async def test_sse_mode_primes_legacy_streams(
    sdk_peer: SdkPeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await sdk_peer("sse", retry_ms=250)
    session = await open_legacy_session(http, peer.url)
    response = await post_legacy(http, peer.url, "tools/list", session_id=session.session_id)
    events = sse_events(response.text)
    assert (events[0].data, events[0].retry) == ("", "250")
    assert events[0].id is not None
    assert json.loads(events[-1].data)["result"]["tools"] == default_tools()
    assert all(e.id is not None for e in events)


async def test_a_legacy_session_ends_with_delete(
    sdk_peer: SdkPeerStarter, http: httpx2.AsyncClient
) -> None:
    peer = await sdk_peer("sse")
    session = await open_legacy_session(http, peer.url)
    assert session.session_id
    listed = await post_legacy(http, peer.url, "tools/list", session_id=session.session_id)
    assert len(answer(listed, 1)["result"]["tools"]) == len(default_tools())
    headers = {"mcp-session-id": session.session_id, "mcp-protocol-version": session.version}
    deleted = await http.delete(peer.url, headers=headers)
    assert deleted.status_code == 200
    gone = await post_legacy(http, peer.url, "tools/list", session_id=session.session_id)
    assert gone.status_code == 404

"""``tools/call`` in both eras: ``Mcp-Name`` / ``Mcp-Param-*`` headers, results kept verbatim."""

from __future__ import annotations

from typing import Any

import pytest

from hub.mcp import MODERN_VERSION, Era, McpClient, McpError, decode_header_value
from tests.mcp.support import TOOLS, call, tool
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade_wire import (
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
    RecordedRequest,
    Reply,
)

ERAS: list[Era] = ["modern", "legacy"]


def only_call(requests: list[RecordedRequest]) -> RecordedRequest:
    (request,) = requests
    return request


@pytest.mark.parametrize("era", ERAS)
async def test_call_headers_mirror_the_marked_arguments(
    handmade_peer: HandmadePeerStarter, client: McpClient, era: Era
) -> None:
    peer = await handmade_peer(era=era, tools=TOOLS)
    arguments = {"region": "Zürich ", "limit": 20, "exact": False, "query": "lakes"}
    done = await call(
        client, peer, "search_region", arguments, tool=tool("search_region"), era_hint=era
    )
    assert done.era == era
    assert done.result["structuredContent"] == arguments
    sent = only_call(peer.rpc_requests("tools/call"))
    assert sent.params["arguments"] == arguments
    assert sent.headers["mcp-name"] == "search_region"
    assert sent.headers["mcp-param-region"].startswith("=?base64?")
    assert decode_header_value(sent.headers["mcp-param-region"]) == "Zürich "
    assert sent.headers["mcp-param-limit"] == "20"
    assert sent.headers["mcp-param-exact"] == "false"
    assert "mcp-param-query" not in sent.headers
    if era == "modern":
        assert sent.headers["mcp-method"] == "tools/call"
        assert sent.headers["mcp-protocol-version"] == MODERN_VERSION
        assert sent.params["_meta"][META_PROTOCOL_VERSION] == MODERN_VERSION
        assert sent.params["_meta"][META_CLIENT_INFO] == {
            "name": "mcp-hub-tests",
            "version": "0.0.1",
        }
    else:
        assert sent.headers["mcp-session-id"]
        assert "_meta" not in sent.params


async def test_null_and_absent_marked_arguments_send_no_header(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="modern", tools=TOOLS)
    await call(client, peer, "search_region", {"region": None}, tool=tool("search_region"))
    sent = only_call(peer.rpc_requests("tools/call"))
    assert not [h for h in sent.headers if h.startswith("mcp-param-")]


@pytest.mark.parametrize("era", ERAS)
async def test_a_name_that_is_not_header_safe_goes_base64_in_mcp_name(
    handmade_peer: HandmadePeerStarter, client: McpClient, era: Era
) -> None:
    name = "météo lookup\t2"
    peer = await handmade_peer(era=era, tools=[{"name": name, "inputSchema": {"type": "object"}}])
    done = await call(client, peer, name, {}, era_hint=era)
    assert done.result["content"][0]["text"] == "{}"
    sent = only_call(peer.rpc_requests("tools/call"))
    assert sent.headers["mcp-name"].startswith("=?base64?")
    assert decode_header_value(sent.headers["mcp-name"]) == name


@pytest.mark.parametrize("era", ERAS)
async def test_an_error_result_is_returned_verbatim(
    handmade_peer: HandmadePeerStarter, client: McpClient, era: Era
) -> None:
    peer = await handmade_peer(era=era, tools=TOOLS)
    done = await call(client, peer, "fail", {"x": 1}, era_hint=era)
    assert done.is_error
    assert done.result["isError"] is True
    assert done.result["content"] == [{"type": "text", "text": 'tool failed: {"x": 1}'}]


@pytest.mark.parametrize("era", ERAS)
async def test_a_json_rpc_error_answer_is_tool_error_with_its_code_only(
    handmade_peer: HandmadePeerStarter, client: McpClient, era: Era
) -> None:
    peer = await handmade_peer(era=era, tools=TOOLS)
    with pytest.raises(McpError) as caught:
        await call(client, peer, "unknown_tool", {}, era_hint=era)
    assert caught.value.reason == "tool_error"
    assert caught.value.code == -32602
    assert "Unknown" not in str(caught.value)
    assert "unknown_tool" not in repr(caught.value)


async def test_without_a_hint_the_call_is_made_only_after_the_probe(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="modern", tools=TOOLS)
    unhinted = await call(client, peer, "echo", {"text": "a"})
    assert [r.rpc_method for r in peer.requests] == ["server/discover", "tools/call"]
    hinted = await call(client, peer, "echo", {"text": "a"}, era_hint="modern")
    assert (unhinted.requests, hinted.requests) == (2, 1)


async def test_a_modern_hint_on_a_legacy_server_falls_back_to_the_handshake(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="legacy", tools=TOOLS)
    done = await call(client, peer, "echo", {"text": "a"}, era_hint="modern")
    assert done.era == "legacy"
    assert [r.rpc_method or r.http_method for r in peer.requests] == [
        "tools/call",  # refused: no session, nothing ran
        "initialize",
        "notifications/initialized",
        "tools/call",
        "DELETE",
    ]


@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, "done"),
        Reply(202, b""),
        Reply(200, "<html></html>", {"content-type": "text/html"}),
    ],
    ids=["text", "empty-202", "html"],
)
async def test_a_2xx_answer_to_a_hinted_call_is_never_retried_in_the_other_era(
    handmade_peer: HandmadePeerStarter, client: McpClient, reply: Reply
) -> None:
    """A 2xx means the server may have run the tool: no fallback that would run it again."""
    peer = await handmade_peer(era="dual", tools=TOOLS)
    peer.override("tools/call", reply, times=1)
    with pytest.raises(McpError) as caught:
        await call(client, peer, "echo", {"text": "a"}, era_hint="modern")
    assert caught.value.reason in ("not_mcp", "protocol_error")
    assert [r.rpc_method or r.http_method for r in peer.requests] == ["tools/call"]


async def test_a_call_rejected_with_minus_32022_is_retried_once(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="modern", tools=TOOLS, reject_first_modern=True)
    done = await call(client, peer, "echo", {"text": "a"}, era_hint="modern")
    assert done.protocol_version == MODERN_VERSION
    assert peer.count("tools/call") == 2


def result_reply(result: dict[str, Any]) -> Any:
    return lambda r: Reply(200, {"jsonrpc": "2.0", "id": r.rpc_id, "result": result})


@pytest.mark.parametrize(
    "result",
    [
        {"resultType": "partial", "content": []},
        {"content": "not a list"},
        {"isError": True},
    ],
    ids=["unknown-result-type", "bad-content", "no-content"],
)
async def test_call_results_of_the_wrong_shape_are_invalid_result(
    handmade_peer: HandmadePeerStarter, client: McpClient, result: dict[str, Any]
) -> None:
    peer = await handmade_peer(era="modern", tools=TOOLS)
    peer.override("tools/call", result_reply(result))
    with pytest.raises(McpError) as caught:
        await call(client, peer, "echo", {}, era_hint="modern")
    assert caught.value.reason == "invalid_result"


async def test_an_input_required_call_result_has_its_own_reason(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    """MRTR ``input_required`` (SEP-2322) is not a malformed answer: the gateway tells the agent
    the hub cannot provide the input (``input_required_unsupported``)."""
    peer = await handmade_peer(era="modern", tools=TOOLS)
    result = {"resultType": "input_required", "inputRequests": {"k": {"method": "roots/list"}}}
    peer.override("tools/call", result_reply(result))
    with pytest.raises(McpError) as caught:
        await call(client, peer, "echo", {}, era_hint="modern")
    assert caught.value.reason == "input_required"


async def test_a_tool_error_keeps_the_upstream_message_out_of_its_text(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="modern", tools=TOOLS)
    error = {"code": -32602, "message": "no such tool: x" * 200}
    peer.override(
        "tools/call", lambda r: Reply(200, {"jsonrpc": "2.0", "id": r.rpc_id, "error": error})
    )
    with pytest.raises(McpError) as caught:
        await call(client, peer, "echo", {}, era_hint="modern")
    assert caught.value.reason == "tool_error"
    assert caught.value.code == -32602
    assert caught.value.upstream_message == "no such tool: x" * 200  # whole: cut after redaction
    assert "no such tool" not in str(caught.value) + repr(caught.value)


async def test_unknown_result_fields_survive_in_the_call_result(
    handmade_peer: HandmadePeerStarter, client: McpClient
) -> None:
    peer = await handmade_peer(era="modern", tools=TOOLS)
    raw = {
        "content": [{"type": "text", "text": "x", "x-extra": 1}],
        "structuredContent": [1, 2],
        "vendor": {"a": 1},
    }
    peer.override("tools/call", result_reply(raw))
    done = await call(client, peer, "echo", {}, era_hint="modern")
    assert done.result == raw


async def test_the_tool_definition_must_be_the_called_tool(client: McpClient) -> None:
    url = "http://127.0.0.1:9/mcp"
    with pytest.raises(ValueError, match="definition"):
        await client.call_tool(
            url, "echo", {}, pin=url, bearer=None, deadline_s=1, tool=tool("fail")
        )
    broken = {
        "name": "x",
        "inputSchema": {
            "type": "object",
            "properties": {"n": {"type": "number", "x-mcp-header": "N"}},
        },
    }
    with pytest.raises(ValueError, match="x-mcp-header"):
        await client.call_tool(url, "x", {}, pin=url, bearer=None, deadline_s=1, tool=broken)

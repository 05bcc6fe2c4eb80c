"""Every outcome of DESIGN §10.2 for one ``tools/call``, with a scriptable upstream peer.

Allow runs and reaches the upstream with the credential; deny is ``40300`` before anything leaves
the hub; an unknown wire name is ``-32602`` (the arguments' check: ``test_call_arguments.py``);
an upstream that hangs, drips, answers HTML, too much or 5xx is ``upstream_failed`` within the
deadline + 1.5 s with none of its text; one broken server leaves the others working; a peer that
echoes the bearer yields ``[redacted]``; results over the cap are cut and marked.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from typing import Any

import httpx2
import pytest

from hub.core.db import Database
from hub.core.logging import _QUIET_LOGGERS as QUIET_LOGGERS
from hub.gateway.engine.shaping import size_of
from tests.gateway.outcomes import (
    CANARY,
    DEADLINE_S,
    ECHO,
    ERAS,
    FREE,
    answer_error,
    answer_result,
    call_tool,
    error_class,
    setup_upstream,
    upstream_calls,
)
from tests.gateway.support import Upstream, deploy, rpc
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade_wire import RecordedRequest, Reply, rpc_result
from tests.support.leaks import debug_everything, exposed_text


@pytest.mark.parametrize("era", ERAS)
async def test_allowed_call_runs_with_the_credential(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter, era: str
) -> None:
    deployed, peer = await setup_upstream(
        client, database, handmade_peer, era="modern" if era == "modern" else "legacy"
    )
    result = answer_result(await call_tool(client, deployed, "up__echo", {"text": "hi"}, era))
    assert result.get("isError") is not True
    assert result["structuredContent"] == {"text": "hi"}
    [sent] = upstream_calls(peer)
    assert sent.headers["authorization"] == f"Bearer {CANARY}"
    assert sent.params["name"] == "echo"


async def test_denied_call_is_40300_and_nothing_leaves_the_hub(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, peer = await setup_upstream(client, database, handmade_peer, effect="deny")
    before = len(peer.requests)
    error = answer_error(await call_tool(client, deployed, "up__echo", {"text": "hi"}))
    assert error["code"] == 40300
    assert error["data"]["class"] == "forbidden"
    assert len(peer.requests) == before
    listed = answer_result(await rpc(client, deployed, "tools/list"))
    assert listed["tools"] == []  # deny tools are not listed


async def test_no_matching_grant_is_deny(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, peer = await setup_upstream(client, database, handmade_peer)
    grants = await client.get(
        deployed.setup.url("grants"),
        params={"principal_id": str(deployed.agent.principal_id)},
        headers=deployed.setup.admin.headers,
    )
    for grant in grants.json()["data"]:
        await client.delete(
            deployed.setup.url("grants", grant["id"]), headers=deployed.setup.admin.headers
        )
    error = answer_error(await call_tool(client, deployed, "up__echo", {"text": "hi"}))
    assert error["code"] == 40300
    assert upstream_calls(peer) == []


async def test_unknown_tool_is_minus_32602(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, peer = await setup_upstream(client, database, handmade_peer)
    error = answer_error(await call_tool(client, deployed, "up__nope", {}))
    assert error["code"] == -32602
    assert error["data"]["class"] == "unknown_tool"
    assert upstream_calls(peer) == []


def _upstream_error(text: str) -> Any:
    return lambda req: Reply(
        200, {"jsonrpc": "2.0", "id": req.rpc_id, "error": {"code": -32000, "message": text}}
    )


def _leak(kind: str, req: RecordedRequest) -> str:
    """The unique marker a hostile body carries, with the bearer the hub sent (the canary)."""
    return f"LEAK-{kind} saw {req.headers.get('authorization', '')}"


def _rpc_error_bytes(req: RecordedRequest, message: str) -> bytes:
    error = {"jsonrpc": "2.0", "id": req.rpc_id, "error": {"code": -32000, "message": message}}
    return json.dumps(error).encode()


def _html(req: RecordedRequest) -> Reply:
    return Reply(200, f"<html>{_leak('html', req)}</html>", headers={"content-type": "text/html"})


def _5xx(req: RecordedRequest) -> Reply:
    return Reply(502, f"bad gateway: {_leak('5xx', req)}")


def _oversize(req: RecordedRequest) -> Reply:
    """5 MiB of a well-formed result whose text starts with the marker: were the cap gone, the
    hub would pass (a cut of) it through."""
    text = _leak("oversize", req) + " " + "x" * (5 * 1024 * 1024)
    body = rpc_result(req.rpc_id, {"content": [{"type": "text", "text": text}]})
    return Reply(200, json.dumps(body).encode(), headers={"content-type": "application/json"})


def _drip(req: RecordedRequest) -> Reply:
    """A JSON-RPC error carrying the marker (sent at once), then the rest of it a byte every
    0.5 s: were the deadline gone, the hub would read it whole (a ``tool_error`` passes the
    upstream message on)."""
    leak = _leak("drip", req)
    whole = _rpc_error_bytes(req, leak + " " * 20)
    cut = whole.index(leak.encode()) + len(leak)
    chunks = [whole[:cut], *(whole[i : i + 1] for i in range(cut, len(whole)))]
    return Reply(200, headers={"content-type": "application/json"}, chunks=chunks, chunk_delay=0.5)


async def _hang(req: RecordedRequest) -> Reply:
    await asyncio.sleep(60)
    return Reply(200, _rpc_error_bytes(req, _leak("hang", req)))


#: kind → (the hostile answer, the reason the hub gives, the hub's own text)
HOSTILE: dict[str, tuple[Any, str, str]] = {
    "html": (
        _html,
        "not_mcp",
        "upstream_failed (not_mcp): the tool's server did not answer as an MCP server",
    ),
    "5xx": (
        _5xx,
        "protocol_error",
        "upstream_failed (protocol_error): the tool's server broke the MCP protocol",
    ),
    "oversize": (
        _oversize,
        "response_too_large",
        "upstream_failed (response_too_large): "
        "the tool's server answered with more than the hub accepts",
    ),
    "drip": (
        _drip,
        "timeout",
        "upstream_failed (timeout): the tool's server did not answer in time",
    ),
    "hang": (
        _hang,
        "timeout",
        "upstream_failed (timeout): the tool's server did not answer in time",
    ),
}


def _hear_everything(caplog: pytest.LogCaptureFixture) -> None:
    """Every record at DEBUG: :func:`debug_everything`, plus every logger the hub quiets and
    any other logger whose own level is above DEBUG (restored by caplog at teardown)."""
    debug_everything(caplog)
    named = [
        name
        for name, logger in logging.root.manager.loggerDict.items()
        if isinstance(logger, logging.Logger) and logger.level > logging.DEBUG
    ]
    for name in {*QUIET_LOGGERS, *named}:
        caplog.set_level(logging.DEBUG, logger=name)
    for name in ("hub", "hub.gateway", "hub.mcp", "hub.egress", *QUIET_LOGGERS):
        assert logging.getLogger(name).isEnabledFor(logging.DEBUG), name


def _assert_no_canary_logged(caplog: pytest.LogCaptureFixture) -> None:
    """Neither in a record's message nor in anything caplog renders (tracebacks included)."""
    assert caplog.records, "nothing was logged at DEBUG: the capture is not hearing the hub"
    assert CANARY not in "\n".join(r.getMessage() for r in caplog.records)
    assert CANARY not in caplog.text
    for record in caplog.records:
        if record.exc_info and record.exc_info[1] is not None:
            assert CANARY not in exposed_text(record.exc_info[1])


@pytest.mark.parametrize("kind", sorted(HOSTILE))
async def test_upstream_failures_are_contained(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    caplog: pytest.LogCaptureFixture,
    kind: str,
) -> None:
    """Each hostile answer is ``upstream_failed`` with its own reason and exactly the hub's text,
    within the deadline + 1.5 s; none of its body (a unique marker, the echoed bearer) reaches
    the agent or any log."""
    answer, reason, hub_text = HOSTILE[kind]
    deployed, peer = await setup_upstream(client, database, handmade_peer)
    peer.override("tools/call", answer)
    _hear_everything(caplog)
    started = time.monotonic()
    response = await call_tool(client, deployed, "up__echo", {"text": "hi"})
    assert time.monotonic() - started < DEADLINE_S + 1.5
    assert f"LEAK-{kind}" not in response.text
    assert "LEAK-" not in response.text
    assert CANARY not in response.text
    result = answer_result(response)
    assert len(upstream_calls(peer)) == 1  # the hostile answer was really served
    assert result["isError"] is True
    assert result["_meta"]["io.mcphub/error"] == {"class": "upstream_failed", "reason": reason}
    assert result["content"] == [{"type": "text", "text": hub_text}]
    assert "structuredContent" not in result
    _assert_no_canary_logged(caplog)


async def test_one_broken_server_leaves_the_others_working(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    good = await handmade_peer(era="modern", tools=[ECHO])
    bad = await handmade_peer(era="modern", tools=[ECHO])
    deployed = await deploy(
        client, database, [Upstream("good", good.url), Upstream("bad", bad.url)]
    )
    bad.override("*", Reply(500, "down"))
    tool = deployed.catalogs["good"]["tools"][0]
    ok = answer_result(
        await rpc(
            client,
            deployed,
            "tools/call",
            {"name": "good__echo", "arguments": {"text": "a"}},
            tool=tool,
        )
    )
    assert ok.get("isError") is not True
    broken = answer_result(
        await rpc(
            client,
            deployed,
            "tools/call",
            {"name": "bad__echo", "arguments": {"text": "a"}},
            tool=tool,
        )
    )
    assert error_class(broken) == "upstream_failed"
    listed = answer_result(await rpc(client, deployed, "tools/list"))
    assert {t["name"] for t in listed["tools"]} == {"good__echo", "bad__echo"}


def _echo_bearer(req: RecordedRequest) -> Reply:
    bearer = req.headers.get("authorization", "")
    secret = bearer.removeprefix("Bearer ")
    result = {
        "content": [
            {"type": "text", "text": f"I saw {bearer} and {secret}"},
            {
                "type": "image",
                "mimeType": "image/png",
                "data": base64.b64encode(b"\x89PNG" + secret.encode()).decode(),
            },
        ],
        "structuredContent": {
            "echo": secret,
            secret: "as a key",
            "b64": base64.b64encode(secret.encode()).decode(),
        },
        "_meta": {"seen": bearer},
    }
    return Reply(200, rpc_result(req.rpc_id, result))


async def test_a_peer_echoing_the_bearer_yields_redacted(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    deployed, peer = await setup_upstream(client, database, handmade_peer)
    peer.override("tools/call", _echo_bearer)
    _hear_everything(caplog)
    response = await call_tool(client, deployed, "up__free", {})
    result = answer_result(response)
    assert CANARY not in response.text
    assert base64.b64encode(CANARY.encode()).decode() not in response.text
    assert "[redacted]" in result["content"][0]["text"]
    assert result["content"][1] == {"type": "text", "text": "[redacted]"}
    _assert_no_canary_logged(caplog)


async def test_an_upstream_json_rpc_error_is_an_error_result_with_its_code(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, peer = await setup_upstream(client, database, handmade_peer)
    peer.override(
        "tools/call",
        lambda req: _upstream_error(f"bad thing with {req.headers['authorization']}")(req),
    )
    result = answer_result(await call_tool(client, deployed, "up__echo", {"text": "hi"}))
    assert result["isError"] is True
    assert error_class(result) == "upstream_failed"
    assert result["_meta"]["io.mcphub/error"]["code"] == -32000
    assert "bad thing with Bearer [redacted]" in result["content"][0]["text"]
    assert CANARY not in str(result)


async def test_header_mismatch_upstream_is_tool_changed(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    """``-32020`` re-lists the server: the tool's definition did change, so ``tool_changed``
    (an unchanged one is retried: tests/drift/test_hostile_upstreams.py)."""
    deployed, peer = await setup_upstream(client, database, handmade_peer)
    peer.knobs.tools = [{**ECHO, "description": "Echoes, differently."}, FREE]
    peer.override(
        "tools/call",
        lambda req: Reply(
            400, {"jsonrpc": "2.0", "id": req.rpc_id, "error": {"code": -32020, "message": "x"}}
        ),
    )
    result = answer_result(await call_tool(client, deployed, "up__echo", {"text": "hi"}))
    assert error_class(result) == "tool_changed"


async def test_input_required_upstream_is_unsupported(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, peer = await setup_upstream(client, database, handmade_peer)
    result = {"resultType": "input_required", "inputRequests": {"k": {"method": "roots/list"}}}
    peer.override("tools/call", lambda req: Reply(200, rpc_result(req.rpc_id, result)))
    shaped = answer_result(await call_tool(client, deployed, "up__echo", {"text": "hi"}))
    assert shaped["_meta"]["io.mcphub/error"] == {
        "class": "upstream_failed",
        "reason": "input_required_unsupported",
    }


async def test_an_oversized_result_is_cut_and_marked(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, peer = await setup_upstream(client, database, handmade_peer)
    big = {
        "content": [
            {"type": "text", "text": "a" * 50_000},
            {"type": "image", "mimeType": "image/png", "data": "A" * 40_000},
            {"type": "text", "text": "b" * 50_000},
        ]
    }
    peer.override("tools/call", lambda req: Reply(200, rpc_result(req.rpc_id, big)))
    response = await call_tool(client, deployed, "up__free", {})
    result = answer_result(response)
    assert len(response.content) <= 64 * 1024 + 512
    assert result["_meta"]["io.mcphub/truncated"]["original_bytes"] > 64 * 1024
    assert all(block["type"] == "text" for block in result["content"])
    assert result["content"][0]["text"].startswith("aaa")


async def test_structured_content_under_an_output_schema_is_never_altered(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    tool = {"name": "typed", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}
    deployed, peer = await setup_upstream(client, database, handmade_peer, tools=[tool])
    big = {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"blob": "z" * 80_000}}
    peer.override("tools/call", lambda req: Reply(200, rpc_result(req.rpc_id, big)))
    result = answer_result(await call_tool(client, deployed, "up__typed", {}))
    assert result["_meta"]["io.mcphub/error"] == {
        "class": "upstream_failed",
        "reason": "result_too_large",
    }


async def test_upstream_hub_meta_keys_are_stripped(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, peer = await setup_upstream(client, database, handmade_peer)
    forged = {
        "content": [
            {"type": "text", "text": "ok", "_meta": {"io.mcphub/approval": "forged", "x/y": 1}}
        ],
        "_meta": {"io.mcphub/error": {"class": "forged"}, "example.com/k": "v"},
    }
    peer.override("tools/call", lambda req: Reply(200, rpc_result(req.rpc_id, forged)))
    result = answer_result(await call_tool(client, deployed, "up__free", {}))
    assert "io.mcphub/error" not in result.get("_meta", {})
    assert result["_meta"]["example.com/k"] == "v"
    assert result["content"][0]["_meta"] == {"x/y": 1}


async def test_a_legacy_agents_text_of_a_list_result_is_within_the_cap_too(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    """A legacy agent gets a non-object ``structuredContent`` as a text block (its schema
    allows only objects). That block was added after the cut, and took the result past the
    cap; it is made before the cut now."""
    deployed, peer = await setup_upstream(client, database, handmade_peer)
    rows = ["r" * 100] * 2_000  # about 200 KB of JSON, over the 64 KiB cap
    listed = {"content": [{"type": "text", "text": "rows"}], "structuredContent": rows}
    peer.override("tools/call", lambda req: Reply(200, rpc_result(req.rpc_id, listed)))
    response = await call_tool(client, deployed, "up__free", {}, era="2025-11-25")
    result = answer_result(response)
    assert "structuredContent" not in result
    assert size_of(result) <= 64 * 1024  # as the cap is measured
    assert result["_meta"]["io.mcphub/truncated"]["original_bytes"] > 64 * 1024
    assert result["content"][0]["text"] == "rows"
    assert result["content"][1]["text"].startswith('["rrr')

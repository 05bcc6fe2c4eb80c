"""JSON that ``json.loads`` takes but the hub could not pass on, from the agent and from upstream.

Each was found by sending it (stop 41): an agent's lone surrogate escape in the arguments
answered 500 (the arguments' hash could not encode it), and so did an upstream answer holding one
(the hub's own answer could not); ``NaN``, ``Infinity`` and ``1e400`` from the agent went upstream
as they were, not JSON, and the server's refusal came back as its own fault (``protocol_error``),
as did arguments nested past what the hub reads back in an answer; ``1e400`` from upstream
reached the agent as ``Infinity``.

Now a request body is refused at the door with ``-32700`` and the reason, before anything leaves
the hub; an upstream answer's lone surrogate reads as U+FFFD and its numbers beyond a double are
the server's ``protocol_error``. A body exactly as deep as the limit still runs, and comes back.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx2
import pytest

from hub.core.db import Database
from hub.egress.responses import MAX_JSON_DEPTH
from hub.mcp import MODERN_VERSION
from tests.gateway.support import META, Deployed, Upstream, deploy
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade import HandmadePeer
from tests.peers.handmade_wire import RecordedRequest, Reply

FREE = {"name": "free", "inputSchema": {"type": "object"}}  # declares nothing: anything goes
ERAS = ["modern", "2025-11-25"]
PLACEHOLDER = '"@value@"'
CANARY = f"CANARY-{uuid.uuid4()}"


@pytest.fixture
async def peer(handmade_peer: HandmadePeerStarter) -> HandmadePeer:
    return await handmade_peer(era="dual", tools=[FREE])


@pytest.fixture
async def deployed(client: httpx2.AsyncClient, database: Database, peer: HandmadePeer) -> Deployed:
    return await deploy(client, database, [Upstream("up", peer.url)])


async def _call_with(
    client: httpx2.AsyncClient, deployed: Deployed, era: str, value: str
) -> httpx2.Response:
    """``tools/call`` of ``up__free`` with ``{"v": <value>, "note": CANARY}``, ``value`` written
    into the body as raw JSON text (what no JSON encoder would write)."""
    arguments = {"v": "@value@", "note": CANARY}
    params: dict[str, Any] = {"name": "up__free", "arguments": arguments}
    headers = dict(deployed.headers)
    if era == "modern":
        params["_meta"] = META
        headers |= {
            "mcp-protocol-version": MODERN_VERSION,
            "mcp-method": "tools/call",
            "mcp-name": "up__free",
        }
    else:
        headers["mcp-protocol-version"] = era
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    body = json.dumps(message).replace(PLACEHOLDER, value).encode()
    return await client.post(
        deployed.url, content=body, headers=headers | {"content-type": "application/json"}
    )


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("NaN", "NaN, Infinity"),
        ("-Infinity", "NaN, Infinity"),
        ("1e400", "beyond a double"),
        ('"cut \\ud83d"', "lone surrogate"),
        ('{"\\udc00": 1}', "lone surrogate"),
        # the arguments object is the body's third level: one more than an answer may nest
        (_nested(MAX_JSON_DEPTH - 2), "nested too deeply"),
        (_nested(5000), "nested too deeply"),  # past the decoder's own recursion
        ('"cut short', "the body is not JSON"),
    ],
    ids=["nan", "infinity", "1e400", "surrogate", "surrogate-key", "deep", "deeper", "not-json"],
)
async def test_a_body_the_hub_cannot_pass_on_is_refused_before_it_leaves(
    client: httpx2.AsyncClient,
    deployed: Deployed,
    peer: HandmadePeer,
    era: str,
    value: str,
    reason: str,
) -> None:
    r = await _call_with(client, deployed, era, value)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == -32700
    assert reason in error["message"]
    assert CANARY not in r.text  # the refusal quotes nothing of the body
    assert peer.count("tools/call") == 0


@pytest.mark.parametrize("era", ERAS)
async def test_what_is_accepted_runs_and_comes_back(
    client: httpx2.AsyncClient, deployed: Deployed, peer: HandmadePeer, era: str
) -> None:
    """The limits' edges: a whole surrogate pair, a tiny or huge but finite number, and arguments
    exactly as deep as the limit allows, which the peer's echo brings back as deep."""
    for value, expected in (
        ('"smile \\ud83d\\ude00"', "smile \U0001f600"),
        ("1e-400", 0.0),
        ("1.5e308", 1.5e308),
        (_nested(MAX_JSON_DEPTH - 3), json.loads(_nested(MAX_JSON_DEPTH - 3))),
    ):
        r = await _call_with(client, deployed, era, value)
        assert r.status_code == 200, r.text
        result = r.json()["result"]
        assert "isError" not in result, result
        assert result["structuredContent"] == {"v": expected, "note": CANARY}
    assert peer.count("tools/call") == 4


async def _answered_with(
    client: httpx2.AsyncClient, deployed: Deployed, peer: HandmadePeer, era: str, body: bytes
) -> dict[str, Any]:
    """The call's result when the peer answers ``body`` (its ``"@id@"`` the request's id)."""

    def answer(request: RecordedRequest) -> Reply:
        text = body.replace(b'"@id@"', json.dumps(request.rpc_id).encode())
        return Reply(body=text, headers={"content-type": "application/json"})

    peer.override("tools/call", answer)
    r = await _call_with(client, deployed, era, '"x"')
    assert r.status_code == 200, r.text
    assert "Infinity" not in r.text
    result: dict[str, Any] = r.json()["result"]
    return result


@pytest.mark.parametrize("era", ERAS)
async def test_an_upstream_lone_surrogate_reads_as_a_replacement_character(
    client: httpx2.AsyncClient, deployed: Deployed, peer: HandmadePeer, era: str
) -> None:
    """A JavaScript server that cuts a string inside a pair sends half of it; the call's answer
    could not be written as UTF-8 with it (it answered 500)."""
    result = await _answered_with(
        client,
        deployed,
        peer,
        era,
        b'{"jsonrpc":"2.0","id":"@id@","result":{"content":[{"type":"text",'
        b'"text":"cut \\ud83d"}],"structuredContent":{"\\udc00":"\\ud83d\\ude00"}}}',
    )
    assert "isError" not in result, result
    assert result["content"] == [{"type": "text", "text": "cut \ufffd"}]
    assert result["structuredContent"] == {"\ufffd": "\U0001f600"}


@pytest.mark.parametrize("era", ERAS)
async def test_an_upstream_number_beyond_a_double_is_the_servers_protocol_error(
    client: httpx2.AsyncClient, deployed: Deployed, peer: HandmadePeer, era: str
) -> None:
    """It reached the agent as ``Infinity``, which is not JSON."""
    result = await _answered_with(
        client,
        deployed,
        peer,
        era,
        b'{"jsonrpc":"2.0","id":"@id@","result":{"content":[{"type":"text","text":"x"}],'
        b'"structuredContent":{"n":1e400}}}',
    )
    assert result["isError"] is True
    assert result["_meta"]["io.mcphub/error"] == {
        "class": "upstream_failed",
        "reason": "protocol_error",
    }

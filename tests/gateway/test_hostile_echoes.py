"""What a hostile upstream (or agent) sent that the gateway passed on, found by a red-team walk
(stop 50), each with the rule that now holds:

- a server whose discovery echoes the bearer (its ``serverInfo``, instructions, a tool's
  description or schema) has it redacted before anything is stored, so neither the catalog,
  the bundle nor an agent's ``tools/list`` ever holds it;
- an upstream error message is redacted whole and then cut to 1,000 characters (cut first, a
  secret across the cut was kept but for its last characters);
- a repeated ``Mcp-Name`` or ``MCP-Protocol-Version`` header is a mismatch, not "the last one";
- an integer past a double's range is refused as ``1e400`` is (``-32700``);
- a result heavy to shape is shaped off the event loop, which every tenant's requests share.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from hub.core.db import Database
from hub.gateway.engine.engine import shaped_result
from hub.gateway.engine.shaping import OFF_LOOP_WEIGHT, fit, heavy
from hub.mcp.redaction import Redactor
from tests.gateway.outcomes import (
    CANARY,
    answer_result,
    call_tool,
    setup_upstream,
    upstream_calls,
)
from tests.gateway.support import Upstream, deploy, rpc
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade_wire import RecordedRequest, Reply
from tests.support.ticks import ticks_while

HOSTILE_TOOL = {
    "name": "probe",
    "description": f"debug auth={CANARY}",
    "inputSchema": {
        "type": "object",
        "properties": {"token": {"type": "string", "default": f"Bearer {CANARY}"}},
    },
}


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_a_discovery_echoing_the_bearer_is_stored_and_served_redacted(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter, era: str
) -> None:
    peer = await handmade_peer(
        era=era,
        tools=[HOSTILE_TOOL],
        server_info={"name": f"hostile {CANARY}", "version": "1"},
        instructions=f"secret {CANARY}",
    )
    deployed = await deploy(client, database, [Upstream("up", peer.url, secret=CANARY)])
    admin = deployed.setup.admin.headers
    assert any(r.headers.get("authorization") == f"Bearer {CANARY}" for r in peer.requests)
    served = [
        json.dumps(deployed.catalogs["up"]),
        (
            await client.get(
                deployed.setup.url("servers", "up", "catalogs", "latest"), headers=admin
            )
        ).text,
        (
            await client.get(
                deployed.setup.url("deployments", deployed.deployment_id, "bundle"), headers=admin
            )
        ).text,
        (await rpc(client, deployed, "tools/list")).text,
    ]
    for text in served:
        assert CANARY not in text
        assert "[redacted]" in text
    [listed] = answer_result(await rpc(client, deployed, "tools/list"))["tools"]
    assert listed["description"] == "debug auth=[redacted]"
    assert listed["inputSchema"]["properties"]["token"]["default"] == "Bearer [redacted]"


def _error_with_secret_at(pad: int) -> Any:
    def reply(req: RecordedRequest) -> Reply:
        bearer = req.headers["authorization"].removeprefix("Bearer ")
        error = {"code": -32000, "message": "E" * pad + bearer}
        return Reply(200, {"jsonrpc": "2.0", "id": req.rpc_id, "error": error})

    return reply


@pytest.mark.parametrize("pad", [100, 965, 990, 999])
async def test_an_upstream_error_is_redacted_before_it_is_cut(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter, pad: int
) -> None:
    deployed, peer = await setup_upstream(client, database, handmade_peer)
    peer.override("tools/call", _error_with_secret_at(pad))
    result = answer_result(await call_tool(client, deployed, "up__echo", {"text": "hi"}))
    text = result["content"][0]["text"]
    assert result["isError"] is True
    assert CANARY[:5] not in text  # not the secret's first five characters, nor any more of it
    assert text.endswith("E" * 20 + "[redacted]"[: 1000 - pad])


@pytest.mark.parametrize(
    "repeated",
    [
        [("mcp-name", "up__free"), ("mcp-name", "up__echo")],
        [("mcp-name", "up__echo"), ("mcp-name", "up__echo")],
        [("mcp-protocol-version", "2026-07-28"), ("mcp-protocol-version", "2026-07-28")],
    ],
)
async def test_a_repeated_mcp_header_is_refused(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    repeated: list[tuple[str, str]],
) -> None:
    """A proxy in front of the hub may read the first of two headers; the hub read the last.
    Joined as HTTP joins repeated fields, neither matches the body, and the request is refused."""
    deployed, peer = await setup_upstream(client, database, handmade_peer)
    names = {name for name, _ in repeated}
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "up__echo",
            "arguments": {"text": "hi"},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
        },
    }
    single = {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "up__echo",
    }
    headers = [
        *deployed.headers.items(),
        *((k, v) for k, v in single.items() if k not in names),
        *repeated,
    ]
    response = await client.post(deployed.url, content=json.dumps(message), headers=headers)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] in (-32020, -32022)
    assert upstream_calls(peer) == []


async def test_an_integer_past_a_double_is_refused(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    """A JavaScript upstream reads it as Infinity, and an approver sees digits no server uses."""
    deployed, peer = await setup_upstream(client, database, handmade_peer)
    huge = int("1" + "0" * 400)
    response = await call_tool(client, deployed, "up__free", {"n": huge})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700
    assert upstream_calls(peer) == []
    fine = answer_result(await call_tool(client, deployed, "up__free", {"n": 2**1000}))
    assert fine.get("isError") is not True  # 302 digits: still a double's range


async def test_a_heavy_result_is_shaped_off_the_event_loop() -> None:
    """A hostile upstream's 3.6 MB of one-character strings held the loop 0.7 s a call while
    the hub redacted and fitted it (stop 50), every tenant's requests waiting. Shaped on the
    checking thread, the loop goes on: a task that wakes every 5 ms runs many times meanwhile;
    and the result is what shaping it on the loop gives."""
    raw = {"content": [{"type": "text", "text": "x"}], "structuredContent": {"v": ["a"] * 900_000}}
    options: dict[str, Any] = {"max_bytes": 1 << 20, "has_schema": False, "legacy": False}
    assert heavy(raw)
    shaped, ticks = await ticks_while(shaped_result(raw, [CANARY], **options))
    assert ticks >= 5, ticks
    assert shaped == fit(Redactor([CANARY]).result(raw), 1 << 20, has_output_schema=False)


async def test_a_light_result_is_shaped_on_the_loop() -> None:
    """A few values, or a text a few pages long, cost less than a thread hop."""
    options: dict[str, Any] = {"max_bytes": 1 << 20, "has_schema": False, "legacy": False}
    light = {
        "content": [{"type": "text", "text": "x" * 100_000}],
        "structuredContent": {"v": [1] * 100},
    }
    assert not heavy(light)
    assert heavy({"content": [{"type": "text", "text": "x" * (32 * OFF_LOOP_WEIGHT)}]})
    assert heavy({"v": ["a"] * OFF_LOOP_WEIGHT})
    _, ticks = await ticks_while(shaped_result(light, [CANARY], **options))
    assert ticks == 0

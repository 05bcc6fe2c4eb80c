"""One audit row per ``tools/call`` — run, refused, invalid or pending alike — with the decision,
hashes and versions but never argument values; and the call metrics (DESIGN §10.2 step 7)."""

from __future__ import annotations

import httpx2
from fastapi import FastAPI

from hub.core.components import components_of
from hub.core.db import Database
from hub.core.metrics import Metrics
from tests.gateway.support import Upstream, deploy, rpc
from tests.peers.fixtures import EverythingPeer, HandmadePeerStarter
from tests.support.stories import audit_events

ECHO = {
    "name": "echo",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}
VALUE = "a-value-that-must-stay-out-of-the-audit"


async def test_every_call_writes_one_audit_row_without_argument_values(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter, app: FastAPI
) -> None:
    peer = await handmade_peer(era="modern", tools=[ECHO])
    deployed = await deploy(client, database, [Upstream("up", peer.url)])
    calls = [
        ("up__echo", {"text": VALUE}),  # runs
        ("up__echo", {"text": 1}),  # invalid
        ("up__missing", {"text": VALUE}),  # unknown
    ]
    for name, arguments in calls:
        r = await rpc(client, deployed, "tools/call", {"name": name, "arguments": arguments})
        assert r.status_code == 200
    rows = await audit_events(database, action="tool.call")
    assert [(r.outcome, r.details.get("class")) for r in rows] == [
        ("success", None),
        ("failed", "invalid_arguments"),
        ("failed", "unknown_tool"),
    ]
    ran = rows[0]
    assert ran.actor_id == deployed.agent.principal_id
    assert ran.resource == "tool:up.echo"
    assert ran.details["decision"] == "allow"
    assert ran.details["catalog_version"] == 1
    assert ran.details["tool_sha256"] == deployed.catalogs["up"]["tool_hashes"]["echo"]
    assert len(ran.details["arguments_sha256"]) == 64
    assert isinstance(ran.details["grants_version"], int)
    assert ran.details["upstream_ms"] >= 0
    assert all(VALUE not in str(r.details) for r in rows)
    metrics = components_of(app).get(Metrics).render().decode()
    assert 'hub_tool_calls_total{error_class="none",outcome="success"} 1.0' in metrics
    assert 'hub_tool_calls_total{error_class="invalid_arguments",outcome="failed"} 1.0' in metrics
    assert 'hub_upstream_operation_seconds_count{operation="tool_call"} 1.0' in metrics


async def test_server_everything_through_the_hub(
    client: httpx2.AsyncClient, database: Database, everything_peer: EverythingPeer
) -> None:
    """@modelcontextprotocol/server-everything (handshake era) behind the hub."""
    deployed = await deploy(client, database, [Upstream("every", everything_peer.url)])
    listed = (await rpc(client, deployed, "tools/list")).json()["result"]["tools"]
    names = {t["name"] for t in listed}
    assert "every__echo" in names
    echo = next(t for t in deployed.catalogs["every"]["tools"] if t["name"] == "echo")
    r = await rpc(
        client,
        deployed,
        "tools/call",
        {"name": "every__echo", "arguments": {"message": "hi"}},
        tool=echo,
    )
    result = r.json()["result"]
    assert result.get("isError") is not True
    assert "hi" in result["content"][0]["text"]

"""An upstream ``-32020`` in direct mode re-lists the server through the hub (DESIGN §15).

As on the hub's own calls (``tests/drift/test_hostile_upstreams.py``): changed → the tool is
marked drifted at once, for every host, and the call is ``tool_changed``; unchanged → the sidecar
retries once, and a second ``-32020`` is ``upstream_failed`` ``tool_changed_unconfirmed``. The
sidecar's direct-mode calls run in process (``DirectCalls``, reaching the app through its ASGI
transport); the relist route takes only a live decision of the deployment's own agent.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import httpx2
from fastapi import FastAPI

from hub.core.db import Database
from hub.sidecar.bundle import Bundle
from hub.sidecar.direct import DirectCalls
from tests.drift.support import asks, drift_of, listed, tools_by_name
from tests.gateway.support import Upstream
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade import HandmadePeer
from tests.peers.handmade_wire import RecordedRequest, Reply, rpc_error
from tests.sidecar.direct import DirectDeployed, deploy_direct
from tests.sidecar.inprocess import direct_calls
from tests.support.stories import audit_events

TOOL = {
    "name": "t1",
    "description": "Tool 1.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}


def _header_mismatch(req: RecordedRequest) -> Reply:
    return Reply(400, rpc_error(req.rpc_id, -32020, "the tool changed"))


async def _world(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> tuple[DirectDeployed, HandmadePeer]:
    peer = await handmade_peer(era="modern", tools=[copy.deepcopy(TOOL)])
    upstream = Upstream("up", peer.url, secret="direct-relist-secret-0123456789")
    return await deploy_direct(client, database, [upstream], {"up"}), peer


async def _call(calls: DirectCalls, bundle: Bundle) -> dict[str, Any]:
    tool = bundle.view.tools["up__t1"]
    return await calls.call(bundle, tool, "up__t1", {"text": "hi"})


async def test_a_changed_tool_is_marked_drifted_at_once_and_not_retried(
    app: FastAPI,
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    tmp_path: Path,
) -> None:
    world, peer = await _world(client, database, handmade_peer)
    peer.knobs.tools = [{**TOOL, "description": "Tool 1, swapped underneath."}]
    peer.override("tools/call", _header_mismatch)
    async with direct_calls(app, world, tmp_path) as (calls, bundle):
        result = await _call(calls, bundle)
    assert result["isError"] is True
    assert result["_meta"]["io.mcphub/error"]["class"] == "tool_changed"
    assert peer.count("tools/call") == 1
    deployed = world.deployed
    found = tools_by_name(await drift_of(client, deployed))  # no drift job has run
    assert set(found) == {"t1"}
    assert found["t1"]["changed"] == ["description"]
    assert asks((await listed(client, deployed))["up__t1"])  # on the hub's endpoint too


async def test_an_unchanged_tool_is_retried_once(
    app: FastAPI,
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    tmp_path: Path,
) -> None:
    world, peer = await _world(client, database, handmade_peer)
    peer.override("tools/call", _header_mismatch)
    async with direct_calls(app, world, tmp_path) as (calls, bundle):
        result = await _call(calls, bundle)
        assert result["_meta"]["io.mcphub/error"] == {
            "class": "upstream_failed",
            "reason": "tool_changed_unconfirmed",
        }
        assert peer.count("tools/call") == 2
        peer.clear_overrides()
        peer.override("tools/call", _header_mismatch, times=1)
        ran = await _call(calls, bundle)
        assert ran.get("isError") is not True  # the retry ran it
        assert peer.count("tools/call") == 4
    assert await audit_events(database, action="catalog.drift") == []


async def test_the_relist_route_takes_only_a_live_decision_of_the_agent(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    world, _ = await _world(client, database, handmade_peer)
    deployed = world.deployed
    base = world.setup.url("deployments", deployed.deployment_id, "decisions")
    decided = await client.post(
        base, json={"wire_name": "up__t1", "arguments": {"text": "hi"}}, headers=deployed.headers
    )
    decision_id = decided.json()["data"]["decision_id"]
    relisted = await client.post(f"{base}/{decision_id}/relist", headers=deployed.headers)
    assert relisted.status_code == 200, relisted.text
    assert relisted.json()["data"] == {"changed": False}
    forged = await client.post(f"{base}/k1.AAAA.AAAA/relist", headers=deployed.headers)
    assert forged.status_code == 400
    assert forged.json()["error"]["reason"] == "invalid_decision"
    admin = await client.post(f"{base}/{decision_id}/relist", headers=world.setup.admin.headers)
    assert admin.status_code == 403  # only the deployment's agent

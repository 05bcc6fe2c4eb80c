"""Tool calls are counted per agent in the rate-limit class ``tool_call`` (DESIGN §11, §15): a
refused call is JSON-RPC ``42900`` with ``retry_after_s`` and ``Retry-After`` (HTTP 200), never
reaches the upstream, writes no audit row; listing tools is not counted."""

from __future__ import annotations

import httpx2
import pytest
from fastapi import FastAPI

from hub.core.components import components_of
from hub.core.db import Database
from hub.core.metrics import Metrics
from hub.core.settings import Settings
from tests.conftest import make_settings
from tests.gateway.support import Deployed, Upstream, deploy, rpc
from tests.peers.fixtures import HandmadePeerStarter
from tests.support.stories import audit_events

ECHO = {"name": "echo", "inputSchema": {"type": "object", "properties": {}}}
CALL = {"name": "up__echo", "arguments": {}}


@pytest.fixture
def settings(db_url: str) -> Settings:
    return make_settings(
        db_url, allow_loopback=True, approval_wait_s=0, rate_limits="tool_call=2/minute"
    )


@pytest.fixture
async def deployed(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> Deployed:
    peer = await handmade_peer(era="modern", tools=[ECHO])
    return await deploy(client, database, [Upstream("up", peer.url)])


@pytest.mark.parametrize("era", ["modern", "2025-06-18"])
async def test_the_call_over_the_limit_is_42900_with_retry_after(
    client: httpx2.AsyncClient, deployed: Deployed, app: FastAPI, era: str
) -> None:
    answers = [await rpc(client, deployed, "tools/call", CALL, era=era) for _ in range(3)]
    assert [r.status_code for r in answers] == [200, 200, 200]
    assert all("result" in r.json() for r in answers[:2])
    refused = answers[2]
    error = refused.json()["error"]
    assert error["code"] == 42900
    assert error["data"]["class"] == "rate_limited"
    assert 1 <= error["data"]["retry_after_s"] <= 60
    assert int(refused.headers["retry-after"]) == error["data"]["retry_after_s"]
    # an agent's MCP client often shows only the message: it says when to try again
    wait_s = error["data"]["retry_after_s"]
    assert error["message"] == f"Too many tool calls: try again in {wait_s} s"
    assert "ratelimit-policy" in refused.headers
    metrics = components_of(app).get(Metrics).render().decode()
    assert 'hub_rate_limit_refusals_total{kind="tool_call"} 1.0' in metrics


async def test_a_refused_call_reaches_no_upstream_and_writes_no_audit_row(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
) -> None:
    peer = await handmade_peer(era="modern", tools=[ECHO])
    deployed = await deploy(client, database, [Upstream("up", peer.url)])
    before = peer.count("tools/call")
    for _ in range(3):
        await rpc(client, deployed, "tools/call", CALL)
    assert peer.count("tools/call") - before == 2
    rows = await audit_events(database, action="tool.call")
    assert [r.outcome for r in rows] == ["success", "success"]


async def test_listing_tools_is_not_counted(client: httpx2.AsyncClient, deployed: Deployed) -> None:
    for _ in range(5):
        assert "result" in (await rpc(client, deployed, "tools/list")).json()
    assert "result" in (await rpc(client, deployed, "tools/call", CALL)).json()


async def test_each_agent_has_its_own_budget(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    peer = await handmade_peer(era="modern", tools=[ECHO])
    first = await deploy(client, database, [Upstream("up", peer.url)])
    for _ in range(2):
        await rpc(client, first, "tools/call", CALL)
    assert (await rpc(client, first, "tools/call", CALL)).json()["error"]["code"] == 42900
    second = await deploy(client, database, [Upstream("up", peer.url)])
    assert second.agent.principal_id != first.agent.principal_id
    assert "result" in (await rpc(client, second, "tools/call", CALL)).json()

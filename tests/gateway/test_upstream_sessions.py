"""A handshake-era upstream's session is kept between one agent's calls through the hub.

The first call opens the session (``initialize``, ``notifications/initialized``, ``tools/call``),
the next ones send ``tools/call`` alone in it; a changed secret opens a new session (the old one
is never sent the new bearer), another agent gets a session of its own, and a session the
upstream forgot is opened again without the call running twice.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx2
import pytest

from hub.core.db import Database
from tests.gateway.support import Deployed, Upstream, deploy, rpc
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade import HandmadePeer
from tests.support.factories import Actor

ECHO = {
    "name": "echo",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}
SECRET = "first-upstream-secret"
ROTATED = "rotated-upstream-secret"


async def _echo(client: httpx2.AsyncClient, deployed: Deployed, text: str) -> None:
    response = await rpc(
        client,
        deployed,
        "tools/call",
        {"name": "up__echo", "arguments": {"text": text}},
        era="2025-11-25",
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]
    assert result["structuredContent"] == {"text": text}, result


def _since(peer: HandmadePeer, seen: int) -> list[str]:
    return [r.rpc_method or r.http_method for r in peer.requests[seen:]]


async def test_one_agents_calls_share_a_session_until_the_secret_changes(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    peer = await handmade_peer(era="legacy", tools=[ECHO])
    deployed = await deploy(client, database, [Upstream("up", peer.url, secret=SECRET)])
    seen = len(peer.requests)  # discovery's own session was deleted
    assert peer.sessions == {}

    await _echo(client, deployed, "one")
    assert _since(peer, seen) == ["initialize", "notifications/initialized", "tools/call"]
    [session_id] = peer.sessions
    seen = len(peer.requests)
    await _echo(client, deployed, "two")
    await _echo(client, deployed, "three")
    assert _since(peer, seen) == ["tools/call", "tools/call"]
    assert {r.headers["mcp-session-id"] for r in peer.requests[seen:]} == {session_id}

    admin = deployed.setup.admin.headers
    credential = deployed.credentials["up"]
    changed = await client.patch(
        deployed.setup.url("credentials", credential), json={"secret": ROTATED}, headers=admin
    )
    assert changed.status_code == 200, changed.text
    seen = len(peer.requests)
    await _echo(client, deployed, "four")
    assert _since(peer, seen) == ["initialize", "notifications/initialized", "tools/call"]
    assert {r.headers["authorization"] for r in peer.requests[seen:]} == {f"Bearer {ROTATED}"}
    assert session_id not in {r.headers.get("mcp-session-id") for r in peer.requests[seen:]}


async def _second_agent(client: httpx2.AsyncClient, deployed: Deployed) -> Deployed:
    """Another agent of the same tenant, deployed the same server with the same credential."""
    setup, admin = deployed.setup, deployed.setup.admin.headers

    async def made(path: list[str], body: dict[str, Any]) -> dict[str, Any]:
        response = await client.post(setup.url(*path), json=body, headers=admin)
        assert response.status_code == 201, response.text
        data: dict[str, Any] = response.json()["data"]
        return data

    agent = await made(["principals"], {"kind": "agent", "name": "second"})
    key = await made(["principals", agent["id"], "keys"], {})
    grant = {"principal_id": agent["id"], "resource": "tool:up.*", "action": "call"}
    await made(["grants"], {**grant, "effect": "allow"})
    catalog = deployed.catalogs["up"]
    entry = {
        "server": "up",
        "catalog_version": catalog["version"],
        "allow_without_ask": [t["name"] for t in catalog["tools"]],
    }
    deployment = await made(["deployments"], {"agent_id": agent["id"], "entries": [entry]})
    actor = Actor(uuid.UUID(agent["id"]), setup.tenant_id, key["key"])
    return Deployed(setup, actor, deployment["id"], deployed.catalogs, deployed.credentials)


async def test_another_agent_of_the_tenant_gets_a_session_of_its_own(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    peer = await handmade_peer(era="legacy", tools=[ECHO])
    first = await deploy(client, database, [Upstream("up", peer.url, secret=SECRET)])
    second = await _second_agent(client, first)
    await _echo(client, first, "a")
    await _echo(client, second, "b")
    await _echo(client, first, "c")
    await _echo(client, second, "d")
    assert peer.count("initialize") == 1 + 2  # the discovery, then one session per agent
    calls = peer.rpc_requests("tools/call")
    by_text = {r.params["arguments"]["text"]: r.headers["mcp-session-id"] for r in calls}
    assert by_text["a"] == by_text["c"] != by_text["b"] == by_text["d"]


async def test_a_session_the_upstream_forgot_is_opened_again_and_runs_the_call_once(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    peer = await handmade_peer(era="legacy", tools=[ECHO])
    deployed = await deploy(client, database, [Upstream("up", peer.url, secret=SECRET)])
    await _echo(client, deployed, "one")
    peer.logic.sessions.clear()  # the upstream restarted
    seen = len(peer.requests)
    await _echo(client, deployed, "two")
    assert _since(peer, seen) == [
        "tools/call",  # 404: it ran nothing
        "initialize",
        "notifications/initialized",
        "tools/call",
    ]
    assert len(peer.sessions) == 1
    await _echo(client, deployed, "three")
    metrics = (await client.get("/metrics")).text  # what an operator sees of it
    assert "hub_upstream_sessions_idle 1.0" in metrics
    for event, count in (("resumed", 2), ("kept", 3), ("lost", 1), ("expired", 0)):
        assert f'hub_upstream_session_events_total{{event="{event}"}} {count}.0' in metrics


@pytest.mark.parametrize("settings", [{"upstream_session_idle_s": 0}], indirect=True)
async def test_with_keeping_turned_off_every_call_has_a_session_of_its_own(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    peer = await handmade_peer(era="legacy", tools=[ECHO])
    deployed = await deploy(client, database, [Upstream("up", peer.url, secret=SECRET)])
    seen = len(peer.requests)
    await _echo(client, deployed, "one")
    await _echo(client, deployed, "two")
    one_call = ["initialize", "notifications/initialized", "tools/call", "DELETE"]
    assert _since(peer, seen) == one_call * 2
    assert peer.sessions == {}
    assert "hub_upstream_session" not in (await client.get("/metrics")).text

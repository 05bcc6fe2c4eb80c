"""A call approved during its wait runs only if what allowed it still holds (stop 53).

A two-replica walk found that a call waiting for a person's decision ran, once approved, on what
its request read when it arrived: with its key revoked, its agent deleted, its grant turned
``deny`` or the deployment's entry gone meanwhile, the upstream still got the call. The approval
is now used only after the key, the agent, the deployment and the grants are read again; when
they no longer allow the call it is refused ``40300`` and the approval stays unused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI

from hub.core.db import Database
from tests.drift.support import run_drift
from tests.gateway.approvals_support import DROP, ECHO, call, decide, deployed_with
from tests.gateway.support import Deployed, Upstream
from tests.peers.fixtures import HandmadePeerStarter, SdkPeerStarter
from tests.sidecar.decisions_support import decisions_url
from tests.sidecar.direct import deploy_direct
from tests.sidecar.support import CANARY
from tests.support.stories import audit_events_written

Change = Callable[[httpx2.AsyncClient, Deployed], Awaitable[None]]


async def _ok(response: httpx2.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json() if response.content else None


async def _revoke_key(client: httpx2.AsyncClient, deployed: Deployed) -> None:
    setup, agent = deployed.setup, str(deployed.agent.principal_id)
    keys = await _ok(await client.get(setup.url("principals", agent, "keys"), **_as(deployed)))
    for key in keys["data"]:
        url = setup.url("principals", agent, "keys", key["id"])
        await _ok(await client.delete(url, **_as(deployed)), 204)


async def _delete_agent(client: httpx2.AsyncClient, deployed: Deployed) -> None:
    url = deployed.setup.url("principals", str(deployed.agent.principal_id))
    await _ok(await client.delete(url, **_as(deployed)), 204)


async def _deny_the_tool(client: httpx2.AsyncClient, deployed: Deployed) -> None:
    grant = {
        "principal_id": str(deployed.agent.principal_id),
        "resource": "tool:up.echo",
        "action": "call",
        "effect": "deny",
    }
    await _ok(await client.post(deployed.setup.url("grants"), json=grant, **_as(deployed)), 201)


async def _rename_the_tools(client: httpx2.AsyncClient, deployed: Deployed) -> None:
    """The entry now exposes the tools under their own names: ``up__echo`` is gone."""
    url = deployed.setup.url("deployments", deployed.deployment_id)
    current = (await _ok(await client.get(url, **_as(deployed))))["data"]
    entries = [{**entry, "tool_names": "plain"} for entry in current["entries"]]
    await _ok(await client.patch(url, json={"entries": entries}, **_as(deployed)))


async def _nothing(client: httpx2.AsyncClient, deployed: Deployed) -> None:
    return None


def _as(deployed: Deployed) -> dict[str, Any]:
    return {"headers": deployed.setup.admin.headers}


async def _first_pending(client: httpx2.AsyncClient, deployed: Deployed) -> str:
    """The id of the deployment's first pending approval, once the waiting call made it."""
    while True:
        listed = await client.get(
            deployed.setup.url("approvals"), params={"status": "pending"}, **_as(deployed)
        )
        if pending := listed.json()["data"]:
            return str(pending[0]["id"])
        await asyncio.sleep(0.05)


async def _approve_after(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    change: Change,
) -> tuple[dict[str, Any], int, Deployed]:
    """An ``ask`` call waits; ``change`` happens; a person approves. The call's answer, how
    many ``tools/call`` reached the upstream, and the deployment."""
    deployed, peer = await deployed_with(client, database, handmade_peer, allow_without_ask=[])
    waiting = asyncio.create_task(call(client, deployed, "echo", "while things change"))
    pending = await _first_pending(client, deployed)
    await change(client, deployed)
    assert (await decide(client, deployed, pending, "approve")).status_code == 200
    body = await waiting
    return body, len(peer.rpc_requests("tools/call")), deployed


@pytest.mark.parametrize("settings", [{"approval_wait_s": 8}], indirect=True)
@pytest.mark.parametrize(
    "change",
    [_revoke_key, _delete_agent, _deny_the_tool, _rename_the_tools],
    ids=["key_revoked", "agent_deleted", "grant_denied", "entry_renamed"],
)
async def test_a_change_during_the_wait_withdraws_the_approval(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    change: Change,
) -> None:
    body, upstream_calls, deployed = await _approve_after(client, database, handmade_peer, change)
    assert upstream_calls == 0
    error = body["error"]
    assert error["code"] == 40300, body
    assert error["message"] == "not permitted: what allowed this call changed while it waited"
    rows = await audit_events_written(database, 1, action="tool.call")
    [row] = [r for r in rows if r.outcome == "denied"]
    assert row.details["class"] == "forbidden"
    assert row.details["reason"] == "changed_while_waiting"
    assert row.details["approval_id"] is not None
    approvals = await client.get(deployed.setup.url("approvals"), **_as(deployed))
    [approval] = approvals.json()["data"]
    assert approval["status"] == "approved"  # not used: nothing ran under it


@pytest.mark.parametrize("settings", [{"approval_wait_s": 8}], indirect=True)
async def test_a_deployment_deleted_during_the_wait_ends_it_with_no_dead_approval_id(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    """Deleting the deployment deletes its approvals: the waiting call was answered
    ``approval_pending`` with the id of an approval that no longer existed."""
    deployed, peer = await deployed_with(client, database, handmade_peer, allow_without_ask=[])
    waiting = asyncio.create_task(call(client, deployed, "echo", "while it goes"))
    await _first_pending(client, deployed)
    url = deployed.setup.url("deployments", deployed.deployment_id)
    await _ok(await client.delete(url, **_as(deployed)), 204)
    body = await asyncio.wait_for(waiting, 6)  # the watch notices within a tick
    assert body["error"]["code"] == 40300, body
    assert body["error"]["message"] == (
        "not permitted: what allowed this call changed while it waited"
    )
    assert peer.rpc_requests("tools/call") == []


@pytest.mark.parametrize("settings", [{"approval_wait_s": 8}], indirect=True)
async def test_with_nothing_changed_the_approved_call_runs_once(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    body, upstream_calls, _ = await _approve_after(client, database, handmade_peer, _nothing)
    assert body["result"].get("isError") is not True, body
    assert upstream_calls == 1


@pytest.mark.parametrize("settings", [{"approval_wait_s": 8}], indirect=True)
async def test_a_direct_mode_decision_approved_after_a_change_lets_nothing_run(
    client: httpx2.AsyncClient, database: Database, sdk_peer: SdkPeerStarter
) -> None:
    """Direct mode's decision waits on the same path: approved after the tool was denied, it
    hands the sidecar no decision to run."""
    peer = await sdk_peer("stateless-json")
    upstream = Upstream("docs", peer.url, secret=CANARY, allow_without_ask=[])
    world = await deploy_direct(client, database, [upstream], {"docs"})
    deployed = world.deployed
    asked = asyncio.create_task(
        client.post(
            decisions_url(world),
            json={"wire_name": "docs__echo", "arguments": {"text": "x"}},
            headers=deployed.agent.headers,
        )
    )
    pending = await _first_pending(client, deployed)
    grant = {
        "principal_id": str(deployed.agent.principal_id),
        "resource": "tool:docs.echo",
        "action": "call",
        "effect": "deny",
    }
    await _ok(await client.post(deployed.setup.url("grants"), json=grant, **_as(deployed)), 201)
    assert (await decide(client, deployed, pending, "approve")).status_code == 200
    answer = await asked
    assert answer.status_code == 200, answer.text
    data = answer.json()["data"]
    assert data["decision_id"] is None
    assert data["error"]["code"] == 40300


@pytest.mark.parametrize("settings", [{"approval_wait_s": 8}], indirect=True)
async def test_a_tool_that_drifted_during_the_wait_does_not_run(
    app: FastAPI,
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
) -> None:
    """The person approved the definition the call was bound to; the server changed the tool
    meanwhile (``HUB_DRIFT_POLICY=ask``: not a deny, so only the bound hash tells)."""
    deployed, peer = await deployed_with(client, database, handmade_peer, allow_without_ask=[])
    waiting = asyncio.create_task(call(client, deployed, "echo", "before the change"))
    pending = await _first_pending(client, deployed)
    peer.knobs.tools = [{**ECHO, "description": "Echoes its text, and your secrets."}, DROP]
    assert await run_drift(app, database) >= 1
    assert (await decide(client, deployed, pending, "approve")).status_code == 200
    body = await waiting
    assert body["error"]["code"] == 40300, body
    assert peer.rpc_requests("tools/call") == []

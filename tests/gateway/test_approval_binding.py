"""An approval is bound to its deployment and its agent, not only to the call (SECURITY §7.28).

The same tool with the same arguments, approved for one agent's deployment, does not run for
another agent's deployment of the same server in the same tenant, nor for the same agent through
another of its deployments: each asks anew, and the approved call still runs where it was asked.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx2

from hub.core.db import Database
from tests.gateway.approvals_support import call, decide, deployed_with, pending_id
from tests.gateway.support import Deployed
from tests.peers.fixtures import HandmadePeerStarter
from tests.support.factories import Actor


async def _ok(response: httpx2.Response, status: int = 201) -> Any:
    assert response.status_code == status, response.text
    return response.json()["data"]


async def _another_deployment(
    client: httpx2.AsyncClient, deployed: Deployed, agent: Actor | None
) -> Deployed:
    """A second deployment of the same server and catalog, for ``agent`` (a new one if None)."""
    setup = deployed.setup
    admin = setup.admin.headers
    if agent is None:
        row = await _ok(
            await client.post(
                setup.url("principals"), json={"kind": "agent", "name": "other"}, headers=admin
            )
        )
        key = await _ok(
            await client.post(setup.url("principals", row["id"], "keys"), json={}, headers=admin)
        )
        agent = Actor(uuid.UUID(row["id"]), setup.tenant_id, key["key"])
        grant = {
            "principal_id": row["id"],
            "resource": "tool:up.*",
            "action": "call",
            "effect": "allow",
        }
        await _ok(await client.post(setup.url("grants"), json=grant, headers=admin))
    catalog = deployed.catalogs["up"]
    entry = {"server": "up", "catalog_version": catalog["version"], "allow_without_ask": []}
    made = await _ok(
        await client.post(
            setup.url("deployments"),
            json={"agent_id": str(agent.principal_id), "entries": [entry]},
            headers=admin,
        )
    )
    return Deployed(setup, agent, made["id"], deployed.catalogs)


async def test_an_approval_runs_only_where_it_was_asked(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    first, peer = await deployed_with(client, database, handmade_peer)
    approval = pending_id(await call(client, first, "echo", "same"))
    assert (await decide(client, first, approval, "approve")).status_code == 200
    other_agent = await _another_deployment(client, first, None)
    same_agent = await _another_deployment(client, first, first.agent)
    for elsewhere in (other_agent, same_agent):
        asked = pending_id(await call(client, elsewhere, "echo", "same"))
        assert asked != approval  # a request of its own, not the approved one
    assert peer.rpc_requests("tools/call") == []
    ran = await call(client, first, "echo", "same")  # still usable where it was given
    assert ran["result"].get("isError") is not True
    assert len(peer.rpc_requests("tools/call")) == 1

"""``POST …/grants/check`` with a ``deployment_id`` answers a tool's *effective* decision — the
one the gateway takes — with its reasons (DESIGN §14, §10.1)."""

from __future__ import annotations

import httpx2
import pytest

from hub.core.db import Database
from tests.gateway.support import Deployed, Upstream, deploy
from tests.peers.fixtures import HandmadePeerStarter

READ = {"name": "read", "inputSchema": {"type": "object"}}
WIPE = {"name": "wipe", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": True}}
OTHER = {"name": "other", "inputSchema": {"type": "object"}}


@pytest.fixture
async def deployed(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> Deployed:
    peer = await handmade_peer(era="modern", tools=[READ, WIPE, OTHER])
    return await deploy(
        client, database, [Upstream("up", peer.url, allow_without_ask=["read", "wipe"])]
    )


async def _check(
    client: httpx2.AsyncClient, deployed: Deployed, resource: str, **extra: object
) -> httpx2.Response:
    body = {
        "principal_id": str(deployed.agent.principal_id),
        "resource": resource,
        "action": "call",
        "deployment_id": deployed.deployment_id,
        **extra,
    }
    return await client.post(
        deployed.setup.url("grants", "check"), json=body, headers=deployed.setup.admin.headers
    )


@pytest.mark.parametrize(
    ("tool", "effect", "reasons"),
    [
        ("read", "allow", ["grant:allow", "allow_without_ask"]),
        ("wipe", "ask", ["grant:allow", "destructive_hint"]),
        ("other", "ask", ["grant:allow", "ask_ceiling"]),
    ],
)
async def test_the_effective_decision_and_its_reasons(
    client: httpx2.AsyncClient, deployed: Deployed, tool: str, effect: str, reasons: list[str]
) -> None:
    r = await _check(client, deployed, f"tool:up.{tool}")
    assert r.status_code == 200, r.text
    data = r.json()["data"]
    assert (data["effect"], data["grant_effect"], data["reasons"]) == (effect, "allow", reasons)


async def test_without_deployment_id_the_grant_alone_decides(
    client: httpx2.AsyncClient, deployed: Deployed
) -> None:
    r = await _check(client, deployed, "tool:up.other", deployment_id=None)
    assert r.json()["data"]["effect"] == "allow"
    assert r.json()["data"]["reasons"] is None


async def test_a_tool_the_deployment_lacks_is_404(
    client: httpx2.AsyncClient, deployed: Deployed
) -> None:
    assert (await _check(client, deployed, "tool:up.nothing")).status_code == 404


async def test_another_principal_is_404(client: httpx2.AsyncClient, deployed: Deployed) -> None:
    r = await _check(
        client, deployed, "tool:up.read", principal_id=str(deployed.setup.admin.principal_id)
    )
    assert r.status_code == 404


@pytest.mark.parametrize("resource", ["tool:up.*", "server:up"])
async def test_deployment_id_takes_one_tool(
    client: httpx2.AsyncClient, deployed: Deployed, resource: str
) -> None:
    action = "read" if resource.startswith("server") else "call"
    assert (await _check(client, deployed, resource, action=action)).status_code == 400

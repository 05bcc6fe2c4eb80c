"""Direct mode's decisions and outcome reports, made through the API for the tests of both."""

from __future__ import annotations

from typing import Any

import httpx2

from hub.core.db import Database
from tests.gateway.support import Upstream
from tests.peers.fixtures import SdkPeerStarter
from tests.sidecar.direct import DirectDeployed, deploy_direct
from tests.sidecar.support import CANARY

__all__ = ["allowed_decision", "decisions_url", "docs_world", "report"]


async def docs_world(
    client: httpx2.AsyncClient, database: Database, sdk_peer: SdkPeerStarter
) -> DirectDeployed:
    """A direct-mode deployment of one SDK peer, ``docs``, its ``echo`` allowed."""
    peer = await sdk_peer("stateless-json")
    return await deploy_direct(
        client, database, [Upstream("docs", peer.url, secret=CANARY)], {"docs"}
    )


def decisions_url(world: DirectDeployed, *parts: str) -> str:
    return world.setup.url("deployments", world.deployed.deployment_id, "decisions", *parts)


async def allowed_decision(
    client: httpx2.AsyncClient, world: DirectDeployed, arguments: dict[str, Any]
) -> tuple[dict[str, Any], str]:
    """A decision that lets ``docs__echo`` run (the sidecar runs it), and its request id."""
    answer = await client.post(
        decisions_url(world),
        json={"wire_name": "docs__echo", "arguments": arguments},
        headers=world.deployed.agent.headers,
    )
    assert answer.status_code == 200, answer.text
    data: dict[str, Any] = answer.json()["data"]
    assert data["decision_id"], data
    return data, answer.headers["x-request-id"]


async def report(
    client: httpx2.AsyncClient, world: DirectDeployed, decision_id: str
) -> httpx2.Response:
    """The sidecar's report that the call ran and succeeded."""
    return await client.post(
        decisions_url(world, decision_id, "outcome"),
        json={"outcome": "success", "upstream_ms": 1.5},
        headers=world.deployed.agent.headers,
    )

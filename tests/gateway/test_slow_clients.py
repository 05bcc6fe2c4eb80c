"""A client that sends its body slowly holds no database connection while it does (stop 43).

The agents' endpoint authenticated on a pooled connection and then read the body: five such
requests held five of the pool's connections for as long as their clients liked, and a pool's
worth of them (one agent's key was enough) would have made every other request of the replica,
for every tenant, wait for a connection. REST routes read their bodies first, and stay so.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2

from hub.core.db import Database
from tests.gateway.support import Upstream, deploy, rpc
from tests.peers.fixtures import HandmadePeerStarter

SLOW = 8


def _slowly(body: bytes, gate: asyncio.Event) -> AsyncIterator[bytes]:
    async def parts() -> AsyncIterator[bytes]:
        yield body[:5]
        await gate.wait()
        yield body[5:]

    return parts()


async def _while_slow(
    client: httpx2.AsyncClient, database: Database, url: str, body: Any, headers: dict[str, str]
) -> tuple[int, list[httpx2.Response]]:
    """Start :data:`SLOW` requests whose bodies stall after five bytes; the pool's checked-out
    connections while they stall, and their answers once the bodies are sent."""
    gate = asyncio.Event()
    sent = json.dumps(body).encode()
    headers = {**headers, "content-type": "application/json"}
    slow = [
        asyncio.create_task(client.post(url, content=_slowly(sent, gate), headers=headers))
        for _ in range(SLOW)
    ]
    # the fewest connections checked out over half a second: the hub's own background work (the
    # audit writer, a watch) holds one now and then, each stalled request would hold its own
    held = SLOW
    for _ in range(50):
        await asyncio.sleep(0.01)
        held = min(held, database.engine.pool.checkedout())  # type: ignore[attr-defined]
    gate.set()
    return held, list(await asyncio.gather(*slow))


async def test_the_endpoint_reads_a_slow_body_before_it_takes_a_connection(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    peer = await handmade_peer(era="legacy")
    deployed = await deploy(client, database, [Upstream("up", peer.url)])
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {**deployed.headers, "mcp-protocol-version": "2025-11-25"}
    held, answers = await _while_slow(client, database, deployed.url, message, headers)
    assert held < SLOW
    assert [a.status_code for a in answers] == [200] * SLOW
    assert all("tools" in a.json()["result"] for a in answers)
    # and a request with a bad key is still 401, whatever its body
    bad = {**headers, "authorization": "Bearer hub_nope"}
    refused = await client.post(deployed.url, content=b"not json", headers=bad)
    assert refused.status_code == 401
    listed = await rpc(client, deployed, "tools/list", era="2025-11-25")
    assert listed.status_code == 200


async def test_a_rest_route_reads_a_slow_body_before_it_takes_a_connection(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    peer = await handmade_peer(era="legacy")
    deployed = await deploy(client, database, [Upstream("up", peer.url)])
    setup = deployed.setup
    check = {"principal_id": str(deployed.agent.principal_id), "resource": "tool:up.x"}
    check["action"] = "call"
    url = setup.url("grants", "check")
    held, answers = await _while_slow(client, database, url, check, setup.admin.headers)
    assert held < SLOW
    assert [a.status_code for a in answers] == [200] * SLOW

"""What the tests of the agents' endpoint share: a deployment of two tools, and a request."""

from __future__ import annotations

from typing import Any

import httpx2

from hub.core.db import Database
from tests.gateway.support import Deployed, Upstream, deploy
from tests.peers.fixtures import HandmadePeerStarter

__all__ = ["ECHO", "REGION", "deploy_echo_and_region", "post", "rpc_message"]

ECHO = {
    "name": "echo",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}
REGION = {
    "name": "region",
    "inputSchema": {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
    },
}


async def deploy_echo_and_region(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> Deployed:
    """One deployment of a dual-era handmade peer ``up`` with :data:`ECHO` and :data:`REGION`."""
    peer = await handmade_peer(era="dual", tools=[ECHO, REGION])
    return await deploy(client, database, [Upstream("up", peer.url)])


def rpc_message(
    method: str, params: dict[str, Any] | None = None, request_id: Any = 1
) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if request_id is not None:
        message["id"] = request_id
    return message


async def post(
    client: httpx2.AsyncClient, deployed: Deployed, body: Any, **headers: str
) -> httpx2.Response:
    return await client.post(deployed.url, json=body, headers={**deployed.headers, **headers})

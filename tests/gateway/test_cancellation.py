"""An agent that gives up on a call cancels it, upstream included (MCP cancellation).

A reviewer's agent cancelled a six-second call after 1.5 s; the upstream tool ran to its end, in
both eras, on the endpoint and through the sidecar: a side-effecting tool acted after its agent
had stopped waiting, and the call held an egress slot until its deadline. Over Streamable HTTP a
client cancels by closing its request (2026-07-28: the server MUST treat it as cancellation; the
SDK's 2025 client closes it as it sends ``notifications/cancelled``). Here a real TCP client
closes its request to a hub served by uvicorn, and the SDK peer's ``slow`` tool says on its
output whether it finished or was cancelled; the audit row says ``cancelled``, never success.
"""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
import uvicorn
from fastapi import FastAPI

from hub.core.db import Database
from tests.gateway.support import Upstream, deploy, rpc
from tests.peers.fixtures import SdkPeer, SdkPeerStarter, default_tools
from tests.support.stories import audit_events_written

SLOW = {
    "name": "slow",
    "description": "Sleeps.",
    "inputSchema": {
        "type": "object",
        "properties": {"seconds": {"type": "number"}, "tag": {"type": "string"}},
    },
}
#: how long the tool would run: far past the wait below, so finishing cannot be mistaken
SLEEP_S = 20.0
WAIT_S = 10.0  # generous: the cancellation reaches the peer within a second on this machine


@pytest.fixture
async def served(app: FastAPI) -> AsyncIterator[str]:
    """The test's app behind a real uvicorn on a loopback port: a client can go away."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:  # noqa: ASYNC110 - uvicorn offers a flag, no event
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


async def _ended(peer: SdkPeer, tag: str) -> str:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        output = peer.log()
        for how in ("SLOW_CANCELLED", "SLOW_FINISHED"):
            if f"{how} {tag}" in output:
                return how
        await asyncio.sleep(0.05)
    return "still running"


@pytest.mark.parametrize(
    ("peer_mode", "legacy_only", "era"),
    [
        ("sse", False, "modern"),  # the hub reaches the peer on the 2026-07-28 wire
        ("sse", True, "2025-11-25"),  # a handshake session: told notifications/cancelled
    ],
)
async def test_an_agent_that_goes_away_cancels_its_call_upstream(
    client: httpx2.AsyncClient,
    database: Database,
    sdk_peer: SdkPeerStarter,
    served: str,
    peer_mode: str,
    legacy_only: bool,
    era: str,
) -> None:
    peer = await sdk_peer(peer_mode, [*default_tools(), SLOW], legacy_only=legacy_only)
    deployed = await deploy(client, database, [Upstream("up", peer.url)])
    tag = uuid.uuid4().hex
    params: dict[str, Any] = {"name": "up__slow", "arguments": {"seconds": SLEEP_S, "tag": tag}}
    async with httpx2.AsyncClient(base_url=served, timeout=30) as agent:
        # the agent's first, quick call works over the same hub
        quick = {"name": "up__slow", "arguments": {"seconds": 0, "tag": "quick"}}
        done = await rpc(agent, deployed, "tools/call", quick, era=era)
        assert done.status_code == 200, done.text
        assert done.json()["result"].get("isError") is not True, done.text
    async with httpx2.AsyncClient(base_url=served, timeout=1.0) as impatient:
        with pytest.raises(httpx2.ReadTimeout):  # it gives up, and closes the connection
            await rpc(impatient, deployed, "tools/call", params, era=era)
    assert await _ended(peer, tag) == "SLOW_CANCELLED", peer.log()[-2000:]
    rows = await audit_events_written(database, 2, action="tool.call")
    cancelled = rows[-1]
    assert cancelled.outcome == "failed"
    assert cancelled.details["reason"] == "cancelled"
    assert cancelled.details["class"] == "upstream_failed"

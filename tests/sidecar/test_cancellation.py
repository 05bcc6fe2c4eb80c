"""An agent that cancels a call through ``hub sidecar --stdio`` cancels it upstream too.

The SDK's stdio client sends ``notifications/cancelled`` when its caller gives up; the sidecar's
server cancels the call's handler, whose request to the hub is closed, and the hub cancels the
call (:mod:`hub.gateway.disconnect`) and its upstream leg. Before, the upstream tool ran to its
end. The hub's audit row (read from its SQLite file) says ``cancelled``, which the hub's own
deadline (5 s here) would have written as ``timeout``.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
import uuid
from pathlib import Path

import anyio
import httpx2
import pytest

from hub.core.db import Database
from tests.gateway.support import Upstream
from tests.gateway.test_cancellation import SLOW
from tests.peers.fixtures import SdkPeer, SdkPeerStarter, default_tools
from tests.sidecar.direct import deploy_direct
from tests.sidecar.support import Sidecar, deploy_on, live_hub, stdio_sidecar

WAIT_S = 15.0  # generous


async def _cancelled_call_reason(database: Path) -> str | None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        with sqlite3.connect(database) as conn:
            rows = conn.execute(
                "SELECT details FROM audit_events WHERE action = 'tool.call'"
            ).fetchall()
        reasons = [json.loads(details).get("reason") for (details,) in rows]
        if any(reasons):
            return str(next(r for r in reasons if r))
        await asyncio.sleep(0.1)
    return None


async def _peer_says(peer: SdkPeer, tag: str) -> str:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        for how in ("SLOW_CANCELLED", "SLOW_FINISHED"):
            if f"{how} {tag}" in peer.log():
                return how
        await asyncio.sleep(0.05)
    return "still running"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_call_cancelled_through_the_sidecar_is_cancelled_upstream(
    tmp_path: Path, sdk_peer: SdkPeerStarter, mode: str
) -> None:
    peer = await sdk_peer("sse", [*default_tools(), SLOW])
    tag = uuid.uuid4().hex
    with live_hub(tmp_path) as hub:
        deployed = await deploy_on(hub, [Upstream("docs", peer.url)])
        async with stdio_sidecar(Sidecar(hub, deployed, tmp_path), mode=mode) as mcp:
            with anyio.move_on_after(1.5):
                await mcp.call_tool("docs__slow", {"seconds": 30, "tag": tag})
                raise AssertionError("the call was not cancelled")
            # the session still works after it
            done = await mcp.call_tool("docs__echo", {"text": "after"})
            assert done.is_error is False
        assert await _peer_says(peer, tag) == "SLOW_CANCELLED", peer.log()[-2000:]
        assert await _cancelled_call_reason(tmp_path / "hub.db") == "cancelled"


async def test_a_direct_mode_call_cancelled_through_the_sidecar_is_cancelled_upstream(
    tmp_path: Path, sdk_peer: SdkPeerStarter
) -> None:
    """In direct mode the sidecar calls the upstream itself (the hub's own client, over a kept
    handshake session when the peer has one): the cancelled handler closes that request and
    tells the session, and the outcome is reported to the hub all the same."""
    peer = await sdk_peer("sse", [*default_tools(), SLOW], legacy_only=True)
    tag = uuid.uuid4().hex
    with live_hub(tmp_path) as hub:
        db = Database.from_url(hub.db_url)
        try:
            async with httpx2.AsyncClient(base_url=hub.url, timeout=30) as http:
                world = await deploy_direct(
                    http, db, [Upstream("docs", peer.url, secret="s" * 24)], {"docs"}
                )
        finally:
            await db.dispose()
        sidecar = Sidecar(
            hub, world.deployed, tmp_path, ("--mode", "direct"), sidecar_key=world.sidecar.key
        )
        async with stdio_sidecar(sidecar, mode="legacy") as mcp:
            with anyio.move_on_after(1.5):
                await mcp.call_tool("docs__slow", {"seconds": 30, "tag": tag})
                raise AssertionError("the call was not cancelled")
        assert await _peer_says(peer, tag) == "SLOW_CANCELLED", peer.log()[-2000:]
        # the sidecar reported the outcome: the hub's audit row says what became of the call
        assert await _cancelled_call_reason(tmp_path / "hub.db") == "cancelled"

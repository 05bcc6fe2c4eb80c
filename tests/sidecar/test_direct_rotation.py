"""Direct mode after a rotation: the decision names the credential's version, and a sidecar
holding a lease of an older one leases again before the call, instead of sending the old secret
for the rest of its lease (up to 300 s)."""

from __future__ import annotations

from pathlib import Path

import httpx2

from hub.core.db import Database
from tests.gateway.support import Upstream
from tests.peers.fixtures import HandmadePeerStarter
from tests.sidecar.direct import DirectDeployed, deploy_direct
from tests.sidecar.support import CANARY, LiveHub, Sidecar, live_hub, stdio_sidecar
from tests.support.stories import audit_events

ROTATED = "rotated-secret-0f1e2d3c4b5a69788796a5b4"


async def _deploy(hub: LiveHub, url: str) -> DirectDeployed:
    db = Database.from_url(hub.db_url)
    try:
        async with httpx2.AsyncClient(base_url=hub.url, timeout=30) as http:
            return await deploy_direct(http, db, [Upstream("docs", url, secret=CANARY)], {"docs"})
    finally:
        await db.dispose()


async def _rotate(hub: LiveHub, world: DirectDeployed) -> None:
    credential_id = world.deployed.credentials["docs"]
    async with httpx2.AsyncClient(base_url=hub.url, timeout=30) as http:
        rotated = await http.patch(
            world.setup.url("credentials", credential_id),
            json={"secret": ROTATED},
            headers=world.setup.admin.headers,
        )
    assert rotated.status_code == 200, rotated.text


async def test_a_rotated_secret_is_used_from_the_next_call(
    tmp_path: Path, handmade_peer: HandmadePeerStarter
) -> None:
    echo = {"name": "echo", "inputSchema": {"type": "object"}}
    peer = await handmade_peer(tools=[echo])
    with live_hub(tmp_path) as hub:
        world = await _deploy(hub, peer.url)
        sidecar = Sidecar(
            hub, world.deployed, tmp_path, ("--mode", "direct"), sidecar_key=world.sidecar.key
        )
        async with stdio_sidecar(sidecar) as mcp:
            seen = len(peer.requests)
            first = await mcp.call_tool("docs__echo", {"n": 1})
            assert not first.is_error, first
            await _rotate(hub, world)
            second = await mcp.call_tool("docs__echo", {"n": 2})
            assert not second.is_error, second
            third = await mcp.call_tool("docs__echo", {"n": 3})
            assert not third.is_error, third
        db = Database.from_url(hub.db_url)
        try:
            leases = await audit_events(db, action="credential.lease")
        finally:
            await db.dispose()
    calls = [r for r in peer.requests[seen:] if r.rpc_method == "tools/call"]
    assert [r.headers["authorization"] for r in calls] == [
        f"Bearer {CANARY}",
        f"Bearer {ROTATED}",
        f"Bearer {ROTATED}",
    ]
    assert len(leases) == 2  # leased once for each version, not once per call

"""``hub_approvals_pending`` (DESIGN §11): approvals waiting for a person, over every tenant, read
from the database when ``/metrics`` is scraped — at most every 30 s, so a scrape in between
answers from memory."""

from __future__ import annotations

import httpx2

from hub.core.db import Database
from hub.core.settings import Settings
from tests.conftest import ClockControl
from tests.gateway.support import Deployed, Upstream, deploy, rpc
from tests.peers.fixtures import HandmadePeerStarter
from tests.support.scrape import scraped

ECHO = {
    "name": "echo",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}


async def _ask(client: httpx2.AsyncClient, deployed: Deployed, text: str) -> str:
    params = {"name": "up__echo", "arguments": {"text": text}}
    result = (await rpc(client, deployed, "tools/call", params)).json()["result"]
    assert result["_meta"]["io.mcphub/error"]["class"] == "approval_pending"
    return str(result["_meta"]["io.mcphub/approval"]["id"])


async def test_pending_approvals_are_counted_over_every_tenant(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    clock_control: ClockControl,
    settings: Settings,
) -> None:
    peer = await handmade_peer(era="modern", tools=[ECHO])
    ours = await deploy(client, database, [Upstream("up", peer.url, allow_without_ask=[])])
    theirs = await deploy(client, database, [Upstream("up", peer.url, allow_without_ask=[])])
    assert ours.setup.tenant_id != theirs.setup.tenant_id
    assert await scraped(client, "hub_approvals_pending") == 0

    first = await _ask(client, ours, "one")
    await _ask(client, ours, "two")
    await _ask(client, ours, "two")  # the identical pending approval, reused: not counted twice
    await _ask(client, theirs, "three")
    assert await scraped(client, "hub_approvals_pending") == 0  # read under 30 s ago
    clock_control.advance(31)
    assert await scraped(client, "hub_approvals_pending") == 3

    decided = await client.post(
        ours.setup.url("approvals", first, "decision"),
        json={"decision": "approve"},
        headers=ours.setup.admin.headers,
    )
    assert decided.status_code == 200, decided.text
    clock_control.advance(31)
    assert await scraped(client, "hub_approvals_pending") == 2  # approved: no longer waiting

    clock_control.advance(settings.approval_ttl_s)
    assert await scraped(client, "hub_approvals_pending") == 0  # expired: no one can decide them
    text = (await client.get("/metrics")).text
    for tenant in (ours, theirs):
        assert str(tenant.setup.tenant_id) not in text

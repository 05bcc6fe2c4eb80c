"""``…/catalogs/latest`` names the newest version (DESIGN §14)."""

from __future__ import annotations

from typing import Any

import httpx2

from hub.core.db import Database
from tests.peers.fixtures import HandmadePeerStarter
from tests.support.stories import make_tenant_admin


def _tool(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": {"type": "object"}}


async def test_latest_is_404_before_a_snapshot_then_the_newest_version(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    peer = await handmade_peer(era="modern", tools=[_tool("x", "one")])
    setup = await make_tenant_admin(database)
    headers = setup.admin.headers
    await client.post(setup.url("servers"), json={"handle": "p", "url": peer.url}, headers=headers)
    before = await client.get(setup.url("servers", "p", "catalogs", "latest"), headers=headers)
    assert before.status_code == 404
    assert "snapshot" in before.json()["error"]["message"]
    for description in ["one", "two"]:
        peer.knobs.tools = [_tool("x", description)]
        await client.post(setup.url("servers", "p", "catalogs"), headers=headers)
    latest = await client.get(setup.url("servers", "p", "catalogs", "latest"), headers=headers)
    assert latest.status_code == 200
    assert latest.json()["data"]["version"] == 2
    assert latest.json()["data"]["tools"][0]["description"] == "two"
    unknown = await client.get(setup.url("servers", "nope", "catalogs", "latest"), headers=headers)
    assert unknown.status_code == 404

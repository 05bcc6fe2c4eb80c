"""``…/catalogs/latest`` names the newest version (DESIGN §14)."""

from __future__ import annotations

from typing import Any

import httpx2

from hub.core.db import Database
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade import HandmadePeer
from tests.support.stories import TenantAdmin, make_tenant_admin


def _tool(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": {"type": "object"}}


async def _server_p(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> tuple[HandmadePeer, TenantAdmin]:
    """A tenant admin and its server ``p``: a peer of one tool, not snapshotted yet."""
    peer = await handmade_peer(era="modern", tools=[_tool("x", "one")])
    setup = await make_tenant_admin(database)
    headers = setup.admin.headers
    await client.post(setup.url("servers"), json={"handle": "p", "url": peer.url}, headers=headers)
    return peer, setup


async def test_latest_is_404_before_a_snapshot_then_the_newest_version(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    peer, setup = await _server_p(client, database, handmade_peer)
    headers = setup.admin.headers
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


async def test_latest_diff_reads_like_the_numbered_diff(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    peer, setup = await _server_p(client, database, handmade_peer)
    headers = setup.admin.headers
    before = await client.get(
        setup.url("servers", "p", "catalogs", "latest", "diff"),
        params={"from": "1"},
        headers=headers,
    )
    assert before.status_code == 404, before.text
    assert "snapshot" in before.json()["error"]["message"]
    for description in ["one", "two"]:
        peer.knobs.tools = [_tool("x", description)]
        made = await client.post(setup.url("servers", "p", "catalogs"), headers=headers)
        assert made.status_code == 201, made.text

    async def diff(version: str) -> httpx2.Response:
        url = setup.url("servers", "p", "catalogs", version, "diff")
        return await client.get(url, params={"from": "1"}, headers=headers)

    latest, numbered = await diff("latest"), await diff("2")
    assert latest.status_code == 200, latest.text
    assert latest.json() == numbered.json()
    assert latest.json()["data"]["to"] == 2
    for word in ("Latest", "3", "0"):
        assert (await diff(word)).status_code == 404, word


async def test_snapshot_takes_no_body_or_an_empty_object_only(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    _, setup = await _server_p(client, database, handmade_peer)
    headers = setup.admin.headers
    url = setup.url("servers", "p", "catalogs")
    json_type = {**headers, "content-type": "application/json"}
    for content in (b'{"x": 1}', b"{not json", b"[]", b'"x"'):
        refused = await client.post(url, content=content, headers=json_type)
        assert refused.status_code == 400, (content, refused.text)
        assert refused.json()["error"]["request_id"]
    assert (await client.get(f"{url}/latest", headers=headers)).status_code == 404  # none made
    assert (await client.post(url, json={}, headers=headers)).status_code == 201  # the CLI's
    assert (await client.post(url, headers=headers)).status_code == 200  # no body: unchanged

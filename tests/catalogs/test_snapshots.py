"""Catalog snapshots of real peers: versions, drift diffs, no duplicate versions when racing."""

from __future__ import annotations

import asyncio
import copy
import uuid
from typing import Any

import httpx2

from hub.core.db import Database
from tests.peers.fixtures import HandmadePeerStarter, SdkPeerStarter, default_tools
from tests.support.factories import Actor, make_principal, make_tenant


async def _setup(
    client: httpx2.AsyncClient, database: Database, url: str, handle: str = "peer"
) -> tuple[str, Actor]:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    created = await client.post(
        f"/tenants/{tenant.id}/servers", json={"handle": handle, "url": url}, headers=admin.headers
    )
    assert created.status_code == 201, created.text
    return f"/tenants/{tenant.id}/servers/{handle}", admin


async def test_schema_drift_on_a_real_sdk_peer(
    client: httpx2.AsyncClient, database: Database, sdk_peer: SdkPeerStarter
) -> None:
    tools = default_tools()
    peer = await sdk_peer("stateless", tools=tools)
    server_url, admin = await _setup(client, database, peer.url)
    first = await client.post(f"{server_url}/catalogs", headers=admin.headers)
    assert first.status_code == 201, first.text
    v1 = first.json()["data"]
    assert v1["version"] == 1
    assert v1["created"] is True
    assert [t["name"] for t in v1["tools"]] == sorted(t["name"] for t in tools)
    assert set(v1["tool_hashes"]) == {t["name"] for t in tools}
    server = (await client.get(server_url, headers=admin.headers)).json()["data"]
    assert server["era"] == "modern"
    assert server["protocol_version"] == "2026-07-28"

    changed = copy.deepcopy(tools)
    target = next(t for t in changed if t["name"] == "add")
    target_before = copy.deepcopy(target["inputSchema"])
    target["inputSchema"]["properties"]["c"] = {"type": "integer"}
    peer.set_tools(changed)
    second = await client.post(f"{server_url}/catalogs", headers=admin.headers)
    assert second.status_code == 201, second.text
    v2 = second.json()["data"]
    assert v2["version"] == 2
    assert v2["tool_hashes"]["add"] != v1["tool_hashes"]["add"]
    assert v2["tool_hashes"]["echo"] == v1["tool_hashes"]["echo"]
    diff = await client.get(f"{server_url}/catalogs/2/diff?from=1", headers=admin.headers)
    assert diff.json()["data"] == {
        "from": 1,
        "to": 2,
        "added": [],
        "removed": [],
        "changed": [
            {
                "name": "add",
                "fields": ["input_schema"],
                "before": {"input_schema": target_before},
                "after": {"input_schema": target["inputSchema"]},
            }
        ],
    }
    third = await client.post(f"{server_url}/catalogs", headers=admin.headers)
    assert third.status_code == 200
    assert third.json()["data"]["version"] == 2
    assert third.json()["data"]["created"] is False
    listed = await client.get(f"{server_url}/catalogs", headers=admin.headers)
    assert [c["version"] for c in listed.json()["data"]] == [1, 2]
    assert "tools" not in listed.json()["data"][0]
    got = await client.get(f"{server_url}/catalogs/1", headers=admin.headers)
    assert got.json()["data"]["sha256"] == v1["sha256"]
    for missing in ["3", "0", "abc", "-1"]:
        response = await client.get(f"{server_url}/catalogs/{missing}", headers=admin.headers)
        assert response.status_code == 404, missing
    bad_from = await client.get(f"{server_url}/catalogs/2/diff?from=x", headers=admin.headers)
    assert bad_from.status_code == 400


def _tool(name: str, description: str = "") -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": {"type": "object"}}


async def test_a_to_b_to_a_makes_version_three(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    peer = await handmade_peer(era="modern", tools=[_tool("x", "A")])
    server_url, admin = await _setup(client, database, peer.url)
    versions = []
    for description in ["A", "B", "A"]:
        peer.knobs.tools = [_tool("x", description)]
        response = await client.post(f"{server_url}/catalogs", headers=admin.headers)
        versions.append((response.status_code, response.json()["data"]["version"]))
    assert versions == [(201, 1), (201, 2), (201, 3)]
    diff = await client.get(f"{server_url}/catalogs/3/diff?from=1", headers=admin.headers)
    assert diff.json()["data"]["changed"] == []


async def test_concurrent_snapshots_never_duplicate_a_version(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    peer = await handmade_peer(era="modern", tools=[_tool("x")])
    server_url, admin = await _setup(client, database, peer.url, handle=f"c{uuid.uuid4().hex[:6]}")
    counter = {"n": 0}

    def vary(_request: Any) -> None:
        counter["n"] += 1
        peer.knobs.tools = [_tool("x", f"v{counter['n'] // 4}")]
        return None

    peer.override("tools/list", vary)
    responses = await asyncio.gather(
        *(client.post(f"{server_url}/catalogs", headers=admin.headers) for _ in range(6))
    )
    assert all(r.status_code in (200, 201) for r in responses), [r.text for r in responses]
    listed = await client.get(f"{server_url}/catalogs", headers=admin.headers)
    versions = [c["version"] for c in listed.json()["data"]]
    assert versions == list(range(1, len(versions) + 1))
    assert len({c["sha256"] for c in listed.json()["data"]}) >= 1


async def test_snapshot_failure_is_422_and_stores_nothing(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    from tests.peers.handmade_wire import Reply

    peer = await handmade_peer(era="modern", tools=[_tool("x")])
    server_url, admin = await _setup(client, database, peer.url)
    peer.override("*", Reply(status=500, body="boom"))
    response = await client.post(f"{server_url}/catalogs", headers=admin.headers)
    assert response.status_code == 422
    assert response.json()["error"]["reason"] == "handshake_failed"
    listed = await client.get(f"{server_url}/catalogs", headers=admin.headers)
    assert listed.json()["data"] == []


async def test_a_servers_revoked_credential_is_422_with_its_cause(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    """The caller named the server, not the credential: it is told why the server's own
    credential cannot be used (DESIGN §9), and nothing goes upstream."""
    peer = await handmade_peer(era="modern")
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    base = f"/tenants/{tenant.id}"
    origin = peer.url.removesuffix("/mcp")
    made = await client.post(
        f"{base}/credentials",
        json={"name": "k", "type": "api_key", "api_base_url": origin, "secret": "s" * 24},
        headers=admin.headers,
    )
    assert made.status_code == 201, made.text
    credential_id = made.json()["data"]["id"]
    server = {"handle": "peer", "url": peer.url, "credential_id": credential_id}
    added = await client.post(f"{base}/servers", json=server, headers=admin.headers)
    assert added.status_code == 201, added.text
    revoked = await client.delete(f"{base}/credentials/{credential_id}", headers=admin.headers)
    assert revoked.status_code in (200, 204), revoked.text
    seen = len(peer.requests)
    refused = await client.post(f"{base}/servers/peer/catalogs", headers=admin.headers)
    assert refused.status_code == 422, refused.text
    error = refused.json()["error"]
    assert (error["code"], error["reason"]) == ("discovery_failed", "credential_unavailable")
    assert error["message"] == "the server's credential cannot be used: it is revoked"
    assert len(peer.requests) == seen

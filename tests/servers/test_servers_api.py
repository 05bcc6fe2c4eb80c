"""Servers: handles, validation shared with discovery, references from deployments."""

from __future__ import annotations

import httpx2

from hub.core.db import Database
from tests.support.factories import (
    Actor,
    make_catalog,
    make_principal,
    make_server,
    make_tenant,
    tool,
)


async def _admin(database: Database) -> tuple[str, Actor]:
    tenant = await make_tenant(database)
    return str(tenant.id), await make_principal(database, tenant.id)


async def test_register_get_list_patch_delete(
    client: httpx2.AsyncClient, database: Database
) -> None:
    t, admin = await _admin(database)
    url = f"/tenants/{t}/servers"
    created = await client.post(
        url, json={"handle": "linear", "url": "https://mcp.linear.app/mcp"}, headers=admin.headers
    )
    assert created.status_code == 201, created.text
    server = created.json()["data"]
    assert server["handle"] == "linear"
    assert server["era"] is None
    got = await client.get(f"{url}/linear", headers=admin.headers)
    assert got.json()["data"] == server
    patched = await client.patch(
        f"{url}/linear", json={"url": "https://mcp.linear.app/v2"}, headers=admin.headers
    )
    assert patched.json()["data"]["url"] == "https://mcp.linear.app/v2"
    listed = await client.get(url, headers=admin.headers)
    assert [s["handle"] for s in listed.json()["data"]] == ["linear"]
    assert (await client.delete(f"{url}/linear", headers=admin.headers)).status_code == 204
    assert (await client.get(f"{url}/linear", headers=admin.headers)).status_code == 404
    reuse = await client.post(
        url, json={"handle": "linear", "url": "https://other.example.com"}, headers=admin.headers
    )
    assert reuse.status_code == 409


async def test_bad_input_is_a_clear_4xx(client: httpx2.AsyncClient, database: Database) -> None:
    t, admin = await _admin(database)
    other_t, other_admin = await _admin(database)
    url = f"/tenants/{t}/servers"
    ok = {"handle": "gh", "url": "https://api.github.com/mcp"}
    for handle in ["with.dot", "Upper", "-lead", "", "a" * 64, "sp ace"]:
        r = await client.post(url, json={**ok, "handle": handle}, headers=admin.headers)
        assert r.status_code == 400, handle
    for bad_url in ["http://api.github.com/mcp", "https://u:p@x.example", "https://x.example/#a"]:
        r = await client.post(url, json={**ok, "url": bad_url}, headers=admin.headers)
        assert r.status_code == 400, bad_url
    assert (await client.post(url, json=ok, headers=admin.headers)).status_code == 201
    assert (await client.post(url, json=ok, headers=admin.headers)).status_code == 409
    foreign = await client.post(
        f"/tenants/{other_t}/credentials",
        json={"name": "c", "type": "api_key", "secret": "s", "api_base_url": "https://x.example"},
        headers=other_admin.headers,
    )
    r = await client.post(
        url,
        json={
            "handle": "x",
            "url": "https://x.example",
            "credential_id": foreign.json()["data"]["id"],
        },
        headers=admin.headers,
    )
    assert r.status_code == 404
    mine = await client.post(
        f"/tenants/{t}/credentials",
        json={"name": "c", "type": "api_key", "secret": "s", "api_base_url": "https://x.example"},
        headers=admin.headers,
    )
    cid = mine.json()["data"]["id"]
    off_pin = await client.post(
        url,
        json={"handle": "y", "url": "https://elsewhere.example/mcp", "credential_id": cid},
        headers=admin.headers,
    )
    assert off_pin.status_code == 422
    assert off_pin.json()["error"]["reason"] == "origin_refused"
    on_pin = await client.post(
        url,
        json={"handle": "y", "url": "https://x.example/mcp", "credential_id": cid},
        headers=admin.headers,
    )
    assert on_pin.status_code == 201


async def test_referenced_server_cannot_move_or_go(
    client: httpx2.AsyncClient, database: Database
) -> None:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    agent = await make_principal(database, tenant.id, role="agent", kind="agent")
    server_id = await make_server(database, tenant.id, "linear")
    await make_catalog(database, tenant.id, server_id, [tool("search")])
    deployed = await client.post(
        f"/tenants/{tenant.id}/deployments",
        json={
            "agent_id": str(agent.principal_id),
            "entries": [{"server": "linear", "catalog_version": 1}],
        },
        headers=admin.headers,
    )
    assert deployed.status_code == 201, deployed.text
    url = f"/tenants/{tenant.id}/servers/linear"
    moved = await client.patch(url, json={"url": "https://new.example/mcp"}, headers=admin.headers)
    assert moved.status_code == 409
    assert (await client.delete(url, headers=admin.headers)).status_code == 409
    gone = await client.delete(
        f"/tenants/{tenant.id}/deployments/{deployed.json()['data']['id']}", headers=admin.headers
    )
    assert gone.status_code == 204
    assert (await client.delete(url, headers=admin.headers)).status_code == 204

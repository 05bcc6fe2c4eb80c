"""Tenants: the platform admin's routes."""

from __future__ import annotations

import httpx2

from hub.core.db import Database
from tests.support.factories import make_platform_admin, make_principal, make_tenant


async def test_platform_admin_manages_tenants(
    client: httpx2.AsyncClient, database: Database
) -> None:
    admin = await make_platform_admin(database)
    created = await client.post(
        "/tenants", json={"slug": "acme", "name": "Acme"}, headers=admin.headers
    )
    assert created.status_code == 201
    tenant = created.json()["data"]
    assert set(tenant) == {"id", "slug", "name", "status", "created_at"}
    assert tenant["status"] == "active"
    assert tenant["created_at"].endswith(("Z", "+00:00"))
    dup = await client.post("/tenants", json={"slug": "acme", "name": "X"}, headers=admin.headers)
    assert dup.status_code == 409
    bad = await client.post("/tenants", json={"slug": "Not OK", "name": "X"}, headers=admin.headers)
    assert bad.status_code == 400
    got = await client.get(f"/tenants/{tenant['id']}", headers=admin.headers)
    assert got.json()["data"] == tenant
    patched = await client.patch(
        f"/tenants/{tenant['id']}", json={"name": "Acme Inc"}, headers=admin.headers
    )
    assert patched.json()["data"]["name"] == "Acme Inc"
    listed = await client.get("/tenants", headers=admin.headers)
    assert [t["slug"] for t in listed.json()["data"]] == ["acme"]
    assert listed.json()["next_cursor"] is None
    assert (await client.get("/tenants/not-a-uuid", headers=admin.headers)).status_code == 404


async def test_disabling_a_tenant_stops_its_keys(
    client: httpx2.AsyncClient, database: Database
) -> None:
    admin = await make_platform_admin(database)
    tenant = await make_tenant(database)
    member = await make_principal(database, tenant.id)
    assert (await client.get("/whoami", headers=member.headers)).status_code == 200
    deleted = await client.delete(f"/tenants/{tenant.id}", headers=admin.headers)
    assert deleted.status_code == 204
    assert (await client.get("/whoami", headers=member.headers)).status_code == 401
    still = await client.get(f"/tenants/{tenant.id}", headers=admin.headers)
    assert still.json()["data"]["status"] == "disabled"
    enabled = await client.patch(
        f"/tenants/{tenant.id}", json={"status": "active"}, headers=admin.headers
    )
    assert enabled.status_code == 200
    assert (await client.get("/whoami", headers=member.headers)).status_code == 200


async def test_tenant_principals_get_403_on_platform_routes(
    client: httpx2.AsyncClient, database: Database
) -> None:
    tenant = await make_tenant(database)
    member = await make_principal(database, tenant.id)
    for method, url in [
        ("GET", "/tenants"),
        ("POST", "/tenants"),
        ("GET", f"/tenants/{tenant.id}"),
        ("PATCH", f"/tenants/{tenant.id}"),
        ("DELETE", f"/tenants/{tenant.id}"),
        ("GET", "/platform/keys"),
    ]:
        response = await client.request(method, url, headers=member.headers, json={})
        assert response.status_code == 403, (method, url)

"""A tenant's slug names it wherever a path has ``{t}`` (DESIGN §14); no slug looks like a UUID."""

from __future__ import annotations

import httpx2
import pytest

from hub.core.db import Database
from tests.support.factories import make_platform_admin, make_principal, make_tenant


async def test_a_tenant_admin_uses_its_slug_in_tenant_paths(
    client: httpx2.AsyncClient, database: Database
) -> None:
    tenant = await make_tenant(database, slug="acme")
    admin = await make_principal(database, tenant.id)
    by_slug = await client.get("/tenants/acme/principals", headers=admin.headers)
    by_id = await client.get(f"/tenants/{tenant.id}/principals", headers=admin.headers)
    assert by_slug.status_code == 200, by_slug.text
    assert by_slug.json() == by_id.json()
    made = await client.post(
        "/tenants/acme/principals", json={"kind": "agent", "name": "bot"}, headers=admin.headers
    )
    assert made.status_code == 201


async def test_another_tenants_slug_reads_404(
    client: httpx2.AsyncClient, database: Database
) -> None:
    await make_tenant(database, slug="alpha")
    bravo = await make_tenant(database, slug="bravo")
    bravo_admin = await make_principal(database, bravo.id)
    for path in ["/tenants/alpha/principals", "/tenants/nobody-has-this/principals"]:
        response = await client.get(path, headers=bravo_admin.headers)
        assert response.status_code == 404, path
        assert "alpha" not in response.text


async def test_the_platform_admin_names_tenants_by_slug(
    client: httpx2.AsyncClient, database: Database
) -> None:
    admin = await make_platform_admin(database)
    tenant = await make_tenant(database, slug="acme")
    got = await client.get("/tenants/acme", headers=admin.headers)
    assert got.json()["data"]["id"] == str(tenant.id)
    listed = await client.get("/tenants/acme/principals", headers=admin.headers)
    assert listed.status_code == 200
    renamed = await client.patch("/tenants/acme", json={"slug": "acme-corp"}, headers=admin.headers)
    assert renamed.json()["data"]["slug"] == "acme-corp"
    assert (await client.get("/tenants/acme", headers=admin.headers)).status_code == 404
    assert (await client.delete("/tenants/acme-corp", headers=admin.headers)).status_code == 204


async def test_renaming_to_a_taken_slug_is_409(
    client: httpx2.AsyncClient, database: Database
) -> None:
    admin = await make_platform_admin(database)
    await make_tenant(database, slug="taken")
    await make_tenant(database, slug="mine")
    response = await client.patch("/tenants/mine", json={"slug": "taken"}, headers=admin.headers)
    assert response.status_code == 409


@pytest.mark.parametrize(
    "slug",
    [
        "7c9e6679-7425-40de-944b-e07fc1f90ae7",  # canonical
        "7c9e6679742540de944be07fc1f90ae7",  # 32 hex digits, no hyphens
        "0123-4567-89ab-cdef-0123-4567-89ab-cdef",  # hyphens anywhere still parse
        "deadbeef-dead-beef-dead-beefdeadbeef",
    ],
)
async def test_a_uuid_shaped_slug_is_400_at_create_and_rename(
    client: httpx2.AsyncClient, database: Database, slug: str
) -> None:
    admin = await make_platform_admin(database)
    created = await client.post("/tenants", json={"slug": slug, "name": "X"}, headers=admin.headers)
    assert created.status_code == 400, created.text
    assert "UUID" in created.json()["error"]["details"][0]["msg"]
    await make_tenant(database, slug="plain")
    renamed = await client.patch("/tenants/plain", json={"slug": slug}, headers=admin.headers)
    assert renamed.status_code == 400


async def test_other_spellings_of_a_tenant_id_still_read_404(
    client: httpx2.AsyncClient, database: Database
) -> None:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    for spelling in [str(tenant.id).upper(), tenant.id.hex, f"{{{tenant.id}}}"]:
        response = await client.get(f"/tenants/{spelling}/principals", headers=admin.headers)
        assert response.status_code == 404, spelling


async def test_the_slug_platform_is_reserved_at_create_and_rename(
    client: httpx2.AsyncClient, database: Database
) -> None:
    # `hub audit verify --local` labels the platform's chain `platform`, next to the tenants'
    # slugs: a tenant of that slug printed a second, indistinguishable `platform:` line
    admin = await make_platform_admin(database)
    created = await client.post(
        "/tenants", json={"slug": "platform", "name": "X"}, headers=admin.headers
    )
    assert created.status_code == 400, created.text
    assert "reserved" in created.json()["error"]["details"][0]["msg"]
    await make_tenant(database, slug="plain")
    renamed = await client.patch("/tenants/plain", json={"slug": "platform"}, headers=admin.headers)
    assert renamed.status_code == 400, renamed.text
    near = await client.post(
        "/tenants", json={"slug": "platform-team", "name": "X"}, headers=admin.headers
    )
    assert near.status_code == 201, near.text

"""Racing writers past a uniqueness check: the database decides, the loser gets 409, never 500."""

from __future__ import annotations

import asyncio

import httpx2

from hub.core.db import Database
from tests.support.factories import make_platform_admin, make_principal, make_tenant


async def test_same_slug_or_handle_at_once_is_one_201_and_409s(
    client: httpx2.AsyncClient, database: Database
) -> None:
    admin = await make_platform_admin(database)
    tenants = await asyncio.gather(
        *(
            client.post("/tenants", json={"slug": "race", "name": "R"}, headers=admin.headers)
            for _ in range(6)
        )
    )
    assert sorted(r.status_code for r in tenants) == [201] + [409] * 5
    tenant = await make_tenant(database)
    owner = await make_principal(database, tenant.id)
    servers = await asyncio.gather(
        *(
            client.post(
                f"/tenants/{tenant.id}/servers",
                json={"handle": "same", "url": "https://s.example.com/mcp"},
                headers=owner.headers,
            )
            for _ in range(6)
        )
    )
    assert sorted(r.status_code for r in servers) == [201] + [409] * 5
    for response in [*tenants, *servers]:
        if response.status_code == 409:
            assert response.json()["error"]["code"] == "conflict"

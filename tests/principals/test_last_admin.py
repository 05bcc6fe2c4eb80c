"""A tenant keeps at least one active tenant_admin: deleting the last one is 409 ``last_admin``,
whoever asks (itself, another admin, the platform admin), and two admins deleting each other at
once leave one of them."""

from __future__ import annotations

import asyncio

import httpx2

from hub.core.db import Database
from tests.support.factories import Actor, make_platform_admin, make_principal, make_tenant


def _url(tenant_id: object, principal: Actor) -> str:
    return f"/tenants/{tenant_id}/principals/{principal.principal_id}"


def _kept(response: httpx2.Response) -> None:
    assert response.status_code == 409, response.text
    error = response.json()["error"]
    assert error["reason"] == "last_admin"
    assert "at least one active tenant_admin" in error["message"]


async def _status(client: httpx2.AsyncClient, url: str, headers: dict[str, str]) -> str:
    read = await client.get(url, headers=headers)
    assert read.status_code == 200, read.text
    return str(read.json()["data"]["status"])


async def test_the_last_admin_is_kept_whoever_asks(
    client: httpx2.AsyncClient, database: Database
) -> None:
    tenant = await make_tenant(database)
    owner = await make_principal(database, tenant.id, name="owner")
    platform = await make_platform_admin(database)
    _kept(await client.delete(_url(tenant.id, owner), headers=owner.headers))
    _kept(await client.delete(_url(tenant.id, owner), headers=platform.headers))
    assert await _status(client, _url(tenant.id, owner), owner.headers) == "active"
    # a second admin: either may go, then the other is the last
    second = await make_principal(database, tenant.id, name="second")
    gone = await client.delete(_url(tenant.id, owner), headers=second.headers)
    assert gone.status_code == 204, gone.text
    _kept(await client.delete(_url(tenant.id, second), headers=second.headers))
    assert await _status(client, _url(tenant.id, second), second.headers) == "active"
    # anyone else may still be deleted, and a disabled admin counts for nothing
    deployer = await make_principal(database, tenant.id, role="deployer", name="dee")
    assert (
        await client.delete(_url(tenant.id, deployer), headers=second.headers)
    ).status_code == 204
    again = await client.delete(_url(tenant.id, owner), headers=second.headers)
    assert again.status_code == 204  # already disabled: nothing is removed


async def test_two_admins_deleting_each_other_at_once_leave_one(
    client: httpx2.AsyncClient, database: Database
) -> None:
    """Each round a tenant of two admins, each deleting the other at the same moment: one
    request wins (204); the other is kept as the last (409), or its key is already disabled
    when it is read (401). Never both."""
    for _ in range(8):
        tenant = await make_tenant(database)
        a = await make_principal(database, tenant.id, name="a")
        b = await make_principal(database, tenant.id, name="b")
        answers = await asyncio.gather(
            client.delete(_url(tenant.id, b), headers=a.headers),
            client.delete(_url(tenant.id, a), headers=b.headers),
        )
        statuses = sorted(r.status_code for r in answers)
        assert statuses in ([204, 401], [204, 409]), [r.text for r in answers]
        alive = [(await client.get("/whoami", headers=p.headers)).status_code for p in (a, b)]
        assert sorted(alive) == [200, 401]

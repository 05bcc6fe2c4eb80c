"""No lower role can lock every tenant admin out (DESIGN §8 "Role protection"; SECURITY §7.42).

A principal that is not a ``tenant_admin`` may not create, change or delete the grants, keys or
principal row of a ``tenant_admin``, even holding ``principal:*`` and ``grant:*`` with ``*``; a
``tenant_admin`` may always delete any grant of its tenant, whatever denies it holds.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import httpx2
import pytest
from sqlalchemy import select

from hub.core.db import Database
from hub.models import ApiKey, Grant, Principal
from tests.support.databases import owner_session
from tests.support.factories import Actor, make_principal, make_tenant, scope_of


@dataclass(frozen=True)
class Tenant:
    id: uuid.UUID
    admin: Actor
    manager: Actor  # principal:* and grant:* with "*": all but the tenant_admin role

    def url(self, *parts: object) -> str:
        return "/".join([f"/tenants/{self.id}", *(str(p) for p in parts)])


async def _grant(
    db: Database, tenant: uuid.UUID, principal: uuid.UUID, resource: str, action: str, effect: str
) -> uuid.UUID:
    grant_id = uuid.uuid4()
    async with owner_session(db) as session:
        session.add(
            Grant(
                id=grant_id,
                tenant_id=scope_of(tenant).value,
                principal_id=principal,
                resource=resource,
                action=action,
                effect=effect,
                conditions={},
            )
        )
    return grant_id


@pytest.fixture
async def tenant(database: Database) -> Tenant:
    row = await make_tenant(database)
    admin = await make_principal(database, row.id, role="tenant_admin", name="admin")
    manager = await make_principal(database, row.id, role=None, name="manager")
    for resource in ("principal:*", "grant:*"):
        await _grant(database, row.id, manager.principal_id, resource, "*", "allow")
    return Tenant(row.id, admin, manager)


async def _admin_grant(database: Database, tenant: Tenant) -> uuid.UUID:
    async with owner_session(database, write=False) as session:
        return (
            await session.execute(
                select(Grant.id).where(
                    Grant.principal_id == tenant.admin.principal_id, Grant.resource == "*"
                )
            )
        ).scalar_one()


async def _admin_key(database: Database, tenant: Tenant) -> uuid.UUID:
    async with owner_session(database, write=False) as session:
        return (
            await session.execute(
                select(ApiKey.id).where(ApiKey.principal_id == tenant.admin.principal_id)
            )
        ).scalar_one()


@pytest.mark.parametrize("effect", ["deny", "ask"])
async def test_non_admin_cannot_grant_anything_to_a_tenant_admin(
    client: httpx2.AsyncClient, database: Database, tenant: Tenant, effect: str
) -> None:
    r = await client.post(
        tenant.url("grants"),
        json={
            "principal_id": str(tenant.admin.principal_id),
            "resource": "*",
            "action": "write",
            "effect": effect,
        },
        headers=tenant.manager.headers,
    )
    assert r.status_code == 403, r.text
    async with owner_session(database, write=False) as session:
        rows = (
            await session.execute(
                select(Grant).where(Grant.principal_id == tenant.admin.principal_id)
            )
        ).all()
    assert len(rows) == 1  # the template's *:* only


async def test_non_admin_cannot_delete_a_tenant_admins_grant(
    client: httpx2.AsyncClient, database: Database, tenant: Tenant
) -> None:
    grant = await _admin_grant(database, tenant)
    r = await client.delete(tenant.url("grants", grant), headers=tenant.manager.headers)
    assert r.status_code == 403
    assert (await client.get("/whoami", headers=tenant.admin.headers)).json()["data"]["grants"]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("DELETE", ("principals", "{admin}"), None),
        ("PATCH", ("principals", "{admin}"), {"name": "renamed"}),
        ("POST", ("principals", "{admin}", "keys"), {}),
        ("DELETE", ("principals", "{admin}", "keys", "{key}"), None),
        (
            "POST",
            ("principals", "{admin}", "keys", "{key}", "roll"),
            {"old_key_expires_at": "2099-01-01T00:00:00Z"},
        ),
    ],
)
async def test_non_admin_cannot_touch_a_tenant_admins_row_or_keys(
    client: httpx2.AsyncClient,
    database: Database,
    tenant: Tenant,
    method: str,
    path: tuple[str, ...],
    body: dict[str, object] | None,
) -> None:
    key = await _admin_key(database, tenant)
    parts = [
        p.replace("{admin}", str(tenant.admin.principal_id)).replace("{key}", str(key))
        for p in path
    ]
    r = await client.request(method, tenant.url(*parts), json=body, headers=tenant.manager.headers)
    assert r.status_code == 403, r.text
    async with owner_session(database, write=False) as session:
        admin = await session.get(Principal, tenant.admin.principal_id)
        keys = (
            (
                await session.execute(
                    select(ApiKey).where(ApiKey.principal_id == tenant.admin.principal_id)
                )
            )
            .scalars()
            .all()
        )
    assert admin is not None
    assert admin.disabled_at is None
    assert admin.name == "admin"
    assert [(k.revoked_at, k.expires_at) for k in keys] == [(None, None)]
    assert (await client.get("/whoami", headers=tenant.admin.headers)).status_code == 200


async def test_non_admin_still_manages_other_principals(
    client: httpx2.AsyncClient, tenant: Tenant
) -> None:
    r = await client.post(
        tenant.url("principals"), json={"kind": "agent", "name": "a"}, headers=tenant.admin.headers
    )
    agent = r.json()["data"]["id"]
    r = await client.patch(
        tenant.url("principals", agent), json={"name": "b"}, headers=tenant.manager.headers
    )
    assert r.status_code == 200


async def test_tenant_admin_deletes_a_deny_that_blocks_it(
    client: httpx2.AsyncClient, database: Database, tenant: Tenant
) -> None:
    """A deny on the admin's own grant writes (as a second admin or the platform could set it)
    does not stop the admin from deleting it: no grant locks every admin out."""
    deny = await _grant(database, tenant.id, tenant.admin.principal_id, "grant:*", "*", "deny")
    assert (await client.get(tenant.url("grants"), headers=tenant.admin.headers)).status_code == 403
    r = await client.delete(tenant.url("grants", deny), headers=tenant.admin.headers)
    assert r.status_code == 204, r.text
    assert (await client.get(tenant.url("grants"), headers=tenant.admin.headers)).status_code == 200


async def test_tenant_admin_deletes_any_grant_of_its_tenant(
    client: httpx2.AsyncClient, database: Database, tenant: Tenant
) -> None:
    other = await make_principal(database, tenant.id, role="tenant_admin", name="admin2")
    deny = await _grant(database, tenant.id, other.principal_id, "credential:*", "*", "deny")
    r = await client.delete(tenant.url("grants", deny), headers=tenant.admin.headers)
    assert r.status_code == 204, r.text


async def test_disabled_tenant_admin_is_no_longer_protected(
    client: httpx2.AsyncClient, database: Database, tenant: Tenant
) -> None:
    """Who counts as a tenant_admin: created with that role and not disabled (DESIGN §8). A
    second admin first: the tenant's last active admin is never deleted."""
    await make_principal(database, tenant.id, role="tenant_admin", name="admin2")
    r = await client.delete(
        tenant.url("principals", tenant.admin.principal_id), headers=tenant.admin.headers
    )
    assert r.status_code == 204
    grant = await _admin_grant(database, tenant)
    r = await client.delete(tenant.url("grants", grant), headers=tenant.manager.headers)
    assert r.status_code == 204, r.text

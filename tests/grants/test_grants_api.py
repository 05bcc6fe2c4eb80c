"""Grants over REST: create/list/delete/check, 400/404/409 rules, escalation, replicas."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from hub.app import create_app
from hub.core.db import Database
from hub.core.settings import Settings
from hub.models import AuditEvent
from tests.support.factories import Actor, make_principal, make_tenant


@pytest.fixture
async def second_client(
    settings: Settings, database: Database
) -> AsyncIterator[httpx2.AsyncClient]:
    """Another hub replica on the same database (its own policy cache)."""
    app: FastAPI = create_app(settings, database=database)
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://b") as c,
    ):
        yield c


async def _grant(
    client: httpx2.AsyncClient, actor: Actor, tenant_id: object, **body: object
) -> httpx2.Response:
    return await client.post(f"/tenants/{tenant_id}/grants", json=body, headers=actor.headers)


async def test_grant_lifecycle_and_check(client: httpx2.AsyncClient, database: Database) -> None:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    agent = await make_principal(database, tenant.id, role="agent", kind="agent")
    created = await _grant(
        client,
        admin,
        tenant.id,
        principal_id=str(agent.principal_id),
        resource="tool:lin.*",
        action="call",
        effect="allow",
    )
    assert created.status_code == 201, created.text
    grant = created.json()["data"]
    check = await client.post(
        f"/tenants/{tenant.id}/grants/check",
        json={
            "principal_id": str(agent.principal_id),
            "resource": "tool:lin.search",
            "action": "call",
        },
        headers=admin.headers,
    )
    assert check.json()["data"] == {"effect": "allow", "grant_id": grant["id"]}
    other = await client.post(
        f"/tenants/{tenant.id}/grants/check",
        json={
            "principal_id": str(agent.principal_id),
            "resource": "tool:linx.search",
            "action": "call",
        },
        headers=admin.headers,
    )
    assert other.json()["data"] == {"effect": "deny", "grant_id": None}
    listed = await client.get(
        f"/tenants/{tenant.id}/grants",
        params={"principal_id": str(agent.principal_id)},
        headers=admin.headers,
    )
    assert [g["id"] for g in listed.json()["data"]] == [grant["id"]]
    deleted = await client.delete(
        f"/tenants/{tenant.id}/grants/{grant['id']}", headers=admin.headers
    )
    assert deleted.status_code == 204
    again = await client.delete(f"/tenants/{tenant.id}/grants/{grant['id']}", headers=admin.headers)
    assert again.status_code == 404


async def test_grant_input_rules(client: httpx2.AsyncClient, database: Database) -> None:
    tenant = await make_tenant(database)
    other_tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    agent = await make_principal(database, tenant.id, role=None, kind="agent")
    stranger = await make_principal(database, other_tenant.id, role=None)
    base = {"principal_id": str(agent.principal_id), "action": "call", "effect": "allow"}
    for resource in ["tool:lin*", "tool:*.x", "*foo", "", "nonsense:*", "audit:x", "tool:a b"]:
        response = await _grant(client, admin, tenant.id, **{**base, "resource": resource})
        assert response.status_code == 400, resource
    bad_action = await _grant(
        client, admin, tenant.id, **{**base, "resource": "tool:*", "action": "fly"}
    )
    assert bad_action.status_code == 400
    assert "fly" not in bad_action.text
    bad_condition = await _grant(
        client, admin, tenant.id, **{**base, "resource": "tool:*", "conditions": {"ip": "x"}}
    )
    assert bad_condition.status_code == 400
    bad_window = await _grant(
        client,
        admin,
        tenant.id,
        **{**base, "resource": "tool:*", "conditions": {"time_window": {"start": "9am"}}},
    )
    assert bad_window.status_code == 400
    elsewhere = await _grant(
        client,
        admin,
        tenant.id,
        **{**base, "resource": "tool:*", "principal_id": str(stranger.principal_id)},
    )
    assert elsewhere.status_code == 404
    ok = await _grant(client, admin, tenant.id, **{**base, "resource": "tool:*"})
    assert ok.status_code == 201
    duplicate = await _grant(
        client, admin, tenant.id, **{**base, "resource": "tool:*", "effect": "deny"}
    )
    assert duplicate.status_code == 409
    bad_cursor = await client.get(f"/tenants/{tenant.id}/grants?cursor=zzz", headers=admin.headers)
    assert bad_cursor.status_code == 400


async def test_pagination_walks_every_grant_once(
    client: httpx2.AsyncClient, database: Database
) -> None:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    agent = await make_principal(database, tenant.id, role=None, kind="agent")
    for i in range(7):
        response = await _grant(
            client,
            admin,
            tenant.id,
            principal_id=str(agent.principal_id),
            resource=f"tool:s{i}.*",
            action="call",
            effect="allow",
        )
        assert response.status_code == 201
    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": "3", "principal_id": str(agent.principal_id)}
        if cursor:
            params["cursor"] = cursor
        page = (
            await client.get(f"/tenants/{tenant.id}/grants", params=params, headers=admin.headers)
        ).json()
        seen += [g["resource"] for g in page["data"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(f"tool:s{i}.*" for i in range(7))


async def test_operator_cannot_grant_itself_everything(
    client: httpx2.AsyncClient, database: Database
) -> None:
    tenant = await make_tenant(database)
    operator = await make_principal(database, tenant.id, role="operator")
    response = await _grant(
        client,
        operator,
        tenant.id,
        principal_id=str(operator.principal_id),
        resource="*",
        action="*",
        effect="allow",
    )
    assert response.status_code == 403
    # it may hand on what it holds
    ok = await _grant(
        client,
        operator,
        tenant.id,
        principal_id=str(operator.principal_id),
        resource="server:abc",
        action="read",
        effect="ask",
    )
    assert ok.status_code == 201
    async with database.session(write=False) as session:
        events = (
            (await session.execute(select(AuditEvent).where(AuditEvent.action == "grant.create")))
            .scalars()
            .all()
        )
    assert sorted(e.outcome for e in events) == ["denied", "success"]


async def test_deployer_cannot_create_a_tenant_admin(
    client: httpx2.AsyncClient, database: Database
) -> None:
    tenant = await make_tenant(database)
    deployer = await make_principal(database, tenant.id, role="deployer")
    admin = await make_principal(database, tenant.id, role="tenant_admin")
    # give the deployer the right to create principals, still not a tenant_admin
    grant = await _grant(
        client,
        admin,
        tenant.id,
        principal_id=str(deployer.principal_id),
        resource="principal:*",
        action="*",
        effect="allow",
    )
    assert grant.status_code == 201
    body = {"kind": "user", "name": "boss", "role": "tenant_admin"}
    response = await client.post(
        f"/tenants/{tenant.id}/principals", json=body, headers=deployer.headers
    )
    assert response.status_code == 403
    operator = {"kind": "user", "name": "op", "role": "operator"}
    response = await client.post(
        f"/tenants/{tenant.id}/principals", json=operator, headers=deployer.headers
    )
    assert response.status_code == 403  # operator confers grant:* which the deployer lacks
    plain = await client.post(
        f"/tenants/{tenant.id}/principals",
        json={"kind": "agent", "name": "bot", "role": "agent"},
        headers=deployer.headers,
    )
    assert plain.status_code == 201
    async with database.session(write=False) as session:
        denied = (
            (
                await session.execute(
                    select(AuditEvent).where(
                        AuditEvent.action == "principal.create", AuditEvent.outcome == "denied"
                    )
                )
            )
            .scalars()
            .all()
        )
    assert len(denied) == 2
    assert all(e.actor_id == deployer.principal_id for e in denied)


async def test_grant_change_on_one_replica_is_seen_by_another(
    client: httpx2.AsyncClient, second_client: httpx2.AsyncClient, database: Database
) -> None:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    user = await make_principal(database, tenant.id, role=None)
    url = f"/tenants/{tenant.id}/principals"
    assert (await second_client.get(url, headers=user.headers)).status_code == 403
    created = await _grant(
        client,
        admin,
        tenant.id,
        principal_id=str(user.principal_id),
        resource="principal:*",
        action="read",
        effect="allow",
    )
    assert (await second_client.get(url, headers=user.headers)).status_code == 200
    deleted = await client.delete(
        f"/tenants/{tenant.id}/grants/{created.json()['data']['id']}", headers=admin.headers
    )
    assert deleted.status_code == 204
    assert (await second_client.get(url, headers=user.headers)).status_code == 403


async def test_a_grant_in_one_tenant_never_decides_in_another(
    client: httpx2.AsyncClient, database: Database
) -> None:
    a, b = await make_tenant(database), await make_tenant(database)
    admin_a = await make_principal(database, a.id)
    admin_b = await make_principal(database, b.id)
    agent_b = await make_principal(database, b.id, role=None, kind="agent")
    check = {"principal_id": str(agent_b.principal_id), "resource": "tool:x.y", "action": "call"}
    before = await client.post(f"/tenants/{b.id}/grants/check", json=check, headers=admin_b.headers)
    agent_a = await make_principal(database, a.id, role=None, kind="agent")
    for principal in (agent_a,):
        await _grant(
            client,
            admin_a,
            a.id,
            principal_id=str(principal.principal_id),
            resource="*",
            action="*",
            effect="allow",
        )
    after = await client.post(f"/tenants/{b.id}/grants/check", json=check, headers=admin_b.headers)
    assert before.json() == after.json()
    assert after.json()["data"]["effect"] == "deny"

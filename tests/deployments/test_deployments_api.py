"""Deployments and bundles: validation, audit, ETags, the self rule, wire names."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import httpx2
from sqlalchemy import select

from hub.core.db import Database
from hub.models import AuditEvent
from tests.support.factories import (
    Actor,
    make_catalog,
    make_principal,
    make_server,
    make_tenant,
    tool,
)


@dataclass
class World:
    t: uuid.UUID
    admin: Actor
    agent: Actor
    other: Actor


async def _world(database: Database) -> World:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    agent = await make_principal(database, tenant.id, role="agent", kind="agent")
    other_agent = await make_principal(database, tenant.id, role="agent", kind="agent")
    linear = await make_server(database, tenant.id, "linear")
    await make_catalog(
        database,
        tenant.id,
        linear,
        [
            tool("search"),
            tool("delete_issue", annotations={"destructiveHint": True}),
            tool("create.issue"),
        ],
    )
    gh = await make_server(database, tenant.id, "github", "https://api.github.com/mcp")
    await make_catalog(database, tenant.id, gh, [tool("search"), tool("x" * 100)])
    return World(tenant.id, admin, agent, other_agent)


async def test_create_read_bundle_with_etag(client: httpx2.AsyncClient, database: Database) -> None:
    w = await _world(database)
    admin, agent = w.admin, w.agent
    body = {
        "agent_id": str(agent.principal_id),
        "name": "support bot",
        "entries": [
            {
                "server": "linear",
                "catalog_version": 1,
                "allow_without_ask": ["search", "delete_issue"],
            },
            {"server": "github", "catalog_version": 1},
        ],
    }
    url = f"/tenants/{w.t}/deployments"
    created = await client.post(url, json=body, headers=admin.headers)
    assert created.status_code == 201, created.text
    d = created.json()["data"]
    assert [e["server"] for e in d["entries"]] == ["linear", "github"]
    bundle_url = f"{url}/{d['id']}/bundle"
    first = await client.get(bundle_url, headers=agent.headers)
    assert first.status_code == 200, first.text
    etag = first.headers["etag"]
    assert etag.startswith('"')
    bundle = first.json()["data"]
    assert bundle["deployment_id"] == d["id"]
    linear = bundle["servers"][0]
    assert linear["handle"] == "linear"
    assert linear["credential_id"] is None
    by_name = {t["name"]: t for t in linear["tools"]}
    assert by_name["search"]["grant_key"] == "tool:linear.search"
    assert by_name["search"]["wire_name"] == "linear__search"
    assert by_name["search"]["allow_without_ask"] is True
    assert by_name["delete_issue"]["allow_without_ask"] is False  # destructive
    assert by_name["create.issue"]["wire_name"].startswith("linear__create_issue_")
    assert len(by_name["search"]["sha256"]) == 64
    assert "secret" not in first.text
    again = await client.get(bundle_url, headers=agent.headers)
    assert again.headers["etag"] == etag
    assert again.json() == first.json()
    cached = await client.get(
        bundle_url,
        headers={**agent.headers, "if-none-match": etag},
    )
    assert cached.status_code == 304
    assert cached.content == b""
    patched = await client.patch(
        f"{url}/{d['id']}",
        json={"entries": [{"server": "github", "catalog_version": 1}]},
        headers=admin.headers,
    )
    assert patched.status_code == 200
    changed = await client.get(
        bundle_url,
        headers={**agent.headers, "if-none-match": etag},
    )
    assert changed.status_code == 200
    assert changed.headers["etag"] != etag


async def test_self_rule_and_other_agents(client: httpx2.AsyncClient, database: Database) -> None:
    w = await _world(database)
    admin, agent, other = w.admin, w.agent, w.other
    url = f"/tenants/{w.t}/deployments"
    created = await client.post(
        url,
        json={
            "agent_id": str(agent.principal_id),
            "entries": [{"server": "github", "catalog_version": 1}],
        },
        headers=admin.headers,
    )
    bundle_url = f"{url}/{created.json()['data']['id']}/bundle"
    assert (await client.get(bundle_url, headers=agent.headers)).status_code == 200
    assert (await client.get(bundle_url, headers=other.headers)).status_code == 403
    missing = f"{url}/{uuid.uuid4()}/bundle"
    assert (await client.get(missing, headers=other.headers)).status_code == 403
    # the deployment itself (not the bundle) needs a grant even for its own agent
    own = f"{url}/{created.json()['data']['id']}"
    assert (await client.get(own, headers=agent.headers)).status_code == 403
    other_tenant = await make_tenant(database)
    stranger = await make_principal(database, other_tenant.id, role="agent", kind="agent")
    # another tenant's bundle: 404 (the tenant in the path is not the caller's)
    assert (await client.get(bundle_url, headers=stranger.headers)).status_code == 404
    # its id under the caller's own tenant: 403 without a grant (checks run before lookups)
    cross = bundle_url.replace(str(w.t), str(other_tenant.id))
    assert (await client.get(cross, headers=stranger.headers)).status_code == 403


async def test_bad_input(client: httpx2.AsyncClient, database: Database) -> None:
    w = await _world(database)
    admin, agent = w.admin, w.agent
    url = f"/tenants/{w.t}/deployments"
    aid = str(agent.principal_id)

    async def post(body: dict[str, object]) -> int:
        r = await client.post(url, json=body, headers=admin.headers)
        assert r.status_code < 500
        return r.status_code

    entry = {"server": "linear", "catalog_version": 1}
    assert await post({"agent_id": aid, "entries": [{**entry, "catalog_version": 7}]}) == 404
    assert await post({"agent_id": aid, "entries": [{**entry, "server": "nope"}]}) == 404
    assert await post({"agent_id": aid, "entries": [{**entry, "server": "Bad.Handle"}]}) == 400
    assert await post({"agent_id": aid, "entries": [{**entry, "allow_without_ask": ["zz"]}]}) == 400
    assert await post({"agent_id": aid, "entries": [entry, entry]}) == 400
    admin_id = str(admin.principal_id)
    assert await post({"agent_id": admin_id, "entries": [entry]}) == 400
    assert await post({"agent_id": str(uuid.uuid4()), "entries": [entry]}) == 404
    assert await post({"agent_id": "not-a-uuid", "entries": [entry]}) == 400
    assert await post({"agent_id": aid, "entries": [{**entry, "catalog_version": 0}]}) == 400
    assert await post({"agent_id": aid, "entries": [entry]}) == 201


async def test_changes_are_audited(client: httpx2.AsyncClient, database: Database) -> None:
    w = await _world(database)
    admin, agent = w.admin, w.agent
    url = f"/tenants/{w.t}/deployments"
    created = await client.post(
        url,
        json={
            "agent_id": str(agent.principal_id),
            "entries": [{"server": "linear", "catalog_version": 1}],
        },
        headers=admin.headers,
    )
    did = created.json()["data"]["id"]
    await client.patch(f"{url}/{did}", json={"name": "n"}, headers=admin.headers)
    await client.delete(f"{url}/{did}", headers=admin.headers)
    async with database.session(write=False) as session:
        actions = (
            (
                await session.execute(
                    select(AuditEvent.action).where(AuditEvent.resource == f"deployment:{did}")
                )
            )
            .scalars()
            .all()
        )
    assert sorted(actions) == ["deployment.create", "deployment.delete", "deployment.update"]


async def test_two_hundred_awkward_tool_names_bundle_stably(
    client: httpx2.AsyncClient, database: Database
) -> None:
    from hub.deployments.wirenames import WIRE_NAME

    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    agent = await make_principal(database, tenant.id, role="agent", kind="agent")

    def awkward(prefix: str) -> list[dict[str, object]]:
        names = [f"{prefix}.op.{i}" for i in range(96)]  # dots
        names += ["n" * 100, "a b", "a_b", "plain"]  # 100 chars; a collision after sanitising
        return [tool(n, description=f"does {n} with spaces") for n in names]

    for handle in ("alpha", "beta"):
        server_id = await make_server(database, tenant.id, handle, f"https://{handle}.example/mcp")
        await make_catalog(database, tenant.id, server_id, awkward(handle))
    created = await client.post(
        f"/tenants/{tenant.id}/deployments",
        json={
            "agent_id": str(agent.principal_id),
            "entries": [
                {"server": "alpha", "catalog_version": 1},
                {"server": "beta", "catalog_version": 1},
            ],
        },
        headers=admin.headers,
    )
    url = f"/tenants/{tenant.id}/deployments/{created.json()['data']['id']}/bundle"
    first = await client.get(url, headers=agent.headers)
    second = await client.get(url, headers=agent.headers)
    assert first.headers["etag"] == second.headers["etag"]
    names = [t["wire_name"] for s in first.json()["data"]["servers"] for t in s["tools"]]
    assert len(names) == 200
    assert len(set(names)) == 200
    assert all(WIRE_NAME.match(n) for n in names)
    assert names == [t["wire_name"] for s in second.json()["data"]["servers"] for t in s["tools"]]

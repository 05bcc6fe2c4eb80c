"""Principals: role templates as grants, soft delete, /whoami, bootstrap."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import httpx2
from sqlalchemy import select

from hub.core.db import Database
from hub.models import Grant
from tests.support.databases import owner_session
from tests.support.factories import make_platform_admin, make_principal, make_tenant
from tests.support.hubcommand import hub_argv


async def test_role_template_becomes_grant_rows(
    client: httpx2.AsyncClient, database: Database
) -> None:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    created = await client.post(
        f"/tenants/{tenant.id}/principals",
        json={"kind": "user", "name": "ops", "role": "operator"},
        headers=admin.headers,
    )
    assert created.status_code == 201
    principal = created.json()["data"]
    assert {"id", "kind", "name", "role", "created_at"} <= set(principal)
    async with owner_session(database, write=False) as session:
        rows = (
            (
                await session.execute(
                    select(Grant).where(Grant.principal_id == uuid.UUID(principal["id"]))
                )
            )
            .scalars()
            .all()
        )
    assert {(g.resource, g.action, g.effect) for g in rows} == {
        ("grant:*", "*", "allow"),
        ("approval:*", "*", "allow"),
        ("audit", "*", "allow"),
        ("tool:*", "call", "allow"),
        ("principal:*", "read", "allow"),
        ("credential:*", "read", "allow"),
        ("server:*", "read", "allow"),
        ("catalog:*", "read", "allow"),
        ("deployment:*", "read", "allow"),
    }


async def test_deleted_principal_stays_readable_and_its_keys_fail(
    client: httpx2.AsyncClient, database: Database
) -> None:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    victim = await make_principal(database, tenant.id, role="deployer")
    url = f"/tenants/{tenant.id}/principals/{victim.principal_id}"
    assert (await client.get("/whoami", headers=victim.headers)).status_code == 200
    assert (await client.delete(url, headers=admin.headers)).status_code == 204
    assert (await client.get("/whoami", headers=victim.headers)).status_code == 401
    read = await client.get(url, headers=admin.headers)
    assert read.json()["data"]["status"] == "disabled"
    renamed = await client.patch(url, json={"name": "renamed"}, headers=admin.headers)
    assert renamed.json()["data"]["name"] == "renamed"
    no_key = await client.post(f"{url}/keys", json={}, headers=admin.headers)
    assert no_key.status_code == 409


async def test_whoami_shows_principal_tenant_and_grants(
    client: httpx2.AsyncClient, database: Database
) -> None:
    tenant = await make_tenant(database)
    deployer = await make_principal(database, tenant.id, role="deployer")
    data = (await client.get("/whoami", headers=deployer.headers)).json()["data"]
    assert data["principal"]["id"] == str(deployer.principal_id)
    assert data["tenant_id"] == str(tenant.id)
    assert data["is_platform_admin"] is False
    assert {g["resource"] for g in data["grants"]} == {
        "server:*",
        "catalog:*",
        "deployment:*",
        "credential:*",
        "principal:*",
    }


async def test_platform_admin_creates_the_first_tenant_admin(
    client: httpx2.AsyncClient, database: Database
) -> None:
    admin = await make_platform_admin(database)
    tenant = (
        await client.post("/tenants", json={"slug": "first", "name": "F"}, headers=admin.headers)
    ).json()["data"]
    created = await client.post(
        f"/tenants/{tenant['id']}/principals",
        json={"kind": "user", "name": "owner", "role": "tenant_admin"},
        headers=admin.headers,
    )
    assert created.status_code == 201
    owner = created.json()["data"]
    key = await client.post(
        f"/tenants/{tenant['id']}/principals/{owner['id']}/keys", json={}, headers=admin.headers
    )
    owner_headers = {"authorization": f"Bearer {key.json()['data']['key']}"}
    listed = await client.get(f"/tenants/{tenant['id']}/principals", headers=owner_headers)
    assert [p["name"] for p in listed.json()["data"]] == ["owner"]


def test_bootstrap_prints_only_the_key_and_refuses_a_second(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HUB_")}
    env["HUB_DATA_DIR"] = str(tmp_path / ".hub")
    env["HUB_DATABASE_URL"] = f"sqlite+aiosqlite:///{tmp_path / 'hub.db'}"
    hub = hub_argv()  # python -m hub.cli, forked warm (tests.support.hubcommand)
    subprocess.run([*hub, "db", "upgrade"], env=env, check=True, capture_output=True)
    first = subprocess.run([*hub, "bootstrap"], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("hub_")
    assert len(lines[0]) == 55
    second = subprocess.run([*hub, "bootstrap"], env=env, capture_output=True, text=True)
    assert second.returncode == 1
    assert second.stdout == ""
    quiet = subprocess.run([*hub, "bootstrap", "--if-absent"], env=env, capture_output=True)
    assert quiet.returncode == 0
    assert quiet.stdout == b""
    forced = subprocess.run([*hub, "bootstrap", "--force"], env=env, capture_output=True, text=True)
    assert forced.returncode == 0
    assert forced.stdout.strip() != lines[0]

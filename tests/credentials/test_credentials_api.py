"""Credentials over REST: write-only secrets, validation, optimistic locking, revocation, canary."""

from __future__ import annotations

import asyncio
import logging
import uuid

import httpx2
import pytest
from sqlalchemy import text

from hub.core.db import Database
from tests.support.databases import as_owner
from tests.support.factories import Actor, make_principal, make_tenant


async def _setup(database: Database) -> tuple[str, Actor]:
    tenant = await make_tenant(database)
    return str(tenant.id), await make_principal(database, tenant.id)


def _body(**overrides: object) -> dict[str, object]:
    body: dict[str, object] = {
        "name": "linear",
        "type": "api_key",
        "secret": "lin_api_0123456789",
        "api_base_url": "https://mcp.linear.app",
    }
    body.update(overrides)
    return body


async def test_create_read_update_revoke(client: httpx2.AsyncClient, database: Database) -> None:
    t, admin = await _setup(database)
    created = await client.post(f"/tenants/{t}/credentials", json=_body(), headers=admin.headers)
    assert created.status_code == 201, created.text
    data = created.json()["data"]
    assert {
        "id",
        "name",
        "type",
        "api_base_url",
        "status",
        "expires_at",
        "metadata",
        "version",
        "created_at",
    } <= set(data)
    assert data["version"] == 1
    assert data["has_secret"] is True
    assert "secret" not in data
    url = f"/tenants/{t}/credentials/{data['id']}"
    renamed = await client.patch(url, json={"name": "renamed", "version": 1}, headers=admin.headers)
    assert renamed.json()["data"]["version"] == 2
    stale = await client.patch(url, json={"name": "again", "version": 1}, headers=admin.headers)
    assert stale.status_code == 409
    rotated_secret = await client.patch(
        url, json={"secret": "new-secret-0123456789"}, headers=admin.headers
    )
    assert rotated_secret.json()["data"]["version"] == 3
    assert (await client.delete(url, headers=admin.headers)).status_code == 204
    revoked = (await client.get(url, headers=admin.headers)).json()["data"]
    assert revoked["status"] == "revoked"
    assert revoked["has_secret"] is False
    back = await client.patch(url, json={"status": "active"}, headers=admin.headers)
    assert back.status_code == 409
    listed = await client.get(f"/tenants/{t}/credentials", headers=admin.headers)
    assert [c["id"] for c in listed.json()["data"]] == [data["id"]]


async def test_concurrent_patches_cannot_both_win(
    client: httpx2.AsyncClient, database: Database
) -> None:
    t, admin = await _setup(database)
    created = (
        await client.post(f"/tenants/{t}/credentials", json=_body(), headers=admin.headers)
    ).json()["data"]
    url = f"/tenants/{t}/credentials/{created['id']}"
    results = await asyncio.gather(
        *(
            client.patch(url, json={"name": f"n{i}", "version": 1}, headers=admin.headers)
            for i in range(5)
        )
    )
    statuses = sorted(r.status_code for r in results)
    assert statuses == [200, 409, 409, 409, 409]
    final = (await client.get(url, headers=admin.headers)).json()["data"]
    winner = next(r for r in results if r.status_code == 200).json()["data"]
    assert final["name"] == winner["name"]
    assert final["version"] == 2


async def test_validation_rules(client: httpx2.AsyncClient, database: Database) -> None:
    t, admin = await _setup(database)
    url = f"/tenants/{t}/credentials"
    no_url = await client.post(url, json=_body(api_base_url=None), headers=admin.headers)
    assert no_url.status_code == 400
    oauth_no_url = await client.post(
        url, json=_body(type="oauth_token", api_base_url=None), headers=admin.headers
    )
    assert oauth_no_url.status_code == 400
    other = await client.post(
        url, json=_body(type="secret", api_base_url=None), headers=admin.headers
    )
    assert other.status_code == 201
    assert other.json()["data"]["type"] == "secret"
    for bad_url in [
        "ftp://x.example.com",
        "https://u:p@x.example.com",
        "https://x.example.com/#f",
        "http://x.example.com",
        "not a url",
    ]:
        response = await client.post(url, json=_body(api_base_url=bad_url), headers=admin.headers)
        assert response.status_code == 400, bad_url
    bad_meta = await client.post(
        url, json=_body(metadata={"mcp": {"auth": "maybe"}}), headers=admin.headers
    )
    assert bad_meta.status_code == 400
    keyless = await client.post(
        url, json=_body(secret=None, metadata={"mcp": {"auth": "none"}}), headers=admin.headers
    )
    assert keyless.status_code == 201
    assert keyless.json()["data"]["has_secret"] is True
    missing = await client.post(url, json=_body(secret=None), headers=admin.headers)
    assert missing.status_code == 400


@pytest.mark.parametrize(
    "secret_template",
    ["{canary}\r\nX-Evil: 1", "{canary}\n", " {canary}", "{canary}" + "x" * 9000, "{canary}\x00"],
)
async def test_invalid_secret_is_refused_without_echo(
    client: httpx2.AsyncClient, database: Database, secret_template: str
) -> None:
    t, admin = await _setup(database)
    canary = f"CANARY-{uuid.uuid4()}"
    response = await client.post(
        f"/tenants/{t}/credentials",
        json=_body(secret=secret_template.format(canary=canary)),
        headers=admin.headers,
    )
    assert response.status_code == 400
    assert canary not in response.text
    assert "input" not in response.json()["error"].get("details", [{}])[0]


async def test_a_malformed_body_says_where_and_what_but_never_the_value(
    client: httpx2.AsyncClient, database: Database
) -> None:
    """SECURITY §7.16: a request validation error names each field and the problem (``loc``,
    ``msg``), never the value sent (pydantic's ``input``) nor its context (``ctx``)."""
    t, admin = await _setup(database)
    canary = f"CANARY-{uuid.uuid4()}"
    body = {**_body(), "secret": {"nested": canary}, "expires_at": canary, "name": [canary]}
    response = await client.post(f"/tenants/{t}/credentials", json=body, headers=admin.headers)
    assert response.status_code == 400, response.text
    assert canary not in response.text
    details = response.json()["error"]["details"]
    assert {tuple(d["loc"])[-1] for d in details} >= {"secret", "expires_at", "name"}
    for detail in details:
        assert set(detail) == {"loc", "msg"}, detail
        assert detail["msg"]


async def test_canary_secret_never_leaves(
    client: httpx2.AsyncClient, database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    t, admin = await _setup(database)
    canary = f"CANARY-{uuid.uuid4()}"
    texts: list[str] = []
    created = await client.post(
        f"/tenants/{t}/credentials", json=_body(secret=canary), headers=admin.headers
    )
    texts.append(created.text + str(created.headers))
    cid = created.json()["data"]["id"]
    url = f"/tenants/{t}/credentials/{cid}"
    for response in [
        await client.get(url, headers=admin.headers),
        await client.get(f"/tenants/{t}/credentials", headers=admin.headers),
        await client.patch(url, json={"name": "x"}, headers=admin.headers),
        await client.patch(url, json={"secret": canary + "-2"}, headers=admin.headers),
        await client.patch(url, json={"version": 99, "secret": canary}, headers=admin.headers),
        await client.get("/whoami", headers=admin.headers),
    ]:
        texts.append(response.text + str(response.headers))
    assert all(canary not in text_ for text_ in texts)
    assert canary not in caplog.text
    async with as_owner(database.engine) as owner, owner.connect() as conn:  # every row
        for table in ("credentials", "audit_events"):
            rows = (await conn.execute(text(f"SELECT * FROM {table}"))).all()  # noqa: S608
            assert rows, table  # every row is read, above row-level security
            for row in rows:
                for value in row:
                    raw = value if isinstance(value, bytes) else str(value).encode()
                    assert canary.encode() not in raw
                    assert canary[7:].encode() not in raw


async def test_leaving_keyless_needs_a_secret(
    client: httpx2.AsyncClient, database: Database
) -> None:
    t, admin = await _setup(database)
    created = await client.post(
        f"/tenants/{t}/credentials",
        json=_body(secret=None, metadata={"mcp": {"auth": "none"}}),
        headers=admin.headers,
    )
    url = f"/tenants/{t}/credentials/{created.json()['data']['id']}"
    to_token = await client.patch(
        url, json={"metadata": {"mcp": {"auth": "token"}}}, headers=admin.headers
    )
    assert to_token.status_code == 400
    with_secret = await client.patch(
        url,
        json={"metadata": {"mcp": {"auth": "token"}}, "secret": "tok-0123456789abcdef"},
        headers=admin.headers,
    )
    assert with_secret.status_code == 200
    assert with_secret.json()["data"]["metadata"] == {"mcp": {"auth": "token"}}

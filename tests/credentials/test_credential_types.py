"""Credential types are a closed set: ``api_key``, ``oauth_token``, ``secret`` (DESIGN §14).

A typo (``apikey``) is 400 at creation instead of reading as "credential not found" at discovery
later; a ``secret`` is stored and never sent; a row of another type from before the set was
closed still reads, and is never sent either.
"""

from __future__ import annotations

import uuid

import httpx2
from sqlalchemy import update

from hub.core.db import Database
from hub.models import Credential
from tests.support.databases import owner_session
from tests.support.stories import make_tenant_admin

BODY = {"name": "c", "secret": "s3cret-value-0123456789", "api_base_url": "https://a.example.com"}


async def test_a_typo_type_is_400_naming_the_types(
    client: httpx2.AsyncClient, database: Database
) -> None:
    setup = await make_tenant_admin(database)
    response = await client.post(
        setup.url("credentials"), json={**BODY, "type": "apikey"}, headers=setup.admin.headers
    )
    assert response.status_code == 400
    [detail] = response.json()["error"]["details"]
    assert detail["loc"] == ["body", "type"]
    for name in ("api_key", "oauth_token", "secret"):
        assert name in detail["msg"]
    assert "s3cret" not in response.text


async def test_a_secret_is_stored_and_never_sent_upstream(
    client: httpx2.AsyncClient, database: Database
) -> None:
    setup = await make_tenant_admin(database)
    headers = setup.admin.headers
    made = await client.post(
        setup.url("credentials"), json={**BODY, "type": "secret"}, headers=headers
    )
    assert made.status_code == 201
    assert made.json()["data"]["type"] == "secret"
    body = {"url": "https://a.example.com/mcp", "credential_id": made.json()["data"]["id"]}
    refused = await client.post(setup.url("mcp", "discover"), json=body, headers=headers)
    assert refused.status_code == 404  # refused before any I/O: nothing is sent anywhere
    assert "a secret is never sent" in refused.json()["error"]["message"]


async def test_a_row_of_an_older_type_still_reads(
    client: httpx2.AsyncClient, database: Database
) -> None:
    setup = await make_tenant_admin(database)
    headers = setup.admin.headers
    made = await client.post(
        setup.url("credentials"), json={**BODY, "type": "secret"}, headers=headers
    )
    cid = made.json()["data"]["id"]
    async with owner_session(database) as session:  # what an older replica could still write
        await session.execute(
            update(Credential).where(Credential.id == uuid.UUID(cid)).values(type="password")
        )
    got = await client.get(setup.url("credentials", cid), headers=headers)
    assert got.status_code == 200
    assert got.json()["data"]["type"] == "password"
    listed = await client.get(setup.url("credentials"), headers=headers)
    assert [c["type"] for c in listed.json()["data"]] == ["password"]

"""The authenticated request path: one session, two queries, nothing about a key cached.

The hub keeps database connections open (a pool, SQLite's too) and compiled policies cached by
``grants_version``; these tests prove neither changes a result. Revoking, expiring or disabling is
effective on the very next request on a warm pool; an authenticated read costs at most two
queries and a key with a bad checksum none; write requests still queue on SQLite's lock.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import httpx2
import pytest
from sqlalchemy import text, update

from hub.core import clock
from hub.core.db import Database
from hub.models import ApiKey, Tenant
from tests.conftest import ClockControl
from tests.support.databases import owner_session
from tests.support.factories import make_platform_admin, make_principal, make_server
from tests.support.queries import (
    TRANSACTION_CONTROL,
    count_checkouts,
    count_engine_statements,
    count_queries,
    count_statements,
)
from tests.support.stories import TenantAdmin, make_tenant_admin


@pytest.fixture
async def team(database: Database) -> TenantAdmin:
    """A tenant with its admin and a server ``linear``."""
    team = await make_tenant_admin(database)
    await make_server(database, team.tenant_id, "linear")
    return team


async def _warm(client: httpx2.AsyncClient, url: str, headers: dict[str, str]) -> None:
    """A few answered requests: the pool holds connections and the caller's policy is cached."""
    for _ in range(3):
        assert (await client.get(url, headers=headers)).status_code == 200


async def test_authenticated_get_makes_at_most_two_queries(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin
) -> None:
    url = team.url("servers", "linear")
    await _warm(client, url, team.admin.headers)
    with count_statements(database) as sent, count_checkouts(database) as checkouts:
        response = await client.get(url, headers=team.admin.headers)
    assert response.status_code == 200
    queries = [q for q in sent if not q.lstrip().upper().startswith(TRANSACTION_CONTROL)]
    assert 1 <= len(queries) <= 2, queries
    # never two connections at once: on PostgreSQL each plain read takes one from the pool and
    # gives it back; an SQLite file's plain reads have a connection of their own (no checkout)
    assert checkouts.most <= 1
    assert checkouts.count <= 2


async def test_naming_the_tenant_by_slug_costs_one_plain_read_more(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin
) -> None:
    """DESIGN §14's slug path: one read of the slug, as a plain read. Read through the ORM, it
    began the session's transaction, and every later read of the request lost the plain-read
    path (three times the CPU of the same request by id, measured)."""
    async with database.session(write=False) as session:
        slug = (await session.get(Tenant, team.tenant_id)).slug  # type: ignore[union-attr]
    url = f"/tenants/{slug}/servers/linear"
    await _warm(client, url, team.admin.headers)
    with count_statements(database) as sent, count_engine_statements(database) as engine:
        response = await client.get(url, headers=team.admin.headers)
    assert response.status_code == 200, response.text
    assert response.json()["data"]["handle"] == "linear"
    assert 2 <= len(sent) <= 3, sent
    assert engine == [], engine  # every one a plain read, as by id


async def test_a_grant_check_about_oneself_makes_one_query(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin
) -> None:
    """The caller's own ``grants_version`` came with its key: a check about oneself reads nothing
    more (its compiled policy is cached); a check about someone else reads their version, on
    PostgreSQL in the key's own statement (hub.core.readahead)."""
    other = await make_principal(database, team.tenant_id, role=None)
    url = team.url("grants", "check")
    counts = []
    for principal_id in (team.admin.principal_id, other.principal_id):
        body = {"principal_id": str(principal_id), "resource": "server:x", "action": "read"}
        for _ in range(3):  # warm: the pool, and both compiled policies
            assert (
                await client.post(url, json=body, headers=team.admin.headers)
            ).status_code == 200
        with count_queries(database) as queries:
            response = await client.post(url, json=body, headers=team.admin.headers)
        assert response.status_code == 200
        counts.append(len(queries))
    assert counts == [1, 1 if database.engine.dialect.name == "postgresql" else 2], counts


async def test_bad_checksum_opens_no_connection(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin
) -> None:
    key = team.admin.key
    headers = {"x-api-key": key[:-1] + ("A" if key[-1] != "A" else "B")}
    with count_queries(database) as queries, count_checkouts(database) as checkouts:
        read = await client.get(team.url("servers", "linear"), headers=headers)
        write = await client.post(
            team.url("servers"),
            json={"handle": "other", "url": "https://x.example/mcp"},
            headers=headers,
        )
    assert (read.status_code, write.status_code) == (401, 401)
    assert queries == []
    assert checkouts.count == 0


async def test_probes_open_no_connection(client: httpx2.AsyncClient, database: Database) -> None:
    """``/metrics`` reads the key-rotation backlog at most every 30 s; the scrapes between, and
    every liveness probe, touch no database."""
    assert (await client.get("/metrics")).status_code == 200
    with count_checkouts(database) as checkouts:
        assert (await client.get("/healthz")).status_code == 200
        assert (await client.get("/metrics")).status_code == 200
    assert checkouts.count == 0


async def test_revoked_key_fails_on_the_next_request_on_a_warm_pool(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin
) -> None:
    url = team.url("servers", "linear")
    await _warm(client, url, team.admin.headers)
    async with owner_session(database) as session:  # as another replica or the CLI would
        await session.execute(
            update(ApiKey)
            .where(ApiKey.principal_id == team.admin.principal_id)
            .values(revoked_at=clock.now())
        )
    assert (await client.get(url, headers=team.admin.headers)).status_code == 401


async def test_expired_key_fails_on_the_next_request_on_a_warm_pool(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin, clock_control: ClockControl
) -> None:
    async with owner_session(database) as session:
        await session.execute(
            update(ApiKey)
            .where(ApiKey.principal_id == team.admin.principal_id)
            .values(expires_at=clock.now() + timedelta(seconds=30))
        )
    url = team.url("servers", "linear")
    await _warm(client, url, team.admin.headers)
    clock_control.advance(31)
    assert (await client.get(url, headers=team.admin.headers)).status_code == 401


async def test_disabled_principal_fails_on_the_next_request_on_a_warm_pool(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin
) -> None:
    other = await make_principal(database, team.tenant_id, role="deployer")
    url = team.url("servers", "linear")
    await _warm(client, url, other.headers)
    deleted = await client.delete(
        team.url("principals", other.principal_id), headers=team.admin.headers
    )
    assert deleted.status_code == 204
    assert (await client.get(url, headers=other.headers)).status_code == 401


async def test_disabled_tenant_fails_on_the_next_request_on_a_warm_pool(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin
) -> None:
    platform = await make_platform_admin(database)
    url = team.url("servers", "linear")
    await _warm(client, url, team.admin.headers)
    disabled = await client.delete(f"/tenants/{team.tenant_id}", headers=platform.headers)
    assert disabled.status_code == 204
    assert (await client.get(url, headers=team.admin.headers)).status_code == 401


async def test_concurrent_write_requests_queue_instead_of_failing(
    client: httpx2.AsyncClient, team: TenantAdmin
) -> None:
    async def create(i: int) -> int:
        response = await client.post(
            team.url("servers"),
            json={"handle": f"srv{i}", "url": f"https://mcp{i}.example.com/mcp"},
            headers=team.admin.headers,
        )
        return response.status_code

    statuses = await asyncio.gather(*(create(i) for i in range(10)))
    assert statuses == [201] * 10
    listed = await client.get(team.url("servers"), headers=team.admin.headers)
    assert len(listed.json()["data"]) == 11


async def test_authenticating_a_write_never_waits_for_the_write_lock(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin
) -> None:
    """A write request's authentication reads in a transaction of its own: a key that fails is
    refused while another writer holds SQLite's lock (it would wait out the busy timeout if
    authentication took the lock at ``BEGIN IMMEDIATE``)."""
    if not database.is_sqlite:
        pytest.skip("SQLite's database-wide write lock")
    revoked = await make_principal(database, team.tenant_id)
    async with owner_session(database) as session:
        await session.execute(
            update(ApiKey)
            .where(ApiKey.principal_id == revoked.principal_id)
            .values(revoked_at=clock.now())
        )
    async with owner_session(database, write=True) as holder:
        await holder.execute(text("SELECT 1"))  # BEGIN IMMEDIATE: the lock is held from here
        response = await asyncio.wait_for(
            client.post(
                team.url("servers"),
                json={"handle": f"h{uuid.uuid4().hex[:8]}", "url": "https://x.example/mcp"},
                headers=revoked.headers,
            ),
            timeout=5,
        )
    assert response.status_code == 401


async def test_a_grant_check_never_waits_for_the_write_lock(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin
) -> None:
    """``grants/check`` is a POST that only reads: its session is a read session, so it answers
    while another writer holds SQLite's lock."""
    if not database.is_sqlite:
        pytest.skip("SQLite's database-wide write lock")
    body = {"principal_id": str(team.admin.principal_id), "resource": "server:x", "action": "read"}
    url = team.url("grants", "check")
    assert (await client.post(url, json=body, headers=team.admin.headers)).status_code == 200
    async with owner_session(database, write=True) as holder:
        await holder.execute(text("SELECT 1"))  # BEGIN IMMEDIATE: the lock is held from here
        response = await asyncio.wait_for(
            client.post(url, json=body, headers=team.admin.headers), timeout=5
        )
    assert response.status_code == 200
    assert response.json()["data"]["effect"] == "allow"


async def test_a_read_never_waits_for_the_write_lock(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin
) -> None:
    """Reads run outside transactions (on SQLite, on the event loop's thread): in WAL they answer
    while another writer holds the lock, and the writer's uncommitted change is not seen."""
    if not database.is_sqlite:
        pytest.skip("SQLite's database-wide write lock")
    url = team.url("servers", "linear")
    await _warm(client, url, team.admin.headers)  # last_used_at is fresh: no touch is due
    async with owner_session(database, write=True) as holder:
        await holder.execute(
            text("UPDATE servers SET url = 'https://changed.example/mcp' WHERE handle = 'linear'")
        )
        response = await asyncio.wait_for(client.get(url, headers=team.admin.headers), timeout=5)
        await holder.rollback()
    assert response.status_code == 200
    assert response.json()["data"]["url"] == "https://mcp.example.com/mcp"

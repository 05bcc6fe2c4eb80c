"""A route's first read sent with the caller's key (hub.core.readahead, hub.auth.ahead).

On PostgreSQL ``GET …/servers/{handle}`` is one statement: the key's lookup joined with the
server's read (and ``POST …/grants/check`` with the named principal's ``grants_version``, taken
from the body: tests/auth/test_request_path.py counts it). What must not change: the answer (the
row of the path's tenant, the caller's own, whatever scope the pooled connection had before), a
404 for another tenant's path or principal or an absent handle, a 400 for a body the read could
not use, a key that fails authentication never sees a row, and a remembered row answers one read
of a read session and nothing else. On SQLite the route reads twice, as before.
"""

from __future__ import annotations

import uuid

import httpx2
from sqlalchemy import select

from hub.auth.ahead import find_key_ahead
from hub.auth.key_format import hash_key, parse_key
from hub.core import readahead, rls
from hub.core.db import Database
from hub.core.statements import read_row
from hub.core.tenancy import tenant_params
from hub.models import Tenant
from hub.servers.repository import ROW_BY_HANDLE_AHEAD
from tests.support.factories import (
    PEPPER,
    make_platform_admin,
    make_server,
    make_tenant,
    scope_of,
)
from tests.support.queries import count_queries
from tests.support.stories import TenantAdmin, make_tenant_admin


def _postgresql(database: Database) -> bool:
    return database.engine.dialect.name == "postgresql"


async def _team(database: Database, handle: str = "linear") -> tuple[TenantAdmin, uuid.UUID]:
    team = await make_tenant_admin(database)
    return team, await make_server(database, team.tenant_id, handle)


async def test_a_get_by_handle_is_one_statement_on_postgresql(
    client: httpx2.AsyncClient, database: Database
) -> None:
    team, server_id = await _team(database)
    url = team.url("servers", "linear")
    for _ in range(2):  # warm: the pool, the caller's policy
        assert (await client.get(url, headers=team.admin.headers)).status_code == 200
    with count_queries(database) as queries:
        response = await client.get(url, headers=team.admin.headers)
    assert response.status_code == 200
    assert response.json()["data"]["id"] == str(server_id)
    if _postgresql(database):
        assert len(queries) == 1, queries
        assert "hub_auth_key" in queries[0]
        assert "servers" in queries[0]
    else:
        assert len(queries) == 2, queries


async def test_alternating_tenants_each_get_their_own_row_in_one_statement(
    client: httpx2.AsyncClient, database: Database
) -> None:
    """The pooled connection was last scoped to the other tenant: the joined read still runs
    in the key's tenant (the key is read first), so each answer is its own row, never a 404."""
    teams = [await _team(database), await _team(database)]  # both name their server "linear"
    for team, _ in teams:  # warm: each key's last_used_at, each caller's policy
        assert (
            await client.get(team.url("servers", "linear"), headers=team.admin.headers)
        ).status_code == 200
    for _ in range(3):
        for team, server_id in teams:
            with count_queries(database) as queries:
                response = await client.get(
                    team.url("servers", "linear"), headers=team.admin.headers
                )
            assert response.status_code == 200
            assert response.json()["data"]["id"] == str(server_id)
            assert len(queries) == (1 if _postgresql(database) else 2), queries


async def test_an_absent_handle_is_read_again_and_is_404(
    client: httpx2.AsyncClient, database: Database
) -> None:
    team, _ = await _team(database)
    url = team.url("servers", "nothing-here")
    await client.get(url, headers=team.admin.headers)  # warm
    with count_queries(database) as queries:
        response = await client.get(url, headers=team.admin.headers)
    assert response.status_code == 404
    assert len(queries) == 2, queries  # on PostgreSQL: the joined read, then the route's own


async def test_another_tenants_server_stays_404(
    client: httpx2.AsyncClient, database: Database
) -> None:
    """Tenant B's admin names tenant A in the path, with a handle both tenants have: the row read
    with B's key is B's, which A's path never takes."""
    (a, _a_server), (b, _b_server) = await _team(database), await _team(database)
    response = await client.get(a.url("servers", "linear"), headers=b.admin.headers)
    assert response.status_code == 404


async def test_the_platform_admin_reads_a_tenants_server(
    client: httpx2.AsyncClient, database: Database
) -> None:
    """The platform admin has no tenant: nothing is joined and the route reads for itself."""
    team, server_id = await _team(database)
    admin = await make_platform_admin(database)
    response = await client.get(team.url("servers", "linear"), headers=admin.headers)
    assert response.status_code == 200
    assert response.json()["data"]["id"] == str(server_id)


async def test_the_row_comes_only_with_the_keys_own_hash(database: Database) -> None:
    team, server_id = await _team(database)
    parsed = parse_key(team.admin.key)
    assert parsed is not None
    right = hash_key(PEPPER, parsed.full)
    found = {}
    for label, key_hash in (("right", right), ("wrong", "0" * 64)):
        rls.expect_scope_from_statement()
        async with database.reads() as session:
            record, row = await find_key_ahead(
                session, parsed.key_id, key_hash, ROW_BY_HANDLE_AHEAD, {"handle": "linear"}
            )
        assert record is not None
        assert record.principal_id == team.admin.principal_id
        found[label] = row
    assert found["wrong"] is None
    if _postgresql(database):
        assert found["right"] is not None
        assert found["right"].id == server_id
        assert found["right"].handle == "linear"
    else:  # SQLite: the key alone, the route reads the server itself
        assert found["right"] is None


async def test_a_remembered_row_answers_one_read_of_a_read_session_only(
    database: Database,
) -> None:
    tenant = await make_tenant(database)
    statement = select(Tenant.__table__.c.id).where(Tenant.__table__.c.id == tenant.id)
    params = tenant_params(scope_of(tenant.id))
    marker = ("remembered",)
    async with database.reads() as session:
        readahead.remember(session, statement, params, marker)
        assert await read_row(session, statement, {**params, "other": 1}) != marker
        assert await read_row(session, statement, params) == marker
        assert await read_row(session, statement, params) != marker  # given once
    async with database.session() as session:  # a write session reads for itself
        readahead.remember(session, statement, params, marker)
        with rls.scope(scope_of(tenant.id)):
            assert await read_row(session, statement, params) != marker


async def test_a_check_naming_another_tenants_principal_stays_404(
    client: httpx2.AsyncClient, database: Database
) -> None:
    (a, _), (b, _) = await _team(database), await _team(database)
    body = {"principal_id": str(b.admin.principal_id), "resource": "server:x", "action": "read"}
    response = await client.post(a.url("grants", "check"), json=body, headers=a.admin.headers)
    assert response.status_code == 404
    body["principal_id"] = str(a.admin.principal_id).upper()  # another spelling of a UUID
    response = await client.post(a.url("grants", "check"), json=body, headers=a.admin.headers)
    assert response.status_code == 200


async def test_a_body_the_read_cannot_use_is_the_routes_to_refuse(
    client: httpx2.AsyncClient, database: Database
) -> None:
    team, _ = await _team(database)
    url = team.url("grants", "check")
    headers = team.admin.headers
    for body in ({"principal_id": "not-a-uuid", "resource": "server:x", "action": "read"}, [1]):
        response = await client.post(url, json=body, headers=headers)
        assert response.status_code == 400, response.text
    garbage = await client.post(
        url, content=b"\xff{", headers={**headers, "content-type": "application/json"}
    )
    assert garbage.status_code == 400
    assert (await client.post(url, content=b"", headers=headers)).status_code == 400


async def test_a_handle_the_route_would_refuse_is_never_sent_ahead(
    client: httpx2.AsyncClient, database: Database
) -> None:
    """Not a handle (the route answers 404 without a query), or text no database takes (a NUL):
    the key is read alone, and the answer is the route's 404, never a database error."""
    team, _ = await _team(database)
    await client.get(team.url("servers", "linear"), headers=team.admin.headers)  # warm
    for raw in ("%00linear", "linear%00", "Linear", "-x"):
        with count_queries(database) as queries:
            response = await client.get(team.url("servers", raw), headers=team.admin.headers)
        assert response.status_code == 404, (raw, response.text)
        assert len(queries) == 1, queries  # the key's read alone
        assert "servers" not in queries[0]

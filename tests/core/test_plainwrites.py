"""One-statement writes (:func:`hub.core.db.write_alone`), on both backends.

On PostgreSQL a read session commits each statement on its own, so a write it has no
connection for is sent by asyncpg past the session (:func:`hub.core.plainreads.execute`), as the
approval's consuming ``UPDATE`` and the audit writer's append are. What it must keep of the
session's way: the row count, a commit of its own, the row-level security scope of the context,
SQLAlchemy's exceptions for a statement the server refuses (nothing written, the connection
kept); and everywhere else (SQLite, a session holding a transaction) the session's own way.
"""

from __future__ import annotations

import uuid
from typing import Any, cast

import pytest
from sqlalchemy import Table, Update, bindparam, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from hub.core import plainreads, rls
from hub.core.db import Database
from hub.core.statements import write_alone, write_alone_returning
from hub.core.tenancy import TENANT_PARAM
from hub.models import Server
from tests.support.factories import make_server, make_tenant, scope_of
from tests.support.queries import count_checkouts, count_statements

_SERVERS = cast(Table, Server.__table__)
_MOVE = (
    update(_SERVERS)
    .where(_SERVERS.c.tenant_id == bindparam("scope"), _SERVERS.c.handle == bindparam("name"))
    .values(url=bindparam("url"))
)
_RENAME = (
    update(_SERVERS)
    .where(_SERVERS.c.tenant_id == bindparam("scope"), _SERVERS.c.handle == bindparam("name"))
    .values(handle=bindparam("new_handle"))
)
_URL = select(_SERVERS.c.url).where(
    _SERVERS.c.tenant_id == bindparam(TENANT_PARAM), _SERVERS.c.handle == bindparam("name")
)


#: the two ways of a one-statement write: its row count, or its RETURNING rows
WAYS = pytest.mark.parametrize("returning", [False, True], ids=["count", "returning"])


async def _written(
    session: AsyncSession, statement: Update, params: dict[str, Any], *, returning: bool
) -> int:
    """How many rows ``statement`` wrote, by :func:`write_alone` or, with its ``RETURNING``
    (the row's id), by :func:`write_alone_returning`."""
    if not returning:
        return await write_alone(session, statement, params)
    return len(await write_alone_returning(session, statement.returning(_SERVERS.c.id), params))


async def _url_of(database: Database, tenant_id: uuid.UUID, handle: str) -> str:
    with rls.scope(scope_of(tenant_id)):
        async with database.session(write=False) as session:
            found = (
                await session.execute(_URL, {TENANT_PARAM: tenant_id, "name": handle})
            ).scalar()
    assert isinstance(found, str)
    return found


async def test_a_write_alone_counts_its_rows_and_commits_on_its_own(database: Database) -> None:
    tenant = await make_tenant(database)
    await make_server(database, tenant.id, "linear")
    params = {"scope": tenant.id, "name": "linear", "url": "https://moved.example.com/mcp"}
    with rls.scope(scope_of(tenant.id)), count_statements(database) as sent:
        async with database.reads() as session:
            assert await write_alone(session, _MOVE, params) == 1
            if not database.is_sqlite:  # past the session: it never held a connection
                assert not session.in_transaction()
            missing = {**params, "name": "absent"}
            assert await write_alone(session, _MOVE, missing) == 0
    plan = plainreads.plan_of(_MOVE, database.engine.dialect)
    assert plan is not None
    assert plan.dml
    if not database.is_sqlite:
        assert sent.count(plan.sql) == 2  # sent past the session, as plain statements
    assert await _url_of(database, tenant.id, "linear") == "https://moved.example.com/mcp"


@WAYS
async def test_a_write_alone_stays_in_its_contexts_scope(
    database: Database, returning: bool
) -> None:
    if database.is_sqlite:
        pytest.skip("row-level security is PostgreSQL's")
    owner = await make_tenant(database)
    other = await make_tenant(database)
    await make_server(database, owner.id, "linear")
    params = {"scope": owner.id, "name": "linear", "url": "https://other.example.com/mcp"}
    with rls.scope(scope_of(other.id)):  # another tenant's scope: the row is not there
        async with database.reads() as session:
            assert await _written(session, _MOVE, params, returning=returning) == 0
    assert await _url_of(database, owner.id, "linear") == "https://mcp.example.com/mcp"


@WAYS
async def test_a_refused_write_alone_raises_sqlalchemys_error_and_writes_nothing(
    database: Database, returning: bool
) -> None:
    tenant = await make_tenant(database)
    await make_server(database, tenant.id, "linear")
    await make_server(database, tenant.id, "github")
    clash = {"scope": tenant.id, "name": "github", "new_handle": "linear"}  # handles are unique
    with rls.scope(scope_of(tenant.id)), count_checkouts(database) as checkouts:
        async with database.reads() as session:
            with pytest.raises(IntegrityError):
                await _written(session, _RENAME, clash, returning=returning)
        async with database.reads() as session:
            kept = {"scope": tenant.id, "name": "github", "url": "https://gh.example.com/mcp"}
            assert await _written(session, _MOVE, kept, returning=returning) == 1
    if not database.is_sqlite:  # the connection the server kept served the next statement
        assert checkouts.connections[-1] is checkouts.connections[0]
    assert await _url_of(database, tenant.id, "github") == "https://gh.example.com/mcp"


@WAYS
async def test_a_write_alone_in_a_transaction_is_the_transactions(
    database: Database, returning: bool
) -> None:
    tenant = await make_tenant(database)
    await make_server(database, tenant.id, "linear")
    params = {"scope": tenant.id, "name": "linear", "url": "https://undone.example.com/mcp"}
    with rls.scope(scope_of(tenant.id)):
        async with database.session() as session:
            assert await _written(session, _MOVE, params, returning=returning) == 1
            await session.rollback()
    assert await _url_of(database, tenant.id, "linear") == "https://mcp.example.com/mcp"


_MOVED = _MOVE.returning(_SERVERS.c.handle, _SERVERS.c.url)


async def test_a_write_with_returning_returns_its_rows_and_commits_on_its_own(
    database: Database,
) -> None:
    tenant = await make_tenant(database)
    await make_server(database, tenant.id, "linear")
    url = "https://returned.example.com/mcp"
    params = {"scope": tenant.id, "name": "linear", "url": url}
    with rls.scope(scope_of(tenant.id)), count_statements(database) as sent:
        async with database.reads() as session:
            rows = await write_alone_returning(session, _MOVED, params)
            assert [(row.handle, row.url) for row in rows] == [("linear", url)]
            assert tuple(rows[0]) == ("linear", url)
            if not database.is_sqlite:  # past the session: it never held a connection
                assert not session.in_transaction()
            missing = {**params, "name": "absent"}
            assert await write_alone_returning(session, _MOVED, missing) == []
    plan = plainreads.plan_of(_MOVED, database.engine.dialect)
    assert plan is not None
    assert (plan.dml, plan.returning) == (True, True)
    if not database.is_sqlite:
        assert sent.count(plan.sql) == 2  # sent past the session, as plain statements
    assert await _url_of(database, tenant.id, "linear") == url


async def test_write_alone_counts_a_write_with_returning(database: Database) -> None:
    """Only :func:`write_alone_returning` sends one past the session; ``write_alone`` runs it
    through the session and counts its rows."""
    tenant = await make_tenant(database)
    await make_server(database, tenant.id, "linear")
    params = {"scope": tenant.id, "name": "linear", "url": "https://counted.example.com/mcp"}
    with rls.scope(scope_of(tenant.id)):
        async with database.reads() as session:
            assert await write_alone(session, _MOVED, params) == 1
    assert await _url_of(database, tenant.id, "linear") == "https://counted.example.com/mcp"

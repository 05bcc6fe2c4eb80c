"""Plain reads past the session (:mod:`hub.core.plainreads`), on both backends.

What they must keep of a read through the session: the same row (values and types, by position
and by name); a session's own connection and writes when it has them; one connection at a time;
on PostgreSQL, the row-level security scope of the context (never a scope a pooled connection
was left holding) and SQLAlchemy's handling of a dropped connection (a 503, then a fresh one).
"""

from __future__ import annotations

import sqlite3
import uuid
from typing import Any

import pytest
from sqlalchemy import Integer, bindparam, column, select, text
from sqlalchemy.exc import DBAPIError

from hub.auth import repository as auth_repository
from hub.auth.key_format import parse_key
from hub.core import clock, plainreads, rls
from hub.core.db import Database
from hub.core.statements import read_row, read_rows
from hub.core.tenancy import TENANT_PARAM, tenant_params
from hub.models import Server
from tests.support.databases import owner_session
from tests.support.factories import make_principal, make_server, make_tenant, scope_of
from tests.support.queries import count_checkouts, count_statements

_BY_HANDLE = select(Server.__table__).where(
    Server.__table__.c.tenant_id == bindparam(TENANT_PARAM),
    Server.__table__.c.handle == bindparam("handle"),
    Server.__table__.c.deleted_at.is_(None),
)
#: no tenant filter of its own: only row-level security keeps another tenant's rows out
_HANDLES = select(Server.__table__.c.handle).where(Server.__table__.c.url == bindparam("url"))
_URL = "https://mcp.example.com/mcp"
_PID = text("SELECT pg_backend_pid() AS pid").columns(column("pid", Integer))


def _new_server(tenant_id: uuid.UUID, handle: str) -> Server:
    now = clock.now()
    return Server(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        handle=handle,
        url=_URL,
        created_at=now,
        updated_at=now,
    )


async def _server_row_both_ways(database: Database, tenant_id: uuid.UUID) -> tuple[Any, Any]:
    params = tenant_params(scope_of(tenant_id), handle="linear")
    with rls.scope(scope_of(tenant_id)):
        async with database.reads() as session:
            plain = await read_row(session, _BY_HANDLE, params)
            assert not session.in_transaction()  # read past the session
        async with database.reads() as session:
            await session.execute(text("SELECT 1"))  # the session holds a connection now
            through = await read_row(session, _BY_HANDLE, params)
    return plain, through


async def test_a_plain_row_is_the_sessions_row(database: Database) -> None:
    tenant = await make_tenant(database)
    await make_server(database, tenant.id, "linear")
    plain, through = await _server_row_both_ways(database, tenant.id)
    assert plain is not None
    assert through is not None
    assert tuple(plain) == tuple(through)
    assert [type(v) for v in plain] == [type(v) for v in through]
    assert plain.handle == through.handle == "linear"
    assert isinstance(plain.id, uuid.UUID)
    assert plain.created_at.tzinfo is not None
    assert plain.created_at == through.created_at


async def test_the_key_read_is_the_sessions_read(database: Database) -> None:
    tenant = await make_tenant(database)
    actor = await make_principal(database, tenant.id)
    parsed = parse_key(actor.key)
    assert parsed is not None
    key_id = parsed.key_id
    rls.expect_scope_from_statement()
    async with database.reads() as session:
        plain = await auth_repository.find_key(session, key_id)
        assert not session.in_transaction()
    rls.expect_scope_from_statement()
    async with database.reads() as session:
        await session.execute(text("SELECT 1"))
        through = await auth_repository.find_key(session, key_id)
    assert plain is not None
    assert plain == through
    assert plain.principal_id == actor.principal_id
    if not database.is_sqlite:  # the definer set the caller's scope, noted for this context
        assert rls.current() == str(tenant.id)


async def test_a_write_session_reads_its_own_uncommitted_row(database: Database) -> None:
    tenant = await make_tenant(database)
    with rls.scope(scope_of(tenant.id)):
        async with database.session() as session:
            session.add(_new_server(tenant.id, "fresh"))
            await session.flush()
            params = tenant_params(scope_of(tenant.id), handle="fresh")
            row = await read_row(session, _BY_HANDLE, params)
            assert row is not None
            assert row.handle == "fresh"
            await session.rollback()


async def test_reads_hold_one_connection_at_a_time_and_are_reported(database: Database) -> None:
    tenant = await make_tenant(database)
    await make_server(database, tenant.id, "linear")
    params = tenant_params(scope_of(tenant.id), handle="linear")
    with (
        rls.scope(scope_of(tenant.id)),
        count_checkouts(database) as checkouts,
        count_statements(database) as sent,
    ):
        async with database.reads() as session:
            rows = [await read_row(session, _BY_HANDLE, params) for _ in range(3)]
    assert all(r is not None and r.handle == "linear" for r in rows)
    if database.is_sqlite:  # the file's own connection for plain reads: no checkout at all
        assert checkouts.count == 0
    else:  # at most one checkout: the pool keeps the connection for the next plain read
        assert checkouts.count <= 1
        assert checkouts.most <= 1
    assert sum("FROM servers" in s for s in sent) == 3


async def test_several_rows_and_none(database: Database) -> None:
    tenant = await make_tenant(database)
    for handle in ("a", "b"):
        await make_server(database, tenant.id, handle)
    with rls.scope(scope_of(tenant.id)):
        async with database.reads() as session:
            found = await read_rows(session, _HANDLES, {"url": _URL})
            none = await read_row(
                session, _BY_HANDLE, tenant_params(scope_of(tenant.id), handle="missing")
            )
    assert sorted(r.handle for r in found) == ["a", "b"]
    assert none is None


async def test_a_connection_left_in_another_scope_shows_only_this_scopes_rows(
    database: Database,
) -> None:
    if database.is_sqlite:
        pytest.skip("row-level security is PostgreSQL's")
    mine, theirs = await make_tenant(database), await make_tenant(database)
    await make_server(database, mine.id, "linear")
    await make_server(database, theirs.id, "other")
    for first, then, expected in ((theirs, mine, "linear"), (mine, theirs, "other")):
        with rls.scope(scope_of(first.id)):  # the pooled connection now holds this scope
            async with database.reads() as session:
                assert len(await read_rows(session, _HANDLES, {"url": _URL})) == 1
        with rls.scope(scope_of(then.id)):
            async with database.reads() as session:
                seen = await read_rows(session, _HANDLES, {"url": _URL})
        assert [r.handle for r in seen] == [expected]
    async with database.reads() as session:  # no scope: nothing of anyone's
        assert await read_rows(session, _HANDLES, {"url": _URL}) == []


async def test_a_dropped_connection_is_invalidated_and_the_next_read_reconnects(
    database: Database,
) -> None:
    if database.is_sqlite:
        pytest.skip("a server that drops connections is PostgreSQL's")
    tenant = await make_tenant(database)
    await make_server(database, tenant.id, "linear")
    params = tenant_params(scope_of(tenant.id), handle="linear")
    pids: list[int] = []
    with rls.scope(scope_of(tenant.id)):
        async with database.reads() as session:
            assert await read_row(session, _BY_HANDLE, params) is not None
            pids.append((await read_row(session, _PID, {})).pid)  # the same, kept, connection
    async with owner_session(database) as owner:  # the pooled connection's backend goes away
        await owner.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pids[0]})
    with rls.scope(scope_of(tenant.id)):
        async with database.reads() as session:
            with pytest.raises(DBAPIError) as failed:
                await read_row(session, _BY_HANDLE, params)
        assert failed.value.connection_invalidated  # the handlers answer 503
        async with database.reads() as session:
            again = await read_row(session, _BY_HANDLE, params)
    assert again is not None
    assert again.handle == "linear"


async def test_a_statement_the_server_refuses_raises_sqlalchemys_error_on_a_kept_connection(
    database: Database,
) -> None:
    """asyncpg sends these reads itself; a failure still leaves as SQLAlchemy's exception (the
    adapter's, the read made once more through it), and the connection, which the server kept,
    goes back to the pool and serves the next read."""
    if database.is_sqlite:
        pytest.skip("SQLite divides by zero without an error")
    divide = text("SELECT 1 / :divisor AS quotient").columns(column("quotient", Integer))
    plan = plainreads.plan_of(divide, database.engine.dialect)
    assert plan is not None
    async with database.reads() as session:
        with (
            count_statements(database) as sent,
            count_checkouts(database) as failing,
            pytest.raises(DBAPIError) as failed,
        ):
            await read_row(session, divide, {"divisor": 0})
    assert type(failed.value.orig).__module__.startswith("sqlalchemy")  # the adapter's error
    assert "division by zero" in str(failed.value.orig)
    assert not failed.value.connection_invalidated
    assert sent.count(plan.sql) == 2  # asyncpg's attempt, then the adapter's
    async with database.reads() as session:
        with count_checkouts(database) as next_read:
            assert (await read_row(session, divide, {"divisor": 2})).quotient == 0
    assert next_read.connections[0] is failing.connections[-1]  # kept, not dropped


def test_a_statement_without_columns_has_no_plan(database: Database) -> None:
    dialect = database.engine.dialect
    assert plainreads.plan_of(text("SELECT 1"), dialect) is None  # no typed columns
    assert plainreads.plan_of(_BY_HANDLE, dialect) is plainreads.plan_of(_BY_HANDLE, dialect)


async def test_an_sqlite_files_reader_closes_with_its_engine_and_opens_again(
    database: Database,
) -> None:
    if not database.is_sqlite:
        pytest.skip("the reader connection is an SQLite file's")
    tenant = await make_tenant(database)
    await make_server(database, tenant.id, "linear")
    params = tenant_params(scope_of(tenant.id), handle="linear")
    reader = plainreads._sqlite_readers[database.engine.dialect]
    async with database.reads() as session:
        assert await read_row(session, _BY_HANDLE, params) is not None
    opened = reader._connection
    assert opened is not None
    await database.engine.dispose()
    assert reader._connection is not opened
    with pytest.raises(sqlite3.ProgrammingError):  # closed with the engine
        opened.execute("SELECT 1")
    async with database.reads() as session:
        again = await read_row(session, _BY_HANDLE, params)
    assert again is not None
    assert again.handle == "linear"


async def test_a_driver_error_is_sqlalchemys(database: Database) -> None:
    typed = text("SELECT handle FROM no_such_table WHERE url = :url").columns(
        Server.__table__.c.handle
    )
    assert plainreads.plan_of(typed, database.engine.dialect) is not None  # read past the session
    async with database.reads() as session:
        with pytest.raises(DBAPIError):
            await read_rows(session, typed, {"url": _URL})


async def test_a_failed_read_leaves_its_connection_transactional(database: Database) -> None:
    """After a plain read fails, the next session on its (pooled, most recently returned)
    connection still runs in a transaction: its rollback undoes its write."""
    typed = text("SELECT handle FROM no_such_table WHERE url = :url").columns(
        Server.__table__.c.handle
    )
    async with database.reads() as session:
        with pytest.raises(DBAPIError):
            await read_rows(session, typed, {"url": _URL})
    tenant = await make_tenant(database)
    with rls.scope(scope_of(tenant.id)):
        session = database.sessionmaker(write=True)()
        try:
            session.add(_new_server(tenant.id, "undone"))
            await session.flush()
            await session.rollback()
        finally:
            await session.close()
        async with database.reads() as reader:
            assert await read_rows(reader, _HANDLES, {"url": _URL}) == []

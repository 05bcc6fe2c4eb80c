"""Database behaviour the hub relies on, on both backends."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import Column, MetaData, Table, Uuid, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from hub.core.db import Database
from hub.core.dbtypes import UTCDateTime
from hub.core.statements import read_row
from tests.support.databases import as_owner

_meta = MetaData()
_probe = Table(
    "_probe_times", _meta, Column("id", Uuid(), primary_key=True), Column("at", UTCDateTime())
)


async def test_datetimes_come_back_utc_aware(session: AsyncSession) -> None:
    import uuid

    conn = await session.connection()
    await conn.run_sync(lambda c: _probe.create(c))
    paris = timezone(timedelta(hours=1))
    stamp = datetime(2026, 11, 30, 12, 0, tzinfo=paris)
    row_id = uuid.uuid4()
    await session.execute(_probe.insert().values(id=row_id, at=stamp))
    value = (await session.execute(select(_probe.c.at))).scalar_one()
    assert value.tzinfo is not None
    assert value.utcoffset() == timedelta(0)
    assert value == stamp
    with pytest.raises(Exception, match="naive"):
        await session.execute(_probe.insert().values(id=uuid.uuid4(), at=datetime(2026, 1, 1)))  # noqa: DTZ001


async def test_sqlite_pragmas(tmp_path: Path) -> None:
    db = Database.from_url(f"sqlite+aiosqlite:///{tmp_path / 'p.db'}")
    try:
        async with db.engine.connect() as conn:
            assert (await conn.execute(text("PRAGMA foreign_keys"))).scalar_one() == 1
            assert (await conn.execute(text("PRAGMA journal_mode"))).scalar_one() == "wal"
    finally:
        await db.dispose()


async def test_concurrent_writers_queue_instead_of_failing(database: Database) -> None:
    """Write sessions take the lock at BEGIN, so read-then-write transactions never deadlock."""
    engine = database.engine
    # made by the owner (the app's role makes no tables; default privileges grant it this one)
    async with as_owner(engine) as owner, owner.begin() as conn:
        await conn.execute(text("CREATE TABLE IF NOT EXISTS _probe_counter (n INTEGER NOT NULL)"))
        await conn.execute(text("DELETE FROM _probe_counter"))
        await conn.execute(text("INSERT INTO _probe_counter (n) VALUES (0)"))

    async def bump() -> None:
        async with database.session(write=True) as session:
            query = "SELECT n FROM _probe_counter"
            if not database.is_sqlite:
                query += " FOR UPDATE"
            n = (await session.execute(text(query))).scalar_one()
            await asyncio.sleep(0.01)
            await session.execute(text("UPDATE _probe_counter SET n = :n"), {"n": n + 1})

    try:
        await asyncio.gather(*(bump() for _ in range(10)))
        async with engine.connect() as conn:
            assert (await conn.execute(text("SELECT n FROM _probe_counter"))).scalar_one() == 10
    finally:
        async with as_owner(engine) as owner, owner.begin() as conn:
            await conn.execute(text("DROP TABLE _probe_counter"))


def test_utc_helper_is_aware() -> None:
    from hub.core.clock import now

    assert now().tzinfo is UTC


async def test_a_reads_session_gives_every_connection_back(database: Database) -> None:
    """``Database.reads`` closes a session only when it holds something (a connection in a
    transaction, loaded rows): one whose reads went past it is left, and either way the pool has
    every connection back once the block ends."""
    pool = database.engine.pool
    tenants = text("SELECT count(*) FROM tenants")
    async with database.reads() as session:
        assert await read_row(session, tenants, {}) is not None
        assert await read_row(session, tenants, {}) is not None
    assert pool.checkedout() == 0  # type: ignore[attr-defined]
    async with database.reads() as session:
        assert (await session.execute(tenants)).scalar_one() == 0  # on the session's connection
        assert session.in_transaction()
    assert not session.in_transaction()
    assert pool.checkedout() == 0  # type: ignore[attr-defined]

"""PostgreSQL's pool keeps connections between plain reads (:mod:`hub.core.keptpool`).

What keeping must not change: the pool's limit (a session never waits for a connection a plain
read keeps idle), recycling and the pool's invalidation (a kept connection goes back to the pool
within ``KEEP_SECONDS``, and at once when the pool is invalidated), and disposal (kept connections
are closed with the engine). Each test makes an engine of its own on the worker's database, as
the app's role.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import Integer, column, event, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from hub.core import keptpool
from hub.core.db import Database, create_engine
from hub.core.keptpool import KeepingPool
from hub.core.statements import read_row
from tests.support.databases import owner_session
from tests.support.queries import count_checkouts

_PID = text("SELECT pg_backend_pid() AS pid").columns(column("pid", Integer))


@pytest.fixture
def pg_url(db_url: str) -> str:
    """The app's PostgreSQL URL; SQLite engines have no keeping pool (their plain reads have a
    connection of their own)."""
    if db_url.startswith("sqlite"):
        pytest.skip("the keeping pool is PostgreSQL's")
    return db_url


@pytest.fixture
async def small(pg_url: str) -> AsyncIterator[Database]:
    """A database whose pool holds (and may keep) at most two connections."""
    engine = create_engine(pg_url, pool_size=1)
    try:
        yield Database(engine)
    finally:
        await engine.dispose()


def _pool(database: Database) -> KeepingPool:
    pool = database.engine.sync_engine.pool
    assert isinstance(pool, KeepingPool)
    return pool


async def _pid(database: Database) -> int:
    async with database.reads() as session:
        row = await read_row(session, _PID, {})
    assert row is not None
    return int(row.pid)


async def test_plain_reads_share_one_kept_connection(small: Database) -> None:
    with count_checkouts(small) as checkouts:
        pids = {await _pid(small) for _ in range(3)}
    assert len(pids) == 1
    assert checkouts.count == 1  # the first read's; the next two took the kept connection
    assert checkouts.out == 1  # still out: kept
    assert _pool(small).kept() == 1


async def test_a_session_takes_the_kept_connection_instead_of_waiting(pg_url: str) -> None:
    """With a pool of one connection kept by a plain read, a session's checkout gets it at once;
    without the pool taking it back it would wait ``pool_timeout`` and fail."""
    engine: AsyncEngine = create_async_engine(
        pg_url, poolclass=KeepingPool, pool_size=1, max_overflow=0, pool_timeout=1
    )
    database = Database(engine)
    opened: list[object] = []
    event.listen(engine.sync_engine, "connect", lambda *args: opened.append(args[0]))
    try:
        kept = await _pid(database)
        assert _pool(database).kept() == 1
        async with database.session() as session:  # would raise TimeoutError after 1 s
            used = (await session.execute(text("SELECT pg_backend_pid()"))).scalar_one()
        assert used == kept
        assert len(opened) == 1
        assert _pool(database).kept() == 0
    finally:
        await engine.dispose()


async def test_a_connection_kept_too_long_goes_back_to_the_pool(
    small: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [1000.0]
    monkeypatch.setattr(keptpool, "monotonic", lambda: now[0])
    checkins: list[object] = []
    event.listen(small.engine.sync_engine.pool, "checkin", lambda *args: checkins.append(args))
    with count_checkouts(small) as checkouts:
        await _pid(small)
        await _pid(small)
        assert (checkouts.count, len(checkins)) == (1, 0)  # kept in between
        now[0] += keptpool.KEEP_SECONDS
        await _pid(small)  # the kept one is too old: checked in, then out again
    assert (checkouts.count, len(checkins)) == (2, 1)
    assert _pool(small).kept() == 1


async def test_disposing_the_engine_closes_kept_connections(small: Database) -> None:
    await _pid(small)
    pool = _pool(small)
    assert pool.kept() == 1
    closed: list[object] = []
    event.listen(pool, "close", lambda *args: closed.append(args[0]))
    await small.engine.dispose()
    assert len(closed) == 1
    assert pool.kept() == 0


async def test_a_disconnect_in_a_session_sends_the_kept_connections_back(
    small: Database,
) -> None:
    """The server goes away: a session finds out first, and SQLAlchemy invalidates the pool.
    The connection a plain read kept is as dead; it goes back to the pool, which reconnects
    it, so the next plain read succeeds instead of failing on it."""
    first, second = await asyncio.gather(_pid(small), _pid(small))  # both connections open
    assert first != second
    assert _pool(small).kept() == 2
    kept = await _pid(small)  # the most recently kept
    async with small.reads() as session:  # takes the other back from the pool's keeping
        used = (await session.execute(text("SELECT pg_backend_pid()"))).scalar_one()
        assert {kept, used} == {first, second}
        async with owner_session(small) as owner:
            for pid in (kept, used):
                await owner.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        with pytest.raises(DBAPIError) as failed:
            await session.execute(text("SELECT 1"))
        assert failed.value.connection_invalidated
    assert await _pid(small) not in {first, second}  # a new connection, no error


_PID_AFTER_A_WHILE = text(
    "SELECT pid FROM (SELECT pg_backend_pid() AS pid, pg_sleep(0.3)) AS slept"
).columns(column("pid", Integer))


async def test_one_read_finds_the_server_gone_and_the_pool_is_renewed(pg_url: str) -> None:
    """A restart (every backend terminated) costs one request its 503, not one per pooled
    connection: a plain read that finds its connection dead invalidates the whole pool, as
    SQLAlchemy does when a session finds out (stop 54; the resilience walk saw one 503 per
    idle connection)."""
    engine = create_engine(pg_url, pool_size=3)
    database = Database(engine)
    try:

        async def slow_pid() -> int:
            async with database.reads() as session:
                row = await read_row(session, _PID_AFTER_A_WHILE, {})
            assert row is not None
            return int(row.pid)

        pids = set(await asyncio.gather(slow_pid(), slow_pid(), slow_pid()))
        assert len(pids) == 3  # three connections open, idle in the pool or kept
        async with owner_session(database) as owner:
            for pid in pids:
                await owner.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        with pytest.raises(DBAPIError) as failed:
            await _pid(database)
        assert failed.value.connection_invalidated
        after = [await _pid(database) for _ in range(4)]  # no other dead connection handed out
        assert not set(after) & pids
    finally:
        await engine.dispose()

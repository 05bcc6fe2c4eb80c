"""The request's session at its exit (``hub.core.deps.request_session``), on both backends.

A read request's session is closed rather than committed when it holds no change, so what must
still hold is pinned here: a change left pending in a read session is committed, a request that
fails rolls its session back, every exit gives the connection back to the pool, and a read
session that never began a transaction (its reads were plain ones) is left as it is.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from types import SimpleNamespace

import pytest
from sqlalchemy import event, inspect, literal_column, select
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request

from hub.core import clock, rls
from hub.core.db import Database
from hub.core.deps import request_session
from hub.core.keptpool import KeepingPool
from hub.core.statements import read_row
from hub.models import Tenant
from tests.support.databases import owner_session
from tests.support.factories import make_tenant, scope_of


def _request(database: Database, method: str) -> Request:
    app = SimpleNamespace(state=SimpleNamespace(db=database))
    return Request({"type": "http", "method": method, "app": app, "headers": [], "state": {}})


def _tenant() -> Tenant:
    return Tenant(
        id=uuid.uuid4(),
        slug=f"t-{uuid.uuid4().hex[:10]}",
        name="Session exit",
        status="active",
        created_at=clock.now(),
    )


async def _exists(database: Database, tenant_id: uuid.UUID) -> bool:
    async with owner_session(database, write=False) as session:
        found = await session.execute(select(Tenant.id).where(Tenant.id == tenant_id))
        return found.scalar_one_or_none() is not None


class _Checkouts:
    def __init__(self, database: Database) -> None:
        self.out = 0
        pool = database.engine.sync_engine.pool
        self._keeper = pool if isinstance(pool, KeepingPool) else None
        self._kept_before = self._kept()
        event.listen(pool, "checkout", self._checkout)
        event.listen(pool, "checkin", self._checkin)

    def _kept(self) -> int:
        return 0 if self._keeper is None else self._keeper.kept()

    @property
    def held(self) -> int:
        """Connections still checked out, but for those PostgreSQL's pool keeps for the next
        plain read (hub.core.keptpool: out of any session's hands)."""
        return self.out - (self._kept() - self._kept_before)

    def _checkout(self, *_args: object) -> None:
        self.out += 1

    def _checkin(self, *_args: object) -> None:
        self.out -= 1


async def _run(
    database: Database,
    method: str,
    work: Callable[[AsyncSession], Awaitable[None]],
    *,
    fail: bool = False,
) -> None:
    request = _request(database, method)
    if fail:
        with pytest.raises(RuntimeError):
            await _fail_in(request, method, work)
        return
    async with request_session(request, writes=method != "GET") as session:
        await work(session)


async def _fail_in(
    request: Request, method: str, work: Callable[[AsyncSession], Awaitable[None]]
) -> None:
    async with request_session(request, writes=method != "GET") as session:
        await work(session)
        raise RuntimeError("the endpoint failed")


@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_a_pending_change_is_committed_at_exit(database: Database, method: str) -> None:
    tenant = _tenant()
    checkouts = _Checkouts(database)

    async def add(session: AsyncSession) -> None:
        await session.execute(select(Tenant.id).limit(1))  # holds a connection
        session.add(tenant)  # not flushed: only the exit's commit writes it

    await _run(database, method, add)
    assert await _exists(database, tenant.id)
    assert checkouts.out == 0


@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_a_failed_request_is_rolled_back(database: Database, method: str) -> None:
    tenant = _tenant()
    checkouts = _Checkouts(database)

    async def add(session: AsyncSession) -> None:
        session.add(tenant)
        if method == "POST":
            await session.flush()  # written in the request's transaction, then rolled back

    await _run(database, method, add, fail=True)
    assert not await _exists(database, tenant.id)
    assert checkouts.out == 0


async def test_a_clean_read_gives_its_connection_back(database: Database) -> None:
    checkouts = _Checkouts(database)

    async def read(session: AsyncSession) -> None:
        await session.execute(select(Tenant.id).limit(1))
        assert checkouts.out == 1

    await _run(database, "GET", read)
    assert checkouts.out == 0


async def test_a_read_session_left_untouched_has_nothing_to_close(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    closes: list[AsyncSession] = []
    close = AsyncSession.close

    async def counted(self: AsyncSession) -> None:
        closes.append(self)
        await close(self)

    monkeypatch.setattr(AsyncSession, "close", counted)
    checkouts = _Checkouts(database)

    async def plain(session: AsyncSession) -> None:  # a plain read runs past the session
        row = await read_row(session, select(literal_column("1").label("one")), {})
        assert row is not None
        assert row.one == 1
        assert not session.in_transaction()

    await _run(database, "GET", plain)
    assert closes == []
    assert checkouts.held == 0


async def test_a_read_session_holding_objects_is_closed(database: Database) -> None:
    tenant = await make_tenant(database)
    loaded: list[Tenant] = []

    async def load(session: AsyncSession) -> None:
        await rls.enter(session, scope_of(tenant.id))
        loaded.append((await session.execute(select(Tenant).limit(1))).scalar_one())

    await _run(database, "GET", load)
    assert inspect(loaded[0]).detached

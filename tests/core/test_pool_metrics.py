"""The app counts what its database pool's queue holds up (``hub_db_pool_wait_seconds``,
``hub_db_pool_timeouts_total``; :mod:`hub.core.fairqueue`).

A noisy-neighbour walk (stop 51) found one tenant's flood making another's requests wait the
pool's whole 30 s, and nothing on ``/metrics`` showed it. Each test runs an app on a database
whose pool holds at most two connections, holds both, and reads the app's own registry.
PostgreSQL's only: SQLite's pool is SQLAlchemy's, its plain reads having a connection of their
own (:mod:`hub.core.keptpool`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import pytest
from fastapi import FastAPI
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hub.app import create_app
from hub.core.components import components_of
from hub.core.db import Database, create_engine
from hub.core.fairqueue import FairQueue
from hub.core.metrics import Metrics
from tests.conftest import make_settings

pytestmark = pytest.mark.parametrize("owner_url", ["postgresql"], indirect=True)

HOLD_S = 0.2  # how long a checkout is kept waiting
POOL_WAIT_S = 0.3  # the pool's timeout in these tests (the app's is 30 s)


@pytest.fixture
async def small(db_url: str) -> AsyncIterator[AsyncEngine]:
    """An engine of its own whose pool holds at most two connections."""
    engine = create_engine(db_url, pool_size=1, pool_wait_s=POOL_WAIT_S)
    try:
        yield engine
    finally:
        await engine.dispose()


@pytest.fixture
async def hub(db_url: str, small: AsyncEngine) -> AsyncIterator[FastAPI]:
    """An app lent a database on ``small``, running (its lifespan entered)."""
    application = create_app(make_settings(db_url), database=Database(small))
    async with application.router.lifespan_context(application):
        yield application


def _sample(app: FastAPI, name: str) -> float:
    value = components_of(app).get(Metrics).registry.get_sample_value(name)
    assert value is not None, name
    return value


def _waits(app: FastAPI) -> tuple[float, float]:
    """How many waits were observed, and their seconds in all."""
    return (
        _sample(app, "hub_db_pool_wait_seconds_count"),
        _sample(app, "hub_db_pool_wait_seconds_sum"),
    )


async def _holding_every_connection(engine: AsyncEngine, stack: AsyncExitStack) -> AsyncConnection:
    """Check out both connections, each served at once; the first to give back is returned."""
    first = await stack.enter_async_context(engine.connect())
    await stack.enter_async_context(engine.connect())
    return first


async def _until_someone_waits(engine: AsyncEngine) -> None:
    queue = engine.sync_engine.pool._pool  # type: ignore[attr-defined]  # SQLAlchemy's queue
    assert isinstance(queue, FairQueue)
    for _ in range(1000):  # the checkout's task starts at the loop's next turn
        if queue.waiting():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("no checkout waited")


async def _checkout(engine: AsyncEngine) -> None:
    async with engine.connect():
        pass


async def test_a_checkout_served_at_once_is_not_observed(hub: FastAPI, small: AsyncEngine) -> None:
    async with AsyncExitStack() as stack:
        await _holding_every_connection(small, stack)  # opened: neither waited
    await _checkout(small)  # one given back: taken at once
    assert _waits(hub) == (0, 0)
    assert _sample(hub, "hub_db_pool_timeouts_total") == 0


async def test_a_checkout_that_waited_behind_a_held_connection_is_observed(
    hub: FastAPI, small: AsyncEngine
) -> None:
    loop = asyncio.get_running_loop()
    async with AsyncExitStack() as stack:
        first = await _holding_every_connection(small, stack)
        waiting = asyncio.create_task(_checkout(small))
        await _until_someone_waits(small)
        began = loop.time()  # the wait began before this
        await asyncio.sleep(HOLD_S)
        await first.close()  # handed to the waiter
        await waiting
        held_s = loop.time() - began
    count, seconds = _waits(hub)
    assert count == 1
    assert HOLD_S <= seconds <= held_s + 1  # roughly how long the connection was held
    assert _sample(hub, "hub_db_pool_timeouts_total") == 0


async def test_a_checkout_that_runs_out_of_time_is_counted(
    hub: FastAPI, small: AsyncEngine
) -> None:
    async with AsyncExitStack() as stack:
        await _holding_every_connection(small, stack)
        with pytest.raises(PoolTimeout):
            await _checkout(small)
    assert _sample(hub, "hub_db_pool_timeouts_total") == 1
    count, seconds = _waits(hub)
    assert count == 1
    assert seconds >= POOL_WAIT_S


async def test_a_wait_cut_short_by_its_request_going_away_is_observed_but_not_a_timeout(
    hub: FastAPI, small: AsyncEngine
) -> None:
    async with AsyncExitStack() as stack:
        await _holding_every_connection(small, stack)
        waiting = asyncio.create_task(_checkout(small))
        await _until_someone_waits(small)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
    assert _waits(hub)[0] == 1
    assert _sample(hub, "hub_db_pool_timeouts_total") == 0


async def test_waits_are_still_observed_after_the_engine_recreated_its_pool(
    hub: FastAPI, small: AsyncEngine
) -> None:
    await small.dispose()  # SQLAlchemy replaces the pool with a new one
    async with AsyncExitStack() as stack:
        await _holding_every_connection(small, stack)
        with pytest.raises(PoolTimeout):
            await _checkout(small)
    assert _sample(hub, "hub_db_pool_timeouts_total") == 1


async def test_an_app_that_stopped_no_longer_counts_the_waits_of_a_database_it_was_lent(
    db_url: str, small: AsyncEngine
) -> None:
    application = create_app(make_settings(db_url), database=Database(small))
    async with application.router.lifespan_context(application):
        pass
    async with AsyncExitStack() as stack:
        await _holding_every_connection(small, stack)
        with pytest.raises(PoolTimeout):
            await _checkout(small)
    assert _sample(application, "hub_db_pool_timeouts_total") == 0
    assert _waits(application) == (0, 0)

"""PostgreSQL's pool serves waiting checkouts in the order they came (:mod:`hub.core.fairqueue`).

A noisy-neighbour walk (stop 51): one agent flooding the endpoint kept every connection busy with
plain reads, each taking a kept connection past the pool's queue; a request that needed a session
waited the pool's whole 30 s and answered 503, whatever tenant it was of (another tenant's p99
was 30 s). Here six readers keep a pool of two connections busy, and a session still gets its
turn after the few checkouts already waiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import Integer, bindparam, select
from sqlalchemy.util.concurrency import greenlet_spawn
from sqlalchemy.util.queue import Empty

from hub.core import plainreads
from hub.core.db import Database, create_engine
from hub.core.fairqueue import FairQueue

READERS = 6


@pytest.fixture
async def small(db_url: str) -> AsyncIterator[Database]:
    """A database whose pool holds at most two connections (PostgreSQL's: SQLite's plain reads
    have a connection of their own)."""
    engine = create_engine(db_url, pool_size=1)
    try:
        yield Database(engine)
    finally:
        await engine.dispose()


@pytest.mark.parametrize("owner_url", ["postgresql"], indirect=True)
async def test_a_session_gets_its_turn_while_plain_reads_keep_every_connection_busy(
    small: Database,
) -> None:
    engine = small.engine
    plan = plainreads.plan_of(select(bindparam("x", type_=Integer).label("x")), engine.dialect)
    assert plan is not None
    turns: list[str] = []
    stop, busy = asyncio.Event(), asyncio.Event()

    async def reader() -> None:
        while not stop.is_set():
            await plainreads.fetch(engine, plan, {"x": 1})
            turns.append("read")
            if len(turns) >= 50:
                busy.set()

    readers = [asyncio.create_task(reader()) for _ in range(READERS)]
    try:
        await busy.wait()
        waited = []
        for _ in range(5):
            before = len(turns)
            # bounded: the pool's own wait (30 s) is what the flood used to run out
            async with asyncio.timeout(10), engine.connect():
                waited.append(len(turns) - before)
    finally:
        stop.set()
        await asyncio.gather(*readers)  # and no reader timed out either
    # the readers already waiting, and the ones holding the two connections, go first
    assert max(waited) <= READERS + 2, waited


def _queue() -> FairQueue[str]:
    return FairQueue(maxsize=2)


async def test_waiters_are_served_in_the_order_they_came() -> None:
    queue = _queue()
    first = asyncio.create_task(greenlet_spawn(queue.get, True, 5.0))
    await asyncio.sleep(0)
    second = asyncio.create_task(greenlet_spawn(queue.get, True, 5.0))
    await asyncio.sleep(0)
    queue.put_nowait("a")
    with pytest.raises(Empty):  # a newcomer does not take it past the waiters
        await greenlet_spawn(queue.get, False)
    queue.put_nowait("b")
    assert (await first, await second) == ("a", "b")
    assert not queue.waiting()


async def test_a_wait_that_runs_out_leaves_the_line() -> None:
    queue = _queue()
    with pytest.raises(Empty):
        await greenlet_spawn(queue.get, True, 0.05)
    assert not queue.waiting()
    queue.put_nowait("a")
    assert queue.get_nowait() == "a"  # not handed to the waiter that left


async def test_a_connection_handed_to_a_waiter_cancelled_meanwhile_is_not_lost() -> None:
    queue = _queue()
    waiter = asyncio.create_task(greenlet_spawn(queue.get, True, 5.0))
    await asyncio.sleep(0)
    waiter.cancel()  # its request went away; the cancellation not delivered yet
    queue.put_nowait("a")  # handed to it meanwhile
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert queue.get_nowait() == "a"  # passed on, not checked out to nobody

"""Bulk work on a replica's event loop two steps at a time, the rest waiting their turn.

Walking or exporting a long audit chain is CPU work done on the event loop, batch after batch:
per 500 rows about 8 ms decoding the rows, 7 ms hashing them and 8 ms serialising them (measured
on PostgreSQL, stop 52; the hub reads 200 at a time since). Each batch is one slice of the loop
that nothing else runs during. Ten such requests at once (within one tenant's REST limit) kept
ten slices in the loop's ready queue ahead of every other request's next step: a
noisy-neighbour walk measured another tenant's p50 at 612 ms on a slow machine, 83 ms on a
faster one, against 4 ms alone.

Here every bulk step takes a turn of the lane first: at most :data:`WIDTH` steps hold one at
once, and the others wait in the order they asked (:class:`asyncio.Semaphore` wakes its waiters
first come, first served, and a newcomer does not pass them). Another request then waits behind
at most two bulk slices at each of its own steps, whatever the number of bulk requests. Two, not
one: a step also waits on the database (a batch read is three round trips), and with one turn
the loop sat idle meanwhile: ten requests finished 15 in 20 s instead of 25. With two, one step
computes while the other waits. Measured (stop 52, ``hub serve`` on PostgreSQL, a 40,000-row
chain verified and exported ten requests at a time, another tenant reading a server every
200 ms, four alternating runs of 20 s against the code before): the other tenant's p50 went
from 72 to 83 ms to 7 to 10 ms, and the bulk requests finished 20 in each run, against 20 and
25 before. The first read of the other tenant's as the attack starts still took 240 to 390 ms
(the ten requests' own start), before and after.

A lane is per event loop (a replica has one; a test process runs several in turn, and a lane
goes once its loop is closed). Written here because asyncio has no priority between tasks, and
a process pool would move the rows, not the work: they would be decoded here and again there.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

__all__ = ["turn"]

#: bulk steps that run at once (see above)
WIDTH = 2

_LANES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


def _lane() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    lane = _LANES.get(loop)
    if lane is None:
        # a semaphore that had a waiter holds its loop: the lanes of closed loops (a test
        # process runs many) are dropped here, not by the weak references alone
        for closed in [old for old in _LANES if old.is_closed()]:
            del _LANES[closed]
        lane = _LANES[loop] = asyncio.Semaphore(WIDTH)
    return lane


@asynccontextmanager
async def turn() -> AsyncIterator[None]:
    """Hold a turn of the lane for one step of bulk work: a batch read, then what is done with
    it (a slice of its own: the read transaction's end waits for the database). Keep the step
    short: others' bulk steps wait for it."""
    async with _lane():
        # a turn starts a slice of its own: a read that needs no wait (SQLite can read on the
        # loop's thread) would otherwise run on in the slice of the turn before it
        await asyncio.sleep(0)
        yield

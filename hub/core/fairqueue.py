"""The connection pool's queue, first come first served under contention.

SQLAlchemy's asyncio pool queue (``AsyncAdaptedQueue`` over :class:`asyncio.Queue`) lets a
newcomer take a connection that was just checked in even while others wait: a check-in wakes the
first waiter, but until that waiter runs, the connection sits in the queue, and a checkout that
arrives meanwhile takes it without waiting (its ``get`` tries ``get_nowait`` first); the woken
waiter finds the queue empty and waits again, at the back. A busy replica's requests, each
checking a connection out and in again at once, then kept taking turns among themselves while
one that had waited longest could wait the pool's whole ``POOL_WAIT_S`` (30 s) and answer 503:
a noisy-neighbour walk (stop 51) measured another tenant's p99 at 30 s while one agent flooded
the endpoint, on a hub whose CPU was not saturated.

Here a check-in hands the connection to the longest waiter directly, and a checkout waits
behind anyone already waiting, so a connection goes to waiters in the order they came. Written
here because neither SQLAlchemy nor asyncio has a fair queue; :mod:`hub.core.keptpool` keeps
connections for plain reads outside the queue, and gives them up while anyone waits in it.

A wait is the one moment a checkout is held up by the pool, so the queue tells an observer
(:attr:`FairQueue.observer`, set through the pool: ``hub_db_pool_wait_seconds`` and
``hub_db_pool_timeouts_total``) how long each wait lasted and whether it ran out; a checkout served
at once costs nothing more.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy.util.concurrency import await_
from sqlalchemy.util.queue import AsyncAdaptedQueue, Empty

__all__ = ["FairQueue", "WaitObserver"]

_T = TypeVar("_T")

#: told of a wait that ended: the seconds it lasted, and whether it ran out of time (no
#: connection: the pool raises its timeout, the request answers 503); it must not raise
WaitObserver = Callable[[float, bool], None]


class FairQueue(AsyncAdaptedQueue[_T]):
    """A pool queue whose waiters are served in order; a check-in goes to the first of them."""

    def __init__(self, maxsize: int = 0, use_lifo: bool = False) -> None:
        super().__init__(maxsize, use_lifo)
        self._waiters: deque[asyncio.Future[_T]] = deque()
        #: told of every wait that ended, whatever ended it (never of a checkout served at once)
        self.observer: WaitObserver | None = None

    def waiting(self) -> bool:
        """Whether a checkout is waiting for a connection (asked on every plain read: the line
        is pruned of waits that ended from its front, and usually empty)."""
        waiters = self._waiters
        while waiters and waiters[0].done():
            waiters.popleft()
        return bool(waiters)

    def put_nowait(self, item: _T) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():  # a waiter that timed out or was cancelled is skipped
                waiter.set_result(item)
                return
        super().put_nowait(item)

    def get(self, block: bool = True, timeout: float | None = None) -> _T:
        try:
            # one in the queue means nobody waits: a check-in goes to a waiter first
            return self._queue.get_nowait()
        except asyncio.QueueEmpty:
            pass
        if not block:
            raise Empty()
        return await_(self._wait(wait_s=timeout))

    async def _wait(self, *, wait_s: float | None) -> _T:
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[_T] = loop.create_future()
        self._waiters.append(waiter)
        began, ran_out = loop.time(), False
        try:
            # shielded: the waiter is this queue's to settle, whatever ends the wait
            return await asyncio.wait_for(asyncio.shield(waiter), wait_s)
        except TimeoutError:
            ran_out = True
            self._give_up(waiter)
            raise Empty() from None  # the pool's "limit reached, timed out"
        except BaseException:  # cancelled
            self._give_up(waiter)
            raise
        finally:
            if self.observer is not None:
                self.observer(loop.time() - began, ran_out)

    def _give_up(self, waiter: asyncio.Future[_T]) -> None:
        """End a wait that stopped: a connection handed over meanwhile goes to the next waiter
        (or back to the queue), never lost; else the waiter is dropped from the line."""
        if waiter.done() and not waiter.cancelled():
            self.put_nowait(waiter.result())
        else:
            waiter.cancel()

"""A PostgreSQL engine's pool that keeps connections for plain reads between them.

A plain read (:mod:`hub.core.plainreads`) checks a connection out, sends one statement with
asyncpg and checks it back in. Through SQLAlchemy's pool that checkout and checkin cost more CPU
than the statement itself: a greenlet to run the checkout in (the pool may have to connect, which
awaits), the queue, a new connection proxy, the checkout, checkin and reset machinery. Measured
with sixteen concurrent readers of a trivial statement on uvloop (docs/decisions.md, seventh
pass): 85 µs of CPU a read through the pool, 39 µs with the connection kept, 34 µs for raw
asyncpg on connections of its own; asyncpg's own pool costs 78 µs, since its release resets the
connection with a round trip.

So this pool keeps the connections plain reads gave back (up to its size), still checked
out as far as SQLAlchemy is concerned, and hands them to the next plain read with a list pop
(:meth:`KeepingPool.take`, :meth:`KeepingPool.keep`). What SQLAlchemy's checkout does for a
connection still happens to every kept one, at most a little later:

- a connection goes back to the pool within :data:`KEEP_SECONDS` of its checkout, so its next
  checkout applies recycling (``pool_recycle``), the pool's invalidation time and the checkout
  events to it as before;
- a checkout that finds the pool's queue empty takes a kept connection back into it first
  (:meth:`KeepingPool._do_get`): a session never waits for a connection a plain read keeps idle,
  and the pool opens no new connection while one is kept;
- when the pool is invalidated (SQLAlchemy does it at a disconnect: the server went away), every
  kept connection goes back first, so the invalidation reaches them at their next checkout instead
  of each failing a request of its own; a plain read that finds its connection closed gives the
  kept ones back too (:mod:`hub.core.plainreads`);
- disposing of the pool (the engine's ``dispose``) gives them back first, to be closed with it;
- while a checkout waits in the queue (:class:`~hub.core.fairqueue.FairQueue`, first come first
  served), kept connections go back to it and none is kept or taken: a plain read would
  otherwise take a connection past everyone waiting.

The queue's waits are what the app observes of the pool (:meth:`KeepingPool.observe_waits`); the
observer set here survives the engine's ``dispose``, which recreates the pool.

Plain reads run outside any transaction (asyncpg runs each statement on its own), so a kept
connection has nothing for the pool's reset on return to undo; a read that failed gives its
connection back rather than keeping it. Everything runs on the event loop's thread.

Written here rather than taken from a library: neither SQLAlchemy's pools nor asyncpg's have a
path this cheap, and the hub keeps SQLAlchemy's pool (its limits, recycling, invalidation and
events) for everything else.
"""

from __future__ import annotations

from time import monotonic
from typing import Any, cast

from sqlalchemy.pool import AsyncAdaptedQueuePool, ConnectionPoolEntry, PoolProxiedConnection

from hub.core.fairqueue import FairQueue, WaitObserver

__all__ = ["KEEP_SECONDS", "KeepingPool", "now"]

#: the longest a connection stays checked out between plain reads before it goes back to the pool
KEEP_SECONDS = 10.0


def now() -> float:
    """The clock a connection's checkout time is read from (for :meth:`KeepingPool.keep`)."""
    return monotonic()


class KeepingPool(AsyncAdaptedQueuePool):
    """SQLAlchemy's asyncio queue pool, keeping idle connections of plain reads (module doc)."""

    #: log where the pool it replaces logs: under ``sqlalchemy`` (WARNING unless ``echo_pool``),
    #: not under ``hub`` (INFO), where "Pool disposed" lines would reach the hub's own output
    _sqla_logger_namespace = "sqlalchemy.pool.impl.AsyncAdaptedQueuePool"
    _queue_class = FairQueue[ConnectionPoolEntry]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # (connection, when it was checked out of the queue), the most recently kept last
        self._kept: list[tuple[PoolProxiedConnection, float]] = []
        self._keep_at_most = max(1, self.size())
        self._observer: WaitObserver | None = None

    def observe_waits(self, observer: WaitObserver | None) -> None:
        """Tell ``observer`` of every checkout that waited in the queue (None: of none)."""
        self._observer = observer
        if isinstance(self._pool, FairQueue):
            self._pool.observer = observer

    def recreate(self) -> KeepingPool:
        # the engine's dispose replaces its pool with this one's recreation: the app's
        # observer goes with it, as SQLAlchemy carries the pool's event listeners over
        pool = cast(KeepingPool, super().recreate())
        pool.observe_waits(self._observer)
        return pool

    def take(self) -> tuple[PoolProxiedConnection, float] | None:
        """A kept connection and when it was checked out, or None (check one out instead)."""
        if self._others_wait():
            self.give_back()
            return None
        kept = self._kept
        while kept:
            connection, since = kept.pop()
            if now() - since < KEEP_SECONDS:
                return connection, since
            connection.close()
        return None

    def keep(self, connection: PoolProxiedConnection, since: float) -> None:
        """Keep ``connection`` (checked out at ``since``) for the next plain read, or check it
        in: when it is no longer valid, was checked out too long ago or enough are kept."""
        if (
            connection.is_valid
            and not self._others_wait()
            and len(self._kept) < self._keep_at_most
            and now() - since < KEEP_SECONDS
        ):
            self._kept.append((connection, since))
        else:
            connection.close()

    def _others_wait(self) -> bool:
        queue = self._pool
        return isinstance(queue, FairQueue) and queue.waiting()

    def kept(self) -> int:
        """How many connections are kept now."""
        return len(self._kept)

    def give_back(self) -> None:
        """Check every kept connection in."""
        while self._kept:
            connection, _since = self._kept.pop()
            connection.close()

    def _do_get(self) -> ConnectionPoolEntry:
        # the extension point of SQLAlchemy's pool classes: a kept connection goes back to the
        # queue before a checkout would wait for one, or open one
        if self._kept and self.checkedin() == 0:
            connection, _since = self._kept.pop(0)  # the longest kept
            connection.close()
        return super()._do_get()

    def dispose(self) -> None:
        self.give_back()
        super().dispose()

    def _invalidate(
        self,
        connection: PoolProxiedConnection,
        exception: BaseException | None = None,
        _checkin: bool = True,
    ) -> None:
        # what SQLAlchemy's engine calls at a disconnect: every connection older than now is
        # reconnected at its next checkout, so the kept ones go back to be checked out again
        self.give_back()
        super()._invalidate(connection, exception, _checkin)

"""Leader-free background loops of one replica (DESIGN §11 "Workers").

A :class:`Workers` component holds the loops the wiring registers (the OAuth refresher ahead of
expiry, later the drift watch). ``hub serve`` starts them in the app's lifespan when
``HUB_WORKERS`` is true and cancels them at shutdown. Every replica runs every loop: there is no
leader, so a loop must claim its work in the database (a lease taken with
``FOR UPDATE SKIP LOCKED`` on PostgreSQL) and never assume it is alone. A loop that raises is
logged and restarted after its interval, so one bad pass never stops the worker for good.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from hub.core.db import Database

__all__ = ["Loop", "Workers"]

log = logging.getLogger("hub.workers")

#: One pass of a loop; the runner sleeps ``interval_s`` between passes.
Pass = Callable[[Database], Awaitable[None]]


@dataclass(frozen=True)
class Loop:
    name: str
    run_once: Pass
    interval_s: float


@dataclass
class Workers:
    """The loops of a replica; :meth:`start` runs each as a task, :meth:`stop` cancels them."""

    loops: tuple[Loop, ...] = ()
    _tasks: list[asyncio.Task[None]] = field(default_factory=list, repr=False)

    def start(self, db: Database) -> None:
        for loop in self.loops:
            self._tasks.append(asyncio.create_task(_forever(loop, db), name=f"worker:{loop.name}"))

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def _forever(loop: Loop, db: Database) -> None:
    while True:
        try:
            await loop.run_once(db)
        except asyncio.CancelledError:
            raise
        except Exception:  # one failed pass must not end the worker
            log.exception("worker %s: a pass failed", loop.name)
        await asyncio.sleep(loop.interval_s)

"""How late the event loop runs a timer: the replica's loop lag (``hub_event_loop_lag_seconds``).

Every request, tool call and background job of a replica shares one event loop, so work that
holds it (hashing a long audit chain, parsing a result at the size cap) delays all of them; a
noisy-neighbour walk (stop 51) found another tenant's median at 612 ms with nothing on
``/metrics`` to show why. :class:`LoopLag` sleeps a fixed interval in a loop and reports how much
later than asked it woke (clamped at 0: the loop may run a timer a clock tick early).

Measured on the loop's own clock (monotonic, the one its timers are kept on), not
:mod:`hub.core.clock`, which is wall time for domain rules and may be moved by tests. Started and
stopped by the app's lifespan; stopping cancels the task and waits for it, so nothing is left
pending when the loop closes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

__all__ = ["INTERVAL_S", "LoopLag"]

log = logging.getLogger(__name__)

#: how often the loop is sampled: a stall longer than this delays a timer by at least the excess
INTERVAL_S = 0.5


class LoopLag:
    """A task sampling the loop's lag every ``interval_s``, told to ``observe`` (seconds late)."""

    def __init__(self, observe: Callable[[float], None], *, interval_s: float = INTERVAL_S) -> None:
        if interval_s <= 0:
            raise ValueError("the interval must be positive")
        self._observe = observe
        self._interval_s = interval_s
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start sampling (on the running loop); once started, :meth:`stop` must follow."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._sample(), name="hub-loop-lag")

    async def stop(self) -> None:
        """Cancel the sampling task and wait until it has ended. Never raises: the app's
        shutdown runs it first, and the audit rows still queued must be written after it."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        # waited for, not awaited: a cancellation of the caller itself still reaches it
        await asyncio.wait([task])

    async def _sample(self) -> None:
        loop = asyncio.get_running_loop()
        interval_s = self._interval_s
        failing = False
        while True:
            asked = loop.time() + interval_s
            await asyncio.sleep(interval_s)
            try:
                self._observe(max(0.0, loop.time() - asked))
            except Exception as error:  # a metric not recorded must not end the sampling
                if not failing:
                    log.warning("loop lag: a sample was not recorded (%s)", type(error).__name__)
                failing = True
            else:
                failing = False

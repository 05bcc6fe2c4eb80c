"""The replica's own (``memory://``) rate limiter keeps counting when the replica is busy.

Found by the soak walk (stop 51): the storage call ran under the same 0.5 s bound as Redis's, so a
check waiting on the key's lock (the ``limits`` library's expiry sweep holds it across a thread
hop) while the event loop was busy elsewhere for longer timed out, read as "storage down", and
every limit class of the replica admitted everything unchecked for the next 5 s: a flood that
loads the replica turned its own limits off (an agent's 330 calls against 300 a minute: 30 of
them should be refused, none was).
"""

from __future__ import annotations

import asyncio
import collections
import time

from hub.core.metrics import Metrics
from hub.ratelimit.limiter import RateLimiter
from hub.ratelimit.policy import parse_policies


async def test_a_busy_event_loop_does_not_turn_the_limits_off() -> None:
    metrics = Metrics()
    limiter = RateLimiter(parse_policies("tool_call=300/minute"), "memory://", metrics)
    seen: collections.Counter[str] = collections.Counter()

    async def call() -> None:
        decision = await limiter.check("tool_call", "agent-1")
        if not decision.allowed:
            seen["refused"] += 1
        else:
            seen["admitted" if decision.headers else "unchecked"] += 1

    try:
        for wave in range(32):
            tasks = [asyncio.create_task(call()) for _ in range(10)]
            if wave == 5:
                await asyncio.sleep(0)  # these checks run; the library schedules its sweep
                await asyncio.sleep(0)  # the sweep takes the key's lock and hops to a thread
                tasks += [asyncio.create_task(call()) for _ in range(10)]
                await asyncio.sleep(0)  # these checks wait on the lock
                # the loop busy elsewhere for 0.6 s (a heavy request, GC, a starved host)
                time.sleep(0.6)  # noqa: ASYNC251 - blocking the loop is the point
            await asyncio.gather(*tasks)
    finally:
        await limiter.aclose()
    assert seen == {"admitted": 300, "refused": 30}
    assert 'hub_rate_limit_fail_open_total{kind="tool_call"}' not in metrics.render().decode()

"""The rate limits keep counting when the replica is busy (its event loop stalled).

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
import logging
import signal
import time
import uuid
from pathlib import Path

import pytest

from hub.core.metrics import Metrics
from hub.ratelimit.limiter import RateLimiter
from hub.ratelimit.policy import parse_policies
from tests.ratelimit.redis_server import own_redis, shared_redis_url


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


async def test_one_stall_of_the_loop_does_not_read_as_redis_down() -> None:
    """With Redis, a check is bounded (a frozen Redis must not hold requests), so checks waiting
    on Redis while the loop is stalled time out and are admitted unchecked. Before, that one
    stall also read as Redis down: every check of the replica admitted unchecked for the next
    5 s. Now it takes timeouts spanning the bound itself (a Redis that stays slow) for that."""
    metrics = Metrics()
    limiter = RateLimiter(
        parse_policies("tool_call=300/minute"),
        shared_redis_url(),
        metrics,
        key_prefix=f"stall-{uuid.uuid4()}",
    )
    seen: collections.Counter[str] = collections.Counter()

    async def call(stage: str) -> None:
        decision = await limiter.check("tool_call", "agent-1")
        counted = "refused" if not decision.allowed else "admitted" if decision.headers else ""
        seen[f"{stage} {counted or 'unchecked'}"] += 1

    try:
        await call("before")
        stalled = [asyncio.create_task(call("stalled")) for _ in range(10)]
        await asyncio.sleep(0)  # each check sends its command and waits for Redis's answer
        time.sleep(0.6)  # noqa: ASYNC251 - the loop busy elsewhere past the 0.5 s bound
        await asyncio.gather(*stalled)
        for _ in range(33):
            await asyncio.gather(*(call("after") for _ in range(10)))
    finally:
        await limiter.aclose()
    assert seen["stalled unchecked"] >= 1, seen  # the stall's own checks timed out
    assert seen["after unchecked"] == 0, seen  # and nothing after it went unchecked
    assert seen["after refused"] >= 30, seen
    assert seen["before admitted"] + seen["after admitted"] <= 300, seen


async def test_a_redis_that_stays_slow_is_down_after_the_bound(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A frozen Redis (stopped, its connections open): the first check waits the bound and is
    admitted unchecked; once timeouts have gone on for the bound, the storage is down (one
    warning) and the next checks do not ask it, so requests stop paying the wait."""
    metrics = Metrics()
    with own_redis(tmp_path) as server:
        limiter = RateLimiter(
            parse_policies("rest=100/minute"), server.url, metrics, timeout_s=0.2, retry_s=60
        )
        try:
            assert (await limiter.check("rest", "p")).headers  # counted: the connection open
            server.proc.send_signal(signal.SIGSTOP)
            with caplog.at_level(logging.WARNING, logger="hub.ratelimit"):
                decisions = [await limiter.check("rest", "p") for _ in range(5)]
        finally:
            server.proc.send_signal(signal.SIGCONT)
            await limiter.aclose()
    assert all(d.allowed and not d.headers for d in decisions)  # admitted unchecked
    text = metrics.render().decode()
    assert "hub_rate_limit_storage_errors_total 2.0" in text  # two waits, then not asked
    assert 'hub_rate_limit_fail_open_total{kind="rest"} 5.0' in text
    warnings = [r for r in caplog.records if "rate-limit storage unavailable" in r.getMessage()]
    assert len(warnings) == 1

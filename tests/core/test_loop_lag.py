"""The app samples its event loop's lag while it runs (``hub_event_loop_lag_seconds``,
:mod:`hub.core.looplag`), and leaves nothing behind when it stops.

A noisy-neighbour walk (stop 51) found one tenant's CPU-heavy requests holding the loop, and
every other request waiting, with nothing on ``/metrics`` to show it. Here the test holds the
loop itself, from a coroutine on the app's loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from fastapi import FastAPI

from hub.app import create_app
from hub.core.components import components_of
from hub.core.looplag import INTERVAL_S, LoopLag
from hub.core.metrics import Metrics
from tests.conftest import make_settings

HELD_S = INTERVAL_S + 0.3  # longer than the interval: some timer falls due while it is held
TASK = "hub-loop-lag"


@pytest.fixture
async def hub() -> AsyncIterator[FastAPI]:
    """An app running (its lifespan entered) on an in-memory database: nothing here reads it."""
    application = create_app(make_settings())
    async with application.router.lifespan_context(application):
        yield application


def _lag(app: FastAPI, le: str) -> float:
    """How many samples were at most ``le`` seconds late."""
    registry = components_of(app).get(Metrics).registry
    value = registry.get_sample_value("hub_event_loop_lag_seconds_bucket", {"le": le})
    assert value is not None
    return value


def _samplers() -> set[asyncio.Task[object]]:
    return {task for task in asyncio.all_tasks() if task.get_name() == TASK}


async def test_a_loop_held_by_a_request_is_seen_late(hub: FastAPI) -> None:
    # a timer falls due in the first INTERVAL_S of the hold and runs after it: at least 0.3 s
    # late, whenever the hold began
    time.sleep(HELD_S)  # noqa: ASYNC251  # holding the loop is the point
    for _ in range(500):  # it runs at the loop's next turn; give it up to 5 s
        if _lag(hub, "+Inf") - _lag(hub, "0.25") >= 1:
            break
        await asyncio.sleep(0.01)
    assert _lag(hub, "+Inf") - _lag(hub, "0.25") >= 1


async def test_the_sampler_runs_with_the_app_and_ends_with_it() -> None:
    before = _samplers()
    application = create_app(make_settings())
    async with application.router.lifespan_context(application):
        started = _samplers() - before
        assert len(started) == 1
        assert not next(iter(started)).done()
    assert all(task.done() for task in started)  # not left pending for the loop to destroy


async def test_a_sample_not_recorded_ends_neither_the_sampling_nor_the_shutdown() -> None:
    """The app's shutdown stops the sampler first: had its error been raised there, the audit
    rows still queued would not have been written."""
    recorded: list[float] = []
    failures = 0

    def observe(lag_s: float) -> None:
        nonlocal failures
        if failures < 3:
            failures += 1
            raise OSError("a metrics file could not be written")
        recorded.append(lag_s)

    sampler = LoopLag(observe, interval_s=0.01)
    sampler.start()
    for _ in range(500):  # up to 5 s
        if recorded:
            break
        await asyncio.sleep(0.01)
    await sampler.stop()  # raises nothing
    assert failures == 3
    assert recorded  # sampling went on after the failures
    assert not _samplers()

"""The bulk lane of a closed event loop goes (a semaphore that had a waiter holds its loop, so
the weak reference alone never let it go: one lane a loop, for the life of a test process)."""

from __future__ import annotations

import asyncio

from hub.core import bulklane


async def _contended() -> None:
    """Three steps for a lane of two: one waits, and the lane's semaphore keeps the loop."""
    release = asyncio.Event()

    async def step() -> None:
        async with bulklane.turn():
            await release.wait()

    steps = [asyncio.create_task(step()) for _ in range(bulklane.WIDTH + 1)]
    await asyncio.sleep(0.01)
    release.set()
    await asyncio.gather(*steps)


def test_a_closed_loops_lane_goes() -> None:
    for _ in range(4):
        asyncio.run(_contended())
    # the last loop's lane stays until the next lane is made
    assert sum(loop.is_closed() for loop in list(bulklane._LANES)) <= 1

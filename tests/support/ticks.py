"""How many times the event loop ran another task while some work ran: the proof that work done
off the loop (argument checks, result shaping) leaves it to every tenant's requests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ["ticks_while"]

_T = TypeVar("_T")


async def ticks_while(work: Awaitable[_T]) -> tuple[_T, int]:
    """``work``'s result, and how many times a task that wakes every 5 ms ran meanwhile."""
    ticks = 0
    running = True

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            if not running:
                return
            ticks += 1

    ticking = asyncio.create_task(tick())
    await asyncio.sleep(0)  # the ticker starts
    try:
        result = await work
    finally:
        running = False
        await ticking
    return result, ticks

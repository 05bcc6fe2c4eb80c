"""What the benches that call tools share: an official SDK client session, a call made ready to
time, its timing, and the samples' quantiles."""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

__all__ = ["Call", "Samples", "calling", "quantile", "sdk_session", "timed"]

Call = Callable[[], Awaitable[None]]


def quantile(times: list[float], q: float) -> float:
    """The ``q`` quantile of ``times`` (nearest rank)."""
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class Samples:
    times: list[float] = field(default_factory=list)

    def quantile(self, q: float) -> float:
        return quantile(self.times, q)

    @property
    def p50(self) -> float:
        return statistics.median(self.times)


@contextlib.asynccontextmanager
async def sdk_session(
    url: str, mode: str = "auto", headers: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    """One long-lived official SDK client on ``url`` (its own pooled HTTP client)."""
    async with httpx2.AsyncClient(headers=headers or {}, timeout=30) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, cache=None) as client:
            yield client


def calling(client: Client, name: str, arguments: dict[str, Any]) -> Call:
    """The call of ``name`` with ``arguments``, ready to time; an error result raises."""

    async def call() -> None:
        done = await client.call_tool(name, arguments)
        if done.is_error:
            raise RuntimeError(f"{name}: {done.content}")

    return call


async def timed(call: Call) -> float:
    start = time.perf_counter()
    await call()
    return time.perf_counter() - start

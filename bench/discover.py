"""Discovery latency: the hub's MCP client vs the official SDK client, on the same local peer.

One official SDK server (``tests.peers.sdk_server``, the subprocess the test fixtures start, its
sockets with ``TCP_NODELAY``; stateful, SSE answers on the handshake wire) serves ``TOOLS`` tools,
``PAGE_SIZE`` per page. Each round lists every tool once with each client, in alternating order
(interleaved, so drift in the machine's load hits both alike), in both eras:

- **modern**: ``server/discover`` then every ``tools/list`` page (the SDK client: ``mode="auto"``);
- **legacy**: ``initialize``, ``notifications/initialized``, the pages, ``DELETE`` (the SDK
  client: ``mode="legacy"``).

The hub side is ``McpClient.discover`` over one long-lived ``Fetcher`` (pooled connections, as in
the server); the SDK side is ``mcp.Client`` over ``streamable_http_client`` with one shared
``httpx2.AsyncClient`` (pooled too), caching off. Reported: the median per discovery with its
p10-p90 spread, and the ratio of the medians (hub / SDK; below 1 means the hub is faster).
A report, not a test: ``python -m bench discover``.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from bench._peer import start_sdk_peer
from hub.egress import EgressConfig, Fetcher
from hub.mcp import Era, McpClient

TOOLS = 200
PAGE_SIZE = 50
WARMUP = 10
ROUNDS = 200

Discovery = Callable[[], Awaitable[int]]


def tools() -> list[dict[str, Any]]:
    return [
        {
            "name": f"tool_{i:03d}",
            "description": f"Generated tool number {i}.",
            "inputSchema": {
                "type": "object",
                "properties": {"n": {"type": "integer"}, "q": {"type": "string"}},
                "required": ["n"],
            },
        }
        for i in range(TOOLS)
    ]


def hub_discovery(client: McpClient, url: str, era: Era) -> Discovery:
    async def run() -> int:
        found = await client.discover(url, pin=url, bearer=None, deadline_s=30, force_era=era)
        return len(found.tools)

    return run


def sdk_discovery(http: httpx2.AsyncClient, url: str, era: Era) -> Discovery:
    mode = "auto" if era == "modern" else "legacy"

    async def run() -> int:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, cache=None) as client:
            count, cursor = 0, None
            while True:
                page = await client.list_tools(cursor=cursor)
                count += len(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    return count

    return run


async def timed(discovery: Discovery) -> float:
    start = time.perf_counter()
    count = await discovery()
    elapsed = time.perf_counter() - start
    assert count == TOOLS, count
    return elapsed


async def compare(hub: Discovery, sdk: Discovery) -> tuple[list[float], list[float]]:
    for _ in range(WARMUP):
        await hub()
        await sdk()
    hub_times: list[float] = []
    sdk_times: list[float] = []
    for i in range(ROUNDS):
        if i % 2:
            sdk_times.append(await timed(sdk))
            hub_times.append(await timed(hub))
        else:
            hub_times.append(await timed(hub))
            sdk_times.append(await timed(sdk))
    return hub_times, sdk_times


def spread(times: list[float]) -> str:
    deciles = statistics.quantiles(times, n=10)
    ms = [1000 * t for t in (statistics.median(times), deciles[0], deciles[-1])]
    return f"{ms[0]:7.2f} ms  (p10-p90 {ms[1]:6.2f}-{ms[2]:6.2f})"


async def run(url: str) -> None:
    print(f"{TOOLS} tools, {PAGE_SIZE} per page, {ROUNDS} interleaved rounds per era")
    print(f"{'era':<8} {'client':<5} {'median per discovery':<42} ratio")
    async with (
        Fetcher(EgressConfig(allow_loopback=True)) as fetcher,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        client = McpClient(fetcher, client_info={"name": "mcp-hub-bench", "version": "0"})
        eras: list[Era] = ["modern", "legacy"]
        for era in eras:
            hub_times, sdk_times = await compare(
                hub_discovery(client, url, era), sdk_discovery(http, url, era)
            )
            ratio = statistics.median(hub_times) / statistics.median(sdk_times)
            print(f"{era:<8} {'sdk':<5} {spread(sdk_times):<42} 1.00x")
            print(f"{era:<8} {'hub':<5} {spread(hub_times):<42} {ratio:.2f}x")


def main() -> None:
    with tempfile.TemporaryDirectory() as workdir:
        process, url = start_sdk_peer(Path(workdir), tools(), mode="sse", page_size=PAGE_SIZE)
        try:
            asyncio.run(run(url))
        finally:
            process.terminate()
            process.wait(timeout=10)


if __name__ == "__main__":
    main()

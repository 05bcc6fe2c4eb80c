"""Snapshot and bundle of a peer with 5,000 tools: time and peak memory, against a baseline.

The baseline is the official SDK client (``mcp.Client``) listing the same peer's 5,000 tools in the
same run. The hub side runs the real app (SQLite in a temporary directory, migrated) in process:
``POST …/servers/{handle}/catalogs`` (discover every page, hash, store) and
``GET …/deployments/{d}/bundle`` (wire names, ETag). Peak memory is the Python allocation peak
during each operation (``tracemalloc``, so the peer's own process is not counted). Each operation
runs ``ROUNDS`` times untraced for the median time, then once traced for the peak.
A report, not a test: ``python -m bench catalog``.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from bench._peer import start_sdk_peer
from hub.app import create_app
from hub.core.db import Database
from hub.core.migrations import upgrade
from tests.conftest import make_settings
from tests.support.factories import make_principal, make_tenant

TOOLS = 5_000
PAGE_SIZE = 500
ROUNDS = 3


def _tools(count: int) -> list[dict[str, Any]]:
    return [
        {
            "name": f"tool_{i:05d}",
            "description": f"Generated tool number {i}, with a sentence of description.",
            "inputSchema": {
                "type": "object",
                "properties": {"n": {"type": "integer"}, "q": {"type": "string"}},
                "required": ["n"],
            },
            "annotations": {"readOnlyHint": i % 2 == 0},
        }
        for i in range(count)
    ]


async def _measure(operation: Callable[[], Awaitable[object]], rounds: int) -> tuple[float, float]:
    """Median seconds over ``rounds`` runs, then the allocation peak (MiB) of one more traced run
    (tracing slows allocation down, so it is kept out of the timed runs)."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        await operation()
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    await operation()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return statistics.median(times), peak


async def _sdk_list(url: str) -> int:
    async with httpx2.AsyncClient(timeout=60) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode="auto", cache=None) as client:
            count, cursor = 0, None
            while True:
                page = await client.list_tools(cursor=cursor)
                count += len(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    return count


Row = tuple[str, float, float]  # operation, seconds, peak MiB


async def _run(url: str, db_url: str, tools: int, rounds: int) -> list[Row]:
    settings = make_settings(
        db_url, allow_loopback=True, discovery_timeout_s=120, max_operation_bytes=64 * 2**20
    )
    database = Database.from_url(db_url)
    app = create_app(settings, database=database)
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://hub") as hub,
    ):
        tenant = await make_tenant(database)
        admin = await make_principal(database, tenant.id)
        agent = await make_principal(database, tenant.id, role="agent", kind="agent")
        base = f"/tenants/{tenant.id}"
        await hub.post(f"{base}/servers", json={"handle": "big", "url": url}, headers=admin.headers)

        async def snapshot() -> None:
            # a fresh server each round, so every round discovers and stores 5,000 tools
            handle = f"big{uuid.uuid4().hex[:8]}"
            await hub.post(
                f"{base}/servers", json={"handle": handle, "url": url}, headers=admin.headers
            )
            response = await hub.post(f"{base}/servers/{handle}/catalogs", headers=admin.headers)
            assert response.status_code == 201, response.text
            assert len(response.json()["data"]["tools"]) == tools

        first = await hub.post(f"{base}/servers/big/catalogs", headers=admin.headers)
        assert first.status_code == 201, first.text
        # a bundle lists the tools its agent may call (deny is left out): all of them, here
        granted = await hub.post(
            f"{base}/grants",
            json={
                "principal_id": str(agent.principal_id),
                "resource": "tool:big.*",
                "action": "call",
                "effect": "allow",
            },
            headers=admin.headers,
        )
        assert granted.status_code == 201, granted.text
        deployment = await hub.post(
            f"{base}/deployments",
            json={
                "agent_id": str(agent.principal_id),
                "entries": [{"server": "big", "catalog_version": 1}],
            },
            headers=admin.headers,
        )
        bundle_url = f"{base}/deployments/{deployment.json()['data']['id']}/bundle"

        async def bundle() -> None:
            response = await hub.get(bundle_url, headers=agent.headers)
            assert response.status_code == 200, response.text
            assert len(response.json()["data"]["servers"][0]["tools"]) == tools

        async def baseline() -> None:
            assert await _sdk_list(url) == tools

        rows = [
            ("SDK client lists the tools (base)", *await _measure(baseline, rounds)),
            ("hub snapshot (discover+store)", *await _measure(snapshot, rounds)),
            ("hub bundle (names, ETag)", *await _measure(bundle, rounds)),
        ]
    await database.dispose()
    return rows


def measure(tools: int = TOOLS, page_size: int = PAGE_SIZE, rounds: int = ROUNDS) -> list[Row]:
    """Each operation's median time and allocation peak, the baseline first."""
    with tempfile.TemporaryDirectory() as workdir:
        db_url = f"sqlite+aiosqlite:///{Path(workdir) / 'bench.db'}"
        upgrade(db_url)
        process, url = start_sdk_peer(
            Path(workdir), _tools(tools), mode="stateless", page_size=page_size
        )
        try:
            return asyncio.run(_run(url, db_url, tools, rounds))
        finally:
            process.terminate()
            process.wait(timeout=10)


def main() -> None:
    rows = measure()
    base_t = rows[0][1]
    print(f"{TOOLS} tools, {PAGE_SIZE} per page, median of {ROUNDS} runs each")
    print(f"{'operation':<34} {'time':>10} {'vs baseline':>12} {'peak alloc':>12}")
    for label, seconds, mib in rows:
        print(f"{label:<34} {seconds * 1000:>8.0f}ms {seconds / base_t:>11.2f}x {mib:>9.1f}MiB")


if __name__ == "__main__":
    main()

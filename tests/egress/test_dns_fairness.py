"""One tenant's stalled name lookups cannot delay another tenant's (hardening, SECURITY §1.7).

``getaddrinfo`` blocks a thread, and a lookup whose caller gave up keeps its thread until the
system resolver returns. The tenant chooses the names, so a tenant whose own DNS stalls could
once occupy every thread of the egress resolver pool and make every other tenant's discoveries
time out. Each scope now holds at most ``LOOKUPS_PER_SCOPE`` lookups — counted until the lookup
itself ends — so the rest of the pool stays free. The resolver here is the real
:class:`SystemResolver` on a small pool of its own, with injected DNS answers.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from hub.egress import EgressTimeout, SystemResolver
from hub.egress.network import LOOKUPS_PER_SCOPE
from tests.egress.conftest import MakeFetcher, StartUpstream
from tests.egress.support import PUBLIC_V4, RouteDialer, json_responder

POOL_THREADS = 8  # fewer than one stalling tenant's lookups: without shares it fills the pool


class StallingDns:
    """``getaddrinfo`` with injected answers: names under ``stall.test`` block until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self._lock = threading.Lock()
        self.blocked = 0
        self.most_blocked = 0

    def getaddrinfo(self, host: bytes, port: int, *_args: Any) -> list[tuple[Any, ...]]:
        if host.decode().endswith(".stall.test"):
            with self._lock:
                self.blocked += 1
                self.most_blocked = max(self.most_blocked, self.blocked)
            try:
                self.release.wait(30)
            finally:
                with self._lock:
                    self.blocked -= 1
            raise socket.gaierror(socket.EAI_AGAIN, "stalled")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC_V4, port))]


async def _fetch(fetcher: Any, url: str, scope: str, deadline_s: float) -> int:
    async with fetcher.operation(pin=url, deadline_s=deadline_s, scope=scope) as op:
        return int((await op.request("GET", url)).status_code)


@pytest.fixture
def dns() -> Any:
    stalling = StallingDns()
    pool = ThreadPoolExecutor(POOL_THREADS, thread_name_prefix="test-dns")
    yield stalling, pool
    stalling.release.set()
    pool.shutdown(wait=True)


async def test_a_stalling_tenant_leaves_other_tenants_lookups_alone(
    dns: Any, make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    stalling, pool = dns
    upstream = await start_upstream(json_responder(), tls_names=("ok.test",))
    fetcher = make_fetcher(
        resolver=SystemResolver(getaddrinfo=stalling.getaddrinfo, executor=pool),
        dialer=RouteDialer({PUBLIC_V4: upstream.port}),
    )
    stalled = [
        asyncio.create_task(_fetch(fetcher, f"https://n{i}.stall.test/mcp", "tenant-a", 1.0))
        for i in range(3 * POOL_THREADS)
    ]
    await asyncio.sleep(0.2)  # tenant A's lookups are now blocking threads
    started = time.monotonic()
    status = await _fetch(fetcher, "https://ok.test/mcp", "tenant-b", 3.0)
    elapsed = time.monotonic() - started
    assert status == 200
    assert elapsed < 1.0 + 1.5  # a correctness bound: it never waited for tenant A
    results = await asyncio.gather(*stalled, return_exceptions=True)
    assert all(isinstance(r, EgressTimeout) for r in results)
    assert stalling.most_blocked <= LOOKUPS_PER_SCOPE


async def test_an_abandoned_lookup_keeps_its_share_until_it_ends(
    dns: Any, make_fetcher: MakeFetcher
) -> None:
    """A timed-out caller does not free its share while its thread is still blocked, so a
    stalling tenant cannot pile thread upon thread by retrying."""
    stalling, pool = dns
    fetcher = make_fetcher(resolver=SystemResolver(getaddrinfo=stalling.getaddrinfo, executor=pool))
    for wave in range(3):
        waves = [
            _fetch(fetcher, f"https://w{wave}-{i}.stall.test/mcp", "tenant-a", 0.3)
            for i in range(LOOKUPS_PER_SCOPE)
        ]
        results = await asyncio.gather(*waves, return_exceptions=True)
        assert all(isinstance(r, EgressTimeout) for r in results)
    assert stalling.blocked == LOOKUPS_PER_SCOPE
    assert fetcher.backend.shares.in_flight("tenant-a") == LOOKUPS_PER_SCOPE
    stalling.release.set()
    for _ in range(100):
        if fetcher.backend.shares.in_flight("tenant-a") == 0:
            break
        await asyncio.sleep(0.05)
    assert fetcher.backend.shares.in_flight("tenant-a") == 0


async def test_unscoped_lookups_are_not_counted(dns: Any, make_fetcher: MakeFetcher) -> None:
    stalling, pool = dns
    fetcher = make_fetcher(resolver=SystemResolver(getaddrinfo=stalling.getaddrinfo, executor=pool))
    tasks = [
        asyncio.create_task(_fetch_unscoped(fetcher, f"https://u{i}.stall.test/mcp"))
        for i in range(LOOKUPS_PER_SCOPE + 2)
    ]
    await asyncio.sleep(0.3)
    assert stalling.blocked == LOOKUPS_PER_SCOPE + 2
    stalling.release.set()
    await asyncio.gather(*tasks, return_exceptions=True)


async def _fetch_unscoped(fetcher: Any, url: str) -> None:
    async with fetcher.operation(pin=url, deadline_s=2.0) as op:
        await op.request("GET", url)

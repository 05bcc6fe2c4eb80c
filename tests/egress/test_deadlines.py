"""One total deadline per operation, and bounded concurrency per origin (SECURITY §1.7).

Timing assertions are one-sided and generous: they prove the deadline cut the exchange, nothing
about speed.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import pytest

from hub.egress import EgressTimeout, SystemResolver
from tests.egress.conftest import MakeFetcher, StartUpstream
from tests.egress.support import (
    OTHER_PUBLIC_V4,
    PUBLIC_V4,
    Conn,
    FakeResolver,
    RequestHead,
    Respond,
    RouteDialer,
    fetch,
    json_responder,
    response_head,
)

DEADLINE_S = 2.0
LIMIT_S = 3.5


async def drip(request: RequestHead, conn: Conn) -> bool:
    await conn.send(
        response_head(200, [("Content-Type", "application/json"), ("Content-Length", "1000")])
    )
    for _ in range(1000):
        await conn.send(b" ")
        await asyncio.sleep(0.5)
    return False


async def hang_after_headers(request: RequestHead, conn: Conn) -> bool:
    await conn.send(
        response_head(200, [("Content-Type", "application/json"), ("Content-Length", "10")])
    )
    await conn.wait_closed_by_peer()
    return False


async def hang_before_headers(request: RequestHead, conn: Conn) -> bool:
    await conn.wait_closed_by_peer()
    return False


@pytest.mark.parametrize("respond", [drip, hang_after_headers, hang_before_headers])
async def test_slow_upstream_is_stopped_by_the_deadline(
    respond: Respond, make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(respond, tls_names=("mcp.test",))
    dialer = RouteDialer({PUBLIC_V4: upstream.port})
    fetcher = make_fetcher(resolver=FakeResolver({"mcp.test": [PUBLIC_V4]}), dialer=dialer)
    started = time.monotonic()
    with pytest.raises(EgressTimeout) as caught:
        await fetch(fetcher, "https://mcp.test/mcp", deadline_s=DEADLINE_S)
    assert time.monotonic() - started < LIMIT_S
    assert caught.value.reason == "timeout"


async def test_slow_resolver_is_stopped_by_the_deadline(make_fetcher: MakeFetcher) -> None:
    dialer = RouteDialer()
    fetcher = make_fetcher(
        resolver=FakeResolver({"mcp.test": [PUBLIC_V4]}, delay_s=30), dialer=dialer
    )
    started = time.monotonic()
    with pytest.raises(EgressTimeout):
        await fetch(fetcher, "https://mcp.test/mcp", deadline_s=DEADLINE_S)
    assert time.monotonic() - started < LIMIT_S
    assert dialer.dials == []


async def test_callers_own_work_inside_the_block_counts(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(json_responder())
    fetcher = make_fetcher(allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}))
    url = f"http://127.0.0.1:{upstream.port}/"

    async def fetch_then_parse_slowly() -> None:
        async with fetcher.operation(pin=url, deadline_s=0.5) as op:
            await op.request("GET", url)
            await asyncio.sleep(30)  # stands in for slow parsing

    started = time.monotonic()
    with pytest.raises(EgressTimeout):
        await fetch_then_parse_slowly()
    assert time.monotonic() - started < 2.0


async def test_concurrency_is_bounded_per_origin(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    limit = 2
    hanging = await start_upstream(hang_before_headers, tls_names=("slow.test",))
    healthy = await start_upstream(json_responder(), tls_names=("fast.test",))
    resolver = FakeResolver({"slow.test": [PUBLIC_V4], "fast.test": [OTHER_PUBLIC_V4]})
    dialer = RouteDialer({PUBLIC_V4: hanging.port, OTHER_PUBLIC_V4: healthy.port})
    fetcher = make_fetcher(resolver=resolver, dialer=dialer, max_per_origin=limit)

    async def slow_call(deadline_s: float) -> BaseException | None:
        try:
            await fetch(fetcher, "https://slow.test/mcp", deadline_s=deadline_s)
        except EgressTimeout as exc:
            return exc
        return None

    started = time.monotonic()
    # the first `limit` calls take every slot and outlive the others, so no waiter can slip into
    # a slot freed in the instant between one deadline and the next (that would be a new
    # connection, correctly made, that this test would miscount)
    holders = [asyncio.create_task(slow_call(DEADLINE_S + 1)) for _ in range(limit)]
    await asyncio.sleep(0.2)
    waiters = [asyncio.create_task(slow_call(DEADLINE_S)) for _ in range(2 * limit)]
    await asyncio.sleep(0.3)
    for _ in range(5):
        assert (
            await fetch(fetcher, "https://fast.test/mcp", deadline_s=DEADLINE_S)
        ).status_code == 200
    outcomes = await asyncio.gather(*holders, *waiters)
    assert time.monotonic() - started < DEADLINE_S + 1 + 1.5
    assert all(isinstance(outcome, EgressTimeout) for outcome in outcomes)
    assert 1 <= hanging.peak_open <= limit
    assert hanging.connections <= limit
    assert fetcher.limiter.in_use("https://slow.test") == 0


async def test_a_request_made_while_reading_a_response_rides_on_the_operations_slot(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    """Answering a server request from inside a response stream must not wait for a new slot.

    With one slot per origin, the operation holds it while it reads the outer response; the
    inner request (what a legacy MCP session POSTs back to a server→client request) would wait
    for that very slot until the deadline. It rides on the operation's slot instead; a second
    rider, and every other operation, still wait.
    """
    upstream = await start_upstream(json_responder(), tls_names=("mcp.test",))
    resolver = FakeResolver({"mcp.test": [PUBLIC_V4]})
    fetcher = make_fetcher(
        resolver=resolver, dialer=RouteDialer({PUBLIC_V4: upstream.port}), max_per_origin=1
    )
    url = "https://mcp.test/mcp"
    other_done = asyncio.Event()

    async def other_operation() -> None:
        await fetch(fetcher, url, deadline_s=DEADLINE_S)
        other_done.set()

    started = time.monotonic()
    async with (
        fetcher.operation(pin=url, deadline_s=DEADLINE_S) as op,
        op.stream("GET", url) as outer,
    ):
        other = asyncio.create_task(other_operation())
        inner = await op.request("GET", url)
        assert inner.status_code == 200
        await asyncio.sleep(0.2)
        assert not other_done.is_set()  # other operations still wait for the slot
        assert await outer.read() == b'{"ok": true}'
    assert time.monotonic() - started < DEADLINE_S
    await other
    assert upstream.peak_open <= 2
    assert fetcher.limiter.in_use("https://mcp.test") == 0


async def test_only_one_rider_per_slot_held(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(json_responder(), tls_names=("mcp.test",))
    resolver = FakeResolver({"mcp.test": [PUBLIC_V4]})
    fetcher = make_fetcher(
        resolver=resolver, dialer=RouteDialer({PUBLIC_V4: upstream.port}), max_per_origin=1
    )
    url = "https://mcp.test/mcp"

    async def three_at_once() -> None:
        async with (
            fetcher.operation(pin=url, deadline_s=1.0) as op,
            op.stream("GET", url),
            op.stream("GET", url),
        ):
            await op.request("GET", url)  # a third concurrent request: no slot, no ride

    started = time.monotonic()
    with pytest.raises(EgressTimeout):
        await three_at_once()
    assert time.monotonic() - started < 1.0 + 1.5
    assert upstream.peak_open <= 2
    assert fetcher.limiter.in_use("https://mcp.test") == 0


async def test_stalled_system_lookups_never_starve_the_default_executor(
    make_fetcher: MakeFetcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancelled ``getaddrinfo`` keeps its thread until the system resolver gives up; those
    threads are the egress DNS pool's, not the event loop's default executor."""
    released = threading.Event()

    def stalled_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        released.wait(10)  # a name whose DNS servers never answer (no real lookup is made)
        raise socket.gaierror(socket.EAI_AGAIN, "test: no answer")

    monkeypatch.setattr(socket, "getaddrinfo", stalled_getaddrinfo)
    fetcher = make_fetcher(resolver=SystemResolver(), dialer=RouteDialer())
    loop = asyncio.get_running_loop()
    try:
        outcomes = await asyncio.gather(
            *(fetch(fetcher, f"https://n{i}.stalled.test/", deadline_s=0.3) for i in range(48)),
            return_exceptions=True,
        )
        assert all(isinstance(outcome, EgressTimeout) for outcome in outcomes)
        started = time.monotonic()
        async with asyncio.timeout(LIMIT_S):
            assert await loop.run_in_executor(None, lambda: "free") == "free"
        assert time.monotonic() - started < 1.5
    finally:
        released.set()


async def test_one_tenant_cannot_take_every_slot_of_a_shared_origin(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    """Tenant A's hanging calls hold at most its share of the origin; tenant B still gets in."""

    async def slow_or_fast(request: RequestHead, conn: Conn) -> bool:
        if request.target.startswith("/slow"):
            return await hang_before_headers(request, conn)
        return await json_responder()(request, conn)

    shared = await start_upstream(slow_or_fast, tls_names=("shared.test",))
    fetcher = make_fetcher(
        resolver=FakeResolver({"shared.test": [PUBLIC_V4]}),
        dialer=RouteDialer({PUBLIC_V4: shared.port}),
        max_per_origin=4,
        max_per_tenant_origin=2,
    )

    async def call(scope: str, path: str) -> int | BaseException:
        url = f"https://shared.test{path}"
        try:
            async with fetcher.operation(pin=url, deadline_s=DEADLINE_S, scope=scope) as op:
                return (await op.request("GET", url)).status_code
        except EgressTimeout as exc:
            return exc

    started = time.monotonic()
    hogs = [asyncio.create_task(call("tenant-a", "/slow")) for _ in range(6)]
    await asyncio.sleep(0.3)
    assert shared.open_now == 2  # tenant A's share, not the origin's 4
    assert await call("tenant-b", "/fast") == 200
    assert await call("tenant-b", "/fast") == 200
    outcomes = await asyncio.gather(*hogs)
    assert all(isinstance(o, EgressTimeout) for o in outcomes)
    assert time.monotonic() - started < DEADLINE_S + 1.5
    assert fetcher.scoped_limiter.in_use("tenant-a https://shared.test") == 0

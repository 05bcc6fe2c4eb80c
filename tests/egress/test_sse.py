"""SSE bodies: httpx2's EventSource with a per-event cap, the operation budget, early close."""

from __future__ import annotations

import asyncio

import pytest

from hub.egress import MalformedResponse, ResponseTooLarge, ServerSentEvent
from tests.egress.conftest import MakeFetcher, StartUpstream
from tests.egress.support import (
    Conn,
    RequestHead,
    Respond,
    RouteDialer,
    Upstream,
    full_response,
    response_head,
)

MIB = 1024 * 1024
SSE_HEAD = response_head(200, [("Content-Type", "text/event-stream"), ("Connection", "close")])
ACCEPT = {"Accept": "application/json, text/event-stream"}


def events_of(count: int, size: int = 1024) -> bytes:
    payload = "d" * (size - len("data: \n\n"))
    return f"data: {payload}\n\n".encode() * count


def sse_body(body: bytes) -> Respond:
    async def respond(request: RequestHead, conn: Conn) -> bool:
        await conn.send(SSE_HEAD + body)
        return False

    return respond


async def collect(
    fetcher_url: tuple[MakeFetcher, Upstream], **config: object
) -> list[ServerSentEvent]:
    make_fetcher, upstream = fetcher_url
    fetcher = make_fetcher(allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}), **config)
    url = f"http://127.0.0.1:{upstream.port}/mcp"
    received: list[ServerSentEvent] = []
    async with (
        fetcher.operation(pin=url, deadline_s=10) as op,
        op.stream("POST", url, json={"jsonrpc": "2.0"}, headers=ACCEPT) as response,
    ):
        assert response.content_type == "text/event-stream"
        async for event in response.events():
            received.append(event)
    return received


async def test_ten_thousand_events_of_one_kib_are_accepted(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    """SECURITY §7.11: 10,000 events of 1 KiB (10 MiB, within the 16 MiB operation budget)."""
    upstream = await start_upstream(sse_body(events_of(10_000)))
    received = await collect((make_fetcher, upstream))
    assert len(received) == 10_000
    assert all(len(event.data) == 1024 - 8 for event in received)


async def test_twenty_thousand_events_exhaust_the_operation_budget(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(sse_body(events_of(20_000)))
    with pytest.raises(ResponseTooLarge) as caught:
        await collect((make_fetcher, upstream))
    assert caught.value.scope == "operation"


async def test_one_event_over_the_cap_is_refused(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    body = b"data: " + b"e" * (4 * MIB + 1) + b"\n\n"
    upstream = await start_upstream(sse_body(body))
    with pytest.raises(ResponseTooLarge) as caught:
        await collect((make_fetcher, upstream))
    assert caught.value.scope == "event"


async def test_event_that_never_terminates_is_refused(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    async def endless_line(request: RequestHead, conn: Conn) -> bool:
        await conn.send(SSE_HEAD + b"data: ")
        chunk = b"n" * 65536
        while True:  # until the client hangs up
            await conn.send(chunk)

    upstream = await start_upstream(endless_line)
    with pytest.raises(ResponseTooLarge) as caught:
        await collect((make_fetcher, upstream))
    assert caught.value.scope == "event"


async def test_data_lines_without_a_blank_line_are_refused(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    line = b"data: " + b"l" * 1017 + b"\n"
    upstream = await start_upstream(sse_body(line * 5000))
    with pytest.raises(ResponseTooLarge) as caught:
        await collect((make_fetcher, upstream))
    assert caught.value.scope == "event"


async def test_event_fields_are_parsed(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    body = (
        b": priming comment\n\n"
        b"id: 7\nretry: 1500\ndata:\n\n"
        b'event: message\ndata: {"jsonrpc": "2.0",\ndata:  "id": 1}\n\n'
        b"event: ping\ndata: x\r\n\r\n"
    )
    upstream = await start_upstream(sse_body(body))
    received = await collect((make_fetcher, upstream))
    assert received[0] == ServerSentEvent(event="message", data="", id="7", retry=1500)
    assert received[1].json() == {"jsonrpc": "2.0", "id": 1}
    assert received[1].id == "7"
    assert (received[2].event, received[2].data) == ("ping", "x")
    assert len(received) == 3


async def test_leaving_the_block_closes_the_stream(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    async def endless_events(request: RequestHead, conn: Conn) -> bool:
        await conn.send(SSE_HEAD)
        while True:
            await conn.send(b"data: {}\n\n")
            await asyncio.sleep(0.02)

    upstream = await start_upstream(endless_events)
    fetcher = make_fetcher(allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}))
    url = f"http://127.0.0.1:{upstream.port}/mcp"
    async with fetcher.operation(pin=url, deadline_s=10) as op:
        async with op.stream("POST", url, json={}, headers=ACCEPT) as response:
            async for event in response.events():
                assert event.json() == {}
                break
        await asyncio.wait_for(upstream.idle.wait(), timeout=2.0)
        assert upstream.open_now == 0


async def test_events_on_a_json_body_is_malformed_response(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    async def json_body(request: RequestHead, conn: Conn) -> bool:
        await conn.send(full_response(b'{"jsonrpc": "2.0"}'))
        return True

    upstream = await start_upstream(json_body)
    fetcher = make_fetcher(allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}))
    url = f"http://127.0.0.1:{upstream.port}/mcp"
    async with (
        fetcher.operation(pin=url, deadline_s=5) as op,
        op.stream("POST", url, json={}) as response,
    ):
        with pytest.raises(MalformedResponse):
            response.events()
        assert await response.read() == b'{"jsonrpc": "2.0"}'

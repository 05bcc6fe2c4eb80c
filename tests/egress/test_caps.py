"""Body caps: counted decoded as they stream, refused early on Content-Length, closed at once."""

from __future__ import annotations

import functools
import time
import tracemalloc
import zlib

import pytest

from hub.egress import MalformedResponse, ResponseTooLarge
from tests.egress.conftest import MakeFetcher, StartUpstream
from tests.egress.support import (
    Conn,
    RequestHead,
    RouteDialer,
    fetch,
    full_response,
    response_head,
)

MIB = 1024 * 1024
CHUNK = 64 * 1024


@functools.cache
def gzip_bomb() -> bytes:
    """About 100 KiB of gzip that inflates to 100 MiB of zeros."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(MIB)
    return b"".join(compressor.compress(zeros) for _ in range(100)) + compressor.flush()


def loopback_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/mcp"


async def stream_forever_without_length(request: RequestHead, conn: Conn) -> bool:
    await conn.send(
        response_head(200, [("Content-Type", "application/json"), ("Connection", "close")])
    )
    chunk = b"x" * CHUNK
    for _ in range(5 * MIB // CHUNK):
        await conn.send(chunk)
    return False


async def test_body_without_length_is_cut_after_the_cap_plus_one_chunk(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    upstream = await start_upstream(stream_forever_without_length)
    dialer = RouteDialer({"127.0.0.1": None})
    fetcher = make_fetcher(allow_loopback=True, dialer=dialer)
    with pytest.raises(ResponseTooLarge) as caught:
        await fetch(fetcher, loopback_url(upstream.port))
    assert caught.value.reason == "response_too_large"
    assert caught.value.scope == "body"
    assert dialer.bytes_read <= 4 * MIB + CHUNK + 1024


async def test_declared_length_over_the_cap_is_refused_before_the_body(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    async def declare_and_hang(request: RequestHead, conn: Conn) -> bool:
        headers = [("Content-Type", "application/json"), ("Content-Length", str(5 * MIB))]
        await conn.send(response_head(200, headers))
        await conn.wait_closed_by_peer()  # never sends the body
        return False

    upstream = await start_upstream(declare_and_hang)
    dialer = RouteDialer({"127.0.0.1": None})
    fetcher = make_fetcher(allow_loopback=True, dialer=dialer)
    started = time.monotonic()
    with pytest.raises(ResponseTooLarge) as caught:
        await fetch(fetcher, loopback_url(upstream.port), deadline_s=10)
    assert time.monotonic() - started < 2.0  # did not wait for a body that never comes
    assert caught.value.scope == "body"
    assert dialer.bytes_read < 1024


async def test_gzip_bomb_is_refused_without_inflating_in_memory(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    bomb = gzip_bomb()
    assert 50 * 1024 < len(bomb) < 200 * 1024

    async def send_bomb(request: RequestHead, conn: Conn) -> bool:
        extra = [("Content-Encoding", "gzip")]
        await conn.send(full_response(bomb, extra=extra))
        return True

    upstream = await start_upstream(send_bomb)
    fetcher = make_fetcher(allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}))
    tracemalloc.start()
    try:
        baseline, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        with pytest.raises(ResponseTooLarge) as caught:
            await fetch(fetcher, loopback_url(upstream.port))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.scope == "body"
    assert peak - baseline < 16 * MIB


async def test_small_gzip_body_is_decoded(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    body = compressor.compress(b'{"compressed": true}') + compressor.flush()

    async def send_gzip(request: RequestHead, conn: Conn) -> bool:
        await conn.send(full_response(body, extra=[("Content-Encoding", "gzip")]))
        return True

    upstream = await start_upstream(send_gzip)
    fetcher = make_fetcher(allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}))
    assert (await fetch(fetcher, loopback_url(upstream.port))).json() == {"compressed": True}


async def test_corrupt_gzip_is_malformed_response(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    async def send_garbage(request: RequestHead, conn: Conn) -> bool:
        await conn.send(
            full_response(b"\x1f\x8bnot really gzip", extra=[("Content-Encoding", "gzip")])
        )
        return True

    upstream = await start_upstream(send_garbage)
    fetcher = make_fetcher(allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}))
    with pytest.raises(MalformedResponse) as caught:
        await fetch(fetcher, loopback_url(upstream.port))
    assert caught.value.reason == "malformed_response"


@pytest.mark.parametrize(("size", "accepted"), [(4096, True), (4097, False)])
async def test_body_exactly_at_the_cap_is_accepted(
    size: int, accepted: bool, make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    async def send_size(request: RequestHead, conn: Conn) -> bool:
        await conn.send(response_head(200, [("Connection", "close")]) + b"y" * size)
        return False

    upstream = await start_upstream(send_size)
    fetcher = make_fetcher(
        allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}), max_response_bytes=4096
    )
    if accepted:
        assert len((await fetch(fetcher, loopback_url(upstream.port))).content) == size
    else:
        with pytest.raises(ResponseTooLarge):
            await fetch(fetcher, loopback_url(upstream.port))


async def test_operation_budget_spans_requests(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    async def three_mib(request: RequestHead, conn: Conn) -> bool:
        await conn.send(full_response(b"z" * (3 * MIB)))
        return True

    upstream = await start_upstream(three_mib)
    fetcher = make_fetcher(
        allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}), max_operation_bytes=5 * MIB
    )
    url = loopback_url(upstream.port)
    async with fetcher.operation(pin=url, deadline_s=5) as op:
        assert len((await op.request("GET", url)).content) == 3 * MIB
        with pytest.raises(ResponseTooLarge) as caught:
            await op.request("GET", url)
        assert caught.value.scope == "operation"
        assert op.budget.used == 3 * MIB  # refused on Content-Length, before reading


async def test_streamed_read_caps_and_reports_the_media_type(
    make_fetcher: MakeFetcher, start_upstream: StartUpstream
) -> None:
    async def typed(request: RequestHead, conn: Conn) -> bool:
        await conn.send(full_response(b'{"a": 1}', content_type="Application/JSON; charset=utf-8"))
        return True

    upstream = await start_upstream(typed)
    fetcher = make_fetcher(allow_loopback=True, dialer=RouteDialer({"127.0.0.1": None}))
    url = loopback_url(upstream.port)
    async with (
        fetcher.operation(pin=url, deadline_s=5) as op,
        op.stream("POST", url, json={}) as response,
    ):
        assert response.status_code == 200
        assert response.content_type == "application/json"
        assert await response.read() == b'{"a": 1}'
        assert await response.read() == b'{"a": 1}'

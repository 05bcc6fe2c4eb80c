"""``hub serve`` bounds a request's head: past 64 KiB of request line and headers it answers 431
and closes the connection, before any authentication (stop 43). httptools sets no bound of its
own: a 200 MiB header value and two million headers were each read whole and answered 200."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator

import pytest

from hub.core.http_protocol import LINGER_S, MAX_REQUEST_HEAD_BYTES, HubHttpToolsProtocol
from tests.deploy.raw_http import request, response, serving


@pytest.fixture
async def port() -> AsyncIterator[int]:
    async with serving() as bound:
        yield bound


class _QuickHead(HubHttpToolsProtocol):
    head_timeout_s = 0.5


@pytest.fixture
async def quick_port() -> AsyncIterator[int]:
    """The protocol with a head timeout of half a second instead of ten."""
    async with serving(http=_QuickHead) as bound:
        yield bound


async def _response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    status, _, body = await response(reader)
    return status, body


def _refusal(head: bytes, body: bytes) -> dict[str, str]:
    """The error of a refusal written by the protocol, checked for the hub's envelope: JSON,
    and a request id of its own in the body and in ``x-request-id`` (DESIGN §4)."""
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:] if line)
    assert headers["content-type"] == "application/json"
    error: dict[str, str] = json.loads(body)["error"]
    assert len(error["request_id"]) == 32
    assert headers["x-request-id"] == error["request_id"]
    return error


async def _send_until_closed(writer: asyncio.StreamWriter, start: bytes, piece: bytes) -> int:
    """Write ``start``, then ``piece`` again and again until the server closes the connection;
    the bytes written."""
    writer.write(start)
    sent = len(start)
    try:
        while True:
            writer.write(piece)
            await writer.drain()
            sent += len(piece)
    except ConnectionError:
        return sent


async def _in_pieces(writer: asyncio.StreamWriter, data: bytes) -> None:
    """``data`` in writes of 1,000 bytes, so that the server reads a head in many reads."""
    for i in range(0, len(data), 1000):
        writer.write(data[i : i + 1000])
        await writer.drain()
        await asyncio.sleep(0.001)


@pytest.mark.parametrize("shape", ["one-value", "many-headers", "long-url"])
async def test_a_head_past_the_bound_is_431_and_the_connection_closes(
    port: int, shape: str
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    start, piece = {
        "one-value": (b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\nx-big: ", b"a" * 4096),
        "many-headers": (b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n", b"x-h: v\r\n" * 512),
        "long-url": (b"GET /", b"a" * 4096),
    }[shape]
    sending = asyncio.create_task(_send_until_closed(writer, start, piece))
    status, head, body = await response(reader)  # read while the client is still sending
    assert status == 431
    assert _refusal(head, body)["code"] == "headers_too_large"
    assert await asyncio.wait_for(reader.read(), 10) == b""  # the server's side is closed
    await asyncio.wait_for(sending, LINGER_S + 10)  # and then the connection
    writer.close()


async def test_heads_within_the_bound_and_large_bodies_are_served(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    near = b"x-near: " + b"n" * (MAX_REQUEST_HEAD_BYTES - 200) + b"\r\n"
    body = b"b" * (4 * 1024 * 1024)
    # a head just under the bound, sent in small pieces
    await _in_pieces(writer, request(near))
    assert await _response(reader) == (200, b"0")
    # a body far past the bound, in one write: the head's count stops at the head
    writer.write(request(body=body))
    assert await _response(reader) == (200, str(len(body)).encode())
    # on one connection, many heads whose sum passes the bound: each head is counted alone
    for _ in range(3):
        await _in_pieces(writer, request(near))
        assert await _response(reader) == (200, b"0")
    # pipelined: two requests, then a third head that completes in the next write
    third = request(near)
    writer.write(request(body=body) + request(near) + third[:100])
    writer.write(third[100:])
    for expected in (str(len(body)).encode(), b"0", b"0"):
        assert await _response(reader) == (200, expected)
    writer.close()


@pytest.mark.parametrize("url_bytes", [65_600, 100 * 1024])
async def test_a_long_request_line_read_whole_is_the_431_envelope(
    port: int, url_bytes: int
) -> None:
    """httptools' ``parse_url`` refuses a URL of 64 KiB or more, and uvicorn answered that with
    its own ``400 text/plain``: the 431 never reached the client."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    url = b"/" + b"a" * url_bytes
    writer.write(b"GET " + url + b" HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
    status, head, body = await response(reader)
    assert status == 431
    assert _refusal(head, body)["code"] == "headers_too_large"
    assert await asyncio.wait_for(reader.read(), 10) == b""
    writer.close()


async def test_a_request_that_is_not_http_is_the_400_envelope(port: int) -> None:
    """What httptools cannot parse gets the hub's JSON 400, not uvicorn's ``text/plain``."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\nbad header\r\n\r\n")
    status, head, body = await response(reader)
    assert status == 400
    assert _refusal(head, body)["code"] == "invalid_request"
    assert await asyncio.wait_for(reader.read(), 10) == b""
    writer.close()


async def test_a_head_past_the_bound_read_whole_is_431_too(port: int) -> None:
    """However the head is split into reads: in one write of 100 KiB, the server may read it in
    one go and parse it whole before counting anything."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request(b"x-big: " + b"a" * (100 * 1024) + b"\r\n", body=b"{}"))
    status, head, body = await response(reader)
    assert status == 431
    assert _refusal(head, body)["code"] == "headers_too_large"
    assert await asyncio.wait_for(reader.read(), 10) == b""
    writer.close()


@pytest.mark.parametrize("pace", ["silent", "dribbling"])
async def test_a_head_that_does_not_arrive_in_time_is_408(quick_port: int, pace: str) -> None:
    """uvicorn's keep-alive timer stops at the first byte: a head sent a header every few
    seconds was read for as long as it took. Progress does not restart the timer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", quick_port)
    started = time.monotonic()
    writer.write(b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n")

    async def dribble() -> None:
        with contextlib.suppress(ConnectionError):
            while pace == "dribbling":
                await asyncio.sleep(0.1)
                writer.write(b"x-a: b\r\n")
                await writer.drain()

    dribbling = asyncio.create_task(dribble())
    status, head, body = await response(reader)
    assert status == 408
    assert _refusal(head, body)["code"] == "request_timeout"
    assert 0.5 <= time.monotonic() - started < 0.5 + 1.5
    assert await asyncio.wait_for(reader.read(), 10) == b""
    dribbling.cancel()
    writer.close()


async def test_each_head_has_its_own_time(quick_port: int) -> None:
    """On one connection, heads that each arrive within the timeout, in pieces and with pauses
    between requests longer than it, are all served."""
    reader, writer = await asyncio.open_connection("127.0.0.1", quick_port)
    for _ in range(3):
        sent = request(b"x-a: b\r\n")
        writer.write(sent[:10])
        await asyncio.sleep(0.3)
        writer.write(sent[10:])
        assert await _response(reader) == (200, b"0")
        await asyncio.sleep(0.3)
    writer.close()

"""A request's body is timed, and what begun, incomplete requests hold is bounded (stop 44).

FastAPI reads a body before a route authenticates it, and any well-formed key passes the check
that needs no database. One hundred connections that each sent 2 MiB less a few bytes and
stalled took ``hub serve`` from 124 to 331 MB, and kept it there: nothing timed a body.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hub.auth.key_format import generate_key
from hub.core.http_protocol import LINGER_S, HubHttpToolsProtocol, PendingBytes
from tests.deploy.raw_http import echo_length, request, response, serving
from tests.deploy.serving import running_hub
from tests.support.migrated import migrated_sqlite

TIMEOUT_S = 0.5
LIMIT = 1024 * 1024


def _protocol(limit: int = LIMIT) -> type[HubHttpToolsProtocol]:
    """The protocol with a body timeout of half a second and a count of its own."""

    class Quick(HubHttpToolsProtocol):
        body_timeout_s = TIMEOUT_S
        pending = PendingBytes(limit)

    return Quick


@contextlib.asynccontextmanager
async def _serving(app: Any = echo_length) -> AsyncIterator[tuple[int, PendingBytes]]:
    protocol = _protocol()
    async with serving(app, http=protocol) as port:
        yield port, protocol.pending


@pytest.fixture
async def served() -> AsyncIterator[tuple[int, PendingBytes]]:
    async with _serving() as bound:
        yield bound


async def _until(predicate: Any, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "not in time"
        await asyncio.sleep(0.01)


async def _closed(reader: asyncio.StreamReader) -> bool:
    """Whether the server closes the connection (after what it still had to say)."""
    with contextlib.suppress(ConnectionError):
        while await asyncio.wait_for(reader.read(65536), LINGER_S + 10):
            pass
    return True


@pytest.mark.parametrize("pace", ["silent", "dribbling"])
async def test_a_body_that_does_not_arrive_in_time_is_408(
    served: tuple[int, PendingBytes], pace: str
) -> None:
    port, pending = served
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    writer.write(request(body=b"a" * 1000, length=100_000))

    async def dribble() -> None:
        with contextlib.suppress(ConnectionError):
            while pace == "dribbling":
                await asyncio.sleep(0.05)
                writer.write(b"a" * 100)
                await writer.drain()

    dribbling = asyncio.create_task(dribble())
    status, head, body = await response(reader)
    assert status == 408
    error = json.loads(body)["error"]
    assert b"\r\nx-request-id: %s\r\n" % error.pop("request_id").encode() in head
    assert error == {
        "code": "request_timeout",
        "message": "the request's body took longer than 30 s",
    }
    assert TIMEOUT_S <= time.monotonic() - started < TIMEOUT_S + 1.5
    assert await _closed(reader)
    assert pending.held == 0
    dribbling.cancel()
    writer.close()


async def test_bodies_that_arrive_in_time_are_served(served: tuple[int, PendingBytes]) -> None:
    """Each body has its own time: three bodies on one connection, each sent over 0.3 s (1.5
    times the timeout in all), are all served."""
    port, pending = served
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for _ in range(3):
        body = b"b" * 300_000
        sent = request(body=body)
        for i in range(0, len(sent), 100_000):
            writer.write(sent[i : i + 100_000])
            await writer.drain()
            await asyncio.sleep(0.1)
        status, _, answer = await response(reader)
        assert (status, answer) == (200, b"300000")
        assert pending.held == 0
    writer.close()


async def test_time_the_server_does_not_read_is_not_the_clients() -> None:
    """An app that takes longer than the timeout before it reads a large body: the server
    stopped reading (flow control), so the client, which sent it all at once, is served."""

    async def slow_to_read(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await asyncio.sleep(TIMEOUT_S * 3)
        await echo_length(scope, receive, send)

    async with _serving(slow_to_read) as (port, pending):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        body = b"c" * 900_000
        writer.write(request(body=body))
        status, _, answer = await response(reader)
        assert (status, answer) == (200, b"900000")
        assert pending.held == 0
        writer.close()


async def test_past_the_bound_a_request_that_adds_to_it_is_503(
    served: tuple[int, PendingBytes],
) -> None:
    port, pending = served
    # one request holds most of the bound, and waits
    first_reader, first = await asyncio.open_connection("127.0.0.1", port)
    head_and_part = request(body=b"a" * 800_000, length=LIMIT)
    first.write(head_and_part)
    await _until(lambda: pending.held >= len(head_and_part))
    # a second that would pass it is refused
    second_reader, second = await asyncio.open_connection("127.0.0.1", port)
    second.write(request(body=b"b" * 300_000, length=400_000))
    status, head, body = await response(second_reader)
    assert status == 503
    assert b"\r\nretry-after: 1\r\n" in head.lower()
    error = json.loads(body)["error"]
    assert error["code"] == "server_busy"
    assert b"\r\nx-request-id: %s\r\n" % error["request_id"].encode() in head
    assert await _closed(second_reader)
    # a request that arrives in one read is never counted: served whatever the count
    small_reader, small = await asyncio.open_connection("127.0.0.1", port)
    small.write(request(body=b"{}"))
    assert (await response(small_reader))[::2] == (200, b"2")
    # the first request completes, and its bytes leave the count
    first.write(b"a" * (LIMIT - 800_000))
    assert (await response(first_reader))[::2] == (200, str(LIMIT).encode())
    assert pending.held == 0
    # now the second is served
    again_reader, again = await asyncio.open_connection("127.0.0.1", port)
    again.write(request(body=b"b" * 300_000, length=400_000))
    await asyncio.sleep(0.1)
    again.write(b"b" * 100_000)
    assert (await response(again_reader))[::2] == (200, b"400000")
    for writer in (first, second, small, again):
        writer.close()


async def test_a_client_that_leaves_mid_body_leaves_nothing_counted(
    served: tuple[int, PendingBytes],
) -> None:
    port, pending = served
    for _ in range(5):
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request(body=b"a" * 100_000, length=200_000))
        await writer.drain()
        await _until(lambda: pending.held > 0)
        writer.close()
        await _until(lambda: pending.held == 0)


async def test_a_body_still_arriving_after_the_answer_is_timed_too() -> None:
    """An app that answers without reading the body (a 401, say): the client that goes on
    sending it slowly is still disconnected when the body's time is up."""

    async def refuse(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 401, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async with _serving(refuse) as (port, pending):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        started = time.monotonic()
        writer.write(request(body=b"a" * 1000, length=100_000))
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        assert head.startswith(b"HTTP/1.1 401 ")

        async def dribble() -> None:
            with contextlib.suppress(ConnectionError):
                while True:
                    await asyncio.sleep(0.05)
                    writer.write(b"a" * 100)
                    await writer.drain()

        dribbling = asyncio.create_task(dribble())
        assert await _closed(reader)
        assert time.monotonic() - started < TIMEOUT_S + 1.5 + LINGER_S
        assert pending.held == 0
        dribbling.cancel()
        writer.close()


@pytest.mark.slow
async def test_hub_serve_bounds_what_incomplete_requests_hold(tmp_path: Path) -> None:
    """Through ``hub serve`` and its setting, on the agents' endpoint with a key no one issued
    (its checksum is right: no secret is needed to make one): a request that stalls holds its
    bytes, the next that would pass the bound is 503, and a client that leaves is no error."""
    migrated_sqlite(tmp_path / "hub.db")
    bound = str(LIMIT)
    path = f"/tenants/acme/deployments/{uuid.uuid4()}/mcp"
    headers = b"authorization: Bearer %s\r\ncontent-type: application/json\r\n" % (
        generate_key()[0].encode()
    )

    def post(body: bytes, length: int) -> bytes:
        return request(headers, body, length=length).replace(
            b"POST / ", b"POST %s " % (path.encode()), 1
        )

    with running_hub(
        tmp_path, HUB_MAX_REQUEST_BYTES=bound, HUB_MAX_PENDING_REQUEST_BYTES=bound
    ) as hub:
        _, stalled = await asyncio.open_connection("127.0.0.1", hub.port)
        stalled.write(post(b"[" + b"1," * 400_000, LIMIT))
        await stalled.drain()
        await asyncio.sleep(0.5)  # the hub reads it (its app, the body) and holds it
        reader, writer = await asyncio.open_connection("127.0.0.1", hub.port)
        writer.write(post(b"[" + b"1," * 150_000, 400_000))
        status, _, body = await response(reader)
        assert status == 503
        assert json.loads(body)["error"]["code"] == "server_busy"
        assert await _closed(reader)
        stalled.close()
        writer.close()
        await asyncio.sleep(0.5)
    levels = [line for line in hub.log_lines if line["level"] in ("error", "critical")]
    assert levels == []
    messages = [line["message"] for line in hub.log_lines]
    assert "client disconnected before its request arrived" in messages

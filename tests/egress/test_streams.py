"""The egress streams on the loop's transports (:mod:`hub.egress.streams`), against loopback
peers written here: what httpcore2 relies on (reads, writes, timeouts, errors, the readiness
check of a pooled connection) and what keeps a hostile peer bounded (memory, time)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable

import httpcore2
import pytest
import trustme

from hub.egress.streams import READ_BUFFER_HIGH, AsyncioStream, connect_tcp

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def peer(handler: Handler) -> AsyncIterator[int]:
    """A loopback server running ``handler`` per connection; when the block ends, handlers
    still running are cancelled and their connections aborted."""
    running: list[tuple[asyncio.Task[None], asyncio.StreamWriter]] = []

    async def tracked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        running.append((task, writer))
        await handler(reader, writer)

    server = await asyncio.start_server(tracked, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for task, writer in running:
            task.cancel()
            writer.transport.abort()
        await asyncio.gather(*(task for task, _ in running), return_exceptions=True)
        await server.wait_closed()


async def _hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Accept the connection, read nothing: what the client writes piles up in the kernel's
    buffers, and it never hears back."""
    await asyncio.Event().wait()


async def test_bytes_arrive_in_order_and_a_clean_close_reads_empty() -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await reader.readexactly(5)
        writer.write(b"pong:" + request)
        await writer.drain()
        writer.close()

    async with peer(answer) as port:
        stream = await connect_tcp("127.0.0.1", port, timeout=5)
        await stream.write(b"hello", timeout=5)
        received = b""
        while chunk := await stream.read(4, timeout=5):
            received += chunk
        assert received == b"pong:hello"
        assert await stream.read(4, timeout=5) == b""
        assert stream.get_extra_info("is_readable")  # ended: not reusable
        await stream.aclose()


async def test_a_silent_peer_is_a_read_timeout() -> None:
    async with peer(_hold) as port:
        stream = await connect_tcp("127.0.0.1", port, timeout=5)
        with pytest.raises(httpcore2.ReadTimeout):
            await stream.read(1024, timeout=0.2)
        assert not stream.get_extra_info("is_readable")  # idle and open: reusable
        await stream.aclose()


async def test_a_reset_is_a_read_error() -> None:
    async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        writer.transport.abort()

    async with peer(reset) as port:
        stream = await connect_tcp("127.0.0.1", port, timeout=5)
        await stream.write(b"x", timeout=5)
        with pytest.raises((httpcore2.ReadError, httpcore2.WriteError)):
            await _use_until_it_fails(stream)


async def _use_until_it_fails(stream: AsyncioStream) -> None:
    while await stream.read(1024, timeout=5):
        pass
    await stream.write(b"more", timeout=5)
    await stream.read(1024, timeout=5)
    pytest.fail("a reset connection read as a clean end")  # pragma: no cover


async def _write_until_it_waits(stream: AsyncioStream) -> None:
    for _ in range(10_000):  # until the socket's and the transport's buffers are full
        await stream.write(b"y" * 65536, timeout=0.2)


async def test_a_flood_is_paused_while_unread_and_arrives_whole() -> None:
    total = 8 * READ_BUFFER_HIGH

    async def flood(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"x" * total)
        await writer.drain()
        writer.close()

    async with peer(flood) as port:
        stream = await connect_tcp("127.0.0.1", port, timeout=5)
        await asyncio.sleep(0.3)  # the peer writes as fast as it can, nobody reads
        buffered = len(stream._receiver.buffer)
        assert stream._receiver.reading_paused
        assert buffered <= READ_BUFFER_HIGH + 1024 * 1024  # one socket read past the mark
        received = 0
        while chunk := await stream.read(65536, timeout=5):
            received += len(chunk)
        assert received == total
        await stream.aclose()


async def test_a_peer_that_reads_nothing_is_a_write_timeout() -> None:
    async with peer(_hold) as port:
        stream = await connect_tcp("127.0.0.1", port, timeout=5)
        with pytest.raises(httpcore2.WriteTimeout):
            await _write_until_it_waits(stream)
        assert stream._transport.get_write_buffer_size() > 0
        await stream.aclose()  # unsent bytes: aborted (dropped), not waited for
        assert stream._transport.is_closing()
        assert stream._transport.get_write_buffer_size() == 0
    with pytest.raises(httpcore2.WriteError):
        await stream.write(b"z", timeout=1)


async def test_a_refused_connection_is_a_connect_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening
        with pytest.raises(httpcore2.ConnectError):
            await connect_tcp("127.0.0.1", port, timeout=5)


async def test_tls_verifies_the_host_name_and_carries_the_bytes() -> None:
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("upstream.test").configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, ssl.SSLError):
            writer.write(await reader.readexactly(4))
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=server_context)
    port = server.sockets[0].getsockname()[1]
    try:
        plain = await connect_tcp("127.0.0.1", port, timeout=5)
        stream = await plain.start_tls(client_context, "upstream.test", timeout=5)
        assert isinstance(stream, AsyncioStream)
        assert stream.get_extra_info("ssl_object") is not None
        await stream.write(b"ping", timeout=5)
        assert await stream.read(4, timeout=5) == b"ping"
        await stream.aclose()
        wrong = await connect_tcp("127.0.0.1", port, timeout=5)
        with pytest.raises(httpcore2.ConnectError):
            await wrong.start_tls(client_context, "other.test", timeout=5)
    finally:
        server.close()
        await server.wait_closed()

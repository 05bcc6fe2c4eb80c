"""A hostile relay: an MCP peer whose connection dies once it has received a given request.

:class:`CuttingRelay` listens on loopback in front of a real peer and passes each HTTP/1.1
request on, byte for byte, and the peer's answers back. A request whose JSON-RPC method is one of
``cut`` is read whole and then the connection is closed without a byte of answer — what the
hub sees when a server dies (or a proxy drops the connection) after it received the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

__all__ = ["CuttingRelay", "StartRelay", "cutting_relay"]


async def _read_request(reader: asyncio.StreamReader) -> bytes | None:
    """One request's bytes (head and ``Content-Length`` body), or None at the end."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    length = 0
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    return head + (await reader.readexactly(length) if length else b"")


def _method(request: bytes) -> Any:
    body = request.partition(b"\r\n\r\n")[2]
    try:
        message = json.loads(body) if body else None
    except ValueError:
        return None
    return message.get("method") if isinstance(message, dict) else None


class CuttingRelay:
    """Relays to ``127.0.0.1:port``; closes the connection on a request whose method is cut."""

    def __init__(self, port: int, cut: set[str]) -> None:
        self.port = port
        self.cut = cut
        self.cut_requests: list[str] = []  # the methods of the requests it cut off
        self.listen_port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def url(self, path: str = "/mcp") -> str:
        return f"http://127.0.0.1:{self.listen_port}{path}"

    async def start(self) -> CuttingRelay:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.listen_port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        peer_reader, peer_writer = await asyncio.open_connection("127.0.0.1", self.port)
        answers = asyncio.create_task(self._pump(peer_reader, writer))
        try:
            while (request := await _read_request(reader)) is not None:
                method = _method(request)
                if method in self.cut:
                    self.cut_requests.append(method)
                    break
                peer_writer.write(request)
                await peer_writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            answers.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await answers
            peer_writer.close()
            writer.close()
            self._tasks.discard(task)

    @staticmethod
    async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        while chunk := await source.read(65536):
            sink.write(chunk)
            await sink.drain()


StartRelay = Callable[[int, set[str]], Awaitable[CuttingRelay]]


@pytest.fixture
async def cutting_relay() -> AsyncIterator[StartRelay]:
    """``await cutting_relay(port, {"tools/call"})``: a :class:`CuttingRelay`, closed after."""
    started: list[CuttingRelay] = []

    async def start(port: int, cut: set[str]) -> CuttingRelay:
        relay = await CuttingRelay(port, cut).start()
        started.append(relay)
        return relay

    yield start
    for relay in started:
        await relay.close()

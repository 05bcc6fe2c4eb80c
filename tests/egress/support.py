"""Hostile and friendly upstreams on loopback, a scripted resolver and a routing dialer.

No test here ever dials a non-loopback address: the :class:`RouteDialer` maps the few approved fake
addresses to loopback listeners and refuses everything else (recording the attempt), so a policy
bug fails the test instead of sending a packet anywhere.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpcore2

from hub.egress import EgressResponse, Fetcher
from hub.egress.streams import connect_tcp

PUBLIC_V4 = "93.184.216.34"  # a public address; only ever mapped to a loopback listener
PUBLIC_V6 = "2606:2800:220:1:248:1893:25c8:1946"
OTHER_PUBLIC_V4 = "198.41.0.4"


@dataclass
class RequestHead:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Conn:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def wait_closed_by_peer(self) -> None:
        """Hang until the client goes away (reads and discards anything it sends)."""
        while await self.reader.read(65536):
            pass


Respond = Callable[[RequestHead, Conn], Awaitable[bool]]


async def read_request(reader: asyncio.StreamReader) -> RequestHead | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, target, _version = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    return RequestHead(method, target, headers, body)


def response_head(status: int = 200, headers: Sequence[tuple[str, str]] = ()) -> bytes:
    lines = [f"HTTP/1.1 {status} X"] + [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def full_response(
    body: bytes,
    *,
    status: int = 200,
    content_type: str = "application/json",
    extra: Sequence[tuple[str, str]] = (),
) -> bytes:
    headers = [("Content-Type", content_type), ("Content-Length", str(len(body))), *extra]
    return response_head(status, headers) + body


def json_responder(body: bytes = b'{"ok": true}', *, status: int = 200) -> Respond:
    async def respond(request: RequestHead, conn: Conn) -> bool:
        await conn.send(full_response(body, status=status))
        return True

    return respond


@dataclass
class Upstream:
    """An HTTP/1.1 server on 127.0.0.1 that counts connections (total, open now, peak)."""

    respond: Respond
    ssl_context: ssl.SSLContext | None = None
    port: int = 0
    connections: int = 0
    open_now: int = 0
    peak_open: int = 0
    requests: list[RequestHead] = field(default_factory=list)
    server_names: list[str | None] = field(default_factory=list)
    idle: asyncio.Event = field(default_factory=asyncio.Event)
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def start(self) -> Upstream:
        if self.ssl_context is not None:
            self.ssl_context.sni_callback = self._record_sni
        self._server = await asyncio.start_server(
            self._handle, "127.0.0.1", 0, ssl=self.ssl_context
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def _record_sni(self, sslobj: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> None:
        self.server_names.append(name)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        self.open_now += 1
        self.idle.clear()
        self.peak_open = max(self.peak_open, self.open_now)
        conn = Conn(reader, writer)
        try:
            while True:
                request = await read_request(reader)
                if request is None:
                    break
                self.requests.append(request)
                if not await self.respond(request, conn):
                    break
        except (ConnectionError, ssl.SSLError):
            pass
        except asyncio.CancelledError:
            # Cancelled by close(): end quietly (asyncio's stream callback logs cancelled handlers).
            pass
        finally:
            self.open_now -= 1
            if self.open_now == 0:
                self.idle.set()
            writer.close()
            self._tasks.discard(task)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()


class CountingListener:
    """A bare TCP listener that only counts connections (a proxy or redirect target)."""

    def __init__(self) -> None:
        self.connections = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> CountingListener:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        writer.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


class FakeResolver:
    """Answers from a table, or one scripted answer list per call; records every lookup."""

    def __init__(
        self,
        table: dict[str, list[str]] | None = None,
        *,
        script: Sequence[list[str]] = (),
        delay_s: float = 0.0,
    ) -> None:
        self.table = dict(table or {})
        self.script = list(script)
        self.delay_s = delay_s
        self.calls: list[str] = []

    async def resolve(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.script:
            index = min(len(self.calls), len(self.script)) - 1
            return list(self.script[index])
        if host not in self.table:
            raise socket.gaierror(socket.EAI_NONAME, "test resolver: unknown name")
        return list(self.table[host])


class _CountingStream(httpcore2.AsyncNetworkStream):
    def __init__(self, stream: httpcore2.AsyncNetworkStream, dialer: RouteDialer) -> None:
        self._stream = stream
        self._dialer = dialer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        data = await self._stream.read(max_bytes, timeout)
        self._dialer.bytes_read += len(data)
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        await self._stream.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> httpcore2.AsyncNetworkStream:
        inner = await self._stream.start_tls(ssl_context, server_hostname, timeout)
        return _CountingStream(inner, self._dialer)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class RouteDialer:
    """Dials approved addresses only, always to a loopback port; refuses and records the rest.

    ``routes`` maps a dialled address to the loopback port to use (``None``: the requested port,
    allowed only for loopback addresses themselves).
    """

    def __init__(self, routes: dict[str, int | None] | None = None) -> None:
        self.routes = dict(routes or {})
        self.dials: list[tuple[str, int]] = []
        self.refused: list[tuple[str, int]] = []
        self.bytes_read = 0

    async def dial(
        self,
        address: str,
        port: int,
        *,
        connect_timeout_s: float | None,
        socket_options: Iterable[Any] | None,
    ) -> httpcore2.AsyncNetworkStream:
        self.dials.append((address, port))
        if address not in self.routes:
            self.refused.append((address, port))
            raise httpcore2.ConnectError("test dialer: address not approved")
        target = self.routes[address]
        if target is None:
            assert ipaddress.ip_address(address).is_loopback
            target = port
        stream = await connect_tcp("127.0.0.1", target, timeout=connect_timeout_s)
        return _CountingStream(stream, self)


async def fetch(
    fetcher: Fetcher,
    url: str,
    *,
    pin: str | None = None,
    deadline_s: float = 5.0,
    bearer: str | None = None,
    method: str = "GET",
) -> EgressResponse:
    """One request in its own operation, pinned to the URL's origin unless told otherwise."""
    async with fetcher.operation(pin=pin or url, deadline_s=deadline_s, bearer=bearer) as op:
        return await op.request(method, url)

"""TCP and TLS streams for httpcore2, on the running event loop's own transports.

httpcore2 asks its network backend for streams it reads, writes, upgrades to TLS and asks
about. Its own backend for asyncio goes through anyio: every read, write and readiness check
passes anyio's stream layers, its cancel scopes, and a lookup of which event loop runs (on
every call). The gateway makes one upstream request per tool call, and that layer was about a
fifteenth of the hub's instructions per call (measured with callgrind on the in-process call
path, docs/decisions.md, issue 14). No library offers such a stream on plain asyncio, so it is
written here, small: an :class:`asyncio.Protocol` that buffers what arrives, and a stream over
it with httpcore2's interface.

- **Reads** take from the buffer, or wait (within the read's timeout) for data, the end of the
  stream or the connection's loss. A peer that sends faster than it is read is paused past
  :data:`READ_BUFFER_HIGH` bytes and resumed once the buffer drains: memory stays bounded
  whatever it sends (the egress byte caps then end the exchange).
- **Writes** hand the bytes to the transport and wait, within the write's timeout, only while
  the transport asks the writer to pause.
- **Closing** is at once: a connection with bytes the peer never took, or a TLS one (no
  ``close_notify`` exchange, as httpcore2's anyio backend does not wait for one either), is
  aborted; a plain one with nothing pending is closed.
- **TLS** is the loop's ``start_tls`` on the same transport and protocol (server name and
  certificate checks are the SSL context's, with the URL's host name).
- **Errors** are httpcore2's, as its anyio backend maps them: a timeout is ``ReadTimeout``,
  ``WriteTimeout`` or ``ConnectTimeout``; a broken or reset connection ``ReadError``,
  ``WriteError`` or ``ConnectError``; a clean end of stream an empty read.
- **Is it readable?** (httpcore2 asks before reusing a pooled connection: an idle connection
  that has anything to read, or its end, was closed by the server): anything buffered, the
  end or a loss seen, or else the socket itself polled without waiting.
"""

from __future__ import annotations

import asyncio
import select
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore2

__all__ = ["READ_BUFFER_HIGH", "AsyncioStream", "connect_tcp"]

#: bytes buffered from a peer before its reading is paused (resumed once a read drains them)
READ_BUFFER_HIGH = 256 * 1024


class _Receiver(asyncio.Protocol):
    """What the transport delivers, kept until the stream reads it."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.ended = False  # end of stream, or the connection is gone
        self.error: BaseException | None = None
        self.reading_paused = False
        self.writing_paused = False
        self._waiter: asyncio.Future[None] | None = None
        self._drained: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > READ_BUFFER_HIGH and not self.reading_paused:
            self.reading_paused = True
            if self.transport is not None:
                self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.ended = True
        self._wake()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        if exc is not None:
            self.error = exc
        self._wake()
        self.resume_writing()

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def arrival(self) -> asyncio.Future[None]:
        """A future done when something arrives (data, the end, the loss)."""
        self._waiter = asyncio.get_running_loop().create_future()
        return self._waiter

    def drained(self) -> asyncio.Future[None]:
        """A future done when the transport may be written to again."""
        self._drained = asyncio.get_running_loop().create_future()
        return self._drained

    def take(self, max_bytes: int) -> bytes:
        data = bytes(self.buffer[:max_bytes])
        del self.buffer[:max_bytes]
        if self.reading_paused and not self.buffer and self.transport is not None:
            self.reading_paused = False
            self.transport.resume_reading()
        return data


async def _within(future: asyncio.Future[None], limit_s: float | None) -> None:
    if limit_s is None:
        await future
        return
    async with asyncio.timeout(limit_s):
        await future


class AsyncioStream(httpcore2.AsyncNetworkStream):
    """A connection's transport and its :class:`_Receiver`, as httpcore2 uses a stream."""

    def __init__(self, transport: asyncio.Transport, receiver: _Receiver) -> None:
        self._transport = transport
        self._receiver = receiver

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        receiver = self._receiver
        if not receiver.buffer and not receiver.ended:
            try:
                await _within(receiver.arrival(), timeout)
            except TimeoutError:
                raise httpcore2.ReadTimeout("the upstream sent nothing in time") from None
        if receiver.buffer:
            return receiver.take(max_bytes)
        if receiver.error is not None:
            raise httpcore2.ReadError(type(receiver.error).__name__)
        return b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        if not buffer:
            return
        receiver = self._receiver
        if receiver.ended or self._transport.is_closing():
            raise httpcore2.WriteError("the connection is closed")
        self._transport.write(buffer)
        if receiver.writing_paused:
            try:
                await _within(receiver.drained(), timeout)
            except TimeoutError:
                raise httpcore2.WriteTimeout("the upstream read nothing in time") from None
            if receiver.error is not None:
                raise httpcore2.WriteError(type(receiver.error).__name__)

    async def aclose(self) -> None:
        transport = self._transport
        if transport.get_write_buffer_size() or transport.get_extra_info("ssl_object"):
            # bytes the peer never took, or a TLS close_notify exchange: nothing is waited for
            # (a peer that reads nothing would hold the connection open as long as it likes)
            transport.abort()
        else:
            transport.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> httpcore2.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                upgraded = await loop.start_tls(
                    self._transport,
                    self._receiver,
                    ssl_context,
                    server_hostname=server_hostname,
                    ssl_handshake_timeout=timeout if timeout else None,
                )
        except TimeoutError:
            self._transport.abort()
            raise httpcore2.ConnectTimeout("the TLS handshake did not finish in time") from None
        except (ssl.SSLError, OSError) as error:
            self._transport.abort()
            raise httpcore2.ConnectError(type(error).__name__) from error
        if upgraded is None:  # the loop closed it meanwhile
            raise httpcore2.ConnectError("the connection closed during the TLS handshake")
        self._transport = upgraded
        self._receiver.transport = self._transport
        return self

    def get_extra_info(self, info: str) -> Any:
        transport = self._transport
        if info == "ssl_object":
            return transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return transport.get_extra_info("sockname")
        if info == "server_addr":
            return transport.get_extra_info("peername")
        if info == "socket":
            return transport.get_extra_info("socket")
        if info == "is_readable":
            return self._readable()
        return None

    def _readable(self) -> bool:
        receiver = self._receiver
        if receiver.buffer or receiver.ended or self._transport.is_closing():
            return True
        sock = self._transport.get_extra_info("socket")
        if sock is None:
            return True
        try:
            ready, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(ready)


async def connect_tcp(
    address: str,
    port: int,
    *,
    timeout: float | None,  # noqa: ASYNC109
    socket_options: Iterable[Any] | None = None,
) -> AsyncioStream:
    """A TCP connection to ``address`` (an IP literal the policy already checked) and ``port``."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout):
            transport, receiver = await loop.create_connection(_Receiver, host=address, port=port)
    except TimeoutError:
        raise httpcore2.ConnectTimeout("the connection was not accepted in time") from None
    except OSError as error:
        raise httpcore2.ConnectError(type(error).__name__) from error
    sock = transport.get_extra_info("socket")
    for option in socket_options or ():
        sock.setsockopt(*option)
    return AsyncioStream(transport, receiver)

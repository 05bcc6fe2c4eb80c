"""The stdio transport, on pipes the event loop reads without a thread (DESIGN §10.5).

The SDK's ``stdio_server`` reads stdin in a worker thread, which a SIGTERM cannot interrupt; the
sidecar hands it streams of its own instead, over asyncio pipes, so SIGTERM and stdin EOF both
end it at once. Like the SDK, it keeps stray output off the wire: the protocol gets private
duplicates of fds 0 and 1, then fd 0 is pointed at the null device and fd 1 at stderr, so a
stray ``print`` (ours or a library's) lands in the log rather than breaking the client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
from collections.abc import AsyncIterator
from typing import Any, Protocol, cast

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

__all__ = ["MAX_LINE", "Lines", "serving_stdio", "too_long"]

MAX_LINE = 16 * 1024 * 1024
log = logging.getLogger("hub.sidecar")


def too_long(max_bytes: int) -> SessionMessage:
    """The answer to a message longer than the sidecar reads: ``-32600`` with the bound in
    ``data``, as the hub answers a body over its own (its id cannot be read: null)."""
    message = f"the message is larger than this sidecar accepts ({max_bytes} bytes)"
    error = types.ErrorData(code=-32600, message=message, data={"max_bytes": max_bytes})
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=None, error=error))


class _Send(Protocol):
    async def send(self, item: SessionMessage, /) -> None: ...


class Lines:
    """stdin's lines, each at most ``MAX_LINE`` bytes: a longer one is skipped to its newline
    and answered (:func:`too_long`, on ``answer`` once the SDK's write stream is there), and
    the lines after it are read on."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader
        self.answer: _Send | None = None

    def __aiter__(self) -> Lines:
        return self

    async def __anext__(self) -> str:
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as end:  # EOF: the last line, if unterminated
                line = end.partial
            except asyncio.LimitOverrunError as over:
                if not await self._skip(over.consumed):
                    raise StopAsyncIteration from None
                continue
            except ConnectionError:  # a broken pipe: the end
                raise StopAsyncIteration from None
            if not line:
                raise StopAsyncIteration
            return line.decode("utf-8", errors="replace")

    async def _skip(self, consumed: int) -> bool:
        """Drop a line over ``MAX_LINE`` (``consumed`` bytes of it are buffered) through its
        newline, and answer it; False when stdin ended first."""
        log.error(
            "sidecar: a message on stdin is longer than %d bytes; refused (-32600), reading on",
            MAX_LINE,
        )
        try:
            while True:
                await self._reader.readexactly(consumed)
                try:
                    await self._reader.readuntil(b"\n")
                    break
                except asyncio.LimitOverrunError as over:
                    consumed = over.consumed
        except (asyncio.IncompleteReadError, ConnectionError):
            return False
        if self.answer is not None:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self.answer.send(too_long(MAX_LINE))
        return True


class _Out:
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


def _pollable(fd: int) -> bool:
    """Whether the event loop can watch ``fd`` (a pipe, a socket or a terminal; not a file or
    the null device, which read to EOF at once anyway)."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


class _Threaded:
    """A file the event loop cannot watch, read by the SDK's usual worker thread."""

    def __init__(self, fd: int, mode: str) -> None:
        self.file = anyio.wrap_file(os.fdopen(fd, mode, encoding="utf-8", errors="replace"))


@contextlib.asynccontextmanager
async def serving_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's ``(read_stream, write_stream)`` over this process's stdin and stdout."""
    loop = asyncio.get_running_loop()
    proto_in, proto_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    closers: list[Any] = []
    try:
        stdin: Any
        stdout: Any
        if _pollable(proto_in):
            reader = asyncio.StreamReader(limit=MAX_LINE)
            transport_in, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(proto_in, "rb", 0)
            )
            closers.append(transport_in)
            stdin = Lines(reader)
        else:
            stdin = _Threaded(proto_in, "r").file
        if _pollable(proto_out):
            transport_out, protocol_out = await loop.connect_write_pipe(
                asyncio.streams.FlowControlMixin, os.fdopen(proto_out, "wb", 0)
            )
            closers.append(transport_out)
            stdout = _Out(asyncio.StreamWriter(transport_out, protocol_out, None, loop))
        else:
            stdout = _Threaded(proto_out, "w").file
        async with stdio_server(
            stdin=cast("anyio.AsyncFile[str]", stdin), stdout=cast("anyio.AsyncFile[str]", stdout)
        ) as streams:
            if isinstance(stdin, Lines):
                stdin.answer = streams[1]
            yield streams
    finally:
        for closer in closers:
            with contextlib.suppress(Exception):
                closer.close()

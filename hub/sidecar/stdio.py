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
import os
import stat
from collections.abc import AsyncIterator
from typing import Any, cast

import anyio
from mcp.server.stdio import stdio_server

__all__ = ["serving_stdio"]

MAX_LINE = 16 * 1024 * 1024


class _Lines:
    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        try:
            line = await self._reader.readline()
        except (ValueError, ConnectionError):  # a line past MAX_LINE, a broken pipe: the end
            raise StopAsyncIteration from None
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


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
            stdin = _Lines(reader)
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
            yield streams
    finally:
        for closer in closers:
            with contextlib.suppress(Exception):
                closer.close()

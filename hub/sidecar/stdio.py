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


@contextlib.asynccontextmanager
async def serving_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's ``(read_stream, write_stream)`` over this process's stdin and stdout."""
    loop = asyncio.get_running_loop()
    proto_in, proto_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    reader = asyncio.StreamReader(limit=MAX_LINE)
    in_pipe = os.fdopen(proto_in, "rb", buffering=0)
    out_pipe = os.fdopen(proto_out, "wb", buffering=0)
    transport_in, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), in_pipe
    )
    transport_out, protocol_out = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, out_pipe
    )
    writer = asyncio.StreamWriter(transport_out, protocol_out, None, loop)
    try:
        stdin = cast("anyio.AsyncFile[str]", _Lines(reader))
        stdout = cast("anyio.AsyncFile[str]", _Out(writer))
        async with stdio_server(stdin=stdin, stdout=stdout) as streams:
            yield streams
    finally:
        transport_in.close()
        with contextlib.suppress(Exception):
            transport_out.close()

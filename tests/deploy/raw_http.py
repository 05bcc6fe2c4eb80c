"""Raw HTTP/1.1 against the hub's protocol (:mod:`hub.core.http_protocol`) under uvicorn, on a
loopback port: the pieces the head and body tests share."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import uvicorn

from hub.cli.serve import UVICORN_OPTIONS
from tests.deploy.serving import ReadyServer

__all__ = ["echo_length", "request", "response", "serving"]


async def echo_length(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers 200 with the length of the request's body."""
    if scope["type"] != "http":
        return
    size, more = 0, True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    body = str(size).encode()
    headers = [(b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@contextlib.asynccontextmanager
async def serving(app: Any = echo_length, **overrides: Any) -> AsyncIterator[int]:
    """``app`` served as ``hub serve`` serves (its uvicorn options, on the test's own loop)."""
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listening.bind(("127.0.0.1", 0))
    options = {k: v for k, v in UVICORN_OPTIONS.items() if k != "loop"}
    config = {**options, "timeout_graceful_shutdown": 2, **overrides}  # a failed test ends
    server = ReadyServer(uvicorn.Config(app, lifespan="off", **config))
    serving_task = asyncio.create_task(server.serve(sockets=[listening]))
    await asyncio.wait_for(server.ready.wait(), 10)
    yield int(listening.getsockname()[1])
    server.should_exit = True
    await serving_task


async def response(reader: asyncio.StreamReader) -> tuple[int, bytes, bytes]:
    """The status, head and body of the next response."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    status = int(head.split(b" ", 2)[1])
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    return status, head, await asyncio.wait_for(reader.readexactly(length), 10)


def request(headers: bytes = b"", body: bytes = b"", *, length: int | None = None) -> bytes:
    """A POST with ``body``, declaring ``length`` (the body's own by default)."""
    declared = len(body) if length is None else length
    return (
        b"POST / HTTP/1.1\r\nhost: 127.0.0.1\r\n"
        + headers
        + b"content-length: %d\r\n\r\n" % declared
        + body
    )

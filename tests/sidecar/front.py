"""A loopback front for the hub, in the test's event loop: it forwards to the real hub and
records every request path the sidecar makes, or plays a hostile hub for chosen paths —
``slow`` (never answers), ``oversized`` (streams more than any cap), ``wrong_type`` (a 200 of
HTML), ``drip`` (a byte a second, forever), ``not_modified`` (a 304 whatever was asked),
``deep`` (JSON nested 100,000 levels), ``not_finite`` (JSON holding ``NaN``)."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import anyio
import httpx2
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

__all__ = ["Front", "front_for"]


@dataclass
class Front:
    target: str
    url: str = ""
    paths: list[str] = field(default_factory=list)
    hostile: dict[str, str] = field(default_factory=dict)  # path suffix -> behaviour

    def behaviour(self, path: str) -> str | None:
        return next((b for suffix, b in self.hostile.items() if path.endswith(suffix)), None)


async def _chunks(size: int) -> AsyncIterator[bytes]:
    block = b"x" * 65536
    sent = 0
    while sent < size:
        yield block
        sent += len(block)


async def _drip() -> AsyncIterator[bytes]:
    while True:
        yield b" "
        await anyio.sleep(1)


_NOT_FINITE = (
    b'{"jsonrpc": "2.0", "id": 1, "data": {"v": NaN}, "result": {"content": '
    b'[{"type": "text", "text": "x"}], "structuredContent": {"v": NaN}}}'
)


def _app(front: Front, http: httpx2.AsyncClient) -> Starlette:
    async def forward(request: Request) -> Response:
        path = request.url.path
        front.paths.append(f"{request.method} {path}")
        behaviour = front.behaviour(path)
        if behaviour == "slow":
            await anyio.sleep(3600)
        if behaviour == "oversized":
            return StreamingResponse(_chunks(64 * 1024 * 1024), media_type="application/json")
        if behaviour == "wrong_type":
            return Response("<html>hello</html>", media_type="text/html")
        if behaviour == "drip":
            return StreamingResponse(_drip(), media_type="application/json")
        if behaviour == "not_modified":
            return Response(status_code=304)
        if behaviour == "deep":  # JSON nested past any interpreter's recursion limit
            return Response(b"[" * 100_000 + b"]" * 100_000, media_type="application/json")
        if behaviour == "not_finite":  # a JSON-RPC answer and a REST one, each holding NaN
            return Response(_NOT_FINITE, media_type="application/json")
        headers = {k: v for k, v in request.headers.items() if k.lower() != "host"}
        upstream = await http.request(
            request.method, path, headers=headers, content=await request.body()
        )
        kept = {
            k: v
            for k, v in upstream.headers.items()
            if k.lower() not in ("content-length", "transfer-encoding", "content-encoding")
        }
        return Response(upstream.content, upstream.status_code, kept)

    return Starlette(routes=[Route("/{path:path}", forward, methods=["GET", "POST", "DELETE"])])


class _NoSignals(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self):  # type: ignore[no-untyped-def]
        yield


@contextlib.asynccontextmanager
async def front_for(target: str) -> AsyncIterator[Front]:
    front = Front(target)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    front.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    async with httpx2.AsyncClient(base_url=target, timeout=60) as http:
        config = uvicorn.Config(
            _app(front, http), log_level="warning", access_log=False, lifespan="off"
        )
        server = _NoSignals(config)
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve, [sock])
            while not server.started:  # noqa: ASYNC110 - uvicorn offers no event for it
                await anyio.sleep(0.05)
            try:
                yield front
            finally:
                server.should_exit = True
                server.force_exit = True

"""A test-only loopback proxy that adds the agent's key to every request (DESIGN §15).

The conformance suite's server runner sends no credentials, and the agents' MCP endpoint wants
the deployment's agent key on every HTTP request. :class:`KeyAddingProxy` is an ASGI app that
forwards each request on ``/mcp`` — any method, body and headers as sent (``Origin`` included,
so the hub's DNS-rebinding check sees what the suite sent) — to the one endpoint URL it fronts,
with ``Authorization: Bearer <key>`` put in place of any credential header, and streams the
answer back (status, headers and body bytes, undecoded). Other paths are 404. Hop-by-hop headers
and ``Host`` are not forwarded (the HTTP client sets the hub's ``Host``).

:func:`serve_proxy` runs it with uvicorn on an already bound loopback socket, so the caller knows
the proxy's origin before the hub starts (``HUB_ALLOWED_ORIGINS`` must name it).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import uvicorn

__all__ = ["KeyAddingProxy", "bind_loopback", "serve_proxy"]

_NOT_FORWARDED = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
_CREDENTIALS = frozenset({"authorization", "x-api-key", "cookie"})

Scope = dict[str, Any]
Message = dict[str, Any]


class KeyAddingProxy:
    """ASGI: ``/mcp`` → ``target`` with the agent's bearer key; everything else 404."""

    def __init__(self, target: str, key: str, *, timeout_s: float = 120.0) -> None:
        self.target = target
        self._key = key
        self._client = httpx2.AsyncClient(timeout=timeout_s, trust_env=False)
        self.requests = 0

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope["path"] != "/mcp":
            await _plain(send, 404, b"not found")
            return
        self.requests += 1
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        headers = [
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in scope["headers"]
            if name.decode("latin-1").lower() not in _NOT_FORWARDED | _CREDENTIALS
        ]
        headers.append(("authorization", f"Bearer {self._key}"))
        url = self.target
        if scope.get("query_string"):
            url = f"{url}?{scope['query_string'].decode('latin-1')}"
        request = self._client.build_request(
            scope["method"], url, headers=headers, content=bytes(body)
        )
        try:
            response = await self._client.send(request, stream=True)
        except httpx2.HTTPError as exc:
            await _plain(send, 502, f"proxy: {type(exc).__name__}".encode())
            return
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [
                        (name.encode("latin-1"), value.encode("latin-1"))
                        for name, value in response.headers.multi_items()
                        if name.lower() not in _NOT_FORWARDED - {"content-length"}
                    ],
                }
            )
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await response.aclose()

    async def _lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _plain(send: Any, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def bind_loopback() -> socket.socket:
    """A TCP socket bound to an ephemeral port on 127.0.0.1 (not yet listening)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


class _QuietServer(uvicorn.Server):
    """uvicorn without its signal handlers (it runs inside the test's event loop)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Any:
        yield


@contextlib.asynccontextmanager
async def serve_proxy(proxy: KeyAddingProxy, sock: socket.socket) -> AsyncIterator[str]:
    """Serve ``proxy`` on ``sock`` for the ``with`` block; yields its ``/mcp`` URL."""
    config = uvicorn.Config(proxy, log_level="warning", access_log=False, ws="none", lifespan="on")
    server = _QuietServer(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("the proxy stopped before it started")
            await asyncio.sleep(0.02)
        host, port = sock.getsockname()[:2]
        yield f"http://{host}:{port}/mcp"
    finally:
        server.should_exit = True
        await task

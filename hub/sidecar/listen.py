"""``--listen``: the agent-facing server on loopback Streamable HTTP at ``/mcp`` (DESIGN §15).

Only a loopback address is bound (checked before this runs). Three gates stand before the SDK:
a bearer token generated at start and written to ``--token-file`` (mode 0600; compared in
constant time, 401 otherwise), then the SDK's DNS-rebinding protection with the bound address
as the only allowed ``Host`` and its ``http://`` origin as the only allowed ``Origin`` (so a web
page in a browser on the same machine cannot reach it). Stateful sessions, so handshake-era
clients get ``tools/list_changed`` on their GET stream; 2026-07-28 clients use
``subscriptions/listen``. uvicorn's own signal handling is turned off: the sidecar's runner
stops the server on SIGTERM.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import os
import secrets
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from hub.core.http_protocol import HubHttpToolsProtocol
from hub.sidecar.errors import SidecarError
from hub.sidecar.server import SidecarServer

__all__ = ["LoopbackServer", "bind", "write_token"]

log = logging.getLogger("hub.sidecar")


def write_token(path: Path) -> str:
    """A fresh bearer token, written alone to ``path`` with mode 0600 (replacing any file)."""
    token = secrets.token_urlsafe(32)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(token + "\n")
    except OSError as exc:
        raise SidecarError(f"--token-file {path}: cannot write it ({type(exc).__name__})") from None
    return token


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise SidecarError(f"--listen {host}:{port}: cannot bind ({exc.strerror})") from None
    return sock


_UNAUTHENTICATED = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": 40100,
            "message": "a valid bearer token is required",
            "data": {"class": "unauthenticated"},
        },
    }
).encode()


class _Bearer:
    """401 unless ``Authorization: Bearer <token>``, sent once, carries the token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            # exactly one: of two, which one a proxy checked is anyone's guess (the hub's rule)
            sent = [v for k, v in scope.get("headers") or [] if k == b"authorization"]
            if len(sent) != 1 or not hmac.compare_digest(sent[0], self._expected):
                body = _UNAUTHENTICATED
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b"Bearer"),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self._app(scope, receive, send)


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class _Quiet(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # the sidecar's runner owns SIGTERM


class LoopbackServer:
    def __init__(self, sidecar: SidecarServer, sock: socket.socket, token: str) -> None:
        host, port = sock.getsockname()[:2]
        authority = _authority(host, port)
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[authority],
            allowed_origins=[f"http://{authority}"],
        )
        app: Any = sidecar.server.streamable_http_app(
            streamable_http_path="/mcp", transport_security=security, host=host
        )
        config = uvicorn.Config(
            _Bearer(app, token),
            http=HubHttpToolsProtocol,  # bounded requests: the token is read after the headers
            log_level="warning",
            access_log=False,
            ws="none",
            lifespan="on",
            timeout_graceful_shutdown=2,
            log_config=None,
        )
        self._uvicorn = _Quiet(config)
        self._sock = sock
        self.url = f"http://{authority}/mcp"

    async def serve(self) -> None:
        await self._uvicorn.serve(sockets=[self._sock])

    def stop(self) -> None:
        self._uvicorn.should_exit = True

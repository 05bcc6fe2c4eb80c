"""How ``hub serve`` runs uvicorn: httptools and uvloop, and Nagle's algorithm off on every
connection, even one accepted on a listening socket made without ``IPPROTO_TCP``; and how its
app's process collects garbage."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import uvicorn
import uvloop

from bench._serving import hub_env
from hub.cli.serve import UVICORN_OPTIONS
from hub.core.http_protocol import HubHttpToolsProtocol
from tests.deploy.serving import ReadyServer


def test_the_hub_is_served_by_httptools_on_uvloop() -> None:
    config = uvicorn.Config("hub.cli.serve:served_app", factory=True, **UVICORN_OPTIONS)
    assert config.http is HubHttpToolsProtocol
    loop_factory = config.get_loop_factory()
    assert loop_factory is not None
    loop = loop_factory()
    try:
        assert isinstance(loop, uvloop.Loop)
    finally:
        loop.close()


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def test_a_served_connection_has_nagle_off() -> None:
    # proto 0, as a socket bound without naming TCP: the loop would leave Nagle on
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 0)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listening.bind(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    options = {k: v for k, v in UVICORN_OPTIONS.items() if k != "loop"}  # the test's own loop
    server = ReadyServer(uvicorn.Config(_app, lifespan="off", **options))
    serving = asyncio.create_task(server.serve(sockets=[listening]))
    try:
        await asyncio.wait_for(server.ready.wait(), 10)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        connections = list(server.server_state.connections)
        assert len(connections) == 1
        assert isinstance(connections[0], HubHttpToolsProtocol)
        transport: Any = connections[0].transport
        sock = transport.get_extra_info("socket")
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        writer.close()
        await writer.wait_closed()
    finally:
        server.should_exit = True
        await serving


def test_the_served_app_collects_its_youngest_objects_less_often(tmp_path: Path) -> None:
    """``served_app`` freezes what startup made and raises the youngest generation's threshold
    (hub.cli.serve.GC_YOUNG_THRESHOLD); run in a process of its own, as ``hub serve`` does."""
    env = hub_env(f"sqlite+aiosqlite:///{tmp_path / 'hub.db'}", tmp_path)
    probe = (
        "import gc; from hub.cli.serve import served_app, GC_YOUNG_THRESHOLD;"
        "assert gc.get_threshold()[0] != GC_YOUNG_THRESHOLD; served_app();"
        "print(gc.get_threshold()[0] == GC_YOUNG_THRESHOLD, gc.get_freeze_count() > 10000)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "True"]

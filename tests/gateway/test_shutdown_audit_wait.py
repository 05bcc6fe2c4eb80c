"""A response whose audit rows still wait on the database when the shutdown grace ends stops
quietly (stop 53).

A resilience walk sent SIGTERM while the audit table was locked: every request whose answer had
been sent, but whose background still waited for its audit rows, was cancelled at the end of
the grace and logged uvicorn's "Exception in ASGI application" with a traceback. The rows are
the writer's drain's to write or count as lost; the request's background now ends quietly.
A real ``hub serve`` on SQLite, its database's write lock held by the test until the grace is
over. (Held for good, the process does not exit: asyncio's runner waits for the writer's
cancelled statement, which SQLite's busy timeout holds, and then for its rollback; left alone.)
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
from pathlib import Path

import httpx2
import pytest

from hub.core.db import Database
from tests.conftest import TEST_PEPPER
from tests.deploy.serving import _wait_until_serving, free_port, hub_command, hub_env
from tests.gateway.support import Upstream, deploy, rpc
from tests.gateway.test_shutdown_answer import _serve
from tests.peers.fixtures import HandmadePeerStarter

GRACE_S = 2
TOOLS = [{"name": "echo", "inputSchema": {"type": "object"}}]


@pytest.mark.slow
async def test_a_response_waiting_on_its_audit_rows_at_the_end_of_the_grace_stops_quietly(
    tmp_path: Path, handmade_peer: HandmadePeerStarter
) -> None:
    peer = await handmade_peer(era="modern", tools=TOOLS)
    port = free_port()
    settings = {
        "HUB_ALLOW_LOOPBACK": "true",
        "HUB_SHUTDOWN_GRACE_S": str(GRACE_S),
        "HUB_API_KEY_PEPPER": TEST_PEPPER,
    }
    env = hub_env(tmp_path, port, **settings)
    await asyncio.to_thread(hub_command, tmp_path, port, "db", "upgrade", **settings)
    proc = await asyncio.to_thread(_serve, tmp_path, env)
    base = f"http://127.0.0.1:{port}"
    database = Database.from_url(env["HUB_DATABASE_URL"])
    locker = sqlite3.connect(tmp_path / "hub.db", isolation_level=None, timeout=30)
    try:
        await asyncio.to_thread(_wait_until_serving, proc, base)
        async with httpx2.AsyncClient(base_url=base, timeout=30) as http:
            deployed = await deploy(http, database, [Upstream("up", peer.url)])
            params = {"name": "up__echo", "arguments": {}}
            first = await rpc(http, deployed, "tools/call", params, tool=TOOLS[0])
            assert first.status_code == 200, first.text  # the key's last use is written
            await asyncio.sleep(0.5)  # and so is the first call's audit row
            locker.execute("BEGIN IMMEDIATE")  # from here on no write gets through
            answered = await rpc(http, deployed, "tools/call", params, tool=TOOLS[0])
            assert answered.status_code == 200, answered.text
            proc.send_signal(signal.SIGTERM)
            # past the grace (the background cancelled), then the writer may go on
            await asyncio.sleep(GRACE_S + 1)
            locker.close()
            returncode = await asyncio.to_thread(proc.wait, 30)
    finally:
        locker.close()
        await database.dispose()
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    log = (tmp_path / "serve.log").read_text(errors="replace")
    assert returncode == 0, log[-3000:]
    assert "Exception in ASGI application" not in log, log[-3000:]
    assert "Traceback" not in log, log[-3000:]

"""SIGTERM drains ``hub serve`` (DESIGN §11): a request in flight on a slow upstream completes,
new connections are refused, and the process exits 0 within ``HUB_SHUTDOWN_GRACE_S``.

The request is a catalog snapshot of a handmade peer whose ``tools/list`` answer drips for about
three seconds; SIGTERM arrives while the hub is reading it. An ``ask`` call waiting for a person
is not held through the grace period: it answers ``approval_pending`` at the signal.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx2
import pytest

from hub.core.db import Database
from tests.conftest import TEST_PEPPER
from tests.deploy.serving import _wait_until_serving, free_port, hub_env
from tests.gateway.support import Upstream, deploy, rpc
from tests.peers.fixtures import HandmadePeerStarter, handmade_peer
from tests.peers.handmade_eras import Answer
from tests.peers.handmade_wire import RecordedRequest, Reply

__all__ = ["handmade_peer"]

GRACE_S = 10
DRIP_S = 3.0


def _hub(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


async def _until(predicate: Callable[[], bool], seconds: float) -> None:
    async with asyncio.timeout(seconds):
        while not predicate():  # noqa: ASYNC110 (what it waits for happens in the peer's requests)
            await asyncio.sleep(0.02)


def _serve(tmp_path: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``hub serve``, its log to a file: a pipe nobody reads until the end fills after a few
    hundred request lines, and the hub then blocks on its next one."""
    with (tmp_path / "serve.log").open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "hub.cli", "serve"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )


def _log(tmp_path: Path) -> str:
    return (tmp_path / "serve.log").read_text(errors="replace")[-2000:]


@pytest.mark.slow
async def test_sigterm_during_a_slow_upstream_call_drains_it_and_exits_0(
    tmp_path: Path, handmade_peer: HandmadePeerStarter
) -> None:
    peer = await handmade_peer(era="modern")

    def drip(rec: RecordedRequest) -> Reply:
        answer = peer.logic.answer(rec)
        assert isinstance(answer, Answer)
        body = json.dumps(answer.message).encode()
        pieces = [body[i * len(body) // 6 : (i + 1) * len(body) // 6] for i in range(6)]
        return Reply(
            chunks=pieces, chunk_delay=DRIP_S / 6, headers={"content-type": "application/json"}
        )

    peer.override("tools/list", drip)
    port = free_port()
    env = hub_env(tmp_path, port, HUB_ALLOW_LOOPBACK="true", HUB_SHUTDOWN_GRACE_S=str(GRACE_S))
    _hub(tmp_path, env, "db", "upgrade")
    key = _hub(tmp_path, env, "bootstrap").stdout.strip().splitlines()[-1]
    proc = await asyncio.to_thread(_serve, tmp_path, env)
    base = f"http://127.0.0.1:{port}"
    try:
        await asyncio.to_thread(_wait_until_serving, proc, base)
        headers = {"authorization": f"Bearer {key}"}
        async with httpx2.AsyncClient(base_url=base, headers=headers, timeout=30) as http:
            tenant = (await http.post("/tenants", json={"slug": "acme", "name": "A"})).json()
            t = tenant["data"]["id"]
            made = await http.post(
                f"/tenants/{t}/servers", json={"handle": "slow", "url": peer.url}
            )
            assert made.status_code == 201, made.text
            snapshot = asyncio.create_task(http.post(f"/tenants/{t}/servers/slow/catalogs"))
            await _until(lambda: peer.count("tools/list") >= 1, 20)
            proc.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            await asyncio.sleep(0.5)
            with pytest.raises(httpx2.TransportError):  # no new connection is accepted
                async with httpx2.AsyncClient(timeout=2) as fresh:
                    await fresh.get(f"{base}/healthz")
            response = await snapshot
        returncode = await asyncio.to_thread(proc.wait, GRACE_S + 5)
        elapsed = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    assert response.status_code == 201, response.text  # the request in flight completed
    assert response.json()["data"]["version"] == 1
    assert returncode == 0, _log(tmp_path)
    assert elapsed < GRACE_S + 1.5


@pytest.mark.slow
async def test_sigterm_answers_a_call_waiting_for_approval_at_once(
    tmp_path: Path, handmade_peer: HandmadePeerStarter
) -> None:
    """The call would wait 60 s for a person, past the 10 s grace: at SIGTERM it answers
    ``approval_pending`` (its approval stays, for the agent to repeat the call elsewhere) and
    the hub exits 0 at once rather than at the end of its grace."""
    peer = await handmade_peer(
        era="modern", tools=[{"name": "echo", "inputSchema": {"type": "object"}}]
    )
    port = free_port()
    env = hub_env(
        tmp_path,
        port,
        HUB_ALLOW_LOOPBACK="true",
        HUB_SHUTDOWN_GRACE_S=str(GRACE_S),
        HUB_APPROVAL_WAIT_S="60",
        HUB_API_KEY_PEPPER=TEST_PEPPER,  # the tenant admin is written by this test's factories
    )
    _hub(tmp_path, env, "db", "upgrade")
    proc = await asyncio.to_thread(_serve, tmp_path, env)
    base = f"http://127.0.0.1:{port}"
    database = Database.from_url(env["HUB_DATABASE_URL"])
    try:
        await asyncio.to_thread(_wait_until_serving, proc, base)
        async with httpx2.AsyncClient(base_url=base, timeout=30) as http:
            asking = Upstream("up", peer.url, allow_without_ask=[])  # every tool behind ask
            deployed = await deploy(http, database, [asking])
            waiting = asyncio.create_task(
                rpc(http, deployed, "tools/call", {"name": "up__echo", "arguments": {}})
            )
            pending: list[object] = []
            while not pending:  # the call has filed its approval and waits for a person
                await asyncio.sleep(0.05)
                listed = await http.get(
                    deployed.setup.url("approvals"),
                    params={"status": "pending"},
                    headers=deployed.setup.admin.headers,
                )
                pending = listed.json()["data"]
            await asyncio.sleep(0.3)
            proc.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            response = await waiting
            answered = time.monotonic() - signalled
        returncode = await asyncio.to_thread(proc.wait, GRACE_S + 5)
        exited = time.monotonic() - signalled
    finally:
        await database.dispose()
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    result = response.json()["result"]
    assert result["_meta"]["io.mcphub/error"]["class"] == "approval_pending", result
    assert result["_meta"]["io.mcphub/approval"]["id"] == pending[0]["id"]  # type: ignore[index]
    assert peer.count("tools/call") == 0
    assert answered < 1.5
    assert returncode == 0, _log(tmp_path)
    assert exited < GRACE_S - 2

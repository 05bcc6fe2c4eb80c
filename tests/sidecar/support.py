"""A live ``hub serve`` that can be stopped and started again on its port, a deployment on it,
and ``hub sidecar`` spawned the way an agent spawns it (the SDK's stdio client) or as a
loopback HTTP server.

The hub runs on an SQLite file in the test's directory with the tests' keyring and pepper, so
the tests' factories (:func:`tests.gateway.support.deploy`) write to the same database the hub
reads. Nothing leaves loopback.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from hub.core.db import Database
from tests.conftest import TEST_KEY, TEST_PEPPER
from tests.deploy.serving import free_port
from tests.gateway.support import Deployed, Upstream, deploy
from tests.support.hubcommand import hub_argv
from tests.support.migrated import migrated_sqlite

__all__ = ["LiveHub", "Sidecar", "live_hub", "rpc_message_of", "sidecar_argv", "stdio_sidecar"]

ROOT = Path(__file__).resolve().parents[2]
CANARY = "canary-secret-0f9e8d7c6b5a49382716"


def _env(tmp_path: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HUB_")}
    env.update(
        HUB_HOST="127.0.0.1",
        HUB_PORT=str(port),
        HUB_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'hub.db'}",
        HUB_DATA_DIR=str(tmp_path / ".hub"),
        HUB_ENCRYPTION_KEYS=f"t1:{TEST_KEY}",
        HUB_ACTIVE_KEY_ID="t1",
        HUB_API_KEY_PEPPER=TEST_PEPPER,
        HUB_ALLOW_LOOPBACK="true",
        HUB_APPROVAL_WAIT_S="0",
        HUB_TOOL_CALL_TIMEOUT_S="5",
        PYTHONPATH=str(ROOT),
    )
    return env


@dataclass
class LiveHub:
    tmp_path: Path
    port: int
    process: subprocess.Popen[bytes] | None = None
    logs: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def db_url(self) -> str:
        return f"sqlite+aiosqlite:///{self.tmp_path / 'hub.db'}"

    def start(self) -> None:
        with (self.tmp_path / f"hub-{len(self.logs)}.log").open("wb") as log:
            self.process = subprocess.Popen(
                hub_argv("serve"),
                cwd=self.tmp_path,
                env=_env(self.tmp_path, self.port),
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"hub serve exited with {self.process.returncode}")
            try:
                httpx2.get(f"{self.url}/healthz", timeout=1)
                return
            except httpx2.TransportError:
                time.sleep(0.1)
        raise AssertionError("hub serve did not answer /healthz in time")

    def stop(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(timeout=30)
        self.logs.append(str(self.process.returncode))
        self.process = None


@contextlib.contextmanager
def live_hub(tmp_path: Path) -> Iterator[LiveHub]:
    hub = LiveHub(tmp_path, free_port())
    migrated_sqlite(tmp_path / "hub.db")
    hub.start()
    try:
        yield hub
    finally:
        hub.stop()


async def deploy_on(hub: LiveHub, upstreams: list[Upstream]) -> Deployed:
    db = Database.from_url(hub.db_url)
    try:
        async with httpx2.AsyncClient(base_url=hub.url, timeout=30) as http:
            return await deploy(http, db, upstreams)
    finally:
        await db.dispose()


@dataclass
class Sidecar:
    """How to start ``hub sidecar`` for a deployment (and where its files go)."""

    hub: LiveHub
    deployed: Deployed
    workdir: Path
    extra: tuple[str, ...] = ()
    hub_url: str | None = None  # another way to the hub (a recording or hostile front)
    tenant: str | None = None  # how --tenant names it (default: the tenant's id)
    deployment: str | None = None  # how --deployment names it (default: its id)

    @property
    def cache_dir(self) -> Path:
        return self.workdir / "cache"

    @property
    def stderr_path(self) -> Path:
        return self.workdir / "sidecar.stderr"

    def argv(self, *transport: str) -> list[str]:
        return hub_argv(
            "sidecar",
            "--hub",
            self.hub_url or self.hub.url,
            "--tenant",
            self.tenant or str(self.deployed.setup.tenant_id),
            "--deployment",
            self.deployment or self.deployed.deployment_id,
            "--cache-dir",
            str(self.cache_dir),
            *transport,
            *self.extra,
        )

    sidecar_key: str | None = None  # HUB_SIDECAR_KEY, for --mode direct

    def env(self, key: str | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HUB_")}
        env.update(HUB_AGENT_KEY=key or self.deployed.agent.key, PYTHONPATH=str(ROOT))
        if self.sidecar_key is not None:
            env["HUB_SIDECAR_KEY"] = self.sidecar_key
        return env


def sidecar_argv(sidecar: Sidecar, *transport: str) -> list[str]:
    return sidecar.argv(*transport)


@contextlib.asynccontextmanager
async def stdio_sidecar(
    sidecar: Sidecar, *, mode: str = "auto", **client: Any
) -> AsyncIterator[Client]:
    """The SDK's stdio client spawning ``hub sidecar --stdio`` (stderr to ``stderr_path``)."""
    command, *args = sidecar.argv("--stdio")
    params = StdioServerParameters(
        command=command,
        args=args,
        env=sidecar.env(),
        cwd=str(ROOT),
    )
    with sidecar.stderr_path.open("a") as errlog:
        connect_mode: Any = mode
        transport = stdio_client(params, errlog=errlog)
        async with Client(transport, mode=connect_mode, cache=None, **client) as mcp:
            yield mcp


@dataclass
class Running:
    process: subprocess.Popen[bytes]
    url: str
    token: str
    stdout: bytes = b""  # filled in once it has stopped


def _spawn_listening(
    sidecar: Sidecar, port: int, extra: tuple[str, ...]
) -> subprocess.Popen[bytes]:
    token_file = sidecar.workdir / "token"
    with contextlib.suppress(FileNotFoundError):
        token_file.unlink()
    argv = sidecar_argv(
        sidecar, "--listen", f"127.0.0.1:{port}", "--token-file", str(token_file), *extra
    )
    with sidecar.stderr_path.open("ab") as errlog:
        return subprocess.Popen(
            argv,
            env=sidecar.env(),
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errlog,
        )


def _listens(sidecar: Sidecar, process: subprocess.Popen[bytes], port: int) -> Running | None:
    """The running sidecar once it serves (its token written, its port answering), else None."""
    assert process.poll() is None, sidecar.stderr_path.read_text()[-2000:]
    token_file = sidecar.workdir / "token"
    if not token_file.exists():
        return None
    try:
        httpx2.get(f"http://127.0.0.1:{port}/", timeout=1)
    except httpx2.TransportError:
        return None
    return Running(process, f"http://127.0.0.1:{port}/mcp", token_file.read_text().strip())


def _stop_listening(process: subprocess.Popen[bytes], running: Running | None) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        out, _ = process.communicate(timeout=20)
        if running is not None:
            running.stdout = out
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def _attempts(
    sidecar: Sidecar, process: subprocess.Popen[bytes], port: int
) -> Iterator[Running | None]:
    """One look a step until the sidecar listens (the caller sleeps between looks in its own
    way); AssertionError after 30 s."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        running = _listens(sidecar, process, port)
        yield running
        if running is not None:
            return
    raise AssertionError("the sidecar did not listen in time")


@contextlib.contextmanager
def listening_sidecar(sidecar: Sidecar, port: int, *extra: str) -> Iterator[Running]:
    """``hub sidecar --listen 127.0.0.1:PORT`` until it serves; SIGTERM at the end."""
    process = _spawn_listening(sidecar, port, extra)
    running = None
    try:
        for running in _attempts(sidecar, process, port):
            if running is None:
                time.sleep(0.1)
        assert running is not None
        yield running
    finally:
        _stop_listening(process, running)


@contextlib.asynccontextmanager
async def listening_sidecar_async(
    sidecar: Sidecar, port: int, *extra: str
) -> AsyncIterator[Running]:
    """:func:`listening_sidecar` waiting without blocking the event loop, for a test whose loop
    serves a peer or front the sidecar needs before it listens."""
    process = _spawn_listening(sidecar, port, extra)
    running = None
    try:
        for running in _attempts(sidecar, process, port):
            if running is None:
                await anyio.sleep(0.1)
        assert running is not None
        yield running
    finally:
        _stop_listening(process, running)


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def run_sidecar(
    workdir: Path,
    *args: str,
    key: str | None,
    hub: str = "http://127.0.0.1:9",
    tenant: str = "00000000-0000-4000-8000-000000000001",
    deployment: str = "00000000-0000-4000-8000-000000000002",
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """``hub sidecar`` run to its end (for the ways it refuses to start)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HUB_")}
    env["PYTHONPATH"] = str(ROOT)
    if key is not None:
        env["HUB_AGENT_KEY"] = key
    argv = hub_argv("sidecar", "--hub", hub, "--tenant", tenant)
    argv += ["--deployment", deployment, "--cache-dir", str(workdir / "cache"), *args]
    return subprocess.run(
        argv,
        env=env,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def error_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    """stderr lines that are not JSON log lines."""
    return [line for line in done.stderr.splitlines() if not line.startswith("{")]


def rpc_message_of(answer: httpx2.Response) -> dict[str, Any]:
    """The one JSON-RPC message of an answer, plain JSON or one SSE event."""
    if answer.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:] for line in answer.text.splitlines() if line.startswith("data:")]
        assert len(data) == 1, answer.text
        message: dict[str, Any] = json.loads(data[0])
        return message
    message = answer.json()
    return message

"""A real ``hub serve`` subprocess on a random loopback port, for the deployment tests.

Development mode on an SQLite file in the test's own directory, with explicit (test) secrets so
nothing is generated; the caller adds the settings under test. The process's stderr (JSON log lines)
is returned once it has stopped.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import uvicorn

from tests.support.hubcommand import hub_argv

__all__ = ["ReadyServer", "RunningHub", "free_port", "hub_command", "running_hub"]

TEST_KEYRING = "k1:" + base64.b64encode(b"d" * 32).decode()  # a test key, never a real one
TEST_PEPPER = "deploy-test-pepper-0123456789abcdef0123456789"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class RunningHub:
    """A started hub: its base URL and port; ``log_lines`` (its JSON lines) and ``other_lines``
    (what else it wrote on stderr) are filled in when it has stopped."""

    port: int
    log_lines: list[dict[str, Any]] = field(default_factory=list)
    other_lines: list[str] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def hub_env(tmp_path: Path, port: int, **settings: str) -> dict[str, str]:
    """The environment of a test hub: no inherited ``HUB_`` variable, loopback, test secrets."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HUB_")}
    env.update(
        {
            "HUB_HOST": "127.0.0.1",
            "HUB_PORT": str(port),
            "HUB_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'hub.db'}",
            "HUB_DATA_DIR": str(tmp_path / ".hub"),
            "HUB_ENCRYPTION_KEYS": TEST_KEYRING,
            "HUB_API_KEY_PEPPER": TEST_PEPPER,
        }
    )
    env.update(settings)
    return env


def _wait_until_serving(proc: subprocess.Popen[bytes], url: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"hub serve exited with {proc.returncode} before serving")
        try:
            httpx2.get(f"{url}/healthz", timeout=1)
            return
        except httpx2.TransportError:
            time.sleep(0.1)
    raise AssertionError("hub serve did not answer /healthz in time")


@contextlib.contextmanager
def running_hub(tmp_path: Path, **settings: str) -> Iterator[RunningHub]:
    """Start ``hub serve`` with ``settings`` (``HUB_…`` names), yield it, stop it with SIGTERM."""
    hub = RunningHub(port=free_port())
    proc = subprocess.Popen(
        hub_argv("serve"),
        cwd=tmp_path,
        env=hub_env(tmp_path, hub.port, **settings),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        _wait_until_serving(proc, hub.base_url)
        yield hub
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        lines = err.decode().splitlines()
        hub.log_lines = [json.loads(line) for line in lines if line.startswith("{")]
        hub.other_lines = [line for line in lines if not line.startswith("{")]


def hub_command(tmp_path: Path, port: int, *args: str, **settings: str) -> str:
    """Run one ``hub`` command (``db upgrade``, ``bootstrap``…) in the hub's environment; its
    stdout (the test fails on a non-zero exit, with its stderr)."""
    done = subprocess.run(
        hub_argv(*args),
        capture_output=True,
        text=True,
        env=hub_env(tmp_path, port, **settings),
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


class ReadyServer(uvicorn.Server):
    """An in-process uvicorn server that sets ``ready`` once it accepts connections."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = asyncio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()

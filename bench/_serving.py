"""Serving processes for the benchmarks: a server subprocess on a free loopback port, and the
environment a benchmark's ``hub serve`` runs with (the test keyring and pepper, nothing else of
the caller's ``HUB_*``)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2

from bench._peer import REPO_ROOT
from tests.conftest import TEST_KEY, TEST_PEPPER

__all__ = ["cpu_seconds", "free_port", "hub_env", "pid_serving", "served", "stop", "wait_healthy"]

_SERVING: dict[int, int] = {}  # port -> pid of the process served on it


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def served(argv: list[str], env: dict[str, str], log: Path) -> Iterator[int]:
    """Run a server process on a free port until it answers ``/healthz``; yield the port."""
    port = free_port()
    with log.open("w") as out:
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and modules
            [*argv, "--port", str(port)], cwd=REPO_ROOT, env=env, stdout=out, stderr=out
        )
    try:
        wait_healthy(process, port, log, f"{argv}", startup_s=60, poll_s=0.1)
        _SERVING[port] = process.pid
        yield port
    finally:
        _SERVING.pop(port, None)
        stop(process, grace_s=20)


def stop(process: subprocess.Popen[bytes], *, grace_s: float) -> None:
    """SIGTERM ``process``; SIGKILL it if it has not exited within ``grace_s``."""
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def wait_healthy(
    process: subprocess.Popen[bytes],
    port: int,
    log: Path,
    what: str,
    *,
    startup_s: float,
    poll_s: float,
) -> None:
    """Return once ``process`` answers ``/healthz`` on ``port``; raise with its log's tail if it
    exits first or ``startup_s`` pass."""
    deadline = time.monotonic() + startup_s
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited: {log.read_text()[-2000:]}")
        try:
            if httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200:
                return
        except httpx2.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start: {log.read_text()[-2000:]}")
        time.sleep(poll_s)


def hub_env(db_url: str, workdir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HUB_")}
    env.update(
        HUB_DATABASE_URL=db_url,
        HUB_ENCRYPTION_KEYS=f"t1:{TEST_KEY}",
        HUB_ACTIVE_KEY_ID="t1",
        HUB_API_KEY_PEPPER=TEST_PEPPER,
        HUB_DATA_DIR=str(workdir / "data"),
        PYTHONPATH=str(REPO_ROOT),
    )
    return env


def pid_serving(port: int) -> int:
    """The pid of the server process :func:`served` runs on ``port``."""
    return _SERVING[port]


def _tree(pid: int) -> list[int]:
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return pids
    for child in children:
        pids += _tree(int(child))
    return pids


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) used so far by ``pid`` and its live descendants (Linux /proc;
    0.0 elsewhere): on a shared machine, a server's CPU per request varies far less than its
    rate, which other processes' load moves."""
    ticks = 0
    for each in _tree(pid):
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return ticks / os.sysconf("SC_CLK_TCK")

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

__all__ = ["free_port", "hub_env", "served"]


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
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{argv} exited: {log.read_text()[-2000:]}")
            try:
                if httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{argv} did not start: {log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


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

"""A live ``hub serve`` for the browser test: migrated SQLite in the test's directory, a
bootstrapped platform admin, the process's log in a file (a pipe nobody reads could fill up and
stall it), stopped with SIGTERM. Settings are ``HUB_…`` names, as in ``tests/deploy/serving``."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2

from tests.deploy.serving import free_port, hub_command, hub_env
from tests.support.hubcommand import hub_argv
from tests.support.migrated import migrated_sqlite

__all__ = ["ServedHub", "served_hub"]


@dataclass(frozen=True)
class ServedHub:
    url: str
    platform_key: str
    log: Path


@contextlib.contextmanager
def served_hub(tmp_path: Path, log: Path, **settings: str) -> Iterator[ServedHub]:
    port = free_port()
    migrated_sqlite(tmp_path / "hub.db")
    key = hub_command(tmp_path, port, "bootstrap", **settings).strip()
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            hub_argv("serve"),
            cwd=tmp_path,
            env=hub_env(tmp_path, port, HUB_PUBLIC_URL=url, **settings),
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, log.read_text()[-2000:]
            try:
                if httpx2.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            assert time.monotonic() < deadline, "hub serve did not start"
            time.sleep(0.1)
        yield ServedHub(url, key, log)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

"""``make run`` in an empty directory migrates, serves, and answers /healthz on a random port;
started again, it says a platform admin exists and how to mint a key. ``make help`` lists the
targets."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx2
import pytest

from tests.support.workers import start_two_workers

ROOT = Path(__file__).resolve().parents[1]
MAKEFILE = ROOT / "Makefile"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _make_run(cwd: Path) -> tuple[str, str]:
    """Run ``make run`` until /healthz answers, stop it; its stdout and stderr."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HUB_")}
    env.update({"HUB_PORT": str(port), "HUB_HOST": "127.0.0.1"})
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "-f", str(MAKEFILE), "run"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        body = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                body = httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=1).json()
                break
            except httpx2.TransportError:
                time.sleep(0.2)
        assert body == {"data": {"status": "ok"}}, proc.poll()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    return out.decode(), err.decode()


@pytest.mark.slow
def test_make_run_serves_healthz_from_a_fresh_directory(tmp_path: Path) -> None:
    out, err = _make_run(tmp_path)
    assert (tmp_path / ".hub" / "hub.db").exists()
    secrets_file = tmp_path / ".hub" / "dev-secrets.json"
    assert secrets_file.stat().st_mode & 0o777 == 0o600
    assert "GENERATED DEVELOPMENT SECRETS" in err
    hub_lines = [line for line in err.splitlines() if line.startswith("{")]
    assert hub_lines, err
    assert all(json.loads(line)["level"] for line in hub_lines)  # JSON logs on stderr
    # first start: the platform admin's key is printed once, alone on stdout (make echoes
    # no command line there)
    lines = out.splitlines()
    assert len(lines) == 1, out
    assert lines[0].startswith("hub_")
    assert len(lines[0]) == 55

    again_out, again_err = _make_run(tmp_path)
    assert again_out == ""  # no key, no echo
    assert "a platform admin exists already" in again_err
    assert "hub bootstrap --force" in again_err
    assert "`hub keys create --platform` (POST /platform/keys)" in again_err


def test_make_help_lists_every_documented_target() -> None:
    documented = re.findall(r"^## ([a-z-]+): (.+)$", MAKEFILE.read_text(), re.MULTILINE)
    done = subprocess.run(
        ["make", "--no-print-directory", "-f", str(MAKEFILE), "help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    listed = [line.split(None, 2)[1:] for line in done.stdout.splitlines()]
    assert listed == [[target, text] for target, text in documented]
    assert {"run", "test", "lint", "help", "clean"} <= {target for target, _ in documented}


@pytest.mark.slow
def test_serve_with_two_workers_answers_and_stops(tmp_path: Path) -> None:
    """``hub serve --workers 2``: two processes, each building its app from the factory and
    listening on its own socket of the one port, answer and stop cleanly on SIGTERM."""
    port = _free_port()
    proc = start_two_workers(tmp_path, port)
    try:
        deadline = time.monotonic() + 60
        statuses: list[int] = []
        while time.monotonic() < deadline and proc.poll() is None and len(statuses) < 20:
            try:
                statuses.append(
                    httpx2.get(f"http://127.0.0.1:{port}/readyz", timeout=5).status_code
                )
            except httpx2.TransportError:
                time.sleep(0.2)
        assert statuses == [200] * 20, proc.poll()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()[-2000:]
    messages = [
        json.loads(line)["message"] for line in err.decode().splitlines() if line[:1] == "{"
    ]
    started = {m for m in messages if m.startswith("Started server process")}
    assert len(started) == 2, messages  # two processes, each with its own server
    # limits in each process's memory: each worker admits the whole limit, and is told so
    [warning] = [line for line in err.decode().splitlines() if line.startswith("hub: warning")]
    assert "each of the 2 workers counts its own rate limits" in warning

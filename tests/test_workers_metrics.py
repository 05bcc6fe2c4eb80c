"""``hub serve --workers 2`` has one ``/metrics`` for its port (:mod:`hub.cli.workers`).

A scrape reaches whichever worker the kernel picks. Each worker reporting its own counters made
them jump between scrapes (seen on a walk: 1, 1, 2, 2, 3 for the same count); Prometheus reads
every drop as a restart. Here every scrape gives the total over both workers, and a worker that
is killed and started again takes none of its counts with it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.workers import start_two_workers

READYZ = {"method": "GET", "route": "/readyz", "status": "200"}

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _readyz(port: int) -> None:
    """One request on a connection of its own, so the kernel picks a worker for each."""
    with httpx2.Client() as client:
        assert client.get(f"http://127.0.0.1:{port}/readyz", timeout=10).status_code == 200


def _counted(port: int) -> float:
    """``/readyz`` requests answered, as one scrape reports them."""
    with httpx2.Client() as client:
        text = client.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "hub_request_duration_seconds_count" and sample.labels == READYZ:
                return float(sample.value)
    return 0.0


def _workers(supervisor: int) -> list[int]:
    """The supervisor's worker processes (spawned interpreters serving the port)."""
    children = Path(f"/proc/{supervisor}/task/{supervisor}/children").read_text().split()
    return [
        int(pid)
        for pid in children
        if b"resource_tracker" not in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]


def _wait_ready(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            _readyz(port)
            return
        except httpx2.TransportError:
            time.sleep(0.2)
    raise AssertionError(f"the hub did not start (exit {proc.poll()})")


def test_every_scrape_counts_both_workers_and_a_restart_loses_nothing(tmp_path: Path) -> None:
    port = _free_port()
    # TMPDIR: where the supervisor makes its metrics directory
    proc = start_two_workers(tmp_path, port, HUB_WORKERS="false", TMPDIR=str(tmp_path))
    try:
        _wait_ready(port, proc)
        deadline = time.monotonic() + 30  # both workers up: two metrics files written
        while len(list(tmp_path.glob("hub-metrics-*/histogram_*.db"))) < 2:
            assert time.monotonic() < deadline, "the second worker wrote no metrics"
            _readyz(port)
        for _ in range(30):
            _readyz(port)
        answered = int(_counted(port))
        assert answered >= 31
        assert [_counted(port) for _ in range(8)] == [answered] * 8  # whichever worker answers

        [first, second] = _workers(proc.pid)
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while first in _workers(proc.pid) or len(_workers(proc.pid)) < 2:
            assert time.monotonic() < deadline, "the killed worker was not started again"
            time.sleep(0.2)
        for _ in range(10):
            _readyz(port)  # served by the survivor, or by the new worker once it listens
        assert [_counted(port) for _ in range(6)] == [answered + 10] * 6
        assert second in _workers(proc.pid)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()[-2000:]
    assert list(tmp_path.glob("hub-metrics-*")) == []  # the supervisor removed its directory

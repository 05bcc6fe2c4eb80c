"""``hub serve`` started before its migrations: the workers start once ``hub db upgrade`` ran.

A replica may start on a database the migrations have not reached yet (``/readyz`` answers 503
until they have). Its workers could not schedule their recurring jobs there; the runner died on
that first error, without a line, and stayed dead after ``hub db upgrade`` until a restart — and
at SIGTERM the app's shutdown raised that error again ("Application shutdown failed"). Here the
workers wait for the database, say so once, run the jobs once it is migrated, and the hub exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from hub.core.db import Database
from hub.core.jobs import JobRegistry, JobRun
from hub.core.metrics import Metrics
from hub.core.workers import WorkerRunner
from tests.deploy.serving import free_port, hub_command, hub_env
from tests.support.databases import scratch_url
from tests.support.hubcommand import hub_argv
from tests.support.migrated import migrated_sqlite

pytestmark = pytest.mark.slow

POLL_S = "0.2"  # HUB_WORKER_POLL_S: the runner retries the database this often
DEADLINE_S = 90.0  # generous: a slow machine still gets there


@dataclass
class Hub:
    url: str
    proc: subprocess.Popen[bytes]
    stderr: str = ""
    log_lines: list[dict[str, Any]] = field(default_factory=list)


@contextlib.contextmanager
def _serving(tmp_path: Path, port: int, database_url: str) -> Iterator[Hub]:
    """``hub serve`` on ``database_url``; stopped with SIGTERM, its exit and stderr kept."""
    env = hub_env(tmp_path, port, HUB_DATABASE_URL=database_url, HUB_WORKER_POLL_S=POLL_S)
    proc = subprocess.Popen(
        hub_argv("serve"),
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    hub = Hub(url=f"http://127.0.0.1:{port}", proc=proc)
    try:
        _wait_for(lambda: _answers(hub), "hub serve did not answer /healthz")
        yield hub
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        hub.stderr = err.decode()
        hub.log_lines = [json.loads(x) for x in hub.stderr.splitlines() if x.startswith("{")]


def _wait_for(done: Any, failure: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not done():
        assert time.monotonic() < deadline, failure
        time.sleep(0.2)


def _answers(hub: Hub) -> bool:
    assert hub.proc.poll() is None, f"hub serve exited with {hub.proc.returncode}"
    try:
        httpx2.get(f"{hub.url}/healthz", timeout=2)
    except httpx2.TransportError:
        return False
    return True


def _jobs_run(hub: Hub) -> set[str]:
    """The jobs ``/metrics`` counts a successful run of."""
    text = httpx2.get(f"{hub.url}/metrics", timeout=10).text
    return {
        sample.labels["job"]
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "hub_worker_runs_total"
        and sample.labels.get("outcome") == "ok"
        and sample.value > 0
    }


def _worker_lines(hub: Hub, level: str) -> list[str]:
    return [
        str(line.get("message", ""))
        for line in hub.log_lines
        if line.get("logger") == "hub.workers" and line.get("level") == level
    ]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_workers_run_once_the_database_is_migrated_without_a_restart(
    tmp_path: Path, backend: str
) -> None:
    url = scratch_url(backend, tmp_path, "unmigrated")
    port = free_port()
    with _serving(tmp_path, port, url) as hub:
        assert httpx2.get(f"{hub.url}/readyz", timeout=10).status_code == 503
        time.sleep(5 * float(POLL_S))  # several polls on the unmigrated database
        hub_command(tmp_path, port, "db", "upgrade", HUB_DATABASE_URL=url)
        assert httpx2.get(f"{hub.url}/readyz", timeout=10).status_code == 200
        _wait_for(lambda: _jobs_run(hub), "no worker job ran after `hub db upgrade`")
    assert hub.proc.returncode == 0, hub.stderr
    assert "Traceback" not in hub.stderr
    assert "Application shutdown failed" not in hub.stderr
    # one warning while the database could not be used (not one per poll), then one line back
    assert len(_worker_lines(hub, "warning")) == 1, hub.log_lines
    assert any("resumed" in line for line in _worker_lines(hub, "info")), hub.log_lines


async def test_an_unreachable_database_is_one_warning_and_the_runner_stops_cleanly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Refused connections are waited out (a poll each, one warning in all), not the runner's
    end; stopping it then returns cleanly."""

    async def never(run: JobRun) -> None:
        raise AssertionError("no job can be claimed from an unreachable database")

    registry = JobRegistry()
    registry.register("test.recurring", never, every_s=60)
    db = Database.from_url(f"postgresql+asyncpg://hub@127.0.0.1:{free_port()}/hub", pool_size=1)
    runner = WorkerRunner(db, registry, Metrics(), poll_s=0.02)
    try:
        with caplog.at_level(logging.INFO, logger="hub.workers"):
            task = asyncio.create_task(runner.run())
            await asyncio.sleep(0.5)  # many polls
            runner.stop.set()
            await asyncio.wait_for(task, 10)
    finally:
        await db.dispose()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "cannot use the database" in warnings[0].getMessage()


class _FlakyClaims(WorkerRunner):
    """A runner whose first claims fail with an error that is not the database's (a bug in a
    claim, injected): the one fault this test needs and no real part can be made to raise."""

    failures = 3

    async def claim(self, limit: int) -> list[Any]:
        if self.failures:
            self.failures -= 1
            raise RuntimeError("a bug in a claim")
        return await super().claim(limit)


async def test_a_claim_that_fails_otherwise_is_logged_once_and_the_jobs_go_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """One broken claim used to stop every background job of the process until a restart (in
    the first version of the fix above); it is logged, with its traceback, once."""
    ran = asyncio.Event()

    async def record(run: JobRun) -> None:
        ran.set()

    registry = JobRegistry()
    registry.register("test.recurring", record, every_s=60)
    migrated_sqlite(tmp_path / "hub.db")
    db = Database.from_url(f"sqlite+aiosqlite:///{tmp_path / 'hub.db'}")
    runner = _FlakyClaims(db, registry, Metrics(), poll_s=0.02)
    try:
        with caplog.at_level(logging.INFO, logger="hub.workers"):
            task = asyncio.create_task(runner.run())
            await asyncio.wait_for(ran.wait(), 30)  # the job ran after the failed claims
            runner.stop.set()
            await asyncio.wait_for(task, 10)
    finally:
        await db.dispose()
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1, errors
    assert errors[0].exc_info is not None
    assert "could not claim jobs" in errors[0].getMessage()

"""Leader-free workers across processes on one PostgreSQL (DESIGN §11, §15).

Real processes (``tests/workers/process.py`` runs what ``hub worker`` runs, with test jobs) claim
from one ``worker_jobs`` table with ``FOR UPDATE SKIP LOCKED``: three of them run every due job
exactly once; a process killed (SIGKILL) in the middle of a job leaves its lease, and another
process takes the job over only once that lease has expired.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from hub.core.db import Database
from hub.models import WorkerJob
from tests.support.databases import owner_session
from tests.workers.conftest import jobs_left, keys, make_due

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _lines(log: Path, word: str) -> list[list[str]]:
    if not log.exists():
        return []
    return [line.split() for line in log.read_text().splitlines() if line.startswith(word)]


@contextlib.contextmanager
def _workers(
    url: str, log: Path, count: int, lease_s: float
) -> Iterator[list[subprocess.Popen[bytes]]]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.workers.process", url, str(log), str(lease_s)],
            cwd=ROOT,
            env={k: v for k, v in os.environ.items() if not k.startswith("HUB_")},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for _ in range(count)
    ]
    try:
        deadline = time.monotonic() + 30
        while len(_lines(log, "ready")) < count:
            assert time.monotonic() < deadline, "the worker processes did not start"
            time.sleep(0.05)
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.communicate(timeout=30)


async def _wait(condition: object, seconds: float) -> None:
    async with asyncio.timeout(seconds):
        while not await condition():  # type: ignore[operator]  # noqa: ASYNC110 (another process's rows)
            await asyncio.sleep(0.05)


async def test_three_processes_run_each_due_job_exactly_once(
    pg_url: str, database: Database, tmp_path: Path
) -> None:
    log = tmp_path / "runs.log"
    wanted = keys(60)
    with _workers(pg_url, log, 3, lease_s=30) as procs:
        await make_due(database, "test.once", wanted)

        async def drained() -> bool:
            return not await jobs_left(database)

        await _wait(drained, 60)
        await asyncio.sleep(0.5)  # a doubled run would have appended its line by now
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(timeout=20)
            assert proc.returncode == 0
    done = [fields[1] for fields in _lines(log, "done")]
    assert sorted(done) == sorted(wanted)  # every job, none twice


async def test_a_job_whose_process_was_killed_is_taken_over_after_its_lease(
    pg_url: str, database: Database, tmp_path: Path
) -> None:
    log = tmp_path / "runs.log"
    lease_s = 2.0
    with _workers(pg_url, log, 2, lease_s=lease_s) as procs:
        await make_due(database, "test.slow", ["victim"])

        async def started() -> bool:
            return bool(_lines(log, "started"))

        await _wait(started, 20)
        [[_, _, first_pid, _]] = _lines(log, "started")
        victim = next(p for p in procs if str(p.pid) == first_pid)
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=10)
        killed_at = time.time()
        async with owner_session(database, write=False) as session:
            row = (await session.execute(select(WorkerJob))).scalar_one()
        assert row.lease_until is not None
        lease_expired_at = row.lease_until.timestamp()

        async def taken_over() -> bool:
            return len(_lines(log, "done")) == 1

        # one-sided bound: the lease left behind, a poll, the 3 s job, plus slack
        await _wait(taken_over, lease_s + 0.5 + 3 + 1.5 + 5)
    restarts = _lines(log, "started")
    assert len(restarts) == 2
    [_, _, second_pid, restarted_at] = restarts[1]
    assert second_pid != first_pid
    assert float(restarted_at) >= lease_expired_at - 0.05  # not before the lease expired
    assert float(restarted_at) - killed_at < lease_s + 1.5 + 1.5
    [[_, key, done_pid, _]] = _lines(log, "done")
    assert (key, done_pid) == ("victim", second_pid)
    assert not await jobs_left(database)


async def test_sigterm_lets_the_current_job_finish_and_exits_0(
    pg_url: str, database: Database, tmp_path: Path
) -> None:
    log = tmp_path / "runs.log"
    with _workers(pg_url, log, 1, lease_s=30) as [proc]:
        await make_due(database, "test.slow", ["current"])

        async def started() -> bool:
            return bool(_lines(log, "started"))

        await _wait(started, 20)
        proc.send_signal(signal.SIGTERM)
        signalled = time.time()  # the log's clock
        returncode = await asyncio.to_thread(proc.wait, 20)
    assert returncode == 0
    assert [fields[1] for fields in _lines(log, "done")] == ["current"]  # finished, not cut
    assert not await jobs_left(database)
    # the job's own 3 s, not the 10 s grace: up to when run_workers returned (the interpreter's
    # teardown after it took up to 2 s on a loaded two-core CI machine, and is not the hub's)
    [[_, _, _, exited]] = _lines(log, "exited")
    assert float(exited) - signalled < 3 + 1.5

"""The worker runner in process, on both backends: claim, run with no transaction, finish by
compare-and-swap on the holder; recurring jobs, retries with backoff, lost leases, and a
``schedule`` made while the job ran."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import inspect, update

from hub.core import clock
from hub.core.db import Database
from hub.core.jobs import JOBS_TABLE, JobRegistry, JobRun, RunAgain, schedule
from hub.core.metrics import Metrics
from hub.core.workers import WorkerRunner
from hub.models import WorkerJob
from tests.workers.conftest import jobs_left, keys, make_due


def _runner(db: Database, jobs: JobRegistry, **options: object) -> WorkerRunner:
    return WorkerRunner(db, jobs, Metrics(), poll_s=0.05, **options)  # type: ignore[arg-type]


async def _until(condition: object, seconds: float = 10) -> None:
    async with asyncio.timeout(seconds):
        while not await condition():  # type: ignore[operator]  # noqa: ASYNC110 (another process's rows)
            await asyncio.sleep(0.02)


def test_the_core_table_clause_matches_the_model() -> None:
    model = {c.name for c in inspect(WorkerJob).columns}
    assert {c.name for c in JOBS_TABLE.columns} == model


def test_registering_twice_is_refused() -> None:
    jobs = JobRegistry()

    async def handler(run: JobRun) -> None:
        return None

    jobs.register("x.y", handler)
    with pytest.raises(ValueError, match="registered already"):
        jobs.register("x.y", handler)


async def test_due_jobs_run_once_and_one_shot_rows_go(database: Database) -> None:
    seen: list[str] = []
    jobs = JobRegistry()

    async def handler(run: JobRun) -> None:
        seen.append(run.key)

    jobs.register("test.once", handler)
    wanted = keys(12)
    await make_due(database, "test.once", wanted)
    await make_due(database, "test.once", ["later"], clock.now() + timedelta(hours=1))
    runner = _runner(database, jobs)
    task = asyncio.create_task(runner.run())

    async def drained() -> bool:
        return len(await jobs_left(database)) == 1

    await _until(drained)
    runner.stop.set()
    await task
    assert sorted(seen) == sorted(wanted)
    [left] = await jobs_left(database)
    assert left.key == "later"


async def test_a_failing_job_is_retried_with_backoff(database: Database) -> None:
    jobs = JobRegistry()
    calls = 0

    async def flaky(run: JobRun) -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError("upstream said no")

    jobs.register("test.flaky", flaky, backoff_s=30)
    await make_due(database, "test.flaky", ["one"])
    runner = _runner(database, jobs)
    [claimed] = await runner.claim(10)
    await runner._run_one(claimed)
    [row] = await jobs_left(database)
    assert calls == 1
    assert row.attempts == 1
    assert row.last_error == "RuntimeError"  # the type only, never the message
    assert (row.holder, row.lease_until) == (None, None)
    assert 25 < (row.due_at - clock.now()).total_seconds() <= 30
    assert await runner.claim(10) == []  # not due again before its backoff


async def test_recurring_jobs_keep_their_row_and_come_back(database: Database) -> None:
    jobs = JobRegistry()
    runs: list[int] = []

    async def tick(run: JobRun) -> None:
        runs.append(run.attempt)

    jobs.register("test.tick", tick, every_s=3600)
    runner = _runner(database, jobs)
    await runner._ensure_recurring()
    await runner._ensure_recurring()  # idempotent
    [claimed] = await runner.claim(10)
    await runner._run_one(claimed)
    [row] = await jobs_left(database)
    assert runs == [0]
    assert 3590 < (row.due_at - clock.now()).total_seconds() <= 3600


async def test_run_again_reschedules(database: Database) -> None:
    jobs = JobRegistry()
    at = clock.now() + timedelta(minutes=5)

    async def later(run: JobRun) -> RunAgain:
        return RunAgain(at)

    jobs.register("test.later", later)
    await make_due(database, "test.later", ["one"])
    runner = _runner(database, jobs)
    [claimed] = await runner.claim(10)
    await runner._run_one(claimed)
    [row] = await jobs_left(database)
    assert abs((row.due_at - at).total_seconds()) < 0.001


async def test_a_result_after_the_lease_was_lost_is_dropped(database: Database) -> None:
    jobs = JobRegistry()

    async def steal_then_finish(run: JobRun) -> None:
        # while this run is "stalled", its lease expires and another runner claims the row
        async with run.db.session() as session:
            await session.execute(update(JOBS_TABLE).values(holder="someone-else"))

    jobs.register("test.stolen", steal_then_finish)
    await make_due(database, "test.stolen", ["one"])
    runner = _runner(database, jobs)
    [claimed] = await runner.claim(10)
    await runner._run_one(claimed)
    [row] = await jobs_left(database)  # not deleted: the result belonged to a lost lease
    assert row.holder == "someone-else"


async def test_a_schedule_made_while_the_job_ran_is_kept(database: Database) -> None:
    jobs = JobRegistry()
    again = clock.now() + timedelta(minutes=2)

    async def rescheduled_meanwhile(run: JobRun) -> None:
        async with run.db.session() as session:
            await schedule(session, run.kind, run.key, due_at=again)

    jobs.register("test.meanwhile", rescheduled_meanwhile)
    await make_due(database, "test.meanwhile", ["one"])
    runner = _runner(database, jobs)
    [claimed] = await runner.claim(10)
    await runner._run_one(claimed)
    [row] = await jobs_left(database)  # the one-shot job was made due again: not deleted
    assert abs((row.due_at - again).total_seconds()) < 0.001
    assert row.holder is None


async def test_a_claimed_job_is_not_claimed_twice(database: Database) -> None:
    jobs = JobRegistry()

    async def nothing(run: JobRun) -> None:
        return None

    jobs.register("test.once", nothing)
    await make_due(database, "test.once", keys(5))
    first, second = _runner(database, jobs), _runner(database, jobs)
    a = await first.claim(3)
    b = await second.claim(10)
    assert (len(a), len(b)) == (3, 2)
    assert not {j.id for j in a} & {j.id for j in b}

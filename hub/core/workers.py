"""Leader-free workers (DESIGN §11; §15 "Leases instead of transactions across HTTP").

Every ``hub serve`` (unless ``HUB_WORKERS=false``) and every ``hub worker`` runs one
:class:`WorkerRunner`. There is no leader: each runner polls ``worker_jobs`` for due rows of the
kinds it knows (:mod:`hub.core.jobs`) and claims some, so any number of replicas share the work.

1. **Claim** — one short transaction selects due, unleased rows
   (``FOR UPDATE SKIP LOCKED`` on PostgreSQL: concurrent claimers skip each other's rows instead
   of waiting) and sets ``holder`` (this runner) and ``lease_until``; it commits at once.
2. **Run** — the handler runs with no transaction open, in sessions of its own. While it runs a
   heartbeat extends the lease (compare-and-swap on ``holder``), so a long job is not taken over.
3. **Finish** — the result is written by compare-and-swap on ``holder``: the next ``due_at`` (or
   the row deleted), or, after an exception (logged), a retry with backoff. A runner whose lease
   was lost (it stalled past ``lease_until`` and another claimed the job) writes nothing.

A database the runner cannot use — unreachable, or with migrations still to run (a replica may
start before its migration job ends) — stops nothing: the runner logs one warning, tries again
every poll, and says when it resumed; the recurring jobs' rows are made then. Any other error
while claiming is a bug: logged once with its traceback, and the runner goes on polling (one
broken claim must not stop every background job until a restart).

A process killed mid-job leaves its lease behind; once ``lease_until`` passes, another runner
claims the job again. So a job runs once per due time while its runner lives, and at least once
overall: handlers must tolerate a repeat after a crash.

On SQLite (one machine, no ``SKIP LOCKED``) the workers run in one process per database file: a
runner starts only while it holds an exclusive lock on ``<database>.workers.lock``, so the first
process to start (``hub serve``, one of ``hub serve --workers N``'s processes, or ``hub worker``)
runs them and the others serve requests only. A parent may also give its later processes
``HUB_WORKERS=false``.

The claiming SQL is :mod:`hub.core.worker_claims`. Metrics: ``hub_worker_runs_total{job, outcome}``
(``ok``, ``error``, ``lost``), ``hub_worker_lag_seconds{job}`` (due → claimed) and
``hub_worker_run_seconds{job}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import random
import socket
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from hub.core import clock, rls
from hub.core.db import Database, sqlite_file
from hub.core.jobs import JOBS_TABLE, JobRegistry, JobRun, JobSpec, RunAgain
from hub.core.metrics import Metrics
from hub.core.worker_claims import Claimed, claim_due, insert_recurring, schema_behind

__all__ = ["WorkerRunner", "Workers", "holder_id"]

log = logging.getLogger("hub.workers")

J = JOBS_TABLE.c

#: What the runner outlives (:meth:`WorkerRunner._poll`): a database it cannot reach, or that the
#: migrations have not reached yet (no ``worker_jobs``: a replica may start before its migration
#: job ends). It waits a poll and tries again, and says so once.
_DATABASE_ERRORS: tuple[type[Exception], ...] = (DBAPIError, PoolTimeout, OSError)


def holder_id() -> str:
    """This runner's name in ``worker_jobs.holder``: host, process and a random part."""
    return f"{socket.gethostname()[:64]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class WorkerRunner:
    """Claims and runs due jobs until ``stop`` is set, then lets the running jobs finish."""

    def __init__(
        self,
        db: Database,
        registry: JobRegistry,
        metrics: Metrics,
        *,
        poll_s: float = 1.0,
        concurrency: int = 4,
        holder: str | None = None,
    ) -> None:
        self.db = db
        self.registry = registry
        self.metrics = metrics
        self.poll_s = poll_s
        self.concurrency = concurrency
        self.holder = holder or holder_id()
        self.stop = asyncio.Event()
        self._running: set[asyncio.Task[None]] = set()
        self._scheduled = False  # the recurring kinds' rows are made (once the database allows)
        self._failure: str | None = None  # why the database last failed the runner; None: it works

    # ------------------------------------------------------------------ the loop
    async def run(self) -> None:
        """Run until :attr:`stop` is set; then wait for the jobs in flight (their current run)."""
        log.info("workers started", extra={"holder": self.holder, "jobs": self.registry.kinds})
        try:
            while not self.stop.is_set():
                claimed = await self._poll()
                for job in claimed:
                    task = asyncio.create_task(self._run_one(job))
                    self._running.add(task)
                    task.add_done_callback(self._running.discard)
                if not claimed:
                    await self._idle()
        finally:
            if self._running:
                await asyncio.gather(*self._running, return_exceptions=True)
            log.info("workers stopped", extra={"holder": self.holder})

    async def _idle(self) -> None:
        """Sleep about ``poll_s`` (jittered, so replicas do not poll in step), or until stopped
        or a job ends (a free slot may claim more)."""
        waits: list[asyncio.Future[Any]] = [asyncio.ensure_future(self.stop.wait())]
        waits.extend(self._running)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait(
                waits,
                timeout=self.poll_s * random.uniform(0.8, 1.2),  # noqa: S311 (jitter, not secret)
                return_when=asyncio.FIRST_COMPLETED,
            )
        waits[0].cancel()

    async def _poll(self) -> list[Claimed]:
        """Claim what the free slots take, the recurring kinds' rows made first (once). While the
        database cannot be used (:data:`_DATABASE_ERRORS`) nothing is claimed: the loop idles a
        poll and tries again, so the jobs start once it answers, or once it is migrated."""
        free = self.concurrency - len(self._running)
        if free <= 0:
            return []
        try:
            if not self._scheduled:
                if await schema_behind(self.db):
                    self._database_state("migrations still to run")
                    return []
                await self._ensure_recurring()
                self._scheduled = True
            claimed = await self.claim(free)
        except _DATABASE_ERRORS as exc:
            self._database_state(type(exc).__name__)
            return []
        except Exception as exc:  # a bug: logged with its traceback once; the jobs go on trying
            if self._failure != f"bug {type(exc).__name__}":
                log.exception("workers: could not claim jobs; trying again every %g s", self.poll_s)
                self._failure = f"bug {type(exc).__name__}"
            return []
        self._database_state(None)
        return claimed

    def _database_state(self, failure: str | None) -> None:
        """One line when the database starts or stops failing the runner, not one per poll."""
        if failure == self._failure:
            return
        if failure is not None:
            log.warning(
                "workers: cannot use the database (%s), trying again every %g s",
                failure,
                self.poll_s,
            )
        else:
            log.info("workers resumed: the database answers")
        self._failure = failure

    # ------------------------------------------------------------------ claim, run, finish
    async def _ensure_recurring(self) -> None:
        """Every recurring kind has its singleton row (due now when first made)."""
        recurring = [spec for spec in self.registry if spec.every_s is not None]
        if not recurring:
            return
        # the singletons belong to no tenant: the platform's row-level-security scope
        with rls.scope(rls.PLATFORM):
            await insert_recurring(self.db, recurring)

    async def claim(self, limit: int) -> list[Claimed]:
        """Claim up to ``limit`` due jobs in one short transaction."""
        now = clock.now()
        claimed = await claim_due(self.db, self.registry, self.holder, now, limit)
        for job in claimed:
            lag = max(0.0, (now - job.due_at).total_seconds())
            self.metrics.worker_lag.labels(job=job.kind).observe(lag)
        return claimed

    async def _run_one(self, job: Claimed) -> None:
        spec = self.registry.get(job.kind)
        run = JobRun(job.kind, job.key, job.tenant_id, job.attempts, self.db, self.stop)
        # the job's row, its handler's sessions and the tasks it starts: the job's tenant's scope
        rls.enter_job(job.tenant_id)
        heartbeat = asyncio.create_task(self._heartbeat(job, spec))
        started = time.perf_counter()
        try:
            outcome = await spec.handler(run)
        except asyncio.CancelledError:
            await self._release(job)  # shutdown ran out of time: let another runner take it now
            raise
        except Exception as exc:
            log.exception("job %s failed", job.kind, extra={"job": job.kind, "job_key": job.key})
            result = await self._finish_failed(job, spec, type(exc).__name__)
        else:
            result = await self._finish_ok(job, spec, outcome)
        finally:
            heartbeat.cancel()
            self.metrics.worker_duration.labels(job=job.kind).observe(time.perf_counter() - started)
        if result == "lost":
            log.warning("job %s: lease lost, its result was dropped", job.kind)
        self.metrics.worker_runs.labels(job=job.kind, outcome=result).inc()

    async def _heartbeat(self, job: Claimed, spec: JobSpec) -> None:
        while True:
            await asyncio.sleep(spec.lease_s / 3)
            with contextlib.suppress(Exception):
                async with self.db.session(write=True) as session:
                    await session.execute(
                        self._mine(job).values(
                            lease_until=clock.now() + timedelta(seconds=spec.lease_s)
                        )
                    )

    def _mine(self, job: Claimed) -> sa.Update:
        """``UPDATE worker_jobs`` of this job only while this runner still holds it (the CAS)."""
        return sa.update(JOBS_TABLE).where(J.id == job.id).where(J.holder == self.holder)

    async def _finish_ok(self, job: Claimed, spec: JobSpec, outcome: RunAgain | None) -> str:
        now = clock.now()
        async with self.db.session(write=True) as session:
            if outcome is None and spec.every_s is None:
                # one-shot and done; unless it was scheduled again while it ran
                deleted = await session.execute(
                    sa.delete(JOBS_TABLE)
                    .where(J.id == job.id)
                    .where(J.holder == self.holder)
                    .where(J.due_at == job.due_at)
                )
                if _count(deleted):
                    return "ok"
                nxt = None
            elif outcome is not None:
                nxt = outcome.at
            else:
                nxt = now + timedelta(seconds=spec.every_s or 0)
            done = await session.execute(
                self._mine(job).values(
                    due_at=_next_due(job.due_at, nxt),
                    holder=None,
                    lease_until=None,
                    attempts=0,
                    last_error=None,
                    last_run_at=now,
                )
            )
        return "ok" if _count(done) else "lost"

    async def _finish_failed(self, job: Claimed, spec: JobSpec, error: str) -> str:
        now = clock.now()
        retry = now + timedelta(seconds=spec.backoff(job.attempts + 1))
        async with self.db.session(write=True) as session:
            done = await session.execute(
                self._mine(job).values(
                    due_at=_next_due(job.due_at, retry),
                    holder=None,
                    lease_until=None,
                    attempts=job.attempts + 1,
                    last_error=error[:128],
                    last_run_at=now,
                )
            )
        return "error" if _count(done) else "lost"

    async def _release(self, job: Claimed) -> None:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(2), self.db.session(write=True) as session:
                await session.execute(self._mine(job).values(holder=None, lease_until=None))


def _count(result: Any) -> int:
    return int(getattr(result, "rowcount", 0) or 0)


def _next_due(claimed_due: datetime, wanted: datetime | None) -> Any:
    """The next ``due_at``: ``wanted``, unless a :func:`~hub.core.jobs.schedule` during the run
    moved the row (its ``due_at`` is no longer the one claimed) to something earlier."""
    if wanted is None:  # a one-shot job scheduled again while it ran: keep that schedule
        return J.due_at
    return sa.case(
        (sa.and_(J.due_at != claimed_due, J.due_at < wanted), J.due_at),
        else_=sa.literal(wanted, J.due_at.type),
    )


class Workers:
    """The workers of one process (a component): started and stopped by the app's lifespan or by
    ``hub worker``; :meth:`request_stop` is safe from a signal handler."""

    def __init__(
        self, registry: JobRegistry, metrics: Metrics, *, poll_s: float, concurrency: int
    ) -> None:
        self.registry = registry
        self.metrics = metrics
        self.poll_s = poll_s
        self.concurrency = concurrency
        self.runner: WorkerRunner | None = None
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: IO[bytes] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start(self, db: Database, database_url: str) -> bool:
        """Start the runner in the background; False when there is nothing to run here (no job
        registered, or another process holds this SQLite database's workers)."""
        if not len(self.registry):
            log.info("workers: no job is registered, none started")
            return False
        if db.is_sqlite and not self._take_sqlite_lock(database_url):
            log.info("workers: another process runs this SQLite database's workers")
            return False
        self._loop = asyncio.get_running_loop()
        self.runner = WorkerRunner(
            db, self.registry, self.metrics, poll_s=self.poll_s, concurrency=self.concurrency
        )
        self._task = asyncio.create_task(self.runner.run())
        self._task.add_done_callback(_log_failure)
        return True

    def request_stop(self) -> None:
        """Ask the runner to stop after its current jobs (from any thread or a signal handler)."""
        if self.runner is not None and self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.runner.stop.set)

    async def stop(self, timeout_s: float) -> None:
        """Stop: the jobs in flight may finish within ``timeout_s``; then they are cancelled
        (their leases are released, so another runner takes them)."""
        if self.runner is not None and self._task is not None:
            self.runner.stop.set()
            # never the runner's own error (logged when it ended): the shutdown goes on
            done, _ = await asyncio.wait({self._task}, timeout=timeout_s)
            if not done:
                log.warning("workers: jobs still running after %.0f s, cancelled", timeout_s)
                for task in list(self.runner._running):
                    task.cancel()
                await asyncio.wait({self._task})
        if self._lock is not None:
            self._lock.close()  # closing the file releases the lock
            self._lock = None

    async def wait(self) -> None:
        """Until the runner has stopped."""
        if self._task is not None:
            await asyncio.shield(self._task)

    def _take_sqlite_lock(self, database_url: str) -> bool:
        path = sqlite_file(database_url)
        if path is None:
            return True  # an in-memory database lives in this process only
        handle = Path(f"{path}.workers.lock").open("ab")  # noqa: SIM115 (held while running)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return False
        self._lock = handle
        return True


def _log_failure(task: asyncio.Task[None]) -> None:
    """A runner ended by an error (a bug: database errors are waited out) says so when it ends,
    not at shutdown."""
    if not task.cancelled() and (error := task.exception()) is not None:
        log.error("workers stopped by an error", exc_info=error)

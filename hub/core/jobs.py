"""Background jobs: what a job is, how one is registered, and how one is made due.

A *job kind* is registered once, in :mod:`hub.wiring`, with one call::

    jobs.register("oauth.refresh", refresh_token, lease_s=60)

    async def refresh_token(run: JobRun) -> RunAgain | None:
        ...  # run.key names the instance, run.db opens the job's own short sessions

Instances are rows of ``worker_jobs`` (``kind``, instance ``key``, ``due_at``), made due from
domain code in its own transaction with :func:`schedule` — e.g. when a token is stored, its
refresh is scheduled before it expires. A kind registered with ``every_s`` is a recurring
singleton instead (key ``""``): the workers keep its row and run it every ``every_s``.

A handler returns ``None`` (a recurring job is due again after ``every_s``; a one-shot job is done
and its row deleted) or :class:`RunAgain` (due again at that time). An exception is logged and the
job retried with exponential backoff (``backoff_s`` doubling up to ``max_backoff_s``).

The handler runs with **no transaction open** (DESIGN §15): it opens short sessions of its own
through ``run.db`` and must do any HTTP outside them. ``run.stop`` is set when the process is
shutting down; a long job may check it and return early (it is otherwise let finish).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import Insert as PgInsert
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import Insert as SqliteInsert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from hub.core import clock
from hub.core.db import Database
from hub.core.dbtypes import UTCDateTime

__all__ = [
    "JOBS_TABLE",
    "JobHandler",
    "JobRegistry",
    "JobRun",
    "JobSpec",
    "RunAgain",
    "schedule",
]

#: ``worker_jobs`` as core sees it (the ORM model, ``hub.models.WorkerJob``, sits above core; a
#: test checks the two agree).
JOBS_TABLE = sa.table(
    "worker_jobs",
    sa.column("id", sa.Uuid()),
    sa.column("kind", sa.String()),
    sa.column("key", sa.String()),
    sa.column("tenant_id", sa.Uuid()),
    sa.column("due_at", UTCDateTime()),
    sa.column("lease_until", UTCDateTime()),
    sa.column("holder", sa.String()),
    sa.column("attempts", sa.Integer()),
    sa.column("last_error", sa.String()),
    sa.column("last_run_at", UTCDateTime()),
    sa.column("created_at", UTCDateTime()),
)


@dataclass(frozen=True)
class RunAgain:
    """A handler's answer: run this job again at ``at`` (an aware datetime)."""

    at: datetime


@dataclass(frozen=True)
class JobRun:
    """One run of one job instance, as its handler sees it."""

    kind: str
    key: str
    tenant_id: uuid.UUID | None
    #: failed runs before this one (0 on a first try or after a success)
    attempt: int
    db: Database
    stop: asyncio.Event


JobHandler = Callable[[JobRun], Awaitable[RunAgain | None]]


@dataclass(frozen=True)
class JobSpec:
    """A registered job kind (see the module docstring)."""

    kind: str
    handler: JobHandler
    every_s: float | None = None
    lease_s: float = 60.0
    backoff_s: float = 5.0
    max_backoff_s: float = 900.0

    def backoff(self, failures: int) -> float:
        return float(min(self.max_backoff_s, self.backoff_s * 2 ** max(0, failures - 1)))


class JobRegistry:
    """The job kinds this process knows (a component); workers claim only these kinds."""

    def __init__(self) -> None:
        self._specs: dict[str, JobSpec] = {}

    def register(
        self,
        kind: str,
        handler: JobHandler,
        *,
        every_s: float | None = None,
        lease_s: float = 60.0,
        backoff_s: float = 5.0,
        max_backoff_s: float = 900.0,
    ) -> JobSpec:
        """Register a job kind (its name is a metrics label: a fixed, code-chosen string)."""
        if not kind or len(kind) > 64:
            raise ValueError("a job kind is 1 to 64 characters")
        if kind in self._specs:
            raise ValueError(f"the job kind {kind!r} is registered already")
        if lease_s <= 0 or (every_s is not None and every_s <= 0):
            raise ValueError("lease_s and every_s must be positive")
        spec = JobSpec(kind, handler, every_s, lease_s, backoff_s, max_backoff_s)
        self._specs[kind] = spec
        return spec

    def get(self, kind: str) -> JobSpec:
        return self._specs[kind]

    @property
    def kinds(self) -> list[str]:
        return sorted(self._specs)

    def __iter__(self) -> Iterator[JobSpec]:
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)


def upsert(session: AsyncSession, values: dict[str, object]) -> PgInsert | SqliteInsert:
    """``INSERT`` into ``worker_jobs`` in the session's dialect, which can take an
    ``ON CONFLICT (kind, key)`` clause (the caller adds it)."""
    if session.get_bind().dialect.name == "postgresql":
        return pg_insert(JOBS_TABLE).values(values)
    return sqlite_insert(JOBS_TABLE).values(values)


async def schedule(
    session: AsyncSession,
    kind: str,
    key: str = "",
    *,
    due_at: datetime,
    tenant_id: uuid.UUID | None = None,
) -> None:
    """Make the job ``(kind, key)`` due at ``due_at`` at the latest, in the caller's transaction.

    A job already due earlier keeps its earlier time; a job being run right now is due again at
    ``due_at`` after that run (its result never drops a schedule made while it ran).
    """
    table = JOBS_TABLE.c
    insert = upsert(
        session,
        {
            "id": uuid.uuid4(),
            "kind": kind,
            "key": key,
            "tenant_id": tenant_id,
            "due_at": due_at,
            "attempts": 0,
            "created_at": clock.now(),
        },
    )
    excluded = insert.excluded
    await session.execute(
        insert.on_conflict_do_update(
            index_elements=["kind", "key"],
            set_={
                "due_at": sa.case(
                    (table.holder.is_not(None), excluded.due_at),
                    (excluded.due_at < table.due_at, excluded.due_at),
                    else_=table.due_at,
                )
            },
        )
    )

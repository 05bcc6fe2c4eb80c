"""Fixtures of the worker tests: job rows made due directly, and a PostgreSQL-only URL."""

from __future__ import annotations

import uuid
from datetime import datetime

import pytest
from sqlalchemy import select

from hub.core import clock
from hub.core.db import Database
from hub.core.jobs import schedule
from hub.models import WorkerJob
from tests.support.databases import owner_session


@pytest.fixture
def pg_url(db_url: str) -> str:
    """The PostgreSQL test database (these tests are about ``SKIP LOCKED`` across processes)."""
    if db_url.startswith("sqlite"):
        pytest.skip("PostgreSQL only: several worker processes share one database")
    return db_url


async def make_due(
    db: Database, kind: str, keys: list[str], due_at: datetime | None = None
) -> None:
    async with owner_session(db) as session:
        for key in keys:
            await schedule(session, kind, key, due_at=due_at or clock.now())


async def jobs_left(db: Database) -> list[WorkerJob]:
    async with owner_session(db, write=False) as session:
        return list((await session.execute(select(WorkerJob))).scalars().all())


def keys(n: int) -> list[str]:
    return [f"k{i:03d}-{uuid.uuid4().hex[:4]}" for i in range(n)]

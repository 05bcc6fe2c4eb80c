"""Readiness checks: the database first, then any check another capability registered."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import inspect, text
from sqlalchemy.exc import DBAPIError

from hub.core.db import Database
from hub.core.migrations import known_revisions

__all__ = [
    "NO_SCHEMA",
    "Readiness",
    "ReadinessCheck",
    "check_readiness",
    "schema_migrated",
    "schema_problem",
]

log = logging.getLogger("hub.health")

# A check returns None when ready, else a short message safe to show (no secret, no driver text).
ReadinessCheck = Callable[[Database], Awaitable[str | None]]

PING_TIMEOUT_S = 5.0

#: ``/readyz``'s answer on a database the migrations never ran on
NO_SCHEMA = "database holds no hub schema yet (run `hub db upgrade`)"


_REVISION = text("SELECT version_num FROM alembic_version")


@dataclass(frozen=True)
class Readiness:
    """The checks ``/readyz`` runs after the database ping (each capability registers its own)."""

    checks: tuple[ReadinessCheck, ...] = ()


async def check_readiness(db: Database, checks: Sequence[ReadinessCheck]) -> str | None:
    try:
        async with asyncio.timeout(PING_TIMEOUT_S):
            await db.ping()
    except Exception as exc:
        log.warning("readiness: database unreachable (%s)", type(exc).__name__)
        return "database unreachable"
    try:
        for check in (schema_problem, *checks):
            problem = await check(db)
            if problem is not None:
                return problem
    except DBAPIError as exc:
        # On PostgreSQL a missing table is a plain DBAPIError, which no handler maps to a 503:
        # an unmigrated database answered a 500 here. Say which of the two it is.
        with contextlib.suppress(Exception):
            if not await schema_migrated(db):
                log.warning("readiness: the database holds no hub schema yet")
                return NO_SCHEMA
        log.warning("readiness: database unavailable (%s)", type(exc).__name__)
        return "database unavailable"
    return None


async def schema_problem(db: Database) -> str | None:
    """Not ready while this code's migrations are still to run: none ran, or the schema is at
    an older revision (a replica started before ``hub db upgrade`` ended, or without it). It
    answered 200 there, and then 500 on every route that reads what the missing migration adds
    (an upgrade walk, stop 52: the direct-mode decisions on 0907 under 0908's code). A revision
    this code does not know is a newer one (a replica of the previous version during a rollout,
    or after a rollback): ready, as that version was on it."""
    async with db.session(write=False) as session:  # a missing table raises: no schema
        revision = (await session.execute(_REVISION)).scalar()
    head, known = known_revisions()
    if revision is None:
        log.warning("readiness: the database holds no hub schema yet")
        return NO_SCHEMA
    if revision != head and revision in known:
        log.warning("readiness: the database schema is at %s, this code needs %s", revision, head)
        return f"database schema at {revision}, this code needs {head} (run `hub db upgrade`)"
    return None


async def schema_migrated(db: Database) -> bool:
    """Whether the hub's migrations ran on ``db`` (its Alembic revision is recorded); raises
    when the database cannot be asked (a missing table is an answer, not an error)."""
    async with db.engine.connect() as conn:
        if not await conn.run_sync(lambda sync: inspect(sync).has_table("alembic_version")):
            return False
        found = await conn.execute(text("SELECT version_num FROM alembic_version"))
        return found.first() is not None

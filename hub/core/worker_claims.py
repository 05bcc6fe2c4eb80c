"""Claiming due ``worker_jobs`` rows for a runner of :mod:`hub.core.workers` (DESIGN §11).

One short transaction selects due, unleased rows of the runner's kinds and sets ``holder`` and
``lease_until``: on PostgreSQL through the SECURITY DEFINER function of migration 0401
(``FOR UPDATE SKIP LOCKED``, every tenant's rows), on SQLite with a plain select and update (its
writer lock serialises the claimers). Also the singleton rows of the recurring kinds, and whether
the schema is ready for any of it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa

from hub.core import clock
from hub.core.db import Database
from hub.core.jobs import JOBS_TABLE, JobRegistry, JobSpec, upsert
from hub.core.migrations import known_revisions, revision_of

__all__ = ["Claimed", "claim_due", "insert_recurring", "schema_behind"]

J = JOBS_TABLE.c
_CLAIM_DEFINER = sa.text(
    "SELECT id, kind, key, tenant_id, due_at, attempts"
    " FROM hub_claim_jobs(:kinds, :leases, :now, :lim, :holder)"
).columns(J.id, J.kind, J.key, J.tenant_id, J.due_at, J.attempts)


@dataclass(frozen=True)
class Claimed:
    id: uuid.UUID
    kind: str
    key: str
    tenant_id: uuid.UUID | None
    due_at: datetime
    attempts: int


async def schema_behind(db: Database) -> bool:
    """Whether migrations this code has are still to run on ``db`` (none ran yet, or it is at an
    older revision): a replica may start before its migration job ends. The workers write nothing
    until they ran: on SQLite, where each migration is a transaction of its own that reads before
    it writes, a concurrent writer fails it at once ("database is locked"). A revision this code
    does not know is a newer one (a replica not upgraded yet): not behind."""
    async with db.session(write=False) as session:
        revision = await session.run_sync(lambda sync: revision_of(sync.connection()))
    head, known = known_revisions()
    return revision is None or (revision != head and revision in known)


async def insert_recurring(db: Database, recurring: list[JobSpec]) -> None:
    """Every kind of ``recurring`` has its singleton row (due now when first made).

    The rows are looked for first, with no transaction: a runner retrying this on an SQLite file
    not migrated yet must not take the writer lock each poll, or it would fail ``hub db
    upgrade``'s migration there (a transaction that has read does not wait for the lock to write:
    "database is locked" at once)."""
    kinds = [spec.kind for spec in recurring]
    async with db.session(write=False) as session:
        query = sa.select(J.kind).where(J.kind.in_(kinds)).where(J.key == "")
        present = set((await session.execute(query)).scalars())
    missing = [spec for spec in recurring if spec.kind not in present]
    if not missing:
        return
    async with db.session(write=True) as session:
        for spec in missing:
            values = {
                "id": uuid.uuid4(),
                "kind": spec.kind,
                "key": "",
                "due_at": clock.now(),
                "attempts": 0,
                "created_at": clock.now(),
            }
            await session.execute(upsert(session, values).on_conflict_do_nothing())


async def claim_due(
    db: Database, registry: JobRegistry, holder: str, now: datetime, limit: int
) -> list[Claimed]:
    """Claim up to ``limit`` of ``registry``'s jobs due at ``now`` for ``holder``."""
    if not db.is_sqlite:
        return await _claim_definer(db, registry, holder, now, limit)
    return await _claim_sqlite(db, registry, holder, now, limit)


async def _claim_definer(
    db: Database, registry: JobRegistry, holder: str, now: datetime, limit: int
) -> list[Claimed]:
    """PostgreSQL: every tenant's due rows, through the SECURITY DEFINER function of
    migration 0401 (row-level security would show this session none of them)."""
    kinds = registry.kinds
    leases = [float(registry.get(kind).lease_s) for kind in kinds]
    async with db.session(write=True) as session:
        rows = (
            await session.execute(
                _CLAIM_DEFINER,
                {"kinds": kinds, "leases": leases, "now": now, "lim": limit, "holder": holder},
            )
        ).all()
    return sorted((Claimed(*row) for row in rows), key=lambda job: job.due_at)


async def _claim_sqlite(
    db: Database, registry: JobRegistry, holder: str, now: datetime, limit: int
) -> list[Claimed]:
    async with db.session(write=True) as session:
        query = (
            sa.select(J.id, J.kind, J.key, J.tenant_id, J.due_at, J.attempts)
            .where(J.kind.in_(registry.kinds))
            .where(J.due_at <= now)
            .where(sa.or_(J.lease_until.is_(None), J.lease_until < now))
            .order_by(J.due_at)
            .limit(limit)
            .with_for_update(skip_locked=True)  # PostgreSQL; SQLite's writer lock serialises
        )
        rows = (await session.execute(query)).all()
        claimed = []
        for row in rows:
            spec = registry.get(row.kind)
            await session.execute(
                sa.update(JOBS_TABLE)
                .where(J.id == row.id)
                .values(holder=holder, lease_until=now + timedelta(seconds=spec.lease_s))
            )
            claimed.append(Claimed(*row))
    return claimed

"""The audit hash chain (DESIGN §11): one unbroken chain per tenant and for the platform, even
with concurrent writers in two processes; any row changed or deleted in the database (as its
owner, past the append-only trigger) is found by verify, which names the first bad row."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import select, text

from hub.audit.actions import Action
from hub.audit.chain import GENESIS, link_hash
from hub.audit.service import record, verify_chain
from hub.core.db import Database
from hub.core.tenancy import TenantId
from hub.models import AuditEvent
from tests.support.databases import as_owner, owner_session
from tests.support.factories import make_tenant, scope_of

ROOT = Path(__file__).resolve().parents[2]


async def _write(db: Database, scope: TenantId | None, n: int, **details: object) -> None:
    for i in range(n):
        async with owner_session(db) as session:
            await record(
                session,
                tenant_id=scope,
                actor_id=None,
                action=Action.GRANT_CREATE,
                resource=f"grant:{i}",
                request_id=f"req-{i}",
                details={"i": i, **details},
            )


async def _rows(db: Database, scope: TenantId | None) -> list[AuditEvent]:
    query = select(AuditEvent).order_by(AuditEvent.seq)
    query = query.where(
        AuditEvent.tenant_id.is_(None) if scope is None else AuditEvent.tenant_id == scope.value
    )
    async with owner_session(db, write=False) as session:
        return list((await session.execute(query)).scalars().all())


@contextlib.asynccontextmanager
async def _as_owner(db: Database) -> AsyncIterator[None]:
    """Let this test change audit rows as the owner would: the append-only trigger off."""
    postgres = not db.is_sqlite
    if postgres:
        async with as_owner(db.engine) as owner, owner.begin() as conn:
            await conn.execute(text("ALTER TABLE audit_events DISABLE TRIGGER USER"))
    try:
        yield
    finally:
        if postgres:
            async with as_owner(db.engine) as owner, owner.begin() as conn:
                await conn.execute(text("ALTER TABLE audit_events ENABLE TRIGGER USER"))


async def _tamper(db: Database, statement: str, **params: object) -> None:
    async with _as_owner(db), as_owner(db.engine) as owner, owner.begin() as conn:
        await conn.execute(text(statement), params)


@pytest.fixture
async def tenant(database: Database) -> TenantId:
    return scope_of((await make_tenant(database)).id)


async def test_each_tenant_and_the_platform_get_an_unbroken_chain(
    database: Database, tenant: TenantId
) -> None:
    other = scope_of((await make_tenant(database)).id)
    await _write(database, tenant, 5, ratio=0.1, whole=12.0, big=1e16, neg=-0.0)
    await _write(database, other, 3)
    await _write(database, None, 2)
    rows = await _rows(database, tenant)
    assert [r.seq for r in rows] == [1, 2, 3, 4, 5]
    assert rows[0].prev_hash == GENESIS
    assert all(b.prev_hash == a.hash for a, b in itertools.pairwise(rows))
    assert all(link_hash(r.prev_hash, r) == r.hash for r in rows)  # floats read back the same
    for scope, count in ((tenant, 5), (other, 3), (None, 2)):
        result = await verify_chain(database, scope)
        assert (result.ok, result.checked, result.first_bad_id) == (True, count, None)


async def test_the_append_only_trigger_still_refuses_changes(
    database: Database, tenant: TenantId
) -> None:
    if database.is_sqlite:
        pytest.skip("the trigger is PostgreSQL's")
    await _write(database, tenant, 1)
    with pytest.raises(Exception, match="append-only"):  # even the owner's (RLS aside)
        async with as_owner(database.engine) as owner, owner.begin() as conn:
            await conn.execute(text("UPDATE audit_events SET resource = 'x'"))


async def test_a_changed_row_is_named(database: Database, tenant: TenantId) -> None:
    await _write(database, tenant, 6)
    rows = await _rows(database, tenant)
    await _tamper(
        database,
        "UPDATE audit_events SET details = :d WHERE id = :id",
        d='{"i": 99}',
        id=rows[2].id if not database.is_sqlite else rows[2].id.hex,
    )
    result = await verify_chain(database, tenant)
    assert (result.ok, result.first_bad_id, result.reason) == (False, rows[2].id, "hash_mismatch")
    assert result.checked == 3


async def test_a_deleted_row_is_found_at_the_row_after_it(
    database: Database, tenant: TenantId
) -> None:
    await _write(database, tenant, 6)
    rows = await _rows(database, tenant)
    await _tamper(
        database,
        "DELETE FROM audit_events WHERE id = :id",
        id=rows[3].id if not database.is_sqlite else rows[3].id.hex,
    )
    result = await verify_chain(database, tenant)
    assert (result.ok, result.first_bad_id, result.reason) == (False, rows[4].id, "sequence_gap")


async def test_rows_cut_from_the_end_are_found(database: Database, tenant: TenantId) -> None:
    await _write(database, tenant, 4)
    rows = await _rows(database, tenant)
    await _tamper(
        database,
        "DELETE FROM audit_events WHERE id = :id",
        id=rows[3].id if not database.is_sqlite else rows[3].id.hex,
    )
    result = await verify_chain(database, tenant)
    assert (result.ok, result.first_bad_id, result.reason) == (False, rows[3].id, "missing_rows")


async def test_a_relinked_row_is_found(database: Database, tenant: TenantId) -> None:
    """Changing a row and recomputing its own hash still breaks the next row's link."""
    await _write(database, tenant, 4)
    rows = await _rows(database, tenant)
    forged = rows[1]
    forged.details = {"i": 42}
    new_hash = link_hash(forged.prev_hash, forged)
    await _tamper(
        database,
        "UPDATE audit_events SET details = :d, hash = :h WHERE id = :id",
        d='{"i": 42}',
        h=new_hash,
        id=forged.id if not database.is_sqlite else forged.id.hex,
    )
    result = await verify_chain(database, tenant)
    assert (result.ok, result.first_bad_id, result.reason) == (False, rows[2].id, "broken_link")


async def test_concurrent_writers_in_two_processes_never_fork_a_chain(
    db_url: str, database: Database, tenant: TenantId
) -> None:
    if db_url.startswith("sqlite"):
        pytest.skip("PostgreSQL: writers on two replicas, each with its own connections")
    count = 40

    async def writer(mode: str) -> int:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.audit.writer_process",
            db_url,
            str(tenant.value),
            str(count),
            mode,
            cwd=ROOT,
        )
        return await proc.wait()

    # two locking writers and one audit writer (one statement an event, optimistic on the head),
    # and this process writes too, meanwhile
    statuses, _ = await asyncio.gather(
        asyncio.gather(writer("record"), writer("record"), writer("writer")),
        _write(database, tenant, 10),
    )
    assert list(statuses) == [0, 0, 0]
    for scope, expected in ((tenant, 3 * count + 10), (None, 3 * count)):
        result = await verify_chain(database, scope)
        assert (result.ok, result.checked) == (True, expected), result
        rows = await _rows(database, scope)
        assert [r.seq for r in rows] == list(range(1, expected + 1))
        assert len({r.prev_hash for r in rows}) == expected  # no two rows share a parent


async def test_an_unknown_action_is_refused(database: Database, tenant: TenantId) -> None:
    async with owner_session(database) as session:
        with pytest.raises(ValueError, match="not a valid Action"):
            await record(
                session,
                tenant_id=tenant,
                actor_id=None,
                action="tenant.explode",  # type: ignore[arg-type]
                resource="x",
                request_id=None,
            )
    assert await _rows(database, tenant) == []

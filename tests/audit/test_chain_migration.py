"""Migration 0301 chains the audit rows that existed before it, per tenant and for the platform,
in (at, id) order; the result verifies."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from hub.audit.service import verify_chain
from hub.core import clock
from hub.core.db import Database
from hub.core.migrations import upgrade
from tests.support.databases import in_thread, scratch_url
from tests.support.factories import scope_of


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_existing_rows_are_chained(backend: str, tmp_path: Path) -> None:
    url = scratch_url(backend, tmp_path, "chain")
    in_thread(upgrade, url, "0007")
    db = Database.from_url(url)
    tenants = [uuid.uuid4(), uuid.uuid4()]
    start = clock.now()
    try:
        async with db.engine.begin() as conn:
            for tenant in tenants:
                await conn.execute(
                    text(
                        "INSERT INTO tenants (id, slug, name, status, created_at) "
                        "VALUES (:id, :slug, 'T', 'active', :at)"
                    ),
                    {"id": _id(db, tenant), "slug": f"t-{tenant.hex[:8]}", "at": start},
                )
            for i, owner in enumerate([*tenants, None] * 3):
                await conn.execute(
                    text(
                        "INSERT INTO audit_events (id, tenant_id, at, actor_id, action, resource,"
                        " outcome, request_id, details) VALUES (:id, :tenant, :at, NULL,"
                        " 'server.create', 'server:x', 'success', NULL, :details)"
                    ),
                    {
                        "id": _id(db, uuid.uuid4()),
                        "tenant": None if owner is None else _id(db, owner),
                        "at": _at(db, start + timedelta(seconds=10 - i)),
                        "details": f'{{"i": {i}, "f": 1.5}}',
                    },
                )
        await db.dispose()
        in_thread(upgrade, url, "head")
        db = Database.from_url(url)
        for scope in [*(scope_of(t) for t in tenants), None]:
            result = await verify_chain(db, scope)
            assert (result.ok, result.checked) == (True, 3), result
    finally:
        await db.dispose()


def _id(db: Database, value: uuid.UUID) -> object:
    return value.hex if db.is_sqlite else value


def _at(db: Database, value: object) -> object:
    # SQLite's DateTime stores naive UTC text; the raw statement binds what the type would
    return value.replace(tzinfo=None) if db.is_sqlite else value  # type: ignore[attr-defined]

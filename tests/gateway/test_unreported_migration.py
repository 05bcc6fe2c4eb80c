"""Migration 0908 (stop 51): ``decision_outcomes`` gains ``state`` and ``call``; the rows already
there are reported outcomes; downgrade takes both columns away and keeps the rows."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from hub.core.db import create_engine
from hub.core.migrations import downgrade, upgrade
from tests.support.databases import in_thread, scratch_url

_TS = sa.DateTime(timezone=True)
_TENANTS = sa.table(
    "tenants",
    *(sa.column(c) for c in ("slug", "name", "status")),
    sa.column("id", sa.Uuid()),
    sa.column("created_at", _TS),
)
_OUTCOMES = sa.table(
    "decision_outcomes",
    sa.column("id", sa.Uuid()),
    sa.column("tenant_id", sa.Uuid()),
    sa.column("decision_sha256", sa.String()),
    sa.column("expires_at", _TS),
    sa.column("created_at", _TS),
)


async def _columns(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            found = await conn.run_sync(lambda c: sa.inspect(c).get_columns("decision_outcomes"))
    finally:
        await engine.dispose()
    return {column["name"] for column in found}


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_0908_keeps_reported_rows_and_downgrades(backend: str, tmp_path: Path) -> None:
    url = scratch_url(backend, tmp_path, "migrations")
    in_thread(upgrade, url, "0907")
    tenant, row = uuid.uuid4(), uuid.uuid4()
    now = datetime.now(UTC)
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                _TENANTS.insert().values(
                    id=tenant, slug="m", name="M", status="active", created_at=now
                )
            )
            await conn.execute(
                _OUTCOMES.insert().values(
                    id=row,
                    tenant_id=tenant,
                    decision_sha256="a" * 64,
                    expires_at=now,
                    created_at=now,
                )
            )
        in_thread(upgrade, url, "0908")
        async with engine.connect() as conn:
            upgraded = (
                await conn.execute(sa.text("SELECT id, state, call FROM decision_outcomes"))
            ).all()
        in_thread(downgrade, url, "0907")
        columns = await _columns(url)
        async with engine.connect() as conn:
            kept = (await conn.execute(sa.select(_OUTCOMES.c.id))).scalars().all()
    finally:
        await engine.dispose()
    assert [(uuid.UUID(str(i)), state, call) for i, state, call in upgraded] == [
        (row, "reported", None)
    ]
    assert "state" not in columns
    assert "call" not in columns
    assert [uuid.UUID(str(i)) for i in kept] == [row]

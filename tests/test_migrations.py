"""Migrations build the schema from empty to head and back, on both backends, without drift."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import inspect
from sqlalchemy.sql.expression import TableClause

from hub.core.db import create_engine
from hub.core.migrations import downgrade
from tests.support.databases import (
    in_thread,
    migrate,
    scratch_url,
    table_names,
)


async def _tables(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            names = await conn.run_sync(lambda c: inspect(c).get_table_names())
    finally:
        await engine.dispose()
    return set(names) - {"alembic_version"}


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_upgrade_to_head_then_downgrade_to_base(backend: str, tmp_path: Path) -> None:
    url = scratch_url(backend, tmp_path, "migrations")
    migrate(url)
    assert await _tables(url) == set(table_names())
    in_thread(downgrade, url, "base")
    assert await _tables(url) == set()
    migrate(url)
    assert await _tables(url) == set(table_names())


def test_two_upgrades_at_once_run_one_after_the_other(tmp_path: Path) -> None:
    """An SRE's walk (stop 50): two ``hub db upgrade`` at once both wrote the schema, and one
    failed with a traceback. The migration lock serialises them: both succeed."""
    import os
    import subprocess
    import sys

    from hub.core.migrations import current_revision, head_revision

    url = scratch_url("postgresql", tmp_path, "migrations")
    env = {**os.environ, "HUB_DATABASE_URL": url, "HUB_DATA_DIR": str(tmp_path)}
    command = [str(Path(sys.executable).parent / "hub"), "db", "upgrade"]
    runs = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=120)[0].decode() for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    assert current_revision(url) == head_revision()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_no_model_drift(backend: str, tmp_path: Path) -> None:
    from alembic import command

    from hub.core.migrations import alembic_config

    url = scratch_url(backend, tmp_path, "migrations")
    migrate(url)
    in_thread(command.check, alembic_config(url))


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_0006_gives_existing_operators_and_deployers_their_new_template_grants(
    backend: str, tmp_path: Path
) -> None:
    """Operators get ``tool:*`` call; deployers ``credential:*`` use and ``principal:*`` read; a
    principal's own grant for the same (resource, action) is kept, whatever its effect."""
    import uuid
    from datetime import UTC, datetime

    import sqlalchemy as sa

    from hub.core.migrations import upgrade

    tenants = sa.table(
        "tenants",
        *(sa.column(c) for c in ("slug", "name", "status")),
        sa.column("id", sa.Uuid()),
        sa.column("created_at", sa.DateTime(timezone=True)),
    )
    principals = sa.table(
        "principals",
        *(sa.column(c) for c in ("kind", "name", "role", "is_platform_admin", "grants_version")),
        sa.column("id", sa.Uuid()),
        sa.column("tenant_id", sa.Uuid()),
        sa.column("created_at", sa.DateTime(timezone=True)),
    )
    grants = sa.table(
        "grants",
        *(sa.column(c) for c in ("resource", "action", "effect")),
        sa.column("conditions", sa.JSON()),
        sa.column("id", sa.Uuid()),
        sa.column("tenant_id", sa.Uuid()),
        sa.column("principal_id", sa.Uuid()),
        sa.column("created_at", sa.DateTime(timezone=True)),
    )
    url = scratch_url(backend, tmp_path, "migrations")
    in_thread(upgrade, url, "0005")
    tenant, operator, deployer = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    now = datetime.now(UTC)
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                tenants.insert().values(
                    id=tenant, slug="m", name="M", status="active", created_at=now
                )
            )
            for pid, role in ((operator, "operator"), (deployer, "deployer")):
                await conn.execute(
                    principals.insert().values(
                        id=pid,
                        tenant_id=tenant,
                        kind="user",
                        name=role,
                        role=role,
                        is_platform_admin=False,
                        grants_version=3,
                        created_at=now,
                    )
                )
            await conn.execute(  # a deliberate deny the migration must not overwrite
                grants.insert().values(
                    id=uuid.uuid4(),
                    tenant_id=tenant,
                    principal_id=deployer,
                    resource="principal:*",
                    action="read",
                    effect="deny",
                    conditions={},
                    created_at=now,
                )
            )
        in_thread(upgrade, url, "0006")
        async with engine.connect() as conn:
            rows = (
                await conn.execute(
                    sa.select(
                        grants.c.principal_id, grants.c.resource, grants.c.action, grants.c.effect
                    )
                )
            ).all()
            versions = dict(
                (await conn.execute(sa.select(principals.c.id, principals.c.grants_version))).all()
            )
    finally:
        await engine.dispose()
    held = {(uuid.UUID(str(p)), r, a, e) for p, r, a, e in rows}
    assert held == {
        (operator, "tool:*", "call", "allow"),
        (deployer, "credential:*", "use", "allow"),
        (deployer, "principal:*", "read", "deny"),
    }
    assert {uuid.UUID(str(k)): v for k, v in versions.items()} == {operator: 4, deployer: 4}


def _data_tables() -> tuple[TableClause, TableClause]:
    import sqlalchemy as sa

    tenants = sa.table(
        "tenants",
        *(sa.column(c) for c in ("slug", "name", "status")),
        sa.column("id", sa.Uuid()),
        sa.column("created_at", sa.DateTime(timezone=True)),
    )
    credentials = sa.table(
        "credentials",
        *(sa.column(c) for c in ("name", "type", "status")),
        sa.column("id", sa.Uuid()),
        sa.column("tenant_id", sa.Uuid()),
        sa.column("metadata", sa.JSON()),
        sa.column("version", sa.Integer()),
        sa.column("created_at", sa.DateTime(timezone=True)),
        sa.column("updated_at", sa.DateTime(timezone=True)),
    )
    return tenants, credentials


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_0201_renames_uuid_shaped_slugs_and_0202_closes_credential_types(
    backend: str, tmp_path: Path
) -> None:
    """0201: a slug that parses as a UUID becomes ``t-<hex>`` (``-2`` when that is taken); others
    stay. 0202: a credential type outside api_key/oauth_token/secret becomes ``secret`` with the
    old type in ``metadata.legacy_type`` and its version moved; downgrade restores the types."""
    import uuid
    from datetime import UTC, datetime

    import sqlalchemy as sa

    from hub.core.migrations import upgrade

    tenants, credentials = _data_tables()
    url = scratch_url(backend, tmp_path, "migrations")
    in_thread(upgrade, url, "0007")
    hexed = "7c9e6679742540de944be07fc1f90ae7"
    slugs = {
        uuid.uuid4(): "7c9e6679-7425-40de-944b-e07fc1f90ae7",
        uuid.uuid4(): f"t-{hexed}",  # already the first choice: the rename takes "-2"
        uuid.uuid4(): "acme",
    }
    now = datetime.now(UTC)
    tenant = next(iter(slugs))
    kinds = {uuid.uuid4(): kind for kind in ("apikey", "password", "api_key", "secret")}
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            for tid, slug in slugs.items():
                await conn.execute(
                    tenants.insert().values(
                        id=tid, slug=slug, name="T", status="active", created_at=now
                    )
                )
            for cid, kind in kinds.items():
                await conn.execute(
                    credentials.insert().values(
                        id=cid,
                        tenant_id=tenant,
                        name=kind,
                        type=kind,
                        status="active",
                        metadata={"note": "kept"},
                        version=3,
                        created_at=now,
                        updated_at=now,
                    )
                )
        in_thread(upgrade, url, "0202")
        async with engine.connect() as conn:
            renamed = dict((await conn.execute(sa.select(tenants.c.id, tenants.c.slug))).all())
            rows = {
                uuid.UUID(str(r.id)): r for r in (await conn.execute(sa.select(credentials))).all()
            }
        in_thread(downgrade, url, "0201")
        async with engine.connect() as conn:
            restored = dict(
                (await conn.execute(sa.select(credentials.c.id, credentials.c.type))).all()
            )
    finally:
        await engine.dispose()
    assert {uuid.UUID(str(k)): v for k, v in renamed.items()} == {
        **slugs,
        tenant: f"t-{hexed}-2",
    }
    by_kind = {kinds[cid]: row for cid, row in rows.items()}
    assert {k: r.type for k, r in by_kind.items()} == {
        "apikey": "secret",
        "password": "secret",
        "api_key": "api_key",
        "secret": "secret",
    }
    assert by_kind["apikey"].metadata == {"note": "kept", "legacy_type": "apikey"}
    assert (by_kind["apikey"].version, by_kind["api_key"].version) == (4, 3)
    assert by_kind["secret"].metadata == {"note": "kept"}
    assert {kinds[uuid.UUID(str(k))]: v for k, v in restored.items()} == {
        "apikey": "apikey",
        "password": "password",
        "api_key": "api_key",
        "secret": "secret",
    }

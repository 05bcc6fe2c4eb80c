"""Row-level security on PostgreSQL (DESIGN §11, §15): the backstop under the queries' scoping.

The guard: every table with a ``tenant_id`` column has RLS enabled and forced with the
``tenant_scope`` policy (a migration adding a tenant table must call
:func:`hub.core.rls_ddl.enable_tenant_rls`). Then, as the app's non-owner role: a query that
forgets its tenant scope returns nothing, an insert into another tenant fails, the platform's
rows need the platform's scope. The reads before a tenant is known go through ``SECURITY
DEFINER`` functions nobody else may call: ``test_rls_definers.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy import func, select, text, update
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection

from hub.core import clock, rls
from hub.core.db import Database, create_engine
from hub.core.migrations import grant_statements
from hub.core.rls_ddl import POLICY_NAME, SCOPE_EXPR, tenant_rls_sql
from hub.core.settings import Settings
from hub.models import ApiKey, Principal, Server
from hub.models.base import Base
from tests.support.databases import (
    APP_ROLE,
    app_url,
    as_owner,
    ensure_app_role,
    fresh_postgres,
    owner_session,
    postgres_required,
    postgres_url,
    run_sync,
)
from tests.support.factories import (
    make_platform_admin,
    make_tenant,
    scope_of,
)
from tests.support.rls_world import own_engine, two_tenants

#: (table, RLS enabled, forced, the policy's USING and WITH CHECK) of every tenant table
_PROTECTION = text(
    """
    SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,
           p.polname, pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid)
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
    LEFT JOIN pg_policy p ON p.polrelid = c.oid AND p.polname = :policy
    WHERE c.relkind = 'r' AND EXISTS (
        SELECT 1 FROM information_schema.columns col
        WHERE col.table_schema = 'public' AND col.table_name = c.relname
          AND col.column_name = 'tenant_id'
    )
    ORDER BY c.relname
    """
)


async def unprotected_tables(conn: AsyncConnection) -> dict[str, str]:
    """Every table with a ``tenant_id`` column that lacks the tenant policy, and what it lacks."""
    rows = (await conn.execute(_PROTECTION, {"policy": POLICY_NAME})).all()
    problems: dict[str, str] = {}
    for name, enabled, forced, policy, using, check in rows:
        if not enabled:
            problems[name] = "row-level security is not enabled"
        elif not forced:
            problems[name] = "row-level security is not forced"
        elif policy is None:
            problems[name] = f"no {POLICY_NAME} policy"
        elif "current_setting('hub.tenant_id'" not in (using or "") or using != check:
            problems[name] = f"the policy is not the tenant scope: {using!r} / {check!r}"
    return problems


@pytest.fixture
def pg(database: Database) -> Database:
    if database.is_sqlite:
        pytest.skip("row-level security is PostgreSQL's")
    return database


async def test_every_tenant_table_is_under_the_tenant_policy(pg: Database) -> None:
    async with as_owner(pg.engine) as owner, owner.connect() as conn:
        assert await unprotected_tables(conn) == {}
        names = {row[0] for row in (await conn.execute(_PROTECTION, {"policy": POLICY_NAME}))}
    # the models agree: every model table with a tenant_id is among those checked
    modelled = {t.name for t in Base.metadata.sorted_tables if "tenant_id" in t.c}
    assert modelled <= names
    assert len(modelled) >= 15


async def test_the_guard_names_a_tenant_table_without_the_policy(pg: Database) -> None:
    """The guard is not vacuous: a new tenant table is caught until the helper's DDL is run."""
    table = f"rls_probe_{uuid.uuid4().hex[:8]}"
    async with as_owner(pg.engine) as owner:
        try:
            async with owner.begin() as conn:
                await conn.execute(text(f"CREATE TABLE {table} (id uuid, tenant_id uuid)"))
            async with owner.connect() as conn:
                assert (await unprotected_tables(conn)).get(table) == (
                    "row-level security is not enabled"
                )
            async with owner.begin() as conn:
                for statement in tenant_rls_sql(table):
                    await conn.execute(text(statement))
            async with owner.connect() as conn:
                assert table not in await unprotected_tables(conn)
        finally:
            async with owner.begin() as conn:
                await conn.execute(text(f"DROP TABLE IF EXISTS {table}"))


async def test_the_app_role_owns_nothing_and_bypasses_nothing(pg: Database) -> None:
    async with pg.engine.connect() as conn:
        role = (
            await conn.execute(
                text(
                    "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles "
                    "WHERE rolname = current_user"
                )
            )
        ).one()
        owned = (
            await conn.execute(
                text(
                    "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = 'public' AND pg_get_userbyid(c.relowner) = current_user"
                )
            )
        ).scalar_one()
    assert tuple(role) == (APP_ROLE, False, False)
    assert owned == 0


async def test_a_query_that_forgets_its_scope_returns_nothing(pg: Database) -> None:
    a, b = await two_tenants(pg)
    async with pg.session(write=False) as session:  # no scope at all
        assert (await session.execute(select(Principal))).scalars().all() == []
        assert (await session.execute(select(func.count()).select_from(Server))).scalar() == 0
    with rls.scope(scope_of(a)):
        async with pg.session(write=False) as session:  # A's scope, no WHERE tenant_id
            principals = (await session.execute(select(Principal))).scalars().all()
            servers = (await session.execute(select(Server))).scalars().all()
    assert {p.tenant_id for p in principals} == {a}
    assert [s.tenant_id for s in servers] == [a]
    async with owner_session(pg, write=False) as session:  # both are there
        everyone = (await session.execute(select(Principal.tenant_id))).scalars().all()
    assert set(everyone) == {a, b}


async def test_an_insert_into_another_tenant_fails(pg: Database) -> None:
    a, b = await two_tenants(pg)
    with rls.scope(scope_of(a)), pytest.raises(DBAPIError, match="row-level security"):
        async with pg.session() as session:
            session.add(
                Server(
                    id=uuid.uuid4(),
                    tenant_id=b,
                    handle="smuggled",
                    url="https://mcp.example.com/mcp",
                    created_at=clock.now(),
                    updated_at=clock.now(),
                )
            )
    with rls.scope(scope_of(a)):
        async with pg.session() as session:  # another tenant's rows cannot be changed either
            changed = await session.execute(
                update(Server).where(Server.tenant_id == b).values(handle="taken")
            )
            assert changed.rowcount == 0  # type: ignore[attr-defined]
    async with owner_session(pg, write=False) as session:
        handles = await session.execute(select(Server.handle).where(Server.tenant_id == b))
        assert handles.scalars().all() == ["files"]


async def test_a_transaction_cannot_move_a_row_to_another_tenant(pg: Database) -> None:
    a, b = await two_tenants(pg)
    with rls.scope(scope_of(a)), pytest.raises(DBAPIError, match="row-level security"):
        async with pg.session() as session:
            await session.execute(update(Server).where(Server.tenant_id == a).values(tenant_id=b))


async def test_the_platform_rows_need_the_platform_scope(pg: Database) -> None:
    admin = await make_platform_admin(pg)
    tenant = await make_tenant(pg)
    for scope in (None, scope_of(tenant.id)):
        with rls.scope(scope):
            async with pg.session(write=False) as session:
                assert (await session.execute(select(ApiKey))).scalars().all() == []
    with rls.scope(rls.PLATFORM):
        async with pg.session(write=False) as session:
            keys = (await session.execute(select(ApiKey.principal_id))).scalars().all()
    assert keys == [admin.principal_id]


async def test_a_scope_set_in_a_transaction_ends_with_it(pg: Database) -> None:
    """``set_config(…, true)``: the next transaction on the same connection sees no rows."""
    a, _b = await two_tenants(pg)
    async with own_engine(pg) as engine, engine.connect() as conn:
        async with conn.begin():
            await conn.execute(text("SELECT set_config('hub.tenant_id', :v, true)"), {"v": str(a)})
            inside = (await conn.execute(select(func.count()).select_from(Server))).scalar()
        async with conn.begin():
            after = (await conn.execute(select(func.count()).select_from(Server))).scalar()
    assert (inside, after) == (1, 0)


async def test_requests_of_two_tenants_see_their_own_rows(pg: Database) -> None:
    """A scoped read, then another tenant's, on the app's pooled connections: none leaks."""
    a, b = await two_tenants(pg)
    for tenant in (a, b, a, b):
        with rls.scope(scope_of(tenant)):
            for write in (False, True):
                async with pg.session(write=write) as session:
                    seen = (await session.execute(select(Server.tenant_id))).scalars().all()
                assert seen == [tenant]
    async with pg.session(write=False) as session:  # and unscoped again: nothing
        assert (await session.execute(select(Server.tenant_id))).scalars().all() == []


def test_the_policy_reads_the_transaction_setting() -> None:
    statements = tenant_rls_sql("widgets")
    assert statements[:2] == [
        'ALTER TABLE "widgets" ENABLE ROW LEVEL SECURITY',
        'ALTER TABLE "widgets" FORCE ROW LEVEL SECURITY',
    ]
    assert SCOPE_EXPR == "NULLIF(current_setting('hub.tenant_id', true), '')::uuid"
    assert f"USING (tenant_id = {SCOPE_EXPR}" in statements[2]
    with pytest.raises(ValueError, match="plain table name"):
        tenant_rls_sql('x"; DROP TABLE tenants; --')


def test_the_grants_name_only_a_plain_role() -> None:
    assert "GRANT USAGE ON SCHEMA public TO hub_app" in grant_statements("hub_app")
    with pytest.raises(ValueError, match="plain lower-case role name"):
        grant_statements("hub; DROP TABLE tenants")


def test_migrations_run_on_the_owner_url() -> None:
    app = "postgresql+asyncpg://hub_app@db/hub"
    owner = "postgresql+asyncpg://hub_owner@db/hub"
    assert Settings(database_url=app).migration_url == app
    assert Settings(database_url=app, database_owner_url=owner).migration_url == owner


def test_hub_db_upgrade_migrates_as_the_owner_and_grants_the_app_role(tmp_path: Path) -> None:
    """The CLI as an operator runs it: the owner's URL migrates, the app's role is granted."""
    owner = postgres_url("_roles")
    try:
        fresh_postgres(owner)
        ensure_app_role(owner)
    except (OSError, TimeoutError) as exc:
        if postgres_required():
            pytest.fail(f"PostgreSQL is required (HUB_TEST_REQUIRE_POSTGRES) but: {exc!r}")
        pytest.skip(f"PostgreSQL unreachable: {exc!r}")
    app = app_url(owner)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HUB_")}
    env.update(
        HUB_DATABASE_URL=app,
        HUB_DATABASE_OWNER_URL=owner,
        HUB_DATABASE_APP_ROLE=APP_ROLE,
        HUB_DATA_DIR=str(tmp_path / ".hub"),
    )
    done = subprocess.run(
        [sys.executable, "-m", "hub.cli", "db", "upgrade"],
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]

    async def privileges() -> tuple[object, ...]:
        engine = create_engine(app, pool_size=1)
        try:
            async with engine.connect() as conn:
                row = (
                    await conn.execute(
                        text(
                            "SELECT has_table_privilege('principals', 'SELECT, INSERT, UPDATE'),"
                            " has_table_privilege('alembic_version', 'UPDATE'),"
                            " (SELECT count(*) FROM principals),"
                            " pg_get_userbyid((SELECT relowner FROM pg_class"
                            "  WHERE relname = 'principals')) <> current_user"
                        )
                    )
                ).one()
                return tuple(row)
        finally:
            await engine.dispose()

    seen: list[tuple[object, ...]] = []

    async def read() -> None:
        seen.append(await privileges())

    run_sync(read)
    assert seen == [(True, False, 0, True)]

"""Test databases: one migrated SQLite file and one PostgreSQL database per test worker.

PostgreSQL comes from ``HUB_TEST_DATABASE_URL`` or the local server on 127.0.0.1:5432. When it
is unreachable its tests are skipped, unless ``HUB_TEST_REQUIRE_POSTGRES`` is set (CI), in
which case they fail. Databases are built by running the migrations, never by ``create_all``.

Row-level security is on for the whole suite on PostgreSQL: the migrations run as the owner (the
URL above, a superuser here) and the app, and every test's ``database``, connect as
:data:`APP_ROLE`, a non-owner role made here (trust authentication on 127.0.0.1) and granted what
``hub db upgrade`` grants ``HUB_DATABASE_APP_ROLE``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from hub.core.db import Database, create_engine
from hub.core.migrations import grant_app_role, upgrade
from hub.models import Base

DEFAULT_PG_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/hub_test"
#: The app's role in the tests: no superuser, no BYPASSRLS, owns nothing.
APP_ROLE = "hub_test_app"


def postgres_required() -> bool:
    return os.environ.get("HUB_TEST_REQUIRE_POSTGRES", "") not in ("", "0", "false")


def worker_id() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def postgres_url(suffix: str = "") -> str:
    """The URL of this worker's PostgreSQL test database (the name gets the worker id)."""
    base = make_url(os.environ.get("HUB_TEST_DATABASE_URL", DEFAULT_PG_URL))
    extra = os.environ.get("HUB_TEST_DB_SUFFIX", "")
    name = f"{base.database or 'hub_test'}_{worker_id()}{extra}{suffix}"
    return base.set(database=name).render_as_string(hide_password=False)


def _asyncpg_dsn(url: str, database: str) -> str:
    u = make_url(url).set(drivername="postgresql", database=database)
    return u.render_as_string(hide_password=False)


def in_thread(fn: Callable[..., object], *args: object) -> None:
    """Call ``fn(*args)`` in a fresh thread and wait, re-raising what it raised: Alembic's env.py
    and :func:`asyncio.run` each run an event loop of their own, never the test's."""
    error: list[BaseException] = []

    def target() -> None:
        try:
            fn(*args)
        except BaseException as exc:
            error.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if error:
        raise error[0]


def run_sync(coro_factory: Callable[[], Coroutine[Any, Any, object]]) -> None:
    """Run a coroutine in a fresh thread with its own loop (no running loop may be reused)."""
    in_thread(lambda: asyncio.run(coro_factory()))


async def _prepare_postgres(url: str) -> None:
    name = make_url(url).database
    assert name is not None
    admin = await asyncpg.connect(_asyncpg_dsn(url, "postgres"), timeout=5)
    try:
        exists = await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name)
        if not exists:
            await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    conn = await asyncpg.connect(_asyncpg_dsn(url, name), timeout=5)
    try:
        await conn.execute("DROP SCHEMA IF EXISTS public CASCADE; CREATE SCHEMA public;")
    finally:
        await conn.close()


def fresh_postgres(url: str) -> None:
    """Create the database if needed and empty it (raises OSError-like errors if unreachable)."""
    run_sync(lambda: _prepare_postgres(url))


async def settle_postgres(url: str) -> None:
    """``VACUUM ANALYZE`` and ``CHECKPOINT`` the database ``url`` names, as its owner: after a
    schema was dropped, migrated and seeded, autovacuum otherwise does that work a minute later,
    in the middle of a benchmark's runs (measured: PostgreSQL busy during the bare route's runs,
    and the hub's CPU per request up by a quarter in the runs it overlapped)."""
    name = make_url(url).database
    assert name is not None
    conn = await asyncpg.connect(_asyncpg_dsn(url, name), timeout=5)
    try:
        await conn.execute("VACUUM ANALYZE")
        await conn.execute("CHECKPOINT")
    finally:
        await conn.close()


def migrate(url: str) -> None:
    """Run ``alembic upgrade head`` in a thread (Alembic's env.py runs its own event loop)."""
    in_thread(upgrade, url)


def app_url(owner_url: str) -> str:
    """``owner_url`` with the app's role as its user (same database)."""
    return (
        make_url(owner_url)
        .set(username=APP_ROLE, password=None)
        .render_as_string(hide_password=False)
    )


async def _ensure_role(url: str) -> None:
    admin = await asyncpg.connect(_asyncpg_dsn(url, "postgres"), timeout=5)
    try:
        # concurrent workers (and other checkouts) may create it at the same moment
        await admin.execute(
            f"DO $$ BEGIN CREATE ROLE {APP_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS; "
            "EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$"
        )
    finally:
        await admin.close()


def ensure_app_role(owner_url: str) -> None:
    """Make the app's role on ``owner_url``'s server unless it exists."""
    run_sync(lambda: _ensure_role(owner_url))


def prepare_app_role(owner_url: str) -> str:
    """Make the app's role and grant it the app's privileges on ``owner_url``'s database (as
    ``hub db upgrade`` does); the URL the app connects with."""
    ensure_app_role(owner_url)
    run_sync(lambda: grant_app_role(owner_url, APP_ROLE))
    return app_url(owner_url)


def owner_url_of(url: str) -> str:
    """The owner's URL of a test database the app's role connects to (others unchanged)."""
    parsed = make_url(url)
    if parsed.username != APP_ROLE:
        return url
    owner = make_url(os.environ.get("HUB_TEST_DATABASE_URL", DEFAULT_PG_URL))
    return parsed.set(username=owner.username, password=owner.password).render_as_string(
        hide_password=False
    )


@contextlib.asynccontextmanager
async def as_owner(engine: AsyncEngine) -> AsyncIterator[AsyncEngine]:
    """``engine``'s database as its owner, above row-level security (emptying, dumping and
    restoring every tenant's rows at once); ``engine`` itself when it is the owner's."""
    owner = owner_url_of(engine.url.render_as_string(hide_password=False))
    if owner == engine.url.render_as_string(hide_password=False):
        yield engine
        return
    owner_engine = create_engine(owner, pool_size=1)
    try:
        yield owner_engine
    finally:
        await owner_engine.dispose()


@contextlib.asynccontextmanager
async def owner_session(db: Database, *, write: bool = True) -> AsyncIterator[AsyncSession]:
    """A unit of work on ``db``'s database as its owner, above row-level security: for a test's
    own arranging and inspecting of rows (what another replica, an operator or an attacker with
    SQL would do), never for what the test is about. On SQLite, ``db``'s own session."""
    if db.is_sqlite:
        async with db.session(write=write) as session:
            yield session
        return
    async with as_owner(db.engine) as engine, Database(engine).session(write=write) as session:
        yield session


def table_names() -> list[str]:
    return [t.name for t in reversed(Base.metadata.sorted_tables)]


async def truncate_all(engine: AsyncEngine) -> None:
    """Empty every table (for tests that commit for real)."""
    names = table_names()
    if not names:
        return
    async with as_owner(engine) as owner, owner.begin() as conn:
        if engine.dialect.name == "postgresql":
            quoted = ", ".join(f'"{n}"' for n in names)
            await conn.execute(text(f"TRUNCATE {quoted} RESTART IDENTITY CASCADE"))
        else:
            for name in names:
                await conn.execute(text(f'DELETE FROM "{name}"'))  # noqa: S608


def scratch_url(backend: str, tmp_path: Path, name: str = "scratch") -> str:
    """A database of the test's own to migrate up and down: a SQLite file in ``tmp_path``, or the
    worker's ``_migrations`` PostgreSQL database, emptied (skipped when PostgreSQL is unreachable,
    a failure when it is required)."""
    if backend == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / f'{name}.db'}"
    url = postgres_url("_migrations")
    try:
        fresh_postgres(url)
    except (OSError, TimeoutError) as exc:
        if postgres_required():
            pytest.fail(f"PostgreSQL is required but unreachable: {exc!r}")
        pytest.skip(f"PostgreSQL unreachable: {exc!r}")
    return url

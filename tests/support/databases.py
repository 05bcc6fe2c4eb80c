"""Test databases: one migrated SQLite file and one PostgreSQL database per test worker.

PostgreSQL comes from ``HUB_TEST_DATABASE_URL`` or the local server on 127.0.0.1:5432. When it
is unreachable its tests are skipped, unless ``HUB_TEST_REQUIRE_POSTGRES`` is set (CI), in
which case they fail. Databases are built by running the migrations, never by ``create_all``.
"""

from __future__ import annotations

import asyncio
import os
import threading

import asyncpg
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from hub.core.migrations import upgrade
from hub.models import Base

DEFAULT_PG_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/hub_test"


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


def run_sync(coro_factory: object) -> None:
    """Run a coroutine in a fresh thread with its own loop (no running loop may be reused)."""
    error: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(coro_factory())  # type: ignore[operator]
        except BaseException as exc:
            error.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if error:
        raise error[0]


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


def migrate(url: str) -> None:
    """Run ``alembic upgrade head`` in a thread (Alembic's env.py runs its own event loop)."""
    error: list[BaseException] = []

    def target() -> None:
        try:
            upgrade(url)
        except BaseException as exc:
            error.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if error:
        raise error[0]


def table_names() -> list[str]:
    return [t.name for t in reversed(Base.metadata.sorted_tables)]


async def truncate_all(engine: AsyncEngine) -> None:
    """Empty every table (for tests that commit for real)."""
    names = table_names()
    if not names:
        return
    async with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            quoted = ", ".join(f'"{n}"' for n in names)
            await conn.execute(text(f"TRUNCATE {quoted} RESTART IDENTITY CASCADE"))
        else:
            for name in names:
                await conn.execute(text(f'DELETE FROM "{name}"'))  # noqa: S608

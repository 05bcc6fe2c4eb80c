"""Fixtures shared by the whole suite.

Database tests run on both backends: ``db_url`` is parametrised over SQLite and PostgreSQL.
``session`` is a per-test transaction rolled back at the end (ordinary tests); ``database`` is a
real, committing database emptied after the test (tests that need commits, and every app test).
On PostgreSQL both connect as the app's non-owner role, under row-level security, as the app
does in production; ``owner_url`` is the owner's URL (migrations, emptying the tables).
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from pathlib import Path

import httpx2
import pytest
from fastapi import FastAPI
from pydantic import SecretStr
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from hub.app import create_app
from hub.core.db import Database, create_engine
from hub.core.settings import Settings
from tests.peers.fixtures import sdk_peer_forks  # session-wide: every package's sdk_peer uses it
from tests.support.databases import (
    fresh_postgres,
    migrate,
    postgres_required,
    postgres_url,
    prepare_app_role,
    truncate_all,
)

__all__ = ["sdk_peer_forks"]

TEST_KEY = base64.b64encode(b"k" * 32).decode()
TEST_PEPPER = "test-pepper-0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="session", params=["sqlite", "postgresql"])
def owner_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A migrated database's owner URL, once per backend per test session."""
    if request.param == "sqlite":
        path: Path = tmp_path_factory.mktemp("sqlite") / "hub.db"
        url = f"sqlite+aiosqlite:///{path}"
    else:
        url = postgres_url()
        try:
            fresh_postgres(url)
        except (OSError, TimeoutError) as exc:
            if postgres_required():
                pytest.fail(f"PostgreSQL is required (HUB_TEST_REQUIRE_POSTGRES) but: {exc!r}")
            pytest.skip(f"PostgreSQL unreachable: {exc!r}")
    migrate(url)
    return url


@pytest.fixture(scope="session")
def db_url(owner_url: str) -> str:
    """The URL the app connects with: on PostgreSQL, its non-owner role (row-level security)."""
    if owner_url.startswith("sqlite"):
        return owner_url
    return prepare_app_role(owner_url)


@pytest.fixture(scope="session")
async def owner_engine(owner_url: str, db_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(owner_url)
    yield engine
    await engine.dispose()


@pytest.fixture(scope="session")
async def engine(db_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(db_url)
    yield engine
    await engine.dispose()


@pytest.fixture
async def session(owner_engine: AsyncEngine) -> AsyncIterator[AsyncSession]:
    """A session inside a transaction that is rolled back after the test (the owner's: for tests
    of the database itself, which make tables of their own)."""
    async with owner_engine.connect() as conn:
        trans = await conn.begin()
        session = AsyncSession(
            bind=conn, join_transaction_mode="create_savepoint", expire_on_commit=False
        )
        try:
            yield session
        finally:
            await session.close()
            await trans.rollback()


@pytest.fixture
async def database(engine: AsyncEngine, owner_engine: AsyncEngine) -> AsyncIterator[Database]:
    """A committing database (the app's role); every table is emptied after the test."""
    try:
        yield Database(engine)
    finally:
        await truncate_all(owner_engine)


def make_settings(db_url: str = "sqlite+aiosqlite:///:memory:", **overrides: object) -> Settings:
    values: dict[str, object] = {
        "database_url": db_url,
        "encryption_keys": SecretStr(f"t1:{TEST_KEY}"),
        "active_key_id": "t1",
        "api_key_pepper": SecretStr(TEST_PEPPER),
        "workers": False,  # background loops only where a test asks for them
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
def settings(db_url: str) -> Settings:
    return make_settings(db_url)


@pytest.fixture
async def app(settings: Settings, database: Database) -> AsyncIterator[FastAPI]:
    application = create_app(settings, database=database)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx2.AsyncClient]:
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://hub.test") as http:
        yield http


class ClockControl:
    """A movable clock for tests (the only thing besides DNS answers that tests fake)."""

    def __init__(self) -> None:
        from datetime import UTC, datetime

        self.current = datetime.now(UTC)

    def now(self) -> datetime:
        return self.current

    def advance(self, seconds: float) -> None:
        from datetime import timedelta

        self.current += timedelta(seconds=seconds)


@pytest.fixture
def clock_control() -> Iterator[ClockControl]:
    from hub.core.clock import set_clock

    control = ClockControl()
    set_clock(control.now)
    try:
        yield control
    finally:
        set_clock(None)

"""Database engine and session lifecycle (DESIGN §13 "Transactions", STYLE "Sessions").

One :class:`Database` per app: an async engine and two session factories. A request gets one
session (see :func:`hub.core.deps.get_session`), committed once at the edge, before the response
is sent, and rolled back on error. Requests that may write use the *write* factory: on SQLite its
transactions start with ``BEGIN IMMEDIATE`` so two writers queue on the database lock instead of
failing to upgrade a read lock later; reads use a plain deferred ``BEGIN``.

Statement parameters never appear in exception text or logs (``hide_parameters``): an error
logged with its traceback cannot carry a value a client sent.

SQLite is configured per connection: foreign keys on, WAL journal, a busy timeout, and the
SQLAlchemy recipe that turns off pysqlite's own transaction handling so we emit ``BEGIN`` ourselves.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.pool import NullPool

__all__ = ["Database", "create_engine", "sqlite_file"]

_WRITE_OPTION = "hub_write"
SQLITE_BUSY_TIMEOUT_MS = 15_000


def sqlite_file(url: str) -> Path | None:
    """The file of an SQLite URL (None for in-memory and ``file:`` URIs)."""
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def _configure_sqlite(engine: AsyncEngine) -> None:
    sync_engine = engine.sync_engine

    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy (through our "begin" hook) own transactions, not the driver.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get(_WRITE_OPTION, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def create_engine(url: str, *, pool_size: int = 10, echo: bool = False) -> AsyncEngine:
    """An async engine for ``url`` with the hub's per-backend configuration."""
    if url.startswith("sqlite"):
        path = sqlite_file(url)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(
            url,
            echo=echo,
            hide_parameters=True,
            poolclass=NullPool,
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
        )
        _configure_sqlite(engine)
        return engine
    return create_async_engine(
        url,
        echo=echo,
        hide_parameters=True,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=True,
        pool_recycle=1800,
    )


class Database:
    """The engine plus its session factories; created in the app lifespan, disposed at shutdown."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.is_sqlite = engine.dialect.name == "sqlite"
        self._read = async_sessionmaker(engine, expire_on_commit=False, autoflush=False)
        self._write = async_sessionmaker(
            engine.execution_options(**{_WRITE_OPTION: True}),
            expire_on_commit=False,
            autoflush=False,
        )
        # SQLite's read transaction is a snapshot already (WAL); PostgreSQL needs REPEATABLE READ
        self._snapshot = async_sessionmaker(
            engine
            if self.is_sqlite
            else engine.execution_options(isolation_level="REPEATABLE READ"),
            expire_on_commit=False,
            autoflush=False,
        )

    @classmethod
    def from_url(cls, url: str, *, pool_size: int = 10) -> Database:
        return cls(create_engine(url, pool_size=pool_size))

    def sessionmaker(self, *, write: bool) -> async_sessionmaker[AsyncSession]:
        return self._write if write else self._read

    @contextlib.asynccontextmanager
    async def session(self, *, write: bool = True) -> AsyncIterator[AsyncSession]:
        """A short unit of work: commits when the block ends, rolls back if it raises."""
        async with self.sessionmaker(write=write)() as session:
            try:
                yield session
            except BaseException:
                await session.rollback()
                raise
            await session.commit()

    @contextlib.asynccontextmanager
    async def snapshot(self) -> AsyncIterator[AsyncSession]:
        """A read-only unit of work whose every query sees one consistent snapshot."""
        async with self._snapshot() as session:
            try:
                yield session
            finally:
                await session.rollback()

    async def ping(self) -> None:
        """Raise if the database cannot answer a trivial query."""
        async with self.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))

    async def dispose(self) -> None:
        await self.engine.dispose()

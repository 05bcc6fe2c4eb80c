"""Database engine and session lifecycle (DESIGN §13 "Transactions", STYLE "Sessions").

One :class:`Database` per app: an async engine and two session factories. A request gets one
session (see :class:`hub.core.deps.SessionRoute`), committed once at the edge, before the response
is sent, and rolled back on error. Requests that may write use the *write* factory: on SQLite its
transactions start with ``BEGIN IMMEDIATE`` so two writers queue on the database lock instead of
failing to upgrade a read lock later. Reads run outside any transaction, each statement
committing on its own (``AUTOCOMMIT`` on PostgreSQL, no ``BEGIN`` on SQLite): PostgreSQL's READ
COMMITTED gave every statement its own snapshot anyway, and a read then costs no ``BEGIN`` and
``COMMIT`` round trips. Anything else (tests, migrations, tools) gets a plain deferred ``BEGIN``.

The reads that decide whether a request may proceed at all (its key, its grants) run first, on the
request's own session, inside :func:`preliminary_reads`: in a write session they run outside a
transaction, before the request's work begins, so the write lock is taken only by work that was
admitted, lazily at its first statement, and no transaction is left open while a service calls
out before it writes (STYLE: fetch first, then write).

Both backends keep their connections in a pool (SQLAlchemy's ``AsyncAdaptedQueuePool``, the one
its aiosqlite dialect documents for file databases: each aiosqlite connection keeps its own
thread). SQLite connections are configured once, when opened: foreign keys on, WAL journal, a busy
timeout, and the SQLAlchemy recipe that turns off pysqlite's own transaction handling so we emit
``BEGIN`` ourselves (through :mod:`hub.core.sqlite`, which sends it with the transaction's first
statement). An in-memory SQLite database lives in one connection, so it gets ``StaticPool``.

Statement parameters never appear in exception text or logs (``hide_parameters``): an error
logged with its traceback cannot carry a value a client sent.
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
from sqlalchemy.pool import AsyncAdaptedQueuePool, StaticPool

from hub.core import plainreads, rls, sqlite
from hub.core.fairqueue import WaitObserver
from hub.core.keptpool import KeepingPool
from hub.core.statements import PLAIN_READS

_ = rls  # its session hook sets row-level security's scope on every PostgreSQL transaction

__all__ = ["Database", "create_engine", "preliminary_reads", "sqlite_file"]

#: Engine execution option naming a transaction's mode: ``"write"`` (SQLite: ``BEGIN
#: IMMEDIATE``), ``"read"`` (no transaction: every statement commits on its own) or absent (a
#: plain deferred ``BEGIN``, for everything that is not a request: tests, migrations, tools).
_MODE = "hub_mode"
#: Session.info key of a write session: the execution options of its preliminary reads.
_PRELIMINARY = "hub_preliminary_options"
#: Session.info key of a read session: its plain reads may run past the session
#: (:mod:`hub.core.plainreads`) while it holds no connection.
SQLITE_BUSY_TIMEOUT_MS = 15_000
#: every SQLite connection's configuration, set once when it is opened
_SQLITE_PRAGMAS = (
    "PRAGMA foreign_keys=ON",
    "PRAGMA journal_mode=WAL",
    f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}",
    "PRAGMA synchronous=NORMAL",
)


def sqlite_file(url: str) -> Path | None:
    """The file of an SQLite URL (None for in-memory and ``file:`` URIs)."""
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def _sqlite_in_memory(url: str) -> bool:
    parsed = make_url(url)
    database = parsed.database or ""
    return database in ("", ":memory:") or parsed.query.get("mode") == "memory"


def _configure_sqlite(engine: AsyncEngine) -> None:
    sync_engine = engine.sync_engine

    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Once per connection (they are pooled). Let SQLAlchemy, through our "begin" hook, own
        # transactions, not the driver.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        for pragma in _SQLITE_PRAGMAS:
            cursor.execute(pragma)
        cursor.close()

    @event.listens_for(sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get(_MODE)
        driver: sqlite.Connection = conn.connection.driver_connection  # type: ignore[assignment]
        if mode == "read":
            # autocommit: each statement is its own transaction, as on PostgreSQL; in WAL a
            # SELECT then waits for no lock, so it may run on the loop's thread
            driver.read_on_loop_thread()
            return
        driver.begin_with_next_statement("BEGIN IMMEDIATE" if mode == "write" else "BEGIN")


def _sqlite_engine(url: str, *, pool_size: int, echo: bool) -> AsyncEngine:
    path = sqlite_file(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    sa_url = make_url(url)
    args, kwargs = sa_url.get_dialect()().create_connect_args(sa_url)
    kwargs["timeout"] = SQLITE_BUSY_TIMEOUT_MS / 1000

    async def connect() -> sqlite.Connection:
        return await sqlite.connect(*args, **kwargs)

    pool: dict[str, Any] = (
        {"poolclass": StaticPool}  # the database is the connection
        if _sqlite_in_memory(url)
        else {"poolclass": AsyncAdaptedQueuePool, **_pool_limits(pool_size)}
    )
    engine = create_async_engine(
        url, echo=echo, hide_parameters=True, async_creator=connect, **pool
    )
    _configure_sqlite(engine)
    if not _sqlite_in_memory(url):  # a file: plain reads get a connection of their own
        plainreads.attach_sqlite_reader(
            engine.sync_engine, lambda: sqlite.open_reader(args, kwargs, _SQLITE_PRAGMAS)
        )
    return engine


#: Seconds a request waits for a pooled PostgreSQL connection before its 503.
POOL_WAIT_S = 30.0
#: Seconds a new PostgreSQL connection may take to open.
CONNECT_WAIT_S = 10.0


def _pool_limits(pool_size: int) -> dict[str, int]:
    """Up to ``2 * pool_size`` connections, opened as concurrency needs them and kept.

    Not ``pool_size`` kept plus as many "overflow" ones (the limit is the same): SQLAlchemy
    closes an overflow connection when it comes back while the kept ones are idle, and reads
    check a connection out for one statement each (:mod:`hub.core.plainreads`), so a burst
    beyond ``pool_size`` opened and closed a connection around single reads (measured on the
    REST bench with 16 connections: a pool of 4 + 4 answered half the requests of one that
    kept 8+; every new PostgreSQL connection costs a TCP and TLS negotiation, a login and the
    driver's setup)."""
    return {"pool_size": 2 * pool_size, "max_overflow": 0}


def _connect_args(statement_timeout_s: float) -> dict[str, Any]:
    """asyncpg's connect arguments: the connect's own wait, and the server's limit on one
    statement (``statement_timeout``, sent in the startup packet: no round trip). Without it a
    statement waiting on a lock (a migration's ``ALTER TABLE``, an operator's open transaction)
    held its connection until the lock went, and every request behind it waited the pool's
    ``POOL_WAIT_S``, the replica's pool full; with it the statement is cancelled (SQLSTATE 57014)
    and its request answers 503 (:mod:`hub.core.db_errors`)."""
    args: dict[str, Any] = {"timeout": CONNECT_WAIT_S}
    if statement_timeout_s > 0:
        ms = max(1, round(statement_timeout_s * 1000))
        args["server_settings"] = {"statement_timeout": str(ms)}
    return args


def create_engine(
    url: str,
    *,
    pool_size: int = 10,
    echo: bool = False,
    statement_timeout_s: float = 0,
    pool_wait_s: float = POOL_WAIT_S,
) -> AsyncEngine:
    """An async engine for ``url`` with the hub's per-backend configuration.

    ``statement_timeout_s`` (PostgreSQL; 0: none) is the app's
    (``HUB_DATABASE_STATEMENT_TIMEOUT_S``); maintenance commands and migrations keep the default,
    none. SQLite's writers wait
    ``SQLITE_BUSY_TIMEOUT_MS`` for the write lock, then fail (a 503) already. ``pool_wait_s``
    (PostgreSQL) is how long a checkout waits for a connection: ``POOL_WAIT_S`` but in tests."""
    if url.startswith("sqlite"):
        return _sqlite_engine(url, pool_size=pool_size, echo=echo)
    # No pre-ping: it is a round trip on every checkout. A connection the server dropped fails
    # its request with a 503 instead, and SQLAlchemy then discards every older pooled connection.
    # Last in, first out: a request's reads, one checkout each (hub.core.plainreads), find the
    # connection the previous one used, its row-level security scope already set.
    # A request waits at most POOL_WAIT_S for a connection (every one busy: a lock held long, a
    # frozen server), then answers 503; a connect waits at most CONNECT_WAIT_S (asyncpg's own
    # default is 60 s, which a server that accepts and never answers would hold every time).
    return create_async_engine(
        url,
        echo=echo,
        hide_parameters=True,
        pool_recycle=1800,
        pool_use_lifo=True,
        poolclass=KeepingPool,
        pool_timeout=pool_wait_s,
        connect_args=_connect_args(statement_timeout_s),
        **_pool_limits(pool_size),
    )


def _read_options(engine: AsyncEngine) -> dict[str, Any]:
    """Execution options of a read: no transaction on either backend (SQLite's driver is in
    autocommit already and our hook emits no ``BEGIN``; PostgreSQL's is told so)."""
    if engine.dialect.name == "sqlite":
        return {_MODE: "read"}
    return {_MODE: "read", "isolation_level": "AUTOCOMMIT"}


@contextlib.asynccontextmanager
async def preliminary_reads(session: AsyncSession) -> AsyncIterator[AsyncSession]:
    """Run the reads that admit a request (who is calling, may it) on the request's session.

    In a read session, once the session's transaction has begun, or when it holds changes not
    yet flushed (which must not be committed outside the request's transaction), they simply
    join it. In a write session that has not begun yet they run outside any transaction, like a
    read session's (on SQLite: without ``BEGIN IMMEDIATE``, so without the write lock), and the
    connection goes back when the block ends; ORM objects stay loaded (``expire_on_commit`` is
    off). The request's work then begins its own write transaction at its first statement.
    """
    options = session.info.get(_PRELIMINARY)
    pending = session.new or session.dirty or session.deleted  # they belong to the work
    if options is None or session.in_transaction() or pending:
        yield session
        return
    await session.connection(execution_options=options)
    try:
        yield session
    except BaseException:
        await session.rollback()
        raise
    await session.commit()


class Database:
    """The engine plus its session factories; created in the app lifespan, disposed at shutdown."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.is_sqlite = engine.dialect.name == "sqlite"
        read = _read_options(engine)
        self._read = async_sessionmaker(
            engine.execution_options(**read),
            expire_on_commit=False,
            autoflush=False,
            info={PLAIN_READS: True},
        )
        self._write = async_sessionmaker(
            engine.execution_options(**{_MODE: "write"}),
            expire_on_commit=False,
            autoflush=False,
            info={_PRELIMINARY: read},
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
    def from_url(cls, url: str, *, pool_size: int = 10, statement_timeout_s: float = 0) -> Database:
        return cls(create_engine(url, pool_size=pool_size, statement_timeout_s=statement_timeout_s))

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
    async def reads(self) -> AsyncIterator[AsyncSession]:
        """A session whose statements each commit on their own (PostgreSQL in autocommit,
        SQLite with no ``BEGIN``): the gateway's per-call reads, and on PostgreSQL the audit
        writer's one-statement appends. Committed only with something pending (a commit of
        nothing costs a greenlet hop), closed only when it holds something (a connection in a
        transaction, loaded rows: one whose reads all went past it holds neither, and closing it
        would cost the hop again); rolled back and closed if the block raises."""
        session = self._read()
        try:
            yield session
            if session.new or session.dirty or session.deleted:
                await session.commit()
            if session.in_transaction() or session.identity_map:
                await session.close()
        except BaseException:
            await session.__aexit__(None, None, None)  # rolled back and closed, even if cancelled
            raise

    @contextlib.asynccontextmanager
    async def snapshot(self) -> AsyncIterator[AsyncSession]:
        """A read-only unit of work whose every query sees one consistent snapshot."""
        async with self._snapshot() as session:
            try:
                yield session
            finally:
                await session.rollback()

    def observe_pool_waits(self, observer: WaitObserver | None) -> None:
        """Tell ``observer`` how long each checkout that found every connection busy waited, and
        whether it ran out of time (None: stop). PostgreSQL's pool only: SQLite's plain reads
        have a connection of their own (:mod:`hub.core.keptpool`), and its pool is SQLAlchemy's."""
        pool = self.engine.sync_engine.pool
        if isinstance(pool, KeepingPool):
            pool.observe_waits(observer)

    async def ping(self) -> None:
        """Raise if the database cannot answer a trivial query."""
        async with self.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))

    async def dispose(self) -> None:
        await self.engine.dispose()

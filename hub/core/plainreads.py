"""Reads of plain columns on a pooled driver connection, past SQLAlchemy's execution layer
(and, on PostgreSQL, one-statement writes: :func:`execute` and, for a write with ``RETURNING``,
:func:`execute_returning`, for :func:`hub.core.statements.write_alone` and
:func:`hub.core.statements.write_alone_returning`).

Every authenticated request reads its key, and most read one more row (a server by handle, a
principal's ``grants_version``, a deployment's view); none of these reads builds an ORM object.
Through the request's session such a read costs the session's transaction bookkeeping, a
``Connection`` with its execution context and a result object around the driver's rows:
measured in process, two such reads cost 200-240 µs of CPU on either backend, the same two
statements on a pooled connection's driver cursor 65 µs (docs/decisions.md, issue 13).

What stays SQLAlchemy's:

- the statement: a Core ``select`` (or ``text().columns()``) compiled once per dialect, its
  parameters and columns converted by SQLAlchemy's own bind and result processors of their
  types (:class:`hub.core.plans.Plan`);
- the pool: the read checks a connection out and back in (reset on return, as always); on
  PostgreSQL its :class:`~hub.core.keptpool.KeepingPool` may keep it checked out for the next
  plain read instead, within the limits that module gives;
- the exceptions: a driver error arrives as a SQLAlchemy exception
  (:class:`~sqlalchemy.exc.DBAPIError` and its subclasses), and a disconnect invalidates the
  pool (every connection older than it, as SQLAlchemy's engine does): the handlers' 503
  mapping is unchanged. On SQLite the read runs on the DBAPI
  cursor SQLAlchemy would use; on PostgreSQL asyncpg sends it itself, and a failure is
  translated as :func:`_on_asyncpg` says.

When: only for a read session (:meth:`hub.core.db.Database.sessionmaker` with ``write=False``,
and :meth:`~hub.core.db.Database.reads`: each statement its own transaction, ``AUTOCOMMIT`` on
PostgreSQL and no ``BEGIN`` on SQLite) that holds no connection yet. Such a session would have
run the statement alone, on a fresh connection, in a transaction of its own, exactly as here. A
session holding a connection, or a write session, reads on its own connection as before
(:func:`hub.core.statements.read_row`): its writes visible, its locks kept.

One connection at a time: the read's connection goes back to the pool before the read returns,
so a request never holds two (a session that connects later takes one from the pool as usual).
An SQLite file has one more connection of its own for these reads (:func:`attach_sqlite_reader`,
opened at the first read, closed with the engine): in WAL a read outside any transaction takes no
lock anyone holds for long and is done in microseconds, so it runs on the calling (event loop)
thread with no pool checkout and no hop to a driver thread, as the pooled connections' reads
outside a transaction already did (:meth:`hub.core.sqlite.Connection.read_on_loop_thread`).

Row-level security (PostgreSQL): the connection's scope (its session-level ``hub.tenant_id``,
noted on the pooled connection as :mod:`hub.core.rls` notes it) is set to this context's scope
first when it differs; a ``SECURITY DEFINER`` lookup that sets the scope itself (the key's read)
sets it, and the note and the context's scope follow it (:func:`fetch_scoping`). The engine's
pool hands out the most recently returned connection first (``pool_use_lifo``), so a request's
reads usually find their scope already set.

Written here rather than taken from a library: SQLAlchemy has no public "execute a compiled
statement on a DBAPI connection" shortcut; this module is that shortcut, built from its public
parts (``compile``, ``dialect_impl``, ``bind_processor``/``result_processor``, the pool, the
dialect's isolation and disconnect hooks, ``DBAPIError.instance``).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any, cast

from sqlalchemy import event
from sqlalchemy.engine import Dialect, Engine
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util import greenlet_spawn

from hub.core import keptpool, rls
from hub.core.db_errors import database_unavailable
from hub.core.keptpool import KeepingPool
from hub.core.plans import Plan, plan_of

__all__ = [
    "Plan",
    "attach_sqlite_reader",
    "execute",
    "execute_returning",
    "fetch",
    "fetch_scoping",
    "observe",
    "plan_of",
]

#: callbacks given every statement this module sends (its SQL), in order: the engine's
#: ``before_cursor_execute`` event does not see them (tests count queries with both)
_observers: list[Callable[[str], None]] = []


@contextlib.contextmanager
def observe(callback: Callable[[str], None]) -> Iterator[None]:
    """Call ``callback`` with the SQL of every statement sent here while the block runs."""
    _observers.append(callback)
    try:
        yield
    finally:
        _observers.remove(callback)


def _sent(sql: str) -> None:
    for callback in tuple(_observers):
        callback(sql)


class _SqliteReader:
    """An SQLite file's connection for plain reads (see the module docstring)."""

    def __init__(self, opener: Callable[[], sqlite3.Connection]) -> None:
        self._opener = opener
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # one statement at a time, whichever thread runs it

    def rows(self, plan: Plan, params: Mapping[str, Any], dialect: Dialect) -> list[Any]:
        arguments = plan.arguments(params)
        if _observers:
            _sent(plan.sql)
        with self._lock:
            try:
                if self._connection is None:
                    self._connection = self._opener()
                raw = self._connection.execute(plan.sql, arguments).fetchall()
            except sqlite3.Error as error:
                raise DBAPIError.instance(
                    plan.sql, arguments, error, sqlite3.Error, hide_parameters=True, dialect=dialect
                ) from error
        return plan.rows(raw)

    def close(self, *_args: object) -> None:
        with self._lock:
            connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()


#: by the engine's dialect: one per engine, shared with the engines its execution options make
_sqlite_readers: weakref.WeakKeyDictionary[Dialect, _SqliteReader] = weakref.WeakKeyDictionary()


def attach_sqlite_reader(engine: Engine, opener: Callable[[], sqlite3.Connection]) -> None:
    """Give an SQLite file engine its plain reads' connection (``opener`` opens it, configured):
    closed when the engine is disposed, opened again by the next read."""
    reader = _SqliteReader(opener)
    _sqlite_readers[engine.dialect] = reader
    event.listen(engine, "engine_disposed", reader.close)


async def fetch(engine: AsyncEngine, plan: Plan, params: Mapping[str, Any]) -> list[Any]:
    """Every row of ``plan`` with ``params``, read in this context's row-level security scope:
    on a pooled connection, or an SQLite file's connection for these reads."""
    reader = _sqlite_readers.get(engine.dialect)
    if reader is not None:
        return reader.rows(plan, params, engine.dialect)
    if engine.dialect.driver == "asyncpg":
        done = await _on_asyncpg(engine, plan, params, None)
        if done is not None:
            return done[0]
    rows, _scope = await greenlet_spawn(_fetch, engine.sync_engine, plan, params, None)
    return rows


async def fetch_scoping(
    engine: AsyncEngine, plan: Plan, params: Mapping[str, Any], scope_column: int
) -> list[Any]:
    """:func:`fetch` for a ``SECURITY DEFINER`` lookup that sets the connection's scope itself
    and returns it in column ``scope_column`` of its first row: nothing is set before it, and
    the connection's note and this context's scope follow what it set."""
    done = None
    if engine.dialect.driver == "asyncpg":
        done = await _on_asyncpg(engine, plan, params, scope_column)
    if done is not None:
        rows, scope, _count = done
    else:
        rows, scope = await greenlet_spawn(_fetch, engine.sync_engine, plan, params, scope_column)
    if scope is not None:
        rls.set_by_raw_statement(scope)
    return rows


async def execute(engine: AsyncEngine, plan: Plan, params: Mapping[str, Any]) -> int | None:
    """Run a ``dml`` plan alone, committed on its own, in this context's row-level security
    scope (PostgreSQL): its row count. None when the caller must run it through its session
    instead: another driver, or a statement the server refused (nothing was written; the
    session's adapter then raises its own exception, or the statement succeeds the second time,
    as a client's retry would). A conditional write decides alone who wins, committed alone."""
    if not plan.dml or plan.returning or engine.dialect.driver != "asyncpg":
        return None
    done = await _on_asyncpg(engine, plan, params, None)
    return None if done is None else done[2]


async def execute_returning(
    engine: AsyncEngine, plan: Plan, params: Mapping[str, Any]
) -> list[Any] | None:
    """:func:`execute` for a write with ``RETURNING``: the rows it returned (one per row it
    wrote), or None when the caller must run it through its session."""
    if not plan.returning or engine.dialect.driver != "asyncpg":
        return None
    done = await _on_asyncpg(engine, plan, params, None)
    return None if done is None else done[0]


async def _checkout(engine: AsyncEngine) -> Any:
    """A pooled connection; a refused connect as SQLAlchemy's error, as ``engine.connect()``
    raises it (``raw_connection`` lets the driver adapter's own error out, unwrapped: a server
    over its connection limit or shutting down was a 500 instead of the handlers' 503)."""
    dbapi_error = engine.dialect.loaded_dbapi.Error
    try:
        return await greenlet_spawn(engine.sync_engine.raw_connection)
    except dbapi_error as exc:
        raise DBAPIError.instance(None, None, exc, dbapi_error) from exc


async def _on_asyncpg(
    engine: AsyncEngine, plan: Plan, params: Mapping[str, Any], scope_column: int | None
) -> tuple[list[Any], str | None, int] | None:
    """The rows, the scope a definer set and the row count of ``plan``, sent by asyncpg itself
    on a pooled PostgreSQL connection; None when the server refused it (to be run again through
    SQLAlchemy, whose adapter raises its own exception for it).

    SQLAlchemy's asyncpg adapter runs each statement in a greenlet, behind a mutex and its own
    statement cache, and its connection in autocommit only by a mode switch set and reset around
    the read (a trivial read, counted with callgrind: 196.8 k instructions through
    :func:`_fetch`, 137.8 k here; docs/decisions.md, sixth pass). Here the pool checks the
    connection out and back in (one greenlet hop, which may open a connection) unless its
    :class:`~hub.core.keptpool.KeepingPool` kept one from an earlier read, and the statements
    go to the connection's asyncpg ``Connection`` (``driver_connection``, public), with its own
    prepared-statement cache and the codecs SQLAlchemy set on it. Outside a transaction asyncpg
    runs each statement on its own, which is the autocommit wanted here; the adapter never began
    one (a connection comes back from the pool with none), so it has nothing to end when the
    connection goes back.

    Failures leave as SQLAlchemy's exceptions, never asyncpg's. A statement whose connection
    asyncpg closed (the server went away) invalidates it and raises :class:`~sqlalchemy.exc.
    InterfaceError` with ``connection_invalidated``, as the adapter does for a disconnect (the
    handlers' 503). A statement the server cancelled past its ``statement_timeout``, or whose
    lock was not granted, raises :class:`~sqlalchemy.exc.OperationalError` (the same 503): made
    again it would wait as long again. Any other failure (the server refused the statement, so
    it changed nothing) returns None: reads, and a definer lookup setting the scope, are safely
    made again."""
    arguments = plan.arguments(params)
    pool = engine.sync_engine.pool
    keeper = pool if isinstance(pool, KeepingPool) else None  # PostgreSQL engines' pool
    kept = None if keeper is None else keeper.take()
    if kept is None:
        fairy: Any = await _checkout(engine)
        since = keptpool.now()
    else:
        fairy, since = kept
    driver: Any = fairy.driver_connection  # asyncpg's Connection
    raw: list[Any] = []
    scope = None
    count = 0
    answered = False
    try:
        try:
            if scope_column is None:
                wanted = rls.raw_setting(fairy.info)
                if wanted is not None:
                    if _observers:
                        _sent(rls.SET_RAW)
                    await driver.execute(rls.SET_RAW, wanted)
                    rls.note_raw(fairy.info, wanted)
            if _observers:
                _sent(plan.sql)
            if plan.dml and not plan.returning:
                status: str = await driver.execute(plan.sql, *arguments)  # "UPDATE 1" …
                count = int(status.rsplit(" ", 1)[-1])
            else:
                raw = await driver.fetch(plan.sql, *arguments)
            if scope_column is not None and raw:
                scope = str(raw[0][scope_column])
                rls.note_raw(fairy.info, scope)
            answered = True
        except Exception as error:
            if not driver.is_closed():
                _raise_if_waited(error, plan.sql, arguments)
                return None  # checked in below, and made again through SQLAlchemy
            # the server went away: every connection of the pool older than now is as dead, so
            # the pool is invalidated, as SQLAlchemy does when a session finds a disconnect (one
            # dead connection invalidated alone cost one request a 503 per idle connection);
            # the keeping pool gives its kept ones back first
            await greenlet_spawn(pool._invalidate, fairy, error)
            raise InterfaceError(
                plan.sql, arguments, error, hide_parameters=True, connection_invalidated=True
            ) from error
    finally:
        # kept only after an answer: a failed or cancelled statement's connection goes back to
        # the pool as before
        if keeper is not None and answered:
            keeper.keep(fairy, since)
        else:
            fairy.close()
    return plan.rows(raw), scope, count


def _raise_if_waited(error: Exception, sql: str, arguments: Any) -> None:
    """A statement refused for a reason :func:`~hub.core.db_errors.database_unavailable` names,
    as SQLAlchemy's error (the handlers' 503) rather than made again: cancelled past its
    ``statement_timeout`` or its lock not granted, made again it waited as long again (a walk
    saw 40 s for the documented 20); the server out of memory or shutting down, it would be
    refused again."""
    if database_unavailable(error):
        raise OperationalError(sql, arguments, error, hide_parameters=True) from error


def _fetch(
    engine: Engine, plan: Plan, params: Mapping[str, Any], scope_column: int | None
) -> tuple[list[Any], str | None]:
    """Inside SQLAlchemy's greenlet: check a connection out, run the statement, check it in.

    On PostgreSQL the connection is in autocommit for the read and back in its default mode
    before it returns to the pool, whatever happened: a pooled connection left in autocommit
    would run a later session's transaction statement by statement (its ``BEGIN`` never sent,
    its scope set only for the statement that sets it, its rollback undoing nothing)."""
    dialect = engine.dialect
    arguments = plan.arguments(params)
    postgres = dialect.name == "postgresql"
    fairy = engine.raw_connection()
    try:
        dbapi_connection = cast("DBAPIConnection", fairy.dbapi_connection)  # just checked out
        if postgres:
            dialect.set_isolation_level(dbapi_connection, "AUTOCOMMIT")
        else:  # SQLite, on hub.core.sqlite's driver: a read outside a transaction
            fairy.driver_connection.read_on_loop_thread()  # type: ignore[union-attr]
        try:
            raw = _execute(fairy, dbapi_connection, dialect, plan, arguments, scope_column)
        finally:
            if postgres and fairy.is_valid:
                dialect.reset_isolation_level(dbapi_connection)
        scope = None
        if postgres and scope_column is not None and raw:
            scope = str(raw[0][scope_column])
            rls.note_raw(fairy.info, scope)
        return plan.rows(raw), scope
    finally:
        fairy.close()


def _execute(
    fairy: Any,
    dbapi_connection: DBAPIConnection,
    dialect: Dialect,
    plan: Plan,
    arguments: tuple[Any, ...],
    scope_column: int | None,
) -> list[Any]:
    """The statement on the checked-out connection's cursor; a driver error as SQLAlchemy's
    own exception, a disconnect invalidating the connection first."""
    cursor = fairy.cursor()
    try:
        if dialect.name == "postgresql" and scope_column is None:
            rls.apply_raw(fairy.info, cursor, _sent if _observers else None)
        if _observers:
            _sent(plan.sql)
        cursor.execute(plan.sql, arguments)
        return list(cursor.fetchall())
    except dialect.loaded_dbapi.Error as error:
        invalidated = dialect.is_disconnect(error, dbapi_connection, cursor)
        if invalidated:
            fairy.invalidate(error)
        raise DBAPIError.instance(
            plan.sql,
            arguments,
            error,
            dialect.loaded_dbapi.Error,
            hide_parameters=True,
            dialect=dialect,
            connection_invalidated=invalidated,
        ) from error
    finally:
        cursor.close()

"""aiosqlite with one thread round trip per statement (the driver of the hub's SQLite engines).

aiosqlite gives every connection a thread of its own and runs each call on it; the event loop
waits for the answer. SQLAlchemy's aiosqlite adapter makes four such calls per statement (open a
cursor, execute, fetch, close) and two more per transaction (``BEGIN``, ``COMMIT``): a dozen
round trips between threads for an authenticated read, each a wake-up of another thread and a
wait for the GIL, which on a small or busy machine cost more than the queries themselves.

:class:`Connection` is an ``aiosqlite.Connection`` whose cursors run the whole statement (open,
execute, fetch every row, close) in one call on the connection's thread, and which can defer a
``BEGIN`` (see :meth:`Connection.begin_with_next_statement`) so that it travels with the first
statement of its transaction. Reads outside any transaction run on the event loop's thread with
no round trip at all (:meth:`Connection.read_on_loop_thread`). ``COMMIT`` and ``ROLLBACK`` cost
no round trip when no transaction is open. Rows are always fetched whole, which is what the
adapter does for ordinary cursors anyway.

It relies on two internals of aiosqlite (``Connection._execute`` and ``Connection._conn``, pinned
in ``pyproject.toml``), as SQLAlchemy's own adapter does.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import aiosqlite

__all__ = ["Connection", "connect", "open_reader"]

_Description = tuple[tuple[Any, ...], ...] | None


class Cursor:
    """A DBAPI-shaped cursor whose ``execute`` is one round trip to the connection's thread."""

    arraysize = 1

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._rows: list[Any] = []
        self.description: _Description = None
        self.rowcount = -1
        self.lastrowid: int | None = None

    async def __aenter__(self) -> Cursor:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        return None

    async def execute(self, sql: str, parameters: Sequence[Any] | None = None) -> Cursor:
        await self._run(
            lambda cursor: cursor.execute(sql, () if parameters is None else parameters),
            select=sql.lstrip()[:6].upper() == "SELECT",
        )
        return self

    async def executemany(self, sql: str, parameters: Iterable[Sequence[Any]]) -> Cursor:
        await self._run(lambda cursor: cursor.executemany(sql, parameters), select=False)
        return self

    async def _run(self, operation: Callable[[sqlite3.Cursor], object], *, select: bool) -> None:
        begin = self._connection._take_pending_begin()
        conn = self._connection._conn

        def run() -> tuple[_Description, list[Any], int, int | None]:
            if begin is not None:
                conn.execute(begin)
            cursor = conn.cursor()
            try:
                operation(cursor)
                description = cursor.description
                rows = cursor.fetchall() if description else []
                return description, rows, cursor.rowcount, cursor.lastrowid
            finally:
                cursor.close()

        result: tuple[_Description, list[Any], int, int | None]
        if select and begin is None and self._connection._inline_reads:
            result = run()  # see Connection.read_on_loop_thread
        else:
            result = await self._connection._execute(run)  # type: ignore[no-untyped-call]
        self.description, self._rows, self.rowcount, self.lastrowid = result

    async def fetchone(self) -> Any:
        return self._rows.pop(0) if self._rows else None

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        count = self.arraysize if size is None else size
        rows, self._rows = self._rows[:count], self._rows[count:]
        return rows

    async def fetchall(self) -> list[Any]:
        rows, self._rows = self._rows, []
        return rows

    async def close(self) -> None:
        self._rows = []


class Connection(aiosqlite.Connection):
    """An aiosqlite connection with one-round-trip cursors and deferred ``BEGIN``."""

    def __init__(
        self, connector: Callable[[], sqlite3.Connection], *, any_thread: bool = False
    ) -> None:
        super().__init__(connector, iter_chunk_size=64)
        self._any_thread = any_thread  # opened with check_same_thread=False
        self._thread.daemon = True  # as SQLAlchemy's adapter does: never keep the process alive
        self._pending_begin: str | None = None
        self._inline_reads = False

    def read_on_loop_thread(self) -> None:
        """Run this transaction's ``SELECT`` statements on the calling (event loop) thread.

        Only for reads outside any transaction (the read mode of :mod:`hub.core.db`) on a WAL
        database: such a statement takes no lock that anyone holds for long, so it never waits on
        the busy timeout, and it is done in microseconds, less than a round trip to the
        connection's thread costs (a wake-up of another thread, then a wait for the GIL; on a
        small busy machine hundreds of microseconds). Writes, and everything in a transaction,
        still go to the thread, where waiting for SQLite's lock cannot stall the loop. The flag
        lasts until the next commit or rollback. SQLAlchemy awaits every call on a connection
        before making the next, so its thread is idle meanwhile; file databases are opened with
        ``check_same_thread=False`` (an in-memory one is not, and keeps to its thread).
        """
        self._inline_reads = self._any_thread

    def begin_with_next_statement(self, statement: str) -> None:
        """Send ``statement`` (``BEGIN`` or ``BEGIN IMMEDIATE``) with the next statement, in the
        same round trip. An error it raises (the busy timeout) surfaces from that statement."""
        self._pending_begin = statement
        self._inline_reads = False

    def _take_pending_begin(self) -> str | None:
        begin, self._pending_begin = self._pending_begin, None
        return begin

    def cursor(self) -> Cursor:  # type: ignore[override]
        return Cursor(self)

    def _in_transaction(self) -> bool:
        # Read on the event loop's thread, which is safe: SQLAlchemy awaits every call on a
        # connection before making the next, so its thread is idle now, and ``in_transaction``
        # is a plain read of sqlite's autocommit flag (it is not checked for the thread).
        return self._conn.in_transaction

    async def commit(self) -> None:
        self._inline_reads = False
        self._pending_begin = None  # a transaction that never ran a statement has nothing
        if self._in_transaction():
            await super().commit()

    async def rollback(self) -> None:
        self._inline_reads = False
        self._pending_begin = None
        if self._in_transaction():
            await super().rollback()


def open_reader(
    args: Sequence[Any], kwargs: Mapping[str, Any], pragmas: Sequence[str]
) -> sqlite3.Connection:
    """A plain ``sqlite3`` connection for reads outside any transaction on the event loop's
    thread (:mod:`hub.core.plainreads`): autocommit, configured with ``pragmas``, usable from
    any thread (a file database only)."""
    connection: sqlite3.Connection = sqlite3.connect(
        *args, **{**kwargs, "check_same_thread": False}
    )
    connection.isolation_level = None
    for pragma in pragmas:
        connection.execute(pragma)
    return connection


async def connect(database: str, **kwargs: Any) -> Connection:
    """Open a :class:`Connection` (``kwargs`` go to :func:`sqlite3.connect`)."""
    any_thread = kwargs.get("check_same_thread", True) is False
    connection = Connection(lambda: sqlite3.connect(database, **kwargs), any_thread=any_thread)
    await connection  # starts its thread and opens the database there
    return connection

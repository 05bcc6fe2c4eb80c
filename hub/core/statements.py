"""Core statements on a request's session, past the ORM (DESIGN §13, STYLE "Sessions").

The reads on every request that return columns, never entities, and the one-statement writes
beside them: :func:`read_row`, :func:`read_rows`, :func:`read_scoping_rows`, :func:`write_alone`
and :func:`write_alone_returning`. A read session (:class:`hub.core.db.Database` marks its
sessions with :data:`PLAIN_READS`) that holds no connection sends them past the session
(:mod:`hub.core.plainreads`); any other session runs them as Core on its own connection, one
greenlet hop, none of the ORM's statement handling.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from sqlalchemy.engine import Row
from sqlalchemy.exc import MultipleResultsFound
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.orm import Session
from sqlalchemy.sql import Executable

from hub.core import plainreads, readahead, rls

__all__ = [
    "PLAIN_READS",
    "read_row",
    "read_rows",
    "read_scoping_rows",
    "write_alone",
    "write_alone_returning",
]

#: Session.info key of a read session: its Core reads may go past the session
PLAIN_READS = "hub_plain_reads"
T = TypeVar("T")


async def _plain(
    session: AsyncSession,
    statement: Executable,
    params: Mapping[str, Any],
    scope_column: int | None = None,
) -> list[Any] | None:
    """The rows of ``statement`` read past the session (:mod:`hub.core.plainreads`), or None
    when the session must read it itself: a write session, one holding a connection already, or
    a statement with no plan."""
    if not session.info.get(PLAIN_READS) or session.in_transaction():
        return None
    engine = cast("AsyncEngine", session.bind)
    plan = plainreads.plan_of(statement, engine.dialect)
    if plan is None or plan.dml:
        return None
    if scope_column is not None:
        return await plainreads.fetch_scoping(engine, plan, params, scope_column)
    return await plainreads.fetch(engine, plan, params)


async def read_row(session: AsyncSession, statement: Executable, params: Mapping[str, Any]) -> Any:
    """The one row (or None) of a Core ``statement`` of plain columns, past the ORM's execution
    layer: no ORM result, no loading machinery. For the reads on every request that return
    columns, never entities. A read session that holds no connection reads it on a pooled
    connection of its own (:mod:`hub.core.plainreads`); any other runs it on its own connection
    and transaction (begun as any of its statements would be, hooks included), one greenlet hop.
    Either way the row has the statement's columns by position and by name. A read session may
    have it already, read with the caller's key (:mod:`hub.core.readahead`)."""
    if session.info.get(PLAIN_READS) and not session.in_transaction():
        ahead = readahead.recall(session, statement, params)
        if ahead is not None:
            return ahead
    rows = await _plain(session, statement, params)
    if rows is None:
        return await session.run_sync(_read_row, statement, params)
    if len(rows) > 1:
        raise MultipleResultsFound("a plain read of one row found several")
    return rows[0] if rows else None


def _read_row(
    session: Session, statement: Executable, params: Mapping[str, Any]
) -> Row[Any] | None:
    return session.connection().execute(statement, params).one_or_none()


async def read_rows(
    session: AsyncSession, statement: Executable, params: Mapping[str, Any]
) -> Sequence[Any]:
    """Every row of a Core ``statement`` of plain columns, as :func:`read_row` runs it."""
    rows = await _plain(session, statement, params)
    if rows is None:
        return await session.run_sync(_read_rows, statement, params)
    return rows


def _read_rows(
    session: Session, statement: Executable, params: Mapping[str, Any]
) -> Sequence[Row[Any]]:
    return session.connection().execute(statement, params).all()


async def read_scoping_rows(
    session: AsyncSession, statement: Executable, params: Mapping[str, Any], scope_column: int
) -> Sequence[Any]:
    """The rows of a ``SECURITY DEFINER`` lookup (PostgreSQL) that sets the connection's
    row-level security scope itself and returns it in column ``scope_column`` of its first row
    (it always returns one: the key's, the console session's, the gateway's read); call
    :func:`hub.core.rls.expect_scope_from_statement` first. The scope it set is this context's
    from then on, noted on the connection that holds it: run as :func:`read_rows` runs a read."""
    rows = await _plain(session, statement, params, scope_column)
    if rows is None:
        return await session.run_sync(_scoping_rows, statement, params, scope_column)
    return rows


def _scoping_rows(
    session: Session, statement: Executable, params: Mapping[str, Any], scope_column: int
) -> Sequence[Row[Any]]:
    """The lookup and the note of the scope it set, in one greenlet hop."""
    connection = session.connection()
    rows = connection.execute(statement, params).all()
    rls.set_by_statement(session, connection, str(rows[0][scope_column]))
    return rows


async def write_alone(
    session: AsyncSession, statement: Executable, params: Mapping[str, Any]
) -> int:
    """Run a Core ``INSERT``, ``UPDATE`` or ``DELETE`` (no ``RETURNING``) on ``session``: its
    row count. A read session on PostgreSQL commits each statement on its own, so one that holds
    no connection sends it past the session (:func:`hub.core.plainreads.execute`: about a
    quarter of the CPU); any other runs it as Core on its own connection (one greenlet hop, none
    of the ORM's statement handling), in its transaction if it has one."""
    return await _alone(session, statement, params, plainreads.execute, _rowcount)


async def write_alone_returning(
    session: AsyncSession, statement: Executable, params: Mapping[str, Any]
) -> Sequence[Any]:
    """:func:`write_alone` for a Core write with ``RETURNING``: the rows it returned (by position
    and by name). Past the session where :func:`write_alone` would go past it
    (:func:`hub.core.plainreads.execute_returning`); as Core on the session's connection
    everywhere else."""
    return await _alone(session, statement, params, plainreads.execute_returning, _read_rows)


async def _alone(
    session: AsyncSession,
    statement: Executable,
    params: Mapping[str, Any],
    past: Callable[[AsyncEngine, plainreads.Plan, Mapping[str, Any]], Awaitable[T | None]],
    on_session: Callable[[Session, Executable, Mapping[str, Any]], T],
) -> T:
    """``past`` the session where :func:`_past_the_session` allows it and it runs the statement,
    else ``on_session`` on the session's connection."""
    alone = _past_the_session(session, statement)
    if alone is not None:
        done = await past(*alone, params)
        if done is not None:
            return done
    return await session.run_sync(on_session, statement, params)


def _past_the_session(
    session: AsyncSession, statement: Executable
) -> tuple[AsyncEngine, plainreads.Plan] | None:
    """The engine and plan to send a one-statement write with, past ``session``: a read session
    holding no transaction, and a statement :mod:`hub.core.plainreads` can run."""
    if not session.info.get(PLAIN_READS) or session.in_transaction():
        return None
    engine = cast("AsyncEngine", session.bind)
    plan = plainreads.plan_of(statement, engine.dialect)
    return None if plan is None else (engine, plan)


def _rowcount(session: Session, statement: Executable, params: Mapping[str, Any]) -> int:
    rowcount: int = session.connection().execute(statement, params).rowcount
    return rowcount

"""Row-level security's scope: which tenant PostgreSQL lets a transaction see (DESIGN §11, §15).

RLS is a backstop under the queries' own tenant scoping (:mod:`hub.core.tenancy`): every tenant
table has a policy on ``NULLIF(current_setting('hub.tenant_id', true), '')::uuid`` (the DDL is
:mod:`hub.core.rls_ddl`), so a query that forgot its ``WHERE tenant_id = …`` still sees only the
scope's rows, and an insert into another tenant fails. The scope is the request's ``TenantId``:

- authentication enters the caller's tenant (the platform admin enters :data:`PLATFORM`, the
  scope of the rows that belong to no tenant: its principal, its keys, the platform audit chain);
- the platform admin's path resolution enters the tenant of the path;
- workers, the CLI and the OAuth callback enter the tenant they act for with :func:`scope`.

The scope lives in a context variable, so the sessions a request's services open (and the tasks
they spawn) carry it too. Each transaction of a session starts by setting it on its connection
(an ``after_begin`` hook, PostgreSQL only): ``set_config(…, true)``, local to the transaction, or,
on a connection in autocommit (the reads of :mod:`hub.core.db`, where each statement is its own
transaction), ``set_config(…, false)`` for the connection. What a connection holds at session
level is remembered on it, so a statement is sent only when the scope changes. A scope entered
while a transaction is open applies to it at once (:func:`enter`).

Authentication by key, the OAuth state lookup at the callback and the workers' job claims read
before any tenant is known; they go through ``SECURITY DEFINER`` functions (see the migration
``0401``), never through a wider scope. SQLite has no RLS: everything here is a no-op on it.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import ContextVar
from typing import Any, Final

from sqlalchemy import event, text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session, SessionTransaction

from hub.core.tenancy import TenantId, system_scope

__all__ = [
    "PLATFORM",
    "SET_RAW",
    "Platform",
    "Scope",
    "apply_raw",
    "current",
    "enter",
    "enter_job",
    "expect_scope_from_statement",
    "note_raw",
    "raw_setting",
    "scope",
    "set_by_raw_statement",
    "set_by_statement",
    "setting_of",
    "within",
]

SETTING: Final = "hub.tenant_id"
#: The value of the platform's own scope (rows with no tenant); no tenant has this id.
PLATFORM_VALUE: Final = str(uuid.UUID(int=0))
_HELD = "hub_rls_scope"  # connection info: the value set on it at session level
_UNKNOWN = "?"  # held: not known (set inside a transaction that may yet roll back)
_PENDING = "pending"  # the scope: the next statement sets it (authentication's key read)
_SET = text("SELECT set_config('hub.tenant_id', :value, :local)")
SET_RAW: Final = "SELECT set_config('hub.tenant_id', $1, false)"  # asyncpg's positional style


class Platform:
    """The platform's scope: the rows that belong to no tenant."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "PLATFORM"


PLATFORM: Final = Platform()
Scope = TenantId | Platform

_current: ContextVar[str] = ContextVar("hub_rls_scope", default="")
#: the scope a statement has just set on the connection, until the next :func:`enter`
_by_statement: ContextVar[tuple[Session, str] | None] = ContextVar(
    "hub_rls_by_statement", default=None
)


def setting_of(value: Scope | None) -> str:
    """The ``hub.tenant_id`` value of a scope (``""``: none, nothing visible)."""
    if value is None:
        return ""
    if isinstance(value, Platform):
        return PLATFORM_VALUE
    if not isinstance(value, TenantId):  # a bare UUID is a bug, not a scope
        raise TypeError("an RLS scope is a TenantId or PLATFORM")
    return str(value.value)


def current() -> str:
    """The scope of this context, as its setting (``""`` when none was entered)."""
    return _current.get()


async def enter(session: AsyncSession | None, value: Scope | None) -> None:
    """Enter ``value`` for the rest of this context (a request), and at once on ``session``'s
    open transaction, if any (the rest of its transactions take it when they begin). Right after
    a statement set this very value (:func:`set_by_statement`, authentication's key read), the
    connection holds it already: nothing is sent."""
    wanted = setting_of(value)
    by_statement = _by_statement.get()
    _by_statement.set(None)
    _current.set(wanted)
    if session is not None and by_statement == (session.sync_session, wanted):
        return  # the connection holds it, in its open transaction or at session level
    await _apply_now(session, wanted)


@contextlib.asynccontextmanager
async def within(session: AsyncSession, value: Scope | None) -> AsyncIterator[None]:
    """``value``'s scope on ``session`` for this block only, then the previous one back (a
    platform route writing one tenant's rows, such as its audit chain)."""
    previous = _current.get()
    wanted = setting_of(value)
    if wanted == previous:
        yield  # the scope already
        return
    token = _current.set(wanted)
    await _apply_now(session, wanted)
    try:
        yield
    finally:
        _current.reset(token)
        await _apply_now(session, previous)


def expect_scope_from_statement() -> None:
    """The next transaction's first statement sets the scope itself (the key's read of
    authentication, ``hub_auth_key``): its begin sends no ``set_config`` of its own."""
    _current.set(_PENDING)
    _by_statement.set(None)


def set_by_statement(session: Session, connection: Connection, value: str) -> None:
    """A statement of ``session`` just ran on ``connection`` (the sync side, inside the session's
    greenlet) and set its scope to ``value``: it is this context's scope now, and the connection
    holds it (at session level on a connection in autocommit; inside a transaction it is unknown
    after its end). :func:`enter` of the same value on the same session then sends nothing."""
    _current.set(value)
    connection.connection.info[_HELD] = value if _autocommit(connection) else _UNKNOWN
    _by_statement.set((session, value))


def raw_setting(info: dict[Any, Any]) -> str | None:
    """The scope to set at session level, with :data:`SET_RAW`, on a pooled PostgreSQL
    connection used in autocommit outside any session (:mod:`hub.core.plainreads`; ``info`` is
    the pooled connection's) before it reads in this context: None when it holds it already.
    Note it with :func:`note_raw` once set."""
    wanted = _current.get()
    if wanted == _PENDING:
        wanted = ""  # a statement that sets the scope itself does not come through here
    return None if info.get(_HELD, "") == wanted else wanted


def apply_raw(info: dict[Any, Any], cursor: Any, sent: Callable[[str], None] | None = None) -> None:
    """:func:`raw_setting`, set on the connection's DBAPI ``cursor`` and noted."""
    wanted = raw_setting(info)
    if wanted is None:
        return
    if sent is not None:
        sent(SET_RAW)
    cursor.execute(SET_RAW, (wanted,))
    info[_HELD] = wanted


def note_raw(info: dict[Any, Any], value: str) -> None:
    """A statement set ``value`` at session level on the pooled connection whose ``info`` this
    is (a definer lookup in autocommit, :func:`hub.core.plainreads.fetch_scoping`)."""
    info[_HELD] = value


def set_by_raw_statement(value: str) -> None:
    """A definer lookup outside any session set ``value``: it is this context's scope now."""
    _current.set(value)
    _by_statement.set(None)


async def _apply_now(session: AsyncSession | None, wanted: str) -> None:
    if session is None or session.get_bind().dialect.name != "postgresql":
        return  # SQLite has no row-level security
    if not session.in_transaction():
        return  # its next transaction takes the scope when it begins
    connection = await session.connection()
    await connection.run_sync(_apply, wanted, True)


@contextlib.contextmanager
def scope(value: Scope | None) -> Iterator[None]:
    """Sessions opened in this block see ``value``'s rows (workers, the CLI, the callback)."""
    token = _current.set(setting_of(value))
    try:
        yield
    finally:
        _current.reset(token)


def enter_job(tenant_id: uuid.UUID | None) -> None:
    """Enter the scope of a worker job's row for the rest of its task: its tenant's, or the
    platform's for a job that belongs to no tenant."""
    if tenant_id is None:
        _current.set(PLATFORM_VALUE)
        return
    job_tenant = system_scope(tenant_id, reason="a worker job acts for its own row's tenant")
    _current.set(setting_of(job_tenant))


def _autocommit(connection: Connection) -> bool:
    return connection.get_execution_options().get("isolation_level") == "AUTOCOMMIT"


def _apply(connection: Connection, wanted: str, mid_transaction: bool = False) -> None:
    info = connection.connection.info  # the DBAPI connection's: gone with it when invalidated
    held = info.get(_HELD, "")
    autocommit = _autocommit(connection)
    if wanted == _PENDING:
        if autocommit:
            return  # its first statement sets the scope
        wanted = ""
    if wanted == held and (autocommit or not mid_transaction):
        return  # a transaction begins with the value held; a local one reverts to it at its end
    if autocommit:
        connection.execute(_SET, {"value": wanted, "local": False})
        info[_HELD] = wanted
    else:
        connection.execute(_SET, {"value": wanted, "local": True})


@event.listens_for(Session, "after_begin")
def _on_begin(_session: Session, _transaction: SessionTransaction, connection: Any) -> None:
    if connection.dialect.name == "postgresql":
        _apply(connection, _current.get())

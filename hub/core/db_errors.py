"""Whether an exception means "the database is away", whatever layer raised it.

A database that restarts, refuses connections, is full or is locked past the pool's wait shows
up as several exception types: SQLAlchemy's ``OperationalError`` and ``InterfaceError``, a
``DBAPIError`` whose SQLSTATE says so (asyncpg raises a server that shuts down as a plain
``DBAPIError``), the pool's ``TimeoutError``, a socket's ``ConnectionError``, and, from a raw
connection taken outside SQLAlchemy's wrapping (``hub.core.plainreads``), the driver adapter's
own error carrying the SQLSTATE. Each answers the same: 503 on REST, ``50300`` on the MCP
endpoint, and the audit writer keeps its rows to write them once the database is back.
"""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

__all__ = ["UNAVAILABLE_STATES", "database_unavailable", "sqlstate_in"]

#: SQLSTATEs of a server that is away: connection exceptions (08), shutting down, crashed or
#: starting up (57P01-57P03), out of connections, memory or disk (53); of one that did not
#: answer in time: a statement past ``statement_timeout`` (57014,
#: ``HUB_DATABASE_STATEMENT_TIMEOUT_S``: typically waiting on a lock) or a lock not granted
#: (55P03), both over when the lock goes; and of one that refuses the hub's connections: the
#: database not accepting any (55000, ``ALLOW_CONNECTIONS false``), the login refused (28, a
#: password being rotated) or the database missing (3D000). Those were 500s with a traceback
#: each, and the audit writer dropped its rows instead of keeping them for the database's return
#: (a resilience walk, stop 53). A privilege refused (42501) is not among them: on a table it is
#: a grant missing, which no wait mends.
UNAVAILABLE_STATES = (
    "08",
    "57P01",
    "57P02",
    "57P03",
    "53",
    "57014",
    "55P03",
    "55000",
    "28",
    "3D000",
)


def _state_of(exc: BaseException) -> str | None:
    state = getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)
    return state if isinstance(state, str) else None


def database_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it wraps) says the database cannot be used right now."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OperationalError | InterfaceError | PoolTimeout | ConnectionError):
            return True
        if isinstance(current, DBAPIError):
            if current.connection_invalidated:  # SQLAlchemy saw a disconnect, emptied the pool
                return True
            state = _state_of(current.orig) if current.orig is not None else None
            if state is not None:
                return state.startswith(UNAVAILABLE_STATES)
        state = _state_of(current)
        if state is not None and state.startswith(UNAVAILABLE_STATES):
            return True
        current = current.__cause__ or current.__context__
    return False


def sqlstate_in(exc: BaseException) -> str | None:
    """The first SQLSTATE ``exc`` or what it wraps carries, for a log line (no message text:
    a driver's message may quote a value)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        orig = current.orig if isinstance(current, DBAPIError) else None
        state = _state_of(orig) if orig is not None else _state_of(current)
        if state is not None:
            return state
        current = current.__cause__ or current.__context__
    return None

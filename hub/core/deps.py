"""Request-scoped dependencies shared by every domain: the settings, the database, the session.

``SessionDep`` is the request's one session. Its dependency runs with ``scope="function"``, so its
exit (commit, or rollback on error) happens when the endpoint returns and *before* the response is
sent: a client never sees 2xx for a write that then failed to commit (commit at the edge, STYLE).
Authentication and authorisation read on it too (FastAPI gives every dependency of a request the
same instance), so a request costs one session and, at a time, one pooled connection.

A request with a method other than GET/HEAD/OPTIONS gets a write session, unless its endpoint is
marked :func:`reads_only` (a POST that only computes an answer, such as a grant check): on SQLite
a write session takes the database's write lock, which such a request has no use for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession

from hub.core import rls
from hub.core.components import components_of
from hub.core.db import Database
from hub.core.settings import Settings

__all__ = [
    "DatabaseDep",
    "SessionDep",
    "SettingsDep",
    "get_database",
    "get_session",
    "get_settings_dep",
    "reads_only",
    "session_of",
]

_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_READS_ONLY = "_hub_reads_only"
F = TypeVar("F", bound=Callable[..., Any])


def reads_only(endpoint: F) -> F:
    """Mark an endpoint whose request never writes, whatever its method: it gets a read session."""
    setattr(endpoint, _READS_ONLY, True)
    return endpoint


def _writes(request: Request) -> bool:
    if request.method in _READ_METHODS:
        return False
    endpoint = getattr(request.scope.get("route"), "endpoint", None)
    return not getattr(endpoint, _READS_ONLY, False)


def get_settings_dep(request: Request) -> Settings:
    return components_of(request.app).get(Settings)


def get_database(request: Request) -> Database:
    db: Database = request.app.state.db
    return db


async def get_session(request: Request) -> AsyncIterator[AsyncSession]:
    db = get_database(request)
    await rls.enter(None, None)  # no scope until authentication enters the caller's
    writes = _writes(request)
    session = db.sessionmaker(write=writes)()
    request.state.db_session = session
    try:
        yield session
        if writes or session.new or session.dirty or session.deleted:
            await session.commit()
        # A read session's statements committed on their own (autocommit; no BEGIN on SQLite):
        # with no pending change, its commit would send nothing, so closing it is the whole
        # exit (one greenlet hop, not two). Closed in this task: what ``async with`` adds is a
        # task of its own for the close, so that a cancellation cannot abandon a connection
        # mid-way; here that path is the one below, taken by anything raised meanwhile.
        await session.close()
    except BaseException:
        await session.__aexit__(None, None, None)  # rolled back and closed, even if cancelled
        raise


def session_of(request: Request) -> AsyncSession:
    """The request's session, for a dependency below one that opened it (every dependency of
    an authenticated route sits below the caller's, which depends on ``SessionDep``): one
    dependency fewer for FastAPI to solve on every request than declaring ``SessionDep`` again.
    The same instance ``SessionDep`` gives."""
    session: AsyncSession = request.state.db_session
    return session


# The dependencies are ``async`` although they await nothing: FastAPI runs a plain ``def``
# dependency in its thread pool, a round trip between threads on every request.
async def _settings(request: Request) -> Settings:
    return get_settings_dep(request)


async def _database(request: Request) -> Database:
    return get_database(request)


SettingsDep = Annotated[Settings, Depends(_settings)]
DatabaseDep = Annotated[Database, Depends(_database)]
SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]

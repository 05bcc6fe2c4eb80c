"""Request-scoped dependencies shared by every domain: the settings, the database, the session.

``SessionDep`` is the request's one session. Its dependency runs with ``scope="function"``, so its
exit (commit, or rollback on error) happens when the endpoint returns and *before* the response is
sent: a client never sees 2xx for a write that then failed to commit (commit at the edge, STYLE).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession

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
]

_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def get_settings_dep(request: Request) -> Settings:
    return components_of(request.app).get(Settings)


def get_database(request: Request) -> Database:
    db: Database = request.app.state.db
    return db


async def get_session(request: Request) -> AsyncIterator[AsyncSession]:
    db = get_database(request)
    write = request.method not in _READ_METHODS
    async with db.sessionmaker(write=write)() as session:
        request.state.db_session = session
        try:
            yield session
        except BaseException:
            await session.rollback()
            raise
        await session.commit()


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
DatabaseDep = Annotated[Database, Depends(get_database)]
SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]

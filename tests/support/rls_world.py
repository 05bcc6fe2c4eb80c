"""Two tenants with rows of their own, and an engine of the test's own, for the row-level
security tests (PostgreSQL)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator

from sqlalchemy.ext.asyncio import AsyncEngine

from hub.core.db import Database, create_engine
from tests.support.factories import make_principal, make_server, make_tenant

__all__ = ["own_engine", "two_tenants"]


async def two_tenants(db: Database) -> tuple[uuid.UUID, uuid.UUID]:
    a, b = await make_tenant(db), await make_tenant(db)
    for tenant in (a, b):
        await make_principal(db, tenant.id)
        await make_server(db, tenant.id, "files")
    return a.id, b.id


@contextlib.asynccontextmanager
async def own_engine(db: Database) -> AsyncIterator[AsyncEngine]:
    """The app's role on connections of this test's own (a statement that sets the scope by
    hand would leave the shared pool's connections out of step with what they are known to hold)."""
    engine = create_engine(db.engine.url.render_as_string(hide_password=False), pool_size=1)
    try:
        yield engine
    finally:
        await engine.dispose()

"""Passes over every tenant's rows, one tenant's row-level-security scope after the other.

Key rotation, readiness's key-id counts, the OAuth refresher's due scan: on PostgreSQL a
transaction sees one tenant's rows (:mod:`hub.core.rls`), and no wider scope exists, so a pass
lists the tenants (the ``tenants`` table has no policy: it is the list) and runs its query in each
tenant's scope. On SQLite there is no row-level security: one pass, unscoped.
"""

from __future__ import annotations

import sqlalchemy as sa

from hub.core.db import Database
from hub.core.rls import Scope
from hub.core.tenancy import system_scope

__all__ = ["every_tenant"]

_TENANTS = sa.table("tenants", sa.column("id", sa.Uuid()))  # no policy: it is the tenants' list


async def every_tenant(db: Database, *, reason: str) -> list[Scope | None]:
    """The scopes a pass over every tenant's rows runs in, one after the other: each tenant's
    on PostgreSQL, ``[None]`` (one unscoped pass) on SQLite."""
    if db.is_sqlite:
        return [None]
    async with db.session(write=False) as session:
        ids = (await session.execute(sa.select(_TENANTS.c.id).order_by(_TENANTS.c.id))).scalars()
        return [system_scope(tenant_id, reason=reason) for tenant_id in ids]

"""Passes over every tenant's rows, one tenant's row-level-security scope after the other.

Key rotation, the OAuth refresher's due scan, the drift watch: on PostgreSQL a transaction sees
one tenant's rows (:mod:`hub.core.rls`), and no wider scope exists, so a pass lists the tenants
(the ``tenants`` table has no policy: it is the list) and runs its query in each tenant's scope.
On SQLite there is no row-level security: one pass, unscoped.

What a request waits for is counted in one statement instead (:func:`count_every_tenant`):
``/readyz``'s key ids and ``/metrics``' gauges walked every tenant on each probe and scrape,
3.3 s with 1,000 tenants (migration 0904).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession

from hub.core.db import Database
from hub.core.rls import Scope
from hub.core.tenancy import TenantId, system_scope

__all__ = ["count_every_tenant", "every_tenant", "every_tenant_id"]

_T = TypeVar("_T")

_TENANTS = sa.table("tenants", sa.column("id", sa.Uuid()))  # no policy: it is the tenants' list


async def every_tenant(db: Database, *, reason: str) -> list[Scope | None]:
    """The scopes a pass over every tenant's rows runs in, one after the other: each tenant's
    on PostgreSQL, ``[None]`` (one unscoped pass) on SQLite."""
    if db.is_sqlite:
        return [None]
    return list(await every_tenant_id(db, reason=reason))


async def every_tenant_id(db: Database, *, reason: str) -> list[TenantId]:
    """Every tenant, on either backend: for a pass whose queries are tenant-scoped by
    construction (``scoped(…, TenantId)``) and so run tenant by tenant on SQLite too."""
    async with db.session(write=False) as session:
        ids = (await session.execute(sa.select(_TENANTS.c.id).order_by(_TENANTS.c.id))).scalars()
        return [system_scope(tenant_id, reason=reason) for tenant_id in ids]


async def count_every_tenant(
    db: Database,
    *,
    in_one_pass: Callable[[AsyncSession], Awaitable[_T]],
    through_definer: Callable[[AsyncSession], Awaitable[_T]],
) -> _T:
    """A count over every tenant's rows in one statement, in a read session of no tenant:
    ``in_one_pass`` on SQLite (no row-level security), ``through_definer`` on PostgreSQL, where
    only a ``SECURITY DEFINER`` function of the owner's (migration 0904: counts, key ids and
    drift marks, nothing of a tenant's own) sees past a tenant's rows."""
    async with db.session(write=False) as session:
        return await (in_one_pass if db.is_sqlite else through_definer)(session)

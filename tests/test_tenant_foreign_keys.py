"""References between a tenant's rows carry the tenant (SECURITY §7.32).

Every foreign key from a tenant-owned table to another tenant-owned table is composite,
``(tenant_id, x_id)`` → ``(tenant_id, id)``, so a row of tenant B can never point at tenant A's
row, whatever the code above the database does: the database refuses it (an ``IntegrityError``,
on both backends) before anything could read across tenants.
"""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import ForeignKeyConstraint, select
from sqlalchemy.exc import IntegrityError

from hub.core import clock
from hub.core.db import Database
from hub.models import ApiKey, Base, ConsoleSession
from tests.support.databases import owner_session
from tests.support.factories import make_catalog, make_principal, make_server, make_tenant, tool

# who acted, where that may be the platform admin (no tenant, and it passes every tenant route)
ACTORS = {("oauth_authorizations", "initiator_id")}


def test_every_reference_between_tenant_rows_carries_the_tenant() -> None:
    """For each column that points at another tenant-owned table, some foreign key pairs it
    with ``tenant_id`` (a plain one may sit beside it: a platform admin's key has no tenant,
    and a composite key with a NULL in it is not checked)."""
    checked = 0
    for table in Base.metadata.sorted_tables:
        if "tenant_id" not in table.c:
            continue
        keys = [c for c in table.constraints if isinstance(c, ForeignKeyConstraint)]
        composite = [
            {e.parent.name for e in key.elements}
            for key in keys
            if any(e.parent.name == e.column.name == "tenant_id" for e in key.elements)
        ]
        for key in keys:
            target = key.referred_table
            if target.name == "tenants" or "tenant_id" not in target.c:
                continue
            for element in key.elements:
                if element.parent.name == "tenant_id":
                    continue
                column = element.parent.name
                if (table.name, column) in ACTORS:
                    continue
                assert any(column in both for both in composite), (table.name, column)
                checked += 1
    assert checked >= 10  # catalogs, deployments, entries, approvals, keys, grants…


async def test_a_row_of_one_tenant_cannot_point_at_anothers(database: Database) -> None:
    a, b = await make_tenant(database), await make_tenant(database)
    a_server = await make_server(database, a.id, "linear")
    with pytest.raises(IntegrityError):  # B's catalog of A's server
        await make_catalog(database, b.id, a_server, [tool("t1")])
    assert await make_catalog(database, a.id, a_server, [tool("t1")])  # A's own: fine
    await make_principal(database, b.id)  # B is a working tenant


async def test_a_console_session_names_its_own_tenants_principal_and_key(
    database: Database,
) -> None:
    """The references migration 0907 made composite: B's session of A's principal and key."""
    a, b = await make_tenant(database), await make_tenant(database)
    actor = await make_principal(database, a.id)
    async with owner_session(database, write=False) as read:
        key = (await read.execute(select(ApiKey).where(ApiKey.tenant_id == a.id))).scalar_one()

    async def session_of(tenant: uuid.UUID) -> None:
        async with owner_session(database) as write:
            write.add(
                ConsoleSession(
                    id=uuid.uuid4(),
                    tenant_id=tenant,
                    principal_id=actor.principal_id,
                    api_key_id=key.id,
                    token_hash=uuid.uuid4().hex * 2,
                    last_seen_at=clock.now(),
                    created_at=clock.now(),
                )
            )

    with pytest.raises(IntegrityError):
        await session_of(b.id)
    await session_of(a.id)  # its own tenant's: fine

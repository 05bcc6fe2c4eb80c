"""Every grants query. Tenant-owned queries start from ``scoped(…, TenantId)``."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any
from typing import cast as typed

import sqlalchemy as sa
from sqlalchemy import Text, bindparam, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from hub.core.pagination import Page, PageParams, fetch_page
from hub.core.readahead import ReadAhead
from hub.core.statements import read_row
from hub.core.tenancy import TENANT_PARAM, TenantId, scoped, scoped_template, tenant_params
from hub.models import Grant, Principal

__all__ = [
    "VERSION_AHEAD",
    "RuleRow",
    "bump_grants_version",
    "count_grants",
    "find_duplicate",
    "get_grant",
    "get_principal",
    "grants_version_of",
    "list_grants",
    "rule_rows_of",
]


_PRINCIPAL = scoped_template(Principal).where(Principal.id == bindparam("principal_id"))


async def get_principal(
    session: AsyncSession, tenant_id: TenantId, principal_id: uuid.UUID
) -> Principal | None:
    params = tenant_params(tenant_id, principal_id=principal_id)
    return (await session.execute(_PRINCIPAL, params)).scalar_one_or_none()


_VERSION = select(Principal.__table__.c.grants_version).where(
    Principal.__table__.c.tenant_id == bindparam(TENANT_PARAM),
    Principal.__table__.c.id == bindparam("principal_id"),
)

#: ``POST …/grants/check``'s read of the principal it names, sent with the caller's key
#: (:mod:`hub.core.readahead`; a check about oneself uses the key's own version instead)
VERSION_AHEAD = ReadAhead(_VERSION, body={"principal_id": "principal_id"})


async def grants_version_of(
    session: AsyncSession, tenant_id: TenantId, principal_id: uuid.UUID
) -> int | None:
    """The principal's ``grants_version``, or None when it is not in the tenant (one column)."""
    params = tenant_params(tenant_id, principal_id=principal_id)
    row = await read_row(session, _VERSION, params)
    return None if row is None else int(row[0])


_GRANT = Grant.__table__.c
_RULE_ROWS = select(
    _GRANT.id,
    _GRANT.resource,
    _GRANT.action,
    _GRANT.effect,
    _GRANT.expires_at,
    # as the database's text: nearly every grant's is ``{}``, and decoding it was the largest
    # cost of reading a policy (to_rule decodes the others)
    sa.cast(_GRANT.conditions, Text),
).where(
    _GRANT.tenant_id == bindparam(TENANT_PARAM), _GRANT.principal_id == bindparam("principal_id")
)
#: ``(id, resource, action, effect, expires_at, conditions)``
RuleRow = tuple[uuid.UUID, str, str, str, Any, Any]


async def rule_rows_of(
    session: AsyncSession, tenant_id: TenantId, principal_id: uuid.UUID
) -> tuple[int, Sequence[RuleRow]]:
    """The principal's ``grants_version`` and, for each grant, what the engine needs of it, as
    plain rows: building a ``Grant`` object per row made a policy of 100,000 grants cost 2.3 to
    3.4 s of the event loop to read, plain rows 0.3 to 0.8 s (stop 44). ``conditions`` comes as
    the database's JSON text (or, where the driver decodes JSON itself, as the object). ``-1``
    and no rows when the principal is not in the tenant."""
    params = tenant_params(tenant_id, principal_id=principal_id)
    row = await read_row(session, _VERSION, params)
    if row is None:
        return -1, ()
    rows = (await session.execute(_RULE_ROWS, params)).all()
    return int(row[0]), typed(Sequence[RuleRow], rows)  # rows unpack as tuples do


_COUNT = select(func.count()).where(
    _GRANT.tenant_id == bindparam(TENANT_PARAM), _GRANT.principal_id == bindparam("principal_id")
)


async def count_grants(session: AsyncSession, tenant_id: TenantId, principal_id: uuid.UUID) -> int:
    """How many grants the principal holds."""
    params = tenant_params(tenant_id, principal_id=principal_id)
    return int((await session.execute(_COUNT, params)).scalar_one())


async def get_grant(
    session: AsyncSession, tenant_id: TenantId, grant_id: uuid.UUID
) -> Grant | None:
    query = scoped(Grant, tenant_id).where(Grant.id == grant_id)
    return (await session.execute(query)).scalar_one_or_none()


async def find_duplicate(
    session: AsyncSession, tenant_id: TenantId, principal_id: uuid.UUID, resource: str, action: str
) -> Grant | None:
    query = scoped(Grant, tenant_id).where(
        Grant.principal_id == principal_id, Grant.resource == resource, Grant.action == action
    )
    return (await session.execute(query)).scalar_one_or_none()


async def list_grants(
    session: AsyncSession,
    tenant_id: TenantId,
    params: PageParams,
    principal_id: uuid.UUID | None = None,
) -> Page[Grant]:
    query = scoped(Grant, tenant_id)
    if principal_id is not None:
        query = query.where(Grant.principal_id == principal_id)
    return await fetch_page(session, query, params, order=(Grant.created_at, Grant.id))


async def bump_grants_version(
    session: AsyncSession, tenant_id: TenantId, principal_id: uuid.UUID
) -> None:
    await session.execute(
        update(Principal)
        .where(Principal.tenant_id == tenant_id.value, Principal.id == principal_id)
        .values(grants_version=Principal.grants_version + 1)
        .execution_options(synchronize_session=False)
    )

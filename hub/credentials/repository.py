"""Every credentials query. Tenant-owned queries start from ``scoped(…, TenantId)``; the two
rotation queries are explicitly cross-tenant (a system job) and say so in their names."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import and_, func, or_, select, text, union_all, update
from sqlalchemy.ext.asyncio import AsyncSession

from hub.core.pagination import Page, PageParams, fetch_page
from hub.core.tenancy import TenantId, scoped
from hub.models import Credential
from hub.models.credential import ENCRYPTED_FIELDS

__all__ = [
    "compare_and_swap",
    "count_by_key_id_all_tenants",
    "count_by_key_id_every_tenant",
    "count_rows_to_rewrap_all_tenants",
    "get_credential",
    "list_credentials",
    "lock_rows_to_rewrap_all_tenants",
    "update_sealed_columns",
]


async def get_credential(
    session: AsyncSession, tenant_id: TenantId, credential_id: uuid.UUID
) -> Credential | None:
    query = scoped(Credential, tenant_id).where(Credential.id == credential_id)
    return (await session.execute(query)).scalar_one_or_none()


async def list_credentials(
    session: AsyncSession, tenant_id: TenantId, params: PageParams
) -> Page[Credential]:
    return await fetch_page(
        session, scoped(Credential, tenant_id), params, order=(Credential.created_at, Credential.id)
    )


async def compare_and_swap(
    session: AsyncSession,
    tenant_id: TenantId,
    credential_id: uuid.UUID,
    expected_version: int,
    values: dict[str, Any],
) -> bool:
    """Apply ``values`` and bump the version only if the row still has ``expected_version``."""
    result = await session.execute(
        update(Credential)
        .where(
            Credential.tenant_id == tenant_id.value,
            Credential.id == credential_id,
            Credential.version == expected_version,
        )
        .values(**values, version=Credential.version + 1)
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def _key_column(field: str) -> Any:
    return getattr(Credential, f"{field}_key_id")


def _not_under(active_key_id: str) -> Any:
    return or_(
        *(
            and_(_key_column(f).is_not(None), _key_column(f) != active_key_id)
            for f in ENCRYPTED_FIELDS
        )
    )


async def lock_rows_to_rewrap_all_tenants(
    session: AsyncSession, active_key_id: str, batch_size: int, skip: Collection[uuid.UUID] = ()
) -> Sequence[Credential]:
    """Rows with any field not under the active key, locked; rows others hold are skipped."""
    query = select(Credential).where(_not_under(active_key_id))
    if skip:
        query = query.where(Credential.id.not_in(list(skip)))
    query = query.order_by(Credential.id).limit(batch_size).with_for_update(skip_locked=True)
    return (await session.execute(query)).scalars().all()


_KEY_IDS_OF_EVERY_TENANT = text("SELECT key_id, n FROM hub_credential_key_ids()")


async def count_by_key_id_every_tenant(session: AsyncSession) -> dict[str, int]:
    """:func:`count_by_key_id_all_tenants` over every tenant at once, by the ``SECURITY DEFINER``
    ``hub_credential_key_ids()`` (PostgreSQL, migration 0904)."""
    rows = (await session.execute(_KEY_IDS_OF_EVERY_TENANT)).all()
    return {str(key_id): int(n) for key_id, n in rows}


async def count_rows_to_rewrap_all_tenants(
    session: AsyncSession, active_key_id: str, skip: Collection[uuid.UUID] = ()
) -> int:
    query = select(func.count()).select_from(Credential).where(_not_under(active_key_id))
    if skip:
        query = query.where(Credential.id.not_in(list(skip)))
    return int((await session.execute(query)).scalar_one())


async def update_sealed_columns(
    session: AsyncSession, credential_id: uuid.UUID, values: dict[str, Any]
) -> None:
    """Write re-encrypted columns only: ``version`` is untouched (rotation is not a change)."""
    await session.execute(
        update(Credential)
        .where(Credential.id == credential_id)
        .values(**values)
        .execution_options(synchronize_session=False)
    )


async def count_by_key_id_all_tenants(session: AsyncSession) -> dict[str, int]:
    """How many encrypted fields each key id protects, over every tenant."""
    parts = [
        select(_key_column(f).label("key_id")).where(_key_column(f).is_not(None))
        for f in ENCRYPTED_FIELDS
    ]
    used = union_all(*parts).subquery()
    query = select(used.c.key_id, func.count()).group_by(used.c.key_id)
    return {str(k): int(n) for k, n in (await session.execute(query)).all()}

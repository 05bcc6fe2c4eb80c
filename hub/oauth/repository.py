"""Every query of the OAuth domain.

Tenant-owned queries start from ``scoped(…, TenantId)``. Two are cross-tenant on purpose and say
so in their names: the callback's lookup by state digest (the state is the capability; the row
then names its tenant) and the refresher's scan for credentials due soon (a system job).

The refresh lease (DESIGN §15): :func:`lock_credential` takes the row with
``FOR UPDATE SKIP LOCKED`` on PostgreSQL (``None`` when another transaction holds it), the
caller sets ``refresh_lease_until``/``refresh_lease_holder`` in the same short transaction, and
:func:`write_by_holder` later writes the result only while the lease is still its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Uuid, and_, column, delete, func, or_, select, text, union_all, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from hub.core.tenancy import TenantId, scoped
from hub.models import Credential, OAuthAuthorization, OAuthClient, Principal, Tenant

__all__ = [
    "active_tenants",
    "claim_authorization",
    "count_reauthorizations",
    "count_sealed_by_key_id_all_tenants",
    "count_sealed_by_key_id_every_tenant",
    "find_by_state_all_tenants",
    "finish_authorization",
    "forget_dynamic_client",
    "get_authorization",
    "get_client",
    "get_credential",
    "get_platform_principal",
    "get_principal",
    "lock_credential",
    "lock_due",
    "lock_to_rewrap_all_tenants",
    "tenant_of_state",
    "tenants_due",
    "tenants_due_every_tenant",
    "update_credential",
    "update_sealed",
    "write_by_holder",
]


# ---------------------------------------------------------------------------- clients
async def get_client(session: AsyncSession, tenant_id: TenantId, issuer: str) -> OAuthClient | None:
    query = scoped(OAuthClient, tenant_id).where(OAuthClient.issuer == issuer)
    return (await session.execute(query)).scalar_one_or_none()


async def forget_dynamic_client(
    session: AsyncSession, tenant_id: TenantId, issuer: str, client_id: str
) -> bool:
    """Delete the kept client for ``issuer`` if it is still the dynamic registration
    ``client_id`` (its server answered ``invalid_client``); any other kept client stays."""
    result = await session.execute(
        delete(OAuthClient)
        .where(
            OAuthClient.tenant_id == tenant_id.value,
            OAuthClient.issuer == issuer,
            OAuthClient.client_id == client_id,
            OAuthClient.registration == "dynamic",
        )
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------- initiators
async def get_principal(
    session: AsyncSession, tenant_id: TenantId, principal_id: uuid.UUID
) -> Principal | None:
    """A flow's initiator when it is one of the tenant's principals."""
    query = scoped(Principal, tenant_id).where(Principal.id == principal_id)
    return (await session.execute(query)).scalar_one_or_none()


async def get_platform_principal(
    session: AsyncSession, principal_id: uuid.UUID
) -> Principal | None:
    """A flow's initiator when it is the platform admin (who acts in every tenant)."""
    query = select(Principal).where(
        Principal.id == principal_id, Principal.is_platform_admin.is_(True)
    )
    return (await session.execute(query)).scalar_one_or_none()


# ---------------------------------------------------------------------------- authorizations
async def get_authorization(
    session: AsyncSession, tenant_id: TenantId, authorization_id: uuid.UUID
) -> OAuthAuthorization | None:
    query = scoped(OAuthAuthorization, tenant_id).where(OAuthAuthorization.id == authorization_id)
    return (await session.execute(query)).scalar_one_or_none()


_STATE_TENANT_DEFINER = text("SELECT hub_oauth_state_tenant(:digest)").columns(
    column("hub_oauth_state_tenant", Uuid())
)


async def tenant_of_state(session: AsyncSession, digest: str) -> uuid.UUID | None:
    """The tenant of the flow whose state has ``digest``, before that tenant is known: on
    PostgreSQL through a SECURITY DEFINER function (row-level security would hide the row)."""
    if session.get_bind().dialect.name == "postgresql":
        found = (await session.execute(_STATE_TENANT_DEFINER, {"digest": digest})).scalar()
        return found if isinstance(found, uuid.UUID) else None
    query = select(OAuthAuthorization.tenant_id).where(OAuthAuthorization.state_hash == digest)
    return (await session.execute(query)).scalar_one_or_none()


async def find_by_state_all_tenants(
    session: AsyncSession, digest: str
) -> OAuthAuthorization | None:
    """The flow a callback's state belongs to, whatever its tenant (the state is the key)."""
    query = select(OAuthAuthorization).where(OAuthAuthorization.state_hash == digest)
    return (await session.execute(query)).scalar_one_or_none()


async def claim_authorization(
    session: AsyncSession, tenant_id: TenantId, authorization_id: uuid.UUID
) -> datetime | None:
    """``pending`` → ``redeeming``: exactly one callback wins, and learns the flow's expiry
    (an expired one it fails, ``state_expired``); ``None`` for the others."""
    result = await session.execute(
        update(OAuthAuthorization)
        .where(
            OAuthAuthorization.tenant_id == tenant_id.value,
            OAuthAuthorization.id == authorization_id,
            OAuthAuthorization.status == "pending",
        )
        .values(status="redeeming")
        .returning(OAuthAuthorization.expires_at)
        .execution_options(synchronize_session=False)
    )
    expires_at: datetime | None = result.scalar_one_or_none()
    return expires_at


async def finish_authorization(
    session: AsyncSession,
    tenant_id: TenantId,
    authorization_id: uuid.UUID,
    *,
    status: str,
    now: datetime,
    reason: str | None = None,
    credential_id: uuid.UUID | None = None,
) -> None:
    values: dict[str, Any] = {"status": status, "reason": reason, "completed_at": now}
    if credential_id is not None:
        values["credential_id"] = credential_id
    # the encrypted verifier and client secret are of no use any more
    for field in ("verifier", "client_secret"):
        values.update(
            {f"{field}_key_id": None, f"{field}_nonce": None, f"{field}_ciphertext": None}
        )
    await session.execute(
        update(OAuthAuthorization)
        .where(
            OAuthAuthorization.tenant_id == tenant_id.value,
            OAuthAuthorization.id == authorization_id,
        )
        .values(**values)
        .execution_options(synchronize_session=False)
    )


async def count_reauthorizations(
    session: AsyncSession, tenant_id: TenantId, credential_id: uuid.UUID, since: datetime
) -> int:
    """Step-up authorisations of one credential started since ``since``."""
    query = (
        select(func.count())
        .select_from(OAuthAuthorization)
        .where(
            OAuthAuthorization.tenant_id == tenant_id.value,
            OAuthAuthorization.credential_id == credential_id,
            OAuthAuthorization.step_up.is_(True),
            OAuthAuthorization.created_at >= since,
        )
    )
    return int((await session.execute(query)).scalar_one())


# ---------------------------------------------------------------------------- credentials
async def get_credential(
    session: AsyncSession, tenant_id: TenantId, credential_id: uuid.UUID
) -> Credential | None:
    query = scoped(Credential, tenant_id).where(Credential.id == credential_id)
    return (await session.execute(query)).scalar_one_or_none()


async def lock_credential(
    session: AsyncSession, tenant_id: TenantId, credential_id: uuid.UUID
) -> Credential | None:
    """The row, locked for this transaction; ``None`` when another transaction holds it (on
    PostgreSQL; SQLite serialises writers with ``BEGIN IMMEDIATE`` and ignores the clause)."""
    query = (
        scoped(Credential, tenant_id)
        .where(Credential.id == credential_id)
        .with_for_update(skip_locked=True)
        .execution_options(populate_existing=True)
    )
    return (await session.execute(query)).scalar_one_or_none()


async def update_credential(
    session: AsyncSession, tenant_id: TenantId, credential_id: uuid.UUID, values: dict[str, Any]
) -> None:
    """A hub-side write that is not a client's change (no version bump: refreshes, leases)."""
    await session.execute(
        update(Credential)
        .where(Credential.tenant_id == tenant_id.value, Credential.id == credential_id)
        .values(**values)
        .execution_options(synchronize_session=False)
    )


async def write_by_holder(
    session: AsyncSession,
    tenant_id: TenantId,
    credential_id: uuid.UUID,
    holder: str,
    values: dict[str, Any],
) -> bool:
    """Write ``values`` (and end the lease: ``values`` may set ``refresh_lease_until`` again, to
    hold further refreshes back) only while ``holder`` still holds it: a lease that expired and
    was taken over, or a re-authorisation meanwhile, makes this a no-op."""
    result = await session.execute(
        update(Credential)
        .where(
            Credential.tenant_id == tenant_id.value,
            Credential.id == credential_id,
            Credential.refresh_lease_holder == holder,
        )
        .values(**{"refresh_lease_until": None, "refresh_lease_holder": None, **values})
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def _due(due_before: datetime, now: datetime) -> tuple[ColumnElement[bool], ...]:
    """An OAuth credential whose token expires before ``due_before``, that holds a refresh
    token and no live lease."""
    return (
        Credential.type == "oauth_token",
        Credential.status == "active",
        Credential.oauth_token_endpoint.is_not(None),
        Credential.refresh_token_ciphertext.is_not(None),
        Credential.expires_at.is_not(None),
        Credential.expires_at < due_before,
        or_(
            Credential.refresh_lease_until.is_(None),
            and_(
                Credential.refresh_lease_until.is_not(None),
                Credential.refresh_lease_until < now,
            ),
        ),
    )


async def lock_due(
    session: AsyncSession, tenant_id: TenantId, due_before: datetime, now: datetime, limit: int
) -> Sequence[Credential]:
    """The tenant's credentials due (:func:`_due`), the most urgent first; locked, rows others
    hold skipped (the worker's claim)."""
    query = (
        scoped(Credential, tenant_id)
        .where(*_due(due_before, now))
        .order_by(Credential.expires_at, Credential.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return (await session.execute(query)).scalars().all()


async def tenants_due(
    session: AsyncSession, due_before: datetime, now: datetime
) -> list[uuid.UUID]:
    """The active tenants holding a credential due, the most urgent first, in every tenant the
    session sees (SQLite's; on PostgreSQL :func:`tenants_due_every_tenant`)."""
    query = (
        select(Credential.tenant_id)
        .join(Tenant, Tenant.id == Credential.tenant_id)
        .where(*_due(due_before, now), Tenant.status == "active")
        .group_by(Credential.tenant_id)
        .order_by(func.min(Credential.expires_at), Credential.tenant_id)
    )
    return list((await session.execute(query)).scalars())


_TENANTS_DUE = text(
    "SELECT due AS tenant_id FROM hub_oauth_due_tenants(:due_before, :now) AS due"
).columns(column("tenant_id", Uuid()))


async def tenants_due_every_tenant(
    session: AsyncSession, due_before: datetime, now: datetime
) -> list[uuid.UUID]:
    """The active tenants holding a credential :func:`lock_due` would claim, the most
    urgent first, by the ``SECURITY DEFINER`` ``hub_oauth_due_tenants()`` (PostgreSQL,
    migration 0904), which names disabled tenants too: :func:`active_tenants` drops them."""
    params = {"due_before": due_before, "now": now}
    due = list((await session.execute(_TENANTS_DUE, params)).scalars())
    active = await active_tenants(session, due)
    return [tenant for tenant in due if tenant in active]


async def active_tenants(session: AsyncSession, tenant_ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    """Those of ``tenant_ids`` that are ``active`` (the tenants table has no row-level security)."""
    if not tenant_ids:
        return set()
    query = select(Tenant.id).where(Tenant.id.in_(list(tenant_ids)), Tenant.status == "active")
    return set((await session.execute(query)).scalars())


# ---------------------------------------------------------------------------- key rotation
Sealed = tuple[tuple[type[Any], bytes, tuple[str, ...]], ...]


async def count_sealed_by_key_id_all_tenants(
    session: AsyncSession, tables: Sealed
) -> dict[str, int]:
    """How many sealed OAuth fields each key id protects, over every tenant."""
    parts = []
    for model, _prefix, fields in tables:
        for field in fields:
            column = getattr(model, f"{field}_key_id")
            parts.append(select(column.label("key_id")).where(column.is_not(None)))
    used = union_all(*parts).subquery()
    query = select(used.c.key_id, func.count()).group_by(used.c.key_id)
    return {str(k): int(n) for k, n in (await session.execute(query)).all()}


_SEALED_KEY_IDS_OF_EVERY_TENANT = text("SELECT key_id, n FROM hub_oauth_key_ids()")


async def count_sealed_by_key_id_every_tenant(session: AsyncSession) -> dict[str, int]:
    """:func:`count_sealed_by_key_id_all_tenants` of the OAuth tables over every tenant at once,
    by the ``SECURITY DEFINER`` ``hub_oauth_key_ids()`` (PostgreSQL, migration 0904)."""
    rows = (await session.execute(_SEALED_KEY_IDS_OF_EVERY_TENANT)).all()
    return {str(key_id): int(n) for key_id, n in rows}


async def lock_to_rewrap_all_tenants(
    session: AsyncSession,
    model: type[Any],
    fields: tuple[str, ...],
    active_key_id: str,
    batch_size: int,
    skip: set[Any],
) -> Sequence[Any]:
    """Rows of ``model`` with a sealed field under another key; locked, held rows skipped."""
    stale = or_(
        *(
            and_(
                getattr(model, f"{f}_key_id").is_not(None),
                getattr(model, f"{f}_key_id") != active_key_id,
            )
            for f in fields
        )
    )
    query = select(model).where(stale)
    if skip:
        query = query.where(model.id.not_in(list(skip)))
    query = query.order_by(model.id).limit(batch_size).with_for_update(skip_locked=True)
    return (await session.execute(query)).scalars().all()


async def update_sealed(
    session: AsyncSession, model: type[Any], row_id: Any, values: dict[str, Any]
) -> None:
    await session.execute(
        update(model)
        .where(model.id == row_id)
        .values(**values)
        .execution_options(synchronize_session=False)
    )

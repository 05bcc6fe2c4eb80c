"""API-key lifecycle: issue (shown once), list, revoke, roll; the platform admin's own keys too.

Only HMAC-SHA256(pepper, key) is stored. Revocation takes effect on the next request (nothing
caches a positive authentication). Rolling issues a new key and sets the old one's expiry, which may
be now or later but never later than it already was.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from hub.audit.actions import Action
from hub.audit.service import record
from hub.auth.caller import Caller, TenantAccess
from hub.auth.console_sessions import end_sessions_of_key
from hub.auth.key_format import display_prefix, generate_key, hash_key
from hub.core import clock
from hub.core.errors import BadRequest, Conflict, NotFound
from hub.core.pagination import Page, PageParams
from hub.core.tenancy import TenantId
from hub.grants import service as grants_service
from hub.grants.cache import PolicyCache
from hub.models import ApiKey, Principal
from hub.principals import repository
from hub.principals.schemas import KeyCreate, KeyRoll

__all__ = [
    "IssuedKey",
    "create_key",
    "issue_key",
    "list_keys",
    "list_platform_keys",
    "revoke_key",
    "revoke_platform_key",
    "roll_key",
    "roll_platform_key",
]

IssuedKey = tuple[ApiKey, str]


def issue_key(
    session: AsyncSession,
    pepper: bytes,
    *,
    tenant_id: uuid.UUID | None,
    principal_id: uuid.UUID,
    expires_at: datetime | None,
) -> IssuedKey:
    """Add a new key row; the plaintext is returned once and never stored."""
    plaintext, key_id = generate_key()
    row = ApiKey(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        principal_id=principal_id,
        key_id=key_id,
        key_hash=hash_key(pepper, plaintext),
        prefix=display_prefix(key_id),
        last4=plaintext[-4:],
        expires_at=expires_at,
        created_at=clock.now(),
    )
    session.add(row)
    return row, plaintext


def _check_future(expires_at: datetime | None) -> None:
    if expires_at is not None and expires_at <= clock.now():
        raise BadRequest("expires_at must be in the future")


def _ensure_usable(key: ApiKey) -> None:
    now = clock.now()
    if key.revoked_at is not None or (key.expires_at is not None and key.expires_at <= now):
        raise Conflict("the key is revoked or expired")


def _new_old_expiry(key: ApiKey, requested: datetime) -> datetime:
    now = clock.now()
    if key.expires_at is not None and requested > key.expires_at:
        raise BadRequest("old_key_expires_at cannot extend the key's life")
    return max(requested, now)


async def _principal(session: AsyncSession, access: TenantAccess, pid: uuid.UUID) -> Principal:
    principal = await repository.get_principal(session, access.tenant_id, pid)
    if principal is None:
        raise NotFound("principal not found")
    return principal


async def _audit(
    session: AsyncSession,
    tenant_id: TenantId | None,
    caller: Caller,
    action: Action,
    key: ApiKey,
) -> None:
    await record(
        session,
        tenant_id=tenant_id,
        actor_id=caller.principal_id,
        action=action,
        resource=f"principal:{key.principal_id}/key:{key.id}",
        request_id=caller.request_id,
        details={"prefix": key.prefix},
    )


async def create_key(
    session: AsyncSession,
    cache: PolicyCache,
    access: TenantAccess,
    pepper: bytes,
    principal_id: uuid.UUID,
    data: KeyCreate,
) -> IssuedKey:
    principal = await _principal(session, access, principal_id)
    if principal.disabled_at is not None:
        raise Conflict("the principal is disabled")
    _check_future(data.expires_at)
    await grants_service.ensure_may_act_as(session, cache, access, principal.id)
    issued = issue_key(
        session,
        pepper,
        tenant_id=access.tenant_id.value,
        principal_id=principal.id,
        expires_at=data.expires_at,
    )
    await session.flush()
    await _audit(session, access.tenant_id, access.caller, Action.API_KEY_CREATE, issued[0])
    return issued


async def list_keys(
    session: AsyncSession, access: TenantAccess, principal_id: uuid.UUID, params: PageParams
) -> Page[ApiKey]:
    await _principal(session, access, principal_id)
    return await repository.list_keys(session, access.tenant_id, principal_id, params)


async def _tenant_key(
    session: AsyncSession, access: TenantAccess, principal_id: uuid.UUID, key_id: uuid.UUID
) -> ApiKey:
    key = await repository.get_key(session, access.tenant_id, principal_id, key_id)
    if key is None:
        raise NotFound("key not found")
    return key


async def revoke_key(
    session: AsyncSession, access: TenantAccess, principal_id: uuid.UUID, key_id: uuid.UUID
) -> None:
    key = await _tenant_key(session, access, principal_id, key_id)
    await grants_service.ensure_may_manage(session, access, principal_id)
    if key.revoked_at is None:
        key.revoked_at = clock.now()
        await session.flush()
    await end_sessions_of_key(session, key.id)  # its console sessions end with it
    await _audit(session, access.tenant_id, access.caller, Action.API_KEY_REVOKE, key)


async def roll_key(
    session: AsyncSession,
    cache: PolicyCache,
    access: TenantAccess,
    pepper: bytes,
    principal_id: uuid.UUID,
    key_id: uuid.UUID,
    data: KeyRoll,
) -> IssuedKey:
    key = await _tenant_key(session, access, principal_id, key_id)
    _ensure_usable(key)
    _check_future(data.expires_at)
    await grants_service.ensure_may_act_as(session, cache, access, principal_id)
    key.expires_at = _new_old_expiry(key, data.old_key_expires_at)
    issued = issue_key(
        session,
        pepper,
        tenant_id=access.tenant_id.value,
        principal_id=principal_id,
        expires_at=data.expires_at,
    )
    await session.flush()
    await _audit(session, access.tenant_id, access.caller, Action.API_KEY_ROLL, key)
    return issued


# --- the platform admin's own keys -----------------------------------------------------------


async def create_platform_key(
    session: AsyncSession, caller: Caller, pepper: bytes, data: KeyCreate
) -> IssuedKey:
    _check_future(data.expires_at)
    issued = issue_key(
        session,
        pepper,
        tenant_id=None,
        principal_id=caller.principal_id,
        expires_at=data.expires_at,
    )
    await session.flush()
    await _audit(session, None, caller, Action.PLATFORM_KEY_CREATE, issued[0])
    return issued


async def list_platform_keys(
    session: AsyncSession, caller: Caller, params: PageParams
) -> Page[ApiKey]:
    return await repository.list_platform_admin_keys(session, caller.principal_id, params)


async def _platform_key(session: AsyncSession, caller: Caller, key_id: uuid.UUID) -> ApiKey:
    key = await repository.get_platform_admin_key(session, caller.principal_id, key_id)
    if key is None:
        raise NotFound("key not found")
    return key


async def revoke_platform_key(session: AsyncSession, caller: Caller, key_id: uuid.UUID) -> None:
    key = await _platform_key(session, caller, key_id)
    if key.revoked_at is None:
        key.revoked_at = clock.now()
        await session.flush()
    await end_sessions_of_key(session, key.id)
    await _audit(session, None, caller, Action.PLATFORM_KEY_REVOKE, key)


async def roll_platform_key(
    session: AsyncSession, caller: Caller, pepper: bytes, key_id: uuid.UUID, data: KeyRoll
) -> IssuedKey:
    key = await _platform_key(session, caller, key_id)
    _ensure_usable(key)
    _check_future(data.expires_at)
    key.expires_at = _new_old_expiry(key, data.old_key_expires_at)
    issued = issue_key(
        session,
        pepper,
        tenant_id=None,
        principal_id=caller.principal_id,
        expires_at=data.expires_at,
    )
    await session.flush()
    await _audit(session, None, caller, Action.PLATFORM_KEY_ROLL, key)
    return issued

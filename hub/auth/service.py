"""Authenticating an API key (DESIGN §9, §13; SECURITY §3).

Order: parse and checksum (no I/O: garbage never reaches the database, nor opens a connection) →
one query on the request's own session for the key row, its principal (with ``grants_version``)
and its tenant's status (:func:`hub.core.db.preliminary_reads`: a write request's authentication
never takes the write lock) → HMAC compare in constant time (computed even for an unknown id) →
revoked, expired, disabled principal or tenant. Every failure raises the same ``Unauthorized``.
On PostgreSQL the key is read by a ``SECURITY DEFINER`` function (its tenant is not known yet, so
row-level security would hide it); once admitted, the caller's tenant is the request's RLS scope.
Nothing about a key is cached: each request reads its row, so revoking, expiring or disabling
takes effect on the very next request, on every replica.

``last_used_at`` is written at most once a minute per key, by a conditional UPDATE (concurrent
requests still write it once). It rides on the request's session but outside any transaction:
preliminary reads run in autocommit, so the UPDATE commits on its own at once. It never joins the
request's transaction, where it would turn a read into a write (SQLite's lock, a PostgreSQL row
lock held until the request commits) and be lost when the request rolls back; and it needs no
second connection, so it cannot wait for one while holding the request's.
"""

from __future__ import annotations

import hmac
import logging
import uuid
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from hub.auth import repository
from hub.auth.ahead import find_key_ahead
from hub.auth.caller import Caller
from hub.auth.key_format import ParsedKey, hash_key
from hub.core import clock, readahead, rls
from hub.core.db import preliminary_reads
from hub.core.errors import Unauthorized
from hub.core.readahead import ReadAhead
from hub.core.tenancy import TenantId, tenant_params

__all__ = [
    "DEFINER_KEY_COLUMNS",
    "LAST_USED_INTERVAL",
    "admit_key_row",
    "admit_key_values",
    "authenticate",
]

log = logging.getLogger("hub.auth")

LAST_USED_INTERVAL = timedelta(seconds=60)
_DUMMY_HASH = "0" * 64


async def authenticate(
    session: AsyncSession,
    pepper: bytes,
    key: ParsedKey,
    request_id: str,
    ahead: tuple[ReadAhead, Mapping[str, Any]] | None = None,
) -> Caller:
    """The caller ``key`` authenticates, read on the request's ``session``; 401 otherwise.
    ``ahead``: the route's first read and its parameters, sent with the key's read on
    PostgreSQL and remembered on the session for the route (:mod:`hub.core.readahead`)."""
    computed = hash_key(pepper, key.full)
    rls.expect_scope_from_statement()  # the key's read sets the scope (PostgreSQL)
    async with preliminary_reads(session):
        if ahead is None:
            record = await repository.find_key(session, key.key_id)
            return await _admit_and_touch(session, record, computed, request_id)
        spec, params = ahead
        record, row = await find_key_ahead(session, key.key_id, computed, spec, params)
        caller = await _admit_and_touch(session, record, computed, request_id)
        if row is not None and caller.tenant_id is not None:
            readahead.remember(
                session, spec.statement, tenant_params(caller.tenant_id, **params), row
            )
        return caller


#: the typed columns a definer returning the key's row starts with (see :func:`admit_key_values`)
DEFINER_KEY_COLUMNS = repository.DEFINER_KEY_COLUMNS


async def admit_key_values(
    session: AsyncSession, values: Sequence[Any], computed: str, request_id: str
) -> Caller:
    """:func:`authenticate` for a key row another statement on ``session`` read — a definer
    whose first columns are :data:`DEFINER_KEY_COLUMNS` and which set the RLS scope as
    ``hub_auth_key`` does (noted with :func:`hub.core.rls.set_by_statement`): the gateway reads
    the key and the deployment in one round trip. ``computed`` is :func:`hash_key` of the
    presented key; every check, and the ``last_used_at`` touch, is :func:`authenticate`'s."""
    record = repository.key_record_of(values)
    return await _admit_and_touch(session, record, computed, request_id)


async def _admit_and_touch(
    session: AsyncSession,
    record: repository.KeyRecord | None,
    computed: str,
    request_id: str,
) -> Caller:
    caller = _admit(record, computed, request_id)
    # row-level security's scope from here on: the caller's tenant (the platform admin's own
    # rows belong to no tenant); the key itself was read by a SECURITY DEFINER function
    await rls.enter(session, caller.tenant_id or rls.PLATFORM)
    last_used = record.last_used_at if record is not None else None
    now = clock.now()
    if last_used is None or last_used < now - LAST_USED_INTERVAL:
        # outside any transaction (preliminary reads): this UPDATE commits on its own
        await repository.touch_last_used(session, caller.api_key_id, now, LAST_USED_INTERVAL)
    return caller


async def admit_key_row(session: AsyncSession, api_key_id: uuid.UUID, request_id: str) -> Caller:
    """The caller of the key row ``api_key_id`` — for a console session, which proved the key
    when it was opened — with every other check of :func:`authenticate` (revoked, expired,
    disabled principal or tenant: 401), read on the request's ``session``."""
    async with preliminary_reads(session):
        record = await repository.find_key_by_row(session, api_key_id)
    if record is None:
        raise Unauthorized()
    return _live(record, request_id)


def _admit(record: repository.KeyRecord | None, computed: str, request_id: str) -> Caller:
    stored = record.key_hash if record is not None else _DUMMY_HASH
    if not hmac.compare_digest(stored, computed) or record is None:
        raise Unauthorized()
    return _live(record, request_id)


def _live(record: repository.KeyRecord, request_id: str) -> Caller:
    now = clock.now()
    if record.revoked_at is not None or (
        record.expires_at is not None and record.expires_at <= now
    ):
        raise Unauthorized()
    if record.disabled_at is not None:
        raise Unauthorized()
    if record.is_platform_admin:
        tenant_id = None
    elif record.tenant_id is None or record.tenant_status != "active":
        raise Unauthorized()
    else:
        tenant_id = TenantId._mint(record.tenant_id)  # authentication mints the caller's tenant
    return Caller(
        principal_id=record.principal_id,
        tenant_id=tenant_id,
        kind=record.kind,
        role=record.role,
        is_platform_admin=record.is_platform_admin,
        api_key_id=record.api_key_id,
        grants_version=record.grants_version,
        request_id=request_id,
    )

"""Authenticating an API key (DESIGN §9, §13; SECURITY §3).

Order: parse and checksum (no I/O: garbage never reaches the database) → look the key id up in a
short read session of its own → HMAC compare in constant time (computed even for an unknown id) →
revoked, expired, disabled principal or tenant. Every failure raises the same ``Unauthorized``.
``last_used_at`` is written at most once a minute per key, in its own short write session, by a
conditional UPDATE so concurrent requests still write it once.
"""

from __future__ import annotations

import hmac
import logging
from datetime import timedelta

from hub.auth import repository
from hub.auth.caller import Caller
from hub.auth.key_format import hash_key, parse_key
from hub.core import clock
from hub.core.db import Database
from hub.core.errors import Unauthorized
from hub.core.tenancy import TenantId

__all__ = ["LAST_USED_INTERVAL", "authenticate"]

log = logging.getLogger("hub.auth")

LAST_USED_INTERVAL = timedelta(seconds=60)
_DUMMY_HASH = "0" * 64


async def authenticate(db: Database, pepper: bytes, raw_key: str | None, request_id: str) -> Caller:
    parsed = parse_key(raw_key)
    if parsed is None:
        raise Unauthorized()
    computed = hash_key(pepper, parsed.full)
    async with db.session(write=False) as session:
        record = await repository.find_key(session, parsed.key_id)
    stored = record.key.key_hash if record is not None else _DUMMY_HASH
    if not hmac.compare_digest(stored, computed) or record is None:
        raise Unauthorized()
    key, principal = record.key, record.principal
    now = clock.now()
    if key.revoked_at is not None or (key.expires_at is not None and key.expires_at <= now):
        raise Unauthorized()
    if principal.disabled_at is not None:
        raise Unauthorized()
    if principal.is_platform_admin:
        tenant_id = None
    elif principal.tenant_id is None or record.tenant_status != "active":
        raise Unauthorized()
    else:
        tenant_id = TenantId._mint(principal.tenant_id)  # authentication mints the caller's tenant
    if key.last_used_at is None or key.last_used_at < now - LAST_USED_INTERVAL:
        async with db.session(write=True) as session:
            await repository.touch_last_used(session, key.id, now, LAST_USED_INTERVAL)
    return Caller(
        principal_id=principal.id,
        tenant_id=tenant_id,
        kind=principal.kind,
        role=principal.role,
        is_platform_admin=principal.is_platform_admin,
        api_key_id=key.id,
        grants_version=principal.grants_version,
        request_id=request_id,
    )

"""Readiness: every key id a stored row names must be in the keyring (DESIGN §9)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from hub.core import rls
from hub.core.crypto import Keyring
from hub.core.db import Database
from hub.core.tenant_passes import every_tenant
from hub.credentials import repository

__all__ = ["keyring_covers_rows"]


def keyring_covers_rows(keyring: Keyring) -> Callable[[Database], Awaitable[str | None]]:
    async def check(db: Database) -> str | None:
        used: set[str] = set()
        for scope in await every_tenant(db, reason="readiness: key ids in use"):
            with rls.scope(scope):
                async with db.session(write=False) as session:
                    used.update(await repository.count_by_key_id_all_tenants(session))
        missing = sorted(k for k in used if not keyring.has(k))
        if missing:
            return "stored credentials name key ids missing from the keyring: " + ", ".join(missing)
        return None

    return check

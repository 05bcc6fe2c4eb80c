"""Readiness: every key id a stored row names must be in the keyring (DESIGN §9)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from hub.core.crypto import Keyring
from hub.core.db import Database
from hub.credentials.rotation import fields_by_key_id

__all__ = ["keyring_covers_rows"]


def keyring_covers_rows(keyring: Keyring) -> Callable[[Database], Awaitable[str | None]]:
    async def check(db: Database) -> str | None:
        missing = sorted(k for k in await fields_by_key_id(db) if not keyring.has(k))
        if missing:
            return "stored credentials name key ids missing from the keyring: " + ", ".join(missing)
        return None

    return check

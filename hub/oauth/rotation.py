"""Key rotation and readiness for the OAuth tables' encrypted fields (DESIGN §9).

``oauth_clients.client_secret`` and a flow's ``verifier`` and ``client_secret`` are sealed under
the keyring like credential fields (:mod:`hub.oauth.sealed`), so ``hub crypto rotate`` rewraps
them too (same AAD, fresh nonce, ``FOR UPDATE SKIP LOCKED`` batches, idempotent) and ``/readyz``
fails while a stored row names a key id missing from the ring. A finished flow has already
wiped its sealed fields; a pending one is rewrapped like the rest.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from hub.core import rls
from hub.core.crypto import CredentialUnavailable, Keyring, rewrapped_columns
from hub.core.db import Database
from hub.core.tenant_passes import count_every_tenant, every_tenant
from hub.models import OAuthAuthorization, OAuthClient
from hub.oauth import repository
from hub.oauth.sealed import CLIENT_AAD, STATE_AAD

__all__ = ["keyring_covers_oauth_rows", "oauth_fields_by_key_id", "rotate_oauth_fields"]

TABLES: tuple[tuple[type[Any], bytes, tuple[str, ...]], ...] = (
    (OAuthClient, CLIENT_AAD, ("client_secret",)),
    (OAuthAuthorization, STATE_AAD, ("verifier", "client_secret")),
)


async def oauth_fields_by_key_id(db: Database) -> dict[str, int]:
    """How many sealed OAuth fields each key id seals, over every tenant, in one statement."""

    async def in_one_pass(session: AsyncSession) -> dict[str, int]:
        return await repository.count_sealed_by_key_id_all_tenants(session, TABLES)

    return await count_every_tenant(
        db,
        in_one_pass=in_one_pass,
        through_definer=repository.count_sealed_by_key_id_every_tenant,
    )


def keyring_covers_oauth_rows(keyring: Keyring) -> Callable[[Database], Awaitable[str | None]]:
    async def check(db: Database) -> str | None:
        missing = sorted(k for k in await oauth_fields_by_key_id(db) if not keyring.has(k))
        if missing:
            return "stored OAuth secrets name key ids missing from the keyring: " + ", ".join(
                missing
            )
        return None

    return check


async def rotate_oauth_fields(db: Database, keyring: Keyring, *, batch_size: int = 200) -> int:
    """Rewrap every OAuth field not under the active key; the rows rewrapped (rows that do not
    decrypt are skipped: ``/readyz`` names their key), one tenant after the other."""
    done = 0
    for scope in await every_tenant(db, reason="key rotation rewraps every tenant's rows"):
        with rls.scope(scope):
            done += await _rotate_in_scope(db, keyring, batch_size)
    return done


async def _rotate_in_scope(db: Database, keyring: Keyring, batch_size: int) -> int:
    done = 0
    for model, prefix, fields in TABLES:
        skip: set[Any] = set()
        while True:
            async with db.session(write=True) as session:
                rows = await repository.lock_to_rewrap_all_tenants(
                    session, model, fields, keyring.active_key_id, batch_size, skip
                )
                for row in rows:
                    try:
                        values = rewrapped_columns(keyring, row, prefix, fields)
                    except CredentialUnavailable:
                        skip.add(row.id)
                        continue
                    await repository.update_sealed(session, model, row.id, values)
                    done += 1
            if not rows:
                break
    return done

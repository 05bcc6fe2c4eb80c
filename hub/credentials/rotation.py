"""``hub crypto rotate``: re-encrypt every credential field that is not under the active key.

In batches, each in its own short write transaction: select rows with any field under another key
(``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so concurrent runs and concurrent credential updates
never wait on each other nor overwrite each other; SQLite serialises writers with
``BEGIN IMMEDIATE``), rewrap each field with the same AAD and a fresh nonce, write only the sealed
columns (``version`` is not bumped: rotation is not a change a client made), commit. Idempotent
and restartable: a run over already-rotated rows does nothing. Rows locked by someone else are
retried until none remain or ``lock_wait_s`` passes.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from hub.core import rls
from hub.core.crypto import AAD_PREFIX, CredentialUnavailable, Keyring, rewrapped_columns
from hub.core.db import Database
from hub.core.metrics import Metrics
from hub.core.scraped import Reader
from hub.core.tenant_passes import count_every_tenant, every_tenant
from hub.credentials import repository
from hub.models.credential import ENCRYPTED_FIELDS

__all__ = [
    "RotationReport",
    "backlog_reader",
    "fields_by_key_id",
    "remaining_by_key_id",
    "rotate_credentials",
]


@dataclass
class RotationReport:
    rewrapped_rows: int
    remaining: dict[str, int]  # key id -> fields still under it (the active key excluded)
    unusable_rows: int = 0  # rows whose fields do not decrypt (a key missing from the ring)


async def fields_by_key_id(db: Database) -> dict[str, int]:
    """How many credential fields each key id seals, over every tenant, in one statement."""
    return await count_every_tenant(
        db,
        in_one_pass=repository.count_by_key_id_all_tenants,
        through_definer=repository.count_by_key_id_every_tenant,
    )


async def remaining_by_key_id(db: Database, keyring: Keyring) -> dict[str, int]:
    counts = await fields_by_key_id(db)
    return {k: n for k, n in counts.items() if k != keyring.active_key_id}


def backlog_reader(keyring: Keyring, metrics: Metrics) -> Reader:
    """``hub_credential_fields_not_under_active_key``, read when ``/metrics`` is scraped."""

    async def read(db: Database) -> None:
        metrics.set_rotation_backlog(await remaining_by_key_id(db, keyring))

    return read


async def rotate_credentials(
    db: Database,
    keyring: Keyring,
    *,
    batch_size: int = 200,
    lock_wait_s: float = 30.0,
    on_batch: Callable[[int], None] | None = None,
) -> RotationReport:
    """Rewrap every tenant's credentials, one tenant after the other (row-level security)."""
    rewrapped = 0
    unusable = 0
    for scope in await every_tenant(db, reason="key rotation rewraps every tenant's rows"):
        with rls.scope(scope):
            report = await _rotate_in_scope(
                db, keyring, batch_size=batch_size, lock_wait_s=lock_wait_s, on_batch=on_batch
            )
        rewrapped += report.rewrapped_rows
        unusable += report.unusable_rows
    return RotationReport(rewrapped, await remaining_by_key_id(db, keyring), unusable)


async def _rotate_in_scope(
    db: Database,
    keyring: Keyring,
    *,
    batch_size: int = 200,
    lock_wait_s: float = 30.0,
    on_batch: Callable[[int], None] | None = None,
) -> RotationReport:
    rewrapped = 0
    unusable: set[uuid.UUID] = set()
    loop = asyncio.get_running_loop()
    waited_since: float | None = None
    while True:
        done = 0
        async with db.session(write=True) as session:
            rows = await repository.lock_rows_to_rewrap_all_tenants(
                session, keyring.active_key_id, batch_size, skip=unusable
            )
            for row in rows:
                try:
                    values = rewrapped_columns(keyring, row, AAD_PREFIX, ENCRYPTED_FIELDS)
                except CredentialUnavailable:
                    unusable.add(row.id)  # reported, never retried in this run
                    continue
                await repository.update_sealed_columns(session, row.id, values)
                done += 1
        rewrapped += done
        if on_batch is not None and done:
            on_batch(done)
        if rows:
            waited_since = None
            continue
        async with db.session(write=False) as session:
            left = await repository.count_rows_to_rewrap_all_tenants(
                session, keyring.active_key_id, skip=unusable
            )
        # rows left are locked by another rotation or a credential update: wait for them
        waited_since = waited_since or loop.time()
        if not left or loop.time() - waited_since > lock_wait_s:
            return RotationReport(rewrapped, {}, len(unusable))  # counted once, at the end
        await asyncio.sleep(0.05)

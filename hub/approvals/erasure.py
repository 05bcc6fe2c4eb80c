"""An approval's arguments erased once kept long enough: ``approvals.erase_arguments``.

An approval holds the call's arguments, encrypted, so that approvers see exactly what would run
(DESIGN §10.3). Nothing removed them: a row could keep up to 2 MiB for ever, and an agent may hold
50 pending approvals at a time, each expiring after ``HUB_APPROVAL_TTL_S``, so one agent could
leave gigabytes a day. Once an approval can no longer be used (a pending one after
``expires_at``, an approved one after ``use_by``) and ``HUB_APPROVAL_ARGUMENTS_KEEP_S`` more have
passed, this recurring job erases its key id, nonce and ciphertext. The row stays, with the
arguments' SHA-256, the decision and who took it, as the audit trail does (it never held the
values). Each batch is erased in one transaction with its audit row
(``approval.arguments_erase``, the number erased), so nothing is erased unrecorded.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from hub.approvals import repository
from hub.audit.actions import Action
from hub.audit.service import record
from hub.core import clock, rls
from hub.core.db import Database
from hub.core.jobs import JobRegistry, JobRun
from hub.core.tenancy import TenantId
from hub.core.tenant_passes import every_tenant_id

__all__ = ["BATCH", "JOB_KIND", "erase_pass", "register_erasure"]

log = logging.getLogger("hub.approvals")

JOB_KIND = "approvals.erase_arguments"
#: approvals erased per transaction (and per audit row)
BATCH = 500
#: how often the job runs (an approval's arguments outlive their keeping by at most this)
EVERY_S = 600.0


async def erase_pass(
    db: Database, keep_s: float, run: JobRun | None = None, *, batch: int = BATCH
) -> int:
    """Erase the arguments of every tenant's approvals past their keeping, ``batch`` rows per
    transaction; how many."""
    before = clock.now() - timedelta(seconds=keep_s)
    erased = 0
    for tenant_id in await every_tenant_id(db, reason="approvals: erase kept arguments"):
        if run is not None and run.stop.is_set():
            break
        with rls.scope(tenant_id):
            erased += await _erase_tenant(db, tenant_id, keep_s, before, run, batch)
    return erased


async def _erase_tenant(
    db: Database,
    tenant_id: TenantId,
    keep_s: float,
    before: datetime,
    run: JobRun | None,
    batch: int,
) -> int:
    async with db.session(write=False) as read:
        if not await repository.any_arguments_to_erase(read, tenant_id, before):
            return 0
    erased = 0
    while run is None or not run.stop.is_set():
        async with db.session(write=True) as session:
            count = await repository.erase_arguments(session, tenant_id, before, batch)
            if count:
                await record(
                    session,
                    tenant_id=tenant_id,
                    actor_id=None,
                    action=Action.APPROVAL_ARGUMENTS_ERASE,
                    resource="approvals",
                    request_id=None,
                    details={"approvals": count, "keep_s": keep_s},
                )
        erased += count
        if count < batch:
            break
    return erased


def register_erasure(jobs: JobRegistry, keep_s: float) -> None:
    """Register ``approvals.erase_arguments``: due every :data:`EVERY_S`."""

    async def run_pass(run: JobRun) -> None:
        erased = await erase_pass(run.db, keep_s, run)
        if erased:
            log.info("approvals: the arguments of %d approval(s) erased", erased)

    jobs.register(JOB_KIND, run_pass, every_s=EVERY_S, lease_s=300.0)

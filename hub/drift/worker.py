"""The drift watch as a recurring worker job, ``drift.watch`` (DESIGN §10.6, §11, §15).

The job is a singleton row of ``worker_jobs``, so one runner at a time holds it however many
replicas run workers. Each pass takes, tenant by tenant (each in its own row-level-security scope
on PostgreSQL), the servers some deployment references whose probe is due (never-probed first,
then the longest due), and probes each with its own tenant's scope: one probe per server per
interval, not per deployment.

**Probes run side by side, fairly across tenants** (stop 45). They used to run one after another,
tenant after tenant: a tenant whose deployed servers never answer (each probe then lasts the
discovery deadline, 30 s by default) held the pass for all of them, and every other tenant's
drift watch, a defence against tools changed under their pins, waited. 100 such servers made a
pass of 50 minutes for everyone. Now at most :data:`PROBES_AT_ONCE` probes run at a time, at
most :data:`PROBES_AT_ONCE_PER_TENANT` of them a tenant's, so one tenant's slow servers hold two
slots and the others go on in the rest; and no probe starts after :data:`PASS_BUDGET_S`, so a
pass lasts at most that and one deadline more. What a pass did not reach stays due for the next
(longest due first), as does everything when the process is stopping.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import defaultdict

from hub.core import clock, rls
from hub.core.db import Database
from hub.core.jobs import JobRegistry, JobRun
from hub.core.tenancy import TenantId, system_scope
from hub.core.tenant_passes import every_tenant, every_tenant_id
from hub.drift import repository
from hub.drift.watch import DriftWatch, ProbeResult

__all__ = [
    "DUE_PER_TENANT",
    "JOB_KIND",
    "PASS_BUDGET_S",
    "PROBES_AT_ONCE",
    "PROBES_AT_ONCE_PER_TENANT",
    "drift_pass",
    "register_drift",
]

log = logging.getLogger("hub.drift")

JOB_KIND = "drift.watch"
#: how often the job looks for due servers (each server is still probed once per interval)
TICK_S = 60.0
#: probes in flight at once in a pass, and of those, one tenant's
PROBES_AT_ONCE = 8
PROBES_AT_ONCE_PER_TENANT = 2
#: no probe starts this long after a pass began
PASS_BUDGET_S = 120.0
#: a tenant's due servers taken into one pass at most
DUE_PER_TENANT = 500


async def _probe_safely(
    watch: DriftWatch, db: Database, tenant: uuid.UUID, server_id: uuid.UUID
) -> ProbeResult | None:
    tenant_id = system_scope(tenant, reason="drift watch: the referenced server's own tenant")
    try:
        return await watch.probe(db, tenant_id, server_id)
    except Exception:  # one server's trouble must not stall the others: retried on backoff
        log.exception("drift watch: probing a server failed", extra={"server_id": str(server_id)})
        try:
            await watch.record_unknown(db, tenant_id, server_id, "internal_error")
        except Exception:
            log.exception("drift watch: could not record the failed probe")
        return None


class _Pass:
    """One pass's slots and clock: who may start a probe, and until when."""

    def __init__(self, run: JobRun | None, budget_s: float) -> None:
        self.run = run
        self.until = asyncio.get_running_loop().time() + budget_s
        self.slots = asyncio.Semaphore(PROBES_AT_ONCE)
        self.tenant_slots: defaultdict[uuid.UUID, asyncio.Semaphore] = defaultdict(
            lambda: asyncio.Semaphore(PROBES_AT_ONCE_PER_TENANT)
        )
        self.probed = 0

    def over(self) -> bool:
        stopping = self.run is not None and self.run.stop.is_set()
        return stopping or asyncio.get_running_loop().time() >= self.until

    async def probe(
        self, watch: DriftWatch, db: Database, tenant: TenantId, server_id: uuid.UUID
    ) -> None:
        async with self.tenant_slots[tenant.value], self.slots:
            if self.over():
                return  # still due: the next pass takes it
            with rls.scope(tenant):
                await _probe_safely(watch, db, tenant.value, server_id)
            self.probed += 1


async def drift_pass(
    db: Database, watch: DriftWatch, run: JobRun | None = None, *, budget_s: float = PASS_BUDGET_S
) -> int:
    """One pass: probe the due servers of every tenant, side by side within the slots and the
    budget, then drop the marks of versions nothing pins; how many probes were made."""
    this = _Pass(run, budget_s)
    now = clock.now()
    async with asyncio.TaskGroup() as probes:
        for tenant in await every_tenant_id(db, reason="drift watch: every tenant's servers"):
            if this.over():
                break
            with rls.scope(tenant):
                async with db.session(write=False) as read:
                    due = await repository.due_servers(read, tenant, now, DUE_PER_TENANT)
            for server_id in due:
                probes.create_task(this.probe(watch, db, tenant, server_id))
    for scope in await every_tenant(db, reason="drift watch: marks nothing pins"):
        with rls.scope(scope):
            async with db.session(write=True) as session:
                await repository.forget_unpinned(session)
    return this.probed


def register_drift(jobs: JobRegistry, watch: DriftWatch) -> None:
    """Register ``drift.watch``: due every ``min(60 s, HUB_DRIFT_INTERVAL_S)``."""

    async def run_pass(run: JobRun) -> None:
        probed = await drift_pass(run.db, watch, run)
        if probed:
            log.info("drift watch: %d server(s) probed", probed)

    every_s = min(TICK_S, watch.interval_s)
    jobs.register(JOB_KIND, run_pass, every_s=every_s, lease_s=max(60.0, watch.ctx.deadline_s * 2))

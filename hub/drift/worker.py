"""The drift watch as a recurring worker job, ``drift.watch`` (DESIGN §10.6, §11, §15).

The job is a singleton row of ``worker_jobs``, so one runner at a time holds it however many
replicas run workers. Each pass takes the servers some deployment references whose probe is due
(``server_probes.next_probe_at``; never-probed servers first), across tenants, and probes each
with its own tenant's scope: one probe per server per interval, not per deployment. A pass ends
early when the process is stopping; what it did not reach stays due for the next pass.
"""

from __future__ import annotations

import logging
import uuid

from hub.core import clock, rls
from hub.core.db import Database
from hub.core.jobs import JobRegistry, JobRun
from hub.core.tenancy import system_scope
from hub.core.tenant_passes import every_tenant
from hub.drift import repository
from hub.drift.watch import DriftWatch, ProbeResult

__all__ = ["BATCH", "JOB_KIND", "drift_pass", "register_drift"]

log = logging.getLogger("hub.drift")

JOB_KIND = "drift.watch"
BATCH = 50
#: how often the job looks for due servers (each server is still probed once per interval)
TICK_S = 60.0


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


async def drift_pass(db: Database, watch: DriftWatch, run: JobRun | None = None) -> int:
    """One pass: probe every due server (in batches), then drop the marks of versions nothing
    pins; how many probes were made. On PostgreSQL the pass runs tenant by tenant, each in its
    own row-level-security scope (no wider scope exists); on SQLite it is one unscoped pass."""
    probed = 0
    for tenant_scope in await every_tenant(db, reason="drift watch: every tenant's servers"):
        if run is not None and run.stop.is_set():
            break
        with rls.scope(tenant_scope):
            probed += await _pass_in_scope(db, watch, run)
    return probed


async def _pass_in_scope(db: Database, watch: DriftWatch, run: JobRun | None) -> int:
    probed = 0
    seen: set[uuid.UUID] = set()
    while run is None or not run.stop.is_set():
        async with db.session(write=False) as read:
            due = await repository.due_servers(read, clock.now(), BATCH)
        due = [(t, s) for t, s in due if s not in seen]
        if not due:
            break
        for tenant, server_id in due:
            if run is not None and run.stop.is_set():
                break
            seen.add(server_id)
            await _probe_safely(watch, db, tenant, server_id)
            probed += 1
    async with db.session(write=True) as session:
        await repository.forget_unpinned(session)
    return probed


def register_drift(jobs: JobRegistry, watch: DriftWatch) -> None:
    """Register ``drift.watch``: due every ``min(60 s, HUB_DRIFT_INTERVAL_S)``."""

    async def run_pass(run: JobRun) -> None:
        probed = await drift_pass(run.db, watch, run)
        if probed:
            log.info("drift watch: %d server(s) probed", probed)

    every_s = min(TICK_S, watch.interval_s)
    jobs.register(JOB_KIND, run_pass, every_s=every_s, lease_s=max(60.0, watch.ctx.deadline_s * 2))

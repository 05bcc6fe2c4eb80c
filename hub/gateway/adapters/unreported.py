"""Direct-mode calls never reported, audited anyway: ``decisions.audit_unreported``.

In direct mode the sidecar runs the call and reports its outcome, which writes the call's
``tool.call`` row (DESIGN §10.5, §15). A sidecar that died after the hub allowed a call, or that
never meant to report, left no row of it at all. The hub now records each decision as it hands
it out (:func:`hub.gateway.adapters.outcomes.open_outcome`); this recurring job writes the
``tool.call`` row of every decision still ``open`` :data:`GRACE_S` after it expired, with outcome
``unreported`` (the call may have run, or not) and the fields the reported row would have had:
decision, reasons, approval id, the arguments' and the tool's SHA-256, catalog version,
``grants_version``, the decision's request id, and when it was decided (``decided_at``).

Exactly once: a batch is claimed (``open`` → ``unreported``, one conditional ``UPDATE``) and its
audit rows appended to the tenant's chain (:func:`hub.audit.service.record`) in one transaction,
so both commit or neither does. Two sweeps at once claim disjoint rows: on PostgreSQL the batch's
rows are locked (``FOR UPDATE SKIP LOCKED``) and the update tests ``open`` again on the row it
locked; SQLite's write lock lets one writer in at a time. A report racing the sweep claims the
same row conditionally (:func:`~hub.gateway.adapters.outcomes.claim_outcome`): whichever commits
first wins, and the other finds nothing. The grace covers a report that passed the id's expiry
check just before it expired, and replicas' clocks a little apart.

The rows of decisions reported or audited are deleted :data:`FORGET_S` after they expired, so
the table holds about one decision lifetime of calls, and a late report of a forgotten id is
refused by the id's own expiry long before. They are deleted after the claims, in transactions of
their own of at most :data:`FORGET_BATCH` rows, skipping rows another transaction holds: one
unbounded ``DELETE`` before the claims, in their transaction, met the app's statement timeout
once a backlog had grown (workers stopped a while) and rolled the claims back on every run, so
no unreported call was audited again and the table never shrank (a review, stop 51).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, Delete, Select, Table, delete, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from hub.audit.actions import Action
from hub.audit.service import record
from hub.core import clock, rls
from hub.core.db import Database
from hub.core.jobs import JobRegistry, JobRun
from hub.core.metrics import Metrics
from hub.core.tenancy import TenantId
from hub.core.tenant_passes import every_tenant_id
from hub.gateway.adapters.audit import call_details, call_resource
from hub.gateway.adapters.outcomes import OPEN, UNREPORTED, record_of
from hub.models import DecisionOutcome

__all__ = [
    "BATCH",
    "FORGET_BATCH",
    "FORGET_S",
    "GRACE_S",
    "JOB_KIND",
    "register_unreported",
    "sweep_pass",
]

log = logging.getLogger("hub.gateway")

JOB_KIND = "decisions.audit_unreported"
#: how often the job runs
EVERY_S = 60.0
#: an open decision is audited as unreported once expired this long
GRACE_S = 60.0
#: a reported or audited decision's row is deleted once expired this long
FORGET_S = 300.0
#: decisions claimed (and audit rows written) per transaction
BATCH = 200
#: rows done with deleted per transaction
FORGET_BATCH = 1000

_T = cast(Table, DecisionOutcome.__table__)
_C = _T.c


def _past(tenant_id: TenantId, claim_before: datetime, forget_before: datetime) -> Select[Any]:
    """One of the tenant's rows the sweep has work for, if any: open past the grace, or done
    with and forgettable."""
    return (
        select(_C.id)
        .where(
            _C.tenant_id == tenant_id.value,
            _C.expires_at < claim_before,  # forget_before is earlier: the index's range
            or_(_C.state == OPEN, _C.expires_at < forget_before),
        )
        .limit(1)
    )


def _forget(tenant_id: TenantId, before: datetime, limit: int) -> Delete:
    """Delete at most ``limit`` of the tenant's rows reported or audited that expired before
    ``before`` (rows another transaction holds are skipped, not waited for)."""
    batch = (
        select(_C.id)
        .where(_C.tenant_id == tenant_id.value, _C.state != OPEN, _C.expires_at < before)
        .limit(limit)
        .with_for_update(skip_locked=True)  # PostgreSQL; SQLite's write lock serialises
    )
    return delete(_T).where(_C.tenant_id == tenant_id.value, _C.id.in_(batch.scalar_subquery()))


async def _claim(
    session: AsyncSession, tenant_id: TenantId, before: datetime, limit: int
) -> Sequence[Any]:
    """Mark at most ``limit`` of the tenant's decisions open and expired before ``before``
    unreported: the rows this transaction won (their ``call`` and ``created_at``)."""
    batch = (
        select(_C.id)
        .where(_C.tenant_id == tenant_id.value, _C.state == OPEN, _C.expires_at < before)
        .order_by(_C.expires_at)
        .limit(limit)
        .with_for_update(skip_locked=True)  # PostgreSQL; SQLite's write lock serialises
    )
    claimed = await session.execute(
        update(_T)
        .where(
            _C.tenant_id == tenant_id.value, _C.state == OPEN, _C.id.in_(batch.scalar_subquery())
        )
        .values(state=UNREPORTED)
        .returning(_C.call, _C.created_at)
    )
    return claimed.all()


async def _audit(session: AsyncSession, tenant_id: TenantId, row: Any) -> None:
    """The ``tool.call`` row of one decision never reported, in the claim's transaction."""
    fields: dict[str, Any] = row.call  # every open row holds its call
    call = record_of(fields)
    await record(
        session,
        tenant_id=tenant_id,
        actor_id=call.agent_id,
        action=Action.TOOL_CALL,
        resource=call_resource(call),
        request_id=fields.get("request_id"),
        outcome="unreported",
        details={**call_details(call), "decided_at": row.created_at.isoformat()},
    )


async def sweep_pass(
    db: Database,
    metrics: Metrics | None = None,
    run: JobRun | None = None,
    *,
    batch: int = BATCH,
    forget_batch: int = FORGET_BATCH,
) -> int:
    """Audit every tenant's decisions left open :data:`GRACE_S` past their expiry, ``batch``
    per transaction, then forget the rows done with, ``forget_batch`` per transaction; how many
    were audited."""
    now = clock.now()
    sweep = _Sweep(
        now - timedelta(seconds=GRACE_S), now - timedelta(seconds=FORGET_S), batch, forget_batch
    )
    audited = 0
    for tenant_id in await every_tenant_id(db, reason="decisions: audit the unreported"):
        if run is not None and run.stop.is_set():
            break
        with rls.scope(tenant_id):
            audited += await _sweep_tenant(db, tenant_id, sweep, metrics, run)
    return audited


@dataclass(frozen=True)
class _Sweep:
    claim_before: datetime
    forget_before: datetime
    batch: int
    forget_batch: int


async def _sweep_tenant(
    db: Database, tenant_id: TenantId, sweep: _Sweep, metrics: Metrics | None, run: JobRun | None
) -> int:
    async with db.session(write=False) as read:  # a tenant with nothing to do takes no write lock
        found = await read.execute(_past(tenant_id, sweep.claim_before, sweep.forget_before))
        if found.first() is None:
            return 0
    audited = 0
    while run is None or not run.stop.is_set():
        async with db.session(write=True) as session:
            rows = await _claim(session, tenant_id, sweep.claim_before, sweep.batch)
            for row in rows:
                await _audit(session, tenant_id, row)
        if rows and metrics is not None:  # committed
            metrics.unreported_calls.inc(len(rows))
        audited += len(rows)
        if len(rows) < sweep.batch:
            break
    while run is None or not run.stop.is_set():
        async with db.session(write=True) as session:
            forgotten = await session.execute(
                _forget(tenant_id, sweep.forget_before, sweep.forget_batch)
            )
        if cast(CursorResult[Any], forgotten).rowcount < sweep.forget_batch:
            break
    return audited


def register_unreported(jobs: JobRegistry, metrics: Metrics) -> None:
    """Register ``decisions.audit_unreported``: due every :data:`EVERY_S`."""

    async def run_pass(run: JobRun) -> None:
        audited = await sweep_pass(run.db, metrics, run)
        if audited:
            log.warning("direct mode: %d call(s) never reported, audited as unreported", audited)

    jobs.register(JOB_KIND, run_pass, every_s=EVERY_S, lease_s=300.0)

"""The refresher ahead of expiry: a leader-free loop every replica runs (DESIGN §11, §15).

Each pass claims, in one short transaction per tenant, up to :data:`BATCH` OAuth credentials (at
most :data:`CLAIMS_PER_TENANT` of one tenant's) whose token expires within
``HUB_OAUTH_REFRESH_AHEAD_S`` (and has lived at least half its lifetime, so a token
shorter-lived than the window is not refreshed on every pass) and that hold a refresh token and
no live lease — ``FOR UPDATE SKIP LOCKED``, so replicas running the same pass at the same moment
split the rows instead of sharing them — and sets the same refresh lease an on-use refresh takes
(:mod:`hub.oauth.refresh`). Then, with no transaction open, it refreshes the claimed credentials
side by side. A use that arrives meanwhile sees the live lease and waits for the result, so a
credential is never refreshed twice however many replicas and callers race for it.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import datetime, timedelta

from hub.core import clock, rls
from hub.core.db import Database
from hub.core.jobs import JobRegistry, JobRun
from hub.core.tenancy import TenantId, system_scope
from hub.models import Credential
from hub.oauth import repository
from hub.oauth.refresh import TokenRefresher
from hub.upstream import TokenUnavailable

__all__ = ["BATCH", "CLAIMS_PER_TENANT", "refresh_pass", "register_refresh"]

log = logging.getLogger("hub.oauth.worker")

#: credentials claimed by one pass at most, and of those, one tenant's
BATCH = 200
CLAIMS_PER_TENANT = 10


async def _claim_due(
    db: Database, refresher: TokenRefresher, per_tenant: int
) -> list[tuple[TenantId, Credential, str]]:
    now = clock.now()
    due_before = now + timedelta(seconds=refresher.config.refresh_ahead_s)
    claims: list[tuple[TenantId, Credential, str]] = []
    # tenant after tenant, the most urgent first, each in its own scope (row-level security
    # shows one at a time), and only the tenants that hold a token due
    for tenant_id in await _due_tenants(db, due_before, now):
        room = min(per_tenant, BATCH - len(claims))
        if room <= 0:
            break
        with rls.scope(tenant_id):
            claims.extend(await _claim_due_of(db, refresher, tenant_id, now, due_before, room))
    return claims


async def _due_tenants(db: Database, due_before: datetime, now: datetime) -> list[TenantId]:
    """The tenants holding a token due: on PostgreSQL as the definer names them (it sees every
    tenant's credentials); on SQLite by one query."""
    async with db.session(write=False) as session:
        if db.is_sqlite:
            due = await repository.tenants_due(session, due_before, now)
        else:
            due = await repository.tenants_due_every_tenant(session, due_before, now)
    return [
        system_scope(tenant, reason="oauth refresher: a tenant with tokens due") for tenant in due
    ]


async def _claim_due_of(
    db: Database,
    refresher: TokenRefresher,
    tenant_id: TenantId,
    now: datetime,
    due_before: datetime,
    limit: int,
) -> list[tuple[TenantId, Credential, str]]:
    claims: list[tuple[TenantId, Credential, str]] = []
    async with db.session(write=True) as session:
        for row in await repository.lock_due(session, tenant_id, due_before, now, limit):
            if not _half_lived(row, now):
                continue
            holder = uuid.uuid4().hex
            until = now + timedelta(seconds=refresher.lease_s)
            await repository.update_credential(
                session,
                tenant_id,
                row.id,
                {"refresh_lease_until": until, "refresh_lease_holder": holder},
            )
            claims.append((tenant_id, row, holder))
    return claims


def _half_lived(row: Credential, now: datetime) -> bool:
    if row.expires_at is None:
        return False
    lifetime = row.expires_at - row.updated_at
    return now - row.updated_at >= lifetime / 2


async def _refresh(
    db: Database, refresher: TokenRefresher, tenant_id: TenantId, row: Credential, holder: str
) -> None:
    with rls.scope(tenant_id):
        try:
            await refresher.run_claimed(db, tenant_id, row, holder)
        except TokenUnavailable:
            pass  # audited (and a dead grant marked ``error``) by the refresher
        except Exception:  # one credential's trouble must not cut the others' refreshes short
            log.exception("oauth refresher: a refresh failed", extra={"credential_id": str(row.id)})


async def refresh_pass(
    db: Database, refresher: TokenRefresher, *, per_tenant: int = CLAIMS_PER_TENANT
) -> int:
    """One pass: claim the due credentials (at most ``per_tenant`` of a tenant's), and refresh
    them side by side; how many were claimed.

    They were refreshed one after another: a tenant whose authorization server never answers
    made each of its refreshes last the flow deadline, and every credential claimed after them,
    any tenant's, waited, its lease running out and its token expiring (stop 45). Side by side,
    a pass lasts about one deadline; the per-tenant share keeps one tenant's many due tokens from
    filling the batch."""
    claims = await _claim_due(db, refresher, per_tenant)
    async with asyncio.TaskGroup() as refreshes:
        for tenant_id, row, holder in claims:
            refreshes.create_task(_refresh(db, refresher, tenant_id, row, holder))
    return len(claims)


def register_refresh(jobs: JobRegistry, refresher: TokenRefresher) -> None:
    """The refresher as a recurring worker job (``oauth.refresh``): each pass claims the
    credentials due with their own leases, so replicas sharing the job never refresh one twice."""

    async def run_pass(run: JobRun) -> None:
        claimed = await refresh_pass(run.db, refresher)
        if claimed:
            log.info("oauth refresher: %d credential(s) refreshed ahead of expiry", claimed)

    jobs.register("oauth.refresh", run_pass, every_s=refresher.config.refresh_interval_s)

"""The refresher ahead of expiry: a leader-free loop every replica runs (DESIGN §11, §15).

Each pass claims, in one short transaction, up to :data:`BATCH` OAuth credentials of any tenant
whose token expires within ``HUB_OAUTH_REFRESH_AHEAD_S`` (and has lived at least half its
lifetime, so a token shorter-lived than the window is not refreshed on every pass) and that hold a
refresh token and no live lease — ``FOR UPDATE SKIP LOCKED``, so replicas running the same pass at
the same moment split the rows instead of sharing them — and sets the same refresh lease an on-use
refresh takes (:mod:`hub.oauth.refresh`). Then, with no transaction open, it refreshes each
claimed credential. A use that arrives meanwhile sees the live lease and waits for the result, so
a credential is never refreshed twice however many replicas and callers race for it.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from datetime import datetime, timedelta

from hub.core import clock, rls
from hub.core.db import Database
from hub.core.jobs import JobRegistry, JobRun
from hub.core.rls import Scope
from hub.core.tenancy import TenantId, system_scope
from hub.models import Credential
from hub.oauth import repository
from hub.oauth.refresh import TokenRefresher
from hub.upstream import TokenUnavailable

__all__ = ["BATCH", "refresh_pass", "register_refresh"]

log = logging.getLogger("hub.oauth.worker")

BATCH = 50


async def _claim_due(
    db: Database, refresher: TokenRefresher
) -> list[tuple[TenantId, Credential, str]]:
    now = clock.now()
    due_before = now + timedelta(seconds=refresher.config.refresh_ahead_s)
    claims: list[tuple[TenantId, Credential, str]] = []
    # row-level security shows one tenant at a time: the pass claims tenant after tenant, only
    # in the tenants that hold a token due (every tenant is not a write transaction every pass)
    for scope in await _due_scopes(db, due_before, now):
        if len(claims) >= BATCH:
            break
        with rls.scope(scope):
            claims.extend(await _claim_due_in_scope(db, refresher, now, due_before))
    return claims


async def _due_scopes(db: Database, due_before: datetime, now: datetime) -> list[Scope | None]:
    """The scopes the pass claims in: SQLite's one unscoped pass; on PostgreSQL each tenant
    the definer names (it sees every tenant's credentials; the claim itself runs in the
    tenant's own scope, under row-level security)."""
    if db.is_sqlite:
        return [None]
    async with db.session(write=False) as session:
        due = await repository.tenants_due_every_tenant(session, due_before, now)
    return [
        system_scope(tenant, reason="oauth refresher: a tenant with tokens due") for tenant in due
    ]


async def _claim_due_in_scope(
    db: Database, refresher: TokenRefresher, now: datetime, due_before: datetime
) -> list[tuple[TenantId, Credential, str]]:
    claims: list[tuple[TenantId, Credential, str]] = []
    async with db.session(write=True) as session:
        for row in await repository.lock_due_all_tenants(session, due_before, now, BATCH):
            if not _half_lived(row, now):
                continue
            # a system job acting for the tenant that owns the row it just claimed
            tenant_id = system_scope(row.tenant_id, reason="oauth refresher: the row's own tenant")
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


async def refresh_pass(db: Database, refresher: TokenRefresher) -> int:
    """One pass: claim the due credentials, refresh each; how many were claimed."""
    claims = await _claim_due(db, refresher)
    for tenant_id, row, holder in claims:
        # a failure is audited (and a dead grant marked ``error``) by the refresher
        with contextlib.suppress(TokenUnavailable), rls.scope(tenant_id):
            await refresher.run_claimed(db, tenant_id, row, holder)
    return len(claims)


def register_refresh(jobs: JobRegistry, refresher: TokenRefresher) -> None:
    """The refresher as a recurring worker job (``oauth.refresh``): each pass claims the
    credentials due with their own leases, so replicas sharing the job never refresh one twice."""

    async def run_pass(run: JobRun) -> None:
        claimed = await refresh_pass(run.db, refresher)
        if claimed:
            log.info("oauth refresher: %d credential(s) refreshed ahead of expiry", claimed)

    jobs.register("oauth.refresh", run_pass, every_s=refresher.config.refresh_interval_s)

"""``hub_approvals_pending``: approvals waiting for a person, over every tenant (DESIGN §11),
read when ``/metrics`` is scraped (:mod:`hub.core.scraped`)."""

from __future__ import annotations

from hub.approvals import repository
from hub.core import clock, rls
from hub.core.db import Database
from hub.core.metrics import Metrics
from hub.core.scraped import Reader
from hub.core.tenant_passes import every_tenant

__all__ = ["pending_reader"]


def pending_reader(metrics: Metrics) -> Reader:
    async def read(db: Database) -> None:
        now = clock.now()
        total = 0
        for scope in await every_tenant(db, reason="pending approvals, counted"):
            with rls.scope(scope):
                async with db.session(write=False) as session:
                    total += await repository.count_pending_all_tenants(session, now)
        metrics.approvals_pending.set(total)

    return read

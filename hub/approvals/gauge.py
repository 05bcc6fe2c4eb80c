"""``hub_approvals_pending``: approvals waiting for a person, over every tenant (DESIGN §11),
read when ``/metrics`` is scraped (:mod:`hub.core.scraped`)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from hub.approvals import repository
from hub.core import clock
from hub.core.db import Database
from hub.core.metrics import Metrics
from hub.core.scraped import Reader
from hub.core.tenant_passes import count_every_tenant

__all__ = ["pending_reader"]


def pending_reader(metrics: Metrics) -> Reader:
    async def read(db: Database) -> None:
        now = clock.now()

        async def in_one_pass(session: AsyncSession) -> int:
            return await repository.count_pending_all_tenants(session, now)

        async def through_definer(session: AsyncSession) -> int:
            return await repository.count_pending_every_tenant(session, now)

        total = await count_every_tenant(
            db, in_one_pass=in_one_pass, through_definer=through_definer
        )
        metrics.approvals_pending.set(total)

    return read

"""Dead flows' sealed secrets erased: the recurring job ``oauth.expire_flows``.

A flow keeps its PKCE verifier and, for a pre-registered client, the client secret, encrypted,
until its callback finishes it (:func:`hub.oauth.repository.finish_authorization` erases both).
A flow whose callback never came (the person closed the tab, a connect that timed out) kept them
for ever, and so did one a crash left ``redeeming``: an OAuth walk (stop 53) found every
abandoned flow of the walk still holding both ciphertexts. Every :data:`EVERY_S` this job fails
each flow past its expiry that is still ``pending`` (``state_expired``, as its status already
read) and each left ``redeeming`` :data:`REDEEMING_GRACE_S` past its expiry
(``redemption_abandoned``), erasing their sealed fields, tenant by tenant, with one read of a
tenant that has none.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import and_, exists, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from hub.core import clock, rls
from hub.core.db import Database
from hub.core.jobs import JobRegistry, JobRun
from hub.core.tenancy import TenantId
from hub.core.tenant_passes import every_tenant_id
from hub.models import OAuthAuthorization as A

__all__ = ["EVERY_S", "JOB_KIND", "REDEEMING_GRACE_S", "expire_pass", "register_expiry"]

log = logging.getLogger("hub.oauth")

JOB_KIND = "oauth.expire_flows"
EVERY_S = 600.0
#: a callback redeems its code within its egress deadline; one still ``redeeming`` this long
#: after its flow's expiry is one whose replica died meanwhile
REDEEMING_GRACE_S = 3600.0

_SEALED = {
    f"{field}_{part}": None
    for field in ("verifier", "client_secret")
    for part in ("key_id", "nonce", "ciphertext")
}


def _dead(tenant_id: TenantId, now: datetime, status: str) -> ColumnElement[bool]:
    cutoff = now if status == "pending" else now - timedelta(seconds=REDEEMING_GRACE_S)
    return and_(A.tenant_id == tenant_id.value, A.status == status, A.expires_at <= cutoff)


async def _expire(session: AsyncSession, tenant_id: TenantId, now: datetime) -> int:
    done = 0
    for status, reason in (("pending", "state_expired"), ("redeeming", "redemption_abandoned")):
        result = await session.execute(
            update(A)
            .where(_dead(tenant_id, now, status))
            .values(status="failed", reason=reason, completed_at=now, **_SEALED)
            .execution_options(synchronize_session=False)
        )
        done += int(result.rowcount)  # type: ignore[attr-defined]
    return done


async def expire_pass(db: Database, run: JobRun | None = None) -> int:
    """Fail and erase every tenant's dead flows; how many."""
    now = clock.now()
    expired = 0
    for tenant_id in await every_tenant_id(db, reason="oauth: expire abandoned flows"):
        if run is not None and run.stop.is_set():
            break
        with rls.scope(tenant_id):
            async with db.session(write=False) as read:
                found = or_(_dead(tenant_id, now, "pending"), _dead(tenant_id, now, "redeeming"))
                if not (await read.execute(select(exists().where(found)))).scalar():
                    continue
            async with db.session(write=True) as session:
                expired += await _expire(session, tenant_id, now)
    return expired


def register_expiry(jobs: JobRegistry) -> None:
    async def run_pass(run: JobRun) -> None:
        expired = await expire_pass(run.db, run)
        if expired:
            log.info("oauth: %d abandoned authorization(s) failed, their secrets erased", expired)

    jobs.register(JOB_KIND, run_pass, every_s=EVERY_S)

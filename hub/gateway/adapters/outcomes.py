"""The direct-mode decisions whose outcome was reported, once each (DESIGN §10.5, §15).

A decision id is sealed, not stored (:mod:`hub.gateway.decisions`), so without a record a
sidecar could report one call's outcome twice and write two ``tool.call`` rows. The hub keeps the
SHA-256 of each reported id until the id itself expires; the unique ``(tenant_id,
decision_sha256)`` makes a second report — on any replica, however raced — fail. Expired rows of
the tenant are deleted on the way, so the table holds at most one id lifetime of calls.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from sqlalchemy import delete, insert
from sqlalchemy.exc import IntegrityError

from hub.core import clock
from hub.core.db import Database
from hub.core.tenancy import TenantId
from hub.models import DecisionOutcome

__all__ = ["claim_outcome"]


async def claim_outcome(
    db: Database, tenant_id: TenantId, decision_id: str, expires_at: datetime
) -> bool:
    """Record that ``decision_id``'s outcome is being reported; False if it already was."""
    digest = hashlib.sha256(decision_id.encode()).hexdigest()
    try:
        async with db.session(write=True) as session:
            await session.execute(
                delete(DecisionOutcome).where(
                    DecisionOutcome.tenant_id == tenant_id.value,
                    DecisionOutcome.expires_at < clock.now(),
                )
            )
            await session.execute(
                insert(DecisionOutcome).values(
                    tenant_id=tenant_id.value,
                    decision_sha256=digest,
                    expires_at=expires_at,
                    created_at=clock.now(),
                )
            )
    except IntegrityError:
        return False
    return True

"""The one query authorisation needs of its own: does the tenant a path names exist?"""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from hub.models import Tenant

__all__ = ["tenant_exists"]


async def tenant_exists(session: AsyncSession, tenant_id: uuid.UUID) -> bool:
    query = select(Tenant.id).where(Tenant.id == tenant_id)
    return (await session.execute(query)).scalar_one_or_none() is not None

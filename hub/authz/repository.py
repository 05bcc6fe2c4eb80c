"""The one query authorisation needs of its own: which tenant does a path's ``{t}`` name?"""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from hub.models import Tenant

__all__ = ["tenant_exists", "tenant_id_by_slug"]


async def tenant_exists(session: AsyncSession, tenant_id: uuid.UUID) -> bool:
    query = select(Tenant.id).where(Tenant.id == tenant_id)
    return (await session.execute(query)).scalar_one_or_none() is not None


async def tenant_id_by_slug(session: AsyncSession, slug: str) -> uuid.UUID | None:
    query = select(Tenant.id).where(Tenant.slug == slug)
    return (await session.execute(query)).scalar_one_or_none()

"""The one query authorisation needs of its own: which tenant does a path's ``{t}`` name?

Both reads are plain reads (:func:`hub.core.statements.read_row`): a request that names its
tenant by slug must not begin the session's ORM transaction here, or every later read of the
request loses the plain-read path (measured: ``GET /tenants/acme/servers/{handle}`` cost 1.5 to
2.2 ms of CPU against 0.54 ms by id, before this was a plain read).
"""

from __future__ import annotations

import uuid

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from hub.core.statements import read_row
from hub.models import Tenant

__all__ = ["tenant_exists", "tenant_id_by_slug"]

_BY_ID = select(Tenant.id).where(Tenant.id == bindparam("tenant_id"))
_BY_SLUG = select(Tenant.id).where(Tenant.slug == bindparam("slug"))


async def tenant_exists(session: AsyncSession, tenant_id: uuid.UUID) -> bool:
    return await read_row(session, _BY_ID, {"tenant_id": tenant_id}) is not None


async def tenant_id_by_slug(session: AsyncSession, slug: str) -> uuid.UUID | None:
    row = await read_row(session, _BY_SLUG, {"slug": slug})
    return None if row is None else uuid.UUID(str(row[0]))

"""``hub bootstrap``: the first platform admin and its key (DESIGN §2, §8)."""

from __future__ import annotations

import uuid

from hub.audit.actions import Action
from hub.audit.service import record
from hub.core import clock, rls
from hub.core.db import Database
from hub.models import Principal
from hub.principals import repository
from hub.principals.api_keys import issue_key

__all__ = ["PlatformAdminExists", "bootstrap_platform_admin"]


class PlatformAdminExists(Exception):
    """A platform admin exists already (pass ``force`` to create another)."""


async def bootstrap_platform_admin(db: Database, pepper: bytes, *, force: bool = False) -> str:
    """Create a platform admin and return its key (the only time the key exists in clear)."""
    with rls.scope(rls.PLATFORM):  # the platform admin and its key belong to no tenant
        async with db.session(write=True) as session:
            if await repository.platform_admins(session) and not force:
                raise PlatformAdminExists
            principal = Principal(
                id=uuid.uuid4(),
                tenant_id=None,
                kind="user",
                name="platform-admin",
                role=None,
                is_platform_admin=True,
                grants_version=0,
                created_at=clock.now(),
            )
            session.add(principal)
            await session.flush()
            row, plaintext = issue_key(
                session, pepper, tenant_id=None, principal_id=principal.id, expires_at=None
            )
            await session.flush()
            await record(
                session,
                tenant_id=None,
                actor_id=None,
                action=Action.PLATFORM_ADMIN_BOOTSTRAP,
                resource=f"principal:{principal.id}",
                request_id=None,
                details={"prefix": row.prefix, "forced": force},
            )
    return plaintext

"""Who is calling: the authenticated principal, and the tenant a tenant route acts in."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from hub.core.tenancy import TenantId

__all__ = ["Caller", "TenantAccess"]


@dataclass(frozen=True)
class Caller:
    principal_id: uuid.UUID
    tenant_id: TenantId | None  # None only for the platform admin
    kind: str
    role: str | None
    is_platform_admin: bool
    api_key_id: uuid.UUID
    grants_version: int
    request_id: str


@dataclass(frozen=True)
class TenantAccess:
    """A caller admitted to act in ``tenant_id`` (its own, or any for the platform admin)."""

    caller: Caller
    tenant_id: TenantId

    @property
    def actor_id(self) -> uuid.UUID:
        return self.caller.principal_id

    @property
    def request_id(self) -> str:
        return self.caller.request_id

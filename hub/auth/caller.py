"""Who is calling: the authenticated principal, and the tenant a tenant route acts in."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from hub.core.errors import Forbidden
from hub.core.tenancy import TenantId

__all__ = ["Caller", "Checker", "TenantAccess"]

#: ``checker(resource, action)``: the caller's effect (``allow``, ``ask`` or ``deny``).
Checker = Callable[[str, str], Awaitable[str]]


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

    @property
    def is_tenant_admin(self) -> bool:
        """Created with the ``tenant_admin`` role (a disabled principal never authenticates)."""
        return self.role == "tenant_admin" and not self.is_platform_admin


@dataclass(frozen=True)
class TenantAccess:
    """A caller admitted to act in ``tenant_id`` (its own, or any for the platform admin).

    ``checker`` asks the grant engine about further objects a request names (a ``credential_id``
    in a body, the credential of a server being snapshotted…): the same decision a path would get.
    Without one (work that is not a request) every such check is refused.
    """

    caller: Caller
    tenant_id: TenantId
    checker: Checker | None = field(default=None, compare=False, repr=False)

    @property
    def actor_id(self) -> uuid.UUID:
        return self.caller.principal_id

    @property
    def request_id(self) -> str:
        return self.caller.request_id

    async def effect(self, resource: str, action: str) -> str:
        if self.caller.is_platform_admin:
            return "allow"
        if self.checker is None:
            return "deny"
        return await self.checker(resource, action)

    async def require(self, resource: str, action: str) -> None:
        """403, naming the resource and action, unless the caller holds ``allow`` on it."""
        if await self.effect(resource, action) != "allow":
            raise Forbidden.refused(resource, action)

"""Principal and API-key bodies (DESIGN §12). No Read schema carries a key."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from hub.core.names import Name
from hub.core.schemas import RequestModel, UtcDatetime
from hub.grants.schemas import GrantRead

__all__ = [
    "KeyCreate",
    "KeyCreated",
    "KeyRead",
    "KeyRoll",
    "OwnDeployment",
    "PrincipalCreate",
    "PrincipalRead",
    "PrincipalUpdate",
    "WhoAmI",
]

Kind = Literal["user", "agent", "service"]
Role = Literal["tenant_admin", "operator", "deployer", "agent"]


class PrincipalCreate(RequestModel):
    kind: Kind
    name: Name
    role: Role | None = None


class PrincipalUpdate(RequestModel):
    name: Name | None = None


class PrincipalRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    kind: str
    name: str
    role: str | None
    status: Literal["active", "disabled"]
    created_at: datetime
    disabled_at: datetime | None


class KeyCreate(RequestModel):
    expires_at: UtcDatetime | None = None


class KeyRoll(RequestModel):
    old_key_expires_at: UtcDatetime = Field(
        description="When the rolled key stops working (now or later, never later than before)"
    )
    expires_at: UtcDatetime | None = Field(default=None, description="Expiry of the new key")


class KeyRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    prefix: str
    last4: str
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None


class KeyCreated(BaseModel):
    """The only schema that carries a key: the answer to creating or rolling one."""

    id: uuid.UUID
    key: str
    prefix: str
    last4: str
    expires_at: datetime | None
    created_at: datetime


class OwnDeployment(BaseModel):
    """A deployment whose agent is the caller, and the path of its MCP endpoint (DESIGN §10.4)."""

    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    name: str | None
    mcp_path: str = Field(
        description="Its MCP endpoint, /tenants/{tenant_id}/deployments/{id}/mcp, on this hub: "
        "the URL the agent's MCP client is given (by the tenant's id, which a slug rename "
        "does not change)"
    )
    created_at: datetime
    updated_at: datetime


class WhoAmI(BaseModel):
    principal: PrincipalRead
    tenant_id: uuid.UUID | None
    tenant_slug: str | None = None
    is_platform_admin: bool
    grants: list[GrantRead]
    deployments: list[OwnDeployment] = Field(
        default_factory=list, description="The deployments whose agent is the caller"
    )

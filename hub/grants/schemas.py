"""Grant request and response bodies (DESIGN §12)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hub.core.schemas import RequestModel, UtcDatetime

__all__ = ["GrantCheck", "GrantCreate", "GrantDecision", "GrantRead"]

Action = Literal["read", "write", "use", "decide", "call", "*"]
Effect = Literal["allow", "ask", "deny"]


class GrantCreate(RequestModel):
    principal_id: uuid.UUID
    resource: str = Field(min_length=1, max_length=512)
    action: Action
    effect: Effect
    conditions: dict[str, Any] | None = None
    expires_at: UtcDatetime | None = None


class GrantRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    principal_id: uuid.UUID
    resource: str
    action: str
    effect: str
    conditions: dict[str, Any]
    expires_at: datetime | None
    created_by: uuid.UUID | None
    created_at: datetime


class GrantCheck(RequestModel):
    principal_id: uuid.UUID
    resource: str = Field(min_length=1, max_length=512)
    action: Action
    deployment_id: uuid.UUID | None = Field(
        default=None,
        description="With a tool resource: the effective decision in this deployment (ask "
        "ceiling, allow_without_ask, destructiveHint, drift), with its reasons",
    )


class GrantDecision(BaseModel):
    effect: Effect
    grant_id: uuid.UUID | None
    grant_effect: Effect | None = Field(
        default=None, description="With deployment_id: the grant engine's effect alone"
    )
    reasons: list[str] | None = Field(
        default=None, description="With deployment_id: why the effective decision is what it is"
    )

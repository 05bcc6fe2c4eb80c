"""Approval bodies (DESIGN §12, §15). Arguments are shown decrypted, exactly as forwarded."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from hub.core.schemas import RequestModel

__all__ = ["ApprovalDecision", "ApprovalRead", "ApprovalStatus"]

ApprovalStatus = Literal["pending", "approved", "denied", "expired", "used"]


class ApprovalRead(BaseModel):
    id: uuid.UUID
    status: ApprovalStatus
    deployment_id: uuid.UUID
    agent_id: uuid.UUID
    server: str
    tool: str
    wire_name: str
    grant_key: str
    arguments: dict[str, Any] | None = Field(
        description=(
            "The call's exact arguments; null once erased (see arguments_erased) or once their"
            " key has left the keyring"
        )
    )
    arguments_erased: bool = Field(
        default=False,
        description=(
            "The arguments were erased HUB_APPROVAL_ARGUMENTS_KEEP_S after the approval could"
            " last be used; their SHA-256 stays"
        ),
    )
    arguments_sha256: str
    tool_sha256: str
    catalog_version: int
    requested_at: datetime
    expires_at: datetime
    decided_by: uuid.UUID | None
    decided_at: datetime | None
    note: str | None
    use_by: datetime | None
    used_at: datetime | None
    drift: dict[str, Any] | None = None


class ApprovalDecision(RequestModel):
    decision: Literal["approve", "deny"]
    note: str | None = Field(default=None, max_length=2000)

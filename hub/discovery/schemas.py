"""Discovery request and response bodies (DESIGN §5, §13)."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, Field

from hub.core.schemas import RequestModel

__all__ = ["DiscoverRequest", "DiscoverResult", "DroppedTool"]


class DiscoverRequest(RequestModel):
    url: str = Field(min_length=1, max_length=2048)
    credential_id: uuid.UUID | None = None


class DroppedTool(BaseModel):
    name: str | None
    reason: str


class DiscoverResult(BaseModel):
    server_info: dict[str, Any]
    protocol_version: str
    capabilities: dict[str, Any]
    instructions: str | None
    tools: list[dict[str, Any]]
    dropped_tools: list[DroppedTool]  # the first 100 dropped
    dropped_tools_total: int  # all of them

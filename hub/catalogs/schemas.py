"""Catalog bodies (DESIGN §12)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CatalogDiffRead", "CatalogRead", "CatalogSummary", "ChangedTool"]


class CatalogSummary(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    version: int
    sha256: str
    protocol_version: str
    discovered_at: datetime
    discovered_by: uuid.UUID | None


class CatalogRead(CatalogSummary):
    server_info: dict[str, Any]
    capabilities: dict[str, Any]
    instructions: str | None
    tools: list[dict[str, Any]]
    tool_hashes: dict[str, str]
    created: bool | None = None


class ChangedTool(BaseModel):
    name: str
    fields: list[str]


class CatalogDiffRead(BaseModel):
    from_: int = Field(serialization_alias="from")
    to: int
    added: list[str]
    removed: list[str]
    changed: list[ChangedTool]

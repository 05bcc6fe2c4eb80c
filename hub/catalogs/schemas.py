"""Catalog bodies (DESIGN §12)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hub.core.schemas import RequestModel

__all__ = ["CatalogDiffRead", "CatalogRead", "CatalogSummary", "ChangedTool", "SnapshotCreate"]


class SnapshotCreate(RequestModel):
    """A snapshot takes no options: no body, or ``{}`` (what ``hub catalogs snapshot`` sends).
    Any field is refused like an unknown field of any other body, not silently ignored."""


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
    """One tool present in both versions whose definition differs."""

    name: str
    fields: list[str] = Field(description="The differing top-level Tool keys, in snake_case")
    before: dict[str, Any] = Field(
        description="Each changed field's value in the older version (absent: it had none)"
    )
    after: dict[str, Any] = Field(
        description="Each changed field's value in the newer version (absent: it has none)"
    )


class CatalogDiffRead(BaseModel):
    from_: int = Field(serialization_alias="from")
    to: int
    added: list[str]
    removed: list[str]
    changed: list[ChangedTool]

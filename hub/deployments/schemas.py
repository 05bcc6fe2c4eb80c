"""Deployment and bundle bodies (DESIGN §12)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "BundleRead",
    "BundleServer",
    "BundleTool",
    "DeploymentCreate",
    "DeploymentRead",
    "DeploymentUpdate",
    "EntryIn",
    "EntryRead",
]

MAX_ENTRIES = 100


class EntryIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    server: str = Field(min_length=1, max_length=63, description="server handle")
    catalog_version: int = Field(ge=1, lt=2**31)
    allow_without_ask: list[str] = Field(default_factory=list, max_length=10_000)


class DeploymentCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent_id: uuid.UUID
    name: str | None = Field(default=None, min_length=1, max_length=200)
    entries: list[EntryIn] = Field(default_factory=list, max_length=MAX_ENTRIES)


class DeploymentUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, min_length=1, max_length=200)
    entries: list[EntryIn] | None = Field(default=None, max_length=MAX_ENTRIES)


class EntryRead(BaseModel):
    server: str
    catalog_version: int
    allow_without_ask: list[str]


class DeploymentRead(BaseModel):
    id: uuid.UUID
    agent_id: uuid.UUID
    name: str | None
    entries: list[EntryRead]
    created_at: datetime
    updated_at: datetime


class BundleTool(BaseModel):
    name: str
    wire_name: str
    grant_key: str
    sha256: str
    allow_without_ask: bool
    tool: dict[str, Any]


class BundleServer(BaseModel):
    handle: str
    url: str
    credential_id: uuid.UUID | None
    catalog_version: int
    catalog_sha256: str
    tools: list[BundleTool]


class BundleRead(BaseModel):
    deployment_id: uuid.UUID
    agent_id: uuid.UUID
    servers: list[BundleServer]

"""The drift read: a deployment's drifted tools with their diffs (DESIGN §10.6)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = ["DeploymentDriftRead", "DriftedTool", "ServerProbeRead"]


class DriftedTool(BaseModel):
    server: str = Field(description="server handle")
    tool: str = Field(description="the tool's name in the pinned catalog version")
    grant_key: str
    catalog_version: int
    kind: Literal["changed", "gone", "renamed"]
    from_sha256: str = Field(description="the pinned definition's hash")
    to_sha256: str | None = Field(description="the live definition's hash; null when gone")
    changed: list[str] = Field(description="the fields that differ (snake_case)")
    before: dict[str, Any] = Field(description="those fields as pinned")
    after: dict[str, Any] = Field(description="those fields as served now")
    renamed_to: str | None = None
    detected_at: datetime


class ServerProbeRead(BaseModel):
    server: str
    status: Literal["ok", "unknown", "never"] = Field(
        description="ok: the last probe was a complete discovery; unknown: it failed or was cut "
        "short (nothing was marked); never: not probed yet"
    )
    reason: str | None = None
    checked_at: datetime | None = None
    complete_at: datetime | None = None
    next_probe_at: datetime | None = None


class DeploymentDriftRead(BaseModel):
    deployment_id: uuid.UUID
    tools: list[DriftedTool]
    servers: list[ServerProbeRead]

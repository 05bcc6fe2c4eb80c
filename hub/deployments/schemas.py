"""Deployment and bundle bodies (DESIGN §12)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, StrictInt

from hub.core.names import Name
from hub.core.schemas import RequestModel
from hub.servers.schemas import HANDLE_PATTERN

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


class EntryIn(RequestModel):
    server: str = Field(pattern=HANDLE_PATTERN, description="server handle")
    catalog_version: StrictInt = Field(ge=1, lt=2**31)
    allow_without_ask: list[str] = Field(default_factory=list, max_length=10_000)
    arguments: Literal["strict", "schema"] = Field(
        default="strict",
        description="strict: undeclared top-level arguments are refused; schema: the schema alone",
    )
    tool_names: Literal["prefixed", "plain"] = Field(
        default="prefixed",
        description="prefixed: handle__tool; plain: the tools' own names (valid and unique)",
    )
    mode: Literal["relay", "direct"] = Field(
        default="relay",
        description=(
            "relay: calls go through the hub; direct: the deployment's sidecar leases the "
            "credential and calls the server itself (needs credential:<c> use and a sidecar_id)"
        ),
    )


class DeploymentCreate(RequestModel):
    agent_id: uuid.UUID
    name: Name | None = None
    sidecar_id: uuid.UUID | None = Field(
        default=None, description="the service principal that may lease direct-mode credentials"
    )
    entries: list[EntryIn] = Field(default_factory=list, max_length=MAX_ENTRIES)


class DeploymentUpdate(RequestModel):
    name: Name | None = None
    sidecar_id: uuid.UUID | None = None
    entries: list[EntryIn] | None = Field(default=None, max_length=MAX_ENTRIES)


class EntryRead(BaseModel):
    server: str
    catalog_version: int
    allow_without_ask: list[str]
    arguments: Literal["strict", "schema"] = "strict"
    tool_names: Literal["prefixed", "plain"] = "prefixed"
    mode: Literal["relay", "direct"] = "relay"


class DeploymentRead(BaseModel):
    id: uuid.UUID
    agent_id: uuid.UUID
    sidecar_id: uuid.UUID | None = None
    name: str | None
    entries: list[EntryRead]
    created_at: datetime
    updated_at: datetime


class BundleTool(BaseModel):
    name: str
    wire_name: str
    grant_key: str
    sha256: str
    effect: Literal["allow", "ask"] = Field(
        description="the agent's effective decision (deny tools are not in the bundle)"
    )
    drifted: bool = Field(description="the live definition differs from the pinned one")
    allow_without_ask: bool
    tool: dict[str, Any]


class BundleServer(BaseModel):
    handle: str
    mode: Literal["relay", "direct"] = "relay"
    url: str | None = Field(
        default=None, description="the upstream URL, on direct-mode entries only"
    )
    era: Literal["modern", "legacy"] | None = Field(
        default=None,
        description="the protocol era the upstream answered in last, on direct-mode entries only "
        "(none yet: the sidecar finds it out on its first call)",
    )
    credential_id: uuid.UUID | None
    catalog_version: int
    catalog_sha256: str
    arguments: Literal["strict", "schema"] = "strict"
    tool_names: Literal["prefixed", "plain"] = "prefixed"
    tools: list[BundleTool]


class BundleRead(BaseModel):
    tenant_id: uuid.UUID
    deployment_id: uuid.UUID
    agent_id: uuid.UUID
    grants_version: int = Field(description="the agent's grants_version the effects were read at")
    servers: list[BundleServer]

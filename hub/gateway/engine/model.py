"""What the engine works on: a deployment's tools as one host sees them (DESIGN §10.1).

A :class:`DeploymentView` is built by the host (the hub from its database, the sidecar from its
bundle): per server its upstream and mode, per tool its wire name, grant key, verbatim MCP Tool
definition and hash, and the per-entry options. The engine decides, validates and shapes from it
without any I/O of its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["ArgumentsMode", "DeploymentView", "Effect", "ServerEntry", "ToolEntry"]

Effect = Literal["allow", "ask", "deny"]
ArgumentsMode = Literal["strict", "schema"]


@dataclass(frozen=True)
class ServerEntry:
    """One server of a deployment: where its tools are called and with which credential."""

    handle: str
    server_id: uuid.UUID
    url: str
    credential_id: uuid.UUID | None
    era: str | None
    catalog_version: int
    mode: Literal["relay", "direct"] = "relay"


@dataclass(frozen=True)
class ToolEntry:
    """One agent tool: a catalog tool under its wire name (DESIGN §10.1)."""

    wire_name: str
    handle: str
    name: str
    grant_key: str  # tool:<handle>.<name>, action "call"
    tool: Mapping[str, Any]  # the MCP Tool object verbatim, as snapshotted
    sha256: str
    catalog_version: int
    listed_without_ask: bool  # named in the entry's allow_without_ask
    arguments: ArgumentsMode = "strict"
    drifted: bool = False
    drift: Mapping[str, Any] | None = None  # {"from_sha256", "to_sha256", "changed": [...]}

    @property
    def destructive(self) -> bool:
        annotations = self.tool.get("annotations")
        return isinstance(annotations, dict) and annotations.get("destructiveHint") is True

    @property
    def output_schema(self) -> Any:
        return self.tool.get("outputSchema")


@dataclass(frozen=True)
class DeploymentView:
    """A deployment's servers by handle and tools by wire name, for one agent."""

    tenant_id: uuid.UUID
    deployment_id: uuid.UUID
    agent_id: uuid.UUID
    servers: Mapping[str, ServerEntry] = field(default_factory=dict)
    tools: Mapping[str, ToolEntry] = field(default_factory=dict)

    def server_of(self, tool: ToolEntry) -> ServerEntry:
        return self.servers[tool.handle]

"""A bundle as the sidecar reads it: the hub's ``GET …/bundle`` body (DESIGN §12, §15).

Parsed strictly (a body of the wrong shape is refused, never half-used) into the engine's
:class:`~hub.gateway.engine.model.DeploymentView` plus each tool's effect, so the sidecar lists
tools with the engine's own code. The body holds no secret; it is what the cache stores.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from hub.gateway.engine.model import DeploymentView, Effect, ServerEntry, ToolEntry
from hub.sidecar.errors import HubUnreachable

__all__ = ["Bundle", "parse_bundle"]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class WireTool(_Wire):
    name: str
    wire_name: str
    grant_key: str
    sha256: str
    effect: Literal["allow", "ask"]
    drifted: bool = False
    allow_without_ask: bool = False
    tool: dict[str, Any]


class WireServer(_Wire):
    handle: str
    mode: Literal["relay", "direct"] = "relay"
    url: str | None = None
    era: Literal["modern", "legacy"] | None = None
    credential_id: uuid.UUID | None = None
    catalog_version: int
    catalog_sha256: str
    arguments: Literal["strict", "schema"] = "strict"
    tool_names: Literal["prefixed", "plain"] = "prefixed"
    tools: list[WireTool]


class WireBundle(_Wire):
    tenant_id: uuid.UUID
    deployment_id: uuid.UUID
    agent_id: uuid.UUID
    grants_version: int
    servers: list[WireServer]


class _Envelope(_Wire):
    data: WireBundle


@dataclass(frozen=True)
class Bundle:
    """A parsed bundle: the view, each tool's effect by wire name, and what was fetched."""

    view: DeploymentView
    effects: dict[str, Effect]
    grants_version: int
    etag: str | None
    body: bytes
    wire: WireBundle

    def listing_key(self) -> tuple[Any, ...]:
        """What an agent's ``tools/list`` depends on: a change here is a ``list_changed``."""
        return tuple(
            (name, self.effects[name], tool.sha256, tool.drifted)
            for name, tool in sorted(self.view.tools.items())
        )


def parse_bundle(body: bytes, etag: str | None) -> Bundle:
    try:
        wire = _Envelope.model_validate_json(body).data
    except ValidationError:
        raise HubUnreachable("the hub's bundle is not of the expected shape") from None
    servers: dict[str, ServerEntry] = {}
    tools: dict[str, ToolEntry] = {}
    effects: dict[str, Effect] = {}
    for server in wire.servers:
        servers[server.handle] = ServerEntry(
            handle=server.handle,
            server_id=uuid.UUID(int=0),  # the hub's row id is not in the bundle (not needed)
            url=server.url or "",
            credential_id=server.credential_id,
            era=server.era,
            catalog_version=server.catalog_version,
            mode=server.mode,
        )
        for tool in server.tools:
            tools[tool.wire_name] = ToolEntry(
                wire_name=tool.wire_name,
                handle=server.handle,
                name=tool.name,
                grant_key=tool.grant_key,
                tool=tool.tool,
                sha256=tool.sha256,
                catalog_version=server.catalog_version,
                listed_without_ask=tool.allow_without_ask,
                arguments=server.arguments,
                drifted=tool.drifted,
            )
            effects[tool.wire_name] = tool.effect
    view = DeploymentView(
        tenant_id=wire.tenant_id,
        deployment_id=wire.deployment_id,
        agent_id=wire.agent_id,
        servers=servers,
        tools=tools,
    )
    return Bundle(view, effects, wire.grants_version, etag, body, wire)

"""What every upstream call of one replica shares: client, keyring, egress policy, deadlines."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hub.core.crypto import Keyring
from hub.core.metrics import Metrics
from hub.egress import EgressConfig
from hub.mcp import McpClient

if TYPE_CHECKING:
    from hub.upstream.keeper import TokenKeeper

__all__ = ["UpstreamContext"]


@dataclass(frozen=True)
class UpstreamContext:
    client: McpClient
    keyring: Keyring
    egress: EgressConfig
    deadline_s: float  # one discovery (HUB_DISCOVERY_TIMEOUT_S)
    metrics: Metrics
    call_deadline_s: float = 60.0  # one proxied tool call (HUB_TOOL_CALL_TIMEOUT_S)
    tokens: TokenKeeper | None = None  # the OAuth refresher (hub.oauth), plugged in by the wiring

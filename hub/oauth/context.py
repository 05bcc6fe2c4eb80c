"""What the OAuth flow of one replica shares: its configuration, the fetcher, the keyring, the
egress rules, the MCP client (for the unauthenticated probe) and the refresher."""

from __future__ import annotations

from dataclasses import dataclass

from hub.core.crypto import Keyring
from hub.egress import EgressConfig, Fetcher
from hub.mcp import McpClient
from hub.oauth.config import OAuthConfig
from hub.oauth.refresh import TokenRefresher

__all__ = ["OAuthContext"]


@dataclass(frozen=True)
class OAuthContext:
    config: OAuthConfig
    fetcher: Fetcher
    keyring: Keyring
    egress: EgressConfig
    client: McpClient
    refresher: TokenRefresher

    def __repr__(self) -> str:
        return "<OAuthContext>"

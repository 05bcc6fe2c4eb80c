"""OAuth tests: a hub that may reach loopback peers, an authorization server and a protected
MCP peer it issues tokens for."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from hub.core.settings import Settings
from tests.conftest import make_settings
from tests.peers.fixtures import handmade_peer, node_tools
from tests.peers.handmade import HandmadePeer
from tests.peers.oauth_server import AuthServer, protect

__all__ = ["handmade_peer", "node_tools"]


@pytest.fixture
def settings(db_url: str) -> Settings:
    return make_settings(
        db_url, allow_loopback=True, discovery_timeout_s=10, public_url="http://hub.test"
    )


@dataclass
class OAuthPeers:
    auth: AuthServer
    peer: HandmadePeer


OAuthPeersStarter = Callable[..., Awaitable[OAuthPeers]]


@pytest.fixture
async def oauth_peers() -> AsyncIterator[OAuthPeersStarter]:
    """Factory: ``await oauth_peers(auth={knobs}, protect={options}, era="modern")``."""
    started: list[OAuthPeers] = []

    async def start(
        *, auth: dict[str, Any] | None = None, guard: dict[str, Any] | None = None, **peer: Any
    ) -> OAuthPeers:
        server = await AuthServer(**(auth or {})).start()
        mcp = await HandmadePeer(**{"era": "modern", **peer}).start()
        protect(mcp, server, **(guard or {}))
        made = OAuthPeers(server, mcp)
        started.append(made)
        return made

    try:
        yield start
    finally:
        for made in started:
            await made.peer.stop()
            await made.auth.stop()

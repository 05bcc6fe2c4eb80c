"""MCP client fixtures: the peers of ``tests/peers``, a loopback fetcher and a client over it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from hub.egress import EgressConfig, Fetcher
from hub.mcp import McpClient
from tests.peers.fixtures import everything_peer, handmade_peer, node_tools, sdk_peer

__all__ = ["client", "everything_peer", "fetcher", "handmade_peer", "node_tools", "sdk_peer"]

CLIENT_INFO = {"name": "mcp-hub-tests", "version": "0.0.1"}


@pytest.fixture
async def fetcher() -> AsyncIterator[Fetcher]:
    """A fetcher that may reach loopback (the peers), with the default caps."""
    async with Fetcher(EgressConfig(allow_loopback=True)) as made:
        yield made


@pytest.fixture
def client(fetcher: Fetcher) -> McpClient:
    return McpClient(fetcher, client_info=CLIENT_INFO)

"""The official SDK client, in both eras, lists and calls tools through the hub (DESIGN §10.4).

Upstreams are real peers: the SDK server in its stateful, stateless and JSON modes. The agent
sees exactly the deployed tools under their wire names and its calls reach the upstream.
"""

from __future__ import annotations

import json

import httpx2
import pytest
from fastapi import FastAPI

from hub.core.db import Database
from tests.gateway.support import Upstream, deploy, sdk_client
from tests.peers.fixtures import SdkPeerStarter


@pytest.mark.parametrize("peer_mode", ["sse", "stateless", "json"])
@pytest.mark.parametrize("client_mode", ["auto", "legacy"])
async def test_sdk_client_lists_and_calls_through_the_hub(
    client: httpx2.AsyncClient,
    database: Database,
    app: FastAPI,
    sdk_peer: SdkPeerStarter,
    peer_mode: str,
    client_mode: str,
) -> None:
    peer = await sdk_peer(peer_mode)
    deployed = await deploy(
        client, database, [Upstream("docs", peer.url, allow_without_ask=["echo", "add"])]
    )
    async with sdk_client(app, deployed, mode=client_mode) as mcp:
        listed = await mcp.list_tools()
        names = [t.name for t in listed.tools]
        assert names == sorted(names)
        assert "docs__echo" in names
        assert "docs__add" in names
        echo = next(t for t in listed.tools if t.name == "docs__echo")
        assert echo.description == "Returns its arguments."
        done = await mcp.call_tool("docs__echo", {"text": "hello"})
        assert done.is_error is False
        assert json.loads(done.content[0].text) == {"text": "hello"}  # type: ignore[union-attr]
        assert mcp.protocol_version == ("2026-07-28" if client_mode == "auto" else "2025-11-25")

"""The official SDK client, in both eras, lists and calls tools through the hub (DESIGN §10.4).

Upstreams are real peers: the SDK server in its stateful, stateless and JSON modes (dual-era, so
the hub reaches it on the 2026-07-28 wire), the same server made handshake-only
(``--legacy-only``: the hub must negotiate the 2025-11-25 era and keep its session), and
``@modelcontextprotocol/server-everything`` (handshake eras only, sessions, SSE answers). The
agent sees exactly the deployed tools under their wire names and its calls reach the upstream.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI

from hub.core.db import Database
from tests.gateway.support import Deployed, Upstream, deploy, sdk_client
from tests.peers.fixtures import EverythingPeer, SdkPeerStarter

ERA_OF_CLIENT = {"auto": "2026-07-28", "legacy": "2025-11-25"}


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
        assert mcp.protocol_version == ERA_OF_CLIENT[client_mode]


async def _server(client: httpx2.AsyncClient, deployed: Deployed, handle: str) -> dict[str, Any]:
    response = await client.get(
        deployed.setup.url("servers", handle), headers=deployed.setup.admin.headers
    )
    assert response.status_code == 200, response.text
    server: dict[str, Any] = response.json()["data"]
    return server


@pytest.mark.parametrize("peer_mode", ["sse", "json"])
@pytest.mark.parametrize("client_mode", ["auto", "legacy"])
async def test_sdk_client_through_the_hub_to_a_legacy_only_stateful_peer(
    client: httpx2.AsyncClient,
    database: Database,
    app: FastAPI,
    sdk_peer: SdkPeerStarter,
    peer_mode: str,
    client_mode: str,
) -> None:
    """The upstream refuses the 2026-07-28 wire (400, empty body) and is stateful: every request
    after ``initialize`` must carry its ``Mcp-Session-Id``, so a call that works proves the hub
    negotiated the handshake era and used (and kept) the session."""
    peer = await sdk_peer(peer_mode, legacy_only=True)
    deployed = await deploy(
        client, database, [Upstream("old", peer.url, allow_without_ask=["echo", "add"])]
    )
    server = await _server(client, deployed, "old")
    assert (server["era"], server["protocol_version"]) == ("legacy", "2025-11-25")
    async with sdk_client(app, deployed, mode=client_mode) as mcp:
        assert mcp.protocol_version == ERA_OF_CLIENT[client_mode]
        listed = await mcp.list_tools()
        names = [t.name for t in listed.tools]
        assert names == sorted(names)
        assert {"old__echo", "old__add"} <= set(names)
        add = next(t for t in listed.tools if t.name == "old__add")
        assert add.description == "Adds two integers."
        for text in ("first", "second"):  # the second call resumes the session the first kept
            done = await mcp.call_tool("old__echo", {"text": text})
            assert done.is_error is False, done
            assert json.loads(done.content[0].text) == {"text": text}  # type: ignore[union-attr]
            assert done.structured_content == {"text": text}
        added = await mcp.call_tool("old__add", {"a": 2, "b": 3})
        assert added.is_error is False, added
        assert added.structured_content == {"a": 2, "b": 3}  # the peer echoes its arguments
    server = await _server(client, deployed, "old")
    assert server["era"] == "legacy"  # calls did not move it to the 2026-07-28 wire


@pytest.mark.parametrize("client_mode", ["auto", "legacy"])
async def test_sdk_client_through_the_hub_to_server_everything(
    client: httpx2.AsyncClient,
    database: Database,
    app: FastAPI,
    everything_peer: EverythingPeer,
    client_mode: str,
) -> None:
    """``@modelcontextprotocol/server-everything`` (skipped without Node, required with
    ``HUB_TEST_REQUIRE_NODE=1``): the hub reaches it in the handshake era; the SDK client, in
    either era, lists its tools and calls ``echo``."""
    deployed = await deploy(
        client, database, [Upstream("every", everything_peer.url, allow_without_ask=["echo"])]
    )
    server = await _server(client, deployed, "every")
    assert server["era"] == "legacy"
    upstream_names = sorted(t["name"] for t in deployed.catalogs["every"]["tools"])
    assert "echo" in upstream_names
    marker = f"hello-{uuid.uuid4()}"
    async with sdk_client(app, deployed, mode=client_mode) as mcp:
        assert mcp.protocol_version == ERA_OF_CLIENT[client_mode]
        listed = await mcp.list_tools()
        names = [t.name for t in listed.tools]
        assert names == sorted(names)
        assert names == [f"every__{n}" for n in upstream_names]
        echo = next(t for t in listed.tools if t.name == "every__echo")
        assert "message" in echo.input_schema["properties"]
        done = await mcp.call_tool("every__echo", {"message": marker})
        assert done.is_error is False, done
        assert [c.type for c in done.content] == ["text"]
        assert done.content[0].text == f"Echo: {marker}"  # type: ignore[union-attr]

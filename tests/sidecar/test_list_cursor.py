"""The sidecar's ``tools/list`` refuses a cursor with ``-32602``, as the hub's endpoint does.

Its list is the bundle's, on one page; the ``mcp`` SDK's server under it passes a cursor on to
the handler (and reads ``"cursor": null`` as no cursor), so the handler refuses it itself
(:mod:`hub.mcp.server.pagination`). The endpoint's side: ``tests/gateway/test_endpoint_params.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from hub.mcp import MODERN_VERSION
from tests.deploy.serving import free_port
from tests.gateway.support import META, Upstream
from tests.peers.fixtures import HandmadePeerStarter
from tests.sidecar.support import (
    INIT,
    Sidecar,
    deploy_on,
    listening_sidecar_async,
    live_hub,
    rpc_message_of,
    stdio_sidecar,
)

FREE = {"name": "free", "inputSchema": {"type": "object"}}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
LEGACY = {"mcp-protocol-version": "2025-11-25"}
MODERN = {"mcp-protocol-version": MODERN_VERSION, "mcp-method": "tools/list"}


_message = rpc_message_of


async def _list(
    http: httpx2.AsyncClient, url: str, headers: dict[str, str], params: dict[str, Any]
) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": params}
    return _message(await http.post(url, json=body, headers=headers))


async def _legacy_headers(http: httpx2.AsyncClient, url: str, bearer: str) -> dict[str, str]:
    """A 2025-11-25 session with the sidecar (its server is stateful in this era)."""
    headers = ACCEPT | LEGACY | {"authorization": f"Bearer {bearer}"}
    opened = await http.post(url, json=INIT, headers=headers)
    assert opened.status_code == 200, opened.text
    headers["mcp-session-id"] = opened.headers["mcp-session-id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await http.post(url, json=done, headers=headers)
    return headers


@pytest.mark.parametrize("cursor", ["garbage", "", None], ids=["garbage", "empty", "null"])
async def test_the_sidecar_refuses_any_cursor_in_both_eras(
    tmp_path: Path, handmade_peer: HandmadePeerStarter, cursor: str | None
) -> None:
    peer = await handmade_peer(era="dual", tools=[FREE])
    with live_hub(tmp_path) as hub:
        deployed = await deploy_on(hub, [Upstream("docs", peer.url)])
        sidecar = Sidecar(hub, deployed, tmp_path)
        async with (
            listening_sidecar_async(sidecar, free_port()) as running,
            httpx2.AsyncClient(timeout=30) as http,
        ):
            legacy = await _legacy_headers(http, running.url, running.token)
            modern = ACCEPT | MODERN | {"authorization": f"Bearer {running.token}"}
            for headers, params in [(legacy, {}), (modern, {"_meta": META})]:
                refused = await _list(http, running.url, headers, params | {"cursor": cursor})
                assert "result" not in refused, refused
                assert refused["error"]["code"] == -32602, refused
                assert "cursor" in refused["error"]["message"], refused
                listed = await _list(http, running.url, headers, params)
                assert [t["name"] for t in listed["result"]["tools"]] == ["docs__free"]


async def test_the_sidecars_stdio_server_refuses_a_cursor(
    tmp_path: Path, handmade_peer: HandmadePeerStarter
) -> None:
    peer = await handmade_peer(era="dual", tools=[FREE])
    with live_hub(tmp_path) as hub:
        deployed = await deploy_on(hub, [Upstream("docs", peer.url)])
        async with stdio_sidecar(Sidecar(hub, deployed, tmp_path), mode="legacy") as client:
            with pytest.raises(MCPError) as refused:
                await client.session.list_tools(params=types.PaginatedRequestParams(cursor="x"))
            assert refused.value.error.code == -32602
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == ["docs__free"]

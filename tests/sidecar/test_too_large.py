"""A call too large for the hub, through ``hub sidecar --stdio``: the hub's JSON-RPC refusal.

The hub answered such a call with HTTP 413 and its REST error body, and the sidecar told its
agent ``unavailable`` ("the call did not run … HTTP 413"), as if the hub were down. The endpoint
now refuses it in JSON-RPC (``-32600``, the bound in ``data``), which the sidecar passes on.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from tests.gateway.support import Upstream
from tests.peers.fixtures import SdkPeerStarter
from tests.sidecar.support import Sidecar, deploy_on, live_hub, stdio_sidecar

LIMIT = 2 * 1024 * 1024  # HUB_MAX_REQUEST_BYTES's default, the live hub's


async def test_a_call_over_the_hubs_bound_is_refused_as_such(
    tmp_path: Path, sdk_peer: SdkPeerStarter
) -> None:
    peer = await sdk_peer("stateless-json")
    with live_hub(tmp_path) as hub:
        deployed = await deploy_on(hub, [Upstream("docs", peer.url, allow_without_ask=["echo"])])
        async with stdio_sidecar(Sidecar(hub, deployed, tmp_path), mode="legacy") as mcp:
            with pytest.raises(MCPError) as refused:
                await mcp.call_tool("docs__echo", {"text": "x" * (LIMIT + 1)})
            assert refused.value.error.code == -32600
            assert "larger than this hub accepts" in refused.value.error.message
            done = await mcp.call_tool("docs__echo", {"text": "small"})  # and it goes on
            assert done.is_error is False

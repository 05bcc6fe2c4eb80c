"""A direct-mode call is bounded as the hub bounds its own (DESIGN §10.2, steps 5 and 6): the
sidecar takes the deadline (``HUB_TOOL_CALL_TIMEOUT_S``) and the result's size
(``HUB_MAX_TOOL_RESULT_BYTES``) from the hub's decision, not its own defaults (``--call-timeout``
90 s, and 1 MiB)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx2
import pytest
from fastapi import FastAPI

from hub.core.db import Database
from tests.gateway.support import Upstream
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade_wire import RecordedRequest, Reply, rpc_result
from tests.sidecar.direct import deploy_direct
from tests.sidecar.inprocess import direct_calls

DEADLINE_S = 1.0
CAP = 4096
ECHO = {"name": "echo", "inputSchema": {"type": "object", "properties": {}}}
BOUNDS = pytest.mark.parametrize(
    "settings",
    [{"tool_call_timeout_s": DEADLINE_S, "max_tool_result_bytes": CAP}],
    indirect=True,
)


@BOUNDS
async def test_the_hubs_deadline_and_result_bound_apply(
    app: FastAPI,
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    tmp_path: Path,
) -> None:
    peer = await handmade_peer(era="modern", tools=[ECHO])
    upstream = Upstream("up", peer.url, secret="direct-bounds-secret-0123456789")
    world = await deploy_direct(client, database, [upstream], {"up"})
    big = {"content": [{"type": "text", "text": "a" * 20_000}]}
    peer.override("tools/call", lambda req: Reply(200, rpc_result(req.rpc_id, big)))
    async with direct_calls(app, world, tmp_path) as (calls, bundle):
        tool = bundle.view.tools["up__echo"]
        cut = await calls.call(bundle, tool, "up__echo", {})
        assert cut["_meta"]["io.mcphub/truncated"]["original_bytes"] > CAP
        assert len(cut["content"][0]["text"]) < CAP

        async def hang(req: RecordedRequest) -> Reply:
            await asyncio.sleep(60)
            return Reply(200)

        peer.clear_overrides()
        peer.override("tools/call", hang)
        started = time.monotonic()
        late = await calls.call(bundle, tool, "up__echo", {})
        assert time.monotonic() - started < DEADLINE_S + 1.5  # not the sidecar's 90 s
        assert late["_meta"]["io.mcphub/error"] == {"class": "upstream_failed", "reason": "timeout"}


@pytest.mark.parametrize("settings", [{"max_response_bytes": 8192}], indirect=True)
async def test_the_hubs_byte_cap_applies(
    app: FastAPI,
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    tmp_path: Path,
) -> None:
    """A body past ``HUB_MAX_RESPONSE_BYTES`` is refused by the sidecar's fetcher as by the
    hub's (the fetcher's own default would take 4 MiB), and no upstream text reaches the agent."""
    peer = await handmade_peer(era="modern", tools=[ECHO])
    upstream = Upstream("up", peer.url, secret="direct-bounds-secret-0123456789")
    world = await deploy_direct(client, database, [upstream], {"up"})
    body = {"content": [{"type": "text", "text": "upstream text " + "a" * 20_000}]}
    peer.override("tools/call", lambda req: Reply(200, rpc_result(req.rpc_id, body)))
    async with direct_calls(app, world, tmp_path) as (calls, bundle):
        refused = await calls.call(bundle, bundle.view.tools["up__echo"], "up__echo", {})
    assert refused["_meta"]["io.mcphub/error"] == {
        "class": "upstream_failed",
        "reason": "response_too_large",
    }
    assert "upstream text" not in str(refused)

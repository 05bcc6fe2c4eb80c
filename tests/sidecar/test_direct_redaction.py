"""Direct mode is the one host that holds the upstream secret itself (a lease): a server that
echoes the ``Authorization`` header back gets ``[redacted]`` in every form, as on the hub's
endpoint (SECURITY §7.47; the endpoint's case: ``tests/gateway/test_call_outcomes.py``), and the
secret is in no log record at DEBUG, the HTTP libraries' own included."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import httpx2
import pytest
from fastapi import FastAPI

from hub.core.db import Database
from tests.gateway.support import Upstream
from tests.gateway.test_call_outcomes import _echo_bearer
from tests.peers.fixtures import HandmadePeerStarter
from tests.sidecar.direct import deploy_direct
from tests.sidecar.inprocess import direct_calls
from tests.support.leaks import debug_everything

CANARY = "direct-canary-secret-0123456789abcdef"
FREE = {"name": "free", "inputSchema": {"type": "object"}}


async def test_a_server_echoing_the_leased_bearer_yields_redacted(
    app: FastAPI,
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    peer = await handmade_peer(era="modern", tools=[FREE])
    world = await deploy_direct(client, database, [Upstream("up", peer.url, secret=CANARY)], {"up"})
    peer.override("tools/call", _echo_bearer)
    debug_everything(caplog)
    async with direct_calls(app, world, tmp_path) as (calls, bundle):
        result = await calls.call(bundle, bundle.view.tools["up__free"], "up__free", {})
    assert peer.rpc_requests("tools/call")[0].headers["authorization"] == f"Bearer {CANARY}"
    text = json.dumps(result)
    assert CANARY not in text
    assert base64.b64encode(CANARY.encode()).decode() not in text
    assert "[redacted]" in result["content"][0]["text"]
    assert result["content"][1] == {"type": "text", "text": "[redacted]"}
    assert CANARY not in "\n".join(r.getMessage() for r in caplog.records)

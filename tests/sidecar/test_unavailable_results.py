"""A call the sidecar cannot serve (its bundle stale past ``--max-stale``, or refused by the hub)
fails closed as a result valid in the agent's era: ``isError``, class ``unavailable``, on
2026-07-28 with its ``resultType`` as every other result (the SDK's client reads it; the SDK's
server refused a modern result without one as an invalid result, ``-32603``). The reason says
which: ``hub_unreachable`` for a bundle the hub has not confirmed, ``hub_refused`` for one it
refused.

The sidecar's server runs in the test's process (the SDK's in-process client), its hub is the
app through its ASGI transport, and its clock is the test's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI
from mcp.client import Client

from hub.core.db import Database
from hub.sidecar.cache import BundleCache
from hub.sidecar.config import SidecarConfig
from hub.sidecar.hubclient import HubClient
from hub.sidecar.server import SidecarServer
from hub.sidecar.sync import Syncer
from tests.gateway.support import Deployed, Upstream, deploy
from tests.peers.fixtures import SdkPeerStarter

MAX_STALE_S = 30.0


class Wall:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@asynccontextmanager
async def _sidecar(app: FastAPI, deployed: Deployed, tmp_path: Path) -> AsyncIterator[Any]:
    config = SidecarConfig.checked(
        hub="http://127.0.0.1:9",  # reached in process
        tenant=str(deployed.setup.tenant_id),
        deployment=deployed.deployment_id,
        agent_key=deployed.agent.key,
        cache_dir=tmp_path,
        max_stale_s=MAX_STALE_S,
    )
    hub = HubClient(config, transport=httpx2.ASGITransport(app=app))
    wall = Wall()
    cache = BundleCache(config.cache_dir, config.hub, config.tenant, config.deployment)
    syncer = Syncer(config, hub, cache, wall=wall)
    await syncer.start()

    async def never(*_: Any) -> dict[str, Any]:
        raise AssertionError("a call the sidecar cannot serve must not be sent on")

    server = SidecarServer(syncer, never)
    try:
        yield syncer, wall, server
    finally:
        await hub.aclose()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("why", ["stale", "refused"])
async def test_a_call_without_a_servable_bundle_is_a_valid_unavailable_result(
    app: FastAPI,
    client: httpx2.AsyncClient,
    database: Database,
    sdk_peer: SdkPeerStarter,
    tmp_path: Path,
    mode: str,
    why: str,
) -> None:
    peer = await sdk_peer("stateless-json")
    deployed = await deploy(client, database, [Upstream("docs", peer.url)])
    async with _sidecar(app, deployed, tmp_path) as (syncer, wall, server):
        if why == "stale":
            wall.now += MAX_STALE_S + 1
        else:
            gone = await client.delete(
                deployed.setup.url("deployments", deployed.deployment_id),
                headers=deployed.setup.admin.headers,
            )
            assert gone.status_code == 204, gone.text
            await syncer.sync_logged()
        async with Client(server.server, mode=mode, cache=None) as mcp:
            assert mcp.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
            failed = await mcp.call_tool("docs__echo", {"text": "x"})
    assert failed.is_error is True
    error = (failed.meta or {})["io.mcphub/error"]
    reason = "hub_unreachable" if why == "stale" else "hub_refused"
    assert error == {"class": "unavailable", "reason": reason}
    text = failed.content[0].text  # type: ignore[union-attr]
    assert text.startswith("unavailable: the call did not run (")
    assert ("--max-stale" if why == "stale" else "the hub refused the bundle") in text

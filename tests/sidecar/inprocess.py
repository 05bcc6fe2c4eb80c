"""The sidecar's direct-mode calls in the test's own process, reaching the app through its ASGI
transport: what a direct-mode test needs when no ``hub serve`` and sidecar subprocess are."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
from fastapi import FastAPI

from hub.sidecar.bundle import Bundle, parse_bundle
from hub.sidecar.config import SidecarConfig
from hub.sidecar.direct import DirectCalls
from hub.sidecar.hubclient import HubClient
from tests.sidecar.direct import DirectDeployed

__all__ = ["direct_calls"]


@asynccontextmanager
async def direct_calls(
    app: FastAPI, world: DirectDeployed, tmp_path: Path, *, agent_key: str | None = None
) -> AsyncIterator[tuple[DirectCalls, Bundle]]:
    """The deployment's direct-mode calls and its bundle, as a sidecar fetched it (its calls
    made with ``agent_key`` when given, else the agent's key)."""
    deployed = world.deployed
    config = SidecarConfig.checked(
        hub="http://127.0.0.1:9",  # loopback, as --hub must be for http; reached in process
        tenant=str(world.setup.tenant_id),
        deployment=deployed.deployment_id,
        agent_key=agent_key or deployed.agent.key,
        mode="direct",
        sidecar_key=world.sidecar.key,
        cache_dir=tmp_path,
    )
    transport = httpx2.ASGITransport(app=app)
    agent = HubClient(config, transport=transport)
    sidecar = HubClient(config, key=world.sidecar.key, transport=transport)
    calls = DirectCalls(config, agent, sidecar)
    async with httpx2.AsyncClient(transport=transport, base_url="http://hub.test") as http:
        got = await http.get(
            world.setup.url("deployments", deployed.deployment_id, "bundle"),
            headers=deployed.headers,
        )
    assert got.status_code == 200, got.text
    try:
        yield calls, parse_bundle(got.content, got.headers.get("etag"))
    finally:
        await calls.aclose()
        await agent.aclose()
        await sidecar.aclose()

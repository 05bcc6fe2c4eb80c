"""A leased secret lives in the sidecar's memory until its ``expires_at``, then it is dropped."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from hub.egress import EgressConfig, Fetcher
from hub.mcp import McpClient
from hub.sidecar.config import SidecarConfig
from hub.sidecar.direct import CLIENT_INFO, DirectCalls, Lease
from hub.sidecar.hubclient import HubClient


def _config(tmp_path: Path) -> SidecarConfig:
    return SidecarConfig.checked(
        hub="http://127.0.0.1:9",
        tenant=str(uuid.uuid4()),
        deployment=str(uuid.uuid4()),
        agent_key="hub_agent",
        mode="direct",
        sidecar_key="hub_sidecar",
        cache_dir=tmp_path,
    )


def _lease(expires_in: float) -> Lease:
    fetcher = Fetcher(EgressConfig())
    return Lease(
        uuid.uuid4(),
        "leased-secret-0123456789",
        "https://api.example.com",
        time.monotonic() + expires_in,
        McpClient(fetcher, client_info=CLIENT_INFO),
        fetcher,
    )


async def test_expired_leases_are_discarded_and_live_ones_kept(tmp_path: Path) -> None:
    config = _config(tmp_path)
    agent, sidecar = HubClient(config), HubClient(config, key=config.sidecar_key)
    calls = DirectCalls(config, agent, sidecar)
    expired, live = _lease(-1), _lease(300)
    calls._leases = {expired.credential_id: expired, live.credential_id: live}
    await calls.discard_expired()
    assert list(calls._leases) == [live.credential_id]
    assert "leased-secret" not in repr(live)
    await calls.aclose()
    assert calls._leases == {}
    await agent.aclose()
    await sidecar.aclose()


def test_the_config_never_shows_its_keys(tmp_path: Path) -> None:
    assert "hub_agent" not in repr(_config(tmp_path))
    assert "hub_sidecar" not in repr(_config(tmp_path))

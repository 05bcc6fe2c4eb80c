"""A leased secret lives in the sidecar's memory until its ``expires_at``, then it is dropped."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

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


class _SlowLeasingHub(HubClient):
    """The hub's lease route as a slow answer, counted (no network: the answer is made here)."""

    leases = 0

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.leases += 1
        await asyncio.sleep(0.05)  # long enough for a concurrent call to ask as well
        return {
            "secret": "leased-secret-0123456789",
            "origin": "https://api.example.com",
            "expires_at": (datetime.now(UTC) + timedelta(seconds=300)).isoformat(),
            "egress": {"allow_loopback": False, "allow_cidrs": [], "extra_origins": []},
        }


async def test_concurrent_calls_share_one_lease(tmp_path: Path) -> None:
    config = _config(tmp_path)
    agent, sidecar = HubClient(config), _SlowLeasingHub(config, key=config.sidecar_key)
    calls = DirectCalls(config, agent, sidecar)
    credential = uuid.uuid4()
    first, second = await asyncio.gather(calls.lease(credential), calls.lease(credential))
    assert first is second
    assert sidecar.leases == 1
    await calls.aclose()
    await agent.aclose()
    await sidecar.aclose()


def test_the_config_never_shows_its_keys(tmp_path: Path) -> None:
    assert "hub_agent" not in repr(_config(tmp_path))
    assert "hub_sidecar" not in repr(_config(tmp_path))

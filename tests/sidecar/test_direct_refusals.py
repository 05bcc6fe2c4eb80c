"""Direct mode passes on the hub's refusal of a decision as relay mode passes on the endpoint's
refusal of the same call: an agent sees one answer whichever mode its server is in.

- no valid key: JSON-RPC ``40100``, class ``unauthenticated`` (not a result saying the hub is
  unreachable);
- a body past ``HUB_MAX_REQUEST_BYTES``: ``-32600`` (with ``data.max_bytes`` once the hub's REST
  413 names its limit);
- the agent's rate limit: ``42900``, class ``rate_limited``, with ``retry_after_s``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI

from hub.core.db import Database
from hub.sidecar.config import SidecarConfig
from hub.sidecar.hubclient import HubClient
from hub.sidecar.relay import Relay, RelayError
from tests.gateway.support import Upstream
from tests.peers.fixtures import HandmadePeerStarter
from tests.sidecar.direct import DirectDeployed, deploy_direct
from tests.sidecar.inprocess import direct_calls

ECHO = {"name": "echo", "inputSchema": {"type": "object"}}
MAX_REQUEST = 4096


@pytest.fixture
async def world(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> DirectDeployed:
    peer = await handmade_peer(era="modern", tools=[ECHO])
    upstreams = [
        Upstream("rel", peer.url),
        Upstream("dir", peer.url, secret="direct-refusals-secret-0123456789"),
    ]
    return await deploy_direct(client, database, upstreams, {"dir"})


@asynccontextmanager
async def _relay(
    app: FastAPI, world: DirectDeployed, key: str | None = None
) -> AsyncIterator[Relay]:
    deployed = world.deployed
    config = SidecarConfig.checked(
        hub="http://127.0.0.1:9",  # reached in process
        tenant=str(world.setup.tenant_id),
        deployment=deployed.deployment_id,
        agent_key=key or deployed.agent.key,
        cache_dir=Path("/nonexistent"),
    )
    hub = HubClient(config, transport=httpx2.ASGITransport(app=app))
    try:
        yield Relay(hub)
    finally:
        await hub.aclose()


async def _refusals(
    app: FastAPI, world: DirectDeployed, tmp_path: Path, arguments: Any, key: str | None = None
) -> tuple[RelayError, RelayError]:
    """The relayed call's refusal and the direct call's, of the same arguments."""
    async with _relay(app, world, key) as relay:
        with pytest.raises(RelayError) as relayed:
            await relay.call(None, "rel__echo", arguments)
    async with direct_calls(app, world, tmp_path, agent_key=key) as (calls, bundle):
        tool = bundle.view.tools["dir__echo"]
        with pytest.raises(RelayError) as direct:
            await calls.call(bundle, tool, "dir__echo", arguments)
    return relayed.value, direct.value


async def test_no_valid_key_is_unauthenticated_in_both_modes(
    app: FastAPI, world: DirectDeployed, tmp_path: Path
) -> None:
    relayed, direct = await _refusals(app, world, tmp_path, {}, key="mcphub_not-a-valid-key")
    assert relayed.code == direct.code == 40100
    assert relayed.message == direct.message
    assert relayed.data == direct.data == {"class": "unauthenticated"}


@pytest.mark.parametrize("settings", [{"max_request_bytes": MAX_REQUEST}], indirect=True)
async def test_a_body_past_the_hubs_bound_is_an_invalid_request_in_both_modes(
    app: FastAPI, world: DirectDeployed, tmp_path: Path
) -> None:
    relayed, direct = await _refusals(app, world, tmp_path, {"text": "a" * 2 * MAX_REQUEST})
    assert relayed.code == direct.code == -32600
    assert relayed.data == {"max_bytes": MAX_REQUEST}
    assert direct.message.startswith("the request is larger than this hub accepts")


@pytest.mark.parametrize("settings", [{"max_request_bytes": MAX_REQUEST}], indirect=True)
async def test_a_direct_413_names_the_hubs_limit_as_relays_does(
    app: FastAPI, world: DirectDeployed, tmp_path: Path
) -> None:
    relayed, direct = await _refusals(app, world, tmp_path, {"text": "a" * 2 * MAX_REQUEST})
    assert (direct.message, direct.data) == (relayed.message, relayed.data)


@pytest.mark.parametrize(
    "settings", [{"rate_limits": "rest=60/minute, tool_call=1/minute"}], indirect=True
)
async def test_the_rate_limit_is_rate_limited_in_both_modes(
    app: FastAPI, client: httpx2.AsyncClient, world: DirectDeployed, tmp_path: Path
) -> None:
    """Relay: the endpoint's ``tool_call`` class (the first call runs, the second is refused).
    Direct: the decision's ``rest`` class (the agent's other requests spent it)."""
    async with _relay(app, world) as relay:
        await relay.call(None, "rel__echo", {})
        with pytest.raises(RelayError) as relayed:
            await relay.call(None, "rel__echo", {})
    async with direct_calls(app, world, tmp_path) as (calls, bundle):
        await spend_rest(client, world)
        with pytest.raises(RelayError) as direct:
            await calls.call(bundle, bundle.view.tools["dir__echo"], "dir__echo", {})
    for refused in (relayed.value, direct.value):
        assert refused.code == 42900
        assert refused.message.startswith("Too many tool calls: try again in ")
        assert refused.data["class"] == "rate_limited"
        assert isinstance(refused.data["retry_after_s"], int)
        assert refused.data["retry_after_s"] >= 1


async def spend_rest(client: httpx2.AsyncClient, world: DirectDeployed) -> None:
    """The agent's REST requests until the class ``rest`` refuses it."""
    for _ in range(1000):
        answer = await client.get("/whoami", headers=world.deployed.headers)
        if answer.status_code == 429:
            return
        assert answer.status_code == 200, answer.text
    raise AssertionError("the rest limit never refused the agent")

"""Direct mode's outcome reports (DESIGN §10.5, §15): one ``tool.call`` row per decided call —
a second report of the same decision is 409 and writes nothing; a forged id is 400."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from hub.core.db import Database
from tests.gateway.support import rpc
from tests.peers.fixtures import SdkPeerStarter
from tests.sidecar.decisions_support import allowed_decision, decisions_url, docs_world, report
from tests.sidecar.direct import DirectDeployed
from tests.support.stories import audit_events


@pytest.fixture
async def world(
    client: httpx2.AsyncClient, database: Database, sdk_peer: SdkPeerStarter
) -> DirectDeployed:
    return await docs_world(client, database, sdk_peer)


async def _decide(client: httpx2.AsyncClient, world: DirectDeployed) -> dict[str, Any]:
    data, _ = await allowed_decision(client, world, {"text": "hi"})
    return data


async def test_an_outcome_is_recorded_once(
    client: httpx2.AsyncClient, database: Database, world: DirectDeployed
) -> None:
    decided = await _decide(client, world)
    first = await report(client, world, decided["decision_id"])
    assert first.status_code == 200, first.text
    again = await report(client, world, decided["decision_id"])
    assert again.status_code == 409, again.text
    assert again.json()["error"]["reason"] == "outcome_recorded"
    calls = await audit_events(database, action="tool.call", outcome="success")
    assert len(calls) == 1
    assert calls[0].details["upstream_ms"] == 1.5  # the reported call
    assert calls[0].details["tool_sha256"] == decided["tool_sha256"]


async def test_two_decisions_of_the_same_call_are_two_outcomes(
    client: httpx2.AsyncClient, database: Database, world: DirectDeployed
) -> None:
    one, two = await _decide(client, world), await _decide(client, world)
    assert one["decision_id"] != two["decision_id"]
    for decided in (one, two):
        reported = await report(client, world, decided["decision_id"])
        assert reported.status_code == 200, reported.text
    assert len(await audit_events(database, action="tool.call", outcome="success")) == 2


async def test_a_forged_decision_is_refused(
    client: httpx2.AsyncClient, database: Database, world: DirectDeployed
) -> None:
    decided = await _decide(client, world)
    key_id, nonce, body = decided["decision_id"].split(".")
    forged = f"{key_id}.{nonce}.{body[:-2]}AA"
    refused = await report(client, world, forged)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["reason"] == "invalid_decision"
    assert await audit_events(database, action="tool.call", outcome="success") == []


async def test_another_spelling_of_a_reported_decision_is_refused(
    client: httpx2.AsyncClient, database: Database, world: DirectDeployed
) -> None:
    decided = await _decide(client, world)
    assert (await report(client, world, decided["decision_id"])).status_code == 200
    key_id, nonce, body = decided["decision_id"].split(".")
    # base64 decoders skip foreign characters and spare padding: the same sealed bytes
    for spelling in (f"{key_id}.{nonce}.{body[:4]}!!{body[4:]}", f"{key_id}.{nonce}.{body}=="):
        refused = await report(client, world, spelling)
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["reason"] == "invalid_decision"
    assert len(await audit_events(database, action="tool.call", outcome="success")) == 1


@pytest.mark.parametrize(
    "settings", [{"rate_limits": "tool_call=2/minute,rest=off"}], indirect=True
)
async def test_decisions_count_with_the_endpoints_calls_in_tool_call(
    client: httpx2.AsyncClient, database: Database, world: DirectDeployed
) -> None:
    """A direct-mode call is the agent's tool call: one through the endpoint and one decision
    spend a budget of two, and the next decision is refused as the endpoint refuses a call."""
    deployed = world.deployed
    call = {"name": "docs__echo", "arguments": {"text": "hi"}}
    assert "result" in (await rpc(client, deployed, "tools/call", call)).json()
    await _decide(client, world)
    answer = await client.post(
        decisions_url(world),
        json={"wire_name": "docs__echo", "arguments": {"text": "hi"}},
        headers=deployed.agent.headers,
    )
    assert answer.status_code == 200, answer.text
    refused = answer.json()["data"]
    assert refused["decision_id"] is None
    error = refused["error"]
    assert error["code"] == 42900
    assert error["data"]["class"] == "rate_limited"
    assert 1 <= error["data"]["retry_after_s"] <= 60
    assert (
        error["message"] == f"Too many tool calls: try again in {error['data']['retry_after_s']} s"
    )
    endpoint = (await rpc(client, deployed, "tools/call", call)).json()
    assert endpoint["error"]["code"] == 42900  # the same budget, spent
    assert len(await audit_events(database, action="tool.call")) == 1  # the endpoint's call


async def test_a_revoked_credential_gets_no_decision(
    client: httpx2.AsyncClient, database: Database, world: DirectDeployed
) -> None:
    """The sidecar holds a lease of the credential for up to five minutes; a revoked one was
    still allowed call after call until the lease ran out (a two-replica walk, stop 53), where
    a relayed call fails ``credential_unavailable`` at once."""
    await _decide(client, world)
    deployed = world.deployed
    credential = deployed.credentials["docs"]
    revoked = await client.delete(
        deployed.setup.url("credentials", credential), headers=deployed.setup.admin.headers
    )
    assert revoked.status_code == 204, revoked.text
    answer = await client.post(
        decisions_url(world),
        json={"wire_name": "docs__echo", "arguments": {"text": "hi"}},
        headers=deployed.agent.headers,
    )
    assert answer.status_code == 200, answer.text
    data = answer.json()["data"]
    assert data["decision_id"] is None
    assert data["result"]["isError"] is True
    assert data["result"]["_meta"]["io.mcphub/error"]["reason"] == "credential_unavailable"
    [row] = await audit_events(database, action="tool.call", outcome="failed")
    assert row.details["reason"] == "credential_unavailable"


async def _remove_the_use_grant(client: httpx2.AsyncClient, world: DirectDeployed) -> None:
    setup = world.setup
    listed = await client.get(
        setup.url("grants"),
        params={"principal_id": str(world.sidecar.principal_id)},
        headers=setup.admin.headers,
    )
    assert listed.status_code == 200, listed.text
    [use] = [g for g in listed.json()["data"] if g["action"] == "use"]
    gone = await client.delete(setup.url("grants", use["id"]), headers=setup.admin.headers)
    assert gone.status_code == 204, gone.text


async def _delete_the_sidecar(client: httpx2.AsyncClient, world: DirectDeployed) -> None:
    """A deleted principal stays, disabled."""
    setup = world.setup
    done = await client.delete(
        setup.url("principals", str(world.sidecar.principal_id)), headers=setup.admin.headers
    )
    assert done.status_code == 204, done.text


@pytest.mark.parametrize(
    "change",
    [_remove_the_use_grant, _delete_the_sidecar],
    ids=["use_grant_removed", "sidecar_deleted"],
)
async def test_a_sidecar_that_could_not_lease_now_gets_no_decision(
    client: httpx2.AsyncClient, database: Database, world: DirectDeployed, change: Any
) -> None:
    """The lease it already holds would have kept serving calls until it ran out: the decision
    now asks what the lease asks (stop 54)."""
    await _decide(client, world)
    await change(client, world)
    answer = await client.post(
        decisions_url(world),
        json={"wire_name": "docs__echo", "arguments": {"text": "hi"}},
        headers=world.deployed.agent.headers,
    )
    assert answer.status_code == 200, answer.text
    data = answer.json()["data"]
    assert data["decision_id"] is None
    assert data["result"]["_meta"]["io.mcphub/error"]["reason"] == "credential_unavailable"

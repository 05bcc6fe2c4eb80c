"""An agent has at most ``HUB_MAX_PENDING_APPROVALS`` live pending approvals (stop 44).

Each pending approval holds the call's arguments, encrypted, for as long as the table keeps it,
and asks a person to look at it. An agent that changed its arguments at every ``ask`` call made
a new one each time: at the ``tool_call`` limit (120 a minute) and 2 MiB of arguments, 240 MiB
a minute for approvers to wade through and the database to keep. Past the bound the call is
``rate_limited`` (JSON-RPC ``42900``, ``retry_after_s`` and ``Retry-After``: when the first of
the agent's pending approvals expires), and no approval is made.
"""

from __future__ import annotations

import httpx2
import pytest

from hub.core.db import Database
from tests.conftest import ClockControl
from tests.gateway.approvals_support import call, decide, deployed_with, pending_id
from tests.gateway.support import rpc
from tests.peers.fixtures import HandmadePeerStarter
from tests.support.stories import audit_events_written

BOUND = {"max_pending_approvals": 2, "approval_ttl_s": 600}


def _crowded(body: dict[str, object]) -> int:
    error = body["error"]
    assert isinstance(error, dict)
    assert error["code"] == 42900
    assert error["data"]["class"] == "rate_limited"
    assert "waiting for a person's approval" in error["message"]
    retry = error["data"]["retry_after_s"]
    assert isinstance(retry, int)
    return retry


@pytest.mark.parametrize("settings", [BOUND], indirect=True)
async def test_past_the_bound_an_ask_call_is_rate_limited_and_makes_no_approval(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, peer = await deployed_with(client, database, handmade_peer)
    first = pending_id(await call(client, deployed, "echo", "one"))
    pending_id(await call(client, deployed, "echo", "two"))
    response = await rpc(
        client,
        deployed,
        "tools/call",
        {"name": "up__echo", "arguments": {"text": "three"}},
    )
    assert response.status_code == 200
    retry = _crowded(response.json())
    assert 590 <= retry <= 600  # when the first pending one expires
    assert response.headers["retry-after"] == str(retry)
    # the same call as a pending one is no new approval: still answered with it
    assert pending_id(await call(client, deployed, "echo", "one")) == first
    listed = await client.get(
        deployed.setup.url("approvals"),
        params={"status": "pending"},
        headers=deployed.setup.admin.headers,
    )
    assert len(listed.json()["data"]) == 2
    assert peer.rpc_requests("tools/call") == []
    events = await audit_events_written(database, 4, action="tool.call")
    assert [e.details.get("class") for e in events].count("rate_limited") == 1
    # a decision makes room
    denied = await decide(client, deployed, first, "deny")
    assert denied.status_code == 200, denied.text
    pending_id(await call(client, deployed, "echo", "three"))


@pytest.mark.parametrize("settings", [BOUND], indirect=True)
async def test_expired_approvals_make_room(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    clock_control: ClockControl,
) -> None:
    deployed, _ = await deployed_with(client, database, handmade_peer)
    pending_id(await call(client, deployed, "echo", "one"))
    clock_control.advance(300)
    pending_id(await call(client, deployed, "echo", "two"))
    retry = _crowded(await call(client, deployed, "echo", "three"))
    assert 290 <= retry <= 300  # the first expires at 600 s, 300 s from now
    clock_control.advance(301)
    pending_id(await call(client, deployed, "echo", "three"))


@pytest.mark.parametrize("settings", [BOUND], indirect=True)
async def test_the_bound_is_the_agent_s_own(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, _ = await deployed_with(client, database, handmade_peer)
    other, _ = await deployed_with(client, database, handmade_peer)
    pending_id(await call(client, deployed, "echo", "one"))
    pending_id(await call(client, deployed, "echo", "two"))
    pending_id(await call(client, other, "echo", "one"))

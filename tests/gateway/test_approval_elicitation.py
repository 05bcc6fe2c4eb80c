"""The 2026 approval path through URL-mode elicitation (DESIGN §10.3, §15).

A 2026-07-28 client that declares ``elicitation.url`` gets, for an ``ask`` call left pending, an
``input_required`` result with a URL elicitation to the approval's page and a sealed
``requestState``; its retry with the state waits for the decision and runs the call once
approved, gets a fresh ``input_required`` while still pending and ``40300`` once denied. A first
call, a declined elicitation and a state that does not select this call are answered at once.
The official SDK client drives the whole round with its elicitation callback. The sealing
itself: ``tests/gateway/test_request_state.py``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import ElicitRequestURLParams, ElicitResult, ErrorData, TextContent

from hub.core.db import Database
from hub.core.settings import Settings
from tests.gateway.approvals_support import decide, deployed_with, pending_id
from tests.gateway.support import Deployed, rpc
from tests.peers.fixtures import HandmadePeerStarter
from tests.support.stories import audit_events_written

LONG_WAIT_S = 20  # HUB_APPROVAL_WAIT_S where a call must not wait: answered well before it
AT_ONCE_S = 10
URL_CAPABLE: dict[str, Any] = {
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}}
}
LONG_WAIT = pytest.mark.parametrize("settings", [{"approval_wait_s": LONG_WAIT_S}], indirect=True)


async def _call(
    client: httpx2.AsyncClient,
    deployed: Deployed,
    text: str,
    *,
    state: Any = None,
    action: str | None = None,
    capabilities: dict[str, Any] | None = None,
) -> dict[str, Any]:
    params: dict[str, Any] = {
        "name": "up__echo",
        "arguments": {"text": text},
        "_meta": {"io.modelcontextprotocol/clientCapabilities": capabilities}
        if capabilities is not None
        else URL_CAPABLE,
    }
    if state is not None:
        params["requestState"] = state
    if action is not None:
        params["inputResponses"] = {"approval": {"action": action}}
    response = await rpc(client, deployed, "tools/call", params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _asked(body: dict[str, Any], settings: Settings, deployed: Deployed) -> tuple[str, str]:
    """The approval id and the state of an ``input_required`` answer, checked whole."""
    result = body["result"]
    assert result["resultType"] == "input_required"
    assert set(result["inputRequests"]) == {"approval"}
    request = result["inputRequests"]["approval"]
    assert request["method"] == "elicitation/create"
    params = ElicitRequestURLParams.model_validate(request["params"])
    approval = result["_meta"]["io.mcphub/approval"]
    assert approval["status"] == "pending"
    tenant = deployed.setup.tenant_id
    page = f"{settings.public_base_url}/console/t/{tenant}/approvals/{approval['id']}"
    assert params.url == page == approval["url"]
    assert approval["id"] in params.message
    assert "up__echo" in params.message
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcp-hub"
    assert "content" not in result
    state = result["requestState"]
    assert isinstance(state, str)
    assert "echo" not in state
    return str(approval["id"]), state


@LONG_WAIT
async def test_a_url_capable_client_is_sent_to_the_approval_page_at_once(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    settings: Settings,
) -> None:
    deployed, peer = await deployed_with(client, database, handmade_peer)
    started = time.monotonic()
    body = await _call(client, deployed, "hello")
    assert time.monotonic() - started < AT_ONCE_S  # not after HUB_APPROVAL_WAIT_S
    approval, _ = _asked(body, settings, deployed)
    got = await client.get(
        deployed.setup.url("approvals", approval), headers=deployed.setup.admin.headers
    )
    assert got.json()["data"]["status"] == "pending"
    assert got.json()["data"]["arguments"] == {"text": "hello"}
    [row] = await audit_events_written(database, 1, action="tool.call")
    assert row.outcome == "pending"
    assert row.details["approval_id"] == approval
    assert peer.rpc_requests("tools/call") == []


@pytest.mark.parametrize(
    "capabilities",
    [{}, {"elicitation": {}}, {"elicitation": {"form": {}}}, {"elicitation": {"url": True}}],
)
async def test_a_client_that_cannot_open_a_page_gets_approval_pending(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    capabilities: dict[str, Any],
) -> None:
    deployed, _ = await deployed_with(client, database, handmade_peer)
    body = await _call(client, deployed, "hello", capabilities=capabilities)
    assert body["result"]["resultType"] == "complete"
    pending_id(body)


async def test_a_legacy_client_is_never_elicited(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, _ = await deployed_with(client, database, handmade_peer)
    params = {"name": "up__echo", "arguments": {"text": "x"}, "_meta": URL_CAPABLE}
    response = await rpc(client, deployed, "tools/call", params, era="2025-11-25")
    pending_id(response.json())


@LONG_WAIT
async def test_the_retry_waits_for_the_decision_and_runs_the_call_once(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    settings: Settings,
) -> None:
    deployed, peer = await deployed_with(client, database, handmade_peer)
    approval, state = _asked(await _call(client, deployed, "hello"), settings, deployed)
    retry = asyncio.create_task(_call(client, deployed, "hello", state=state, action="accept"))
    await asyncio.sleep(0.3)
    assert not retry.done()  # it waits for the decision
    assert (await decide(client, deployed, approval, "approve")).status_code == 200
    ran = (await retry)["result"]
    assert ran["resultType"] == "complete"
    assert ran.get("isError") is not True
    assert ran["structuredContent"] == {"text": "hello"}
    assert len(peer.rpc_requests("tools/call")) == 1
    started = time.monotonic()
    again = await _call(client, deployed, "hello", state=state, action="accept")
    assert time.monotonic() - started < AT_ONCE_S  # its approval is used: a new call's answer
    assert _asked(again, settings, deployed)[0] != approval
    assert len(peer.rpc_requests("tools/call")) == 1


@pytest.mark.parametrize("settings", [{"approval_wait_s": 0.5}], indirect=True)
async def test_a_retry_still_pending_gets_a_fresh_input_required(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    settings: Settings,
) -> None:
    deployed, peer = await deployed_with(client, database, handmade_peer)
    approval, state = _asked(await _call(client, deployed, "hello"), settings, deployed)
    again, fresh = _asked(
        await _call(client, deployed, "hello", state=state, action="accept"), settings, deployed
    )
    assert again == approval
    assert fresh != state  # sealed anew
    denied = await decide(client, deployed, approval, "deny")
    assert denied.status_code == 200
    for sent in (fresh, state, None):
        body = await _call(client, deployed, "hello", state=sent, action="accept")
        assert body["error"]["code"] == 40300
        assert body["error"]["data"] == {"class": "approval_denied", "approval_id": approval}
    assert peer.rpc_requests("tools/call") == []


@LONG_WAIT
async def test_a_declined_elicitation_is_answered_at_once_as_approval_pending(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    settings: Settings,
) -> None:
    deployed, _ = await deployed_with(client, database, handmade_peer)
    approval, state = _asked(await _call(client, deployed, "hello"), settings, deployed)
    for action in ("decline", "cancel"):
        started = time.monotonic()
        body = await _call(client, deployed, "hello", state=state, action=action)
        assert time.monotonic() - started < AT_ONCE_S
        assert body["result"]["resultType"] == "complete"
        assert pending_id(body) == approval


@LONG_WAIT
async def test_a_state_that_selects_another_call_is_not_waited_on(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    settings: Settings,
) -> None:
    """A tampered state, one of other arguments, another agent's, and text that is no state:
    each retry is a new call, answered at once with its own approval's page."""
    deployed, peer = await deployed_with(client, database, handmade_peer)
    first, state = _asked(await _call(client, deployed, "one"), settings, deployed)
    other, _ = await deployed_with(client, database, handmade_peer)
    _, foreign = _asked(await _call(client, other, "one"), settings, other)
    flipped = state[:-3] + ("A" if state[-3] != "A" else "B") + state[-2:]
    cases = [
        ("one", flipped, first),
        ("two", state, None),
        ("one", foreign, first),
        ("one", "v1.k1.AAAA.AAAA", first),
        ("one", {"approval": first}, first),
        ("one", "x" * 5000, first),
    ]
    for text, sent, expected in cases:
        started = time.monotonic()
        body = await _call(client, deployed, text, state=sent, action="accept")
        assert time.monotonic() - started < AT_ONCE_S, sent
        approval, _ = _asked(body, settings, deployed)
        if expected is None:
            assert approval != first
        else:
            assert approval == expected  # the identical call's pending approval, reused
    assert peer.rpc_requests("tools/call") == []


async def test_the_sdk_client_is_sent_to_the_page_and_its_call_runs(
    app: FastAPI,
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    settings: Settings,
) -> None:
    """The official SDK client with an elicitation callback: the person approves on the page
    the callback is given, the callback accepts, the SDK retries with the state, the call runs."""
    deployed, peer = await deployed_with(client, database, handmade_peer)
    pages: list[str] = []

    async def person(context: Any, params: Any) -> ElicitResult | ErrorData:
        assert isinstance(params, ElicitRequestURLParams)
        pages.append(params.url)
        approval = params.url.rsplit("/", 1)[1]
        assert (await decide(client, deployed, approval, "approve")).status_code == 200
        return ElicitResult(action="accept")

    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(
        transport=transport, base_url="http://hub.test", headers=deployed.headers, timeout=30
    ) as http:
        to_hub = streamable_http_client(f"http://hub.test{deployed.url}", http_client=http)
        async with Client(to_hub, mode="auto", cache=None, elicitation_callback=person) as mcp:
            result = await mcp.call_tool("up__echo", {"text": "through the page"})
    assert result.is_error is not True
    assert isinstance(result.content[0], TextContent)
    assert "through the page" in result.content[0].text
    assert len(pages) == 1
    assert len(peer.rpc_requests("tools/call")) == 1

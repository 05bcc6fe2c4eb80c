"""An ``ask`` call's approval page, shown to the agent's person through the sidecar.

``hub sidecar`` in relay mode, spawned by the official SDK client with an elicitation callback
(the client declares URL-mode elicitation), against a live ``hub serve`` with
``HUB_APPROVAL_WAIT_S=0``:

- a 2025-11-25 client gets an ``elicitation/create`` request (URL mode) on its session, sent by
  the sidecar, and the call runs once when the person approved on that page;
- a 2026-07-28 client gets the hub's ``input_required`` round passed through, which the SDK's own
  driver answers, and the call runs once;
- a person who declines, or who accepts while the approval is still pending, is sent to the
  page once, and the call is the ``approval_pending`` result; a repeat once approved runs it.

- direct mode: the decision route carries the round, and the sidecar calls the server itself
  once the call is approved on the page.

The upstream is a hand-made peer that counts its ``tools/call`` requests (an SDK peer for
direct mode, where the lease's audit row shows who called).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitRequestURLParams, ElicitResult, ErrorData, TextContent

from hub.core.db import Database
from hub.sidecar.asking import bounded
from tests.gateway.approvals_support import DROP, ECHO, SECRET
from tests.gateway.support import Deployed, Upstream
from tests.peers.fixtures import HandmadePeerStarter, SdkPeerStarter
from tests.peers.handmade import HandmadePeer
from tests.sidecar.direct import DirectDeployed, deploy_direct
from tests.sidecar.support import (
    CANARY,
    LiveHub,
    Sidecar,
    deploy_on,
    live_hub,
    stdio_sidecar,
)
from tests.support.stories import audit_events

ERAS = pytest.mark.parametrize("mode", ["legacy", "auto"])
Person = Callable[[Any, Any], Awaitable[ElicitResult | ErrorData]]


async def _deployed(
    hub: LiveHub, handmade_peer: HandmadePeerStarter
) -> tuple[Deployed, HandmadePeer]:
    peer = await handmade_peer(era="modern", tools=[ECHO, DROP])
    upstream = Upstream("up", peer.url, secret=SECRET, allow_without_ask=[])
    return await deploy_on(hub, [upstream]), peer


async def _decide(hub: LiveHub, deployed: Deployed, approval: str, decision: str) -> None:
    async with httpx2.AsyncClient(base_url=hub.url, timeout=30) as http:
        decided = await http.post(
            deployed.setup.url("approvals", approval, "decision"),
            json={"decision": decision},
            headers=deployed.setup.admin.headers,
        )
    assert decided.status_code == 200, decided.text


async def _status(hub: LiveHub, deployed: Deployed, approval: str) -> str:
    async with httpx2.AsyncClient(base_url=hub.url, timeout=30) as http:
        got = await http.get(
            deployed.setup.url("approvals", approval), headers=deployed.setup.admin.headers
        )
    assert got.status_code == 200, got.text
    return str(got.json()["data"]["status"])


def _page_of(params: Any, deployed: Deployed) -> str:
    """The approval id of the page the person is sent to, the page checked."""
    assert isinstance(params, ElicitRequestURLParams)
    tenant = deployed.setup.tenant_id
    approval = params.url.rsplit("/", 1)[1]
    assert params.url.endswith(f"/console/t/{tenant}/approvals/{approval}")
    assert approval in params.message
    assert "up__echo" in params.message
    assert "through the page" not in params.message  # never the arguments
    return approval


@ERAS
async def test_the_person_approves_on_the_page_and_the_call_runs_once(
    tmp_path: Path, handmade_peer: HandmadePeerStarter, mode: str
) -> None:
    with live_hub(tmp_path) as hub:
        deployed, peer = await _deployed(hub, handmade_peer)
        pages: list[str] = []

        async def person(context: Any, params: Any) -> ElicitResult | ErrorData:
            approval = _page_of(params, deployed)
            pages.append(approval)
            assert await _status(hub, deployed, approval) == "pending"
            await _decide(hub, deployed, approval, "approve")
            return ElicitResult(action="accept")

        sidecar = Sidecar(hub, deployed, tmp_path)
        async with stdio_sidecar(sidecar, mode=mode, elicitation_callback=person) as mcp:
            result = await mcp.call_tool("up__echo", {"text": "through the page"})
            assert mcp.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        assert result.is_error is not True, result
        assert isinstance(result.content[0], TextContent)
        assert "through the page" in result.content[0].text
        assert len(pages) == 1
        assert len(peer.rpc_requests("tools/call")) == 1
        assert await _status(hub, deployed, pages[0]) == "used"


@pytest.mark.parametrize(
    ("mode", "answer"), [("legacy", "decline"), ("auto", "decline"), ("legacy", "accept")]
)
async def test_a_person_who_does_not_approve_is_asked_once_and_the_call_is_pending(
    tmp_path: Path, handmade_peer: HandmadePeerStarter, mode: str, answer: str
) -> None:
    """Declined (either era), or accepted with nobody deciding (the hub does not wait: its wait
    is 0) on a session the sidecar drives: the page is shown once, the call is
    ``approval_pending`` and did not run. Approved later, the same call repeated runs, and the
    person is not asked again."""
    with live_hub(tmp_path) as hub:
        deployed, peer = await _deployed(hub, handmade_peer)
        pages: list[str] = []

        async def person(context: Any, params: Any) -> ElicitResult | ErrorData:
            pages.append(_page_of(params, deployed))
            return ElicitResult(action=answer)  # type: ignore[arg-type]

        sidecar = Sidecar(hub, deployed, tmp_path)
        async with stdio_sidecar(sidecar, mode=mode, elicitation_callback=person) as mcp:
            pending = await mcp.call_tool("up__echo", {"text": "through the page"})
            assert pending.is_error is True
            marker = (pending.meta or {})["io.mcphub/error"]
            assert marker["class"] == "approval_pending"
            approval = (pending.meta or {})["io.mcphub/approval"]
            assert pages == [approval["id"]]
            assert peer.rpc_requests("tools/call") == []
            assert await _status(hub, deployed, approval["id"]) == "pending"
            await _decide(hub, deployed, approval["id"], "approve")
            again = await mcp.call_tool("up__echo", {"text": "through the page"})
        assert again.is_error is not True, again
        assert pages == [approval["id"]]  # an approved call shows no page
        assert len(peer.rpc_requests("tools/call")) == 1


async def test_a_2026_client_is_sent_to_the_page_again_while_it_is_pending(
    tmp_path: Path, handmade_peer: HandmadePeerStarter
) -> None:
    """A 2026-07-28 client drives the rounds itself: accepted while still pending, the hub
    answers with a fresh round for the same approval (DESIGN §15), and the person's approval on
    the second showing runs the call once."""
    with live_hub(tmp_path) as hub:
        deployed, peer = await _deployed(hub, handmade_peer)
        pages: list[str] = []

        async def person(context: Any, params: Any) -> ElicitResult | ErrorData:
            pages.append(_page_of(params, deployed))
            if len(pages) == 2:
                await _decide(hub, deployed, pages[-1], "approve")
            return ElicitResult(action="accept")

        sidecar = Sidecar(hub, deployed, tmp_path)
        async with stdio_sidecar(sidecar, mode="auto", elicitation_callback=person) as mcp:
            result = await mcp.call_tool("up__echo", {"text": "through the page"})
        assert result.is_error is not True, result
        assert len(pages) == 2
        assert pages[0] == pages[1]
        assert len(peer.rpc_requests("tools/call")) == 1


@ERAS
async def test_a_denied_call_is_refused_after_the_page(
    tmp_path: Path, handmade_peer: HandmadePeerStarter, mode: str
) -> None:
    with live_hub(tmp_path) as hub:
        deployed, peer = await _deployed(hub, handmade_peer)

        async def person(context: Any, params: Any) -> ElicitResult | ErrorData:
            await _decide(hub, deployed, _page_of(params, deployed), "deny")
            return ElicitResult(action="accept")

        sidecar = Sidecar(hub, deployed, tmp_path)
        async with stdio_sidecar(sidecar, mode=mode, elicitation_callback=person) as mcp:
            with pytest.raises(MCPError) as refused:
                await mcp.call_tool("up__echo", {"text": "through the page"})
        error = refused.value.error
        assert error.code == 40300
        assert error.data["class"] == "approval_denied"
        assert peer.rpc_requests("tools/call") == []


@ERAS
async def test_a_client_that_cannot_be_sent_to_a_page_gets_the_pending_result(
    tmp_path: Path, handmade_peer: HandmadePeerStarter, mode: str
) -> None:
    with live_hub(tmp_path) as hub:
        deployed, peer = await _deployed(hub, handmade_peer)
        sidecar = Sidecar(hub, deployed, tmp_path)
        async with stdio_sidecar(sidecar, mode=mode) as mcp:
            pending = await mcp.call_tool("up__echo", {"text": "no page"})
        assert pending.is_error is True
        assert (pending.meta or {})["io.mcphub/error"]["class"] == "approval_pending"
        assert peer.rpc_requests("tools/call") == []


async def test_a_person_who_never_answers_is_a_cancel() -> None:
    """The prompt is bounded: no answer in time (or a client that fails it) counts as cancel."""
    never = anyio.Event()

    async def unanswered() -> ElicitResult:
        await never.wait()
        raise AssertionError("unreachable")

    async def failing() -> ElicitResult:
        raise RuntimeError("the client has no such capability")

    async def accepting() -> ElicitResult:
        return ElicitResult(action="accept")

    with anyio.fail_after(5):
        assert await bounded(unanswered(), 0.2) == "cancel"
    assert await bounded(failing(), 5) == "cancel"
    assert await bounded(accepting(), 5) == "accept"


async def _direct_on(hub: LiveHub, peer_url: str) -> DirectDeployed:
    db = Database.from_url(hub.db_url)
    try:
        async with httpx2.AsyncClient(base_url=hub.url, timeout=30) as http:
            upstream = Upstream("docs", peer_url, secret=CANARY, allow_without_ask=["echo"])
            return await deploy_direct(http, db, [upstream], {"docs"})
    finally:
        await db.dispose()


@ERAS
@pytest.mark.parametrize("answer", ["approve", "decline"])
async def test_direct_mode_shows_the_page_too(
    tmp_path: Path, sdk_peer: SdkPeerStarter, mode: str, answer: str
) -> None:
    """Direct mode: the decision route takes the round (``url_elicitation``) and answers a
    pending call with the hub's ``input_required``; approved on the page, the sidecar leases the
    credential and calls the server itself, once. Declined: ``approval_pending``, nothing ran."""
    peer = await sdk_peer("stateless-json")
    with live_hub(tmp_path) as hub:
        world = await _direct_on(hub, peer.url)
        deployed = world.deployed
        pages: list[str] = []

        async def person(context: Any, params: Any) -> ElicitResult | ErrorData:
            assert isinstance(params, ElicitRequestURLParams)
            approval = params.url.rsplit("/", 1)[1]
            assert "docs__add" in params.message
            pages.append(approval)
            if answer == "approve":
                await _decide(hub, deployed, approval, "approve")
                return ElicitResult(action="accept")
            return ElicitResult(action="decline")

        sidecar = Sidecar(
            hub, deployed, tmp_path, ("--mode", "direct"), sidecar_key=world.sidecar.key
        )
        async with stdio_sidecar(sidecar, mode=mode, elicitation_callback=person) as mcp:
            result = await mcp.call_tool("docs__add", {"a": 1, "b": 2})
        db = Database.from_url(hub.db_url)
        try:
            leases = await audit_events(db, action="credential.lease", outcome="success")
            calls = await audit_events(db, action="tool.call")
        finally:
            await db.dispose()
    assert len(pages) == 1
    if answer == "approve":
        assert result.is_error is not True, result
        assert isinstance(result.content[0], TextContent)
        assert json.loads(result.content[0].text) == {"a": 1, "b": 2}
        assert len(leases) == 1  # the sidecar called the server itself
        assert sorted(r.outcome for r in calls) == ["pending", "success"]
    else:
        assert result.is_error is True
        assert (result.meta or {})["io.mcphub/error"]["class"] == "approval_pending"
        assert (result.meta or {})["io.mcphub/approval"]["id"] == pages[0]
        assert leases == []

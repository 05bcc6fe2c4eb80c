"""Direct mode end to end, and one parametrised test over the engine's hosts — the hub's
endpoint, the sidecar in direct mode and the sidecar in relay mode — giving the same deny, ask
and allow outcomes, and the same audit rows."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from hub.core.db import Database
from tests.gateway.support import Upstream
from tests.peers.fixtures import HandmadePeerStarter, SdkPeerStarter
from tests.sidecar.direct import DirectDeployed, deploy_direct, grant
from tests.sidecar.support import CANARY, LiveHub, Sidecar, live_hub, stdio_sidecar
from tests.support.stories import audit_events, audit_events_written


async def _direct_on(hub: LiveHub, peer_url: str) -> DirectDeployed:
    db = Database.from_url(hub.db_url)
    try:
        async with httpx2.AsyncClient(base_url=hub.url, timeout=30) as http:
            world = await deploy_direct(
                http,
                db,
                [Upstream("docs", peer_url, secret=CANARY, allow_without_ask=["echo", "fail"])],
                {"docs"},
            )
            await grant(
                http, world.deployed, world.deployed.agent, "tool:docs.fail", "call", "deny"
            )
            return world
    finally:
        await db.dispose()


@contextlib.asynccontextmanager
async def _host(
    name: str, hub: LiveHub, world: DirectDeployed, workdir: Path
) -> AsyncIterator[Client]:
    if name == "hub":
        url = f"{hub.url}{world.deployed.url}"
        async with (
            httpx2.AsyncClient(headers=world.deployed.headers, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http), cache=None) as mcp,
        ):
            yield mcp
        return
    mode = "relay" if name == "relay" else "direct"
    sidecar = Sidecar(
        hub,
        world.deployed,
        workdir,
        ("--mode", mode, "--log-level", "DEBUG"),
        sidecar_key=world.sidecar.key,
    )
    async with stdio_sidecar(sidecar) as mcp:
        yield mcp


async def _approve(hub: LiveHub, world: DirectDeployed, approval_id: str) -> None:
    async with httpx2.AsyncClient(base_url=hub.url, timeout=30) as http:
        decided = await http.post(
            world.setup.url("approvals", approval_id, "decision"),
            json={"decision": "approve"},
            headers=world.setup.admin.headers,
        )
        assert decided.status_code == 200, decided.text


async def _outcomes(mcp: Client, hub: LiveHub, world: DirectDeployed) -> list[Any]:
    seen: list[Any] = []
    names = sorted(t.name for t in (await mcp.list_tools()).tools)
    seen.append(("listed", names))
    try:
        await mcp.call_tool("docs__fail", {})
        seen.append(("deny", "ran"))
    except MCPError as error:
        data = error.error.data or {}
        seen.append(("deny", error.error.code, data.get("class")))
    invalid = await mcp.call_tool("docs__add", {"a": "one", "b": 2})
    seen.append(("invalid", invalid.is_error, (invalid.meta or {})["io.mcphub/error"]["class"]))
    pending = await mcp.call_tool("docs__add", {"a": 1, "b": 2})
    approval = (pending.meta or {})["io.mcphub/approval"]
    seen.append(("ask", pending.is_error, (pending.meta or {})["io.mcphub/error"]["class"]))
    await _approve(hub, world, approval["id"])
    approved = await mcp.call_tool("docs__add", {"a": 1, "b": 2})
    seen.append(("approved", approved.is_error, json.loads(approved.content[0].text)))  # type: ignore[union-attr]
    allowed = await mcp.call_tool("docs__echo", {"text": "same"})
    seen.append(("allow", allowed.is_error, json.loads(allowed.content[0].text)))  # type: ignore[union-attr]
    return seen


EXPECTED = [
    ("listed", ["docs__add", "docs__delete_record", "docs__echo", "docs__search_region"]),
    ("deny", 40300, "forbidden"),
    ("invalid", True, "invalid_arguments"),
    ("ask", True, "approval_pending"),
    ("approved", False, {"a": 1, "b": 2}),
    ("allow", False, {"text": "same"}),
]


@pytest.mark.parametrize("host", ["hub", "sidecar", "relay"])
async def test_every_host_gives_the_same_deny_ask_and_allow_outcomes(
    tmp_path: Path, sdk_peer: SdkPeerStarter, host: str
) -> None:
    peer = await sdk_peer("stateless-json")
    with live_hub(tmp_path) as hub:
        world = await _direct_on(hub, peer.url)
        async with _host(host, hub, world, tmp_path) as mcp:
            assert await _outcomes(mcp, hub, world) == EXPECTED
        db = Database.from_url(hub.db_url)
        try:
            calls = await audit_events_written(db, len(EXPECTED) - 1, action="tool.call")
            leases = await audit_events(db, action="credential.lease", outcome="success")
        finally:
            await db.dispose()
    # one audit row per call, whichever host ran it
    assert [r.outcome for r in calls] == ["denied", "failed", "pending", "success", "success"]
    if host == "sidecar":
        assert len(leases) == 1  # the sidecar called the server itself, with a leased secret
        assert leases[0].actor_id == world.sidecar.principal_id
        log = (tmp_path / "sidecar.stderr").read_text()
        assert "DEBUG" in log.upper()
        assert CANARY not in log
        assert not list((tmp_path / "cache").glob("*")) or all(
            CANARY not in p.read_text() for p in (tmp_path / "cache").iterdir()
        )
    else:
        assert leases == []


async def _deploy_docs(hub: LiveHub, upstream: Upstream) -> DirectDeployed:
    """The deployment of ``upstream`` (handle ``docs``) in direct mode."""
    db = Database.from_url(hub.db_url)
    try:
        async with httpx2.AsyncClient(base_url=hub.url, timeout=30) as http:
            return await deploy_direct(http, db, [upstream], {"docs"})
    finally:
        await db.dispose()


async def test_direct_mode_keeps_a_handshake_upstreams_session_between_calls(
    tmp_path: Path, handmade_peer: HandmadePeerStarter
) -> None:
    echo = {"name": "echo", "inputSchema": {"type": "object"}}
    peer = await handmade_peer(era="legacy", tools=[echo])
    with live_hub(tmp_path) as hub:
        world = await _deploy_docs(hub, Upstream("docs", peer.url, secret=CANARY))
        seen = len(peer.requests)  # the hub's discovery, its session deleted
        async with _host("sidecar", hub, world, tmp_path) as mcp:
            for n in range(3):
                done = await mcp.call_tool("docs__echo", {"n": n})
                assert not done.is_error, done
    methods = [r.rpc_method or r.http_method for r in peer.requests[seen:]]
    # the bundle names the era the hub found (no probe), then one session for all three calls
    opening = ["initialize", "notifications/initialized"]
    assert methods == [*opening, *["tools/call"] * 3]
    assert len({r.headers["mcp-session-id"] for r in peer.requests[seen:][1:]}) == 1
    assert {r.headers["authorization"] for r in peer.requests[seen:]} == {f"Bearer {CANARY}"}


@pytest.mark.parametrize("host", ["hub", "sidecar"])
async def test_the_agent_is_told_its_own_servers_name_not_the_upstreams(
    tmp_path: Path, handmade_peer: HandmadePeerStarter, host: str
) -> None:
    """A 2026-07-28 upstream names itself in each result's ``_meta`` serverInfo; the agent's
    server is the hub's endpoint or the sidecar, and a result passed on verbatim must not say
    otherwise (the sidecar in direct mode once forwarded the upstream's name)."""
    echo = {"name": "echo", "inputSchema": {"type": "object"}}
    peer = await handmade_peer(era="modern", tools=[echo])
    with live_hub(tmp_path) as hub:
        upstream = Upstream("docs", peer.url, secret=CANARY, allow_without_ask=["echo"])
        world = await _deploy_docs(hub, upstream)
        async with _host(host, hub, world, tmp_path) as mcp:
            done = await mcp.call_tool("docs__echo", {"n": 1})
    assert not done.is_error, done
    assert peer.count("tools/call") == 1
    named = (done.meta or {}).get("io.modelcontextprotocol/serverInfo")
    assert named is None or named["name"] == {"hub": "mcp-hub", "sidecar": "mcp-hub-sidecar"}[host]

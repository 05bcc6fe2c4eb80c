"""Direct mode's one refresh and one retry on an upstream 401 (DESIGN §9, §10.5).

The sidecar names the refused secret by its fingerprint when it asks for a new lease; the hub
renews an OAuth token that is still the credential's current one, and leases the current token
without renewing anything for a fingerprint of an older one. End to end, in process: the sidecar's
direct-mode calls (``DirectCalls``, talking to the hub's app through its ASGI transport) reach a
protected peer whose tokens were revoked, and the call succeeds after one refresh.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from hub.sidecar.bundle import Bundle, parse_bundle
from hub.sidecar.config import SidecarConfig
from hub.sidecar.direct import DirectCalls
from hub.sidecar.hubclient import HubClient
from tests.oauth.conftest import Hub, OAuthPeersStarter
from tests.peers.oauth_server import Grant
from tests.support.stories import audit_events

STATIC_KEY = "a-static-api-key-0123456789abcdef"
ECHO = {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {}}}}


@dataclass
class Direct:
    credential_id: str
    deployment_id: str
    agent_key: str
    sidecar_key: str
    sidecar_headers: dict[str, str]


async def _ok(response: httpx2.Response, status: int = 201) -> Any:
    assert response.status_code == status, response.text
    return response.json()["data"]


async def _principal(hub: Hub, kind: str) -> tuple[str, str]:
    row = await _ok(
        await hub.client.post(
            hub.owner.url("principals"), json={"kind": kind, "name": kind}, headers=hub.headers
        )
    )
    key = await _ok(
        await hub.client.post(
            hub.owner.url("principals", row["id"], "keys"), json={}, headers=hub.headers
        )
    )
    return str(row["id"]), str(key["key"])


async def _grant(hub: Hub, principal: str, resource: str, action: str) -> None:
    body = {"principal_id": principal, "resource": resource, "action": action, "effect": "allow"}
    await _ok(await hub.client.post(hub.owner.url("grants"), json=body, headers=hub.headers))


async def _direct(hub: Hub, credential_id: str) -> Direct:
    """A deployment of ``linear`` in direct mode, its agent and its sidecar principal."""
    catalog = await _ok(await hub.snapshot("linear"))
    agent, agent_key = await _principal(hub, "agent")
    sidecar, sidecar_key = await _principal(hub, "service")
    await _grant(hub, agent, "tool:linear.*", "call")
    await _grant(hub, sidecar, f"credential:{credential_id}", "use")
    entry = {
        "server": "linear",
        "catalog_version": catalog["version"],
        "allow_without_ask": ["echo"],
    }
    made = await _ok(
        await hub.client.post(
            hub.owner.url("deployments"),
            json={"agent_id": agent, "entries": [entry]},
            headers=hub.headers,
        )
    )
    await _ok(
        await hub.client.patch(
            hub.owner.url("deployments", made["id"]),
            json={"sidecar_id": sidecar, "entries": [{**entry, "mode": "direct"}]},
            headers=hub.headers,
        ),
        200,
    )
    return Direct(credential_id, made["id"], agent_key, sidecar_key, {"x-api-key": sidecar_key})


async def _lease(hub: Hub, world: Direct, refused: str | None = None) -> httpx2.Response:
    body: dict[str, Any] = {"deployment_id": world.deployment_id}
    if refused is not None:
        body["refused_fingerprint"] = refused
    return await hub.client.post(
        hub.owner.url("credentials", world.credential_id, "lease"),
        json=body,
        headers=world.sidecar_headers,
    )


async def test_a_refused_fingerprint_renews_the_current_token_once(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers(tools=[ECHO])
    world = await _direct(hub, await hub.connected(peers))
    first = await _ok(await _lease(hub, world), 200)
    assert first["renewable"] is True
    peers.auth.tokens.clear()  # revoked upstream while the hub still thinks it is valid
    renewed = await _ok(await _lease(hub, world, first["fingerprint"]), 200)
    assert len(peers.auth.token_requests("refresh_token")) == 1
    assert renewed["fingerprint"] != first["fingerprint"]
    assert renewed["secret"] in peers.auth.tokens
    # an older token's fingerprint (another call renewed it already): the current one, as is
    again = await _ok(await _lease(hub, world, first["fingerprint"]), 200)
    assert again["fingerprint"] == renewed["fingerprint"]
    assert len(peers.auth.token_requests("refresh_token")) == 1
    leases = await audit_events(hub.db, action="credential.lease")
    assert [row.details.get("renewed") for row in leases] == [None, True, None]
    for bad in ("", "ABCDEF0123456789", "0" * 17, "not a fingerprint"):
        refused = await _lease(hub, world, bad)
        assert refused.status_code == 400, (bad, refused.text)


async def _bundle(hub: Hub, world: Direct) -> Bundle:
    path = hub.owner.url("deployments", world.deployment_id, "bundle")
    got = await hub.client.get(path, headers={"authorization": f"Bearer {world.agent_key}"})
    assert got.status_code == 200, got.text
    return parse_bundle(got.content, got.headers.get("etag"))


def _calls(hub: Hub, world: Direct, tmp_path: Path) -> tuple[DirectCalls, HubClient, HubClient]:
    """The sidecar's direct-mode calls, reaching the in-process hub through its ASGI app."""
    config = SidecarConfig.checked(
        hub="http://127.0.0.1:9",  # loopback, as --hub must be for http; reached in process
        tenant=str(hub.owner.tenant_id),
        deployment=world.deployment_id,
        agent_key=world.agent_key,
        mode="direct",
        sidecar_key=world.sidecar_key,
        cache_dir=tmp_path,
    )
    transport = httpx2.ASGITransport(app=hub.app)
    agent = HubClient(config, transport=transport)
    sidecar = HubClient(config, key=world.sidecar_key, transport=transport)
    return DirectCalls(config, agent, sidecar), agent, sidecar


async def test_a_direct_call_refused_401_is_renewed_and_retried_once(
    hub: Hub, oauth_peers: OAuthPeersStarter, tmp_path: Path
) -> None:
    peers = await oauth_peers(tools=[ECHO])
    world = await _direct(hub, await hub.connected(peers))
    calls, agent, sidecar = _calls(hub, world, tmp_path)
    bundle = await _bundle(hub, world)
    tool = bundle.view.tools["linear__echo"]
    try:
        first = await calls.call(bundle, tool, "linear__echo", {"text": "one"})
        assert first.get("isError") is not True, first
        peers.auth.tokens.clear()  # revoked upstream: the leased token is now refused
        second = await calls.call(bundle, tool, "linear__echo", {"text": "two"})
        assert second.get("isError") is not True, second
        assert len(peers.auth.token_requests("refresh_token")) == 1
        calls_seen = peers.peer.rpc_requests("tools/call")
        assert len(calls_seen) == 3  # one, two refused, two again with the renewed token
        peers.auth.tokens.clear()
        peers.auth.knobs.refresh_error = "invalid_grant"  # no renewal to be had now
        failed = await calls.call(bundle, tool, "linear__echo", {"text": "three"})
        assert failed["isError"] is True
        assert failed["_meta"]["io.mcphub/error"]["reason"] == "unauthorized"
        assert len(peers.peer.rpc_requests("tools/call")) == 4  # refused, and not retried
    finally:
        await calls.aclose()
        await agent.aclose()
        await sidecar.aclose()


async def test_a_static_key_refused_401_is_neither_leased_again_nor_retried(
    hub: Hub, oauth_peers: OAuthPeersStarter, tmp_path: Path
) -> None:
    """An API key cannot be renewed: its 401 is the call's answer, with no second lease."""
    peers = await oauth_peers(tools=[ECHO])
    credential = await _ok(
        await hub.client.post(
            hub.owner.url("credentials"),
            json={
                "name": "static",
                "type": "api_key",
                "secret": STATIC_KEY,
                "api_base_url": peers.peer.url.rsplit("/", 1)[0],
            },
            headers=hub.headers,
        )
    )
    # the key works for the snapshot, then the upstream stops taking it
    peers.auth.tokens[STATIC_KEY] = Grant((), time.time() + 3600, None, "static")
    server = {"handle": "linear", "url": peers.peer.url, "credential_id": credential["id"]}
    await _ok(await hub.client.post(hub.owner.url("servers"), json=server, headers=hub.headers))
    world = await _direct(hub, str(credential["id"]))
    del peers.auth.tokens[STATIC_KEY]
    calls, agent, sidecar = _calls(hub, world, tmp_path)
    bundle = await _bundle(hub, world)
    tool = bundle.view.tools["linear__echo"]
    try:
        for text in ("one", "two"):
            failed = await calls.call(bundle, tool, "linear__echo", {"text": text})
            assert failed["_meta"]["io.mcphub/error"]["reason"] == "unauthorized"
    finally:
        await calls.aclose()
        await agent.aclose()
        await sidecar.aclose()
    assert len(peers.peer.rpc_requests("tools/call")) == 2  # once each, not retried
    assert len(await audit_events(hub.db, action="credential.lease")) == 1


async def _challenge(
    hub: Hub, world: Direct, fingerprint: str, scopes: Any, key: str | None = None
) -> httpx2.Response:
    return await hub.client.post(
        hub.owner.url("credentials", world.credential_id, "challenges"),
        json={"deployment_id": world.deployment_id, "fingerprint": fingerprint, "scopes": scopes},
        headers={"x-api-key": key or world.sidecar_key},
    )


async def test_a_direct_call_refused_insufficient_scope_records_the_scopes_for_a_step_up(
    hub: Hub, oauth_peers: OAuthPeersStarter, tmp_path: Path
) -> None:
    """As on the hub's own calls (DESIGN §9): the sidecar reports the challenge, the credential
    records the union, the call fails ``insufficient_scope``; after a step-up the next direct
    call leases the new token and runs."""
    peers = await oauth_peers(
        guard={"required_scopes": ["mcp:basic"], "call_scopes": ["mcp:write"]}, tools=[ECHO]
    )
    world = await _direct(hub, await hub.connected(peers))
    calls, agent, sidecar = _calls(hub, world, tmp_path)
    bundle = await _bundle(hub, world)
    tool = bundle.view.tools["linear__echo"]
    try:
        refused = await calls.call(bundle, tool, "linear__echo", {"text": "one"})
        assert refused["isError"] is True
        assert refused["_meta"]["io.mcphub/error"]["reason"] == "insufficient_scope"
        credential = await hub.credential(world.credential_id)
        assert credential["oauth"]["scopes"] == ["mcp:basic", "mcp:write"]
        [row] = await audit_events(hub.db, action="credential.insufficient_scope")
        assert row.details["challenged"] == ["mcp:basic", "mcp:write"]  # what the 403 named
        assert len(peers.auth.token_requests("refresh_token")) == 0  # a 403 renews nothing
        step_up = await hub.connect({"credential_id": world.credential_id})
        assert step_up.credential_id == world.credential_id
        assert peers.auth.requests("/authorize")[1].form["scope"] == "mcp:basic mcp:write"
        ran = await calls.call(bundle, tool, "linear__echo", {"text": "two"})
        assert ran.get("isError") is not True, ran
    finally:
        await calls.aclose()
        await agent.aclose()
        await sidecar.aclose()
    assert len(peers.peer.rpc_requests("tools/call")) == 2  # refused once, then run
    assert len(await audit_events(hub.db, action="credential.lease")) == 2


async def test_a_reported_challenge_is_recorded_only_for_the_current_token(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers(tools=[ECHO])
    world = await _direct(hub, await hub.connected(peers))
    lease = await _ok(await _lease(hub, world), 200)
    stale = await _ok(await _challenge(hub, world, "0123456789abcdef", ["admin"]), 200)
    assert stale == {"recorded": False}
    assert await audit_events(hub.db, action="credential.insufficient_scope") == []
    current = await _ok(await _challenge(hub, world, lease["fingerprint"], ["mcp:write"]), 200)
    assert current == {"recorded": True}
    assert (await hub.credential(world.credential_id))["oauth"]["scopes"][-1] == "mcp:write"
    # scope tokens only (RFC 6749 §3.3), at least one, at most 64; a fingerprint's shape
    for fingerprint, scopes in [
        (lease["fingerprint"], []),
        (lease["fingerprint"], ['with"quote']),
        (lease["fingerprint"], ["two words"]),
        (lease["fingerprint"], [f"s{i}" for i in range(65)]),
        ("not-a-fingerprint", ["mcp:write"]),
    ]:
        bad = await _challenge(hub, world, fingerprint, scopes)
        assert bad.status_code == 400, (scopes, bad.text)
    # only the deployment's sidecar: the agent's key is refused, and nothing recorded
    agents = await _challenge(hub, world, lease["fingerprint"], ["more"], key=world.agent_key)
    assert agents.status_code == 403, agents.text
    assert agents.json()["error"]["reason"] == "not_sidecar"
    assert "more" not in (await hub.credential(world.credential_id))["oauth"]["scopes"]

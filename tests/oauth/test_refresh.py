"""Tokens stay fresh: refresh on use (single-flight), rotation, ``invalid_grant``, a 401's one
refresh and retry, ``insufficient_scope`` and step-up, the worker ahead of expiry."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import httpx2
import pytest
from sqlalchemy import update

from hub.app import create_app
from hub.core import clock
from hub.core.components import components_of
from hub.core.crypto import Keyring
from hub.core.db import Database
from hub.credentials.vault import decrypt_field
from hub.models import Credential
from hub.oauth.context import OAuthContext
from hub.oauth.worker import refresh_pass
from hub.upstream import InsufficientScope, UpstreamContext, call_tool, resolve_target
from tests.conftest import make_settings
from tests.oauth.conftest import Hub, OAuthPeers, OAuthPeersStarter
from tests.support.databases import owner_session
from tests.support.factories import scope_of
from tests.support.stories import audit_events, make_tenant_admin


async def _row(hub: Hub, credential_id: str) -> Credential:
    async with owner_session(hub.db, write=False) as session:
        row = await session.get(Credential, uuid.UUID(credential_id))
    assert row is not None
    return row


async def _expire(hub: Hub, peers: OAuthPeers, credential_id: str) -> None:
    """The access token has expired, at the authorization server and in the hub."""
    peers.auth.expire_all()
    async with owner_session(hub.db) as session:
        await session.execute(
            update(Credential)
            .where(Credential.id == uuid.UUID(credential_id))
            .values(expires_at=clock.now() - timedelta(seconds=1))
        )


def _keyring(hub: Hub) -> Keyring:
    return components_of(hub.app).get(Keyring)


async def test_an_expired_token_is_refreshed_once_and_the_rotated_token_stored(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    credential_id = await hub.connected(peers)
    before = await _row(hub, credential_id)
    first_refresh = decrypt_field(_keyring(hub), before, "refresh_token")
    await _expire(hub, peers, credential_id)
    snapshot = await hub.snapshot("linear")
    assert snapshot.status_code == 201, snapshot.text
    assert len(peers.auth.token_requests("refresh_token")) == 1
    after = await _row(hub, credential_id)
    rotated = decrypt_field(_keyring(hub), after, "refresh_token")
    assert rotated != first_refresh
    assert rotated in peers.auth.refresh_tokens
    assert first_refresh in peers.auth.used_refresh_tokens
    assert after.version == before.version  # a refresh is not a client's change
    assert after.expires_at is not None
    assert after.expires_at > clock.now()
    assert after.refresh_lease_holder is None
    sent = peers.auth.token_requests("refresh_token")[0].form
    assert sent["resource"] == peers.peer.url  # RFC 8707 on the refresh too
    assert len(await audit_events(hub.db, action="credential.refresh")) == 1


async def test_concurrent_uses_after_expiry_refresh_once(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers(auth={"token_delay_s": 0.3})
    credential_id = await hub.connected(peers)
    await _expire(hub, peers, credential_id)
    answers = await asyncio.gather(*(hub.snapshot("linear") for _ in range(8)))
    assert {a.status_code for a in answers} <= {200, 201}, [a.text for a in answers]
    assert len(peers.auth.token_requests("refresh_token")) == 1


async def test_invalid_grant_marks_the_credential_error_after_one_attempt(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    credential_id = await hub.connected(peers)
    await _expire(hub, peers, credential_id)
    peers.auth.knobs.refresh_error = "invalid_grant"
    failed = await hub.snapshot("linear")
    assert failed.status_code == 422
    assert failed.json()["error"]["reason"] == "credential_unavailable"
    assert (await hub.credential(credential_id))["status"] == "error"
    events = await audit_events(hub.db, action="credential.refresh", outcome="failed")
    assert len(events) == 1
    assert events[0].details["error"] == "invalid_grant"
    again = await hub.snapshot("linear")  # the same answer, now with the cause
    assert again.status_code == 422
    assert again.json()["error"]["reason"] == "credential_unavailable"
    assert "refused the refresh token" in again.json()["error"]["message"]
    assert len(peers.auth.token_requests("refresh_token")) == 1


async def test_invalid_grant_after_a_rotation_elsewhere_reuses_the_new_token(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    credential_id = await hub.connected(peers)
    stale = await _row(hub, credential_id)  # what a slow replica read before the rotation
    await _expire(hub, peers, credential_id)
    assert (await hub.snapshot("linear")).status_code == 201  # the rotation "elsewhere"
    refresher = components_of(hub.app).get(OAuthContext).refresher
    async with owner_session(hub.db) as session:
        await session.execute(
            update(Credential)
            .where(Credential.id == stale.id)
            .values(refresh_lease_holder="slow-replica", refresh_lease_until=clock.now())
        )
    current = await refresher.run_claimed(
        hub.db, scope_of(hub.owner.tenant_id), stale, "slow-replica"
    )
    assert current.status == "active"
    assert current.secret_nonce != stale.secret_nonce
    assert len(peers.auth.token_requests("refresh_token")) == 2  # the stale one was refused


async def test_an_upstream_401_gets_one_refresh_and_one_retry(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    credential_id = await hub.connected(peers)
    peers.auth.tokens.clear()  # revoked upstream while the hub still thinks it is valid
    snapshot = await hub.snapshot("linear")
    assert snapshot.status_code == 201, snapshot.text
    assert len(peers.auth.token_requests("refresh_token")) == 1
    assert (await _row(hub, credential_id)).status == "active"


async def test_a_401_without_a_refresh_token_fails_as_unauthorized(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers(auth={"issue_refresh": False})
    await hub.connected(peers)
    peers.auth.tokens.clear()
    failed = await hub.snapshot("linear")
    assert failed.status_code == 422
    assert failed.json()["error"]["reason"] == "unauthorized"
    assert peers.auth.token_requests("refresh_token") == []


async def _call(hub: Hub, credential_id: str, peers: OAuthPeers) -> None:
    ctx = components_of(hub.app).get(UpstreamContext)
    tenant = scope_of(hub.owner.tenant_id)
    async with owner_session(hub.db, write=False) as read:
        target = await resolve_target(read, ctx, tenant, peers.peer.url, uuid.UUID(credential_id))
    await call_tool(
        ctx, tenant, target, "echo", {"text": "x"}, tool=None, era_hint="modern", db=hub.db
    )


async def test_insufficient_scope_is_recorded_and_a_step_up_asks_the_union(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers(
        guard={"required_scopes": ["mcp:basic"], "call_scopes": ["mcp:write"]},
        tools=[{"name": "echo", "inputSchema": {"type": "object"}}],
    )
    credential_id = await hub.connected(peers)
    assert peers.auth.requests("/authorize")[0].form["scope"] == "mcp:basic"
    with pytest.raises(InsufficientScope):
        await _call(hub, credential_id, peers)
    credential = await hub.credential(credential_id)
    assert credential["oauth"]["scopes"] == ["mcp:basic", "mcp:write"]
    assert len(await audit_events(hub.db, action="credential.insufficient_scope")) == 1
    step_up = await hub.connect({"credential_id": credential_id})
    assert step_up.credential_id == credential_id
    assert peers.auth.requests("/authorize")[1].form["scope"] == "mcp:basic mcp:write"
    await _call(hub, credential_id, peers)  # now it works
    assert (await hub.credential(credential_id))["version"] == credential["version"] + 1


async def test_step_ups_are_capped(hub: Hub, oauth_peers: OAuthPeersStarter) -> None:
    peers = await oauth_peers()
    credential_id = await hub.connected(peers)
    for _ in range(2):
        done = await hub.connect({"credential_id": credential_id})
        assert done.status is not None
        assert done.status["status"] == "completed"
    refused = await hub.start({"credential_id": credential_id})
    assert refused.status_code == 422
    assert refused.json()["error"]["reason"] == "step_up_limit"


async def test_a_credential_in_error_is_repaired_past_the_step_up_cap(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    """Its refresh token refused, re-authorising is the only way back: the cap does not apply."""
    peers = await oauth_peers()
    credential_id = await hub.connected(peers)
    for _ in range(2):  # the cap reached
        assert (await hub.connect({"credential_id": credential_id})).status is not None
    await _expire(hub, peers, credential_id)
    peers.auth.knobs.refresh_error = "invalid_grant"
    assert (await hub.snapshot("linear")).status_code == 422
    assert (await hub.credential(credential_id))["status"] == "error"
    peers.auth.knobs.refresh_error = None
    repaired = await hub.connect({"credential_id": credential_id})
    assert repaired.status is not None
    assert repaired.status["status"] == "completed"
    assert (await hub.credential(credential_id))["status"] == "active"
    assert (await hub.snapshot("linear")).status_code == 201
    capped = await hub.start({"credential_id": credential_id})  # active again: capped again
    assert capped.json()["error"]["reason"] == "step_up_limit"


async def test_a_pasted_secret_discards_the_refresh_token_and_client_secret(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    credential_id = await hub.connected(peers)
    url = hub.owner.url("credentials", credential_id)
    patched = await hub.client.patch(
        url, json={"secret": "pasted-token-0123456789"}, headers=hub.headers
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["data"]["oauth"]["has_refresh_token"] is False
    row = await _row(hub, credential_id)
    assert row.client_secret_ciphertext is None
    moved = await hub.client.patch(
        url, json={"api_base_url": "https://elsewhere.example.com"}, headers=hub.headers
    )
    assert moved.status_code == 409
    for field in ("oauth_issuer", "oauth", "oauth_scopes", "oauth_token_endpoint"):
        refused = await hub.client.patch(url, json={field: "x"}, headers=hub.headers)
        assert refused.status_code == 400, field


async def test_the_worker_refreshes_ahead_of_expiry_once_across_passes(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers(auth={"access_ttl_s": 120, "token_delay_s": 0.2})
    credential_id = await hub.connected(peers)
    async with owner_session(hub.db) as session:  # issued a minute ago: half its lifetime gone
        await session.execute(
            update(Credential)
            .where(Credential.id == uuid.UUID(credential_id))
            .values(
                updated_at=clock.now() - timedelta(seconds=65),
                expires_at=clock.now() + timedelta(seconds=55),
            )
        )
    refresher = components_of(hub.app).get(OAuthContext).refresher
    claimed = await asyncio.gather(refresh_pass(hub.db, refresher), refresh_pass(hub.db, refresher))
    assert sorted(claimed) == [0, 1]
    assert len(peers.auth.token_requests("refresh_token")) == 1
    row = await _row(hub, credential_id)
    assert row.expires_at is not None
    assert row.refresh_lease_holder is None
    # inside the 300 s window still, but fresh: not refreshed again on every pass
    assert await refresh_pass(hub.db, refresher) == 0


async def test_a_lapsed_lease_is_claimed_again(hub: Hub, oauth_peers: OAuthPeersStarter) -> None:
    peers = await oauth_peers()
    credential_id = await hub.connected(peers)
    await _expire(hub, peers, credential_id)
    async with owner_session(hub.db) as session:
        await session.execute(
            update(Credential)
            .where(Credential.id == uuid.UUID(credential_id))
            .values(
                refresh_lease_holder="crashed-replica",
                refresh_lease_until=clock.now() - timedelta(seconds=1),
            )
        )
    snapshot = await hub.snapshot("linear")
    assert snapshot.status_code == 201, snapshot.text
    assert len(peers.auth.token_requests("refresh_token")) == 1


async def test_hub_serve_runs_the_refresher_in_its_lifespan(
    db_url: str, database: Database, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers(auth={"access_ttl_s": 90})
    settings = make_settings(
        db_url,
        allow_loopback=True,
        public_url="http://hub.test",
        workers=True,
        oauth_refresh_interval_s=0.1,
    )
    app = create_app(settings, database=database)
    transport = httpx2.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=transport, base_url="http://hub.test") as client,
    ):
        hub = Hub(app, client, database, await make_tenant_admin(database))
        credential_id = await hub.connected(peers)
        async with owner_session(hub.db) as session:  # half its lifetime gone
            await session.execute(
                update(Credential)
                .where(Credential.id == uuid.UUID(credential_id))
                .values(updated_at=clock.now() - timedelta(seconds=100))
            )
        for _ in range(200):  # the loop passes every 0.1 s; give it up to 10 s
            if peers.auth.token_requests("refresh_token"):
                break
            await asyncio.sleep(0.05)
    assert len(peers.auth.token_requests("refresh_token")) == 1

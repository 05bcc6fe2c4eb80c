"""A kept dynamic registration the authorization server forgot (stop 53): ``invalid_client`` from
its token endpoint is terminal for a refresh (the credential goes to ``error``, saying to connect
again), and forgets the kept registration, at a refresh or a code redemption, so the next
connect registers the hub again instead of reusing the dead client."""

from __future__ import annotations

import uuid
from datetime import timedelta

from sqlalchemy import select, update

from hub.core import clock
from hub.core.components import components_of
from hub.egress import Fetcher
from hub.models import Credential, OAuthClient
from tests.oauth.conftest import Hub, OAuthPeers, OAuthPeersStarter
from tests.oauth.support import redirect_query
from tests.support.databases import owner_session
from tests.support.stories import audit_events


async def _kept(hub: Hub) -> list[OAuthClient]:
    async with owner_session(hub.db, write=False) as session:
        return list((await session.execute(select(OAuthClient))).scalars())


async def _expire(hub: Hub, peers: OAuthPeers, credential_id: str) -> None:
    peers.auth.expire_all()
    async with owner_session(hub.db) as session:
        await session.execute(
            update(Credential)
            .where(Credential.id == uuid.UUID(credential_id))
            .values(expires_at=clock.now() - timedelta(seconds=1))
        )


async def test_invalid_client_on_refresh_is_terminal_and_the_next_connect_registers_again(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    credential_id = await hub.connected(peers)
    assert len(await _kept(hub)) == 1
    await _expire(hub, peers, credential_id)
    peers.auth.clients.clear()  # the authorization server forgot the hub's registration
    failed = await hub.snapshot("linear")
    assert failed.status_code == 422
    assert failed.json()["error"]["reason"] == "credential_unavailable"
    assert (await hub.credential(credential_id))["status"] == "error"
    events = await audit_events(hub.db, action="credential.refresh", outcome="failed")
    assert [e.details for e in events] == [
        {"error": "invalid_client", "status": "error", "client_forgotten": True}
    ]
    assert await _kept(hub) == []
    again = await hub.snapshot("linear")  # refused at once, not asked again
    assert "connect the server again" in again.json()["error"]["message"]
    assert len(peers.auth.token_requests("refresh_token")) == 1
    reconnected = await hub.connect({"server": "linear"})
    assert reconnected.status is not None
    assert reconnected.status["status"] == "completed"
    assert reconnected.credential_id == credential_id
    assert len(peers.auth.requests("/register")) == 2
    assert (await hub.credential(credential_id))["status"] == "active"
    assert (await hub.snapshot("linear")).status_code == 201


async def test_invalid_client_at_the_code_redemption_forgets_the_kept_client(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    await hub.connected(peers, "one")
    await hub.add_server("two", peers.peer.url)
    started = await hub.start({"server": "two"})  # reuses the kept registration
    assert started.status_code == 201, started.text
    assert len(peers.auth.requests("/register")) == 1
    url = started.json()["data"]["authorization_url"]
    query = await redirect_query(components_of(hub.app).get(Fetcher), url)  # consented
    peers.auth.clients.clear()  # then the authorization server forgot the client
    callback = await hub.client.get("/oauth/callback", params=query)
    assert callback.status_code == 422
    assert "client_refused" in callback.text
    assert await _kept(hub) == []
    done = await hub.connect({"server": "two"})  # registers the hub again
    assert done.status is not None
    assert done.status["status"] == "completed"
    assert len(peers.auth.requests("/register")) == 2


async def test_a_pre_registered_client_is_kept_after_invalid_client(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    """An operator's client is the operator's to replace: only dynamic registrations go."""
    peers = await oauth_peers(auth={"registration": False})
    peers.auth.add_client("ops-client", "ops-secret", "client_secret_basic")
    await hub.add_server("linear", peers.peer.url)
    client = {"client_id": "ops-client", "client_secret": "ops-secret"}
    done = await hub.connect({"server": "linear", "client": client})
    assert done.credential_id is not None, done.created.text
    await _expire(hub, peers, done.credential_id)
    peers.auth.clients.clear()
    assert (await hub.snapshot("linear")).status_code == 422
    assert (await hub.credential(done.credential_id))["status"] == "error"
    events = await audit_events(hub.db, action="credential.refresh", outcome="failed")
    assert events[0].details["client_forgotten"] is False
    assert [c.client_id for c in await _kept(hub)] == ["ops-client"]

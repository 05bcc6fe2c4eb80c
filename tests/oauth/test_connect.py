"""Connecting by OAuth, end to end: discovery, registration, consent, callback, credential, use."""

from __future__ import annotations

import uuid
from typing import Any

import httpx2
from sqlalchemy import select

from hub.app import create_app
from hub.core.db import Database
from hub.models import Credential, OAuthClient, Server
from tests.conftest import make_settings
from tests.oauth.conftest import Hub, OAuthPeers, OAuthPeersStarter
from tests.oauth.support import Connected
from tests.support.databases import owner_session
from tests.support.factories import make_principal
from tests.support.stories import audit_events, make_tenant_admin


async def test_connect_then_snapshot_uses_the_token(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    credential_id = await hub.connected(peers)
    snapshot = await hub.snapshot("linear")
    assert snapshot.status_code == 201, snapshot.text
    credential = await hub.credential(credential_id)
    assert credential["type"] == "oauth_token"
    assert credential["api_base_url"] == peers.peer.url.rsplit("/", 1)[0]
    assert credential["oauth"]["issuer"] == peers.auth.issuer
    assert credential["oauth"]["resource"] == peers.peer.url
    assert credential["oauth"]["has_refresh_token"] is True
    assert len(peers.auth.token_requests("authorization_code")) == 1
    used = [r for r in peers.peer.requests if r.headers.get("authorization")]
    assert used, "the snapshot sent the token"
    assert len(await audit_events(hub.db, action="oauth.callback", outcome="success")) == 1


async def test_the_server_is_bound_to_its_new_credential(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    credential_id = await hub.connected(peers)
    server = await hub.client.get(hub.owner.url("servers", "linear"), headers=hub.headers)
    assert server.json()["data"]["credential_id"] == credential_id


async def test_reconnecting_a_server_updates_its_credential_in_place(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    first = await hub.connected(peers)
    version = (await hub.credential(first))["version"]
    again = await hub.connect({"server": "linear"})
    assert again.credential_id == first
    assert (await hub.credential(first))["version"] == version + 1
    async with owner_session(hub.db, write=False) as session:
        count = len((await session.execute(select(Credential))).scalars().all())
    assert count == 1


async def test_a_url_and_a_name_make_a_new_unbound_credential(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    done = await hub.connect({"url": peers.peer.url, "credential_name": "linear-bot"})
    assert done.credential_id is not None, done.created.text
    credential = await hub.credential(done.credential_id)
    assert credential["name"] == "linear-bot"
    async with owner_session(hub.db, write=False) as session:
        servers = (await session.execute(select(Server))).scalars().all()
    assert servers == []


async def test_dynamic_registration_is_kept_per_tenant_and_issuer(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    await hub.connected(peers, "one")
    await hub.add_server("two", peers.peer.url)
    second = await hub.connect({"server": "two"})
    assert second.status is not None
    assert second.status["status"] == "completed"
    assert len(peers.auth.requests("/register")) == 1
    registration: Any = peers.auth.requests("/register")[0].form["_json"]
    assert registration["application_type"] == "web"
    assert "refresh_token" in registration["grant_types"]
    assert registration["client_name"] == "MCP Hub (Test tenant)"


async def test_a_new_issuer_gets_a_new_registration(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    first = await oauth_peers()
    second = await oauth_peers()
    await hub.connected(first, "one")
    await hub.connected(second, "two")
    async with owner_session(hub.db, write=False) as session:
        issuers = {c.issuer for c in (await session.execute(select(OAuthClient))).scalars()}
    assert issuers == {first.auth.issuer, second.auth.issuer}


async def test_a_client_id_metadata_document_replaces_registration(
    db_url: str, database: Database, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers(auth={"cimd_supported": True, "auth_methods": ["none"]})
    cimd = "https://hub.example.com/oauth/client-metadata.json"
    settings = make_settings(
        db_url, allow_loopback=True, public_url="http://hub.test", oauth_client_id_url=cimd
    )
    app = create_app(settings, database=database)
    transport = httpx2.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=transport, base_url="http://hub.test") as client,
    ):
        hub = Hub(app, client, database, await make_tenant_admin(database))
        peers.auth.add_client(cimd, None, "none", "http://hub.test/oauth/callback")
        await hub.connected(peers)
    assert peers.auth.requests("/register") == []
    assert peers.auth.requests("/authorize")[0].form["client_id"] == cimd
    assert peers.auth.token_requests()[0].form["client_id"] == cimd


async def _pre_registered(
    hub: Hub, oauth_peers: OAuthPeersStarter, secret: str
) -> tuple[OAuthPeers, Connected]:
    """An authorization server that registers no one but knows ``pre-id`` (its secret
    ``pre-secret-value``), and a connect of ``linear`` presenting ``pre-id`` with ``secret``."""
    peers = await oauth_peers(auth={"registration": False, "auth_methods": ["client_secret_post"]})
    peers.auth.add_client("pre-id", "pre-secret-value", "client_secret_post")
    await hub.add_server("linear", peers.peer.url)
    client = {"client_id": "pre-id", "client_secret": secret}
    return peers, await hub.connect({"server": "linear", "client": client})


async def test_a_pre_registered_client_is_used_and_kept(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers, done = await _pre_registered(hub, oauth_peers, "pre-secret-value")
    assert done.status is not None
    assert done.status["status"] == "completed", done.status
    token = peers.auth.token_requests("authorization_code")[0]
    assert token.form["client_id"] == "pre-id"
    assert token.form["client_secret"] == "pre-secret-value"
    again = await hub.connect({"server": "linear"})  # no client given: the kept one is used
    assert again.status is not None
    assert again.status["status"] == "completed"


async def test_a_pre_registered_client_is_kept_only_once_it_has_redeemed_a_code(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    """A mistyped client id, abandoned, must not replace the registration that works: the kept
    pre-registered client outranks every other kind, so it would break each later connect."""
    peers = await oauth_peers()
    await hub.connected(peers)  # registers the server "linear"; a dynamic registration, kept
    typo = await hub.start({"server": "linear", "client": {"client_id": "typo-id"}})
    assert typo.status_code == 201, typo.text
    assert "client_id=typo-id" in typo.json()["data"]["authorization_url"]
    again = await hub.connect({"server": "linear"})  # abandoned: the dynamic one still serves
    assert again.status is not None
    assert again.status["status"] == "completed", again.status
    async with hub.db.session(write=False) as session:
        [kept] = (await session.execute(select(OAuthClient))).scalars()
    [registered] = peers.auth.clients  # the one the server issued; "typo-id" it never knew
    assert (kept.registration, kept.client_id) == ("dynamic", registered)


async def test_a_pre_registered_client_the_token_endpoint_refuses_is_not_kept(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    _, wrong = await _pre_registered(hub, oauth_peers, "a-wrong-secret")
    assert wrong.status is not None
    assert (wrong.status["status"], wrong.status["reason"]) == ("failed", "client_refused")
    refused = await hub.start({"server": "linear"})  # nothing kept, and no other way to register
    assert refused.status_code == 422
    assert refused.json()["error"]["reason"] == "registration_unavailable"


async def test_no_way_to_register_is_a_clear_422(hub: Hub, oauth_peers: OAuthPeersStarter) -> None:
    peers = await oauth_peers(auth={"registration": False})
    await hub.add_server("linear", peers.peer.url)
    refused = await hub.start({"server": "linear"})
    assert refused.status_code == 422
    assert refused.json()["error"]["reason"] == "registration_unavailable"


async def test_the_callback_page_names_tenant_server_and_initiator_and_no_token(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    await hub.add_server("linear", peers.peer.url)
    done = await hub.connect({"server": "linear"})
    page = done.callback
    assert page is not None
    assert page.headers["content-security-policy"] == "default-src 'none'"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["content-type"].startswith("text/html")
    for name in ("Test tenant", "linear", "someone"):
        assert name in page.text
    for token in [*peers.auth.tokens, *peers.auth.refresh_tokens]:
        assert token not in page.text


async def test_authorization_status_is_pending_until_the_callback(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    await hub.add_server("linear", peers.peer.url)
    started = await hub.start({"server": "linear"})
    data = started.json()["data"]
    status = await hub.client.get(
        hub.owner.url("oauth", "authorizations", data["id"]), headers=hub.headers
    )
    assert status.json()["data"]["status"] == "pending"
    assert status.json()["data"]["credential_id"] is None
    assert status.json()["data"]["server"] == "linear"


async def test_starting_needs_write_on_the_named_server(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    await hub.add_server("linear", peers.peer.url)
    deployer = await make_principal(hub.db, hub.owner.tenant_id, role="deployer", name="dep")
    # a deployer holds server:* but not credential:* write
    refused = await hub.client.post(
        hub.owner.url("oauth", "authorizations"),
        json={"server": "linear"},
        headers=deployer.headers,
    )
    assert refused.status_code == 403
    deny = await hub.client.post(
        hub.owner.url("grants"),
        json={
            "principal_id": str(hub.owner.admin.principal_id),
            "resource": "server:linear",
            "action": "write",
            "effect": "deny",
        },
        headers=hub.headers,
    )
    assert deny.status_code == 201, deny.text
    refused = await hub.start({"server": "linear"})
    assert refused.status_code == 403
    assert peers.peer.requests == []


async def test_client_metadata_document_lists_the_callback(hub: Hub) -> None:
    document = await hub.client.get("/oauth/client-metadata.json")
    body = document.json()
    assert body["client_id"] == "http://hub.test/oauth/client-metadata.json"
    assert body["redirect_uris"] == ["http://hub.test/oauth/callback"]
    assert body["token_endpoint_auth_method"] == "none"
    assert "refresh_token" in body["grant_types"]


async def test_another_tenants_authorization_reads_404(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    await hub.add_server("linear", peers.peer.url)
    data = (await hub.start({"server": "linear"})).json()["data"]
    other = await make_tenant_admin(hub.db)
    for tenant in (other.tenant_id, hub.owner.tenant_id):
        read = await hub.client.get(
            f"/tenants/{tenant}/oauth/authorizations/{data['id']}", headers=other.admin.headers
        )
        assert read.status_code == 404
    unknown = await hub.client.get(
        hub.owner.url("oauth", "authorizations", uuid.uuid4()), headers=hub.headers
    )
    assert unknown.status_code == 404


async def test_a_token_is_never_sent_to_another_origin(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    other = await oauth_peers()  # a second server on another origin
    credential_id = await hub.connected(peers)
    moved = await hub.client.post(
        hub.owner.url("servers"),
        json={"handle": "other", "url": other.peer.url, "credential_id": credential_id},
        headers=hub.headers,
    )
    assert moved.status_code == 422
    assert moved.json()["error"]["reason"] == "origin_refused"
    discovered = await hub.client.post(
        hub.owner.url("mcp", "discover"),
        json={"url": other.peer.url, "credential_id": credential_id},
        headers=hub.headers,
    )
    assert discovered.status_code == 422
    assert not [r for r in other.peer.requests if r.headers.get("authorization")]


async def test_discovery_naming_an_expired_credential_refreshes_it_first(
    hub: Hub, oauth_peers: OAuthPeersStarter
) -> None:
    from datetime import timedelta

    from sqlalchemy import update

    from hub.core import clock

    peers = await oauth_peers()
    credential_id = await hub.connected(peers)
    peers.auth.expire_all()
    async with owner_session(hub.db) as session:
        await session.execute(
            update(Credential)
            .where(Credential.id == uuid.UUID(credential_id))
            .values(expires_at=clock.now() - timedelta(seconds=5))
        )
    discovered = await hub.client.post(
        hub.owner.url("mcp", "discover"),
        json={"url": peers.peer.url, "credential_id": credential_id},
        headers=hub.headers,
    )
    assert discovered.status_code == 200, discovered.text
    assert len(peers.auth.token_requests("refresh_token")) == 1

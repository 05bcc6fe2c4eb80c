"""Connecting a server by OAuth, end to end: discovery, registration, consent, callback, use."""

from __future__ import annotations

import httpx2
from fastapi import FastAPI

from hub.core.db import Database
from tests.oauth.conftest import OAuthPeersStarter
from tests.oauth.support import connect
from tests.support.stories import audit_events, make_tenant_admin


async def test_connect_then_snapshot_uses_the_token(
    app: FastAPI, client: httpx2.AsyncClient, database: Database, oauth_peers: OAuthPeersStarter
) -> None:
    peers = await oauth_peers()
    owner = await make_tenant_admin(database)
    created = await client.post(
        owner.url("servers"),
        json={"handle": "linear", "url": peers.peer.url},
        headers=owner.admin.headers,
    )
    assert created.status_code == 201, created.text
    done = await connect(app, client, owner.url(), owner.admin.headers, {"server": "linear"})
    assert done.created.status_code == 201, done.created.text
    assert done.callback is not None
    assert done.callback.status_code == 200, done.callback.text
    assert done.status is not None
    assert done.status["status"] == "completed"
    snapshot = await client.post(
        owner.url("servers", "linear", "catalogs"), headers=owner.admin.headers
    )
    assert snapshot.status_code == 201, snapshot.text
    credential = await client.get(
        owner.url("credentials", done.credential_id), headers=owner.admin.headers
    )
    body = credential.json()["data"]
    assert body["type"] == "oauth_token"
    assert body["oauth"]["issuer"] == peers.auth.issuer
    assert len(peers.auth.token_requests("authorization_code")) == 1
    events = await audit_events(database, action="oauth.callback")
    assert len(events) == 1

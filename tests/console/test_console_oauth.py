"""“Connect with OAuth” on a server's page starts a real authorization through the OAuth
service (discovery, registration, PKCE) and links to the authorization server (DESIGN §9, §14)."""

from __future__ import annotations

import html
import re
import uuid
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from fastapi import FastAPI
from sqlalchemy import update

from hub.core.db import Database
from hub.core.settings import Settings
from hub.models import Credential
from tests.conftest import make_settings
from tests.console.conftest import ConsoleWorld
from tests.console.support import ConsoleUser
from tests.oauth.support import connect
from tests.peers.fixtures import OAuthPeersStarter, oauth_peers
from tests.support.databases import owner_session
from tests.support.stories import audit_events

__all__ = ["oauth_peers"]


@pytest.fixture
def settings(db_url: str) -> Settings:
    return make_settings(
        db_url, allow_loopback=True, discovery_timeout_s=10, public_url="http://hub.test"
    )


async def test_connect_with_oauth_links_to_the_authorization_server(
    user: ConsoleUser,
    world: ConsoleWorld,
    client: httpx2.AsyncClient,
    oauth_peers: OAuthPeersStarter,
    database: Database,
) -> None:
    peers = await oauth_peers()
    made = await client.post(
        world.setup.url("servers"),
        json={"handle": "guarded", "url": peers.peer.url},
        headers=world.setup.admin.headers,
    )
    assert made.status_code == 201, made.text
    page = await user.get(world.page("servers", "guarded"))
    assert "Connect with OAuth" in page.text
    started = await user.post(world.page("servers", "guarded", "oauth"))
    assert started.status_code == 200, started.text
    found = re.search(
        r'<a href="([^"]+)" rel="noreferrer noopener" id="authorize-link">', started.text
    )
    assert found is not None, started.text
    url = urlsplit(html.unescape(found.group(1)))
    assert f"{url.scheme}://{url.netloc}" == peers.auth.issuer.rstrip("/")
    query = parse_qs(url.query)
    assert query["redirect_uri"] == ["http://hub.test/oauth/callback"]
    assert query["code_challenge_method"] == ["S256"]
    assert query["resource"] == [peers.peer.url]
    assert len(await audit_events(database, action="oauth.authorize")) == 1


async def test_an_oauth_credential_can_be_reauthorised_from_the_credentials_page(
    app: FastAPI,
    user: ConsoleUser,
    world: ConsoleWorld,
    client: httpx2.AsyncClient,
    oauth_peers: OAuthPeersStarter,
    database: Database,
) -> None:
    peers = await oauth_peers()
    admin = world.setup.admin.headers
    made = await client.post(
        world.setup.url("servers"), json={"handle": "guarded", "url": peers.peer.url}, headers=admin
    )
    assert made.status_code == 201, made.text
    done = await connect(app, client, world.setup.url(), admin, {"server": "guarded"})
    assert done.credential_id is not None
    page = await user.get(world.page("credentials"))
    action = f"/credentials/{done.credential_id}/oauth"
    assert action in page.text
    assert "Re-authorise with OAuth" in page.text
    # a new token comes from consenting again: no form pastes one (it would drop the refresh)
    assert f"/credentials/{done.credential_id}/secret" not in page.text
    assert "refresh token was refused" not in page.text  # it is active
    async with owner_session(database) as session:  # as a refused refresh leaves it
        await session.execute(
            update(Credential)
            .where(Credential.id == uuid.UUID(done.credential_id))
            .values(status="error")
        )
    broken = await user.get(world.page("credentials"))
    assert "Its refresh token was refused" in broken.text
    assert action in broken.text  # and the way out is right there
    started = await user.post(world.page("credentials", done.credential_id, "oauth"))
    assert started.status_code == 200, started.text
    found = re.search(
        r'<a href="([^"]+)" rel="noreferrer noopener" id="authorize-link">', started.text
    )
    assert found is not None
    url = urlsplit(html.unescape(found.group(1)))
    assert f"{url.scheme}://{url.netloc}" == peers.auth.issuer.rstrip("/")
    assert 'href="/console/t/' in started.text  # back to the credentials

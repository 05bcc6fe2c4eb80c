"""OAuth tests: a hub that may reach loopback peers, an authorization server and a protected
MCP peer it issues tokens for."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI
from sqlalchemy import update

from hub.core import clock
from hub.core.db import Database
from hub.core.settings import Settings
from hub.models import Credential
from tests.conftest import make_settings
from tests.oauth.support import Connected, connect
from tests.peers.fixtures import (
    OAuthPeers,
    OAuthPeersStarter,
    handmade_peer,
    node_tools,
    oauth_peers,
)
from tests.support.databases import owner_session
from tests.support.stories import TenantAdmin, make_tenant_admin

__all__ = ["Hub", "OAuthPeers", "OAuthPeersStarter", "handmade_peer", "node_tools", "oauth_peers"]


@pytest.fixture
def settings(db_url: str) -> Settings:
    return make_settings(
        db_url, allow_loopback=True, discovery_timeout_s=10, public_url="http://hub.test"
    )


@dataclass
class Hub:
    """The in-process hub of a test, its tenant admin, and the OAuth steps it takes."""

    app: FastAPI
    client: httpx2.AsyncClient
    db: Database
    owner: TenantAdmin

    @property
    def headers(self) -> dict[str, str]:
        return self.owner.admin.headers

    async def add_server(self, handle: str, url: str) -> None:
        made = await self.client.post(
            self.owner.url("servers"), json={"handle": handle, "url": url}, headers=self.headers
        )
        assert made.status_code == 201, made.text

    async def start(self, body: dict[str, Any]) -> httpx2.Response:
        return await self.client.post(
            self.owner.url("oauth", "authorizations"), json=body, headers=self.headers
        )

    async def connect(self, body: dict[str, Any]) -> Connected:
        return await connect(self.app, self.client, self.owner.url(), self.headers, body)

    async def snapshot(self, handle: str) -> httpx2.Response:
        return await self.client.post(
            self.owner.url("servers", handle, "catalogs"), headers=self.headers
        )

    async def credential(self, credential_id: str) -> dict[str, Any]:
        read = await self.client.get(
            self.owner.url("credentials", credential_id), headers=self.headers
        )
        assert read.status_code == 200, read.text
        data: dict[str, Any] = read.json()["data"]
        return data

    async def due_in(self, credential_id: str, seconds: float) -> None:
        """The credential's token issued a minute ago and expiring in ``seconds``: due for
        refreshing, and half its lifetime gone (a negative ``seconds``: expired)."""
        async with owner_session(self.db) as session:
            await session.execute(
                update(Credential)
                .where(Credential.id == uuid.UUID(credential_id))
                .values(
                    updated_at=clock.now() - timedelta(seconds=65),
                    expires_at=clock.now() + timedelta(seconds=seconds),
                )
            )

    async def connected(self, peers: OAuthPeers, handle: str = "linear") -> str:
        """Register ``peers.peer`` as ``handle`` and connect it; the credential id."""
        await self.add_server(handle, peers.peer.url)
        done = await self.connect({"server": handle})
        assert done.callback is not None, done.created.text
        assert done.callback.status_code == 200, done.callback.text
        assert done.credential_id is not None
        return done.credential_id


@pytest.fixture
async def hub(app: FastAPI, client: httpx2.AsyncClient, database: Database) -> Hub:
    return Hub(app, client, database, await make_tenant_admin(database))

"""POST /tenants/{t}/mcp/discover: the 400 / 404 / 422 matrix of DESIGN §5, with real peers."""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any

import httpx2
import pytest
from sqlalchemy import text

from hub.core.db import Database
from tests.peers.fixtures import HandmadePeerStarter, SdkPeerStarter, default_tools
from tests.peers.handmade_wire import Reply
from tests.support.factories import Actor, make_principal, make_tenant

CANARY = f"CANARY-{uuid.uuid4()}"


async def _admin(database: Database) -> tuple[uuid.UUID, Actor]:
    tenant = await make_tenant(database)
    return tenant.id, await make_principal(database, tenant.id)


async def _credential(
    client: httpx2.AsyncClient, t: uuid.UUID, actor: Actor, base: str, **extra: Any
) -> str:
    body = {"name": "c", "type": "api_key", "secret": CANARY, "api_base_url": base, **extra}
    response = await client.post(f"/tenants/{t}/credentials", json=body, headers=actor.headers)
    assert response.status_code == 201, response.text
    return str(response.json()["data"]["id"])


async def _discover(
    client: httpx2.AsyncClient, t: uuid.UUID, actor: Actor, url: str, cid: str | None = None
) -> httpx2.Response:
    body: dict[str, Any] = {"url": url}
    if cid is not None:
        body["credential_id"] = cid
    return await client.post(f"/tenants/{t}/mcp/discover", json=body, headers=actor.headers)


def _origin(url: str) -> str:
    return url.rsplit("/", 1)[0]


def _assert_failure(response: httpx2.Response, reason: str) -> None:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert set(error) == {"code", "reason", "message", "request_id"}
    assert error["code"] == "discovery_failed"
    assert error["reason"] == reason
    assert CANARY not in response.text


async def test_discovers_an_sdk_peer_with_a_credential(
    client: httpx2.AsyncClient, database: Database, sdk_peer: SdkPeerStarter
) -> None:
    peer = await sdk_peer("stateless")
    t, admin = await _admin(database)
    cid = await _credential(client, t, admin, _origin(peer.url))
    response = await _discover(client, t, admin, peer.url, cid)
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert set(data) == {
        "server_info", "protocol_version", "capabilities", "instructions", "tools", "dropped_tools"
    }
    assert data["protocol_version"] == "2026-07-28"
    expected = {t["name"]: t for t in default_tools()}
    assert {t["name"] for t in data["tools"]} == set(expected)
    for tool in data["tools"]:
        assert tool["inputSchema"] == expected[tool["name"]]["inputSchema"]
    assert CANARY not in response.text


async def test_the_400_404_422_matrix(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    peer = await handmade_peer(era="modern")
    t, admin = await _admin(database)
    other_t, other_admin = await _admin(database)
    origin = _origin(peer.url)
    # 400: static URL checks
    for url in ["http://example.com/mcp", "https://u:p@example.com/mcp", "https://e.com/m#f",
                "ftp://example.com/", "/relative"]:
        assert (await _discover(client, t, admin, url)).status_code == 400, url
    assert (await client.post(f"/tenants/{t}/mcp/discover", json={}, headers=admin.headers)
            ).status_code == 400
    # 404: unknown, other tenant's, password-typed, expired, error-status credentials
    foreign = await _credential(client, other_t, other_admin, origin)
    password = await _credential(client, t, admin, origin, type="password")
    expired = await _credential(client, t, admin, origin, expires_at="2001-01-01T00:00:00Z")
    errored = await _credential(client, t, admin, origin, status="error")
    for cid in [str(uuid.uuid4()), foreign, password, expired, errored]:
        response = await _discover(client, t, admin, peer.url, cid)
        assert response.status_code == 404, cid
        assert response.json()["error"]["code"] == "not_found"
    assert len(peer.requests) == 0
    # 422: URL off the credential's origin, refused before any request
    elsewhere = await _credential(client, t, admin, "https://api.example.com")
    _assert_failure(await _discover(client, t, admin, peer.url, elsewhere), "origin_refused")
    assert len(peer.requests) == 0
    assert CANARY not in caplog.text

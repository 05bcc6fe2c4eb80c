"""POST /tenants/{t}/mcp/discover: the 400 / 404 / 422 matrix of DESIGN §5, with real peers."""

from __future__ import annotations

import uuid
from typing import Any

import httpx2
import pytest

from hub.core.db import Database
from tests.peers.fixtures import HandmadePeerStarter, SdkPeerStarter, default_tools
from tests.peers.handmade_wire import Reply
from tests.support.databases import as_owner
from tests.support.factories import Actor, make_principal, make_tenant
from tests.support.leaks import debug_everything

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
    # an unauthorized says whether a credential was sent (DESIGN §14)
    extra = {"credential_sent"} if reason == "unauthorized" else set()
    assert set(error) == {"code", "reason", "message", "request_id"} | extra
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
        "server_info",
        "protocol_version",
        "capabilities",
        "instructions",
        "tools",
        "dropped_tools",
        "dropped_tools_total",
    }
    assert data["dropped_tools_total"] == len(data["dropped_tools"])
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
    debug_everything(caplog)
    peer = await handmade_peer(era="modern")
    t, admin = await _admin(database)
    other_t, other_admin = await _admin(database)
    origin = _origin(peer.url)
    # 400: static URL checks
    for url in [
        "http://example.com/mcp",
        "https://u:p@example.com/mcp",
        "https://e.com/m#f",
        "ftp://example.com/",
        "/relative",
    ]:
        assert (await _discover(client, t, admin, url)).status_code == 400, url
    assert (
        await client.post(f"/tenants/{t}/mcp/discover", json={}, headers=admin.headers)
    ).status_code == 400
    # 404: unknown, other tenant's, secret-typed, expired, error-status credentials
    foreign = await _credential(client, other_t, other_admin, origin)
    password = await _credential(client, t, admin, origin, type="secret")
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


def _tool(name: str) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}}


async def test_keyless_sentinel_sends_no_authorization(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    peer = await handmade_peer(era="modern", tools=[_tool("a")])
    t, admin = await _admin(database)
    keyless = await _credential(
        client,
        t,
        admin,
        "https://unrelated.example.com",
        secret="NO_TOKEN",
        metadata={"mcp": {"auth": "none"}},
    )
    response = await _discover(client, t, admin, peer.url, keyless)
    assert response.status_code == 200, response.text
    assert all("authorization" not in r.headers for r in peer.requests)
    bearer = await _credential(client, t, admin, _origin(peer.url))
    assert (await _discover(client, t, admin, peer.url, bearer)).status_code == 200
    sent = [r.headers.get("authorization") for r in peer.requests[-2:]]
    assert sent
    assert all(h == f"Bearer {CANARY}" for h in sent)


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply(status=302, headers={"location": "http://127.0.0.1:9/x"}), "redirect_refused"),
        (Reply(status=401, body={"error": "nope"}), "unauthorized"),
        (Reply(status=403, body="forbidden"), "unauthorized"),
        (
            Reply(
                status=200,
                body="<html><body>hi</body></html>",
                headers={"content-type": "text/html"},
            ),
            "not_mcp",
        ),
        (
            Reply(
                status=200, body=b"x" * (300 * 1024), headers={"content-type": "application/json"}
            ),
            "response_too_large",
        ),
        (
            Reply(
                status=200,
                body=b'{"jsonrpc": "2.0", "id": ',
                headers={"content-type": "application/json"},
            ),
            "protocol_error",
        ),
    ],
)
async def test_upstream_failures_are_422_with_reason(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    reply: Reply,
    reason: str,
) -> None:
    peer = await handmade_peer(era="modern")
    peer.override("*", reply)
    t, admin = await _admin(database)
    cid = await _credential(client, t, admin, _origin(peer.url))
    _assert_failure(await _discover(client, t, admin, peer.url, cid), reason)


async def test_upstream_500_echoing_the_bearer_leaks_nothing(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    debug_everything(caplog)
    peer = await handmade_peer(era="modern")

    def echo(request: Any) -> Reply:
        return Reply(status=500, body=f"bad token {request.headers.get('authorization')}")

    peer.override("*", echo)
    t, admin = await _admin(database)
    cid = await _credential(client, t, admin, _origin(peer.url))
    response = await _discover(client, t, admin, peer.url, cid)
    _assert_failure(response, "handshake_failed")
    assert CANARY not in caplog.text
    async with as_owner(database.engine) as owner, owner.connect() as conn:  # every row
        from sqlalchemy import text as sql

        rows = (await conn.execute(sql("SELECT * FROM audit_events"))).all()
    assert CANARY not in repr(rows)
    assert any("handshake_failed" in repr(r) for r in rows)


async def test_oversize_sse_event_and_duplicate_tools(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    t, admin = await _admin(database)
    big = await handmade_peer(era="modern")
    event = b"data: " + b"x" * (300 * 1024) + b"\n\n"
    big.override("*", Reply(status=200, body=event, headers={"content-type": "text/event-stream"}))
    _assert_failure(await _discover(client, t, admin, big.url), "response_too_large")
    dup = await handmade_peer(era="modern", tools=[_tool("same"), _tool("same")])
    _assert_failure(await _discover(client, t, admin, dup.url), "duplicate_tool")


async def test_timeout_is_bounded_by_the_deadline(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    import time

    peer = await handmade_peer(era="modern")
    peer.override(
        "*",
        Reply(
            status=200,
            chunks=[b"{"] * 100,
            chunk_delay=0.5,
            headers={"content-type": "application/json"},
        ),
    )
    t, admin = await _admin(database)
    started = time.monotonic()
    response = await _discover(client, t, admin, peer.url)
    elapsed = time.monotonic() - started
    _assert_failure(response, "timeout")
    assert elapsed < 3 + 1.5  # the test settings' discovery deadline, plus slack


async def test_remembered_era_skips_the_probe_on_every_replica(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    settings: Any,
) -> None:
    from hub.app import create_app

    peer = await handmade_peer(era="legacy", tools=[_tool("a")])
    t, admin = await _admin(database)
    first = await _discover(client, t, admin, peer.url)
    assert first.status_code == 200, first.text
    assert first.json()["data"]["protocol_version"] == "2025-11-25"
    first_count = len(peer.requests)
    other = create_app(settings, database=database)
    transport = httpx2.ASGITransport(app=other)
    async with (
        other.router.lifespan_context(other),
        httpx2.AsyncClient(transport=transport, base_url="http://replica") as replica,
    ):
        second = await _discover(replica, t, admin, peer.url)
    assert second.status_code == 200
    assert len(peer.requests) - first_count < first_count  # no server/discover probe this time
    assert peer.count("server/discover") == 1


async def test_extra_origins_let_a_credential_reach_a_listed_origin(
    database: Database, handmade_peer: HandmadePeerStarter, db_url: str
) -> None:
    from hub.app import create_app
    from tests.conftest import make_settings

    peer = await handmade_peer(era="modern", tools=[_tool("a")])
    pinned = "https://api.example.com"
    settings = make_settings(
        db_url, allow_loopback=True, extra_origins={pinned: [_origin(peer.url)]}
    )
    app = create_app(settings, database=database)
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://h") as c,
    ):
        t, admin = await _admin(database)
        cid = await _credential(c, t, admin, pinned)
        response = await _discover(c, t, admin, peer.url, cid)
        assert response.status_code == 200, response.text
        assert peer.requests[0].headers.get("authorization") == f"Bearer {CANARY}"
        not_listed = await _credential(c, t, admin, "https://other.example.com")
        _assert_failure(await _discover(c, t, admin, peer.url, not_listed), "origin_refused")


async def test_everything_peer_and_sdk_legacy(
    client: httpx2.AsyncClient,
    database: Database,
    everything_peer: Any,
) -> None:
    t, admin = await _admin(database)
    response = await _discover(client, t, admin, everything_peer.url)
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert data["protocol_version"] == "2025-11-25"
    assert len(data["tools"]) > 3
    assert all(isinstance(tool["inputSchema"], dict) for tool in data["tools"])

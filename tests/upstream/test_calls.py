"""How :mod:`hub.upstream.calls` reports a connection lost mid-exchange (stop 53).

A tool call reports ``connection_lost`` (its outcome is unknown: ``tests/egress`` and
``tests/gateway/test_upstream_timing.py``). A discovery only reads, so no outcome is in doubt:
it stays ``connect_failed``, one of the reasons discovery names, and never falls to
``protocol_error`` ("upstream sent a malformed MCP response"), which would be untrue.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx2

from hub.core.db import Database
from tests.peers.fixtures import HandmadePeerStarter
from tests.support.factories import make_principal, make_tenant
from tests.upstream.cutting import StartRelay


async def test_discovery_whose_connection_breaks_is_connect_failed(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    cutting_relay: StartRelay,
) -> None:
    peer = await handmade_peer(era="modern")
    port = urlsplit(peer.url).port
    assert port is not None
    relay = await cutting_relay(port, {"tools/list"})  # server/discover passes; the list is cut
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    response = await client.post(
        f"/tenants/{tenant.id}/mcp/discover", json={"url": relay.url()}, headers=admin.headers
    )
    assert relay.cut_requests == ["tools/list"]
    assert peer.count("server/discover") == 1
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["reason"] == "connect_failed"
    assert error["message"] == "could not connect to upstream"

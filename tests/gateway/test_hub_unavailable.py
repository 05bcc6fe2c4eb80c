"""The endpoint when the hub's database cannot serve a call (PostgreSQL; stop 53).

A resilience walk found three things wrong here: a call answered ``50300`` (an ``ask`` call whose
approvals read waited on a lock past the statement timeout) was audited, and counted, as a
success with no approval; the ``50300`` answer carried ``"id": null``; and a database refusing
connections (``ALLOW_CONNECTIONS false``, SQLSTATE 55000) answered a 500 with a traceback logged,
on REST and on the endpoint alike.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
import httpx2
import pytest
from sqlalchemy import make_url

from hub.app import create_app
from hub.core.db import Database
from hub.mcp import MODERN_VERSION
from tests.conftest import make_settings
from tests.gateway.approvals_support import deployed_with
from tests.gateway.support import META
from tests.peers.fixtures import HandmadePeerStarter
from tests.support.stories import audit_events_written

pytestmark = pytest.mark.parametrize("owner_url", ["postgresql"], indirect=True)


def _dsn(url: str, database: str | None = None) -> str:
    u = make_url(url).set(drivername="postgresql")
    if database is not None:
        u = u.set(database=database)
    return u.render_as_string(hide_password=False)


@asynccontextmanager
async def _own_app(db_url: str, **settings: object) -> AsyncIterator[httpx2.AsyncClient]:
    """An app with a pool of its own (the shared test engine has no statement timeout)."""
    app = create_app(make_settings(db_url, allow_loopback=True, **settings))
    async with app.router.lifespan_context(app):
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://hub.test") as http:
            yield http


def _echo(request_id: int) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "up__echo", "arguments": {"text": "x"}, "_meta": META},
    }


def _headers(key_headers: dict[str, str]) -> dict[str, str]:
    return {
        **key_headers,
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN_VERSION,
        "mcp-method": "tools/call",
        "mcp-name": "up__echo",
    }


async def _post_with_approvals_locked(
    owner_url: str, db_url: str, url: str, body: object, headers: dict[str, str]
) -> httpx2.Response:
    """``body`` posted to an app of its own (a 0.5 s statement timeout, no approval wait) while
    another connection holds the approvals table locked; the app stopped (its audit rows
    written) before it returns."""
    locker = await asyncpg.connect(_dsn(owner_url), timeout=5)
    try:
        async with _own_app(db_url, database_statement_timeout_s=0.5, approval_wait_s=0) as hub:
            tx = locker.transaction()
            await tx.start()
            await locker.execute("LOCK TABLE approvals IN ACCESS EXCLUSIVE MODE")
            try:
                return await asyncio.wait_for(hub.post(url, json=body, headers=headers), 20)
            finally:
                await tx.rollback()
    finally:
        await locker.close()


async def test_a_call_the_hub_could_not_serve_is_audited_as_failed_and_answered_with_its_id(
    owner_url: str,
    db_url: str,
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
) -> None:
    deployed, peer = await deployed_with(client, database, handmade_peer, allow_without_ask=[])
    answer = await _post_with_approvals_locked(
        owner_url, db_url, deployed.url, _echo(7), _headers(deployed.headers)
    )
    rows = await audit_events_written(database, 1, action="tool.call")
    assert answer.status_code == 503, answer.text
    body = answer.json()
    assert body["id"] == 7
    assert body["error"]["code"] == 50300
    assert peer.rpc_requests("tools/call") == []
    [row] = rows
    assert row.outcome == "failed"  # it was "success", with no approval and no upstream leg
    assert row.details["class"] == "unavailable"
    assert row.details["reason"] == "hub_error"


async def test_a_database_refusing_connections_is_a_503_not_a_500(
    owner_url: str,
    db_url: str,
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """SQLSTATE 55000 at connect (``ALLOW_CONNECTIONS false``): the app's fresh pool cannot
    open a connection. REST says 503, the endpoint ``50300``."""
    deployed, _ = await deployed_with(client, database, handmade_peer)
    name = make_url(owner_url).database
    admin = await asyncpg.connect(_dsn(owner_url, "postgres"), timeout=5)
    try:
        async with _own_app(db_url) as hub:
            await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            try:
                rest = await hub.get(
                    deployed.setup.url("deployments"), headers=deployed.setup.admin.headers
                )
                call = await hub.post(
                    deployed.url, json=_echo(9), headers=_headers(deployed.headers)
                )
            finally:
                await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    finally:
        await admin.close()
    assert rest.status_code == 503, rest.text
    assert rest.json()["error"]["code"] == "service_unavailable"
    assert call.status_code == 503, call.text
    assert call.json()["id"] is None  # refused at authentication: its body is not read yet
    assert call.json()["error"]["code"] == 50300
    assert "Traceback" not in caplog.text
    assert not [r for r in caplog.records if r.getMessage() == "unhandled error"]


async def test_a_batch_cut_by_the_database_keeps_the_answers_of_what_ran(
    owner_url: str,
    db_url: str,
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
) -> None:
    """A 2025-03-26 batch: an allowed call runs, then an ``ask`` call's approvals read waits on
    a lock past the statement timeout, then a third never runs. Every id was answered "the hub
    is unavailable", the call that ran included (a review, stop 53)."""
    deployed, peer = await deployed_with(
        client, database, handmade_peer, allow_without_ask=["echo"]
    )
    echo = {"name": "up__echo", "arguments": {"text": "x"}}  # no 2026 _meta: a handshake batch
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": echo},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "up__drop", "arguments": {"table": "t"}},
        },
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": echo},
    ]
    headers = {**deployed.headers, "accept": "application/json, text/event-stream"}
    answer = await _post_with_approvals_locked(owner_url, db_url, deployed.url, batch, headers)
    assert len(peer.rpc_requests("tools/call")) == 1  # the first call ran
    assert answer.status_code == 200, answer.text  # a client reads the answer of what ran
    first, second, third = answer.json()
    assert first["id"] == 1
    assert "result" in first, first
    assert (second["id"], second["error"]["code"]) == (2, 50300)
    assert "may have run" in second["error"]["message"]
    assert (third["id"], third["error"]["code"]) == (3, 50300)
    assert "did not run" in third["error"]["message"]

"""Liveness and readiness."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import sqlite3
import time
from pathlib import Path

import httpx2
import pytest
from alembic.script import ScriptDirectory
from fastapi import FastAPI

from hub.app import create_app
from hub.core.components import components_of
from hub.core.db import Database
from hub.core.migrations import alembic_config, head_revision, upgrade
from hub.core.scraped import ScrapedState
from hub.health.service import NO_SCHEMA
from tests.conftest import ClockControl, make_settings
from tests.support.queries import count_queries


async def test_healthz_and_readyz(client: httpx2.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"data": {"status": "ok"}}
    ready = await client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"data": {"status": "ready"}}


async def test_a_load_balancer_may_probe_with_head(client: httpx2.AsyncClient) -> None:
    """``HEAD`` gets ``GET``'s status on both probes (it was a 405)."""
    for path in ("/healthz", "/readyz"):
        response = await client.head(path)
        assert response.status_code == 200, path
        assert response.headers["x-request-id"]


async def test_readyz_503_when_database_unreachable() -> None:
    url = "postgresql+asyncpg://nobody@127.0.0.1:1/none"
    app: FastAPI = create_app(make_settings(url), database=Database.from_url(url))
    transport = httpx2.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=transport, base_url="http://hub.test") as client,
    ):
        response = await client.get("/readyz")
        assert response.status_code == 503
        error = response.json()["error"]
        assert error["code"] == "service_unavailable"
        assert error["message"] == "database unreachable"
        assert (await client.head("/readyz")).status_code == 503
        assert (await client.get("/healthz")).status_code == 200
        scrape = await client.get("/metrics")  # the state gauges cannot be read; the rest can
        assert scrape.status_code == 200
        assert "hub_request_duration_seconds_count" in scrape.text


def _previous_revision() -> str:
    script = ScriptDirectory.from_config(alembic_config(""))
    head = head_revision()
    assert head is not None
    found = script.get_revision(head)
    assert found is not None
    previous = found.down_revision
    assert isinstance(previous, str)
    return previous


async def _readyz_of(url: str) -> httpx2.Response:
    database = Database.from_url(url)
    app = create_app(make_settings(url), database=database)
    transport = httpx2.ASGITransport(app=app)
    try:
        async with (
            app.router.lifespan_context(app),
            httpx2.AsyncClient(transport=transport, base_url="http://hub.test") as client,
        ):
            return await client.get("/readyz")
    finally:
        await database.dispose()


async def test_readyz_503_while_migrations_are_still_to_run(tmp_path: Path) -> None:
    """A replica started before ``hub db upgrade`` ended answered 200, then 500 on the routes
    that read what the missing migration adds (an upgrade walk, stop 52). A revision this code
    does not know is a newer one (the previous version during a rollout or after a rollback):
    ready."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'hub.db'}"
    previous = _previous_revision()
    await asyncio.to_thread(upgrade, url, previous)
    behind = await _readyz_of(url)
    assert behind.status_code == 503
    assert behind.json()["error"]["message"] == (
        f"database schema at {previous}, this code needs {head_revision()} (run `hub db upgrade`)"
    )
    await asyncio.to_thread(upgrade, url)
    assert (await _readyz_of(url)).status_code == 200
    with sqlite3.connect(tmp_path / "hub.db") as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999'")
    assert (await _readyz_of(url)).status_code == 200
    (tmp_path / "empty.db").touch()
    empty = await _readyz_of(f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}")
    assert (empty.status_code, empty.json()["error"]["message"]) == (503, NO_SCHEMA)


async def test_metrics_answer_in_time_when_the_database_hangs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A database that accepts the connection and never answers: the scrape gives up on the
    state gauges after their deadline and answers with the rest; the next scrape tries again."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"postgresql+asyncpg://nobody@127.0.0.1:{silent.getsockname()[1]}/none"
        app: FastAPI = create_app(make_settings(url), database=Database.from_url(url))
        transport = httpx2.ASGITransport(app=app)
        async with (
            app.router.lifespan_context(app),
            httpx2.AsyncClient(transport=transport, base_url="http://hub.test") as client,
        ):
            state = components_of(app).get(ScrapedState)
            state.timeout_s = 0.5
            for _ in range(2):
                started = time.monotonic()
                with caplog.at_level(logging.WARNING, logger="hub.metrics"):
                    scrape = await client.get("/metrics")
                assert scrape.status_code == 200
                assert time.monotonic() - started < 0.5 + 1.5
                assert "reading the database's state took over 0.5s" in caplog.text
                caplog.clear()
            assert state.due()


async def test_metrics_count_requests_decisions_and_backlog(
    client: httpx2.AsyncClient, database: Database
) -> None:
    from tests.support.factories import make_principal, make_tenant

    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    nobody = await make_principal(database, tenant.id, role=None)
    await client.get(f"/tenants/{tenant.id}/principals", headers=admin.headers)
    await client.get(f"/tenants/{tenant.id}/principals", headers=nobody.headers)
    await client.post(
        f"/tenants/{tenant.id}/credentials",
        json={
            "name": "c",
            "type": "api_key",
            "secret": "CANARY-metrics-secret",
            "api_base_url": "https://x.example",
        },
        headers=admin.headers,
    )
    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert 'hub_request_duration_seconds_count{method="GET",route="/tenants/{t}/principals"' in text
    assert 'hub_policy_decisions_total{effect="allow"}' in text
    assert 'hub_policy_decisions_total{effect="deny"} 1.0' in text
    assert "hub_credential_fields_not_under_active_key" in text
    assert str(tenant.id) not in text
    assert "CANARY" not in text


async def test_readyz_and_the_gauges_count_every_tenant_in_one_statement_each(
    client: httpx2.AsyncClient, database: Database, clock_control: ClockControl
) -> None:
    """``/readyz`` (the key ids in use) and a ``/metrics`` refresh (backlog, approvals pending,
    drifted tools) count over every tenant without walking them: on PostgreSQL one
    ``SECURITY DEFINER`` count each (migration 0904), as SQLite's one unscoped pass. Walking
    took 3.3 s a probe with 1,000 tenants."""
    from tests.support.factories import make_tenant

    for _ in range(3):
        await make_tenant(database)
    assert (await client.get("/readyz")).status_code == 200  # the first records the secrets
    with count_queries(database) as ready:
        assert (await client.get("/readyz")).status_code == 200
    clock_control.advance(31)  # the gauges are due
    with count_queries(database) as scrape:
        assert (await client.get("/metrics")).status_code == 200
    for queries in (ready, scrape):
        assert not [q for q in queries if re.search(r"\bFROM tenants\b", q)], queries
        queries[:] = [q for q in queries if "set_config('hub.tenant_id'" not in q]  # the pool's
    # the ping, the schema's revision, the credentials' and the OAuth key ids, the secrets'
    # checks (a table of the platform's, no tenant's)
    assert len(ready) == 5, ready
    assert len(scrape) == 3, scrape  # the backlog, the approvals pending, the drifted tools
    if not database.is_sqlite:
        assert all(re.search(r"\bhub_\w+\(", q) for q in [*ready[2:4], *scrape]), (ready, scrape)


async def test_scrapes_at_once_share_one_read_of_the_databases_state(database: Database) -> None:
    """Two scrapes together read once (during an outage each waited the deadline on a query of
    its own); a read that failed is tried again by the next scrape."""
    calls: list[int] = []
    fail = True

    async def reader(db: Database) -> None:
        calls.append(1)
        await asyncio.sleep(0.2)
        if fail:
            raise ConnectionRefusedError("the database is away")

    state = ScrapedState(refresh_s=30.0, timeout_s=5.0)
    state.add("a count", reader)
    await asyncio.gather(state.refresh(database), state.refresh(database))
    assert len(calls) == 1
    assert state.due()  # it failed: the next scrape reads again
    fail = False
    await asyncio.gather(state.refresh(database), state.refresh(database))
    assert len(calls) == 2
    assert not state.due()

"""Liveness and readiness."""

from __future__ import annotations

import httpx2
from fastapi import FastAPI

from hub.app import create_app
from hub.core.db import Database
from tests.conftest import make_settings


async def test_healthz_and_readyz(client: httpx2.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"data": {"status": "ok"}}
    ready = await client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"data": {"status": "ready"}}


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
        assert (await client.get("/healthz")).status_code == 200


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

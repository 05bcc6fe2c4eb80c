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

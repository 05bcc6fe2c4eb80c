"""A blocked destination is refused at the routes, not only in the fetcher (SECURITY §7.1).

Production's policy (no loopback, no private ranges): a server whose name resolves to the cloud
metadata address or to a private range is refused by discovery and by a snapshot with 422
``discovery_failed``, reason ``destination_refused`` and the fixed message, and nothing is dialled:
the app's fetcher resolves from a table (no DNS) and dials through a dialer with no routes, which
records every attempt. (The address families and rebinding cases are the fetcher's:
``tests/egress/test_destinations.py``.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
import pytest
from fastapi import FastAPI

from hub.app import create_app
from hub.core.db import Database
from hub.core.settings import Settings
from hub.egress import EgressConfig, Fetcher
from tests.conftest import make_settings
from tests.egress.support import FakeResolver, RouteDialer
from tests.support.factories import make_principal, make_tenant

ANSWERS = {"metadata.example.com": ["169.254.169.254"], "intranet.example.com": ["10.1.2.3"]}


@pytest.fixture
def settings(db_url: str) -> Settings:
    return make_settings(db_url, allow_loopback=False, discovery_timeout_s=3)


@pytest.fixture
def dialer() -> RouteDialer:
    return RouteDialer()  # no routes: a dial that got this far would be recorded and refused


@pytest.fixture
async def app(
    settings: Settings, database: Database, dialer: RouteDialer
) -> AsyncIterator[FastAPI]:
    fetcher = Fetcher(
        EgressConfig.from_settings(settings), resolver=FakeResolver(ANSWERS), dialer=dialer
    )
    application = create_app(settings, database=database, fetcher=fetcher)
    async with application.router.lifespan_context(application):
        yield application


def _refused(response: httpx2.Response) -> None:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "discovery_failed"
    assert error["reason"] == "destination_refused"
    assert error["message"] == "destination not allowed"


@pytest.mark.parametrize("host", sorted(ANSWERS))
async def test_a_blocked_address_is_refused_by_discovery_and_snapshots(
    client: httpx2.AsyncClient, database: Database, dialer: RouteDialer, host: str
) -> None:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    base = f"/tenants/{tenant.id}"
    url = f"https://{host}/mcp"
    _refused(await client.post(f"{base}/mcp/discover", json={"url": url}, headers=admin.headers))
    made = await client.post(
        f"{base}/servers", json={"handle": "blocked", "url": url}, headers=admin.headers
    )
    assert made.status_code == 201, made.text  # a name is resolved when it is used
    _refused(await client.post(f"{base}/servers/blocked/catalogs", headers=admin.headers))
    assert dialer.dials == []
    assert dialer.refused == []

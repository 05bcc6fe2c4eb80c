"""Audit verifies at once, more of them than the pool has connections, all answer.

A verify read its caller on the request's session and then walked the chain on sessions of its
own, holding the request's pooled connection for the whole walk: with as many verifies as the
pool holds connections, each walk waited for a connection another verify held, until the pool's
timeout, and answered 503 (a review, stop 52: five verifies on a pool of four, all 503).
PostgreSQL's pool (SQLite's plain reads have a connection of their own).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import httpx2
import pytest

from hub.app import create_app
from hub.audit import service
from hub.audit.actions import Action
from hub.audit.service import Entry, record_entries
from hub.core import clock
from hub.core.db import Database, create_engine
from tests.conftest import make_settings
from tests.support.factories import scope_of
from tests.support.stories import TenantAdmin, make_tenant_admin

pytestmark = pytest.mark.parametrize("owner_url", ["postgresql"], indirect=True)

POOL_WAIT_S = 2.0  # the pool's timeout here (the app's is 30 s)
VERIFIES = 5  # the pool below holds at most two connections


@pytest.fixture
async def small(db_url: str) -> AsyncIterator[Database]:
    engine = create_engine(db_url, pool_size=1, pool_wait_s=POOL_WAIT_S)
    try:
        yield Database(engine)
    finally:
        await engine.dispose()


async def test_more_verifies_than_connections_all_answer(
    db_url: str, database: Database, small: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "BATCH", 10)  # a walk of several reads
    made: TenantAdmin = await make_tenant_admin(database)
    tenant = scope_of(made.tenant_id)
    entries = [
        Entry(tenant, uuid.uuid4(), Action.TOOL_CALL, "r", None, "success", {}, clock.now())
        for _ in range(60)
    ]
    await record_entries(database, tenant, entries)
    app = create_app(make_settings(db_url), database=small)
    transport = httpx2.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=transport, base_url="http://hub.test") as client,
    ):
        answers = await asyncio.gather(
            *(
                client.get(made.url("audit/verify"), headers=made.admin.headers)
                for _ in range(VERIFIES)
            )
        )
    assert [a.status_code for a in answers] == [200] * VERIFIES, [a.text for a in answers]
    assert all(a.json()["data"]["checked"] == 60 for a in answers)

"""A statement waiting on a lock ends at ``HUB_DATABASE_STATEMENT_TIMEOUT_S`` (PostgreSQL).

Without it a request whose read waited on a lock (a migration's ``ALTER TABLE``, an operator's
open transaction) held its connection until the lock went; every request behind it queued for
the pool's 30 s and then answered 503, the replica's pool full (stop 50's SRE walk, left alone
then). Now the server cancels the statement and its request answers 503 at once, and the
connection serves the next request.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import asyncpg
import httpx2
import pytest
from sqlalchemy import make_url, text

from hub.app import create_app
from hub.auth.key_format import generate_key
from hub.core.db import create_engine
from tests.conftest import make_settings

#: long enough that a read made again after its timeout (it was: 40 s for the documented 20, a
#: resilience walk, stop 53) passes the one-sided bound below, TIMEOUT_S + 1.5
TIMEOUT_S = 2.0

pytestmark = pytest.mark.parametrize("owner_url", ["postgresql"], indirect=True)


def _dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def test_a_read_waiting_on_a_lock_is_a_503_and_the_next_request_is_served(
    owner_url: str, db_url: str
) -> None:
    app = create_app(make_settings(db_url, database_statement_timeout_s=TIMEOUT_S))
    key, _ = generate_key()
    headers = {"authorization": f"Bearer {key}"}
    tenant = uuid.uuid4()
    locker = await asyncpg.connect(_dsn(owner_url), timeout=5)
    try:
        async with app.router.lifespan_context(app):
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(transport=transport, base_url="http://hub.test") as http:

                async def rest() -> httpx2.Response:
                    return await asyncio.wait_for(
                        http.get(f"/tenants/{tenant}/servers/linear", headers=headers), 10
                    )

                async def mcp() -> httpx2.Response:
                    return await asyncio.wait_for(
                        http.post(
                            f"/tenants/{tenant}/deployments/{uuid.uuid4()}/mcp",
                            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                            headers={**headers, "accept": "application/json, text/event-stream"},
                        ),
                        10,
                    )

                assert (await rest()).status_code == 401  # the pool warm, the key unknown
                tx = locker.transaction()
                await tx.start()
                await locker.execute("LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE")
                try:
                    started = time.monotonic()
                    held = await rest()
                    elapsed = time.monotonic() - started
                    held_mcp = await mcp()
                    elapsed_mcp = time.monotonic() - started - elapsed
                finally:
                    await tx.rollback()
                after = await rest()
    finally:
        await locker.close()
    assert held.status_code == 503, held.text
    assert held.json()["error"]["code"] == "service_unavailable"
    assert "Traceback" not in held.text
    assert elapsed < TIMEOUT_S + 1.5
    assert held_mcp.status_code == 503, held_mcp.text
    assert elapsed_mcp < TIMEOUT_S + 1.5
    assert held_mcp.json()["error"]["code"] == 50300
    assert after.status_code == 401, after.text


async def _statement_timeout(url: str, statement_timeout_s: float | None = None) -> str:
    engine = (
        create_engine(url)
        if statement_timeout_s is None
        else create_engine(url, statement_timeout_s=statement_timeout_s)
    )
    try:
        async with engine.connect() as conn:
            return str((await conn.execute(text("SHOW statement_timeout"))).scalar_one())
    finally:
        await engine.dispose()


async def test_only_the_apps_engine_has_a_statement_timeout(db_url: str) -> None:
    """Migrations and maintenance commands (``create_engine``'s default) may run long."""
    assert await _statement_timeout(db_url) == "0"  # what migrations and maintenance get
    assert await _statement_timeout(db_url, statement_timeout_s=1.5) == "1500ms"
    app = create_app(make_settings(db_url, database_statement_timeout_s=20))
    async with app.router.lifespan_context(app), app.state.db.engine.connect() as conn:
        shown = (await conn.execute(text("SHOW statement_timeout"))).scalar_one()
    assert shown == "20s"

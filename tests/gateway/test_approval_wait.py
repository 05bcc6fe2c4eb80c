"""An ``ask`` call waits for a person's decision (DESIGN §10.3, ``HUB_APPROVAL_WAIT_S``).

The wait sees a decision made through another app on the same database, and the calls waiting
on one replica share its reads: one query per tenant per tick of the replica's
:class:`~hub.approvals.watch.DecisionWatch`, however many calls wait (each call polled its own
row four times a second before: 800 sessions a second for 200 waiting agents).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI

from hub.app import create_app
from hub.approvals import repository as approvals_repository
from hub.approvals.service import ApprovalContext
from hub.approvals.watch import TICK_S, DecisionWatch
from hub.core import clock, rls
from hub.core.db import Database
from hub.core.tenancy import system_scope
from tests.conftest import make_settings
from tests.gateway.approvals_support import call, decide, deployed_with, pending_id
from tests.peers.fixtures import HandmadePeerStarter
from tests.support.databases import owner_session
from tests.support.queries import count_queries

WAITING = 12
WINDOW_S = 1.0


async def test_the_wait_sees_a_decision_made_on_another_replica(
    database: Database, handmade_peer: HandmadePeerStarter, db_url: str
) -> None:
    """Two app instances on one database, each with its own :class:`Database` (engine and
    pool, as two replicas have): the call waits on one, the approval lands through the other,
    and the waiting call runs before its wait is over."""
    waiting = make_settings(db_url, allow_loopback=True, approval_wait_s=8)
    other = make_settings(db_url, allow_loopback=True, approval_wait_s=0)
    database_b = Database.from_url(db_url)
    assert database_b.engine is not database.engine
    app_a: FastAPI = create_app(waiting, database=database)
    app_b: FastAPI = create_app(other, database=database_b)
    try:
        await _wait_across_replicas(app_a, app_b, database, handmade_peer)
    finally:
        await database_b.engine.dispose()


async def _wait_across_replicas(
    app_a: FastAPI, app_b: FastAPI, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    async with app_a.router.lifespan_context(app_a), app_b.router.lifespan_context(app_b):
        a = httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=app_a), base_url="http://hub.test"
        )
        b = httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=app_b), base_url="http://hub.test"
        )
        async with a, b:
            deployed, peer = await deployed_with(b, database, handmade_peer)
            started = time.monotonic()
            waiting_call = asyncio.create_task(call(a, deployed, "echo", "wait"))
            url = deployed.setup.url("approvals")
            pending: list[dict[str, Any]] = []
            while not pending:  # the waiting call has made its request: decide it elsewhere
                await asyncio.sleep(0.05)
                r = await b.get(
                    url, params={"status": "pending"}, headers=deployed.setup.admin.headers
                )
                pending = r.json()["data"]
            assert (await decide(b, deployed, pending[0]["id"], "approve")).status_code == 200
            body = await waiting_call
            assert body["result"].get("isError") is not True
            assert time.monotonic() - started < 8
            assert len(peer.rpc_requests("tools/call")) == 1


async def _pending(client: httpx2.AsyncClient, url: str, headers: dict[str, str]) -> list[str]:
    r = await client.get(url, params={"status": "pending", "limit": 100}, headers=headers)
    return [row["id"] for row in r.json()["data"]]


@pytest.mark.parametrize("settings", [{"approval_wait_s": 5}], indirect=True)
async def test_calls_waiting_on_one_replica_share_one_read_a_tick(
    app: FastAPI,
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
) -> None:
    """Twelve calls wait at once, each on its own approval: a second of their wait reads the
    approvals about once a tick, not twelve times four. Two are approved meanwhile and run;
    the others answer ``approval_pending`` when their wait is over, and the watch is empty."""
    deployed, peer = await deployed_with(client, database, handmade_peer)
    calls = [
        asyncio.create_task(call(client, deployed, "echo", f"call {n}")) for n in range(WAITING)
    ]
    url, admin = deployed.setup.url("approvals"), deployed.setup.admin.headers
    pending: list[str] = []
    while len(pending) < WAITING:
        await asyncio.sleep(0.05)
        pending = await _pending(client, url, admin)
    # every call's wait began about when its approval was stored, so by now (not when the
    # twelve calls were sent: storing twelve approvals takes a loaded machine a while)
    all_waiting = time.monotonic()
    watch = app.state.components.get(ApprovalContext).watch
    while watch.waiting < WAITING:  # noqa: ASYNC110 - the watch has no event to wait on
        await asyncio.sleep(0.01)
    with count_queries(database) as queries:
        await asyncio.sleep(WINDOW_S)
    decided = [(await decide(client, deployed, a, "approve")).status_code for a in pending[:2]]
    bodies = await asyncio.gather(*calls)  # before any assertion: no call is left waiting
    reads = [q for q in queries if "FROM approvals" in q]
    assert 1 <= len(reads) <= WINDOW_S / TICK_S + 1, len(reads)
    assert decided == [200, 200]
    ran = [b for b in bodies if b["result"].get("isError") is not True]
    assert len(ran) == 2
    assert len(peer.rpc_requests("tools/call")) == 2
    still = {pending_id(b) for b in bodies if b["result"].get("isError") is True}
    assert still == set(pending[2:])
    assert time.monotonic() - all_waiting < 5 + 1.5
    assert watch.waiting == 0


async def test_a_row_no_longer_pending_or_no_wait_answers_at_once(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    """The call joins the watch with the row it has: an approval already past its pending life,
    or a wait of ``0``, is answered with no tick waited and no read."""
    deployed, _peer = await deployed_with(client, database, handmade_peer)
    approval_id = pending_id(await call(client, deployed, "echo", "x"))
    tenant = system_scope(deployed.setup.tenant_id, reason="the test's own tenant")
    async with owner_session(database, write=False) as session:
        row = await approvals_repository.get_approval(session, tenant, uuid.UUID(approval_id))
    assert row is not None
    assert row.status == "pending"
    watch = DecisionWatch(tick_s=60)
    started = time.monotonic()
    with count_queries(database) as queries:
        assert await watch.wait(database, tenant, row, 0) is row
        row.expires_at = clock.now()
        assert await watch.wait(database, tenant, row, 30) is row
    assert queries == []
    assert time.monotonic() - started < 1.5
    assert watch.waiting == 0


@pytest.mark.parametrize("settings", [{"approval_wait_s": 30}], indirect=True)
async def test_released_calls_answer_pending_at_once_and_so_do_later_ones(
    app: FastAPI,
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
) -> None:
    """What ``hub serve`` does at SIGTERM (``tests/deploy/test_shutdown.py`` sends the signal):
    the calls waiting answer ``approval_pending`` with their own approval, and a call that
    comes to wait afterwards does not wait."""
    deployed, peer = await deployed_with(client, database, handmade_peer)
    watch = app.state.components.get(ApprovalContext).watch
    calls = [asyncio.create_task(call(client, deployed, "echo", f"c{n}")) for n in range(3)]
    while watch.waiting < 3:  # noqa: ASYNC110 - the watch has no event to wait on
        await asyncio.sleep(0.01)
    started = time.monotonic()
    watch.release()
    bodies = await asyncio.gather(*calls)
    later = await call(client, deployed, "echo", "later")
    elapsed = time.monotonic() - started
    ids = [pending_id(body) for body in [*bodies, later]]
    assert len(set(ids)) == 4
    assert elapsed < 1.5
    assert peer.rpc_requests("tools/call") == []
    assert watch.waiting == 0


async def test_the_watchs_read_of_many_approvals_fits_every_backend(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    """A read for more waiting approvals than a statement may name parameters (asyncpg refuses
    more than 32,767: the tick failed, and with it every call it read for) is asked in chunks,
    and finds each approval once."""
    deployed, _peer = await deployed_with(client, database, handmade_peer)
    found = [pending_id(await call(client, deployed, "echo", f"x{n}")) for n in range(2)]
    tenant = system_scope(deployed.setup.tenant_id, reason="the test's own tenant")
    others = [uuid.uuid4() for _ in range(40_000)]
    ids = [*others[:20_000], uuid.UUID(found[0]), *others[20_000:], uuid.UUID(found[1])]
    with rls.scope(tenant), count_queries(database) as queries:
        async with database.session(write=False) as session:  # as the watch reads
            rows = await approvals_repository.get_approvals(session, tenant, ids)
    assert sorted(str(row.id) for row in rows) == sorted(found)
    reads = [q for q in queries if "FROM approvals" in q]
    assert len(reads) == -(-len(ids) // approvals_repository.IDS_PER_QUERY)

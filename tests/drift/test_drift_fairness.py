"""The drift watch probes side by side, fairly across tenants, within a time budget (stop 45).

Probes used to run one after another, tenant after tenant: a tenant whose deployed servers never
answered held every other tenant's drift watch for one discovery deadline a server.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx2
from fastapi import FastAPI
from sqlalchemy import select

from hub.core.components import components_of
from hub.core.db import Database
from hub.drift.watch import DriftWatch
from hub.drift.worker import PROBES_AT_ONCE, PROBES_AT_ONCE_PER_TENANT, drift_pass
from hub.models import ServerProbe
from tests.gateway.support import Deployed, Upstream, deploy
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade import HandmadePeer
from tests.peers.handmade_wire import RecordedRequest, Reply
from tests.support.databases import owner_session

DISCOVERY_TIMEOUT_S = 2.0  # tests/drift/conftest.py
SERVERS = 6
#: shorter than a deadline: what waits for a slot held by a probe that never answers never starts
BUDGET_S = 1.5
TOOLS: list[dict[str, Any]] = [{"name": "t0", "inputSchema": {"type": "object"}}]


def _never_answers(req: RecordedRequest) -> Reply:
    """A listing that drips for a minute: each probe lasts the discovery deadline."""
    return Reply(200, chunks=[b'{"jsonrpc": "2.0", '] * 60, chunk_delay=1.0)


async def _deployed(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    servers: int = SERVERS,
) -> tuple[Deployed, list[HandmadePeer]]:
    peers = [await handmade_peer(era="modern", tools=TOOLS) for _ in range(servers)]
    upstreams = [Upstream(f"s{number}", peer.url) for number, peer in enumerate(peers)]
    return await deploy(client, database, upstreams), peers


async def _statuses(database: Database, tenant_id: uuid.UUID) -> list[str]:
    async with owner_session(database, write=False) as session:
        rows = await session.execute(
            select(ServerProbe.status).where(ServerProbe.tenant_id == tenant_id)
        )
        return sorted(rows.scalars().all())


async def test_a_tenant_whose_servers_never_answer_holds_up_no_other(
    app: FastAPI,
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
) -> None:
    """The tenant the pass takes first has more servers that never answer than the pass has
    slots; the other tenant's probes all start, and end, within a budget shorter than one
    deadline (the database holds this test's tenants only)."""
    servers = PROBES_AT_ONCE + 1
    pair = [await _deployed(client, database, handmade_peer, servers) for _ in range(2)]
    (slow, slow_peers), (prompt, _) = sorted(pair, key=lambda each: each[0].setup.tenant_id)
    for peer in slow_peers:
        peer.override("tools/list", _never_answers)
    started = time.monotonic()
    watch = components_of(app).get(DriftWatch)
    probed = await drift_pass(database, watch, budget_s=BUDGET_S)
    assert time.monotonic() - started < DISCOVERY_TIMEOUT_S + 1.5
    assert await _statuses(database, prompt.setup.tenant_id) == ["ok"] * servers
    slow_probes = PROBES_AT_ONCE_PER_TENANT  # the rest waited for the tenant's slots, past it
    assert await _statuses(database, slow.setup.tenant_id) == ["unknown"] * slow_probes
    assert probed == servers + slow_probes


async def test_no_probe_starts_past_the_budget_and_what_it_left_stays_due(
    app: FastAPI,
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
) -> None:
    deployed, peers = await _deployed(client, database, handmade_peer)
    for peer in peers:
        peer.override("tools/list", _never_answers)
    watch = components_of(app).get(DriftWatch)
    started = time.monotonic()
    assert await drift_pass(database, watch, budget_s=0.5) == PROBES_AT_ONCE_PER_TENANT
    assert time.monotonic() - started < DISCOVERY_TIMEOUT_S + 1.5
    assert await _statuses(database, deployed.setup.tenant_id) == ["unknown"] * 2
    for peer in peers:
        peer.clear_overrides()
    assert await drift_pass(database, watch) == SERVERS - 2  # the rest were still due
    assert await _statuses(database, deployed.setup.tenant_id) == ["ok"] * 4 + ["unknown"] * 2

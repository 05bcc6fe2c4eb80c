"""Hostile and failing upstreams (DESIGN §15 "Drift watch"), with the scriptable peer.

Only a complete, successful discovery marks drift: a peer that errors or stalls in the middle of
its paginated ``tools/list`` makes the probe ``unknown`` and changes no mark, even when what it did
list differs. An upstream ``-32020`` during a call re-lists the server at once: changed → the tool
is marked drifted there and then and the call is ``tool_changed``; unchanged → the call is retried
once, and a second ``-32020`` is ``upstream_failed`` (``tool_changed_unconfirmed``).
"""

from __future__ import annotations

import copy
import time
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from hub.core.db import Database
from hub.models import CatalogDrift, ServerProbe
from tests.conftest import ClockControl
from tests.drift.support import asks, call, drift_of, listed, metric, run_drift, tools_by_name
from tests.gateway.support import Deployed, Upstream, deploy
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade import HandmadePeer
from tests.peers.handmade_wire import RecordedRequest, Reply, rpc_error
from tests.support.stories import audit_events

DISCOVERY_TIMEOUT_S = 2.0  # tests/drift/conftest.py
TOOLS: list[dict[str, Any]] = [
    {
        "name": f"t{i}",
        "description": f"Tool {i}.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    }
    for i in range(5)
]


async def _deployed(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> tuple[Deployed, HandmadePeer]:
    peer = await handmade_peer(era="modern", tools=copy.deepcopy(TOOLS), page_size=2)
    deployed = await deploy(client, database, [Upstream("up", peer.url)])
    return deployed, peer


def _changed(name: str, description: str) -> list[dict[str, Any]]:
    tools = copy.deepcopy(TOOLS)
    for tool in tools:
        if tool["name"] == name:
            tool["description"] = description
    return tools


async def _probe(database: Database) -> ServerProbe:
    async with database.session(write=False) as session:
        return (await session.execute(select(ServerProbe))).scalar_one()


async def _marks(database: Database) -> list[CatalogDrift]:
    async with database.session(write=False) as session:
        return list((await session.execute(select(CatalogDrift))).scalars().all())


def _second_page_fails(req: RecordedRequest) -> Reply | None:
    if req.params.get("cursor") == "page-1":
        return Reply(200, rpc_error(req.rpc_id, -32603, "internal error"))
    return None


def _second_page_stalls(req: RecordedRequest) -> Reply | None:
    if req.params.get("cursor") == "page-1":
        return Reply(200, chunks=[b'{"jsonrpc": "2.0", ', b'"id": 1, '] * 4, chunk_delay=1.0)
    return None


def _first_page_is_a_500(req: RecordedRequest) -> Reply | None:
    return Reply(500, b"") if req.params.get("cursor") is None else None


@pytest.mark.parametrize("hostile", [_second_page_fails, _second_page_stalls, _first_page_is_a_500])
async def test_an_incomplete_discovery_marks_nothing(
    app: FastAPI,
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    clock_control: ClockControl,
    hostile: Any,
) -> None:
    deployed, peer = await _deployed(client, database, handmade_peer)
    peer.knobs.tools = _changed("t0", "Tool 0, now hostile.")  # on the first page
    del peer.knobs.tools[4]  # t4, on the last page, is gone too
    peer.override("tools/list", hostile)
    started = time.monotonic()
    assert await run_drift(app, database) == 1
    assert time.monotonic() - started < DISCOVERY_TIMEOUT_S + 1.5
    probe = await _probe(database)
    assert probe.status == "unknown"
    assert probe.reason is not None
    assert probe.live_hashes is None
    assert await _marks(database) == []
    assert await audit_events(database, action="catalog.drift") == []
    assert (await drift_of(client, deployed))["tools"] == []
    assert not asks((await listed(client, deployed))["up__t0"])
    assert metric(app, "hub_drift_probes_total", outcome="unknown") == 1

    # the backoff is shorter than the interval; once the peer answers whole, drift is marked
    clock_control.advance(60)
    peer.clear_overrides()
    assert await run_drift(app, database) == 1
    assert set(tools_by_name(await drift_of(client, deployed))) == {"t0", "t4"}


async def test_an_incomplete_discovery_keeps_earlier_marks(
    app: FastAPI,
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    clock_control: ClockControl,
) -> None:
    deployed, peer = await _deployed(client, database, handmade_peer)
    peer.knobs.tools = _changed("t3", "Tool 3, changed.")
    await run_drift(app, database)
    assert set(tools_by_name(await drift_of(client, deployed))) == {"t3"}
    peer.knobs.tools = copy.deepcopy(TOOLS)  # back to the pin, but the listing breaks mid-way
    peer.override("tools/list", _second_page_fails)
    clock_control.advance(901)
    await run_drift(app, database)
    assert (await _probe(database)).status == "unknown"
    assert set(tools_by_name(await drift_of(client, deployed))) == {"t3"}


def _header_mismatch(req: RecordedRequest) -> Reply:
    return Reply(400, rpc_error(req.rpc_id, -32020, "the tool changed"))


async def test_minus_32020_with_a_changed_tool_marks_drift_at_once(
    app: FastAPI, client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, peer = await _deployed(client, database, handmade_peer)
    peer.knobs.tools = _changed("t1", "Tool 1, swapped underneath.")
    peer.override("tools/call", _header_mismatch)
    body = await call(client, deployed, "up", "t1", {"text": "hi"})
    assert body["result"]["isError"] is True
    assert body["result"]["_meta"]["io.mcphub/error"]["class"] == "tool_changed"
    assert peer.count("tools/call") == 1  # not retried: the change is confirmed
    found = tools_by_name(await drift_of(client, deployed))  # no drift job has run
    assert set(found) == {"t1"}
    assert found["t1"]["changed"] == ["description"]
    [event] = await audit_events(database, action="catalog.drift")
    assert event.details["tool"] == "t1"
    assert asks((await listed(client, deployed))["up__t1"])
    [row] = await audit_events(database, action="tool.call")
    assert row.details["class"] == "tool_changed"


async def test_minus_32020_with_an_unchanged_tool_is_retried_once(
    app: FastAPI, client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, peer = await _deployed(client, database, handmade_peer)
    peer.override("tools/call", _header_mismatch)
    body = await call(client, deployed, "up", "t1", {"text": "hi"})
    assert body["result"]["_meta"]["io.mcphub/error"] == {
        "class": "upstream_failed",
        "reason": "tool_changed_unconfirmed",
    }
    assert peer.count("tools/call") == 2
    assert await _marks(database) == []

    peer.clear_overrides()
    peer.override("tools/call", _header_mismatch, times=1)
    ran = await call(client, deployed, "up", "t1", {"text": "hi"})
    assert ran["result"].get("isError") is not True  # the retry ran it
    assert peer.count("tools/call") == 4
    assert await _marks(database) == []

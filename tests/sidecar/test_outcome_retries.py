"""Direct mode's outcome reports are not lost while the hub can still take them
(:mod:`hub.sidecar.reports`): a report the hub refuses with 429 (or cannot be reached for) is
sent again until the hub takes it, so a call that ran has its ``tool.call`` row; a refusal that
retrying cannot mend (409: already recorded) ends the report at once; at exit, a report still
pending is logged at ERROR with its decision id."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI

from hub.core.db import Database
from hub.sidecar.config import SidecarConfig
from hub.sidecar.hubclient import HubClient
from hub.sidecar.reports import OutcomeReports
from tests.gateway.support import Upstream
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade_wire import RecordedRequest, Reply, rpc_result
from tests.sidecar.direct import DirectDeployed, deploy_direct
from tests.sidecar.inprocess import direct_calls
from tests.sidecar.test_direct_refusals import spend_rest
from tests.support.stories import audit_events

ECHO = {"name": "echo", "inputSchema": {"type": "object"}}
DONE = {"content": [{"type": "text", "text": "done"}]}


async def _world(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> tuple[DirectDeployed, object]:
    peer = await handmade_peer(era="modern", tools=[ECHO])
    upstream = Upstream("up", peer.url, secret="outcome-retries-secret-0123456789")
    return await deploy_direct(client, database, [upstream], {"up"}), peer


@pytest.mark.parametrize(
    "settings", [{"rate_limits": "rest=40 per 3 seconds, tool_call=off"}], indirect=True
)
async def test_an_outcome_refused_429_is_recorded_once_the_hub_takes_it(
    app: FastAPI,
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    tmp_path: Path,
) -> None:
    world, peer = await _world(client, database, handmade_peer)

    async def busy(req: RecordedRequest) -> Reply:
        # while the tool runs, the agent's other requests spend its REST budget: the outcome
        # report that follows the answer is refused 429 (retry in at most 3 s)
        await spend_rest(client, world)
        return Reply(200, rpc_result(req.rpc_id, DONE))

    peer.override("tools/call", busy)  # type: ignore[attr-defined]
    async with direct_calls(app, world, tmp_path) as (calls, bundle):
        done = await calls.call(bundle, bundle.view.tools["up__echo"], "up__echo", {})
        assert done.get("isError") is not True, done
    # direct_calls' exit waited for the pending report (REPORT_WAIT_S)
    rows = await audit_events(database, action="tool.call")
    assert [(r.outcome, r.details.get("wire_name")) for r in rows] == [("success", "up__echo")]


async def _decided(client: httpx2.AsyncClient, world: Any) -> str:
    """A decision to run ``up__echo``, taken as the sidecar takes it; its id."""
    decided = await client.post(
        world.setup.url("deployments", world.deployed.deployment_id, "decisions"),
        json={"wire_name": "up__echo", "arguments": {}},
        headers=world.deployed.headers,
    )
    return str(decided.json()["data"]["decision_id"])


async def test_an_outcome_already_recorded_ends_at_once(
    app: FastAPI,
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    world, _ = await _world(client, database, handmade_peer)
    decision_id = await _decided(client, world)
    caplog.set_level(logging.INFO, "hub.sidecar")
    async with direct_calls(app, world, tmp_path) as (calls, _bundle):
        calls.reports.add(decision_id, {"outcome": "success"}, time.monotonic())
        calls.reports.add(decision_id, {"outcome": "success"}, time.monotonic())
        for _ in range(200):
            if not len(calls.reports):
                break
            await asyncio.sleep(0.02)
        assert not len(calls.reports)  # the 409 was not retried
    assert len(await audit_events(database, action="tool.call")) == 1
    said = [r.getMessage() for r in caplog.records if decision_id in r.getMessage()]
    assert said == [f"sidecar: the outcome of decision {decision_id} was already recorded"]


@pytest.mark.parametrize(
    "settings", [{"rate_limits": "rest=40/minute, tool_call=off"}], indirect=True
)
async def test_a_report_still_pending_at_exit_is_logged_with_its_decision_id(
    app: FastAPI,
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    world, _ = await _world(client, database, handmade_peer)
    decision_id = await _decided(client, world)
    async with direct_calls(app, world, tmp_path) as (calls, _bundle):
        await spend_rest(client, world)  # the hub refuses the report for up to a minute
        calls.reports.add(decision_id, {"outcome": "success"}, time.monotonic())
        await calls.reports.aclose(0.5)
    assert await audit_events(database, action="tool.call") == []
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any(decision_id in e and "not recorded" in e for e in errors), errors


@contextlib.asynccontextmanager
async def _slow_hub() -> AsyncIterator[tuple[int, list[int]]]:
    """A loopback "hub" answering each outcome 200 after 0.1 s, on keep-alive connections; the
    list holds the most connections it ever had open at once."""
    opened = [0, 0]  # now, most

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        opened[0] += 1
        opened[1] = max(opened)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                await reader.readexactly(length)
                await asyncio.sleep(0.1)
                body = b'{"data": {}}'
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    + f"content-length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            opened[0] -= 1
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], opened
    finally:
        server.close()


def _reports(port: int, tmp_path: Path, **kwargs: Any) -> tuple[HubClient, OutcomeReports]:
    config = SidecarConfig.checked(
        hub=f"http://127.0.0.1:{port}",
        tenant="00000000-0000-4000-8000-000000000001",
        deployment="00000000-0000-4000-8000-000000000002",
        agent_key="mcphub_test-key",
        cache_dir=tmp_path,
    )
    hub = HubClient(config)
    return hub, OutcomeReports(hub, lambda d: f"/outcomes/{d}", **kwargs)


async def test_reports_hold_a_few_connections_however_many_calls_end_at_once(
    tmp_path: Path,
) -> None:
    async with _slow_hub() as (port, opened):
        hub, reports = _reports(port, tmp_path)
        try:
            for n in range(40):
                reports.add(f"d{n}", {"outcome": "success"}, time.monotonic())
            for _ in range(500):
                if not len(reports):
                    break
                await asyncio.sleep(0.02)
            assert not len(reports)  # every one was taken
        finally:
            await reports.aclose(0)
            await hub.aclose()
    assert 1 <= opened[1] <= 4  # SENDERS, not one a report


async def test_past_the_bound_the_oldest_pending_report_is_dropped_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with _slow_hub() as (port, _):
        hub, reports = _reports(port, tmp_path, max_pending=3)
        try:
            for n in range(5):  # none is sent before the loop runs: all five are pending
                reports.add(f"d{n}", {"outcome": "success"}, time.monotonic())
            assert len(reports) == 3
        finally:
            await reports.aclose(5)
            await hub.aclose()
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 2
    assert "decision d0 was not recorded" in errors[0]
    assert "decision d1 was not recorded" in errors[1]

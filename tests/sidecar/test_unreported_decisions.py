"""A direct-mode call whose outcome is never reported still leaves its ``tool.call`` row (issue 14,
stop 51): the hub records each decision it hands out, and the ``decisions.audit_unreported`` job
writes the row of one still unreported a grace after it expired, outcome ``unreported``, once.

Before, a sidecar that died (or never meant to report) after a call was allowed left no audit
row of that call at all: the hub kept only the ids whose outcome was reported.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any, get_args

import httpx2
import pytest
from fastapi import FastAPI
from sqlalchemy import delete, select

from hub.audit.actions import Outcome
from hub.cli.remote.audit import Outcome as CliOutcome
from hub.core.components import components_of
from hub.core.db import Database
from hub.core.jobs import JobRegistry, JobRun
from hub.core.metrics import Metrics
from hub.gateway.adapters.decision_ids import DECISION_S
from hub.gateway.adapters.unreported import FORGET_S, GRACE_S, JOB_KIND, sweep_pass
from hub.gateway.engine.engine import arguments_sha256
from hub.models import DecisionOutcome
from tests.conftest import ClockControl
from tests.gateway.approvals_support import decide as decide_approval
from tests.gateway.approvals_support import pending_id
from tests.gateway.support import Upstream
from tests.peers.fixtures import SdkPeerStarter
from tests.sidecar.decisions_support import allowed_decision, decisions_url, docs_world, report
from tests.sidecar.direct import DirectDeployed, deploy_direct
from tests.sidecar.support import CANARY
from tests.support.databases import owner_session
from tests.support.stories import audit_events

ARGUMENT = f"argument-{uuid.uuid4()}"  # an argument value: never in any row
ARGUMENTS = {"text": ARGUMENT}
PAST_GRACE_S = DECISION_S + GRACE_S + 1


@pytest.fixture
async def world(
    client: httpx2.AsyncClient, database: Database, sdk_peer: SdkPeerStarter
) -> DirectDeployed:
    return await docs_world(client, database, sdk_peer)


async def _decide(client: httpx2.AsyncClient, world: DirectDeployed) -> tuple[dict[str, Any], str]:
    """A decision that lets the call run, and the request id it was made under."""
    return await allowed_decision(client, world, ARGUMENTS)


async def _run_job(app: FastAPI, database: Database) -> None:
    """One run of the job as the hub registers it (its metrics are the app's)."""
    spec = components_of(app).get(JobRegistry).get(JOB_KIND)
    await spec.handler(JobRun(JOB_KIND, "", None, 0, database, asyncio.Event()))


def _counted(app: FastAPI) -> float:
    registry = components_of(app).get(Metrics).registry
    return registry.get_sample_value("hub_direct_calls_unreported_total") or 0.0


async def _verified(client: httpx2.AsyncClient, world: DirectDeployed) -> dict[str, Any]:
    answer = await client.get(world.setup.url("audit", "verify"), headers=world.setup.admin.headers)
    assert answer.status_code == 200, answer.text
    verified: dict[str, Any] = answer.json()["data"]
    return verified


async def _rows(database: Database) -> list[DecisionOutcome]:
    async with owner_session(database, write=False) as session:
        return list((await session.execute(select(DecisionOutcome))).scalars().all())


async def test_a_decision_never_reported_gets_one_unreported_row(
    app: FastAPI,
    client: httpx2.AsyncClient,
    database: Database,
    world: DirectDeployed,
    clock_control: ClockControl,
) -> None:
    decided, request_id = await _decide(client, world)
    decided_at = clock_control.now()
    deployed = world.deployed

    clock_control.advance(DECISION_S + GRACE_S - 1)  # expired, but within the grace: not yet
    await _run_job(app, database)
    assert await audit_events(database, action="tool.call") == []

    clock_control.advance(2)
    await _run_job(app, database)
    await _run_job(app, database)  # a second pass finds nothing left to audit
    rows = await audit_events(database, action="tool.call")
    assert len(rows) == 1
    row = rows[0]
    assert row.outcome == "unreported"
    assert row.actor_id == deployed.agent.principal_id
    assert row.resource == "tool:docs.echo"
    assert row.request_id == request_id  # the decision's request
    catalog = deployed.catalogs["docs"]
    assert row.details == {
        "deployment_id": deployed.deployment_id,
        "wire_name": "docs__echo",
        "decision": "allow",
        "reasons": row.details["reasons"],
        "arguments_sha256": arguments_sha256(ARGUMENTS),
        "tool_sha256": decided["tool_sha256"],
        "catalog_version": catalog["version"],
        "grants_version": row.details["grants_version"],
        "decided_at": decided_at.isoformat(),
    }
    assert isinstance(row.details["grants_version"], int)
    assert ARGUMENT not in json.dumps(row.details)
    assert ARGUMENT not in json.dumps([r.call for r in await _rows(database)])
    assert _counted(app) == 1
    verified = await _verified(client, world)
    assert verified["ok"], verified

    listed = await client.get(
        world.setup.url("audit"),
        params={"outcome": "unreported"},
        headers=world.setup.admin.headers,
    )
    assert listed.status_code == 200, listed.text
    assert [e["id"] for e in listed.json()["data"]] == [str(row.id)]


async def test_an_approved_call_never_reported_carries_its_approval(
    app: FastAPI,
    client: httpx2.AsyncClient,
    database: Database,
    sdk_peer: SdkPeerStarter,
    clock_control: ClockControl,
) -> None:
    peer = await sdk_peer("stateless-json")
    upstream = Upstream("docs", peer.url, secret=CANARY, effect="ask", allow_without_ask=[])
    world = await deploy_direct(client, database, [upstream], {"docs"})
    asked = await client.post(
        decisions_url(world),
        json={"wire_name": "docs__echo", "arguments": ARGUMENTS},
        headers=world.deployed.agent.headers,
    )
    approval = pending_id(asked.json()["data"])
    assert (await decide_approval(client, world.deployed, approval, "approve")).status_code == 200
    decided, _ = await _decide(client, world)
    assert decided["effect"] == "ask"

    clock_control.advance(PAST_GRACE_S)
    assert await sweep_pass(database) == 1
    (row,) = await audit_events(database, action="tool.call", outcome="unreported")
    assert row.details["approval_id"] == approval
    assert row.details["decision"] == "ask"
    assert (await _verified(client, world))["ok"]


async def test_a_reported_decision_gets_no_unreported_row_and_is_forgotten(
    app: FastAPI,
    client: httpx2.AsyncClient,
    database: Database,
    world: DirectDeployed,
    clock_control: ClockControl,
) -> None:
    decided, _ = await _decide(client, world)
    assert (await report(client, world, decided["decision_id"])).status_code == 200

    clock_control.advance(PAST_GRACE_S)
    await _run_job(app, database)
    rows = await audit_events(database, action="tool.call")
    assert [r.outcome for r in rows] == ["success"]
    assert _counted(app) == 0
    assert [r.state for r in await _rows(database)] == ["reported"]

    clock_control.advance(FORGET_S)  # kept a while past its expiry, then deleted
    await _run_job(app, database)
    assert await _rows(database) == []


async def test_a_report_after_the_sweep_is_refused(
    client: httpx2.AsyncClient,
    database: Database,
    world: DirectDeployed,
    clock_control: ClockControl,
) -> None:
    """The sweep audits a decision only a grace after it expired, so a report then is 400
    ``invalid_decision`` (the id expired). A replica whose clock lags more than the grace still
    takes the id, and its claim finds the row audited: 409 ``outcome_recorded``, no second row."""
    decided, _ = await _decide(client, world)
    clock_control.advance(PAST_GRACE_S)
    assert await sweep_pass(database) == 1

    late = await report(client, world, decided["decision_id"])
    assert late.status_code == 400, late.text
    assert late.json()["error"]["reason"] == "invalid_decision"

    clock_control.advance(-PAST_GRACE_S)  # a replica whose clock is behind
    lagging = await report(client, world, decided["decision_id"])
    assert lagging.status_code == 409, lagging.text
    assert lagging.json()["error"]["reason"] == "outcome_recorded"
    assert [r.outcome for r in await audit_events(database, action="tool.call")] == ["unreported"]


async def test_two_sweeps_at_once_write_one_row_each(
    client: httpx2.AsyncClient,
    database: Database,
    world: DirectDeployed,
    clock_control: ClockControl,
) -> None:
    for _ in range(7):
        await _decide(client, world)
    clock_control.advance(PAST_GRACE_S)
    counts = await asyncio.gather(*(sweep_pass(database, batch=2) for _ in range(3)))
    assert sum(counts) == 7, counts
    rows = await audit_events(database, action="tool.call")
    assert [r.outcome for r in rows] == ["unreported"] * 7
    assert len({r.request_id for r in rows}) == 7  # seven decisions, one row each
    assert {r.state for r in await _rows(database)} == {"unreported"}
    assert (await _verified(client, world))["ok"]


async def test_forgetting_is_batched_after_the_claims_and_waits_on_no_row(
    client: httpx2.AsyncClient,
    database: Database,
    db_url: str,
    world: DirectDeployed,
    clock_control: ClockControl,
) -> None:
    """A review (stop 51): the rows done with were deleted in one statement before the claims,
    in their transaction; under the worker's statement timeout a backlog (or a row another
    transaction held) made that statement fail every run, rolling back the claims, so no
    unreported call was audited again. Now the claims commit first, and the rows go in batches
    that skip a row held elsewhere."""
    for _ in range(7):
        decided, _ = await _decide(client, world)
        assert (await report(client, world, decided["decision_id"])).status_code == 200
    await _decide(client, world)  # never reported
    clock_control.advance(DECISION_S + FORGET_S + 1)
    held = next(row.id for row in await _rows(database) if row.state == "reported")
    worker = Database.from_url(db_url, pool_size=1, statement_timeout_s=2)
    try:
        async with owner_session(database) as holder:
            if not database.is_sqlite:  # another transaction holds one row (SQLite: one writer)
                locked = select(DecisionOutcome.id).where(DecisionOutcome.id == held)
                await holder.execute(locked.with_for_update())
            audited = await asyncio.wait_for(sweep_pass(worker, forget_batch=3), 20)
    finally:
        await worker.dispose()
    assert audited == 1
    outcomes = [r.outcome for r in await audit_events(database, action="tool.call")]
    assert sorted(outcomes) == ["success"] * 7 + ["unreported"]
    # every row done with is gone (the one audited now too: it expired long enough ago), in
    # batches of three, but the one held elsewhere
    kept = [(row.state, row.id == held) for row in await _rows(database)]
    assert kept == ([] if database.is_sqlite else [("reported", True)])


async def test_a_decision_from_before_the_upgrade_is_reported_once(
    client: httpx2.AsyncClient,
    database: Database,
    world: DirectDeployed,
    clock_control: ClockControl,
) -> None:
    """An id handed out before the hub recorded open decisions has no row: its first report is
    taken, a second is 409, and the sweep has nothing of it to audit."""
    decided, _ = await _decide(client, world)
    async with owner_session(database) as session:
        await session.execute(delete(DecisionOutcome))
    assert (await report(client, world, decided["decision_id"])).status_code == 200
    again = await report(client, world, decided["decision_id"])
    assert again.status_code == 409, again.text
    clock_control.advance(PAST_GRACE_S)
    assert await sweep_pass(database) == 0
    assert [r.outcome for r in await audit_events(database, action="tool.call")] == ["success"]


def test_the_cli_offers_every_audit_outcome() -> None:
    assert {o.value for o in CliOutcome} == set(get_args(Outcome))

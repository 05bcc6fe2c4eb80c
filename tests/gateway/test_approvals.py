"""``ask`` calls and their approvals, end to end (DESIGN §10.3, §15; SECURITY §7.46).

The ask ceiling and ``destructiveHint`` both ask; a pending approval, once approved, lets exactly
the same call run exactly once; different arguments or a changed tool never match; a denial
answers the repeated call at once; approvals expire; only people decide, never the asking agent,
and approving needs the tool's ``call``. The wait for a decision: ``test_approval_wait.py``.
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
import uuid

import httpx2
import pytest
from pydantic import SecretStr
from sqlalchemy import update

from hub.app import create_app
from hub.core.db import Database
from hub.core.settings import Settings
from hub.models import Principal
from tests.conftest import ClockControl, make_settings
from tests.gateway.approvals_support import (
    DROP,
    ECHO,
    call,
    decide,
    deployed_with,
    pending_id,
)
from tests.gateway.support import Deployed, rpc
from tests.peers.fixtures import HandmadePeerStarter
from tests.support.databases import owner_session
from tests.support.factories import make_principal
from tests.support.queries import count_queries
from tests.support.stories import audit_events


@pytest.mark.parametrize(
    ("allow_without_ask", "tool", "why"),
    [([], "echo", "ask_ceiling"), (["drop"], "drop", "destructive_hint")],
)
async def test_allow_becomes_ask_by_ceiling_or_destructive_hint(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    allow_without_ask: list[str],
    tool: str,
    why: str,
) -> None:
    deployed, peer = await deployed_with(
        client, database, handmade_peer, allow_without_ask=allow_without_ask
    )
    listed = (await rpc(client, deployed, "tools/list")).json()["result"]["tools"]
    marked = next(t for t in listed if t["name"] == f"up__{tool}")
    assert marked["_meta"]["io.mcphub/approval"] == "required"
    pending_id(await call(client, deployed, tool, "x"))
    assert peer.rpc_requests("tools/call") == []
    [row] = await audit_events(database, action="tool.call")
    assert why in row.details["reasons"]
    assert row.outcome == "pending"


async def test_an_approved_call_runs_exactly_once(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, peer = await deployed_with(client, database, handmade_peer)
    approval = pending_id(await call(client, deployed, "echo", "hello"))
    again = pending_id(await call(client, deployed, "echo", "hello"))
    assert again == approval  # the identical pending request is reused, not duplicated
    assert (await decide(client, deployed, approval, "approve")).status_code == 200
    with count_queries(database) as queries:
        ran = await call(client, deployed, "echo", "hello")
    assert ran["result"].get("isError") is not True
    assert len(peer.rpc_requests("tools/call")) == 1
    # found and consumed by one conditional UPDATE … RETURNING: one round trip on PostgreSQL;
    # SQLite reads first, as its UPDATE takes the database's write lock
    touched = [q.split()[0] for q in queries if re.search(r"\bapprovals\b", q)]
    assert touched == (["SELECT", "UPDATE"] if database.is_sqlite else ["UPDATE"]), queries
    next_call = await call(client, deployed, "echo", "hello")  # used: a new request
    assert pending_id(next_call) != approval
    assert len(peer.rpc_requests("tools/call")) == 1
    got = await client.get(
        deployed.setup.url("approvals", approval), headers=deployed.setup.admin.headers
    )
    assert got.json()["data"]["status"] == "used"


async def test_concurrent_identical_calls_run_once(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, peer = await deployed_with(client, database, handmade_peer)
    approval = pending_id(await call(client, deployed, "echo", "race"))
    await decide(client, deployed, approval, "approve")
    bodies = await asyncio.gather(*(call(client, deployed, "echo", "race") for _ in range(6)))
    ran = [b for b in bodies if b["result"].get("isError") is not True]
    assert len(ran) == 1
    assert len(peer.rpc_requests("tools/call")) == 1
    assert all(pending_id(b) != approval for b in bodies if b not in ran)


async def test_other_arguments_never_match_an_approval(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, peer = await deployed_with(client, database, handmade_peer)
    approval = pending_id(await call(client, deployed, "echo", "one"))
    await decide(client, deployed, approval, "approve")
    other = await call(client, deployed, "echo", "two")
    assert pending_id(other) != approval
    assert peer.rpc_requests("tools/call") == []


async def test_a_denied_call_is_40300_and_repeats_get_it_at_once(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, peer = await deployed_with(client, database, handmade_peer)
    approval = pending_id(await call(client, deployed, "echo", "no"))
    assert (await decide(client, deployed, approval, "deny")).json()["data"]["status"] == "denied"
    for _ in range(2):
        body = await call(client, deployed, "echo", "no")
        assert body["error"]["code"] == 40300
        assert body["error"]["data"] == {"class": "approval_denied", "approval_id": approval}
    listed = await client.get(
        deployed.setup.url("approvals"),
        params={"status": "pending"},
        headers=deployed.setup.admin.headers,
    )
    assert listed.json()["data"] == []  # no new request to pester approvers
    assert peer.rpc_requests("tools/call") == []


async def test_pending_and_approved_approvals_expire(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    clock_control: ClockControl,
    settings: Settings,
) -> None:
    deployed, peer = await deployed_with(client, database, handmade_peer)
    stale = pending_id(await call(client, deployed, "echo", "late"))
    clock_control.advance(settings.approval_ttl_s + 1)
    late = await decide(client, deployed, stale, "approve")
    assert late.status_code == 409
    assert late.json()["error"]["message"].endswith("this one is expired")
    got = await client.get(
        deployed.setup.url("approvals", stale), headers=deployed.setup.admin.headers
    )
    assert got.json()["data"]["status"] == "expired"
    fresh = pending_id(await call(client, deployed, "echo", "late"))
    assert fresh != stale
    await decide(client, deployed, fresh, "approve")
    clock_control.advance(settings.approval_use_s + 1)
    assert pending_id(await call(client, deployed, "echo", "late")) not in (stale, fresh)
    assert peer.rpc_requests("tools/call") == []
    expired = await client.get(
        deployed.setup.url("approvals"),
        params={"status": "expired"},
        headers=deployed.setup.admin.headers,
    )
    assert {a["id"] for a in expired.json()["data"]} == {stale, fresh}


async def test_a_new_catalog_version_invalidates_an_old_approval(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, peer = await deployed_with(client, database, handmade_peer)
    approval = pending_id(await call(client, deployed, "echo", "v1"))
    await decide(client, deployed, approval, "approve")
    peer.knobs.tools = [{**ECHO, "description": "changed upstream"}, DROP]
    admin = deployed.setup.admin.headers
    snapshot = await client.post(deployed.setup.url("servers", "up", "catalogs"), headers=admin)
    assert snapshot.json()["data"]["version"] == 2
    patched = await client.patch(
        deployed.setup.url("deployments", deployed.deployment_id),
        json={"entries": [{"server": "up", "catalog_version": 2}]},
        headers=admin,
    )
    assert patched.status_code == 200, patched.text
    assert pending_id(await call(client, deployed, "echo", "v1")) != approval
    assert peer.rpc_requests("tools/call") == []


async def _grant_approvals(
    client: httpx2.AsyncClient, deployed: Deployed, principal_id: uuid.UUID
) -> None:
    """``approval:*`` : ``*`` (read and decide) for the principal, given by the tenant admin."""
    granted = await client.post(
        deployed.setup.url("grants"),
        json={
            "principal_id": str(principal_id),
            "resource": "approval:*",
            "action": "*",
            "effect": "allow",
        },
        headers=deployed.setup.admin.headers,
    )
    assert granted.status_code == 201, granted.text


async def _status(client: httpx2.AsyncClient, deployed: Deployed, approval: str) -> str:
    got = await client.get(
        deployed.setup.url("approvals", approval), headers=deployed.setup.admin.headers
    )
    assert got.status_code == 200, got.text
    return str(got.json()["data"]["status"])


async def test_only_people_decide_and_never_the_asking_agent(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    """The agent holds every grant a decision needs — ``approval:*`` : ``*`` besides its
    ``tool:up.*`` : ``call`` — and so does a tenant_admin service: neither decides (DESIGN §15,
    "only ``user`` principals … whatever their grants"). The refusal is the kind rule's, not the
    authorisation's: the agent's grants let it read the approval."""
    deployed, _peer = await deployed_with(client, database, handmade_peer)
    approval = pending_id(await call(client, deployed, "echo", "mine"))
    t = deployed.setup.tenant_id
    await _grant_approvals(client, deployed, deployed.agent.principal_id)
    read = await client.get(deployed.setup.url("approvals", approval), headers=deployed.headers)
    assert read.status_code == 200, read.text  # the grant is in force
    service = await make_principal(database, t, role="tenant_admin", kind="service", name="svc")
    for headers in (deployed.headers, service.headers):
        for decision in ("approve", "deny"):
            r = await decide(client, deployed, approval, decision, headers)
            assert r.status_code == 403, r.text
            assert r.json()["error"]["message"] == "only people decide approvals", r.text
    assert await _status(client, deployed, approval) == "pending"


async def test_the_asking_principal_never_decides_its_own_approval_whatever_its_grants(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    """The second rule, on its own: the principal an approval was asked for may not decide it
    even as a ``user`` holding every grant a decision needs (DESIGN §10.3). The API makes only
    agents deployable, so the test turns the asking agent into a user in the database (what an
    operator with SQL could do); a person with the same grants then decides it."""
    deployed, _peer = await deployed_with(client, database, handmade_peer)
    approval = pending_id(await call(client, deployed, "echo", "mine"))
    agent_id = deployed.agent.principal_id
    await _grant_approvals(client, deployed, agent_id)  # tool:up.* : call it holds already
    async with owner_session(database) as session:
        changed = await session.execute(
            update(Principal).where(Principal.id == agent_id).values(kind="user")
        )
        assert changed.rowcount == 1  # type: ignore[attr-defined]
    for decision in ("approve", "deny"):
        r = await decide(client, deployed, approval, decision, deployed.headers)
        assert r.status_code == 403, r.text
        assert r.json()["error"]["message"] == (
            "the agent that asked may not decide its own approval"
        ), r.text
    assert await _status(client, deployed, approval) == "pending"
    person = await make_principal(database, deployed.setup.tenant_id, role=None, name="person")
    await _grant_approvals(client, deployed, person.principal_id)
    granted = await client.post(
        deployed.setup.url("grants"),
        json={
            "principal_id": str(person.principal_id),
            "resource": "tool:up.*",
            "action": "call",
            "effect": "allow",
        },
        headers=deployed.setup.admin.headers,
    )
    assert granted.status_code == 201, granted.text
    approved = await decide(client, deployed, approval, "approve", person.headers)
    assert approved.status_code == 200, approved.text
    assert await _status(client, deployed, approval) == "approved"


async def test_approving_needs_the_tools_call(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, _peer = await deployed_with(client, database, handmade_peer)
    approval = pending_id(await call(client, deployed, "echo", "x"))
    t = deployed.setup.tenant_id
    approver = await make_principal(database, t, role=None, name="approver")
    admin = deployed.setup.admin.headers
    await client.post(
        deployed.setup.url("grants"),
        json={
            "principal_id": str(approver.principal_id),
            "resource": "approval:*",
            "action": "*",
            "effect": "allow",
        },
        headers=admin,
    )
    refused = await decide(client, deployed, approval, "approve", approver.headers)
    assert refused.status_code == 403
    assert refused.json()["error"]["resource"] == "tool:up.echo"
    assert (await decide(client, deployed, approval, "deny", approver.headers)).status_code == 200


async def test_a_decision_on_anything_but_a_live_pending_approval_is_409(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, _peer = await deployed_with(client, database, handmade_peer)
    approval = pending_id(await call(client, deployed, "echo", "x"))
    assert (await decide(client, deployed, approval, "approve")).status_code == 200
    again = await decide(client, deployed, approval, "deny")
    assert again.status_code == 409
    assert again.json()["error"]["message"] == (  # says what it is now
        "only a live pending approval can be decided; this one is approved"
    )
    done, refused = await audit_events(database, action="approval.decide")
    assert (done.outcome, done.details["decision"]) == ("success", "approve")
    assert (refused.outcome, refused.details["status"]) == ("failed", 409)


async def test_the_approval_shows_the_exact_arguments(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, _peer = await deployed_with(client, database, handmade_peer)
    approval = pending_id(await call(client, deployed, "echo", "ünïcode \u202e text"))
    got = (
        await client.get(
            deployed.setup.url("approvals", approval), headers=deployed.setup.admin.headers
        )
    ).json()["data"]
    assert got["arguments"] == {"text": "ünïcode \u202e text"}
    assert got["server"] == "up"
    assert got["tool"] == "echo"
    assert got["wire_name"] == "up__echo"
    assert got["grant_key"] == "tool:up.echo"
    assert got["agent_id"] == str(deployed.agent.principal_id)
    [row] = await audit_events(database, action="tool.call")
    assert "ünïcode" not in str(row.details)  # the audit keeps a hash, never the values
    assert row.details["arguments_sha256"] == got["arguments_sha256"]


async def test_an_approval_whose_key_left_the_keyring_reads_without_arguments(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    db_url: str,
) -> None:
    """Approvals are not rewrapped by ``hub crypto rotate`` (they live minutes): once their key
    is gone from the ring the row still reads, with ``arguments: null``, and cannot be approved
    blind (409) — only denied."""
    deployed, _peer = await deployed_with(client, database, handmade_peer)
    approval = pending_id(await call(client, deployed, "echo", "rotated away"))
    fresh_key = base64.b64encode(os.urandom(32)).decode()
    rotated = make_settings(
        db_url,
        allow_loopback=True,
        encryption_keys=SecretStr(f"t2:{fresh_key}"),
        active_key_id="t2",
    )
    app = create_app(rotated, database=database)
    admin = deployed.setup.admin.headers
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=app), base_url="http://hub.test"
        ) as b,
    ):
        got = await b.get(deployed.setup.url("approvals", approval), headers=admin)
        assert got.status_code == 200
        assert got.json()["data"]["arguments"] is None
        listed = await b.get(deployed.setup.url("approvals"), headers=admin)
        assert [a["arguments"] for a in listed.json()["data"]] == [None]
        refused = await decide(b, deployed, approval, "approve")
        assert refused.status_code == 409
        assert "rotated away" not in refused.text
        assert (await decide(b, deployed, approval, "deny")).status_code == 200


async def test_rest_lists_filter_by_status_deployment_and_agent(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, _peer = await deployed_with(client, database, handmade_peer)
    one = pending_id(await call(client, deployed, "echo", "1"))
    two = pending_id(await call(client, deployed, "echo", "2"))
    await decide(client, deployed, one, "approve")
    admin = deployed.setup.admin.headers
    url = deployed.setup.url("approvals")

    async def ids(**params: str) -> set[str]:
        r = await client.get(url, params=params, headers=admin)
        assert r.status_code == 200, r.text
        return {a["id"] for a in r.json()["data"]}

    assert await ids() == {one, two}
    assert await ids(status="approved") == {one}
    assert await ids(status="pending") == {two}
    assert await ids(deployment_id=deployed.deployment_id) == {one, two}
    assert await ids(agent_id=str(deployed.agent.principal_id)) == {one, two}
    assert await ids(agent_id=str(deployed.setup.admin.principal_id)) == set()

"""The audit routes (DESIGN §4, §11): list with filters and a cursor, verify, NDJSON export, the
platform's own chain, ``audit`` : ``read`` needed, and ``hub audit verify`` for operators.
(Tenant isolation of these routes is in the route matrix, ``tests/test_route_matrix.py``.)"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from datetime import datetime, timedelta
from pathlib import Path

import httpx2
import pytest

from hub.audit.chain import GENESIS, NewEvent, link_hash
from hub.audit.schemas import AuditEventRead
from hub.core import clock
from hub.core.db import Database
from tests.conftest import TEST_KEY, TEST_PEPPER
from tests.support.factories import Actor, make_platform_admin, make_principal
from tests.support.hubcommand import hub_argv
from tests.support.stories import (
    TenantAdmin,
    append_late_tool_call,
    change_audit_row,
    make_tenant_admin,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def team(client: httpx2.AsyncClient, database: Database) -> TenantAdmin:
    """A tenant whose admin made three principals (three ``principal.create`` events)."""
    made = await make_tenant_admin(database)
    for name in ("a", "b", "c"):
        response = await client.post(
            made.url("principals"), json={"kind": "agent", "name": name}, headers=made.admin.headers
        )
        assert response.status_code == 201
    return made


async def _get(client: httpx2.AsyncClient, url: str, who: Actor, **params: str) -> httpx2.Response:
    return await client.get(url, params=params, headers=who.headers)


async def test_events_are_listed_oldest_first_with_their_chain_links(
    client: httpx2.AsyncClient, team: TenantAdmin
) -> None:
    response = await _get(client, team.url("audit"), team.admin)
    assert response.status_code == 200, response.text
    events = response.json()["data"]
    assert [e["action"] for e in events] == ["principal.create"] * 3
    assert [e["seq"] for e in events] == [1, 2, 3]
    assert events[0]["prev_hash"] == GENESIS
    assert events[1]["prev_hash"] == events[0]["hash"]
    assert {e["actor_id"] for e in events} == {str(team.admin.principal_id)}


async def test_newest_first_pages_backwards_through_the_same_rows(
    client: httpx2.AsyncClient, team: TenantAdmin
) -> None:
    oldest = (await _get(client, team.url("audit"), team.admin)).json()["data"]
    seen: list[int] = []
    cursor: str | None = None
    for _ in range(10):
        params = {"order": "newest", "limit": "2", **({"cursor": cursor} if cursor else {})}
        body = (await _get(client, team.url("audit"), team.admin, **params)).json()
        seen += [e["seq"] for e in body["data"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == [e["seq"] for e in reversed(oldest)] == [3, 2, 1]
    refused = await _get(client, team.url("audit"), team.admin, order="sideways")
    assert refused.status_code == 400, refused.text


async def test_a_cursor_continues_in_its_own_order(
    client: httpx2.AsyncClient, team: TenantAdmin
) -> None:
    """The walk's case: a newest-first cursor sent without ``order`` went on oldest first and
    repeated rows already seen. Without ``order`` it keeps its own; with the other, 400."""
    url = team.url("audit")
    first = (await _get(client, url, team.admin, order="newest", limit="1")).json()
    assert [e["seq"] for e in first["data"]] == [3]
    cursor = first["next_cursor"]
    same = await _get(client, url, team.admin, cursor=cursor, limit="1")
    assert [e["seq"] for e in same.json()["data"]] == [2]
    contrary = await _get(client, url, team.admin, order="oldest", cursor=cursor)
    assert contrary.status_code == 400, contrary.text
    assert "newest first" in contrary.json()["error"]["message"]
    oldest = (await _get(client, url, team.admin, limit="1")).json()["next_cursor"]
    backwards = await _get(client, url, team.admin, order="newest", cursor=oldest)
    assert backwards.status_code == 400, backwards.text
    onwards = await _get(client, url, team.admin, cursor=oldest)
    assert [e["seq"] for e in onwards.json()["data"]] == [2, 3]


async def test_filters_and_cursor(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin
) -> None:
    nobody = await make_principal(database, team.tenant_id, role=None, name="nobody")
    refused = await client.get(team.url("servers"), headers=nobody.headers)
    assert refused.status_code == 403
    denied = (await _get(client, team.url("audit"), team.admin, outcome="denied")).json()["data"]
    assert [(e["action"], e["actor_id"]) for e in denied] == [
        ("server.list", str(nobody.principal_id))
    ]
    by_actor = await _get(client, team.url("audit"), team.admin, actor=str(nobody.principal_id))
    assert len(by_actor.json()["data"]) == 1
    by_action = await _get(client, team.url("audit"), team.admin, action="principal.create")
    assert len(by_action.json()["data"]) == 3
    future = (clock.now() + timedelta(hours=1)).isoformat()
    assert (await _get(client, team.url("audit"), team.admin, since=future)).json()["data"] == []
    assert (
        len((await _get(client, team.url("audit"), team.admin, until=future)).json()["data"]) == 4
    )
    first = (await _get(client, team.url("audit"), team.admin, limit="3")).json()
    second = await _get(client, team.url("audit"), team.admin, cursor=first["next_cursor"])
    assert [e["seq"] for e in first["data"] + second.json()["data"]] == [1, 2, 3, 4]
    unknown = await _get(client, team.url("audit"), team.admin, action="tenant.explode")
    assert unknown.status_code == 400


async def test_after_seq_finds_a_row_written_late_with_an_earlier_time(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin
) -> None:
    """A tool call's row is written after its answer, stamped with the call's time: a follower
    asking by time (``since`` the newest ``at`` seen) skips it; asking by place in the chain
    (``after_seq`` the highest ``seq`` seen) does not."""
    seen = (await _get(client, team.url("audit"), team.admin)).json()["data"]
    newest = seen[-1]
    earlier = datetime.fromisoformat(seen[0]["at"]) - timedelta(seconds=1)
    await append_late_tool_call(database, team.tenant_id, earlier)
    by_time = await _get(client, team.url("audit"), team.admin, since=newest["at"])
    assert "written-late" not in {e["request_id"] for e in by_time.json()["data"]}
    by_place = await _get(client, team.url("audit"), team.admin, after_seq=str(newest["seq"]))
    assert [(e["seq"], e["request_id"]) for e in by_place.json()["data"]] == [
        (newest["seq"] + 1, "written-late")
    ]
    mine = await _get(
        client, team.url("audit"), team.admin, after_seq="0", action="principal.create"
    )
    assert [e["seq"] for e in mine.json()["data"]] == [1, 2, 3]  # with the other filters
    for bad in ("-1", "x", str(2**63)):  # past a 64-bit seq: refused, never sent to the database
        for route in ("audit", "audit/export"):
            refused = await _get(client, team.url(route), team.admin, after_seq=bad)
            assert refused.status_code == 400, (route, refused.text)
    last = await _get(client, team.url("audit/export"), team.admin, after_seq=str(2**63 - 1))
    assert (last.status_code, last.text) == (200, "")


async def test_reading_needs_audit_read(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin
) -> None:
    reader = await make_principal(database, team.tenant_id, role=None, name="auditor")
    assert (await _get(client, team.url("audit"), reader)).status_code == 403
    granted = await client.post(
        team.url("grants"),
        json={
            "principal_id": str(reader.principal_id),
            "resource": "audit",
            "action": "read",
            "effect": "allow",
        },
        headers=team.admin.headers,
    )
    assert granted.status_code == 201, granted.text
    for path in ("audit", "audit/verify", "audit/export"):
        assert (await _get(client, team.url(path), reader)).status_code == 200, path
    # a grant on the audit trail confers nothing else
    assert (await _get(client, team.url("servers"), reader)).status_code == 403


async def test_verify_names_the_first_bad_row(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin
) -> None:
    ok = (await _get(client, team.url("audit/verify"), team.admin)).json()["data"]
    assert (ok["ok"], ok["checked"], ok["first_bad_id"]) == (True, 3, None)
    events = (await _get(client, team.url("audit"), team.admin)).json()["data"]
    await change_audit_row(database, row_id=uuid.UUID(events[1]["id"]))
    bad = (await _get(client, team.url("audit/verify"), team.admin)).json()["data"]
    assert bad == {
        "ok": False,
        "checked": 2,
        "first_bad_id": events[1]["id"],
        "reason": "hash_mismatch",
        "head_hash": ok["head_hash"],
        "head_seq": 3,
    }


async def test_export_streams_ndjson_a_siem_can_verify(
    client: httpx2.AsyncClient, team: TenantAdmin
) -> None:
    response = await _get(client, team.url("audit/export"), team.admin)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in response.text.splitlines()]
    assert [line["seq"] for line in lines] == [1, 2, 3]
    prev = GENESIS
    for line in lines:  # recomputed from the export alone
        row = NewEvent(**AuditEventRead.model_validate(line).model_dump())
        assert link_hash(prev, row) == line["hash"]
        prev = line["hash"]


async def test_the_platform_chain_is_the_platform_admins(
    client: httpx2.AsyncClient, database: Database, team: TenantAdmin
) -> None:
    platform = await make_platform_admin(database)  # bootstrap: a platform event
    made = await client.post("/platform/keys", json={}, headers=platform.headers)
    assert made.status_code == 201
    events = (await _get(client, "/platform/audit", platform)).json()["data"]
    assert [e["action"] for e in events] == ["platform_admin.bootstrap", "platform_key.create"]
    assert {e["tenant_id"] for e in events} == {None}
    verified = (await _get(client, "/platform/audit/verify", platform)).json()["data"]
    assert (verified["ok"], verified["checked"]) == (True, 2)
    exported = (await _get(client, "/platform/audit/export", platform)).text.splitlines()
    assert len(exported) == 2
    # and the platform admin reads any tenant's chain
    assert len((await _get(client, team.url("audit"), platform)).json()["data"]) == 3
    assert (await _get(client, "/platform/audit", team.admin)).status_code == 403


def _cli(db_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HUB_")}
    env.update(
        {
            "HUB_DATABASE_URL": db_url,
            "HUB_ENCRYPTION_KEYS": f"t1:{TEST_KEY}",
            "HUB_API_KEY_PEPPER": TEST_PEPPER,
        }
    )
    return subprocess.run(
        hub_argv("audit", "verify", "--local", *args),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.slow
async def test_hub_audit_verify_for_operators(
    client: httpx2.AsyncClient, database: Database, db_url: str, team: TenantAdmin
) -> None:
    good = _cli(db_url, "--json")
    assert good.returncode == 0, good.stderr
    chains = [json.loads(line) for line in good.stdout.splitlines()]
    mine = next(c for c in chains if c["tenant_id"] == str(team.tenant_id))
    assert (mine["ok"], mine["checked"]) == (True, 3)
    events = (await _get(client, team.url("audit"), team.admin)).json()["data"]
    await change_audit_row(database, row_id=uuid.UUID(events[2]["id"]))
    bad = _cli(db_url, "--tenant", str(team.tenant_id))
    assert bad.returncode == 1
    assert f"BROKEN at row {events[2]['id']} (hash_mismatch)" in bad.stdout
    assert _cli(db_url, "--tenant", "no-such-tenant").returncode == 2

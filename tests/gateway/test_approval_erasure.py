"""An approval's arguments are erased ``HUB_APPROVAL_ARGUMENTS_KEEP_S`` after it could last be
used (stop 45), by the ``approvals.erase_arguments`` job; the row, its hashes and its decision
stay, and every erasure is audited.

Before, nothing removed them: up to 2 MiB a row, kept for ever, for every ``ask`` call.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx2
import pytest
from sqlalchemy import select

from hub.approvals.erasure import erase_pass
from hub.core.db import Database
from hub.models import Approval
from tests.conftest import ClockControl
from tests.console.support import ConsoleUser
from tests.gateway.approvals_support import call, decide, deployed_with, pending_id
from tests.gateway.support import Deployed
from tests.peers.fixtures import HandmadePeerStarter
from tests.support.databases import owner_session
from tests.support.queries import count_statements
from tests.support.stories import audit_events

TTL_S, USE_S, KEEP_S = 600, 300, 3600
KEEPING = {"approval_ttl_s": TTL_S, "approval_use_s": USE_S, "approval_arguments_keep_s": KEEP_S}
CANARY = "CANARY-approval-arguments-7731"


async def _read(client: httpx2.AsyncClient, deployed: Deployed, approval: str) -> dict[str, Any]:
    response = await client.get(
        deployed.setup.url("approvals", approval), headers=deployed.setup.admin.headers
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()["data"]
    return body


async def _stored(database: Database) -> dict[uuid.UUID, tuple[str, bytes, bytes]]:
    async with owner_session(database, write=False) as session:
        rows = await session.execute(
            select(
                Approval.id,
                Approval.arguments_key_id,
                Approval.arguments_nonce,
                Approval.arguments_ciphertext,
            )
        )
        return {row[0]: (row[1], bytes(row[2]), bytes(row[3])) for row in rows}


@pytest.mark.parametrize("settings", [KEEPING], indirect=True)
async def test_arguments_are_erased_once_kept_long_enough_and_the_row_stays(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    clock_control: ClockControl,
) -> None:
    deployed, _ = await deployed_with(client, database, handmade_peer)
    pending = pending_id(await call(client, deployed, "echo", f"{CANARY} pending"))
    approved = pending_id(await call(client, deployed, "echo", f"{CANARY} approved"))
    denied = pending_id(await call(client, deployed, "echo", f"{CANARY} denied"))
    used = pending_id(await call(client, deployed, "echo", f"{CANARY} used"))
    for approval, decision in ((approved, "approve"), (denied, "deny"), (used, "approve")):
        assert (await decide(client, deployed, approval, decision)).status_code == 200
    ran = await call(client, deployed, "echo", f"{CANARY} used")
    assert ran["result"].get("isError") is not True, ran
    before = {a: await _read(client, deployed, a) for a in (pending, approved, denied, used)}
    assert [before[a]["status"] for a in before] == ["pending", "approved", "denied", "used"]

    # not yet: each could last be used TTL_S from now, and is kept KEEP_S more
    clock_control.advance(TTL_S + KEEP_S - 5)
    assert await erase_pass(database, KEEP_S) == 0
    for approval in before:
        read = await _read(client, deployed, approval)
        assert read["arguments"] == before[approval]["arguments"]
        assert read["arguments_erased"] is False

    clock_control.advance(10)
    live = pending_id(await call(client, deployed, "echo", "asked just now"))
    assert await erase_pass(database, KEEP_S) == 4
    for approval, was in before.items():
        read = await _read(client, deployed, approval)
        assert read["arguments"] is None
        assert read["arguments_erased"] is True
        changed = ("arguments", "arguments_erased", "status")  # status: by the clock alone
        assert {k: v for k, v in read.items() if k not in changed} == {
            k: v for k, v in was.items() if k not in changed
        }
        assert read["status"] in ("expired", "denied", "used")
    fresh = await _read(client, deployed, live)
    assert fresh["arguments"] == {"text": "asked just now"}  # still live: kept
    stored = await _stored(database)
    assert stored[uuid.UUID(pending)] == ("", b"", b"")
    assert all(key_id for key_id, _, _ in [stored[uuid.UUID(live)]])

    erased = await audit_events(database, action="approval.arguments_erase")
    assert [(e.tenant_id, e.details["approvals"], e.actor_id) for e in erased] == [
        (deployed.setup.tenant_id, 4, None)
    ]
    assert CANARY not in str([(e.details, e.resource) for e in erased])
    assert await erase_pass(database, KEEP_S) == 0  # nothing more, and no audit row for nothing
    assert len(await audit_events(database, action="approval.arguments_erase")) == 1

    console = ConsoleUser(client)
    assert (await console.sign_in(deployed.setup.admin.key)).status_code == 303
    page = await console.get(f"/console/t/{deployed.setup.tenant_id}/approvals/{pending}")
    assert page.status_code == 200
    assert 'id="arguments-erased"' in page.text
    assert 'id="arguments-unreadable"' not in page.text
    page = await console.get(f"/console/t/{deployed.setup.tenant_id}/approvals/{live}")
    assert "asked just now" in page.text


@pytest.mark.parametrize("settings", [KEEPING], indirect=True)
async def test_a_decided_approval_is_kept_from_its_last_use_not_its_request(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    clock_control: ClockControl,
) -> None:
    """An approval decided late may be used until ``use_by``, past its pending ``expires_at``:
    its arguments are kept ``KEEP_S`` past ``use_by``."""
    deployed, _ = await deployed_with(client, database, handmade_peer)
    approval = pending_id(await call(client, deployed, "echo", "late"))
    clock_control.advance(TTL_S - 10)
    assert (await decide(client, deployed, approval, "approve")).status_code == 200
    # use_by is TTL_S - 10 + USE_S from the request: after expires_at
    clock_control.advance(10 + KEEP_S + 5)  # past expires_at + KEEP_S, not use_by + KEEP_S
    assert await erase_pass(database, KEEP_S) == 0
    clock_control.advance(USE_S)
    assert await erase_pass(database, KEEP_S) == 1
    assert (await _read(client, deployed, approval))["arguments_erased"] is True


@pytest.mark.parametrize("settings", [KEEPING], indirect=True)
async def test_every_tenant_is_erased_in_batches_each_audited(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    clock_control: ClockControl,
) -> None:
    first, _ = await deployed_with(client, database, handmade_peer)
    second, _ = await deployed_with(client, database, handmade_peer)
    for number in range(5):
        pending_id(await call(client, first, "echo", f"first {number}"))
    pending_id(await call(client, second, "echo", "second"))
    clock_control.advance(TTL_S + KEEP_S + 1)
    assert await erase_pass(database, KEEP_S, batch=2) == 6
    erased = await audit_events(database, action="approval.arguments_erase")
    by_tenant = sorted((str(e.tenant_id), e.details["approvals"]) for e in erased)
    assert by_tenant == sorted(
        [
            (str(first.setup.tenant_id), 2),
            (str(first.setup.tenant_id), 2),
            (str(first.setup.tenant_id), 1),
            (str(second.setup.tenant_id), 1),
        ]
    )
    assert {key_id for key_id, _, _ in (await _stored(database)).values()} == {""}


@pytest.mark.parametrize("settings", [KEEPING], indirect=True)
async def test_a_tenant_with_nothing_to_erase_costs_no_write(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    clock_control: ClockControl,
) -> None:
    """The pass visits every tenant every 10 minutes: one with nothing past its keeping is read,
    not written (on SQLite a write transaction takes the database's one write lock)."""
    for _ in range(3):
        deployed, _ = await deployed_with(client, database, handmade_peer)
        pending_id(await call(client, deployed, "echo", "kept"))
    clock_control.advance(TTL_S + KEEP_S - 5)
    with count_statements(database) as sent:
        assert await erase_pass(database, KEEP_S) == 0
    writes = [s for s in sent if s.lstrip().upper().startswith(("UPDATE", "INSERT"))]
    assert writes == []
    assert [s for s in sent if "approvals" in s]  # each tenant was looked at

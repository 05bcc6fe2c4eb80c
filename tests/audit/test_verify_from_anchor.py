"""``…/audit/verify`` from an anchor (``after_seq`` and ``after_hash``: an earlier check's
``head_seq`` and ``head_hash``): only the rows written since are read, and a chain that does not
continue from the anchor is reported broken. And the walk itself, batch after batch."""

from __future__ import annotations

import uuid
from typing import Any

import httpx2
import pytest
from sqlalchemy import text

from hub.audit import service
from hub.audit.actions import Action
from hub.audit.chain import GENESIS, Anchor
from hub.audit.service import Entry, record_entries, verify_chain
from hub.core import clock
from hub.core.db import Database
from hub.core.tenancy import TenantId
from tests.support.databases import as_owner
from tests.support.factories import make_tenant, scope_of
from tests.support.stories import TenantAdmin, change_audit_row, make_tenant_admin


@pytest.fixture
async def team(database: Database) -> TenantAdmin:
    return await make_tenant_admin(database)


async def _principals(client: httpx2.AsyncClient, team: TenantAdmin, *names: str) -> None:
    """One ``principal.create`` row each."""
    for name in names:
        made = await client.post(
            team.url("principals"), json={"kind": "agent", "name": name}, headers=team.admin.headers
        )
        assert made.status_code == 201, made.text


async def _verify(client: httpx2.AsyncClient, team: TenantAdmin, **params: Any) -> httpx2.Response:
    return await client.get(team.url("audit/verify"), params=params, headers=team.admin.headers)


async def test_a_check_from_the_last_head_reads_only_the_rows_since(
    client: httpx2.AsyncClient, team: TenantAdmin
) -> None:
    await _principals(client, team, "a", "b", "c")
    whole = (await _verify(client, team)).json()["data"]
    assert (whole["ok"], whole["checked"], whole["head_seq"]) == (True, 3, 3)
    anchor = {"after_seq": whole["head_seq"], "after_hash": whole["head_hash"]}
    nothing_new = (await _verify(client, team, **anchor)).json()["data"]
    assert nothing_new == {**whole, "checked": 0}
    await _principals(client, team, "d", "e")
    since = (await _verify(client, team, **anchor)).json()["data"]
    assert (since["ok"], since["checked"], since["head_seq"]) == (True, 2, 5)
    assert since["head_hash"] == (await _verify(client, team)).json()["data"]["head_hash"]


async def test_a_chain_that_does_not_continue_from_the_anchor_is_broken(
    client: httpx2.AsyncClient, team: TenantAdmin
) -> None:
    await _principals(client, team, "a", "b")
    whole = (await _verify(client, team)).json()["data"]
    forged = {"after_seq": 2, "after_hash": "f" * 64}  # not the hash row 2 had
    at_head = (await _verify(client, team, **forged)).json()["data"]
    assert (at_head["ok"], at_head["reason"], at_head["checked"]) == (False, "head_mismatch", 0)
    await _principals(client, team, "c")
    events = (await client.get(team.url("audit"), headers=team.admin.headers)).json()["data"]
    after = (await _verify(client, team, **forged)).json()["data"]
    assert (after["ok"], after["reason"], after["first_bad_id"]) == (
        False,
        "broken_link",
        events[2]["id"],
    )
    beyond = {"after_seq": 7, "after_hash": whole["head_hash"]}  # the chain was longer once
    cut = (await _verify(client, team, **beyond)).json()["data"]
    assert (cut["ok"], cut["reason"], cut["first_bad_id"]) == (
        False,
        "missing_rows",
        events[2]["id"],
    )


@pytest.mark.parametrize(
    "params",
    [
        {"after_seq": "2"},
        {"after_hash": "0" * 64},
        {"after_seq": "-1", "after_hash": "0" * 64},
        {"after_seq": str(2**63), "after_hash": "0" * 64},
        {"after_seq": "1", "after_hash": "0" * 63},
        {"after_seq": "1", "after_hash": "G" * 64},
    ],
)
async def test_an_anchor_must_be_whole_and_well_formed(
    client: httpx2.AsyncClient, team: TenantAdmin, params: dict[str, str]
) -> None:
    refused = await _verify(client, team, **params)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == "invalid_request"


async def test_the_platform_chain_takes_an_anchor_too(
    client: httpx2.AsyncClient, database: Database
) -> None:
    from tests.support.factories import make_platform_admin

    admin = await make_platform_admin(database)
    whole = await client.get("/platform/audit/verify", headers=admin.headers)
    data = whole.json()["data"]
    again = await client.get(
        "/platform/audit/verify",
        params={"after_seq": data["head_seq"], "after_hash": data["head_hash"]},
        headers=admin.headers,
    )
    assert again.json()["data"] == {**data, "checked": 0}


def _entries(tenant: Any, count: int) -> list[Entry]:
    return [
        Entry(
            tenant,
            uuid.uuid4(),
            Action.TOOL_CALL,
            f"deployment:{uuid.uuid4()}",
            f"r{n}",
            "success",
            {"n": n},
            clock.now(),
        )
        for n in range(count)
    ]


async def test_a_chain_longer_than_a_batch_is_walked_batch_after_batch(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches of 7 over 30 rows: every row checked once, in order, and a change in a middle
    batch named; from an anchor in a middle batch, only the rows after it."""
    monkeypatch.setattr(service, "BATCH", 7)
    tenant = scope_of((await make_tenant(database)).id)
    await record_entries(database, tenant, _entries(tenant, 30))
    whole = await verify_chain(database, tenant)
    assert (whole.ok, whole.checked, whole.head_seq) == (True, 30, 30)
    row_11 = await _hash_of(database, tenant, 11)
    assert (await verify_chain(database, tenant, Anchor(11, row_11))).checked == 19
    changed = await change_audit_row(database, tenant_id=tenant.value, seq=17)
    broken = await verify_chain(database, tenant)
    assert (broken.ok, broken.checked, broken.first_bad_id, broken.reason) == (
        False,
        17,
        changed,
        "hash_mismatch",
    )
    assert (await verify_chain(database, tenant, Anchor(0, GENESIS))).first_bad_id == changed
    assert (
        await verify_chain(database, tenant, Anchor(17, await _hash_of(database, tenant, 17)))
    ).ok


def _where(database: Database, tenant: TenantId, seq: int) -> dict[str, object]:
    """Row ``seq`` of the tenant's chain (SQLite stores ids as 32 hex digits)."""
    value = tenant.value
    return {"t": value.hex if database.is_sqlite else value, "s": seq}


async def _hash_of(database: Database, tenant: TenantId, seq: int) -> str:
    async with as_owner(database.engine) as owner, owner.begin() as conn:
        found = await conn.execute(
            text("SELECT hash FROM audit_events WHERE tenant_id = :t AND seq = :s"),
            _where(database, tenant, seq),
        )
        return str(found.scalar_one())

"""A row a newer hub wrote reads: an outcome this version does not know (0908's ``unreported``,
read by the version before it, failed its audit list with a 500, and its export answered 200
and then cut the stream with no line at all). The chain is the newer version's own, so it
verifies too."""

from __future__ import annotations

import json
import uuid
from typing import cast

import httpx2

from hub.audit.actions import Action, Outcome
from hub.audit.service import Entry, record_entries
from hub.core import clock
from hub.core.db import Database
from tests.support.factories import scope_of
from tests.support.stories import make_tenant_admin

NEWER = cast(Outcome, "escalated")  # an outcome no version of the hub writes yet


async def test_an_outcome_added_by_a_newer_version_reads(
    client: httpx2.AsyncClient, database: Database
) -> None:
    made = await make_tenant_admin(database)
    tenant = scope_of(made.tenant_id)
    entries = [
        Entry(tenant, uuid.uuid4(), Action.TOOL_CALL, f"r:{n}", None, outcome, {}, clock.now())
        for n, outcome in enumerate(["success", NEWER, "failed"])
    ]
    await record_entries(database, tenant, entries)
    headers = made.admin.headers
    listed = await client.get(made.url("audit"), headers=headers)
    assert listed.status_code == 200, listed.text
    outcomes = [row["outcome"] for row in listed.json()["data"]]
    assert outcomes[-3:] == ["success", "escalated", "failed"]
    exported = await client.get(made.url("audit/export"), headers=headers)
    assert exported.status_code == 200
    lines = [json.loads(line) for line in exported.text.splitlines()]
    assert [line["outcome"] for line in lines][-3:] == ["success", "escalated", "failed"]
    verified = await client.get(made.url("audit/verify"), headers=headers)
    assert verified.json()["data"]["ok"] is True

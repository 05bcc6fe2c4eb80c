"""Audit walks and exports take turns on the event loop (:mod:`hub.core.bulklane`).

Each batch of a walk or an export is CPU work on the loop: decoding the rows read, hashing them,
serialising them. Ten such requests used to put ten such slices ahead of every other request's
next step. Here a probe task ticks on the same loop (``sleep(0)``: once per loop iteration)
while several walks and exports of a chain of many batches run through the app, and the bulk
slices that ran between two ticks are counted, each by the task that ran it: never more than the
lane's width, and never a batch's decoding and its hashing or serialising in one slice. Counted,
not timed: the loop's order decides it, not the machine's speed.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

import httpx2
import pytest

from hub.audit import repository, service
from hub.audit.actions import Action
from hub.audit.chain import ChainCheck, ChainRow
from hub.audit.schemas import AuditEventRead
from hub.audit.service import Entry, record_entries
from hub.core import bulklane, clock
from hub.core.db import Database
from tests.support.factories import scope_of
from tests.support.stories import TenantAdmin, make_tenant_admin

ROWS = 600
BATCH = 30  # twenty batches a walk
WALKS = 4
EXPORTS = 4

#: (what: read, hash or serialise; the task that did it, kept alive by the log so that no later
#: task takes its ``id``)
Slice = tuple[str, "asyncio.Task[Any] | None"]


class _Log:
    def __init__(self) -> None:
        self.events: list[Slice | None] = []  # None: the probe's tick

    def slice(self, what: str) -> None:
        self.events.append((what, asyncio.current_task()))

    def most_between_ticks(self) -> int:
        """The most bulk slices seen between two ticks: runs of one task's one kind of work."""
        most = run = 0
        previous: Slice | None = None
        for event in self.events:
            if event is None:
                most, run, previous = max(most, run), 0, None
            elif event != previous:
                run, previous = run + 1, event
        return max(most, run)

    def mixed_slices(self) -> int:
        """Times one task did two kinds of work between two ticks (read and hashed, or read and
        serialised, in one slice)."""
        mixed = 0
        seen: dict[asyncio.Task[Any] | None, str] = {}
        for event in self.events:
            if event is None:
                seen.clear()
                continue
            what, task = event
            mixed += seen.setdefault(task, what) != what
        return mixed


@pytest.fixture
async def chain(database: Database) -> TenantAdmin:
    made = await make_tenant_admin(database)
    tenant = scope_of(made.tenant_id)
    entries = [
        Entry(
            tenant, uuid.uuid4(), Action.TOOL_CALL, f"r:{n}", None, "success", {"n": n}, clock.now()
        )
        for n in range(ROWS)
    ]
    await record_entries(database, tenant, entries)
    return made


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> _Log:
    """Each bulk slice logged as it runs: a batch read (its rows decoded), a batch hashed (a
    walk), a batch serialised (an export)."""
    log = _Log()
    monkeypatch.setattr(service, "BATCH", BATCH)
    read = repository.chain_rows

    async def chain_rows(*args: Any, **kwargs: Any) -> Sequence[ChainRow]:
        rows = await read(*args, **kwargs)
        log.slice("read")
        return rows

    feed = ChainCheck.feed

    def fed(self: ChainCheck, row: ChainRow) -> bool:
        log.slice("hash")
        return feed(self, row)

    class Serialised(AuditEventRead):
        @classmethod
        def model_validate(cls, obj: Any, **kwargs: Any) -> AuditEventRead:  # type: ignore[override]
            log.slice("serialise")
            return AuditEventRead.model_validate(obj, **kwargs)

    monkeypatch.setattr(repository, "chain_rows", chain_rows)
    monkeypatch.setattr(ChainCheck, "feed", fed)
    monkeypatch.setattr(service, "AuditEventRead", Serialised)
    return log


async def _ticking(log: _Log, done: asyncio.Event) -> None:
    while not done.is_set():
        log.events.append(None)
        await asyncio.sleep(0)


async def test_walks_and_exports_take_turns_on_the_loop(
    client: httpx2.AsyncClient, chain: TenantAdmin, log: _Log
) -> None:
    headers = chain.admin.headers

    async def walk() -> None:
        response = await client.get(chain.url("audit/verify"), headers=headers)
        assert response.status_code == 200, response.text
        assert response.json()["data"]["checked"] == ROWS

    async def export() -> None:
        response = await client.get(chain.url("audit/export"), headers=headers)
        assert response.status_code == 200, response.text
        assert len(response.text.splitlines()) == ROWS

    done = asyncio.Event()
    probe = asyncio.create_task(_ticking(log, done))
    try:
        await asyncio.gather(*(walk() for _ in range(WALKS)), *(export() for _ in range(EXPORTS)))
    finally:
        done.set()
        await probe
    kinds = {event[0] for event in log.events if event is not None}
    assert kinds == {"read", "hash", "serialise"}
    assert log.events.count(None) > 2 * (WALKS + EXPORTS) * ROWS // BATCH  # the probe kept up
    assert log.most_between_ticks() <= bulklane.WIDTH
    assert log.mixed_slices() == 0  # a batch's decoding and what is done with it: two slices

"""The wait of an ``ask`` call for a person's decision, shared by every call waiting on a replica.

Each waiting call used to poll its own approval row (a session and a query every 0.25 s, for up to
``HUB_APPROVAL_WAIT_S``, 20 s by default), so waiting calls cost the database four sessions a
second each: 200 agents waiting on approvals made 800 a second, taking pooled connections from
every other request. :class:`DecisionWatch` reads every approval waited on at this replica in
one query per tenant per tick, whatever the number of calls waiting, and wakes the calls whose
approval is no longer a live pending one. A decision made on any replica is a row change, so
it is seen within a tick wherever the call waits.

A call joins the watch with the row it has just read or created (still pending then), and reads
it once more itself when its wait runs out (so the answer it returns is as of its deadline). A
tick that fails to read (the database unreachable) fails the calls it was reading for, as their
own reads would have. At SIGTERM (:meth:`DecisionWatch.release`) the calls stop waiting and
answer ``approval_pending`` at once: a replica going away holds no call for a person's decision
through its whole grace period.

Written by hand: this is the hub's own row and transaction shape; no library does it.
"""

from __future__ import annotations

import asyncio
import contextvars
import uuid
from collections import defaultdict
from dataclasses import dataclass, field

from hub.approvals import repository
from hub.approvals.states import is_live_pending
from hub.core import clock, rls
from hub.core.db import Database
from hub.core.tenancy import TenantId
from hub.models import Approval

__all__ = ["TICK_S", "DecisionWatch"]

TICK_S = 0.2


@dataclass
class _Waiting:
    db: Database
    tenant_id: TenantId
    pending: Approval = field(repr=False)
    answer: asyncio.Future[Approval | None] = field(repr=False)


async def _read(db: Database, tenant_id: TenantId, approval_id: uuid.UUID) -> Approval | None:
    with rls.scope(tenant_id):
        async with db.session(write=False) as session:
            return await repository.get_approval(session, tenant_id, approval_id)


def _decided(row: Approval | None) -> bool:
    return row is None or not is_live_pending(row, clock.now())


class DecisionWatch:
    """One per replica; its polling task belongs to the event loop of the calls waiting."""

    def __init__(self, tick_s: float = TICK_S) -> None:
        self.tick_s = tick_s
        self._waiting: list[_Waiting] = []
        self._task: asyncio.Task[None] | None = None
        self._released = False

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    async def wait(
        self, db: Database, tenant_id: TenantId, pending: Approval, wait_s: float
    ) -> Approval | None:
        """``pending`` (just read or created by the call) once it is no longer a live pending
        approval, or as it is after ``wait_s`` (None if it disappeared with its deployment)."""
        if _decided(pending) or wait_s <= 0 or self._released:
            return pending
        loop = asyncio.get_running_loop()
        waiting = _Waiting(db, tenant_id, pending, loop.create_future())
        self._join(waiting, loop)
        try:
            return await asyncio.wait_for(waiting.answer, wait_s)
        except TimeoutError:
            return await _read(db, tenant_id, pending.id)
        finally:
            self._leave(waiting)

    def release(self) -> None:
        """Wait no more (the replica is shutting down): every call waiting now answers at once
        with its approval still pending, and so does every call that comes to wait later. The
        approvals stay; the agents repeat their calls on another replica. Safe from a signal
        handler: the answers are given on the watch's event loop."""
        self._released = True
        task = self._task
        if task is not None and not task.done():
            task.get_loop().call_soon_threadsafe(self._answer_all)

    def _answer_all(self) -> None:
        for waiting in self._waiting:
            if not waiting.answer.done():
                waiting.answer.set_result(waiting.pending)

    def _join(self, waiting: _Waiting, loop: asyncio.AbstractEventLoop) -> None:
        task = self._task
        if task is not None and task.get_loop() is not loop:
            # an event loop that ended (tests run one per test): its calls wait no more
            self._waiting = [w for w in self._waiting if w.answer.get_loop() is loop]
            task = None
        self._waiting.append(waiting)
        if task is None or task.done():
            # a context of its own: not the first waiter's (its request id, its RLS scope)
            self._task = loop.create_task(self._poll(), context=contextvars.Context())

    def _leave(self, waiting: _Waiting) -> None:
        if waiting in self._waiting:
            self._waiting.remove(waiting)
        if not waiting.answer.done():
            waiting.answer.cancel()

    async def _poll(self) -> None:
        while self._waiting:
            await asyncio.sleep(self.tick_s)
            groups: dict[tuple[int, TenantId], list[_Waiting]] = defaultdict(list)
            for waiting in self._waiting:
                groups[(id(waiting.db), waiting.tenant_id)].append(waiting)
            for group in groups.values():
                await self._check(group)

    async def _check(self, group: list[_Waiting]) -> None:
        db, tenant_id = group[0].db, group[0].tenant_id
        ids = sorted({waiting.pending.id for waiting in group})
        try:
            with rls.scope(tenant_id):
                async with db.session(write=False) as session:
                    rows = await repository.get_approvals(session, tenant_id, ids)
        except Exception as exc:
            for waiting in group:
                if not waiting.answer.done():
                    waiting.answer.set_exception(exc)
            return
        found = {row.id: row for row in rows}
        for waiting in group:
            row = found.get(waiting.pending.id)
            if _decided(row) and not waiting.answer.done():
                waiting.answer.set_result(row)

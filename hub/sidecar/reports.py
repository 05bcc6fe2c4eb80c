"""Direct mode's outcome reports (DESIGN §10.5): ``POST …/decisions/{id}/outcome``, the call's
audit row, written by the hub.

A report is sent beside the agent's answer, never before it, in the order the calls ended, by
at most ``SENDERS`` tasks: however many calls run at once, reports hold at most that many of the
hub client's connections (a task per report held up to the pool's 100 when the hub wrote them
more slowly than calls ended). A report the hub could not take yet is kept and sent again until
its decision id expires (the hub takes an id for ``DECISION_S``): the hub unreachable, or
refusing with 429, 502, 503 or 504 — after the hub's ``Retry-After`` (or its body's
``retry_after_s``) when it gave one, else a backoff doubling from ``FIRST_BACKOFF_S`` to
``MAX_BACKOFF_S``. Any other refusal (409: it is already recorded; 404, 401, 403) ends the report
at once, with one log line. At most ``MAX_PENDING`` reports wait in memory: past that the oldest
is dropped, logged at ERROR. At exit, the reports still pending get a bounded wait
(:meth:`OutcomeReports.aclose`), and each one left is logged at ERROR with its decision id, so an
operator knows which calls went unaudited.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from hub.sidecar.errors import HubRefused, HubUnreachable
from hub.sidecar.hubclient import HubClient

__all__ = ["DECISION_S", "MAX_PENDING", "SENDERS", "OutcomeReports"]

log = logging.getLogger("hub.sidecar")

#: how long the hub takes a decision id (``hub.gateway.adapters.decision_ids.DECISION_S``; the
#: sidecar may import only ``hub.gateway.engine`` from the gateway, so it is repeated here)
DECISION_S = 600.0
#: a report is given up this long before its id expires at the hub (the two clocks differ, and
#: the id was sealed a moment before the sidecar read it)
EXPIRY_MARGIN_S = 5.0
MAX_PENDING = 10_000
SENDERS = 4
RETRY_STATUSES = frozenset({429, 502, 503, 504})
FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 30.0


@dataclass
class _Report:
    decision_id: str
    body: dict[str, Any]
    expires_at: float  # monotonic


class OutcomeReports:
    """The pending outcome reports of one sidecar, and the one task that sends them."""

    def __init__(
        self,
        hub: HubClient,
        path_of: Callable[[str], str],
        *,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        max_pending: int = MAX_PENDING,
    ) -> None:
        self._hub = hub
        self._path_of = path_of
        self._monotonic = monotonic
        self._sleep = sleep
        self._max = max_pending
        self._queue: collections.deque[_Report] = collections.deque()
        self._sending: list[_Report] = []
        self._senders: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._queue) + len(self._sending)

    def add(self, decision_id: str, body: dict[str, Any], decided_at: float) -> None:
        """Queue the outcome of the call decided (``decided_at``, monotonic) as ``decision_id``."""
        expires_at = decided_at + DECISION_S - EXPIRY_MARGIN_S
        self._queue.append(_Report(decision_id, body, expires_at))
        while len(self) > self._max and self._queue:  # (the ones being sent stay)
            dropped = self._queue.popleft()
            log.error(
                "sidecar: the outcome of decision %s was not recorded: more than %d reports "
                "waited for the hub; the oldest was dropped",
                dropped.decision_id,
                self._max,
            )
        if len(self._senders) < SENDERS:
            sender = asyncio.create_task(self._send_all())
            self._senders.add(sender)
            sender.add_done_callback(self._senders.discard)

    async def _send_all(self) -> None:
        while self._queue:
            report = self._queue.popleft()
            self._sending.append(report)
            try:
                await self._send(report)
            except Exception as exc:  # a bug, not the hub: this report is lost, the rest are not
                log.error(
                    "sidecar: the outcome of decision %s was not recorded: %s",
                    report.decision_id,
                    type(exc).__name__,
                )
            self._sending.remove(report)

    async def _send(self, report: _Report) -> None:
        backoff = FIRST_BACKOFF_S
        failing = False
        while True:
            why: object
            try:
                await self._hub.post(self._path_of(report.decision_id), report.body)
            except HubRefused as refused:
                if refused.status not in RETRY_STATUSES:
                    self._ended(report, refused)
                    return
                why, wait = refused, refused.retry_after_s
            except HubUnreachable as unreachable:
                why, wait = unreachable, None
            else:
                if failing:
                    log.info("sidecar: the outcome of decision %s is recorded", report.decision_id)
                return
            left = report.expires_at - self._monotonic()
            if left <= 0:
                log.error(
                    "sidecar: the outcome of decision %s was not recorded: the hub did not take "
                    "it before the decision expired (%s)",
                    report.decision_id,
                    why,
                )
                return
            if not failing:
                log.warning(
                    "sidecar: the outcome of decision %s is not recorded yet (%s); retrying",
                    report.decision_id,
                    why,
                )
                failing = True
            await self._sleep(min(left, backoff if wait is None else max(wait, 0.1)))
            backoff = min(backoff * 2, MAX_BACKOFF_S)

    @staticmethod
    def _ended(report: _Report, refused: HubRefused) -> None:
        if refused.status == 409:  # a report that reached the hub, whose answer did not
            log.info("sidecar: the outcome of decision %s was already recorded", report.decision_id)
        else:
            log.warning(
                "sidecar: the call's outcome was not recorded: %s (decision %s)",
                refused,
                report.decision_id,
            )

    async def aclose(self, wait_s: float) -> None:
        """Wait up to ``wait_s`` for the pending reports; log each one left at ERROR."""
        senders = set(self._senders)
        if senders:
            await asyncio.wait(senders, timeout=wait_s)
        for sender in senders:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sender
        left = self._sending + list(self._queue)
        self._sending = []
        self._queue.clear()
        for report in left:
            log.error(
                "sidecar: the outcome of decision %s was not recorded: the sidecar stopped "
                "first (the call went unaudited)",
                report.decision_id,
            )

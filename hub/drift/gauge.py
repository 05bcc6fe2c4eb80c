"""``hub_drifted_tools{kind}``: the deployed tools marked drifted now, over every tenant
(DESIGN §11), read when ``/metrics`` is scraped (:mod:`hub.core.scraped`). A tool counts once per
pinned catalog version that marks it."""

from __future__ import annotations

from collections import Counter

from hub.core.db import Database
from hub.core.metrics import Metrics
from hub.core.scraped import Reader
from hub.core.tenant_passes import count_every_tenant
from hub.drift import repository

__all__ = ["drifted_reader"]


def drifted_reader(metrics: Metrics) -> Reader:
    async def read(db: Database) -> None:
        kinds: Counter[str] = Counter()
        every = await count_every_tenant(
            db,
            in_one_pass=repository.drift_marks_all_tenants,
            through_definer=repository.drift_marks_every_tenant,
        )
        for marks in every:
            kinds.update(str(mark.get("kind")) for mark in marks.values())
        metrics.set_drifted_tools(kinds)

    return read

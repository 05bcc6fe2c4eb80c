"""Readiness checks: the database first, then any check another capability registered."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from hub.core.db import Database

__all__ = ["Readiness", "ReadinessCheck", "check_readiness"]

log = logging.getLogger("hub.health")

# A check returns None when ready, else a short message safe to show (no secret, no driver text).
ReadinessCheck = Callable[[Database], Awaitable[str | None]]

PING_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Readiness:
    """The checks ``/readyz`` runs after the database ping (each capability registers its own)."""

    checks: tuple[ReadinessCheck, ...] = ()


async def check_readiness(db: Database, checks: Sequence[ReadinessCheck]) -> str | None:
    try:
        async with asyncio.timeout(PING_TIMEOUT_S):
            await db.ping()
    except Exception as exc:
        log.warning("readiness: database unreachable (%s)", type(exc).__name__)
        return "database unreachable"
    for check in checks:
        problem = await check(db)
        if problem is not None:
            return problem
    return None

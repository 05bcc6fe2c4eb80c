"""The port through which route dependencies ask the grant engine for a decision.

:mod:`hub.grants` sits above :mod:`hub.authz` (its routes use these dependencies), so the engine
is plugged in by :mod:`hub.wiring` as a component rather than imported.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession

from hub.auth.caller import TenantAccess

__all__ = ["DecideFn", "Effect", "RouteDecider"]

Effect = Literal["allow", "ask", "deny"]
DecideFn = Callable[[AsyncSession, TenantAccess, str, str], Awaitable[Effect]]


@dataclass(frozen=True)
class RouteDecider:
    """``decide(session, access, resource, action)``: the caller's effect on a hub resource,
    reading what it must on the request's ``session``."""

    decide: DecideFn

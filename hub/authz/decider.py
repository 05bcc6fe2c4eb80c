"""The port through which route dependencies ask the grant engine for a decision.

:mod:`hub.grants` sits above :mod:`hub.authz` (its routes use these dependencies), so the engine
is plugged in by :mod:`hub.wiring` as a component rather than imported.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from hub.auth.caller import TenantAccess
from hub.core.db import Database

__all__ = ["DecideFn", "Effect", "RouteDecider"]

Effect = Literal["allow", "ask", "deny"]
DecideFn = Callable[[Database, TenantAccess, str, str], Awaitable[Effect]]


@dataclass(frozen=True)
class RouteDecider:
    """``decide(db, access, resource, action)``: the caller's effect on a hub resource."""

    decide: DecideFn

"""The port through which ``grants/check`` asks for a tool's *effective* decision (DESIGN §14).

The effective decision of a tool in a deployment (the ask ceiling, ``allow_without_ask``,
``destructiveHint``, drift: DESIGN §10.1) is the gateway's, which sits above this package; the
wiring plugs it in as this component, so ``grants/check`` can answer it without importing it.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from hub.core.tenancy import TenantId

__all__ = ["EffectiveCheck", "EffectiveFn"]

# (session, tenant, deployment, agent, grant key, grant effect) -> (effect, reasons);
# NotFound when the deployment is not the principal's or holds no such tool
EffectiveFn = Callable[
    [AsyncSession, TenantId, uuid.UUID, uuid.UUID, str, str], Awaitable[tuple[str, list[str]]]
]


@dataclass(frozen=True)
class EffectiveCheck:
    effective: EffectiveFn

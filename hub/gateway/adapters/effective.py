"""``grants/check`` with a ``deployment_id``: a tool's effective decision, as the gateway takes
it (DESIGN §14), plugged into :mod:`hub.grants` as its :class:`EffectiveCheck` component."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from hub.core.errors import NotFound
from hub.core.tenancy import TenantId
from hub.gateway.adapters.view import ViewLoader
from hub.gateway.engine.decision import DriftPolicy, effective
from hub.grants.effective import EffectiveCheck

__all__ = ["effective_check"]


def effective_check(views: ViewLoader, drift_policy: DriftPolicy) -> EffectiveCheck:
    async def check(
        session: AsyncSession,
        tenant_id: TenantId,
        deployment_id: uuid.UUID,
        principal_id: uuid.UUID,
        grant_key: str,
        grant_effect: str,
    ) -> tuple[str, list[str]]:
        view = await views.load(session, tenant_id, deployment_id)
        if view is None or view.agent_id != principal_id:
            raise NotFound("deployment not found for this principal")
        tool = next((t for t in view.tools.values() if t.grant_key == grant_key), None)
        if tool is None:
            raise NotFound("the deployment has no such tool")
        decision = effective(grant_effect, tool, drift_policy=drift_policy)  # type: ignore[arg-type]
        return decision.effect, list(decision.reasons)

    return EffectiveCheck(check)
